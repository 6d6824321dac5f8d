"""The exponential mechanism's draw, exactly: an index ``j`` with probability ``exp(-gamma d_j) / Z``.

Public interface::

    j = exponential_index(gamma, scores, rng=rng)   # gamma: rational > 0; scores: int64 >= 0

Construction
------------
*Levels.* With ``p = exp(-gamma)`` the weight of candidate ``j`` is ``p**d_j``. The candidates are grouped
by score: the distinct scores ``k_0 < k_1 < ...`` (``np.unique``) with their multiplicities ``c_i``; level ``i``
weighs ``W_i = c_i p**e_i`` with ``e_i = k_i - k_0`` (the common factor ``p**k_0`` cancels). A level is drawn
with probability ``W_i / S`` (``S = sum W_i``), then one of its ``c_i`` candidates uniformly (an exact integer
uniform: 64-bit words masked to ``bit_length(c_i - 1)`` bits, rejected when ``>= c_i``). The candidates of a
level share one probability, so the two steps give each candidate exactly ``p**d_j / sum_l p**d_l``.

*Certified weights.* In fixed point with ``W`` fraction bits, ``[lo, hi]`` brackets of ``2**W p**e`` for every
level come from certified brackets of :func:`~pandas_dp.noise.exact_cdf.exp_neg_bounds` (``p``, ``p**64`` and
``p**E``, ``E`` the cut below) and products rounded down for the lower and up for the upper bound:
``p**e = p**(64 a) p**b`` (``b = e mod 64``) with a cached table of ``p**b`` (``b < 64``) and, for
``a < 4096``, a cached table of ``p**(64 a)`` by repeated products; beyond, ``p**(64 a)`` is a product of the
binary powers ``p**(64 * 2**i)`` (squarings), one vectorised pass per bit of ``a``. Every level's bracket is
one product of two entries (numpy object arrays of Python integers: exact, one C loop). Levels with
``e >= E``, ``E`` chosen so that ``p**E`` is below ``2**-W`` (a float only chooses ``E``; no probability rests
on it), get the bracket ``[0, hi(p**E)]``, true because ``p**e <= p**E``: huge scores cost nothing, never
underflow to a wrong zero, and their probability is exactly tiny, not zero. Every rounding is directed, so
``L_i <= 2**W S_i <= H_i`` for the cumulative weights ``S_i = W_0 + ... + W_i``; guard bits (32 plus twice
those of ``E``) absorb the units the products and squarings lose, so brackets stay a few units wide.

*The draw.* ``U`` uniform in ``[0, 1)`` is read from 64-bit words (its first ``B`` binary digits ``u``, more
words only when needed); the level is ``#{i : S_i <= U S}``. Level ``i`` is certainly below ``U`` when
``H_i 2**B <= u L_total`` (then ``S_i / S <= H_i / L_total <= u 2**-B <= U``) and certainly above when
``L_i 2**B >= (u + 1) H_total``; the last level is never below (``S_last = S > U S``). When both counts agree
the level is certain; otherwise (a bracket straddles the draw: chance about ``levels * 2**-64``) one more word
of ``U`` is read and the working precision is doubled, until they agree. ``U`` is continuous, so it equals a
ratio ``S_i / S`` with probability 0 and the refinement ends with probability 1. No float decides anything.

Cost: ``np.unique`` over the scores, then a few object-array products per level (``10**5`` levels take about
0.1 s, scores up to ``10**12`` at ``gamma = 10**-9`` about 0.25 s); Python loops run over the cached tables
(64 and 4,096 entries, once per ``gamma``), the bits of the largest exponent and refinements only.

References
----------
McSherry and Talwar (2007), "Mechanism design via differential privacy" (the exponential mechanism);
Canonne, Kamath and Steinke (2020), "The discrete Gaussian for differential privacy" (exact sampling from
a secure source, the standard this module keeps: no floating-point probability).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from pandas_dp._utils.rational import to_fraction
from pandas_dp.errors import ParameterError
from pandas_dp.noise.exact_cdf import exp_neg_bounds
from pandas_dp.noise.words import word_source

__all__ = ["exponential_index", "level_bounds"]

_BLOCK = 64          # p**e = p**(64 a) * p**b
_START_BITS = 64     # first precision of the weights, plus the bits of the candidate count
_TABLE_BLOCKS = 4096  # exponents below 64 * 4096 use one cached table of p**(64 a); others binary powers


def exponential_index(gamma: Any, scores: Any, *, rng: Any = None) -> int:
    """Draw ``j`` with probability ``exp(-gamma * scores[j]) / sum_l exp(-gamma * scores[l])``, exactly.

    Parameters
    ----------
    gamma : Fraction, int or float
        ``> 0``, read as an exact rational (a float through its shortest repr, as everywhere in the noise).
    scores : array_like of int
        Non-negative integer scores, one per candidate (at least one).
    rng : None, SecureRandom or numpy.random.Generator, optional
        As for :func:`pandas_dp.noise.laplace.discrete_laplace`: ``None`` is the secure default, a seeded
        Generator is reproducible (tests and experiments only).

    Returns
    -------
    int
        The index drawn.

    Raises
    ------
    ParameterError
        If ``gamma`` is not a positive finite number or the scores are not non-negative integers.

    Notes
    -----
    See the module docstring for the construction and why it is exact.

    Examples
    --------
    >>> exponential_index(1, [5, 0, 9], rng=np.random.default_rng(0))
    1
    >>> exponential_index(Fraction(1, 2), [0])
    0
    """
    g = to_fraction(gamma, name="gamma")
    d = _scores(scores)
    draw = word_source(rng)
    if d.size == 1:
        return 0
    levels, inverse, counts = np.unique(d, return_inverse=True, return_counts=True)
    level = _draw_level(g, (levels - levels[0]).astype(np.int64), counts.astype(np.int64), draw)
    members = np.flatnonzero(inverse.reshape(-1) == level)
    return int(members[_uniform_below(int(members.size), draw)])


def _scores(scores: Any) -> np.ndarray:
    arr = np.asarray(scores)
    if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iu" or (arr.size and arr.min() < 0):
        raise ParameterError("scores must be a non-empty 1-D array of non-negative integers (int64); got "
                             f"{arr.dtype} of shape {arr.shape}.")
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
        raise ParameterError("scores must fit in int64.")
    return arr.astype(np.int64)


def _cut(gamma: Fraction, bits: int) -> int:
    """An exponent ``E`` with ``p**E`` about ``2**-(bits + 2)`` (a float choice; correctness never rests on it)."""
    return max(1, math.ceil((bits + 2) * math.log(2) / float(gamma)) + 1)


def level_bounds(gamma: Fraction, exponents: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Certified integer brackets ``lo <= 2**bits * exp(-gamma e) <= hi`` for every ``e`` (int64, ``>= 0``).

    Exponents at or beyond the cut get ``[0, hi(p**E)]`` (see the module notes). Returns two object arrays
    of Python integers.
    """
    cut = _cut(gamma, bits)
    e = np.asarray(exponents, dtype=np.int64)
    near = e < cut
    en = e[near]
    a, b = en // _BLOCK, en % _BLOCK
    small_lo, small_hi, squares, far_hi, work, guard = _powers(gamma, bits, cut)
    if a.size == 0 or int(a.max()) < _TABLE_BLOCKS:
        big_lo, big_hi = _block_table(gamma, bits, cut)
        a_lo, a_hi = big_lo[a], big_hi[a]
    else:                                                   # far apart exponents: binary powers of p**64
        a_lo, a_hi = _block_powers(a, squares, work)
    lo = np.zeros(e.size, dtype=object)
    hi = np.empty(e.size, dtype=object)
    lo[near] = (a_lo * small_lo[b]) >> (guard + work)
    hi[near] = -((-(a_hi * small_hi[b])) >> (guard + work))
    hi[~near] = far_hi
    return lo, hi


