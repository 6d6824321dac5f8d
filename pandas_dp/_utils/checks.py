"""Checks and limits of public values that several parts share, each written once.

* :func:`integer_in`: is a value an integer (not a bool, not a duration) in a range?
* :func:`check_flag`: a strict ``True``/``False`` argument.
* :func:`normal_quantile`: the two-sided normal quantile of a confidence level, validated.
* :data:`MAX_NOISE_SCALE`, :data:`MAX_GAUSSIAN_SIGMA2`: the largest noise the samplers draw (int64
  noise must not overflow), read by the samplers and by the privacy loss that calibrates them.

Every caller keeps its own message (the argument, the call and the fix it names).
"""

from __future__ import annotations

import numbers
from fractions import Fraction
from statistics import NormalDist
from typing import Any

import numpy as np

from pandas_dp._utils.rational import safe_repr
from pandas_dp.errors import ParameterError

__all__ = ["integer_in", "check_flag", "normal_quantile", "MAX_NOISE_SCALE", "MAX_GAUSSIAN_SIGMA2"]

#: Largest discrete Laplace scale the sampler accepts (int64 noise must not overflow).
MAX_NOISE_SCALE = Fraction(1 << 50)
#: Largest discrete Gaussian variance (sigma at most 2**50, as for the Laplace scale).
MAX_GAUSSIAN_SIGMA2 = Fraction(1 << 100)


def integer_in(value: Any, low: int, high: int | None = None) -> int | None:
    """``int(value)`` when ``value`` is an integer in ``[low, high]``, else ``None`` (the caller raises).

    Bools are not integers here, and neither is ``np.timedelta64`` (it registers as an Integral,
    subclassing ``np.signedinteger``, but is a duration).
    """
    if isinstance(value, (bool, np.bool_, np.timedelta64)) or not isinstance(value, numbers.Integral):
        return None
    number = int(value)
    if number < low or (high is not None and number > high):
        return None
    return number


def check_flag(value: Any, name: str, purpose: str = "") -> bool:
    """A strict boolean keyword argument (numpy booleans accepted); ``purpose`` names the call."""
    if not isinstance(value, (bool, np.bool_)):
        of = f" of {purpose}" if purpose else ""
        raise ParameterError(f"The '{name}' parameter{of} must be True or False. Got {safe_repr(value)}.")
    return bool(value)


def normal_quantile(confidence_level: float) -> float:
    """Two-sided normal quantile ``z`` of a confidence level, validated."""
    if isinstance(confidence_level, bool) or not isinstance(confidence_level, (int, float, np.floating)) \
            or not 0 < confidence_level < 1:
        raise ParameterError(f"The 'confidence_level' parameter must be a number in (0, 1). "
                             f"Got {safe_repr(confidence_level)}; pass e.g. confidence_level=0.95.")
    return NormalDist().inv_cdf(0.5 + float(confidence_level) / 2)
