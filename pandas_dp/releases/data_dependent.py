"""Data-dependent histogram methods for ``histogram(method=...)``: ``"ahp"``, ``"dpcube"``, ``"auto"``.

Each method is a :class:`~pandas_dp.releases.flat.HistogramMethod`: its
``validate`` step checks the knobs against the public domain before any
charge; its ``release`` step receives the exact counts and the epsilon already
charged, runs the pure algorithm and wraps the result. ``"auto"`` picks a
method from public information only (see :func:`choose_method`) and spends
exactly what the chosen method spends.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import replace
from fractions import Fraction
from typing import Any, Mapping, NamedTuple

import numpy as np

from ..algorithms import ahp as _ahp
from ..algorithms import dpcube as _dpcube
from ..domain import Grid
from ..errors import ParameterError
from ..results.data_dependent import AHPHistogram, DPCubeHistogram
from ..results.histogram import Histogram, as_series
from ._common import check_noise_scale, check_choice
from .flat import METHODS, HistogramMethod, register_method

__all__ = ["ahp_release", "dpcube_release", "auto_release", "choose_method", "AutoChoice",
           "AUTO_BINS_SIGNAL", "AUTO_DPCUBE_MAX_SIGNAL"]

#: For ``workload="bins"``, ``"auto"`` picks AHP when the expected count per cell in units of
#: the noise scale, ``expected_total * epsilon / cells``, is below this (docs/methods/auto.md:
#: DPBench signal sweep, benchmarks/bench_data_dependent.py --sweep).
AUTO_BINS_SIGNAL = 20.0
#: For range workloads on d >= 2 grids, ``"auto"`` picks DPCube (uniform) unless the signal is
#: known to exceed this, the largest signal of the DPBench 2-D evidence (GOWALLA at epsilon 1).
AUTO_DPCUBE_MAX_SIGNAL = 100.0


class AutoChoice(NamedTuple):
    """What ``method="auto"`` releases: a method, its knobs, and why."""

    method: str
    params: dict
    reason: str


def _number(value: Any, name: str, *, low: float, high: float | None = None,
            low_open: bool = False, allow_inf: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(f"The '{name}' parameter must be a number. Got {value!r}.")
    v = float(value)
    bad = math.isnan(v) or (math.isinf(v) and not allow_inf) or v < low or (low_open and v == low) \
        or (high is not None and v >= high)
    if bad:
        rng = f"({low}, {high})" if high is not None else (f"> {low}" if low_open else f">= {low}")
        raise ParameterError(f"The '{name}' parameter must be a finite number {rng}. Got {value!r}.")
    return value if isinstance(value, Fraction) else v


def _unknown(method: str, kwargs: Mapping[str, Any], known: tuple[str, ...]) -> None:
    extra = sorted(set(kwargs) - set(known))
    if extra:
        raise ParameterError(f"method={method!r} does not take {extra}; remove them. Its parameters: {list(known)}.")


def _check_phases(epsilon: Fraction, split: Any, method: str) -> None:
    first = epsilon * Fraction(split)
    check_noise_scale(first, what=f"{method}'s first phase")
    check_noise_scale(epsilon - first, what=f"{method}'s second phase")


# ------------------------------------------------------------------------------------------ AHP

def _validate_ahp(grid: Grid, kwargs: Mapping[str, Any], epsilon: Fraction) -> dict:
    _unknown("ahp", kwargs, ("epsilon_split", "eta", "clustering"))
    split = _number(kwargs.get("epsilon_split", _ahp.DEFAULT_EPSILON_SPLIT), "epsilon_split",
                    low=0.0, high=1.0, low_open=True)
    eta = _number(kwargs.get("eta", _ahp.DEFAULT_ETA), "eta", low=0.0)
    clustering = check_choice(kwargs.get("clustering", "greedy"), "clustering",
                              ("greedy", "empirical", "optimal"))
    limit = {"optimal": _ahp.OPTIMAL_MAX_BINS, "empirical": _ahp.EMPIRICAL_MAX_BINS}.get(clustering)
    if limit is not None and grid.size > limit:
        raise ParameterError(
            f"clustering={clustering!r} is limited to {limit} bins; this domain has {grid.size}. "
            f"Use clustering='greedy' (the default) for large domains.")
    _check_phases(epsilon, split, "AHP")
    return {"epsilon_split": split, "eta": eta, "clustering": clustering}


def ahp_release(counts: np.ndarray, grid: Grid, *, epsilon: Fraction, rng: np.random.Generator | None,
                nonnegative: bool, epsilon_split: float = _ahp.DEFAULT_EPSILON_SPLIT,
                eta: float = _ahp.DEFAULT_ETA, clustering: str = "greedy") -> AHPHistogram:
    """AHP (Zhang et al. 2014): cluster bins by noisy counts, one noisy sum per cluster.

    Notes
    -----
    epsilon_1 = epsilon_split * epsilon on noisy counts, epsilon_2 = epsilon - epsilon_1 on
    the cluster sums (sequential composition, exact rationals). The reported variance of
    a bin of cluster C is Var(Z)/|C|^2: noise only, the approximation error is excluded.
    """
    r = _ahp.ahp(counts.reshape(-1), epsilon=epsilon, epsilon_split=epsilon_split, eta=eta,
                 clustering=clustering, rng=rng)
    est = r.estimates
    post: tuple[str, ...] = ()
    if nonnegative:
        est = np.maximum(est, 0.0)
        post = ("clip at 0",)
    return AHPHistogram(
        counts=as_series(est, grid, "estimate"),
        variance=as_series(r.variances, grid, "variance"),
        epsilon=float(epsilon), method="ahp",
        params={"epsilon_split": epsilon_split, "epsilon_1": str(r.epsilon_1),
                "epsilon_2": str(r.epsilon_2), "eta": eta, "threshold": r.theta,
                "clustering": clustering, "n_clusters": int(r.cluster_sizes.size),
                "noise": "discrete Laplace", "sensitivity": 1, "nonnegative": nonnegative,
                "variance": "noise only: excludes the approximation (bias) error of cluster means"},
        domain=grid, post_processing=post, variance_exact=False, detail=r)


# --------------------------------------------------------------------------------------- DPCube

def _validate_dpcube(grid: Grid, kwargs: Mapping[str, Any], epsilon: Fraction) -> dict:
    _unknown("dpcube", kwargs, ("epsilon_split", "threshold", "estimate"))
    split = _number(kwargs.get("epsilon_split", _dpcube.DEFAULT_EPSILON_SPLIT), "epsilon_split",
                    low=0.0, high=1.0, low_open=True)
    threshold = kwargs.get("threshold")
    if threshold is not None:
        threshold = float(_number(threshold, "threshold", low=0.0, allow_inf=True))
    estimate = check_choice(kwargs.get("estimate", "least_squares"), "estimate",
                            ("least_squares", "uniform"))
    _check_phases(epsilon, split, "DPCube")
    return {"epsilon_split": split, "threshold": threshold, "estimate": estimate}


def dpcube_release(counts: np.ndarray, grid: Grid, *, epsilon: Fraction, rng: np.random.Generator | None,
                   nonnegative: bool, epsilon_split: float = _dpcube.DEFAULT_EPSILON_SPLIT,
                   threshold: float | None = None, estimate: str = "least_squares") -> DPCubeHistogram:
    """DPCube (Xiao et al.): noisy cells, kd-tree on them, noisy partition counts.

    Notes
    -----
    ``least_squares`` variances are exact (GLS per partition); ``uniform`` ones cover the
    noise only. ``nonnegative=True`` clips at 0 and makes every variance noise-only.
    """
    r = _dpcube.dpcube(counts, epsilon=epsilon, epsilon_split=epsilon_split, threshold=threshold,
                       estimate=estimate, rng=rng)
    est = r.estimates.reshape(-1)
    post: tuple[str, ...] = ()
    if nonnegative:
        est = np.maximum(est, 0.0)
        post = ("clip at 0",)
    exact = estimate == "least_squares" and not nonnegative
    return DPCubeHistogram(
        counts=as_series(est, grid, "estimate"),
        variance=as_series(r.variances.reshape(-1), grid, "variance"),
        epsilon=float(epsilon), method="dpcube",
        params={"epsilon_split": epsilon_split, "epsilon_1": str(r.epsilon_1),
                "epsilon_2": str(r.epsilon_2), "threshold": r.threshold, "estimate": estimate,
                "n_partitions": int(r.lo.shape[0]), "noise": "discrete Laplace", "sensitivity": 1,
                "nonnegative": nonnegative,
                "variance": "exact (generalized least squares)" if exact else
                "noise only: excludes the approximation (bias) error of the uniform assumption"},
        domain=grid, post_processing=post, variance_exact=exact, detail=r)


# ----------------------------------------------------------------------------------------- auto

def choose_method(shape: tuple[int, ...], *, epsilon: float, expected_total: float | None = None,
                  workload: str = "ranges") -> AutoChoice:
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
    if workload == "bins":
        if signal is not None and cells > 1:
            if signal < AUTO_BINS_SIGNAL:
                return AutoChoice("ahp", {}, f"per-bin workload with expected count per cell x epsilon = "
                                  f"{signal:.3g} < {AUTO_BINS_SIGNAL:g}: AHP clustering beats per-bin noise")
            return AutoChoice("identity", {}, f"per-bin workload with expected count per cell x epsilon = "
                              f"{signal:.3g} >= {AUTO_BINS_SIGNAL:g}: the flat histogram")
        return AutoChoice("identity", {}, "per-bin workload without expected_total: the flat histogram")
    if len(shape) >= 2 and cells > 1 and (signal is None or signal <= AUTO_DPCUBE_MAX_SIGNAL):
        known = "unknown" if signal is None else f"{signal:.3g} <= {AUTO_DPCUBE_MAX_SIGNAL:g}"
        return AutoChoice("dpcube", {"estimate": "uniform"},
                          f"{len(shape)}-D range workload, expected count per cell x epsilon {known}: "
                          f"DPCube kd-tree partitions with uniform estimation")
    if "hierarchical" in METHODS and cells > 1:
        from ..algorithms.branching import choose_branching
        choice = choose_branching(shape, epsilon=float(epsilon))
        if choice.branching < max(shape) and choice.predicted_variance < choice.flat_variance:
            return AutoChoice("hierarchical", {"branching": "auto"},
                              f"range workload: tree b={choice.branching} predicts average range "
                              f"variance {choice.predicted_variance:.4g} < flat {choice.flat_variance:.4g}")
    return AutoChoice("identity", {}, "range workload: the flat histogram predicts the smallest "
                      "average range variance")


def _validate_auto(grid: Grid, kwargs: Mapping[str, Any], epsilon: Fraction) -> dict:
    """Check the knobs and make the choice now, from public information, so the ledger records it."""
    _unknown("auto", kwargs, ("expected_total", "workload"))
    total = kwargs.get("expected_total")
    if total is not None:
        total = float(_number(total, "expected_total", low=0.0))
    workload = check_choice(kwargs.get("workload", "ranges"), "workload", ("ranges", "bins"))
    name, extra, reason = choose_method(grid.shape, epsilon=float(epsilon), expected_total=total,
                                        workload=workload)
    chosen = METHODS[name].validate(grid, extra, epsilon)
    return {"method": name, "chosen_params": chosen, "auto_reason": reason, "auto_workload": workload,
            "auto_expected_total": total}


def auto_release(counts: np.ndarray, grid: Grid, *, epsilon: Fraction, rng: np.random.Generator | None,
                 nonnegative: bool, method: str, chosen_params: Mapping[str, Any], auto_reason: str,
                 auto_workload: str, auto_expected_total: float | None) -> Histogram:
    """Release with the method :func:`choose_method` picked during validation; the choice is in ``params``."""
    result = METHODS[method].release(counts, grid, epsilon=epsilon, rng=rng, nonnegative=nonnegative,
                                     **chosen_params)
    return replace(result, params={**result.params, "chosen_by": "auto", "auto_reason": auto_reason,
                                   "auto_workload": auto_workload, "auto_expected_total": auto_expected_total})


register_method(HistogramMethod("ahp", _validate_ahp, ahp_release))
register_method(HistogramMethod("dpcube", _validate_dpcube, dpcube_release))
register_method(HistogramMethod("auto", _validate_auto, auto_release))
