"""What several release kinds check or compute alike (histograms, tables by geography, table sets).

``max_rows="auto"`` (:func:`choose_max_rows`: flat histograms and histograms
by geography).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pandas_dp.privacy.loss import Noise
from pandas_dp.privacy.units import AUTO_QUANTILE, AUTO_STEPS

__all__ = ["choose_max_rows"]


def choose_max_rows(contributions: np.ndarray, noise: Noise, rng: Any) -> int:
    """``max_rows="auto"``: the :data:`~pandas_dp.privacy.units.AUTO_QUANTILE` quantile of the units' noisy rows.

    ``contributions[i]`` is the number of units whose rows in the domain fall in step ``i`` of
    :data:`~pandas_dp.privacy.units.AUTO_STEPS`; one unit moves one cell by one, so ``noise`` (calibrated
    to sensitivity 1) makes the histogram DP. The bound is post-processing of the noisy
    histogram: its cumulative sums made non-decreasing (running maximum), then the smallest step
    whose cumulative count reaches the quantile of the total (the first step when the noisy
    total is not positive).
    """
    noisy = noise.add(np.asarray(contributions, dtype=np.int64), rng).astype(np.float64)
    cum = np.maximum.accumulate(np.cumsum(noisy))
    if cum[-1] <= 0:
        return AUTO_STEPS[0]
    return AUTO_STEPS[int(np.searchsorted(cum, AUTO_QUANTILE * cum[-1], side="left"))]