def _as_object(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=object)


@lru_cache(maxsize=64)
def _powers(gamma: Fraction, bits: int, cut: int) -> tuple[np.ndarray, np.ndarray, tuple[tuple[int, int], ...], int,
                                                            int, int]:
    """At ``work = bits + guard`` fraction bits, rounded outwards at every product: brackets of ``p**b``
    (``b < 64``) as object arrays, of ``p**(64 * 2**i)`` (squarings of ``p**64``, up to the cut), the upper
    bracket of ``2**bits p**cut``, ``work`` and ``guard``. A squaring at most doubles a bracket's width plus one
    unit, and a product of ``t`` brackets adds their widths, so ``guard`` (32 bits plus those of the cut) keeps
    the brackets a few units wide at ``bits``. Cached: a release draws many times at one ``gamma``."""
    guard = 40 + 2 * int(cut).bit_length()
    work = bits + guard
    one = 1 << work
    p_lo, p_hi = exp_neg_bounds(gamma, work)
    small_lo, small_hi = [one], [one]
    for _ in range(_BLOCK - 1):
        small_lo.append((small_lo[-1] * p_lo) >> work)
        small_hi.append(-((-small_hi[-1] * p_hi) >> work))
    squares = [exp_neg_bounds(gamma * _BLOCK, work)]
    for _ in range(int(cut // _BLOCK).bit_length()):
        lo, hi = squares[-1]
        squares.append(((lo * lo) >> work, -((-hi * hi) >> work)))
    far_hi = -((-exp_neg_bounds(gamma * cut, work)[1]) >> guard)
    return _as_object(small_lo), _as_object(small_hi), tuple(squares), far_hi, work, guard


@lru_cache(maxsize=64)
def _block_table(gamma: Fraction, bits: int, cut: int) -> tuple[np.ndarray, np.ndarray]:
    """Brackets of ``2**work p**(64 a)`` for ``a < 4096`` by repeated products (the common case: cached)."""
    _, _, squares, _, work, _ = _powers(gamma, bits, cut)
    b_lo, b_hi = squares[0]
    big_lo, big_hi = [1 << work], [1 << work]
    for _ in range(_TABLE_BLOCKS - 1):
        big_lo.append((big_lo[-1] * b_lo) >> work)
        big_hi.append(-((-big_hi[-1] * b_hi) >> work))
    return _as_object(big_lo), _as_object(big_hi)


def _block_powers(a: np.ndarray, squares: tuple[tuple[int, int], ...], work: int) -> tuple[np.ndarray, np.ndarray]:
    """Brackets of ``2**work p**(64 a)`` for every ``a`` by binary powers (one pass per bit of the largest)."""
    lo = np.full(a.size, 1 << work, dtype=object)
    hi = np.full(a.size, 1 << work, dtype=object)
    for i in range(int(a.max()).bit_length()):
        on = ((a >> i) & 1).astype(bool)
        if on.any():
            s_lo, s_hi = squares[i]
            lo[on] = (lo[on] * s_lo) >> work
            hi[on] = -((-(hi[on] * s_hi)) >> work)
    return lo, hi


def _draw_level(gamma: Fraction, exponents: np.ndarray, counts: np.ndarray, draw: Callable[..., np.ndarray]) -> int:
    """The level ``i`` with probability ``c_i p**e_i / S`` (see the module notes)."""
    bits = _START_BITS + int(counts.sum()).bit_length()
    c = counts.astype(object)
    u, u_bits = 0, 0
    while True:
        u = (u << 64) | int(draw(1)[0])
        u_bits += 64
        lo, hi = level_bounds(gamma, exponents, bits)
        low = np.cumsum(lo * c)
        high = np.cumsum(hi * c)
        total_lo, total_hi = int(low[-1]), int(high[-1])
        below = int(np.count_nonzero((high[:-1] << u_bits) <= u * total_lo))            # certainly S_i <= U S
        not_above = int(np.count_nonzero((low[:-1] << u_bits) < (u + 1) * total_hi))    # not certainly S_i > U S
        if below == not_above:
            return below
        bits *= 2


def _uniform_below(n: int, draw: Callable[..., np.ndarray]) -> int:
    """An exact uniform integer in ``[0, n)`` (masked words, rejected at or above ``n``)."""
    if n <= 1:
        return 0
    width = (n - 1).bit_length()
    while True:
        r = int(draw(1)[0]) >> (64 - width)
        if r < n:
            return r
