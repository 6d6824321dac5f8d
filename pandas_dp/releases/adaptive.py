"""Adaptive partition methods for ``histogram(method=...)``: ``"dawa"``, ``"ugrid"``, ``"agrid"``.

Each is a :class:`~pandas_dp.releases.histogram.HistogramMethod`: its knobs are
a :class:`~pandas_dp.releases.params.ParamTable`; its plan
(:func:`~pandas_dp.algorithms.dawa.release.plan_dawa`,
:func:`~pandas_dp.algorithms.grids.plan_ugrid`,
:func:`~pandas_dp.algorithms.grids.plan_agrid`) is made from the public domain,
the loss and the knobs before any charge (a wrong shape, a bad knob or a loss
too small for the sampler is refused then); the release runs the algorithm on
the exact counts and wraps a :class:`~pandas_dp.results.adaptive.DAWAHistogram`
or :class:`~pandas_dp.results.adaptive.GridHistogram`.

``rho=``: DAWA, UGrid and AGrid have zCDP analyses, and their parameters that
name a loss say which (``total_rho``, ``level_rhos``, ``strategy_rho``; DAWA's
partition keeps ``partition_epsilon`` and adds its charge ``partition_rho``).
DAWA (:mod:`pandas_dp.algorithms.dawa.release`): the partition stays pure at
``epsilon_1`` charged ``epsilon_1**2 / 2``; the bucket hierarchy gets discrete
Gaussian noise calibrated to its L2 sensitivity with the rest of ``rho``. The
grids (:mod:`pandas_dp.algorithms.grids`, "Under zCDP"): every measurement (the
noisy total, each level's cells) is a vector of disjoint counts, so each gets
exact discrete Gaussian noise for its exact Fraction of ``rho``, and the sizes
use ``sigma**2`` in place of the paper's ``2 / epsilon**2``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

import numpy as np

from pandas_dp._utils.rational import to_fraction
import pandas_dp.algorithms.dawa.release as _dawa
from pandas_dp.algorithms import grids as _grids
from pandas_dp.domain.grid import Grid
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import PrivacyLoss
from pandas_dp.results.bracket import INTERVAL_NOTE
from pandas_dp.results.adaptive import DAWAHistogram, GridHistogram
from pandas_dp.results.histogram import as_series
from pandas_dp.releases.histogram import BOTH_MEASURES, HistogramMethod, Planned, clip_at_zero, register_method
from pandas_dp.releases.params import Options, Param, ParamTable, Real

__all__ = ["DAWA_PARAMS", "UGRID_PARAMS", "AGRID_PARAMS", "DAWA_WORKLOADS", "PUBLIC_QUERIES", "public_ranges",
           "dawa_workload", "ZCDP_METHODS"]

#: The workloads DAWA's strategy can be tuned for (names of public query sets).
DAWA_WORKLOADS = ("prefix", "ranges", "identity")
#: Size of the public query sample behind ``workload="ranges"``.
PUBLIC_QUERIES = 1024
#: Seed of that sample: a constant of the library, so the sample is public and the same in every release.
_PUBLIC_SEED = 17

_SHARE = Real(0.0, 1.0, low_open=True)


def public_ranges(shape: tuple[int, ...], k: int = PUBLIC_QUERIES) -> np.ndarray:
    """A fixed, public sample of ``k`` ranges (1-D) or rectangles (2-D) with uniform random endpoints.

    Each axis draws two cells ``a, b`` uniformly and takes ``[min(a, b), max(a, b) + 1)``,
    the random range workload of DPBench (Hay et al., SIGMOD 2016). The generator is seeded
    by a library constant: the sample depends on the shape only.

    Returns
    -------
    ndarray of int64
        ``(k, 2)`` rows ``lo, hi`` (1-D) or ``(k, 4)`` rows ``r0, r1, c0, c1`` (2-D).

    Examples
    --------
    >>> q = public_ranges((100,), 5)
    >>> q.shape, bool(((0 <= q[:, 0]) & (q[:, 0] < q[:, 1]) & (q[:, 1] <= 100)).all())
    ((5, 2), True)
    """
    rng = np.random.default_rng(_PUBLIC_SEED)
    cols = []
    for size in shape:
        a, b = rng.integers(0, size, k), rng.integers(0, size, k)
        cols += [np.minimum(a, b), np.maximum(a, b) + 1]
    return np.column_stack(cols).astype(np.int64)


def dawa_workload(name: str, shape: tuple[int, ...]) -> str | np.ndarray:
    """The public queries behind a workload name, in the form :func:`~pandas_dp.algorithms.dawa.release.plan_dawa` takes."""
    return public_ranges(shape) if name == "ranges" else name


def _check_dims(grid: Grid, method: str, allowed: tuple[int, ...], how: str) -> None:
    if grid.ndim not in allowed:
        raise ParameterError(
            f"method={method!r} releases {how}; this domain has {grid.ndim} dimension(s) {list(grid.columns)} "
            f"of shape {grid.shape}. Pass {' or '.join(f'{d}' for d in allowed)} column(s), or choose "
            f"another method (e.g. 'hierarchical', which takes any number of dimensions).")


# ------------------------------------------------------------------------------------------ DAWA

DAWA_PARAMS = ParamTable("method='dawa'", (
    Param("ratio", _SHARE, None, "share of the loss spent on the private partition (default 1/4 in 1-D, "
          "1/2 in 2-D)", optional=True),
    Param("workload", Options(DAWA_WORKLOADS), "ranges", "queries the strategy is tuned for: all prefixes, "
          "a public sample of random ranges (rectangles in 2-D), or single bins"),
))


def _plan_dawa(grid: Grid, loss: PrivacyLoss, knobs: dict[str, Any]) -> Planned:
    _check_dims(grid, "dawa", (1, 2), "1-D histograms, and 2-D grids through a Hilbert ordering")
    ratio = knobs["ratio"]
    plan = _dawa.plan_dawa(grid.shape, loss=loss, ratio=ratio,
                           workload=dawa_workload(knobs["workload"], grid.shape))
    return Planned("dawa", plan, {"ratio": None if ratio is None else str(plan.ratio),
                                  "workload": knobs["workload"]})


#: DAWA's post-processing for ``nonnegative=True`` (the tree's word, on the bucket tree).
NONNEGATIVE_BUCKETS = "non-negative consistent projection of the bucket tree"


def _release_dawa(counts: np.ndarray, grid: Grid, planned: Planned, *, rng: Any, nonnegative: bool,
                  loss: PrivacyLoss) -> DAWAHistogram:
    """DAWA (Li et al. 2014): a private partition into buckets, then a workload-aware tree of bucket sums.

    Notes
    -----
    The loss splits exactly into the partition's (``ratio``) and the bucket
    strategy's (the rest): sequential composition. Given the partition, every
    estimate is linear in the strategy's noise, so its noise variance is exact;
    the bias of spreading a bucket evenly over its bins is not in it
    (``variance_exact`` is False) and intervals are whole-bucket brackets.
    ``nonnegative=True`` projects the bucket tree onto non-negative, consistent
    totals, as ``method="hierarchical"`` does for its tree
    (:meth:`~pandas_dp.algorithms.dawa.release.DawaRelease.nonnegative_estimates`),
    instead of clipping the estimates at 0, which biases every range and prefix
    sum upwards (on the 1-D prefixes of auto's evidence, clipping had 3.2x the
    least-squares error in geometric mean and up to 112x, the projection 0.97x,
    0.75-1.08x; docs/methods/dawa.md has every workload); the variances and the
    brackets read the least-squares bucket totals.
    """
    plan: _dawa.DawaPlan = planned.plan
    r = _dawa.dawa(counts.reshape(grid.shape), plan, rng=rng)
    est = r.estimates.reshape(-1)
    post: tuple[str, ...] = ()
    if nonnegative:
        est = r.nonnegative_estimates().reshape(-1)
        post = (NONNEGATIVE_BUCKETS,)
    noise = r.answers.level_losses[0].noise(what="DAWA's bucket counts")
    return DAWAHistogram(
        counts=as_series(est, grid, "estimate"),
        variance=as_series(r.variances.reshape(-1), grid, "variance"),
        epsilon=loss.pure_epsilon, method="dawa",
        params={"ratio": str(plan.ratio), "workload": planned.knobs["workload"],
                "partition_epsilon": str(plan.partition_loss.amount),
                "strategy_epsilon": str(plan.strategy_loss.amount), "n_buckets": r.n_buckets,
                "strategy_level_shares": [str(s) for s in r.strategy.shares],
                "ordering": "hilbert" if plan.order is not None else "bins",
                "noise": noise.name, "sensitivity": 1, "nonnegative": nonnegative,
                "variance": r.variance_note, "intervals": INTERVAL_NOTE},
        domain=grid, post_processing=post, variance_exact=False, detail=r, loss=loss, noise=noise)


# ----------------------------------------------------------------------------------------- grids

def _total_params(kind: str) -> tuple[Param, ...]:
    return (
        Param("total_share", _SHARE, _grids.DEFAULT_TOTAL_SHARE,
              f"share of the loss spent on the noisy total that sizes the {kind} (unused with expected_total)"),
        Param("expected_total", Real(0.0), None, "a public number of rows (e.g. last year's published total); "
              "no share is spent on the total then", optional=True),
        Param("c", Real(0.0, low_open=True), _grids.DEFAULT_C, "the paper's constant c in m = sqrt(N epsilon / c)"),
    )


UGRID_PARAMS = ParamTable("method='ugrid'", _total_params("grid"))
AGRID_PARAMS = ParamTable("method='agrid'", (
    Param("alpha", _SHARE, _grids.DEFAULT_ALPHA, "share of the counting loss spent on the first level"),
    *_total_params("two levels"),
))


def _grid_knobs(knobs: dict[str, Any]) -> dict[str, Any]:
    """The checked knobs as the ledger records them (exact shares as text)."""
    out: dict[str, Any] = {name: str(to_fraction(knobs[name], name=name)) for name in ("alpha", "total_share")
                           if name in knobs}
    out["expected_total"] = None if knobs["expected_total"] is None else float(knobs["expected_total"])
    out["c"] = float(knobs["c"])
    return out


def _plan_ugrid(grid: Grid, loss: PrivacyLoss, knobs: dict[str, Any]) -> Planned:
    _check_dims(grid, "ugrid", (2,), "2-D grids only (a uniform grid over two columns)")
    plan = _grids.plan_ugrid(grid.shape, loss=loss, total_share=to_fraction(knobs["total_share"], name="total_share"),
                             expected_total=knobs["expected_total"], c=float(knobs["c"]))
    return Planned("ugrid", plan, _grid_knobs(knobs))


def _plan_agrid(grid: Grid, loss: PrivacyLoss, knobs: dict[str, Any]) -> Planned:
    _check_dims(grid, "agrid", (2,), "2-D grids only (an adaptive grid over two columns)")
    plan = _grids.plan_agrid(grid.shape, loss=loss, alpha=to_fraction(knobs["alpha"], name="alpha"),
                             total_share=to_fraction(knobs["total_share"], name="total_share"),
                             expected_total=knobs["expected_total"], c=float(knobs["c"]))
    return Planned("agrid", plan, _grid_knobs(knobs))


def with_total(planned: Planned, total: float) -> Planned:
    """The grid plan with ``total`` as its public total (a noisy total already released, e.g. by ``auto``)."""
    return replace(planned, plan=replace(planned.plan, expected_total=float(total)))


def _release_grid(counts: np.ndarray, grid: Grid, planned: Planned, *, rng: Any, nonnegative: bool,
                  loss: PrivacyLoss) -> GridHistogram:
    """UGrid / AGrid (Qardaji et al. 2013): noisy counts of a grid sized from the (noisy or public) total.

    Notes
    -----
    What is charged for what (sequential composition; the parts are exact
    Fractions of the loss and add up to it, charged once):

    * without ``expected_total``, ``total_share`` of the loss buys the noisy
      total ``N`` that sizes the grid (``total_epsilon`` / ``total_rho``);
      with it, nothing is spent on the total;
    * UGrid: the rest counts the cells of one grid; AGrid: ``alpha`` of the
      rest counts the first level, and ``1 - alpha`` the second level, whose
      sizes are read from the first level's noisy counts only
      (``level_epsilons`` / ``level_rhos``).

    Cells of a level are disjoint (sensitivity 1). Under ``epsilon=`` every
    part gets discrete Laplace noise; under ``rho=`` exact discrete Gaussian
    noise with ``sigma**2 = 1 / (2 rho_part)``, AGrid's first level included
    (choosing the second level from its noisy counts is post-processing of a
    zCDP measurement), and the size rules read ``epsilon`` as
    :func:`~pandas_dp.algorithms.grids.size_epsilon` of the noise used
    (``size_epsilons``: ``sqrt(2) / sigma`` under ``rho=``). The noise variances
    are exact given the grid; the bias of spreading a cell over its atoms is
    not in them (``variance_exact`` is False) and intervals are whole-cell
    brackets, their radius from the level noise with the heaviest tail.
    """
    plan: _grids.GridPlan = planned.plan
    run = _grids.ugrid if plan.method == "ugrid" else _grids.agrid
    r = run(counts.reshape(grid.shape), plan, rng=rng)
    est = r.estimates.reshape(-1)
    post: tuple[str, ...] = ()
    if nonnegative:
        est = clip_at_zero(est)
        post = ("clip at 0",)
    # Estimates combine the draws of every level: the radius of the heaviest-tailed one covers any combination
    # (equal for discrete Laplace; under rho the smallest sigma**2 below 2). Ties keep the last level.
    noise = max(reversed(plan.level_noise), key=lambda n: n.tail_factor(0.95))
    size_epsilons = [plan.epsilon_used] + ([] if plan.epsilon_second is None else [plan.epsilon_second])
    params: dict[str, Any] = {
        **planned.knobs, "total": r.total, "total_is_noisy": r.total_is_noisy,
        "total_epsilon": None if plan.total_loss is None else str(plan.total_loss.amount),
        "level_epsilons": [str(part.amount) for part in plan.level_losses],
        "size_epsilons": size_epsilons,
        "grid_shape": list(r.grid_shape), "n_cells": int((r.sub_shape[..., 0] * r.sub_shape[..., 1]).sum()),
        "noise": noise.name, "sensitivity_per_level": 1, "nonnegative": nonnegative,
        "variance": r.variance_note, "intervals": INTERVAL_NOTE}
    return GridHistogram(
        counts=as_series(est, grid, "estimate"),
        variance=as_series(r.variances.reshape(-1), grid, "variance"),
        epsilon=loss.pure_epsilon, method=plan.method, params=params, domain=grid, post_processing=post,
        variance_exact=False, detail=r, loss=loss, noise=noise)


#: The adaptive methods that take ``rho=`` (module notes).
ZCDP_METHODS = ("dawa", "ugrid", "agrid")

#: Pure-named loss parameters and their names under zCDP.
_RENAMED = {"total_epsilon": "total_rho", "level_epsilons": "level_rhos", "strategy_epsilon": "strategy_rho"}


def _named_by_measure(release: Callable[..., Any]) -> Callable[..., Any]:
    """The release, with its loss parameters named by their measure under zCDP (pure: unchanged)."""
    def run(counts: Any, grid: Any, planned: Any, *, rng: Any, nonnegative: bool, loss: Any) -> Any:
        result = release(counts, grid, planned, rng=rng, nonnegative=nonnegative, loss=loss)
        if loss.measure != "zcdp":
            return result
        params = {_RENAMED.get(key, key): value for key, value in result.params.items()}
        part = getattr(planned.plan, "partition_loss", None)
        if part is not None:
            params["partition_rho"] = str(part.charged_as("zcdp").amount)
        return replace(result, params=params)
    run.__doc__ = release.__doc__
    return run


def _register(method: HistogramMethod) -> None:
    if method.name in ZCDP_METHODS:
        method = replace(method, measures=BOTH_MEASURES, release=_named_by_measure(method.release))
    register_method(method)


_register(HistogramMethod("dawa", DAWA_PARAMS, _plan_dawa, _release_dawa,
                          summary="private partition into near-uniform buckets, workload-aware bucket tree"))
_register(HistogramMethod("ugrid", UGRID_PARAMS, _plan_ugrid, _release_grid,
                          summary="2-D uniform grid sized from the total (Qardaji et al.)"))
_register(HistogramMethod("agrid", AGRID_PARAMS, _plan_agrid, _release_grid,
                          summary="2-D adaptive two-level grid with constrained inference"))
