"""Data-dependent histogram methods for ``histogram(method=...)``: ``"ahp"``, ``"dpcube"``, ``"auto"``.

Each method is a :class:`~pandas_dp.releases.histogram.HistogramMethod`: its
plan checks the knobs against the public domain before any charge; its
release receives the exact counts, runs the pure algorithm and wraps the
result. ``"auto"`` chooses a configuration with the rule of
:mod:`pandas_dp.releases.auto_rule` from public facts and the scale
``N x epsilon``: ``N`` is the caller's ``expected_total`` or, when the choice
depends on it, a noisy total bought with ``total_share`` of the loss inside
the same charge (stated in the ledger row and on the result).
"""

from __future__ import annotations

import math

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np

from pandas_dp._utils.rational import to_fraction
from pandas_dp.algorithms import ahp as _ahp
from pandas_dp.algorithms import dpcube as _dpcube
from pandas_dp.domain.grid import Grid
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import Noise, PrivacyLoss
from pandas_dp.results.data_dependent import AHPHistogram, DPCubeHistogram
from pandas_dp.results.histogram import Histogram, as_series
from pandas_dp.releases.adaptive import with_total
from pandas_dp.releases.auto_rule import (AUTO_WORKLOADS, FEATURE_BLOCKS, AutoChoice, auto_candidates, choose_config,
                                          choose_method, coarse_counts, coarse_starts, feature_rule_for,
                                          shape_features, top_floor)
from pandas_dp.releases.histogram import METHODS, HistogramMethod, Planned, clip_at_zero, plan_method, register_method
from pandas_dp.releases.params import Options, Param, ParamTable, Real

__all__ = ["choose_method", "AutoChoice", "AutoPlan", "AUTO_TOTAL_SHARE", "AUTO_PARAMS"]

_SPLIT = Real(0.0, 1.0, low_open=True)


# ------------------------------------------------------------------------------------------ AHP

AHP_PARAMS = ParamTable("method='ahp'", (
    Param("epsilon_split", _SPLIT, _ahp.DEFAULT_EPSILON_SPLIT, "share of the loss spent on the noisy counts"),
    Param("eta", Real(0.0), _ahp.DEFAULT_ETA, "threshold multiplier, theta = eta * ln(n) / epsilon_1"),
    Param("clustering", Options(("greedy", "empirical", "optimal")), "greedy", "clustering strategy"),
))


def _plan_ahp(grid: Grid, loss: PrivacyLoss, knobs: dict[str, Any]) -> Planned:
    clustering = knobs["clustering"]
    limit = {"optimal": _ahp.OPTIMAL_MAX_BINS, "empirical": _ahp.EMPIRICAL_MAX_BINS}.get(clustering)
    if limit is not None and grid.size > limit:
        raise ParameterError(
            f"clustering={clustering!r} is limited to {limit} bins; this domain has {grid.size}. "
            f"Use clustering='greedy' (the default) for large domains.")
    plan = _ahp.plan_ahp(grid.size, loss=loss, epsilon_split=knobs["epsilon_split"], eta=knobs["eta"],
                         clustering=clustering)
    return Planned("ahp", plan, knobs)


def _release_ahp(counts: np.ndarray, grid: Grid, planned: Planned, *, rng: Any, nonnegative: bool,
                 loss: PrivacyLoss) -> AHPHistogram:
    """AHP (Zhang et al. 2014): cluster bins by noisy counts, one noisy sum per cluster.

    Notes
    -----
    The loss splits into the noisy-counts phase (``epsilon_split``) and the
    cluster sums (the rest), exactly (sequential composition). The reported
    variance of a bin of cluster C is Var(Z)/|C|^2: noise only, the
    approximation error is excluded.
    """
    r = _ahp.ahp(counts.reshape(-1), planned.plan, rng=rng)
    est = r.estimates
    post: tuple[str, ...] = ()
    if nonnegative:
        est = clip_at_zero(est)
        post = ("clip at 0",)
    knobs = planned.knobs
    return AHPHistogram(
        counts=as_series(est, grid, "estimate"),
        variance=as_series(r.variances, grid, "variance"),
        epsilon=loss.pure_epsilon, method="ahp",
        params={"epsilon_split": knobs["epsilon_split"], "epsilon_1": str(r.plan.loss_1.amount),
                "epsilon_2": str(r.plan.loss_2.amount), "eta": knobs["eta"], "threshold": r.theta,
                "clustering": knobs["clustering"], "n_clusters": int(r.cluster_sizes.size),
                "noise": r.plan.noise_1.name, "sensitivity": 1, "nonnegative": nonnegative,
                "variance": "noise only: excludes the approximation (bias) error of cluster means"},
        domain=grid, post_processing=post, variance_exact=False, detail=r, loss=loss, noise=r.plan.noise_2)


