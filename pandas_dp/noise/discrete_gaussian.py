"""The exact discrete Gaussian ``N_Z(0, sigma2)``: sampler, variance and quantiles.

Public interface (called by :class:`pandas_dp.privacy.loss.DiscreteGaussian`)::

    z = discrete_gaussian(sigma2, size, rng=rng)   # int64, P(z) ∝ exp(-z**2 / (2 sigma2))
    v = discrete_gaussian_variance(sigma2)         # exact variance, float precision
    c = discrete_gaussian_quantile(sigma2, q)      # smallest z with P(Z <= z) >= q, never below

Construction (Canonne, Kamath, Steinke 2020, Algorithm 3)
---------------------------------------------------------
With ``t = floor(sigma) + 1`` draw ``Y`` from the discrete Laplace of scale
``t`` (:mod:`pandas_dp.noise.laplace`, exact) and accept it with probability
``a(|Y|) = exp(-(|Y| - sigma2/t)**2 / (2 sigma2))``, else start again. Since
``exp(-|y|/t) a(|y|) = exp(-y**2 / (2 sigma2)) exp(-sigma2 / (2 t**2))``,
an accepted ``Y`` has exactly the discrete Gaussian law. The accepted
proposals of many vectorized rounds, taken in order, are independent draws.

*The exact Bernoulli(a(k)).* A uniform word ``w`` is the first 64 binary
digits of a uniform real ``U`` in ``[0, 1)``; accept iff ``U < a(k)``.
For a bucket of ``|Y|`` values the table holds certified integers
``L <= floor(2**64 a(k)) <= H`` for every ``k`` in the bucket. ``w < L``
proves ``U < (w + 1) / 2**64 <= a(k)`` (accept), ``w > H`` proves
``U >= w / 2**64 > a(k)`` (reject). Only ``L <= w <= H`` is *uncertain*: then
``floor(2**64 a(k))`` itself is computed (certified integer bracketing of
``exp``, :func:`pandas_dp.noise.exact_cdf.floor_exp_neg`), and a tie ``w ==
floor(2**64 a(k))`` draws further words of ``U`` and compares them with the
next 64-bit digits of ``a(k)`` until they differ. They always differ:
``a(k) = exp(-gamma)`` with ``gamma`` rational is irrational for
``gamma != 0`` (Lindemann), and ``gamma = 0`` (``a = 1``) always accepts. No
float decides an outcome.

*Buckets.* Up to about ``sigma = 3000`` each bucket is one value of ``|Y|``
(``L = H = floor(2**64 a(k))``: only ties, chance ``2**-64``, are
uncertain). For larger ``sigma`` buckets are runs of ``s = 2**j`` values
(at most ``2**15`` buckets); ``a`` is increasing below ``sigma2/t`` and
decreasing above, so its values at the bucket ends bound it inside
(the bucket holding the peak gets its maximum at ``floor``/``ceil`` of the
peak), and only a fraction of about ``10**-4`` of the proposals is
uncertain. Beyond the last bucket ``a(k) < 2**-64`` (certified), so
``L = H = 0``. Table values come from an interval recurrence
``a((i+1) s) = a(i s) E G**i`` in integer fixed point with directed
rounding; an entry whose floor the bracket does not fix is computed directly.

Security and reproducibility are those of :func:`pandas_dp.noise.laplace.discrete_laplace`
(the same word sources: AES-256-CTR by default, a seeded Generator for tests).

References
----------
Canonne, Kamath, Steinke (2020), "The discrete Gaussian for differential
privacy", NeurIPS; arXiv:2004.00010 (Algorithm 3; Theorem 14 for privacy).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from pandas_dp.noise.exact_cdf import exp_bounds, floor_exp_neg
from pandas_dp.noise.gaussian_tail import certified_quantile
from pandas_dp._utils.rational import to_fraction
from pandas_dp._utils.checks import MAX_GAUSSIAN_SIGMA2
from pandas_dp.errors import ParameterError
from pandas_dp.noise.laplace import as_probability, laplace_sampler, round_up_denominator
from pandas_dp.noise.words import BLOCK, RngLike, as_shape, word_source, writeable_int64

__all__ = ["discrete_gaussian", "add_discrete_gaussian", "discrete_gaussian_variance", "discrete_gaussian_quantile"]

_M64 = (1 << 64) - 1
_MAX_SIGMA2 = MAX_GAUSSIAN_SIGMA2  # sigma at most 2**50, as for the Laplace scale
_MAX_DENOMINATOR = 1 << 64  # sigma2 is rounded UP to denominators <= 2**64
_MAX_BUCKETS = 1 << 15
_CHUNK = 1 << 16  # proposals per vectorized round


def _as_sigma2(sigma2: object) -> Fraction:
    """Validated ``sigma2``; a denominator above ``2**64`` is rounded up (more noise, never less)."""
    s2 = round_up_denominator(to_fraction(sigma2, name="sigma2"), _MAX_DENOMINATOR)
    if s2 > _MAX_SIGMA2:
        raise ParameterError(
            f"sigma2 must be at most 2**100 (sigma at most 2**50) so that int64 noise cannot overflow; "
            f"got {float(s2):.3g}. Use a larger rho.")
    return s2


def _floor_sigma(sigma2: Fraction) -> int:
    """``floor(sqrt(sigma2))`` exactly (``m <= sqrt(x)`` iff ``m*m <= floor(x)``)."""
    return math.isqrt(sigma2.numerator // sigma2.denominator)


# ------------------------------------------------------------- tables ----
class _Acceptance:
    """Certified bucket bounds ``L <= floor(2**64 a(k)) <= H`` for ``a(k) = exp(-(k - c)**2 / (2 sigma2))``."""

    def __init__(self, sigma2: Fraction, t: int, *, max_buckets: int = _MAX_BUCKETS) -> None:
        self.sigma2, self.t = sigma2, t
        self.peak = c = sigma2 / t
        sigma = math.sqrt(sigma2)
        # a(k) < 2**-64 needs (k - c)**2 > 128 ln(2) sigma2; checked exactly below.
        end = math.ceil(float(c) + sigma * math.sqrt(128 * math.log(2))) + 2
        shift = 0
        while -(-end // (1 << shift)) > max_buckets:
            shift += 1
        self.shift, step = shift, 1 << shift
        while True:
            n = -(-end // step)  # buckets 0..n-1, grid points 0..n
            grid = self._grid(n + 1, step)
            if grid[-1] == 0 and n * step > c:  # a < 2**-64 from the last grid point on
                break
            end *= 2
        self.n = n
        g = np.array([min(v, _M64) for v in grid], dtype=np.uint64)
        if step == 1:
            low = high = g[:-1]
        else:
            # a rises on buckets ending at or below c and falls on buckets starting at or above it.
            rising = np.array([(i + 1) * step <= c for i in range(n)])
            falling = np.array([i * step >= c for i in range(n)])
            low = np.where(rising, g[:-1], np.where(falling, g[1:], np.minimum(g[:-1], g[1:])))
            high = np.where(rising, g[1:], np.where(falling, g[:-1], np.uint64(0)))
            for i in np.flatnonzero(~rising & ~falling):  # the bucket holding the peak c
                top = max(self.floor_threshold(k) for k in (math.floor(c), math.ceil(c)))
                high[i] = min(top, _M64)
        # Sentinel bucket n: every k >= n * step has a(k) < 2**-64.
        self.low = np.append(low, np.uint64(0)).astype(np.uint64)
        self.high = np.append(high, np.uint64(0)).astype(np.uint64)
        self.exact = step == 1

    def gamma(self, k: int) -> Fraction:
        """``(k - sigma2/t)**2 / (2 sigma2)``, exactly."""
        d = k - self.peak
        return d * d / (2 * self.sigma2)

    def floor_threshold(self, k: int) -> int:
        """``floor(2**64 a(k))`` (``2**64`` when ``a(k) = 1``)."""
        g = self.gamma(k)
        return 1 << 64 if g == 0 else floor_exp_neg(g, 64)

    def _grid(self, count: int, step: int) -> list[int]:
        """``floor(2**64 a(i step))`` for ``i < count`` by an interval recurrence (directed rounding)."""
        s2, c = self.sigma2, self.peak
        prec = 160 + 2 * count.bit_length()
        one = 1 << prec
        lo, hi = exp_bounds(-c * c / (2 * s2), prec)  # a(0)
        e_lo, e_hi = exp_bounds((2 * step * c - step * step) / (2 * s2), prec)
        r_lo, r_hi = exp_bounds(Fraction(-step * step) / s2, prec)
        p_lo = p_hi = one  # G**i
        shift = prec - 64
        out = []
        for i in range(count):
            f_lo, f_hi = lo >> shift, hi >> shift
            out.append(f_lo if f_lo == f_hi else self.floor_threshold(i * step))
            lo = (((lo * e_lo) >> prec) * p_lo) >> prec  # rounded down
            hi = -((-hi * e_hi) >> prec)  # rounded up
            hi = -((-hi * p_hi) >> prec)
            p_lo = (p_lo * r_lo) >> prec
            p_hi = -((-p_hi * r_hi) >> prec)
        return out

    def decide(self, k: int, w: int, draw) -> bool:
        """Exact ``U < a(k)`` for ``U`` with first digit word ``w`` (further words from ``draw``)."""
        g = self.gamma(k)
        if g == 0:
            return True
        threshold = _threshold(g, 64)
        if w != threshold:
            return w < threshold
        level = 2
        while True:  # tie: compare the next 64-bit digits of U and of a(k)
            u = int(draw(1)[0])
            digit = _threshold(g, 64 * level) & _M64
            if u != digit:
                return u < digit
            level += 1


@lru_cache(maxsize=4096)
def _threshold(gamma: Fraction, bits: int) -> int:
    return floor_exp_neg(gamma, bits)


class _Sampler:
    """CKS Algorithm 3 for one ``sigma2``, vectorized over rounds of proposals."""

    def __init__(self, sigma2: Fraction) -> None:
        self.t = _floor_sigma(sigma2) + 1
        self.laplace = laplace_sampler(Fraction(self.t))
        self.accept = _Acceptance(sigma2, self.t)
        # Expected acceptance rate (float, only to size the rounds):
        # sum_z exp(-z**2/(2 s)) exp(-s/(2 t**2)) / sum_y exp(-|y|/t).
        p = math.exp(-1.0 / self.t)
        rate = _normalizer(float(sigma2)) * math.exp(-float(sigma2) / (2.0 * self.t**2)) * (1 - p) / (1 + p)
        self.rate = min(max(rate, 0.05), 1.0)

    def propose(self, m: int, draw, buf: np.ndarray | None) -> np.ndarray:
        """Accepted values among ``m`` proposals, in proposal order."""
        y = self.laplace.sample_words(draw(m, out=buf), draw)
        w = draw(m, out=buf)
        acc = self.accept
        # The bucket bounds are looked up block by block (temporaries of one block); the proposals
        # the bounds leave unsure are decided afterwards in proposal order, drawing the same words.
        accept = np.empty(m, dtype=np.bool_)
        size = min(m, BLOCK)
        bucket, bound = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.uint64)
        unsure_at: list[np.ndarray] = []
        for start in range(0, m, BLOCK):
            yb, wb = y[start : start + BLOCK], w[start : start + BLOCK]
            n = yb.size
            b = np.abs(yb, out=bucket[:n])
            if acc.shift:
                np.right_shift(b, acc.shift, out=b)
            np.minimum(b, acc.n, out=b)  # bucket; n = beyond the table
            low = np.take(acc.low, b, out=bound[:n], mode="clip")  # b <= n: always in range
            ok = np.less(wb, low, out=accept[start : start + n])
            if acc.exact:
                unsure = wb == low
            else:
                unsure = ~ok
                unsure &= wb <= np.take(acc.high, b, out=bound[:n], mode="clip")
            if unsure.any():
                unsure_at.append(np.flatnonzero(unsure) + start)
        if unsure_at:
            for i in np.concatenate(unsure_at):  # ties (2**-64) or narrow uncertain bands
                accept[i] = acc.decide(int(abs(y[i])), int(w[i]), draw)
        return y[accept]


@lru_cache(maxsize=32)
def _sampler(sigma2: Fraction) -> _Sampler:
    return _Sampler(sigma2)


def discrete_gaussian(
    sigma2: Fraction | int | float,
    size: int | tuple[int, ...],
    *,
    rng: RngLike = None,
) -> np.ndarray:
    """Draw exact discrete Gaussian noise, ``P(z) ∝ exp(-z**2 / (2 sigma2))`` on the integers.

    Parameters
    ----------
    sigma2 : Fraction, int or float
        ``sigma**2 > 0``, normally ``Delta_2**2 / (2 rho)`` from
        :meth:`pandas_dp.privacy.loss.ZCDP.noise` (floats are read through their
        shortest repr; a denominator above ``2**64`` is rounded up). At most
        ``2**100``.
    size : int or tuple of int
        Output shape.
    rng : None, SecureRandom or numpy.random.Generator, optional
        As for :func:`pandas_dp.noise.laplace.discrete_laplace`: ``None`` is the
        secure AES-256-CTR source; a seeded Generator makes draws reproducible
        (predictable, so not for production releases).

    Returns
    -------
    numpy.ndarray
        ``int64`` array of shape ``size``.

    Raises
    ------
    ParameterError
        If ``sigma2`` is not a positive number at most ``2**100``, ``size`` is
        not a non-negative shape, or ``rng`` is of the wrong type.

    Notes
    -----
    Canonne, Kamath and Steinke's Algorithm 3: discrete Laplace proposals of
    scale ``t = floor(sigma) + 1``, accepted with probability
    ``exp(-(|Y| - sigma2/t)**2 / (2 sigma2))`` by an exact comparison of
    uniform words with certified thresholds (module docstring). The expected
    number of proposals per sample is below 2.

    References
    ----------
    Canonne, Kamath, Steinke (2020), "The discrete Gaussian for differential
    privacy", Algorithm 3.

    Examples
    --------
    >>> discrete_gaussian(Fraction(4), 6, rng=np.random.default_rng(0))
    array([ 1, -2,  1,  2,  0,  2])
    >>> discrete_gaussian(Fraction(9, 2), (2, 3)).shape  # secure source
    (2, 3)
    """
    s2 = _as_sigma2(sigma2)
    shape = as_shape(size)
    draw = word_source(rng)
    out = np.empty(math.prod(shape), dtype=np.int64)
    _gaussian_into(s2, out, draw, add=False)
    return out.reshape(shape)


def add_discrete_gaussian(sigma2: Fraction | int | float, values: np.ndarray, *, rng: RngLike = None) -> np.ndarray:
    """Add exact discrete Gaussian noise to ``values`` in place; returns ``values``.

    Parameters
    ----------
    sigma2 : Fraction, int or float
        ``sigma**2 > 0``, as for :func:`discrete_gaussian`.
    values : numpy.ndarray
        A writeable ``int64`` array; every element gets one independent draw.
    rng : None, SecureRandom or numpy.random.Generator, optional
        As for :func:`discrete_gaussian`.

    Returns
    -------
    numpy.ndarray
        ``values`` itself, now ``values + discrete_gaussian(sigma2, values.shape, rng=rng)``.

    Raises
    ------
    ParameterError
        If ``values`` is not a writeable int64 array, or ``sigma2`` / ``rng`` is invalid.

    Notes
    -----
    The draws are exactly those :func:`discrete_gaussian` returns for the
    same ``rng`` state, in C order (same rounds of proposals, same words):
    accepted values are added round by round, so no noise array of the full
    size is made.

    Examples
    --------
    >>> add_discrete_gaussian(Fraction(4), np.array([10, 20, 30, 40, 50, 60]), rng=np.random.default_rng(0))
    array([11, 18, 31, 42, 50, 62])
    """
    s2 = _as_sigma2(sigma2)
    flat = writeable_int64(values)
    _gaussian_into(s2, flat, word_source(rng), add=True)
    return values


def _gaussian_into(s2: Fraction, flat: np.ndarray, draw: Any, *, add: bool) -> None:
    """Write (``add=False``) or add (``add=True``) one exact draw into each element of the 1-D ``flat``.

    Rounds of proposals are sized from the number of values still missing,
    so writing and adding consume the same words in the same order.
    """
    total = flat.size
    if total == 0:
        return
    sampler = _sampler(s2)
    buf = np.empty(_CHUNK + 2, dtype=np.uint64)
    filled = 0
    while filled < total:
        need = total - filled
        m = min(_CHUNK, int(need / sampler.rate * 1.02) + 64)
        got = sampler.propose(m, draw, buf)
        take = min(got.size, need)
        if add:
            flat[filled : filled + take] += got[:take]
        else:
            flat[filled : filled + take] = got[:take]
        filled += take
        del got  # one round of proposals alive at a time


# ----------------------------------------------------------- variance ----
def _normalizer(s: float) -> float:
    """``sum_z exp(-z**2 / (2 s))`` in floating point (direct sum for ``s < 1``, Poisson form above)."""
    if s < 1.0:
        z = np.arange(1, 40)
        return 1.0 + 2.0 * math.fsum(np.exp(-(z * z) / (2.0 * s)))
    k = np.arange(1, 4)
    return math.sqrt(2.0 * math.pi * s) * (1.0 + 2.0 * math.fsum(np.exp(-2.0 * math.pi**2 * s * k * k)))


def discrete_gaussian_variance(sigma2: Fraction | int | float) -> float:
    """Exact variance of the discrete Gaussian ``N_Z(0, sigma2)``, to float precision.

    Parameters
    ----------
    sigma2 : Fraction, int or float
        ``sigma**2 > 0`` (rounded as in :func:`discrete_gaussian`).

    Returns
    -------
    float
        ``sum_z z**2 exp(-z**2/(2 s)) / sum_z exp(-z**2/(2 s))`` with ``s = sigma2``.
        It is below ``sigma2`` and equals it up to a relative
        ``4 pi**2 s exp(-2 pi**2 s)`` (``1e-7`` at ``s = 1``).

    Notes
    -----
    For ``s < 1`` the sums are added directly (terms below ``exp(-780)``
    from ``|z| = 40`` on are dropped). For ``s >= 1`` the Poisson summation
    formula gives, with ``q_k = exp(-2 pi**2 s k**2)``,

    .. math:: \\mathrm{Var} = s \\frac{1 + 2 \\sum_{k \\ge 1} (1 - 4\\pi^2 s k^2) q_k}{1 + 2 \\sum_{k \\ge 1} q_k},

    whose terms beyond ``k = 3`` are below ``exp(-300)`` relative.
    Both forms are sums of positive terms in double precision (relative
    error a few ``1e-16``).

    References
    ----------
    Canonne, Kamath, Steinke (2020), Section 2.2 (variance below ``sigma2``,
    Poisson summation).

    Examples
    --------
    >>> round(discrete_gaussian_variance(Fraction(1, 4)), 12)
    0.215012675088
    >>> discrete_gaussian_variance(100) == 100.0
    True
    """
    s = float(_as_sigma2(sigma2))
    if s < 1.0:
        z = np.arange(1, 40, dtype=np.float64)
        terms = np.exp(-(z * z) / (2.0 * s))
        return 2.0 * math.fsum(z * z * terms) / (1.0 + 2.0 * math.fsum(terms))
    k = np.arange(1, 4, dtype=np.float64)
    q = np.exp(-2.0 * math.pi**2 * s * k * k)
    num = 1.0 + 2.0 * math.fsum((1.0 - 4.0 * math.pi**2 * s * k * k) * q)
    return s * num / (1.0 + 2.0 * math.fsum(q))


# ----------------------------------------------------------- quantile ----
def discrete_gaussian_quantile(sigma2: Fraction | int | float, q: float | Fraction) -> int:
    """Smallest integer ``z`` with ``P(Z <= z) >= q`` for ``Z ~ N_Z(0, sigma2)``, never below it.

    Parameters
    ----------
    sigma2 : Fraction, int or float
        ``sigma**2 > 0`` (rounded as in :func:`discrete_gaussian`).
    q : float or Fraction
        Probability, ``0 < q < 1`` (a float is taken at its exact binary value).

    Returns
    -------
    int
        The exact quantile, except when ``q`` lies within a certified error
        band around a CDF value (relative width about ``1e-45`` for direct
        sums, below ``1e-10`` where Euler-Maclaurin is used); there the next
        integer is returned. The result is never below the true quantile.

    Raises
    ------
    ParameterError
        If ``q`` is not in ``(0, 1)`` or ``sigma2`` is invalid.

    Notes
    -----
    ``P(Z >= m)`` is bracketed in interval arithmetic
    (:mod:`pandas_dp.noise.gaussian_tail`): by direct summation of the pmf with a
    geometric bound on the rest (``sigma < 16``, and deep tails), and by the
    Euler-Maclaurin formula with a bounded remainder and Poisson summation
    for the normalizer otherwise. For ``q > 1/2`` the answer is ``m - 1``
    with ``m`` a value whose *upper* bound satisfies ``P(Z >= m) <= 1 - q``;
    for ``q <= 1/2`` it is ``-m`` with ``m`` a value whose *lower* bound
    satisfies ``P(Z >= m) >= q`` (symmetry ``P(Z <= -m) = P(Z >= m)``).
    For symmetric intervals, ``P(|Z| <= c) = 2 P(Z <= c) - 1``, so the
    ``(1 + level) / 2`` quantile is the smallest radius with coverage at least
    ``level``.

    Examples
    --------
    >>> discrete_gaussian_quantile(Fraction(1), 0.975)
    2
    >>> discrete_gaussian_quantile(100, 0.975), discrete_gaussian_quantile(100, 0.025)
    (20, -20)
    """
    return certified_quantile(_as_sigma2(sigma2), as_probability(q))
