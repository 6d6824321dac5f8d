"""``method="dawa"``: a private partition into near-uniform buckets, then a workload-aware bucket tree.

The plan (:func:`~pandas_dp.algorithms.dawa.release.plan_dawa`) is made from
the public domain, the loss and the knobs before any charge (a wrong shape, a
bad knob or a loss too small for the sampler is refused then); the release
runs the algorithm on the exact counts and wraps a
:class:`~pandas_dp.results.adaptive.DAWAHistogram` (``docs/methods/dawa.md``).

``rho=``: DAWA has a zCDP analysis, and its parameters that name a loss say
which (``strategy_rho``; the partition keeps ``partition_epsilon`` and adds its
charge ``partition_rho``): the partition stays pure at ``epsilon_1`` charged
``epsilon_1**2 / 2``; the bucket hierarchy gets discrete Gaussian noise
calibrated to its L2 sensitivity with the rest of ``rho``
(:mod:`pandas_dp.algorithms.dawa.release`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import pandas_dp.algorithms.dawa.release as _dawa
from pandas_dp.domain.grid import Grid
from pandas_dp.privacy.loss import PrivacyLoss
from pandas_dp.results.adaptive import DAWAHistogram
from pandas_dp.results.bracket import INTERVAL_NOTE
from pandas_dp.results.histogram import as_series
from pandas_dp.releases.methods.base import (BOTH_MEASURES, SHARE, HistogramMethod, Planned, check_dims,
                                             named_by_measure)
from pandas_dp.releases.params import Options, Param, ParamTable

__all__ = ["DAWA", "DAWA_PARAMS", "DAWA_WORKLOADS", "PUBLIC_QUERIES", "public_ranges", "dawa_workload",
           "NONNEGATIVE_BUCKETS"]

#: The workloads DAWA's strategy can be tuned for (names of public query sets).
DAWA_WORKLOADS = ("prefix", "ranges", "identity")
#: Size of the public query sample behind ``workload="ranges"``.
PUBLIC_QUERIES = 1024
#: Seed of that sample: a constant of the library, so the sample is public and the same in every release.
_PUBLIC_SEED = 17


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


DAWA_PARAMS = ParamTable("method='dawa'", (
    Param("ratio", SHARE, None, "share of the loss spent on the private partition (default 1/4 in 1-D, "
          "1/2 in 2-D)", optional=True),
    Param("workload", Options(DAWA_WORKLOADS), "ranges", "queries the strategy is tuned for: all prefixes, "
          "a public sample of random ranges (rectangles in 2-D), or single bins"),
))


def _plan(grid: Grid, loss: PrivacyLoss, knobs: dict[str, Any]) -> Planned:
    check_dims(grid, "dawa", (1, 2), "1-D histograms, and 2-D grids through a Hilbert ordering")
    ratio = knobs["ratio"]
    plan = _dawa.plan_dawa(grid.shape, loss=loss, ratio=ratio,
                           workload=dawa_workload(knobs["workload"], grid.shape))
    return Planned("dawa", plan, {"ratio": None if ratio is None else str(plan.ratio),
                                  "workload": knobs["workload"]})


#: DAWA's post-processing for ``nonnegative=True`` (the tree's word, on the bucket tree).
NONNEGATIVE_BUCKETS = "non-negative consistent projection of the bucket tree"


def _release(counts: np.ndarray, grid: Grid, planned: Planned, *, rng: Any, nonnegative: bool,
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


DAWA = HistogramMethod("dawa", DAWA_PARAMS, _plan, named_by_measure(_release), measures=BOTH_MEASURES,
                       summary="private partition into near-uniform buckets, workload-aware bucket tree")
