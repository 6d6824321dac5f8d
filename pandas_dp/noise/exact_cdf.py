"""Exact arithmetic behind the discrete Laplace sampler.

Certified integer bounds on ``exp(-x)`` for rational ``x`` and the exact CDFs
(two-sided geometric, geometric, truncated geometric) whose thresholds
``floor(2**bits * F(j))`` the sampler in :mod:`pandas_dp.noise.laplace` compares
random words against. See that module's docstring for the construction.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Callable

import numpy as np

#: ``X(k) -> (lo, hi)``: integer bounds on ``2**P exp(-a k)`` at some precision ``P``.
_PowerBounds = Callable[[int], "tuple[int, int]"]


# ------------------------------------------------------- certified exp ----
def exp_neg_bounds(x: Fraction, prec: int) -> tuple[int, int]:
    """Integers ``lo <= 2**prec * exp(-x) <= hi`` for rational ``x >= 0``.

    Notes
    -----
    ``exp(-x) = exp(-x / 2**s) ** (2**s)`` with ``y = x / 2**s <= 1/2``. The
    Taylor series of ``exp(-y)`` alternates with decreasing terms, so the
    error of a partial sum is at most the first omitted term. All products are
    rounded down in the lower and up in the upper bound (``P`` working bits),
    the series is stopped once a term is at most one unit, and the ``s``
    squarings round in the same directions, so the result is rigorous.
    ``hi - lo`` is a few units for the ``s + 16`` guard bits used.
    """
    if x == 0:
        return 1 << prec, 1 << prec
    a, b = x.numerator, x.denominator
    s = max(0, (a // b).bit_length() + 1)  # x < 2**(s-1) so y < 1/2
    b <<= s
    work = prec + s + 16
    one = 1 << work
    lo = hi = one  # running sums
    t_lo = t_hi = one  # |term k| bounds
    k = 0
    while True:
        k += 1
        den = b * k
        t_lo = (t_lo * a) // den
        t_hi = -((-t_hi * a) // den)
        if t_hi <= 1:
            lo -= 1  # omitted remainder is at most t_hi <= 1 unit
            hi += 1
            break
        if k % 2:  # negative term
            lo -= t_hi
            hi -= t_lo
        else:
            lo += t_lo
            hi += t_hi
    lo = max(lo, 0)
    for _ in range(s):
        lo = (lo * lo) >> work
        hi = -((-hi * hi) >> work)
    shift = work - prec
    return lo >> shift, -((-hi) >> shift)


def exp_bounds(x: Fraction, prec: int) -> tuple[int, int]:
    """Integers ``lo <= 2**prec * exp(x) <= hi`` for rational ``x`` of either sign.

    Notes
    -----
    For ``x <= 0`` this is :func:`exp_neg_bounds`. For ``x > 0``,
    ``exp(x) = 1 / exp(-x)``: from ``l <= 2**W exp(-x) <= h`` follows
    ``2**(prec+W) / h <= 2**prec exp(x) <= 2**(prec+W) / l``, rounded down and
    up. ``W`` leaves ``prec + 16`` significant bits in ``l``, so ``hi - lo``
    stays a few units.
    """
    if x <= 0:
        return exp_neg_bounds(-x, prec)
    work = prec + 2 * (int(x * 3 // 2) + 2) + 16  # 2**work exp(-x) >= 2**(prec + 16)
    lo_neg, hi_neg = exp_neg_bounds(x, work)
    one = 1 << (prec + work)
    return one // hi_neg, -((-one) // lo_neg)


def floor_exp_neg(x: Fraction, bits: int) -> int:
    """Certified ``floor(2**bits * exp(-x))`` for rational ``x > 0``.

    The bracket of :func:`exp_neg_bounds` is refined (guard bits doubled)
    until both ends have the same floor. ``exp(-x)`` is irrational for
    rational ``x != 0`` (Lindemann), so ``2**bits exp(-x)`` is never an
    integer and the loop ends.
    """
    if x <= 0:
        raise ValueError("floor_exp_neg needs x > 0 (exp(-x) must be irrational)")
    guard = 32
    while True:
        lo, hi = exp_neg_bounds(x, bits + guard)
        if lo >> guard == hi >> guard:
            return lo >> guard
        guard *= 2


# ---------------------------------------------------------------- CDFs ----
class CDF:
    """Exact CDF values ``F_j`` of an increasing threshold sequence, ``j = 0..n-1``.

    Subclasses express ``F_j`` through ``X_k = exp(-a k)`` and implement
    ``_floor(j, bits, X, P)``: the certified ``floor(2**bits F_j)`` given a
    function ``X(k) -> (lo, hi)`` bounding ``2**P X_k``, or ``None``.
    """

    a: Fraction
    n: int

    def floor_scaled(self, j: int, bits: int) -> int:
        """Certified ``floor(2**bits * F_j)`` (precision doubled until certified)."""
        guard = 64
        while True:
            work = bits + guard
            value = self._floor(j, bits, lambda k: exp_neg_bounds(self.a * k, work), work)
            if value is not None:
                return value
            guard *= 2

    def table(self) -> np.ndarray:
        """``uint64`` thresholds ``floor(2**64 F_j)``, ``j = 0..n-1``."""
        work = 64 + 64 + self.n.bit_length()
        lo1, hi1 = exp_neg_bounds(self.a, work)
        powers = [(1 << work, 1 << work), (lo1, hi1)]
        for _ in range(2, self._max_power() + 1):  # interval powers X_k = X_1 ** k
            plo, phi = powers[-1]
            powers.append(((plo * lo1) >> work, -((-phi * hi1) >> work)))
        out = np.empty(self.n, dtype=np.uint64)
        for j in range(self.n):
            value = self._floor(j, 64, powers.__getitem__, work)
            out[j] = self.floor_scaled(j, 64) if value is None else value
        return out

    def _max_power(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def _floor(self, j: int, bits: int, X: _PowerBounds, P: int) -> int | None:  # pragma: no cover
        raise NotImplementedError


def _agree(lo: int, hi: int) -> int | None:
    return lo if lo == hi else None


class LaplaceCDF(CDF):
    """Discrete Laplace CDF at ``z = -L-1 .. L`` (``j = z + L + 1``), ``p = exp(-1/t)``.

    ``F(z) = p**(-z) / (1 + p)`` for ``z <= -1`` and ``1 - p**(z+1) / (1 + p)``
    for ``z >= 0``.
    """

    def __init__(self, t: Fraction, half_width: int) -> None:
        self.a = 1 / t
        self.half_width = half_width
        self.n = 2 * half_width + 2

    def _max_power(self) -> int:
        return self.half_width + 1

    def _floor(self, j: int, bits: int, X: _PowerBounds, P: int) -> int | None:
        z = j - self.half_width - 1
        k = -z if z < 0 else z + 1
        xlo, xhi = X(k)
        plo, phi = X(1)
        one = 1 << P
        r = _agree((xlo << bits) // (one + phi), (xhi << bits) // (one + plo))
        if r is None:
            return None
        # 2**bits * r is irrational, so floor(2**bits (1 - r)) = 2**bits - floor - 1.
        return r if z < 0 else (1 << bits) - r - 1


class GeometricCDF(CDF):
    """``F(g) = 1 - q**(g+1)`` for ``g = 0..n-1``, ``q = exp(-a)``."""

    def __init__(self, a: Fraction, n: int) -> None:
        self.a, self.n = a, n

    def _max_power(self) -> int:
        return self.n

    def _floor(self, j: int, bits: int, X: _PowerBounds, P: int) -> int | None:
        xlo, xhi = X(j + 1)
        r = _agree((xlo << bits) >> P, (xhi << bits) >> P)
        return None if r is None else (1 << bits) - r - 1


class TruncatedGeometricCDF(CDF):
    """``F(r) = (1 - q**(r+1)) / (1 - q**B)`` for ``r = 0..B-2``, ``q = exp(-a)``."""

    def __init__(self, a: Fraction, base: int) -> None:
        self.a, self.base, self.n = a, base, base - 1

    def _max_power(self) -> int:
        return self.base

    def _floor(self, j: int, bits: int, X: _PowerBounds, P: int) -> int | None:
        one = 1 << P
        xlo, xhi = X(j + 1)
        blo, bhi = X(self.base)
        if one - bhi <= 0:
            return None
        return _agree(((one - xhi) << bits) // (one - blo), ((one - xlo) << bits) // (one - bhi))