# --------------------------------------------------------------------------------------- DPCube

DPCUBE_PARAMS = ParamTable("method='dpcube'", (
    Param("epsilon_split", _SPLIT, _dpcube.DEFAULT_EPSILON_SPLIT, "share of the loss spent on the cell histogram"),
    Param("threshold", Real(0.0, allow_inf=True), None, "kd-tree variance threshold xi_0 (default: from the noise)",
          optional=True),
    Param("estimate", Options(("least_squares", "uniform")), "least_squares", "cell estimator"),
))


def _plan_dpcube(grid: Grid, loss: PrivacyLoss, knobs: dict[str, Any]) -> Planned:
    threshold = None if knobs["threshold"] is None else float(knobs["threshold"])
    knobs = dict(knobs, threshold=threshold)
    plan = _dpcube.plan_dpcube(loss=loss, epsilon_split=knobs["epsilon_split"], threshold=threshold,
                               estimate=knobs["estimate"])
    return Planned("dpcube", plan, knobs)


def _release_dpcube(counts: np.ndarray, grid: Grid, planned: Planned, *, rng: Any, nonnegative: bool,
                    loss: PrivacyLoss) -> DPCubeHistogram:
    """DPCube (Xiao et al.): noisy cells, kd-tree on them, noisy partition counts.

    Notes
    -----
    ``least_squares`` variances are exact (GLS per partition); ``uniform`` ones cover the
    noise only. ``nonnegative=True`` clips at 0 and makes every variance noise-only.
    """
    r = _dpcube.dpcube(counts, planned.plan, rng=rng)
    est = r.estimates.reshape(-1)
    post: tuple[str, ...] = ()
    if nonnegative:
        est = clip_at_zero(est)
        post = ("clip at 0",)
    estimate = planned.knobs["estimate"]
    exact = estimate == "least_squares" and not nonnegative
    return DPCubeHistogram(
        counts=as_series(est, grid, "estimate"),
        variance=as_series(r.variances.reshape(-1), grid, "variance"),
        epsilon=loss.pure_epsilon, method="dpcube",
        params={"epsilon_split": planned.knobs["epsilon_split"], "epsilon_1": str(r.plan.loss_1.amount),
                "epsilon_2": str(r.plan.loss_2.amount), "threshold": r.threshold, "estimate": estimate,
                "n_partitions": int(r.lo.shape[0]), "noise": r.plan.noise_1.name, "sensitivity": 1,
                "nonnegative": nonnegative,
                "variance": "exact (generalized least squares)" if exact else
                "noise only: excludes the approximation (bias) error of the uniform assumption"},
        domain=grid, post_processing=post, variance_exact=exact, detail=r, loss=loss, noise=r.plan.noise_1)


# ----------------------------------------------------------------------------------------- auto

#: Share of the loss ``"auto"`` spends on a noisy total when its choice depends on the total and
#: no ``expected_total`` is given (1/50: the scale N x epsilon is needed to within a factor ~2 only).
AUTO_TOTAL_SHARE = Fraction(1, 50)
_GRIDS = ("ugrid", "agrid")

AUTO_PARAMS = ParamTable("method='auto'", (
    Param("expected_total", Real(0.0), None, "a public number of rows (e.g. last year's published total); "
          "without it, a noisy total is bought with total_share of the loss when the choice depends on it",
          optional=True),
    Param("workload", Options(AUTO_WORKLOADS), "ranges", "what the release will mostly answer: range sums "
          "(rectangles in 2-D), prefix sums, or single bins"),
    Param("total_share", _SPLIT, AUTO_TOTAL_SHARE, "share of the loss spent on the noisy total when one is "
          "needed"),
))


