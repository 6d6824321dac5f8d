"""``method="identity"``: one noise draw per cell (the flat histogram; ``docs/methods/identity.md``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pandas_dp.domain.grid import Grid
from pandas_dp.privacy.loss import UNIT, Noise, PrivacyLoss
from pandas_dp.privacy.units import UnitBounds
from pandas_dp.results.histogram import Histogram, as_series, constant_cells
from pandas_dp.releases.methods.base import BOTH_MEASURES, HistogramMethod, Planned, own_int64
from pandas_dp.releases.params import ParamTable

__all__ = ["IDENTITY"]


def _plan(grid: Grid, loss: PrivacyLoss, knobs: dict[str, Any], unit: UnitBounds | None = None) -> Planned:
    sensitivity = UNIT if unit is None else unit.histogram_sensitivity()
    return Planned("identity", loss.noise(sensitivity, what="the identity histogram"), knobs)


def _release(counts: np.ndarray, grid: Grid, planned: Planned, *, rng: Any, nonnegative: bool,
             loss: PrivacyLoss) -> Histogram:
    """The identity (flat) mechanism: one noise draw per cell.

    Notes
    -----
    Adding or removing a row changes one cell by 1 (L1 and L2 sensitivity 1), so
    noise with ``P(z) ∝ exp(-|z| / t)``, ``t = 1/epsilon``, gives epsilon-DP (per-cell
    variance ``2p / (1 - p)^2``, ``p = exp(-1/t)``), and discrete Gaussian noise
    with ``sigma^2 = 1 / (2 rho)`` gives rho-zCDP.
    ``nonnegative=True`` clips at 0 (post-processing), which biases small
    counts upwards; the reported variance is then that of the noise only.
    """
    noise: Noise = planned.plan
    noisy = noise.add_in_place(own_int64(counts), rng)
    post: tuple[str, ...] = ()
    if nonnegative:
        np.maximum(noisy, 0, out=noisy)
        post = ("clip at 0",)
    described = noise.describe()
    return Histogram(
        counts=as_series(noisy, grid, "estimate", owned=True),
        variance=as_series(constant_cells(noise.variance(), grid), grid, "variance"),
        epsilon=loss.pure_epsilon,
        method="identity",
        params={"noise": described.pop("noise"), "sensitivity": 1, **described, "nonnegative": nonnegative},
        domain=grid,
        post_processing=post,
        variance_exact=not nonnegative,
        loss=loss, noise=noise, single_draw=not nonnegative,
    )


IDENTITY = HistogramMethod("identity", ParamTable("method='identity'"), _plan, _release,
                           measures=BOTH_MEASURES, summary="one noise draw per cell", unit_aware=True)
