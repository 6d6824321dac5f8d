"""``histogram(report_dropped=...)``: a charged estimate of the share of rows ``max_rows`` dropped.

The share of the loss is checked before any charge (:func:`check_report_dropped`);
inside the one charge the release noises ``[rows kept, rows dropped]``
(:func:`estimate_dropped`, sensitivity :func:`dropped_sensitivity`) and the
histogram runs at the rest of the loss.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from pandas_dp._utils.rational import safe_repr, to_fraction
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import PrivacyLoss, Sensitivity
from pandas_dp.privacy.units import AUTO_MAX_ROWS, UnitBounds

__all__ = ["DROPPED_LEVEL", "check_report_dropped", "dropped_sensitivity", "estimate_dropped"]

#: Confidence level of the interval of ``report_dropped``'s share.
DROPPED_LEVEL = 0.95


def check_report_dropped(value: Any, bounds: UnitBounds | None, loss: PrivacyLoss) -> Fraction | None:
    """The checked share of the loss ``report_dropped=`` spends (public; before any charge), or None.

    It needs a privacy unit bounded by ``max_rows`` (a number or ``"auto"``), a share in ``(0, 1/2]``,
    and a loss whose share buys the noise of the largest bound it may meet (``AUTO_MAX_ROWS`` for auto).
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)) and \
            not (hasattr(value, "dtype") and getattr(value, "ndim", 1) == 0):
        raise ParameterError(f"The 'report_dropped' parameter must be a share of the loss in (0, 0.5], e.g. "
                             f"report_dropped=0.05 (5% of epsilon estimates the rows max_rows dropped). "
                             f"Got {safe_repr(value)}.")
    share = to_fraction(value, name="report_dropped")
    if not 0 < share <= Fraction(1, 2):
        raise ParameterError(f"The 'report_dropped' parameter must be a share of the loss in (0, 0.5], e.g. "
                             f"report_dropped=0.05. Got {safe_repr(value)}.")
    if bounds is None or bounds.scheme != "rows":
        raise ParameterError("report_dropped= estimates the rows a privacy unit's max_rows bound dropped: pass "
                             "privacy_unit= with max_rows= (a number or 'auto'), or drop report_dropped=.")
    k = AUTO_MAX_ROWS if bounds.auto else bounds.row_bound
    loss.part(share).noise(dropped_sensitivity(k), what="report_dropped's share")   # too small: refused now
    return share


def dropped_sensitivity(k: int) -> Sensitivity:
    """Sensitivity of ``[rows kept, rows dropped (capped at k per unit)]``: one unit moves it by ``(a, b)``,
    ``a, b <= k``: ``L1 = 2k``, ``L2**2 = 2k**2``."""
    return Sensitivity(Fraction(2 * k), Fraction(2 * k * k))


def estimate_dropped(kept_dropped: np.ndarray, k: int, part: PrivacyLoss, rng: Any) -> dict[str, Any]:
    """Noise ``[kept, dropped]`` with ``part`` and turn it into the share of rows dropped, with an interval.

    The share is ``D / (K + D)`` (``D`` capped at ``k`` rows per unit: a lower bound when units have more
    than ``2k`` rows). Each noisy count is within ``r`` of its value with probability ``1 - (1 - c)/2``
    (``r`` the noise's exact quantile at that level), so by the union bound
    ``[(D - r)+ / ((D - r)+ + K + r), (D + r) / (D + r + (K - r)+)]`` covers the share with probability
    at least ``c`` (:data:`DROPPED_LEVEL`). Post-processing of the noisy pair only.
    """
    noise = part.noise(dropped_sensitivity(k), what="report_dropped's share")
    kept, drop = (float(v) for v in noise.add(np.asarray(kept_dropped, dtype=np.int64), rng))
    r = float(noise.sum_radius(1, 1 - (1 - DROPPED_LEVEL) / 2))
    def share(d: float, kk: float) -> float:
        d, kk = max(d, 0.0), max(kk, 0.0)
        return min(d / (d + kk), 1.0) if d + kk > 0 else 0.0
    estimate = share(drop, kept)
    low = share(drop - r, kept + r)
    high = 1.0 if kept - r <= 0 else share(drop + r, kept - r)
    return {"dropped_share": estimate, "dropped_interval": [min(low, estimate), max(high, estimate)],
            "dropped_interval_level": DROPPED_LEVEL, "dropped_noisy": [kept, drop], "dropped_cap": int(k)}
