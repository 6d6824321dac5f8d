"""Noise for counts: exact discrete Laplace (two-sided geometric).

INTERIM implementation: the public interface below is fixed; the sampler
internals are being replaced by the exact, CSPRNG-fed inverse-CDF sampler.
"""

from __future__ import annotations

import math
import os
from fractions import Fraction

import numpy as np

__all__ = ["noise_scale", "discrete_laplace", "discrete_laplace_variance", "RngLike"]

RngLike = "np.random.Generator | None"


def noise_scale(sensitivity: float | int | Fraction, epsilon: float | Fraction) -> Fraction:
    """Scale t = sensitivity / epsilon, rounded up to an exact rational."""
    s = Fraction(sensitivity) if not isinstance(sensitivity, float) else Fraction(repr(sensitivity))
    e = Fraction(epsilon) if not isinstance(epsilon, float) else Fraction(repr(epsilon))
    t = s / e
    if t.denominator > 2**32:
        t = Fraction(math.ceil(t * 2**32), 2**32)
    return t


def discrete_laplace_variance(scale: float | Fraction) -> float:
    """Variance 2p/(1-p)^2 of the discrete Laplace with P(z) ∝ exp(-|z|/t), p = exp(-1/t)."""
    p = math.exp(-1.0 / float(scale))
    return 2.0 * p / (1.0 - p) ** 2


def discrete_laplace(scale: float | Fraction, size: int | tuple[int, ...], *,
                     rng: np.random.Generator | None = None) -> np.ndarray:
    """Draw int64 discrete Laplace noise with P(z) ∝ exp(-|z|/scale)."""
    if rng is None:
        rng = np.random.Generator(np.random.PCG64(int.from_bytes(os.urandom(32), "little")))
    p = -math.expm1(-1.0 / float(scale))
    return (rng.geometric(p, size) - rng.geometric(p, size)).astype(np.int64)
