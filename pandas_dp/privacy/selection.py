"""Thresholds of private partition selection (key discovery) and the truncated noise they pair with.

``histogram(column, categories="discover")`` (:mod:`pandas_dp.releases.discover`, whose docstring
gives the privacy argument) releases a label when its noisy count reaches a threshold ``T``. This
module holds the exact arithmetic of ``T`` and the noise drawn for it, from public inputs only:

* :func:`unit_shape`: labels a unit touches ``c``, rows per label ``r``, and the counts' sensitivity;
* :func:`discovery_threshold`: ``T = r + 1 + q`` for Laplace or Gaussian noise (``q`` an exact quantile);
* :func:`truncated_threshold` and :func:`truncated_mixture`: the truncation ``k`` of a discrete
  Laplace, ``T = k + 1``, and the share ``mu`` of labels given ``(k - 1, T - 1)`` (one label per unit);
* :class:`TruncatedMixture`: that noise, drawn exactly (:mod:`pandas_dp.noise.truncated_laplace`);
* :func:`selection_plan`: which of the two a release uses.

It lives in ``privacy/`` rather than ``algorithms/`` because the truncation is decided with the
certified bounds of :func:`pandas_dp.noise.exact_cdf.exp_neg_bounds` (``algorithms/`` may not import
``noise/``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

import numpy as np

from pandas_dp.noise.exact_cdf import exp_neg_bounds
from pandas_dp.noise.truncated_laplace import truncated_discrete_laplace, truncated_discrete_laplace_variance
from pandas_dp.noise.words import word_source
from pandas_dp.privacy.loss import UNIT, DiscreteLaplace, Noise, Sensitivity
from pandas_dp.privacy.units import UnitBounds

__all__ = ["unit_shape", "discovery_threshold", "truncated_threshold", "truncated_mixture", "TruncatedMixture",
           "selection_plan"]


def unit_shape(bounds: UnitBounds | None) -> tuple[int, int, Sensitivity]:
    """``(c, r, sensitivity)``: labels a unit touches, rows per label, and the counts' sensitivity."""
    if bounds is None:
        return 1, 1, UNIT
    if bounds.scheme == "cells":
        c, r = int(bounds.max_cells), int(bounds.max_rows_per_cell)  # type: ignore[arg-type]
    else:
        c = r = bounds.row_bound
    return c, r, bounds.histogram_sensitivity()


def discovery_threshold(noise: Noise, delta: Fraction, cells: int = 1, per_cell: int = 1) -> int:
    """Smallest integer ``T`` with ``cells * P(Z >= T - per_cell) <= delta`` for the noise ``Z``.

    ``T = per_cell + 1 + q`` with ``q`` the exact ``1 - delta / cells`` quantile of the noise
    (never below the true quantile), so the tail at ``T - per_cell`` includes the mass at ``T``.

    Examples
    --------
    >>> from fractions import Fraction
    >>> from pandas_dp.privacy.loss import DiscreteLaplace
    >>> discovery_threshold(DiscreteLaplace(Fraction(1)), Fraction(1, 10**6))
    15
    """
    q = noise.quantile(1 - Fraction(delta) / int(cells))
    return int(per_cell) + 1 + int(q)


def _truncated_delta_holds(t: Fraction, delta: Fraction, bound: int, per_cell: int) -> bool:
    """Exact ``P(Z > bound - r) <= delta`` for ``Z`` discrete Laplace of scale ``t`` truncated at ``+-bound``.

    With ``p = exp(-1/t)`` and ``bound >= r``, ``P(Z > k - r) = p**(k-r+1) (1 - p**r) / (1 + p - 2 p**(k+1))``,
    so the test is ``p**(k-r+1) (1 - p**r) <= delta (1 + p - 2 p**(k+1))``, decided with certified brackets
    of the powers refined until they separate the sides (equality would make ``p`` algebraic: Lindemann).
    """
    k, r = int(bound), int(per_cell)
    n, d = delta.numerator, delta.denominator
    prec = 64 + d.bit_length() + n.bit_length()
    while True:
        one = 1 << prec
        a_lo, a_hi = exp_neg_bounds(Fraction(k - r + 1) / t, prec)
        b_lo, b_hi = exp_neg_bounds(Fraction(r) / t, prec)
        c_lo, c_hi = exp_neg_bounds(1 / t, prec)
        e_lo, e_hi = exp_neg_bounds(Fraction(k + 1) / t, prec)
        if d * a_hi * (one - b_lo) <= n * one * (one + c_lo - 2 * e_hi):
            return True
        if d * a_lo * (one - b_hi) > n * one * (one + c_hi - 2 * e_lo):
            return False
        prec *= 2


