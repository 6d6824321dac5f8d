"""``method="auto"``: a method chosen from public facts and the scale ``N x epsilon`` (``docs/methods/auto.md``).

``"auto"`` chooses a configuration with the rule of
:mod:`pandas_dp.releases.methods.auto_rule` from public facts and the scale
``N x epsilon``: ``N`` is the caller's ``expected_total`` or, when the choice
depends on it, a noisy total bought with ``total_share`` of the loss inside
the same charge (stated in the ledger row and on the result). Every
configuration it may choose is a method of :data:`CANDIDATES`, planned before
the charge and released through that method's own ``release``.
"""

from __future__ import annotations

import math

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np

from pandas_dp._utils.rational import to_fraction
from pandas_dp.domain.grid import Grid
from pandas_dp.privacy.loss import Noise, PrivacyLoss
from pandas_dp.results.histogram import Histogram
from pandas_dp.releases.methods.ahp import AHP
from pandas_dp.releases.methods.auto_rule import (AUTO_WORKLOADS, FEATURE_BLOCKS, AutoChoice, auto_candidates,
                                                  choose_config, choose_method, coarse_counts, coarse_starts,
                                                  feature_rule_for, shape_features, top_floor)
from pandas_dp.releases.methods.base import BOTH_MEASURES, SHARE, HistogramMethod, Planned, plan_with
from pandas_dp.releases.methods.dawa import DAWA
from pandas_dp.releases.methods.dpcube import DPCUBE
from pandas_dp.releases.methods.grids import AGRID, UGRID, with_total
from pandas_dp.releases.methods.hierarchical import HIERARCHICAL
from pandas_dp.releases.methods.identity import IDENTITY
from pandas_dp.releases.params import Options, Param, ParamTable, Real

__all__ = ["AUTO", "AUTO_PARAMS", "AUTO_TOTAL_SHARE", "AutoPlan", "CANDIDATES", "choose_method", "AutoChoice"]

#: The methods ``"auto"`` may run, by name: every method named in
#: :data:`~pandas_dp.releases.methods.auto_rule.AUTO_CONFIGS` (``tests/releases/test_auto.py`` checks it).
CANDIDATES: dict[str, HistogramMethod] = {m.name: m for m in (IDENTITY, HIERARCHICAL, DAWA, UGRID, AGRID, AHP,
                                                                DPCUBE)}

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
    Param("total_share", SHARE, AUTO_TOTAL_SHARE, "share of the loss spent on the noisy total when one is "
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
        :func:`~pandas_dp.releases.methods.auto_rule.shape_features` computes the features.
    top_floor : int or None
        With ``block_noise``: :func:`~pandas_dp.releases.methods.auto_rule.top_floor` of the blocks, the level
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
    return plan_with(CANDIDATES[choice.method], grid, loss, knobs)


def _plan(grid: Grid, loss: PrivacyLoss, knobs: dict[str, Any]) -> Planned:
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


def _release(counts: np.ndarray, grid: Grid, planned: Planned, *, rng: Any, nonnegative: bool,
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
        assert plan.choice is not None, "_plan chooses at planning time when the total is public"
        choice = plan.choice
        chosen = plan.plans[choice.config]
    else:
        assert plan.total_loss is not None, "_plan gives a noisy total its loss"
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
    result = CANDIDATES[chosen.method].release(counts, grid, chosen, rng=rng, nonnegative=nonnegative or
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


AUTO = HistogramMethod("auto", AUTO_PARAMS, _plan, _release, measures=BOTH_MEASURES,
                       summary="picks a method from public facts and the scale N x epsilon "
                               "(public or a noisy total), and from noisy coarse features "
                               "where AUTO_FEATURE_RULE has thresholds")