@dataclass(frozen=True)
class AutoPlan:
    """The public part of an ``"auto"`` release: the choice, or every candidate and the noisy total's noise.

    Attributes
    ----------
    choice : AutoChoice or None
        Made before the charge (public total, or a rule with one piece); ``None``
        when the noisy total decides.
    plans : dict of str to Planned
        Every configuration that can be chosen, planned before the charge (with
        ``rest``), so that no choice can fail after it.
    total_loss : PrivacyLoss or None
        Loss of the noisy total (``total_share`` of the whole), when bought.
    total_noise : Noise or None
        Its noise (sensitivity 1: one row changes the total by 1, or one block of the coarse
        histogram by 1).
    rest : PrivacyLoss
        What the chosen method spends (the whole loss minus ``total_loss``, exactly).
    block_noise : Noise or None
        When the rule reads features: ``total_loss`` is split in halves, ``total_noise`` is the
        noisy total's (at the first half) and this the noise of each block of the coarse
        histogram (the second half; one row is in one block, parallel composition), from which
        :func:`~pandas_dp.releases.auto_rule.shape_features` computes the features.
    top_floor : int or None
        With ``block_noise``: :func:`~pandas_dp.releases.auto_rule.top_floor` of the blocks, the level
        below which the densest noisy block is not read as a dense cell (public).
    """

    choice: AutoChoice | None
    plans: dict[str, Planned]
    total_loss: PrivacyLoss | None
    total_noise: Noise | None
    rest: PrivacyLoss
    block_noise: Noise | None = None
    top_floor: int | None = None


def _epsilon(loss: PrivacyLoss) -> float | None:
    return float(loss.amount) if loss.measure == "pure" else None


def _plan_config(choice: AutoChoice, grid: Grid, loss: PrivacyLoss, total: float | None) -> Planned:
    knobs = dict(choice.params)
    if choice.method in _GRIDS and total is not None:
        knobs["expected_total"] = total          # the grids use auto's total instead of buying their own
    return plan_method(choice.method, grid, loss, knobs)


def _plan_auto(grid: Grid, loss: PrivacyLoss, knobs: dict[str, Any]) -> Planned:
    """Choose now when public information decides; otherwise plan every candidate and buy a noisy total.

    Everything that can run after the charge is planned here, before it: a
    loss too small for any candidate's sampler is refused while nothing is spent.
    """
    workload, total = knobs["workload"], knobs["expected_total"]
    total = None if total is None else float(total)
    configs = auto_candidates(grid.shape, workload=workload, loss=loss)
    record: dict[str, Any] = {"auto_workload": workload, "auto_expected_total": total}
    if total is not None or len(configs) == 1:
        choice = choose_method(grid.shape, epsilon=_epsilon(loss), expected_total=total, workload=workload,
                               loss=loss)
        chosen = _plan_config(choice, grid, loss, total)
        record.update({"method": choice.method, "chosen_params": chosen.knobs, "auto_reason": choice.reason,
                       "auto_nonnegative": choice.nonnegative})
        return Planned("auto", AutoPlan(choice, {choice.config: chosen}, None, None, loss), record,
                       label=choice.method)
    share = to_fraction(knobs["total_share"], name="total_share")
    total_loss, rest = loss.split([share, 1 - share])
    block_noise, floor = None, None
    if feature_rule_for(grid.shape, workload, loss) is not None:
        # The same share buys, half and half, the noisy total and a noisy histogram of public coarse blocks.
        configs = auto_candidates(grid.shape, workload=workload, loss=loss, features=True)
        half_total, half_blocks = total_loss.split([Fraction(1, 2), Fraction(1, 2)])
        noise = half_total.noise(what="the noisy total of method='auto'")
        block_noise = half_blocks.noise(what="the noisy coarse histogram of method='auto'")
        blocks = [int(coarse_starts(size, FEATURE_BLOCKS).size) for size in grid.shape]
        floor = top_floor(block_noise, math.prod(blocks))            # public: the noise's level, before the charge
        record.update({"auto_feature_blocks": blocks, f"auto_features_{loss.parameter}": str(half_blocks.amount)})
    else:
        noise = total_loss.noise(what="the noisy total of method='auto'")
    plans = {config: _plan_config(choose_config(config, workload), grid, rest, 0.0) for config in configs}
    record.update({"auto_candidates": list(configs), "auto_total_share": str(share),
                   f"auto_total_{loss.parameter}": str(total_loss.amount)})
    return Planned("auto", AutoPlan(None, plans, total_loss, noise, rest, block_noise, floor), record, label="auto")