def _truncated_tail_upper(t: Fraction, bound: int, per_cell: int, prec: int = 160) -> Fraction:
    """A certified upper bound on ``P(Z > k - r)`` for the truncation ``k`` (see :func:`_truncated_delta_holds`)."""
    k, r, one = int(bound), int(per_cell), 1 << prec
    a_hi = exp_neg_bounds(Fraction(k - r + 1) / t, prec)[1]
    b_lo = exp_neg_bounds(Fraction(r) / t, prec)[0]
    c_lo = exp_neg_bounds(1 / t, prec)[0]
    e_hi = exp_neg_bounds(Fraction(k + 1) / t, prec)[1]
    return Fraction(a_hi * (one - b_lo), one * (one + c_lo - 2 * e_hi))


def truncated_mixture(scale: Fraction, delta: Fraction, per_cell: int = 1) -> tuple[int, int, Fraction]:
    """``(k, T, mu)``: :func:`truncated_threshold`'s ``(k, T)`` and the share ``mu`` of labels given ``(k - 1, T - 1)``.

    The truncation ``k`` spends ``delta_k = P(Z > k - r) <= delta`` and ``k - 1`` would spend
    ``delta_{k-1} > delta``. Each label independently takes ``(k - 1, T - 1)`` with probability ``mu``
    and ``(k, T)`` otherwise; the hockey-stick divergence of a mixture is at most the mixture of the
    divergences, so the release spends at most ``mu delta_{k-1} + (1 - mu) delta_k``, which
    ``mu = (delta - delta_k) / (delta_{k-1} - delta_k)`` makes ``delta``: the mixed release
    probability is then Desfontaines et al.'s optimal ``pi(n)`` at ``delta`` itself, not at the
    smaller ``delta_k`` the integer ``k`` allows. ``mu`` is a multiple of ``2**-53``, rounded down
    from a certified lower bound (both tails bounded above), so the spend never exceeds ``delta``.

    Examples
    --------
    >>> k, t, mu = truncated_mixture(Fraction(1), Fraction(1, 10**6))  # epsilon = 1
    >>> (k, t), round(float(mu), 4)
    ((14, 15), 0.9325)
    """
    t, d, r = Fraction(scale), Fraction(delta), int(per_cell)
    k, threshold = truncated_threshold(t, d, r)
    if k - 1 < r:
        return k, threshold, Fraction(0)
    tail_k, tail_below = _truncated_tail_upper(t, k, r), _truncated_tail_upper(t, k - 1, r)
    if tail_below <= d or tail_k >= d:  # brackets too wide to gain anything: no mixture
        return k, threshold, Fraction(0)
    mu = (d - tail_k) / (tail_below - tail_k)
    return k, threshold, Fraction(math.floor(mu * _MIX_ONE), _MIX_ONE)


_MIX_ONE = 1 << 53  # mu is a multiple of 2**-53: a label takes the lower pair when its word's top 53 bits are below


def truncated_threshold(scale: Fraction, delta: Fraction, per_cell: int = 1) -> tuple[int, int]:
    """``(k, T)``: the smallest truncation ``k >= r`` with ``P(Z > k - r) <= delta``, and ``T = k + 1``.

    ``Z`` is the discrete Laplace of scale ``t`` truncated at ``+-k``; a unit puts at most ``r`` rows on
    its one label. Thresholding ``n + Z`` at ``T = k + 1`` and releasing it is then ``(r / t,
    delta)``-DP (see the module docstring): ``delta`` is at once the chance that a new label of ``r``
    rows passes and the truncated mass that a shift by ``r`` exposes at the edge. The search starts
    from the closed form of the tail (:func:`_truncation_guess`) and gallops with exact tests
    (:func:`_smallest_holding`): a few dozen tests at any epsilon.

    Examples
    --------
    >>> truncated_threshold(Fraction(10), Fraction(1, 10**6))  # epsilon = 0.1: T = 133 untruncated
    (109, 110)
    """
    t, d, r = Fraction(scale), Fraction(delta), int(per_cell)
    k = _smallest_holding(lambda bound: _truncated_delta_holds(t, d, bound, r), r, _truncation_guess(t, d, r))
    return k, k + 1


