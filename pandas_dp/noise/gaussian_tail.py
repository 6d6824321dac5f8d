"""Certified bounds on discrete Gaussian tails ``P(Z >= m)`` and the quantiles they give.

``Z ~ N_Z(0, s)``, ``f(x) = exp(-x**2 / (2 s))``, ``D = sum_z f(z)``,
``S(m) = sum_{k >= m} f(k)`` and ``G(m) = P(Z >= m) = S(m) / D``.

Interval arithmetic in :mod:`decimal`: lower ends are computed in a context
rounding toward ``-inf`` and upper ends toward ``+inf`` (``+ - * /`` are
correctly rounded in the context's direction); ``exp`` and ``sqrt`` are
correctly rounded to nearest, so their neighbours ``next_minus``/``next_plus``
bracket the true value. ``pi`` comes from Machin's formula with its
alternating-series error bound.

*Normalizer.* For ``s < 256``, ``D = 1 + 2 S(1)`` summed directly; above,
``D = sqrt(2 pi s) theta`` (Poisson summation,
``1 <= theta <= 1 + 4 exp(-2 pi**2 s) < 1 + 10**-2000``).

*Direct tails.* ``S(m) = f(m) sum_j r_j`` with ``r_0 = 1`` and
``r_(j+1) = r_j C B**j`` (``C = exp(-(2m+1)/(2s))``, ``B = exp(-1/s)``). The
ratios decrease, so the rest from ``j`` on is at most ``r_j / (1 - C B**j)``;
summing stops when that is below ``10**-45`` of the partial sum. Used for all
``m`` when ``s < 256`` and whenever it needs at most 4000 terms (deep tails).

*Euler-Maclaurin tails* (``s >= 256``, ``m`` below about ``0.03 s``): for
integer ``a >= 1``, to order ``p = 5``,

    S(a) = I(a) + f(a)/2 - f'(a)/12 + f'''(a)/720 + R,
    |R| <= 2 zeta(5) / (2 pi)**5 * int_a^inf |f^(5)|
        <= f(a) / 4700 * (a**4/s**4 + 14 a**2/s**3 + 43/s**2),

using ``|f^(5)(x)| <= f(x) (x**5/s**5 + 10 x**3/s**4 + 15 x/s**3)`` and
``int_a^inf x**(2j+1) f = s f(a) P_j(a)`` in closed form. The integral is
``I(a) = sqrt(pi s / 2) - a f(a) sum_{n >= 0} (a**2/s)**n / (2n+1)!!`` (the
series of ``erf``, positive terms, its tail bounded geometrically), evaluated
with enough digits to absorb the cancellation. Where this branch is used the
remainder is below ``1e-10`` of the tail, so a quantile is exact unless ``q``
falls in a band of that relative width around a CDF value (then it is one
above, never below).

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


__all__ = ["certified_quantile", "tail_bounds"]

_DIRECT_BELOW = Fraction(256)  # sum the pmf directly for s < 256 (sigma < 16)
_DIGITS = 50  # working digits before cancellation allowance
_REMAINDER = Fraction(1, 4700)  # >= 2 zeta(5) / (2 pi)**5 = 2.1178e-4
_TINY = Decimal("1e-400")  # tail bounds below this are returned as [0, 10**-400]
_MAX_TERMS = 4000  # direct tail sums up to this many terms, Euler-Maclaurin beyond (s >= 256 only)


class _Arith:
    """Directed-rounding decimal interval arithmetic at ``prec`` digits (intervals are pairs)."""

    def __init__(self, prec: int) -> None:
        self.down = Context(prec=prec, rounding=ROUND_FLOOR, Emin=-(10**7), Emax=10**7)
        self.up = Context(prec=prec, rounding=ROUND_CEILING, Emin=-(10**7), Emax=10**7)
        self.near = Context(prec=prec, rounding=ROUND_HALF_EVEN, Emin=-(10**7), Emax=10**7)
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
        # copy_negate is exact (the unary minus would round to the thread's context precision).
        return (self.down.next_minus(self.near.exp(hi.copy_negate())),
                self.up.next_plus(self.near.exp(lo.copy_negate())))

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


def _pi_interval(ar: _Arith):
    digits = ar.prec + 10
    pi_lo, pi_hi = _pi(digits)
    scale = Decimal(f"1e{digits}")  # exact
    return ar.down.divide(Decimal(pi_lo), scale), ar.up.divide(Decimal(pi_hi), scale)


class _Tail:
    """``G(m) = P(Z >= m)`` bracketed for one ``s``."""

    def __init__(self, s: Fraction) -> None:
        self.s = s
        self.ar = ar = _Arith(_DIGITS)
        if s < _DIRECT_BELOW:
            s1 = self._direct(1)
            self.norm = ar.add((Decimal(1), Decimal(1)), ar.add(s1, s1))  # D = 1 + 2 S(1)
        else:
            # Poisson summation: D = sqrt(2 pi s) theta, 1 <= theta <= 1 + 4 exp(-2 pi**2 s) < 1 + 1e-2000.
            root = ar.sqrt(ar.mul(_pi_interval(ar), ar.frac(2 * s)))
            self.norm = (root[0], ar.up.multiply(root[1], ar.up.add(Decimal(1), Decimal("1e-2000"))))

    def _direct(self, m: int):
        """``S(m) = f(m) sum_j r_j``, ``r_0 = 1``, ``r_(j+1) = r_j C B**j`` (``C = exp(-(2m+1)/(2s))``, ``B = exp(-1/s)``).

        The ratios ``C B**j`` decrease, so the rest from ``j`` on is at most
        ``r_j / (1 - C B**j)``; summing stops once that is below ``10**-(prec-5)``
        of the partial sum.
        """
        ar, s = self.ar, self.s
        one = (Decimal(1), Decimal(1))
        ratio = ar.exp_neg(Fraction(2 * m + 1) / (2 * s))
        b = ar.exp_neg(1 / s)
        r, total, j = one, (Decimal(0), Decimal(0)), 0
        while True:
            total = ar.add(total, r)
            r = ar.mul(r, ratio)
            ratio = ar.mul(ratio, b)
            j += 1
            if j % 8 == 0 or r[1] == 0:
                rest = ar.up.divide(r[1], ar.down.subtract(Decimal(1), ratio[1]))
                if rest <= ar.down.scaleb(total[0], -(ar.prec - 5)):
                    break
        total = (total[0], ar.up.add(total[1], rest))
        fm = ar.exp_neg(Fraction(m * m) / (2 * s))
        lo, hi = ar.mul(fm, total)
        return max(lo, Decimal(0)), hi  # exp may underflow to 0 for tiny s; 0 is a valid lower bound

    def _direct_terms(self, m: int) -> float:
        """About how many terms :meth:`_direct` sums for ``S(m)`` (ratio decay or Gaussian decay)."""
        u = (2 * m + 1) / (2 * float(self.s))
        return min(120 / u, math.sqrt(240 * float(self.s))) + 8

    def _em(self, a: int):
        """``S(a)`` by Euler-Maclaurin to order 5 (module notes), for ``s >= 256``."""
        s = self.s
        x2 = Fraction(a * a) / s  # a**2 / s
        if x2 > 3000:  # G(a) < exp(-1500): a plain geometric bound is enough
            ar = self.ar
            fa = ar.exp_neg(x2 / 2)
            ratio = ar.exp_neg(Fraction(2 * a + 1) / (2 * s))
            return Decimal(0), ar.up.divide(fa[1], ar.down.subtract(Decimal(1), ratio[1]))
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
            if ratio < Fraction(1, 2) and term[1] <= ar.down.scaleb(total[0], -(ar.prec + 2)):
                rest = ar.up.divide(term[1], ar.down.subtract(Decimal(1), ar.frac(ratio)[1]))
                total = (total[0], ar.up.add(total[1], rest))
                break
            total = ar.add(total, term)
        root = ar.sqrt(ar.mul(_pi_interval(ar), ar.frac(s / 2)))  # sqrt(pi s / 2)
        inner = ar.mul(ar.mul((Decimal(a), Decimal(a)), fa), total)
        integral = ar.sub(root, inner)
        integral = (max(integral[0], Decimal(0)), integral[1])
        u = Fraction(a) / s
        core = Fraction(1, 2) + u / 12 + (3 * u / s - u**3) / 720
        err = _REMAINDER * (u**4 + 14 * u * u / s + Fraction(43) / (s * s))
        coef = (ar.frac(core - err)[0], ar.frac(core + err)[1])
        return ar.add(integral, ar.mul(fa, coef))

    def bounds(self, m: int) -> tuple[Fraction, Fraction]:
        """Rationals ``lo <= P(Z >= m) <= hi`` for integer ``m >= 1``."""
        if self.s < _DIRECT_BELOW or self._direct_terms(m) <= _MAX_TERMS:
            tail = self._direct(m)
        else:
            tail = self._em(m)
        lo, hi = self.ar.div(tail, self.norm)
        # A tiny variance (rho = 1e300) gives tails like exp(-1e300): a decimal with an exponent in the
        # millions, whose exact Fraction would take seconds to build. Below 10**-400 the bounds are
        # widened to 0 and 10**-400 (still certified; far below any tail a quantile asks for).
        if hi < _TINY:
            return Fraction(0), Fraction(1, 10**400)
        return (Fraction(0) if lo < _TINY else Fraction(lo)), Fraction(hi)


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
    from scipy.special import ndtri  # a starting guess only; imported on first use (scipy.special: 0.2 s)

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