def _release_auto(counts: np.ndarray, grid: Grid, planned: Planned, *, rng: Any, nonnegative: bool,
                  loss: PrivacyLoss) -> Histogram:
    """Release the chosen configuration; with a noisy total, draw it first and choose from it.

    Notes
    -----
    With a noisy total the loss splits exactly into the total's share and the
    rest, which the chosen method spends (sequential composition; one row
    changes the total by 1). The choice reads only the noisy total and public
    inputs, so it is post-processing; every candidate was planned before the
    charge. The result records the choice, the total used and what it cost.
    """
    plan: AutoPlan = planned.plan
    knobs = planned.knobs
    total = knobs["auto_expected_total"]
    features: dict[str, float] | None = None
    if plan.total_noise is None:
        assert plan.choice is not None, "_plan_auto chooses at planning time when the total is public"
        choice = plan.choice
        chosen = plan.plans[choice.config]
    else:
        assert plan.total_loss is not None, "_plan_auto gives a noisy total its loss"
        total = float(plan.total_noise.add(np.array([int(counts.sum())]), rng)[0])     # reads the true total
        if plan.block_noise is not None:      # reads the true coarse counts
            noisy_blocks = plan.block_noise.add(coarse_counts(counts, grid.shape).astype(np.int64), rng)
            features = shape_features(noisy_blocks, total, floor=plan.top_floor)
        planned_loss = plan.total_loss + plan.rest      # the loss it was planned at (per row with a privacy unit)
        choice = choose_method(grid.shape, epsilon=_epsilon(planned_loss), expected_total=max(total, 0.0),
                               workload=knobs["auto_workload"], loss=loss, total_is_noisy=True, features=features)
        chosen = plan.plans[choice.config]
        if chosen.method in _GRIDS:
            chosen = with_total(chosen, max(total, 0.0))
    result = METHODS[chosen.method].release(counts, grid, chosen, rng=rng, nonnegative=nonnegative or
                                            choice.nonnegative, loss=loss)
    noisy = plan.total_noise is not None
    params = {**result.params, "chosen_by": "auto", "auto_reason": choice.reason, "auto_config": choice.config,
              "auto_workload": knobs["auto_workload"], "auto_expected_total": knobs["auto_expected_total"],
              "auto_total": total, "auto_total_is_noisy": noisy,
              "auto_total_share": knobs.get("auto_total_share"),
              f"auto_total_{loss.parameter}": knobs.get(f"auto_total_{loss.parameter}"),
              "auto_nonnegative": choice.nonnegative}
    notes = []
    if features is not None:
        params.update({"auto_features": features, "auto_top_floor": plan.top_floor,
                       "auto_feature_blocks": knobs.get("auto_feature_blocks"),
                       f"auto_features_{loss.parameter}": knobs.get(f"auto_features_{loss.parameter}")})
        blocks = " x ".join(str(b) for b in knobs.get("auto_feature_blocks") or ())
        notes.append(f"auto chose {choice.config} from a noisy total and a noisy {blocks} coarse histogram "
                     f"({knobs.get('auto_total_share')} of the loss, half each): {choice.reason}")
    if choice.nonnegative and knobs["auto_workload"] in ("ranges", "prefix"):
        # Said with the numbers (issue 29, item 2): the rule picks non-negative estimates (a projection,
        # +nn, or clipping, +clip) for their accuracy on the workload, and either biases sums of many cells.
        how = "projected to non-negative counts" if choice.config.endswith("+nn") else "clipped at 0"
        notes.append(f"auto chose estimates {how}, the most accurate for this workload (2-D boxes: "
                     "RMSE 0.1-0.47x identity's on the DPBench sets, benchmarks/bench_auto_boxes.py), but "
                     "sums over many cells (ranges, boxes) are biased by the mass the non-negativity moved, which "
                     "no interval includes; pass method='hierarchical' (budget_split='geometric' in 2-D: exact "
                     "intervals) or method='identity' for unbiased sums")
    if notes:
        params["auto_note"] = "; ".join(notes)
    if noisy and chosen.method in _GRIDS:        # the grid was sized from auto's noisy total
        params.update({"expected_total": None, "total_is_noisy": True,
                       "total_epsilon": knobs.get(f"auto_total_{loss.parameter}")})
    return replace(result, params=params)


register_method(HistogramMethod("ahp", AHP_PARAMS, _plan_ahp, _release_ahp,
                                summary="clusters bins by noisy counts, one noisy sum per cluster"))
register_method(HistogramMethod("dpcube", DPCUBE_PARAMS, _plan_dpcube, _release_dpcube,
                                summary="kd-tree partitions of the noisy cell grid"))
register_method(HistogramMethod("auto", AUTO_PARAMS, _plan_auto, _release_auto,
                                measures=frozenset({"pure", "zcdp"}),
                                summary="picks a method from public facts and the scale N x epsilon "
                                        "(public or a noisy total), and from noisy coarse features "
                                        "where AUTO_FEATURE_RULE has thresholds"))
