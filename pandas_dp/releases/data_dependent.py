"""Data-dependent histogram methods for ``histogram(method=...)``: ``"ahp"``, ``"dpcube"``, ``"auto"``.

Each method is a :class:`~pandas_dp.releases.flat.HistogramMethod`: its
``validate`` step checks the knobs against the public domain before any
charge; its ``release`` step receives the exact counts and the epsilon already
charged, runs the pure algorithm and wraps the result. ``"auto"`` picks a
method from public information only (see :func:`choose_method`) and spends
exactly what the chosen method spends.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from ..algorithms import ahp as _ahp
from ..algorithms import dpcube as _dpcube
from ..domain import Grid
from ..errors import ParameterError
from ..loss import PrivacyLoss
from ..results.data_dependent import AHPHistogram, DPCubeHistogram
from ..results.histogram import Histogram, as_series
from .histogram import METHODS, HistogramMethod, Planned, clip_at_zero, plan_method, register_method
from .params import Options, Param, ParamTable, Real

__all__ = ["choose_method", "AutoChoice", "AUTO_BINS_SIGNAL", "AUTO_DPCUBE_MAX_SIGNAL"]

#: For ``workload="bins"``, ``"auto"`` picks AHP when the expected count per cell in units of
#: the noise scale, ``expected_total * epsilon / cells``, is below this (docs/methods/auto.md:
#: DPBench signal sweep, benchmarks/bench_data_dependent.py --sweep).
AUTO_BINS_SIGNAL = 20.0
#: For range workloads on d >= 2 grids, ``"auto"`` picks DPCube (uniform) unless the signal is
#: known to exceed this, the largest signal of the DPBench 2-D evidence (GOWALLA at epsilon 1).
AUTO_DPCUBE_MAX_SIGNAL = 100.0

_SPLIT = Real(0.0, 1.0, low_open=True)


class AutoChoice(NamedTuple):
    """What ``method="auto"`` releases: a method, its knobs, and why."""

    method: str
    params: dict
    reason: str


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

def choose_method(shape: tuple[int, ...], *, epsilon: float, expected_total: float | None = None,
                  workload: str = "ranges", loss: PrivacyLoss | None = None) -> AutoChoice:
    """The method ``"auto"`` uses, from public information only (no budget is spent).

    Parameters
    ----------
    shape : tuple of int
        Public grid shape.
    epsilon : float
        Budget of the release.
    expected_total : float, optional
        A public guess of the number of rows (e.g. last year's published total).
    workload : {"ranges", "bins"}
        What the release will mostly answer: range / rectangle sums, or single bins.
    loss : PrivacyLoss, optional
        The release's loss (default: pure ``epsilon``). Under zCDP only the methods with a
        zCDP analysis (identity, hierarchical) are candidates.

    Returns
    -------
    AutoChoice
        ``(method, params, reason)``; the reason is recorded on the result.

    Notes
    -----
    With ``signal = expected_total * epsilon / cells`` (expected count per cell in units of
    the noise scale). Evidence: DPBench at natural scale and a signal sweep
    (benchmarks/bench_data_dependent.py, docs/methods/auto.md).

    * Bins: AHP if ``signal < AUTO_BINS_SIGNAL`` (0.13-0.73 x identity's per-bin error up to
      signal 15 on the sweep), else identity (optimal for single bins among the
      data-independent methods, and the choice when the signal is unknown).
    * Ranges, 1-D: the hierarchical tree when its predicted average range variance (exact
      V_Avg / Qardaji Eq. 3, :func:`~pandas_dp.algorithms.branching.choose_branching`) beats
      the flat histogram's, else identity. The tree won all 40 natural-scale 1-D cases and 78
      of 80 sweep cases; no data-dependent method was better on average at any signal.
    * Ranges, d >= 2: DPCube with uniform estimation (0.34-0.47 x identity's rectangle
      error at every signal of the sweep, 8 of 10 natural-scale wins; the tree 0.77 x)
      unless ``signal > AUTO_DPCUBE_MAX_SIGNAL``, beyond the evidence, where the tree is used.
    """
    cells = int(np.prod(shape))
    signal = None if expected_total is None else float(expected_total) * float(epsilon) / max(cells, 1)
    if loss is not None and loss.measure not in METHODS["ahp"].measures:
        signal = None  # the data-dependent methods have no analysis in this measure
    if workload == "bins":
        if signal is not None and cells > 1:
            if signal < AUTO_BINS_SIGNAL:
                return AutoChoice("ahp", {}, f"per-bin workload with expected count per cell x epsilon = "
                                  f"{signal:.3g} < {AUTO_BINS_SIGNAL:g}: AHP clustering beats per-bin noise")
            return AutoChoice("identity", {}, f"per-bin workload with expected count per cell x epsilon = "
                              f"{signal:.3g} >= {AUTO_BINS_SIGNAL:g}: the flat histogram")
        return AutoChoice("identity", {}, "per-bin workload without expected_total: the flat histogram")
    data_dependent = loss is None or loss.measure in METHODS["dpcube"].measures
    if data_dependent and len(shape) >= 2 and cells > 1 and (signal is None or signal <= AUTO_DPCUBE_MAX_SIGNAL):
        known = "unknown" if signal is None else f"{signal:.3g} <= {AUTO_DPCUBE_MAX_SIGNAL:g}"
        return AutoChoice("dpcube", {"estimate": "uniform"},
                          f"{len(shape)}-D range workload, expected count per cell x epsilon {known}: "
                          f"DPCube kd-tree partitions with uniform estimation")
    if "hierarchical" in METHODS and cells > 1:
        from ..algorithms.branching import choose_branching
        choice = choose_branching(shape, epsilon=float(epsilon), loss=loss)
        if choice.branching < max(shape) and choice.predicted_variance < choice.flat_variance:
            return AutoChoice("hierarchical", {"branching": "auto"},
                              f"range workload: tree b={choice.branching} predicts average range "
                              f"variance {choice.predicted_variance:.4g} < flat {choice.flat_variance:.4g}")
    return AutoChoice("identity", {}, "range workload: the flat histogram predicts the smallest "
                      "average range variance")


AUTO_PARAMS = ParamTable("method='auto'", (
    Param("expected_total", Real(0.0), None, "a public guess of the number of rows", optional=True),
    Param("workload", Options(("ranges", "bins")), "ranges", "what the release will mostly answer"),
))


def _plan_auto(grid: Grid, loss: PrivacyLoss, knobs: dict[str, Any], unit: Any = None) -> Planned:
    """Make the choice now, from public information, so the ledger records the method actually run."""
    total = None if knobs["expected_total"] is None else float(knobs["expected_total"])
    name, extra, reason = choose_method(grid.shape, epsilon=float(loss.amount), expected_total=total,
                                        workload=knobs["workload"], loss=loss)
    chosen = plan_method(name, grid, loss, extra, unit)
    return Planned("auto", chosen, {"method": name, "chosen_params": chosen.knobs, "auto_reason": reason,
                                    "auto_workload": knobs["workload"], "auto_expected_total": total},
                   label=name)


def _release_auto(counts: np.ndarray, grid: Grid, planned: Planned, *, rng: Any, nonnegative: bool,
                  loss: PrivacyLoss) -> Histogram:
    """Release with the method :func:`choose_method` picked during planning; the choice is in ``params``."""
    chosen: Planned = planned.plan
    result = METHODS[chosen.method].release(counts, grid, chosen, rng=rng, nonnegative=nonnegative, loss=loss)
    knobs = planned.knobs
    return replace(result, params={**result.params, "chosen_by": "auto", "auto_reason": knobs["auto_reason"],
                                   "auto_workload": knobs["auto_workload"],
                                   "auto_expected_total": knobs["auto_expected_total"]})


register_method(HistogramMethod("ahp", AHP_PARAMS, _plan_ahp, _release_ahp,
                                summary="clusters bins by noisy counts, one noisy sum per cluster"))
register_method(HistogramMethod("dpcube", DPCUBE_PARAMS, _plan_dpcube, _release_dpcube,
                                summary="kd-tree partitions of the noisy cell grid"))
register_method(HistogramMethod("auto", AUTO_PARAMS, _plan_auto, _release_auto,
                                measures=frozenset({"pure", "zcdp"}),
                                summary="picks a method from public information only", unit_aware=True))
