"""Exact discrete Laplace noise truncated to ``[-bound, bound]``, in bounded expected time at any scale.

``P(z) = p**|z| / N`` for ``|z| <= bound`` (0 outside), ``p = exp(-1/t)``,
``N = (1 + p - 2 p**(bound + 1)) / (1 - p)``: the discrete Laplace of
:func:`~pandas_dp.noise.laplace.discrete_laplace` conditioned on ``|Z| <= bound``.

*Rejection* (when it keeps at least half the draws, ``2 p**(bound + 1) / (1 + p) <= 1/2``,
decided exactly): exact discrete Laplace draws, the ones with ``|Z| > bound`` drawn again
(in order, from the same source) until none is left. Every accepted draw is exact and
accepting it when ``|Z| <= bound`` gives the conditional law exactly. In key discovery the
rejected mass is the tiny ``delta``-sized tail at ordinary scales, so almost every call draws once.

*Folded* (otherwise: scales far above the bound, where rejection would keep a share
``~ bound / t`` of the draws, 5e-7 at ``t = 10**12``): ``|Z|`` is the geometric of ratio ``p``
truncated to ``0..bound``, a sign is drawn, and the pair (negative, 0) is drawn again (chance
at most 1/2), which leaves ``P(z) ~ p**|z|``. The truncated geometric on ``0..n-1`` is drawn by
its base-256 digits: on the box ``0..256**(L-1) m - 1`` (``m <= 256`` top digits, the smallest
box holding ``n``) ``P(g) ~ p**g`` is a product over the digits, so they are independent
truncated geometrics drawn exactly by table (:class:`~pandas_dp.noise.laplace`'s tables of
certified thresholds), and draws ``>= n`` are drawn again: a decreasing law keeps more than
half its box's mass below ``n``. Each draw costs ``L + 1`` words, about twice in expectation.

A seeded generator gives the same draws on every machine.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from functools import lru_cache

from pandas_dp.errors import ParameterError
from pandas_dp.noise.exact_cdf import TruncatedGeometricCDF
from pandas_dp.noise.laplace import _Table, _as_scale, _power_exceeds, discrete_laplace, discrete_laplace_variance
from pandas_dp.noise.words import word_source

__all__ = ["truncated_discrete_laplace", "truncated_discrete_laplace_variance"]

_EXACT_SUM_LIMIT = 1 << 21


def truncated_discrete_laplace(scale: Fraction, bound: int, size: int, *, rng: Any = None) -> np.ndarray:
    """``size`` exact draws of the discrete Laplace of scale ``t`` conditioned on ``|Z| <= bound``.

    Parameters
    ----------
    scale : Fraction
        ``t > 0`` (as for :func:`~pandas_dp.noise.laplace.discrete_laplace`).
    bound : int
        The truncation ``k >= 0``.
    size : int
        How many draws.
    rng : None, SecureRandom or numpy.random.Generator, optional
        As for :func:`~pandas_dp.noise.laplace.discrete_laplace` (``None``: the secure source).

    Examples
    --------
    >>> z = truncated_discrete_laplace(Fraction(5), 2, 1000, rng=np.random.default_rng(0))
    >>> int(z.min()), int(z.max())
    (-2, 2)
    """
    k = int(bound)
    if k < 0:
        raise ParameterError(f"bound must be a non-negative integer; got {bound!r}.")
    t = _as_scale(scale)
    if _power_exceeds(t, k + 1, Fraction(1, 4)):  # rejection would drop more than half the draws
        return _folded(t, k, int(size), word_source(rng))
    out = discrete_laplace(scale, int(size), rng=rng)
    bad = np.flatnonzero(np.abs(out) > k)
    while bad.size:  # exact rejection: redraw the rejected positions, in order, from the same source
        out[bad] = discrete_laplace(scale, int(bad.size), rng=rng)
        bad = bad[np.abs(out[bad]) > k]
    return out


_BASE = 256  # digits of the truncated geometric


class _TruncatedGeometric:
    """Exact ``P(G = g) ~ q**g`` on ``g = 0..n-1``, ``q = exp(-a)``: independent base-256 digits, box rejection."""

    def __init__(self, a: Fraction, n: int) -> None:
        self.n, digits, size = n, [], 1
        while size * _BASE < n:  # full digits below the top one
            digits.append(_Table(TruncatedGeometricCDF(a * size, _BASE)))
            size *= _BASE
        top = -(-n // size)  # 1..256 values of the top digit; the box size * top holds n
        self.tables = digits + ([_Table(TruncatedGeometricCDF(a * size, top))] if top > 1 else [])
        self.weights = [_BASE**j for j in range(len(self.tables))]

    def sample(self, size: int, draw: Any) -> np.ndarray:
        """``size`` exact draws; each round keeps more than half the draws still to make."""
        out = np.zeros(size, dtype=np.int64)
        todo = np.arange(size)
        while todo.size and self.tables:
            g = np.zeros(todo.size, dtype=np.int64)
            for table, weight in zip(self.tables, self.weights):
                digit, _ = table.lookup(draw(todo.size), draw)
                g += digit * weight
            keep = g < self.n
            out[todo[keep]] = g[keep]
            todo = todo[~keep]
        return out


@lru_cache(maxsize=32)
def _truncated_geometric(a: Fraction, n: int) -> _TruncatedGeometric:
    return _TruncatedGeometric(a, n)


def _folded(t: Fraction, bound: int, size: int, draw: Any) -> np.ndarray:
    """``size`` exact draws of the truncated law: ``|Z|`` truncated geometric, a sign word, (-, 0) drawn again."""
    out = np.zeros(size, dtype=np.int64)
    todo = np.arange(size)
    magnitude = _truncated_geometric(1 / t, bound + 1)
    while todo.size:
        m = magnitude.sample(todo.size, draw)
        negative = draw(todo.size) >= np.uint64(1 << 63)
        keep = ~(negative & (m == 0))
        out[todo[keep]] = np.where(negative[keep], -m[keep], m[keep])
        todo = todo[~keep]
    return out


def truncated_discrete_laplace_variance(scale: Fraction, bound: int) -> float:
    """``E[Z**2] = 2 sum_{z=1..k} z**2 p**z / N`` of the truncated law (at most the untruncated ``2p/(1-p)**2``).

    Past ``2**21`` (scales of hundreds of thousands) the untruncated variance is returned: an upper bound.

    Examples
    --------
    >>> round(truncated_discrete_laplace_variance(Fraction(1), 1), 6)  # 2p / (1 + 2p), p = e**-1
    0.423883
    """
    k = int(bound)
    if k > _EXACT_SUM_LIMIT:  # the sum would need a very long array: the untruncated variance bounds it
        return discrete_laplace_variance(scale)
    logp = -1.0 / float(scale)
    z = np.arange(1, k + 1, dtype=np.float64)
    w = np.exp(logp * z)
    return float(2.0 * (z * z * w).sum() / (1.0 + 2.0 * w.sum()))
