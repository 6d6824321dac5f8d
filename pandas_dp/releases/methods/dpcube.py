"""``method="dpcube"``: DPCube's kd-tree partitions of the noisy cell grid (``docs/methods/dpcube.md``).

The plan (:func:`~pandas_dp.algorithms.dpcube.plan_dpcube`) is made from the
loss and the knobs before any charge; the release runs
:func:`~pandas_dp.algorithms.dpcube.dpcube` on the exact counts and wraps a
:class:`~pandas_dp.results.data_dependent.DPCubeHistogram`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pandas_dp.algorithms import dpcube as _dpcube
from pandas_dp.domain.grid import Grid
from pandas_dp.privacy.loss import PrivacyLoss
from pandas_dp.results.data_dependent import DPCubeHistogram
from pandas_dp.results.histogram import as_series
from pandas_dp.releases.methods.base import SHARE, HistogramMethod, Planned, clip_at_zero
from pandas_dp.releases.params import Options, Param, ParamTable, Real

__all__ = ["DPCUBE", "DPCUBE_PARAMS"]

DPCUBE_PARAMS = ParamTable("method='dpcube'", (
    Param("epsilon_split", SHARE, _dpcube.DEFAULT_EPSILON_SPLIT, "share of the loss spent on the cell histogram"),
    Param("threshold", Real(0.0, allow_inf=True), None, "kd-tree variance threshold xi_0 (default: from the noise)",
          optional=True),
    Param("estimate", Options(("least_squares", "uniform")), "least_squares", "cell estimator"),
))


def _plan(grid: Grid, loss: PrivacyLoss, knobs: dict[str, Any]) -> Planned:
    threshold = None if knobs["threshold"] is None else float(knobs["threshold"])
    knobs = dict(knobs, threshold=threshold)
    plan = _dpcube.plan_dpcube(loss=loss, epsilon_split=knobs["epsilon_split"], threshold=threshold,
                               estimate=knobs["estimate"])
    return Planned("dpcube", plan, knobs)


def _release(counts: np.ndarray, grid: Grid, planned: Planned, *, rng: Any, nonnegative: bool,
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


DPCUBE = HistogramMethod("dpcube", DPCUBE_PARAMS, _plan, _release,
                         summary="kd-tree partitions of the noisy cell grid")
