"""Noise for counts: the exact discrete Laplace distribution, from a secure source.

Public interface::

    t = noise_scale(sensitivity, epsilon)   # Fraction, sensitivity/epsilon rounded UP
    z = discrete_laplace(t, size, rng=rng)  # int64, P(z) = (1-p)/(1+p) p^|z|, p = exp(-1/t)
    v = discrete_laplace_variance(t)        # 2p/(1-p)^2

Construction
------------
*Inverse CDF on a 64-bit grid, completed to infinite precision.* A 64-bit
word ``w`` is the first 64 binary digits of a uniform real ``U`` in [0, 1);
the next words are the next digits, drawn only when needed. The sample is
``Z = min{z : U < F(z)}`` with ``F`` the exact CDF. The table holds
``T_z = floor(2**64 F(z))`` for ``z = -L-1 .. L``. ``T_z < w`` proves
``F(z) < U`` and ``T_z > w`` proves ``F(z) > U``; only ``w == T_z`` (chance
about ``2**-64`` per threshold) needs more digits of ``U`` and of ``F(z)``,
which are compared word by word until they differ. ``F(z)`` is irrational
(``exp(-1/t)`` is transcendental for rational ``t``, Lindemann), so they
always differ eventually and the comparison is exact.

*Certified thresholds.* ``exp(-x)`` for rational ``x`` is bracketed in
integer fixed point: argument halving until ``x/2**s <= 1/2``, the alternating
Taylor series (its partial sums bracket the value; every product is rounded
down for the lower and up for the upper bound), then ``s`` squarings with
directed rounding. ``floor(2**b F)`` is accepted only when the floors of the
lower and upper bounds agree; otherwise the precision is doubled.

*Speed.* The top ``k`` bits of ``w`` index a guess table of ``2**k`` buckets.
In a bucket holding at most one threshold the answer is
``guess[b] + (w >= thr[b])`` (two gathers and a compare per sample, one
word per sample, no sign bit since the table is two-sided); words in
crowded buckets, in the tails or equal to a threshold go to the plain binary
search with the exact tie resolution. Both paths give identical results for
identical words.

*Tails and large scales.* ``|Z| > L`` goes through memorylessness:
``Z | Z >= L+1`` is ``L + 1 + G`` with ``G`` geometric,
``P(G = g) = (1-q) q^g``, ``q = p`` (and symmetrically below ``-L-1``).
``G`` is sampled by its base-256 digits, which are independent:
``P(G = r + 256 m) = (1-q) q^r q^(256 m)`` factorizes, so ``G = R + 256 Q``
with ``R`` a truncated geometric on ``0..255`` (ratio ``q``) and ``Q``
geometric with ratio ``q**256``; recursively until the ratio is small enough
for a short table (whose own tail, chance ``2**-24``, restarts by
memorylessness). For ``t`` up to about 246, ``L = ceil(16.6 t)`` leaves
``2**-24`` of the mass to the tails; above, ``L = 0``: one word picks
``Z < 0``, ``Z = 0`` or ``Z > 0`` and ``|Z| = 1 + G``. Tables never exceed
``2 * 4096 + 2`` thresholds whatever ``t``; a sample at ``t = 10**6`` costs
four words, each looked up through its own guess table.

Security
--------
With ``rng=None`` the words come from :class:`SecureRandom`, an AES-256-CTR
keystream keyed from ``os.urandom``, re-keyed in forked children: numpy's
bit generators are never used. The algorithm's control flow depends on the
random words only through vectorized comparisons and the (rare) tie and
tail paths; timing side channels are not in scope. A seeded
``numpy.random.Generator`` passed as ``rng`` feeds the same exact algorithm
with its words (``rng.integers(0, 2**64, dtype=uint64)``): reproducible for
experiments and tests, but predictable, hence not for production releases.

References
----------
Canonne, Kamath, Steinke (2020), "The discrete Gaussian for differential
privacy" (exact discrete Laplace as a two-sided geometric); Ghosh,
Roughgarden, Sundararajan (2012), "Universally utility-maximizing privacy
mechanisms" (geometric mechanism).
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from pandas_dp.noise.csprng import SecureRandom
from pandas_dp._utils.checks import MAX_NOISE_SCALE
from pandas_dp._utils.rational import to_fraction
from pandas_dp.errors import ParameterError

from pandas_dp.noise.exact_cdf import CDF, exp_neg_bounds, GeometricCDF, LaplaceCDF, TruncatedGeometricCDF
from pandas_dp.noise.words import BLOCK, RngLike, as_shape, word_source, writeable_int64

__all__ = [
    "noise_scale",
    "discrete_laplace",
    "add_discrete_laplace",
    "discrete_laplace_variance",
    "discrete_laplace_quantile",
    "SecureRandom",
    "RngLike",
]


_M64 = (1 << 64) - 1
_MAX_DENOMINATOR = 1 << 32  # scales are rounded up to denominators <= 2**32
_MAX_SCALE = MAX_NOISE_SCALE  # int64 noise must not overflow
_TAIL_BITS = 24  # tables cover all but about 2**-24 of the mass
_LAPLACE_L_MAX = 4096  # at most 2 * 4096 + 2 thresholds
_GEOM_TABLE_MAX = 256
_DIGIT_BASE = 256
_CHUNK = 1 << 16  # samples per vectorized pass (temporaries stay in cache)
_SLOW = np.int64(1 << 62)  # guess value marking buckets for the exact search



# ---------------------------------------------------------------- scale ----
def round_up_denominator(x: Fraction, max_denominator: int) -> Fraction:
    """Smallest fraction >= ``x`` whose denominator is at most ``max_denominator``.

    The two candidates of the continued-fraction algorithm (the last
    convergent and the best semiconvergent) lie on opposite sides of ``x``
    and are its best one-sided approximations; the upper one is returned.
    """
    if x.denominator <= max_denominator:
        return x
    p0, q0, p1, q1 = 0, 1, 1, 0
    n, d = x.numerator, x.denominator
    while True:
        a = n // d
        q2 = q0 + a * q1
        if q2 > max_denominator:
            break
        p0, q0, p1, q1 = p1, q1, p0 + a * p1, q2
        n, d = d, n - a * d
    k = (max_denominator - q0) // q1
    bound1 = Fraction(p0 + k * p1, q0 + k * q1)
    bound2 = Fraction(p1, q1)
    return bound1 if bound1 >= x else bound2


def noise_scale(sensitivity: float | int | Fraction, epsilon: float | int | Fraction) -> Fraction:
    """Discrete Laplace scale ``t = sensitivity / epsilon``, rounded up to an exact rational.

    Parameters
    ----------
    sensitivity : int, float or Fraction
        L1 sensitivity of the released counts, ``> 0``.
    epsilon : int, float or Fraction
        Privacy parameter of this release, ``> 0``.

    Returns
    -------
    fractions.Fraction
        ``t >= sensitivity / epsilon`` exactly. Floats are read through their
        shortest ``repr`` (``0.1`` is ``1/10``), so ``noise_scale(1, 0.1) == 10``.
        If the exact quotient has a denominator above ``2**32`` it is replaced by
        the smallest fraction above it with denominator ``<= 2**32`` (a change
        below ``2**-32``): more noise, never less.

    Raises
    ------
    ParameterError
        If either argument is not a positive finite real number.

    Examples
    --------
    >>> noise_scale(1, 0.1)
    Fraction(10, 1)
    >>> noise_scale(2, 0.3)
    Fraction(20, 3)
    """
    s = to_fraction(sensitivity, name="sensitivity")
    e = to_fraction(epsilon, name="epsilon")
    return round_up_denominator(s / e, _MAX_DENOMINATOR)


def _as_scale(scale: object) -> Fraction:
    """Validated scale; denominators above ``2**32`` are rounded up as in :func:`noise_scale`."""
    t = round_up_denominator(to_fraction(scale, name="scale"), _MAX_DENOMINATOR)
    if t > _MAX_SCALE:
        raise ParameterError(
            f"scale must be at most 2**50 so that int64 noise cannot overflow; got {scale!r}. "
            "Use a larger epsilon."
        )
    return t


def discrete_laplace_variance(scale: float | Fraction) -> float:
    """Variance of the discrete Laplace distribution with scale ``t``.

    Parameters
    ----------
    scale : float or Fraction
        ``t > 0``, as returned by :func:`noise_scale`.

    Returns
    -------
    float
        ``2 p / (1 - p)**2`` with ``p = exp(-1/t)`` (``1 - p`` computed with
        ``expm1`` so large ``t`` keeps full precision; about ``2 t**2``).

    Examples
    --------
    >>> round(discrete_laplace_variance(noise_scale(1, 0.5)), 6)
    7.835396
    """
    t = _as_scale(scale)
    x = float(1 / t)
    p = math.exp(-x)
    one_minus_p = -math.expm1(-x)
    return 2.0 * p / one_minus_p**2



def as_probability(q: object) -> Fraction:
    """``q`` in ``(0, 1)`` as an exact rational (a float at its exact binary value)."""
    if isinstance(q, bool) or not isinstance(q, numbers.Real):
        raise ParameterError(f"q must be a probability strictly between 0 and 1; got {q!r}.")
    if isinstance(q, Fraction):
        value = q
    else:
        qf = float(q)
        if not math.isfinite(qf):
            raise ParameterError(f"q must be a probability strictly between 0 and 1; got {q!r}.")
        value = Fraction(qf)
    if not 0 < value < 1:
        raise ParameterError(f"q must be a probability strictly between 0 and 1; got {q!r}. "
                             "For a two-sided interval of level c pass (1 + c) / 2.")
    return value


def _power_exceeds(t: Fraction, k: int, c: Fraction) -> bool:
    """Exact ``p**k > c (1 + p)`` for ``p = exp(-1/t)``, integer ``k >= 1`` and rational ``c > 0``.

    Equality is impossible (it would make ``p`` algebraic, contradicting
    Lindemann's theorem), so refining the certified brackets of ``p**k`` and
    ``p`` always decides.
    """
    x = k / t
    n, d = c.numerator, c.denominator
    if x >= 1 and math.floor(x) >= d.bit_length():
        return False  # p**k < e**-floor(x) < 2**-floor(x) <= 1/d <= c < c (1 + p)
    prec = 64 + d.bit_length() + n.bit_length() + math.ceil(float(x) * 1.5)
    while True:
        x_lo, x_hi = exp_neg_bounds(x, prec)
        p_lo, p_hi = exp_neg_bounds(1 / t, prec)
        one = 1 << prec
        if d * x_lo > n * (one + p_hi):
            return True
        if d * x_hi < n * (one + p_lo):
            return False
        prec *= 2


def discrete_laplace_quantile(scale: float | Fraction, q: float | Fraction) -> int:
    """Smallest integer ``z`` with ``P(Z <= z) >= q`` for the discrete Laplace of scale ``t`` (exact).

    Parameters
    ----------
    scale : Fraction, int or float
        ``t > 0`` (read as in :func:`discrete_laplace`).
    q : float or Fraction
        Probability, ``0 < q < 1``; a float is taken at its exact binary value.

    Returns
    -------
    int
        The exact quantile.

    Raises
    ------
    ParameterError
        If ``q`` is not strictly between 0 and 1 or ``scale`` is invalid.

    Notes
    -----
    With ``p = exp(-1/t)`` the CDF is ``F(z) = p**(-z) / (1 + p)`` for
    ``z <= -1`` and ``F(z) = 1 - p**(z+1) / (1 + p)`` for ``z >= 0``, so
    ``F(z) >= q`` is ``p**(-z) >= q (1 + p)`` or ``p**(z+1) <= (1 - q)(1 + p)``.
    A floating-point inversion ``z ~ t log(1 / ((1 - q)(1 + p))) - 1`` gives a
    start; each comparison is then decided exactly with certified integer
    brackets of ``exp`` refined until they separate the two sides (they
    cannot be equal: ``p`` is transcendental), and the start is moved until
    ``F(z - 1) < q <= F(z)``. For symmetric intervals,
    ``P(|Z| <= c) = 2 F(c) - 1``, so the ``(1 + level) / 2`` quantile is the
    smallest radius with coverage at least ``level``.

    References
    ----------
    Inusah and Kozubowski (2006), "A discrete analogue of the Laplace
    distribution", J. Statist. Plann. Inference 136 (CDF); Canonne, Kamath,
    Steinke (2020), Section 2.

    Examples
    --------
    >>> discrete_laplace_quantile(noise_scale(1, 1), 0.975)
    3
    >>> discrete_laplace_quantile(noise_scale(1, 1), 0.025)
    -3
    >>> discrete_laplace_quantile(10, 0.5)
    0
    """
    t = _as_scale(scale)
    qq = as_probability(q)

    def at_least(z: int) -> bool:  # F(z) >= q, exactly
        if z >= 0:
            return not _power_exceeds(t, z + 1, 1 - qq)
        return _power_exceeds(t, -z, qq)

    # Float start (any start is corrected below).
    tf, p = float(t), math.exp(-1.0 / float(t))
    if qq >= Fraction(1, 2):
        level = -math.log(float(1 - qq)) - math.log1p(p)
        z = max(0, math.ceil(tf * level) - 1)
    else:
        level = -math.log(float(qq)) - math.log1p(p)
        z = min(-1, -math.floor(tf * level)) if level > 0 else 0
    while not at_least(z):
        z += 1
    while at_least(z - 1):
        z -= 1
    return z


# ------------------------------------------------- exact table sampling ----
def _resolve_tie(cdf: CDF, lo: int, hi: int, draw) -> int:
    """Number of ``j`` in ``[lo, hi)`` with ``F_j <= U``, all with ``floor(2**64 F_j) == w``.

    Further 64-bit digits of ``U`` are drawn lazily and compared with the
    digits of ``F_j`` until they differ (they always do: ``F_j`` is irrational).
    """
    digits: list[int] = []
    count = 0
    for j in range(lo, hi):
        level = 1
        while True:
            if len(digits) < level:
                digits.append(int(draw(1)[0]))
            f = cdf.floor_scaled(j, 64 * (level + 1)) & _M64
            u = digits[level - 1]
            if u > f:  # U > F_j
                count += 1
                break
            if u < f:  # U < F_j <= F_{j+1} <= ...
                return count
            level += 1
    return count


def _count_below(thresholds: np.ndarray, cdf: CDF, w: np.ndarray, draw) -> np.ndarray:
    """Exact ``#{j : F_j <= U}`` for each word (plain binary search + ties)."""
    c = np.searchsorted(thresholds, w, side="right").astype(np.int64)
    tied = (c > 0) & (thresholds[np.maximum(c - 1, 0)] == w)
    for i in np.flatnonzero(tied):  # probability ~ n * 2**-64 per word
        left = int(np.searchsorted(thresholds, w[i], side="left"))
        c[i] = left + _resolve_tie(cdf, left, int(c[i]), draw)
    return c


class _Table:
    """Exact inverse-CDF lookup ``c = #{j : F_j <= U}`` with a guess table.

    The top ``k`` bits of a word select one of ``2**k`` buckets. A bucket is
    *fast* when it holds at most one threshold and every count it can give
    lies in ``[fast_lo, fast_hi]``; there ``c = guess[b] + (w >= thr[b])``.
    Words in other buckets and words equal to their bucket's threshold take
    the plain binary search with exact tie resolution (:func:`_count_below`),
    so both paths return the same counts for the same words.
    """

    def __init__(self, cdf: CDF, *, offset: int = 0, fast_lo: int = 0, fast_hi: int | None = None) -> None:
        self.cdf, self.offset = cdf, offset
        self.thresholds = cdf.table()
        n = cdf.n
        fast_hi = n if fast_hi is None else fast_hi
        k = min(16, max(12, n.bit_length() + 3))
        self.shift = np.uint64(64 - k)
        starts = np.arange(1 << k, dtype=np.uint64) << self.shift
        below = np.searchsorted(self.thresholds, starts, side="left")
        ends = np.append(below[1:], n)
        inside = ends - below
        fast = (inside <= 1) & (below >= fast_lo) & (ends <= fast_hi)
        self.guess = np.where(fast, below + offset, _SLOW).astype(np.int64)
        single = fast & (inside == 1)
        self.bucket_threshold = np.full(1 << k, _M64, dtype=np.uint64)
        self.bucket_threshold[single] = self.thresholds[below[single]]

    def lookup(self, w: np.ndarray, draw, *, fast: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """``offset + c`` for each word, and the indices that took the exact search.

        Only those indices can have counts outside ``[fast_lo, fast_hi]``
        (``None`` means all of them took it).
        """
        if not fast:
            return _count_below(self.thresholds, self.cdf, w, draw) + self.offset, None
        # The fast path draws no words: it runs block by block (temporaries of one block, kept in
        # cache), then the exact search takes every word it left over at once, in order, as before.
        n = w.size
        c = np.empty(n, dtype=np.int64)
        slow: list[np.ndarray] = []
        for start in range(0, n, BLOCK):
            wb = w[start : start + BLOCK]
            b = (wb >> self.shift).view(np.int64)
            t = self.bucket_threshold.take(b)
            cb = np.take(self.guess, b, out=c[start : start + wb.size], mode="wrap")  # b < 2**k: in range
            cb += wb >= t
            bad = wb == t  # a tie, or the sentinel of an empty bucket
            bad |= cb >= _SLOW
            if bad.any():
                slow.append(np.flatnonzero(bad) + start)
        idx = np.concatenate(slow) if slow else np.empty(0, dtype=np.intp)
        if idx.size:
            c[idx] = _count_below(self.thresholds, self.cdf, w[idx], draw) + self.offset
        return c, idx


class _Geometric:
    """Exact geometric sampler, ``P(G = g) = (1 - q) q**g``, ``q = exp(-a)``.

    ``method="digits"`` (automatic for small ``a``): ``G = R + B Q`` with
    independent base-``B`` digit ``R`` (truncated geometric, ratio ``q``) and
    ``Q`` geometric with ratio ``q**B``, recursively. ``method="table"``: a
    table of ``L`` thresholds; ``G >= L`` (chance ``q**L``, about ``2**-24``)
    is ``L`` plus a fresh geometric (memorylessness).
    """

    def __init__(self, a: Fraction, *, method: str = "auto") -> None:
        length = math.ceil(_TAIL_BITS * math.log(2) / float(a))
        if method == "table" or (method == "auto" and length <= _GEOM_TABLE_MAX):
            self.digits = False
            length = max(length, 1)
            self.table = _Table(GeometricCDF(a, length), fast_hi=length - 1)
        else:
            self.digits = True
            self.table = _Table(TruncatedGeometricCDF(a, _DIGIT_BASE))
            self.high = _geometric(a * _DIGIT_BASE)
        self.cdf, self.thresholds = self.table.cdf, self.table.thresholds

    def sample(self, n: int, draw) -> np.ndarray:
        """``n`` exact samples; ``draw(m)`` gives uniform ``uint64`` words."""
        if self.digits:
            low, _ = self.table.lookup(draw(n), draw)
            high = self.high.sample(n, draw)
            high *= _DIGIT_BASE
            high += low
            return high
        length = self.cdf.n
        out, idx = self.table.lookup(draw(n), draw)
        assert idx is not None  # the exact-search indices are returned whenever low digits are not asked for
        todo = idx[out[idx] == length]
        if todo.size:  # G >= L (chance 2**-24): L plus a fresh geometric (memoryless)
            out[todo] += self.sample(todo.size, draw)
        return out


@lru_cache(maxsize=128)
def _geometric(a: Fraction) -> _Geometric:
    return _Geometric(a)


class _LaplaceSampler:
    """Discrete Laplace of scale ``t`` by a two-sided table (see module notes).

    ``Z = -L - 1 + c`` with ``c = #{z in -L-1..L : F(z) <= U}``. ``c = 0``
    means ``Z <= -L-1``, i.e. ``Z = -L-1-G``; ``c = 2L+2`` means ``Z = L+1+G``.
    For ``t`` up to about 246 the table covers all but ``2**-24`` of the mass
    and tails are rare. Above, ``L = 0``: the table only splits
    ``Z < 0 | Z = 0 | Z > 0`` and ``|Z| - 1`` is a base-256 digit geometric.
    """

    def __init__(self, t: Fraction, *, half_width: int | None = None) -> None:
        half = math.ceil(float(t) * _TAIL_BITS * math.log(2))
        if half > _LAPLACE_L_MAX:
            half = 0
        if half_width is not None:  # tests: force another width
            half = half_width
        self.half_width = half
        n = 2 * half + 2
        self.tail = _geometric(1 / t)
        fast_lo, fast_hi = (0, n) if half == 0 else (1, n - 1)
        self.table = _Table(LaplaceCDF(t, half), offset=-half - 1, fast_lo=fast_lo, fast_hi=fast_hi)
        self.cdf, self.thresholds = self.table.cdf, self.table.thresholds

    def sample_words(self, w: np.ndarray, draw, *, fast: bool = True) -> np.ndarray:
        """Exact samples for words ``w``; ``draw(m)`` gives extra words for ties/tails."""
        half = self.half_width
        z, idx = self.table.lookup(w, draw, fast=fast)
        if half == 0:  # z in {-1, 0, 1}: sign; magnitude 1 + G drawn for all
            g = self.tail.sample(w.size, draw)
            g += 1
            g *= z
            return g
        if idx is None:
            idx = np.arange(w.size)
        tails = idx[np.abs(z[idx]) > half]
        if tails.size:
            # Z <= -L-1 is -L-1-G, Z >= L+1 is L+1+G (memorylessness).
            g = self.tail.sample(tails.size, draw)
            z[tails] += np.sign(z[tails]) * g
        return z


@lru_cache(maxsize=32)  # at most ~1 MB of tables each
def laplace_sampler(t: Fraction) -> _LaplaceSampler:
    return _LaplaceSampler(t)


# ------------------------------------------------------------- public ----
def discrete_laplace(
    scale: float | Fraction,
    size: int | tuple[int, ...],
    *,
    rng: np.random.Generator | SecureRandom | None = None,
) -> np.ndarray:
    """Draw exact discrete Laplace noise, ``P(z) = (1-p)/(1+p) p**|z|``, ``p = exp(-1/t)``.

    Parameters
    ----------
    scale : Fraction, int or float
        ``t > 0``, normally from :func:`noise_scale` (floats are read through
        their shortest repr; a denominator above ``2**32`` is rounded up, as
        there). At most ``2**50``.
    size : int or tuple of int
        Output shape.
    rng : None, SecureRandom or numpy.random.Generator, optional
        ``None`` (default): AES-256-CTR keystream keyed from ``os.urandom``
        (secure). A seeded ``numpy.random.Generator`` makes the draws
        reproducible; it is predictable, so use it only for tests and
        experiments, never for production releases.

    Returns
    -------
    numpy.ndarray
        ``int64`` array of shape ``size``.

    Notes
    -----
    Every value has exactly the discrete Laplace probability of the rational
    scale (see the module docstring for the construction and proof sketch).
    Samples are produced in chunks of ``2**16``, one 64-bit word each except
    for rare tie and tail cases. For a given Generator seed the output is
    reproducible.

    Examples
    --------
    >>> discrete_laplace(noise_scale(1, 0.5), 6, rng=np.random.default_rng(0))
    array([ 1, -1, -5, -7,  2,  3])
    >>> discrete_laplace(noise_scale(1, 0.5), (2, 3)).shape  # secure source
    (2, 3)
    """
    t = _as_scale(scale)
    shape = as_shape(size)
    total = math.prod(shape)
    draw = word_source(rng)
    if 0 < total <= _CHUNK:  # one chunk: its samples are the output (the words of _laplace_into, no copy)
        words = draw(total, out=np.empty(total + 2, dtype=np.uint64))
        return laplace_sampler(t).sample_words(words, draw).reshape(shape)
    out = np.empty(total, dtype=np.int64)
    _laplace_into(t, out, draw, add=False)
    return out.reshape(shape)


def add_discrete_laplace(
    scale: float | Fraction,
    values: np.ndarray,
    *,
    rng: np.random.Generator | SecureRandom | None = None,
) -> np.ndarray:
    """Add exact discrete Laplace noise to ``values`` in place; returns ``values``.

    Parameters
    ----------
    scale : Fraction, int or float
        ``t > 0``, as for :func:`discrete_laplace`.
    values : numpy.ndarray
        A writeable ``int64`` array; every element gets one independent draw.
    rng : None, SecureRandom or numpy.random.Generator, optional
        As for :func:`discrete_laplace`.

    Returns
    -------
    numpy.ndarray
        ``values`` itself, now ``values + discrete_laplace(scale, values.shape, rng=rng)``.

    Raises
    ------
    ParameterError
        If ``values`` is not a writeable int64 array, or ``scale`` / ``rng`` is invalid.

    Notes
    -----
    The draws are those :func:`discrete_laplace` returns for the same
    ``rng`` state, in C order (the same words, chunk by chunk), and they are
    added chunk by chunk: no noise array of the full size is made, only
    temporaries of one chunk (``2**16`` values).

    Examples
    --------
    >>> counts = np.array([10, 20, 30, 40, 50, 60])
    >>> add_discrete_laplace(noise_scale(1, 0.5), counts, rng=np.random.default_rng(0))
    array([11, 19, 25, 33, 52, 63])
    """
    t = _as_scale(scale)
    flat = writeable_int64(values)
    _laplace_into(t, flat, word_source(rng), add=True)
    return values


def add_in_chunks(values: np.ndarray, sample: Callable[[Any], np.ndarray]) -> np.ndarray:
    """``values += sample(values.shape)`` in place, the draws made one chunk (``2**16`` values) at a time.

    ``sample(shape)`` draws one value per element of ``shape``; it is called once with
    ``values.shape`` when ``values`` fits in one chunk, else once per chunk of the flat (C order)
    values. Only for samplers whose draws of ``n`` values are those of consecutive calls over
    chunks of ``2**16`` (the discrete Laplace, :func:`discrete_laplace`, works chunk by chunk):
    then the result is ``values + sample(values.shape)`` drawn from the same words, and no noise
    array of the full size is made. Returns ``values``.
    """
    flat = writeable_int64(values)
    if flat.size <= _CHUNK:
        values += sample(values.shape)
        return values
    for start in range(0, flat.size, _CHUNK):
        m = min(_CHUNK, flat.size - start)
        flat[start : start + m] += sample((m,))
    return values


def _laplace_into(t: Fraction, flat: np.ndarray, draw, *, add: bool) -> None:
    """Write (``add=False``) or add (``add=True``) one exact draw into each element of the 1-D ``flat``.

    Samples are made ``_CHUNK`` at a time from one reused word buffer, so
    writing and adding consume the same words in the same order.
    """
    total = flat.size
    if total == 0:
        return
    sampler = laplace_sampler(t)
    buf = np.empty(min(total, _CHUNK) + 2, dtype=np.uint64)
    for start in range(0, total, _CHUNK):
        m = min(_CHUNK, total - start)
        z = sampler.sample_words(draw(m, out=buf), draw)
        if add:
            flat[start : start + m] += z
        else:
            flat[start : start + m] = z
        del z  # one chunk of samples alive at a time