def _truncation_guess(t: Fraction, delta: Fraction, per_cell: int) -> int:
    """The truncation ``k`` in closed form (floats): a start for the exact search, never trusted alone.

    ``P(Z > k - r) <= delta`` reads ``p**(k+1) (p**-r - 1 + 2 delta) <= delta (1 + p)`` (multiply out the
    denominator of :func:`_truncated_delta_holds`), so ``k + 1 >= t ln((expm1(r/t) + 2 delta) / (delta (1 + p)))``:
    accurate to a few units at any scale (``expm1`` and ``log1p`` keep the digits when ``t`` is huge).
    """
    tf, df = float(t), float(delta)
    try:
        guess = tf * (math.log(math.expm1(per_cell / tf) + 2 * df) - math.log(df) - math.log1p(math.exp(-1 / tf))) - 1
    except (OverflowError, ValueError):  # a scale or delta out of float range: start at r and gallop
        return per_cell
    return max(per_cell, math.ceil(guess)) if math.isfinite(guess) and guess < 2.0**62 else per_cell


def _smallest_holding(holds: Callable[[int], bool], low: int, guess: int) -> int:
    """Smallest integer ``k >= low`` with ``holds(k)``, for ``holds`` false then true (monotone) on ``k >= low``.

    Gallops from ``guess`` (steps doubling away from it) to a bracket, then bisects: about
    ``2 log2(|guess - k| + 2)`` exact tests, whatever the scale (a step of one from a poor start cost
    ``|guess - k|`` tests: 400,000 at epsilon = 1e-6). The answer does not depend on ``guess``.
    """
    step, k = 1, max(int(low), int(guess))
    if holds(k):
        above, below = k, low - 1  # holds(above); every k <= below fails (or is under low)
        while above - step >= low:
            if not holds(above - step):
                below = above - step
                break
            above -= step
            step *= 2
    else:
        below, above = k, -1
        while above < 0:
            if holds(below + step):
                above = below + step
            else:
                below += step
                step *= 2
    while above - below > 1:
        middle = (above + below) // 2
        if holds(middle):
            above = middle
        else:
            below = middle
    return above


@dataclass(frozen=True)
class TruncatedMixture:
    """Discrete Laplace noise of scale ``scale`` truncated at ``+-bound``, or at ``+-(bound - 1)`` with
    probability ``mix`` per label (:func:`truncated_mixture`); the threshold follows the truncation."""

    scale: Fraction
    bound: int
    mix: Fraction

    def add(self, counts: np.ndarray, rng: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(noisy, lower)``: every count plus its noise, and which labels took ``(k - 1, T - 1)``.

        One word per label decides the pair (its top 53 bits below ``mix * 2**53``), then the labels
        of each pair get their noise in label order: the draws of a release depend on the counts'
        number and order only. A label passes when ``noisy >= T - lower``.
        """
        lower = (word_source(rng)(counts.size) >> np.uint64(11)) < np.uint64(int(self.mix * _MIX_ONE))
        noisy = counts.copy()
        upper = ~lower
        noisy[upper] += truncated_discrete_laplace(self.scale, self.bound, int(upper.sum()), rng=rng)
        if lower.any():
            noisy[lower] += truncated_discrete_laplace(self.scale, self.bound - 1, int(lower.sum()), rng=rng)
        return noisy, lower

    def variance(self) -> float:
        """Exact variance of one label's noise (the mixture of the two truncations)."""
        return float((1 - self.mix) * Fraction(truncated_discrete_laplace_variance(self.scale, self.bound))
                     + self.mix * Fraction(truncated_discrete_laplace_variance(self.scale, self.bound - 1)))

    def describe(self) -> dict[str, Any]:
        """``{"noise": "truncated discrete Laplace", "noise_scale": ..., "noise_bound": k}``."""
        described = DiscreteLaplace(self.scale).describe()
        described.update(noise="truncated discrete Laplace", noise_bound=self.bound)
        return described


def selection_plan(noise: Noise, delta: Fraction, cells: int, per_cell: int) -> tuple[int, TruncatedMixture | None]:
    """``(T, truncated)``: the threshold, and the truncated noise when a unit touches one label under ``epsilon=``.

    One label per unit (``cells == 1``) with discrete Laplace noise: :func:`truncated_mixture`
    (the optimal selection); otherwise :func:`discovery_threshold` with ``noise`` itself (None).
    """
    if cells == 1 and isinstance(noise, DiscreteLaplace):
        bound, threshold, mix = truncated_mixture(noise.scale, delta, per_cell)
        return threshold, TruncatedMixture(noise.scale, bound, mix)
    return discovery_threshold(noise, delta, cells, per_cell), None
