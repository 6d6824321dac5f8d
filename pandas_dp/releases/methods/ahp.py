"""``method="ahp"``: AHP clusters bins by noisy counts, one noisy sum per cluster (``docs/methods/ahp.md``).

The plan (:func:`~pandas_dp.algorithms.ahp.plan_ahp`) checks the knobs against
the public domain before any charge; the release runs
:func:`~pandas_dp.algorithms.ahp.ahp` on the exact counts and wraps an
:class:`~pandas_dp.results.data_dependent.AHPHistogram`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pandas_dp.algorithms import ahp as _ahp
from pandas_dp.domain.grid import Grid
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import PrivacyLoss
from pandas_dp.results.data_dependent import AHPHistogram
from pandas_dp.results.histogram import as_series
from pandas_dp.releases.methods.base import SHARE, HistogramMethod, Planned, clip_at_zero
from pandas_dp.releases.params import Options, Param, ParamTable, Real

__all__ = ["AHP", "AHP_PARAMS"]

AHP_PARAMS = ParamTable("method='ahp'", (
    Param("epsilon_split", SHARE, _ahp.DEFAULT_EPSILON_SPLIT, "share of the loss spent on the noisy counts"),
    Param("eta", Real(0.0), _ahp.DEFAULT_ETA, "threshold multiplier, theta = eta * ln(n) / epsilon_1"),
    Param("clustering", Options(("greedy", "empirical", "optimal")), "greedy", "clustering strategy"),
))


def _plan(grid: Grid, loss: PrivacyLoss, knobs: dict[str, Any]) -> Planned:
    clustering = knobs["clustering"]
    limit = {"optimal": _ahp.OPTIMAL_MAX_BINS, "empirical": _ahp.EMPIRICAL_MAX_BINS}.get(clustering)
    if limit is not None and grid.size > limit:
        raise ParameterError(
            f"clustering={clustering!r} is limited to {limit} bins; this domain has {grid.size}. "
            f"Use clustering='greedy' (the default) for large domains.")
    plan = _ahp.plan_ahp(grid.size, loss=loss, epsilon_split=knobs["epsilon_split"], eta=knobs["eta"],
                         clustering=clustering)
    return Planned("ahp", plan, knobs)


def _release(counts: np.ndarray, grid: Grid, planned: Planned, *, rng: Any, nonnegative: bool,
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


AHP = HistogramMethod("ahp", AHP_PARAMS, _plan, _release,
                      summary="clusters bins by noisy counts, one noisy sum per cluster")
