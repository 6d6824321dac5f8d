"""Certified bounds on discrete Gaussian tails ``P(Z >= m)`` and the quantiles they give.

``Z ~ N_Z(0, s)``, ``f(x) = exp(-x**2 / (2 s))``, ``D = sum_z f(z)``,
``S(m) = sum_{k >= m} f(k)`` and ``G(m) = P(Z >= m) = S(m) / D``.

Interval arithmetic in :mod:`decimal`: lower ends are computed in a context
rounding toward ``-inf`` and upper ends toward ``+inf`` (``+ - * /`` are
correctly rounded in the context's direction); ``exp`` and ``sqrt`` are
correctly rounded to nearest, so their neighbours ``next_minus``/``next_plus``
bracket the true value. ``pi`` comes from Machin's formula with its
alternating-series error bound.

*Small s* (``s < 256``): ``S(m)`` and ``D = 1 + 2 S(1)`` are summed term by
term until the tail bound ``f(K+1) / (1 - exp(-(2K+3)/(2s)))`` (the ratio of
successive terms beyond ``K`` is at most that exponential) is below
``10**-(prec-5)`` of the partial sum.

*Large s*: ``D = sqrt(2 pi s) theta`` (Poisson summation,
``1 <= theta <= 1 + 4 exp(-2 pi**2 s) < 1 + 10**-2000``) and, for integer
``a >= 1``, the Euler-Maclaurin formula to order ``p = 5``:

    S(a) = I(a) + f(a)/2 - f'(a)/12 + f'''(a)/720 + R,
    |R| <= 2 zeta(5) / (2 pi)**5 * int_a^inf |f^(5)|
        <= f(a) / 4700 * (a**4/s**4 + 14 a**2/s**3 + 43/s**2),

using ``|f^(5)(x)| <= f(x) (x**5/s**5 + 10 x**3/s**4 + 15 x/s**3)`` and
``int_a^inf x**(2j+1) f = s f(a) P_j(a)`` in closed form. The integral is
``I(a) = sqrt(pi s / 2) - a f(a) sum_{n >= 0} (a**2/s)**n / (2n+1)!!`` (the
series of ``erf``, positive terms, its tail bounded geometrically), evaluated
with enough digits to absorb the cancellation.

References
----------
Canonne, Kamath, Steinke (2020), "The discrete Gaussian for differential
privacy" (Poisson summation for the normalizer); Apostol (1999), "An
elementary view of Euler's summation formula", Amer. Math. Monthly 106
(remainder bound with periodic Bernoulli functions,
``|B_p({x})| / p! <= 2 zeta(p) / (2 pi)**p``); Abramowitz and Stegun 7.1.6
(series of ``erf``).
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Context, Decimal
from fractions import Fraction
from functools import lru_cache

from scipy.special import ndtri

__all__ = ["certified_quantile", "tail_bounds"]

_DIRECT_BELOW = Fraction(256)  # sum the pmf directly for s < 256 (sigma < 16)
_DIGITS = 50  # working digits before cancellation allowance
_REMAINDER = Fraction(1, 4700)  # >= 2 zeta(5) / (2 pi)**5 = 2.1178e-4
_NEGLIGIBLE = Decimal("1e-100000")  # far below the smallest float probability (5e-324)


class _Arith:
    """Directed-rounding decimal interval arithmetic at ``prec`` digits (intervals are pairs)."""

    def __init__(self, prec: int) -> None:
        kw = {"prec": prec, "Emin": -(10**7), "Emax": 10**7}
        self.down = Context(rounding=ROUND_FLOOR, **kw)
        self.up = Context(rounding=ROUND_CEILING, **kw)
        self.near = Context(rounding=ROUND_HALF_EVEN, **kw)
        self.prec = prec

    def frac(self, x: Fraction) -> tuple[Decimal, Decimal]:
        n, d = Decimal(x.numerator), Decimal(x.denominator)
        return self.down.divide(n, d), self.up.divide(n, d)

    def add(self, a, b):
        return self.down.add(a[0], b[0]), self.up.add(a[1], b[1])

    def sub(self, a, b):
        return self.down.subtract(a[0], b[1]), self.up.subtract(a[1], b[0])

    def mul(self, a, b):  # non-negative intervals
        return self.down.multiply(a[0], b[0]), self.up.multiply(a[1], b[1])

    def div(self, a, b):  # non-negative a, positive b
        return self.down.divide(a[0], b[1]), self.up.divide(a[1], b[0])

    def exp_neg(self, x: Fraction):
        """``exp(-x)`` for rational ``x >= 0``."""
        lo, hi = self.frac(x)
        return (self.down.next_minus(self.near.exp(-hi)), self.up.next_plus(self.near.exp(-lo)))

    def sqrt(self, a):
        return (self.down.next_minus(self.near.sqrt(a[0])), self.up.next_plus(self.near.sqrt(a[1])))


@lru_cache(maxsize=8)
def _pi(digits: int) -> tuple[int, int]:
    """Integers ``lo <= 10**digits * pi <= hi`` (Machin: pi = 16 atan(1/5) - 4 atan(1/239))."""
    scale = 10 ** (digits + 10)

    def atan_inv(k: int) -> tuple[int, int]:
        # Alternating series with decreasing terms: the error is below the first omitted term;
        # each floor division loses less than one unit.
        total, n, power = 0, 0, k
        while True:
            term = scale // ((2 * n + 1) * power)
            if term == 0:
                break
            total += -term if n % 2 else term
            n += 1
            power *= k * k
        return total - n - 1, total + n + 1

    a_lo, a_hi = atan_inv(5)
    b_lo, b_hi = atan_inv(239)
    lo, hi = 16 * a_lo - 4 * b_hi, 16 * a_hi - 4 * b_lo
    return lo // 10**10, -((-hi) // 10**10)


class _Tail:
    """``G(m) = P(Z >= m)`` bracketed for one ``s``."""

    def __init__(self, s: Fraction) -> None:
        self.s = s
        self.direct = s < _DIRECT_BELOW
        if self.direct:
            self.ar = _Arith(_DIGITS)
            self.terms: list[tuple[Decimal, Decimal]] = []
            self.norm = None
            one = (Decimal(1), Decimal(1))
            s1 = self._direct_sum(1, self.ar)
            self.norm = self.ar.add(one, self.ar.add(s1, s1))

    # -- small s ---------------------------------------------------------------
    def _term(self, k: int, ar: _Arith):
        while len(self.terms) <= k:
            j = len(self.terms)
            self.terms.append(ar.exp_neg(Fraction(j * j) / (2 * self.s)))
        return self.terms[k]

    def _direct_sum(self, m: int, ar: _Arith):
        total = (Decimal(0), Decimal(0))
        k = m
        while True:
            total = ar.add(total, self._term(k, ar))
            k += 1
            if k - m >= 8:
                # Remainder sum_{j >= k} f(j) <= f(k) / (1 - exp(-(2k+1)/(2s))).
                ratio = ar.exp_neg(Fraction(2 * k + 1) / (2 * self.s))
                rest_hi = ar.up.divide(self._term(k, ar)[1], ar.down.subtract(Decimal(1), ratio[1]))
                # Stop when the rest is negligible relative to the sum, or below any
                # probability a float can hold (tiny s, where terms underflow).
                if rest_hi <= total[0].scaleb(-(ar.prec - 5)) or rest_hi < _NEGLIGIBLE:
                    return max(total[0], Decimal(0)), ar.up.add(total[1], rest_hi)

    # -- large s ---------------------------------------------------------------
    def _em(self, a: int):
        s = self.s
        x2 = Fraction(a * a) / s  # a**2 / s
        # Digits lost to the cancellation in I(a): log10(sqrt(pi s/2) / I(a)) <= 0.4343 a**2/(2s) + ...
        extra = int(0.4343 * float(x2) / 2 + math.log10(2 + float(x2))) + 5
        ar = _Arith(_DIGITS + extra)
        fa = ar.exp_neg(x2 / 2)
        # J = sum_n (a**2/s)**n / (2n+1)!!, positive terms, ratio x2/(2n+3) decreasing.
        y = ar.frac(x2)
        term = (Decimal(1), Decimal(1))
        total = term
        n = 0
        while True:
            den = Decimal(2 * n + 3)
            term = (ar.down.divide(ar.down.multiply(term[0], y[0]), den),
                    ar.up.divide(ar.up.multiply(term[1], y[1]), den))
            n += 1
            ratio = x2 / (2 * n + 3)  # bounds every later ratio
            if ratio < Fraction(1, 2) and term[1] <= total[0].scaleb(-(ar.prec + 2)):
                rest = ar.up.divide(term[1], ar.down.subtract(Decimal(1), ar.frac(ratio)[1]))
                total = (total[0], ar.up.add(total[1], rest))
                break
            total = ar.add(total, term)
        digits = ar.prec + 10
        pi_lo, pi_hi = _pi(digits)
        pi = (ar.down.divide(Decimal(pi_lo), Decimal(10) ** digits), ar.up.divide(Decimal(pi_hi), Decimal(10) ** digits))
        half_s = ar.frac(s / 2)
        root = ar.sqrt(ar.mul(pi, half_s))  # sqrt(pi s / 2)
        inner = ar.mul(ar.mul((Decimal(a), Decimal(a)), fa), total)
        integral = ar.sub(root, inner)
        integral = (max(integral[0], Decimal(0)), integral[1])
        u = Fraction(a) / s
        core = Fraction(1, 2) + u / 12 + (3 * u / s - u**3) / 720
        err = _REMAINDER * (u**4 + 14 * u * u / s + Fraction(43) / (s * s))
        coef = (ar.frac(core - err)[0], ar.frac(core + err)[1])
        tail = ar.add(integral, ar.mul(fa, coef))
        two_pi_s = ar.mul(pi, ar.frac(2 * s))
        norm = ar.sqrt(two_pi_s)
        theta_hi = ar.up.add(Decimal(1), Decimal("1e-2000"))
        norm = (norm[0], ar.up.multiply(norm[1], theta_hi))
        return ar.div(tail, norm)

    def bounds(self, m: int) -> tuple[Fraction, Fraction]:
        """Rationals ``lo <= P(Z >= m) <= hi`` for integer ``m >= 1``."""
        if self.direct:
            lo, hi = self.ar.div(self._direct_sum(m, self.ar), self.norm)
        else:
            lo, hi = self._em(m)
        return Fraction(lo), Fraction(hi)


@lru_cache(maxsize=64)
def _tail(s: Fraction) -> _Tail:
    return _Tail(s)


def tail_bounds(s: Fraction, m: int) -> tuple[Fraction, Fraction]:
    """Certified ``lo <= P(Z >= m) <= hi`` for ``Z ~ N_Z(0, s)`` and integer ``m >= 1``."""
    return _tail(s).bounds(m)


def certified_quantile(s: Fraction, q: Fraction) -> int:
    """Smallest ``z`` with ``P(Z <= z) >= q`` (``0 < q < 1``), or an integer above it within the bounds' band.

    ``q > 1/2``: ``m - 1`` for the smallest ``m >= 1`` found with ``hi(G(m)) <= 1 - q``
    (then ``P(Z <= m - 1) = 1 - G(m) >= q``). ``q <= 1/2``: ``-m`` for the largest
    ``m >= 1`` found with ``lo(G(m)) >= q`` (then ``P(Z <= -m) = G(m) >= q``), else 0
    (``P(Z <= 0) > 1/2``). The search starts at the continuous normal quantile.
    """
    tail = _tail(s)
    sigma = math.sqrt(s)
    if q > Fraction(1, 2):
        r = 1 - q
        guess = -sigma * float(ndtri(float(r)))
        m = max(1, int(round(guess)) + 1)
        if tail.bounds(m)[1] <= r:
            while m > 1 and tail.bounds(m - 1)[1] <= r:
                m -= 1
        else:
            m += 1
            while tail.bounds(m)[1] > r:
                m += 1
        return m - 1
    guess = -sigma * float(ndtri(float(q)))
    m = max(1, int(round(guess)))
    if tail.bounds(m)[0] >= q:
        while tail.bounds(m + 1)[0] >= q:
            m += 1
        return -m
    m -= 1
    while m >= 1 and tail.bounds(m)[0] < q:
        m -= 1
    return -m if m >= 1 else 0
