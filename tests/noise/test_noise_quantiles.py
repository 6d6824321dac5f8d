"""Exact noise quantiles and single-cell interval coverage (discrete Laplace and discrete Gaussian)."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pandas_dp.noise.gaussian_tail as _gaussian_tail
from pandas_dp.noise.discrete_gaussian import discrete_gaussian_quantile
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import DiscreteGaussian, DiscreteLaplace
from pandas_dp.noise.laplace import discrete_laplace_quantile

PREC = 70
GAP = Decimal("1e-45")  # the reference must decide each comparison by more than this


def dec(x: Fraction) -> Decimal:
    return Decimal(x.numerator) / Decimal(x.denominator)


# --------------------------------------------------------- references ----
def laplace_cdf(t: Fraction, z: int) -> Decimal:
    """F(z) of the discrete Laplace at 70 digits, straight from the closed form."""
    p = (-dec(1 / t)).exp()
    if z < 0:
        return (-dec(Fraction(-z) / t)).exp() / (1 + p)
    return 1 - (-dec(Fraction(z + 1) / t)).exp() / (1 + p)


def ref_quantile(cdf, q: Fraction, lo: int, hi: int) -> int:
    """Smallest z in [lo, hi] with cdf(z) >= q (bisection), asserting the reference is unambiguous."""
    qd = dec(q)
    assert cdf(lo) < qd <= cdf(hi)
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        if cdf(mid) >= qd:
            hi = mid
        else:
            lo = mid
    # Both comparisons that define the answer are clear at 70 digits.
    assert cdf(hi) - qd > GAP * qd and qd - cdf(hi - 1) > GAP * qd
    return hi


def ref_laplace_quantile(t: Fraction, q: Fraction) -> int:
    with localcontext() as ctx:
        ctx.prec = PREC
        span = int(t * 800) + 10  # F(-span) < e**-800 < any float q
        return ref_quantile(lambda z: laplace_cdf(t, z), q, -span, span)


@lru_cache(maxsize=None)
def gaussian_terms(s: Fraction, half: int) -> tuple[list[Decimal], Decimal]:
    """exp(-k**2/(2s)) for k = 0..half by the recurrence e_{k+1} = e_k exp(-(2k+1)/(2s)), and their suffix sums."""
    with localcontext() as ctx:
        ctx.prec = PREC
        r = (-dec(1 / (2 * s))).exp()
        q2 = (-dec(1 / s)).exp()
        terms, e, step = [], Decimal(1), r
        for _ in range(half + 1):
            terms.append(e)
            e *= step
            step *= q2
        suffix = [Decimal(0)] * (half + 2)
        for k in range(half, -1, -1):
            suffix[k] = suffix[k + 1] + terms[k]
        return suffix, terms[0] + 2 * suffix[1]


def ref_gaussian_quantile(s: Fraction, q: Fraction, width: int) -> int:
    """Brute force over |z| <= width sigma + 20: F(z) = 1 - G(z+1), F(-m) = G(m), G(m) = S(m)/D."""
    half = int(width * math.sqrt(s)) + 20
    suffix, norm = gaussian_terms(s, half)

    def cdf(z: int) -> Decimal:
        with localcontext() as ctx:
            ctx.prec = PREC
            return 1 - suffix[z + 1] / norm if z >= 0 else suffix[-z] / norm

    with localcontext() as ctx:
        ctx.prec = PREC
        return ref_quantile(cdf, q, -half + 1, half - 1)


Q_NEAR_HALF = [0.5, 0.5 + 2**-40, 0.5 - 2**-40, 0.5 + 1e-4, 0.5 - 1e-4]
Q_NEAR_ONE = [0.9, 0.975, 0.995, 1 - 1e-10, 1 - 2**-53]
Q_LOW = [0.1, 0.025, 1e-10, 1e-30]
Q_GRID = Q_NEAR_HALF + [0.6, 0.75, 0.3] + Q_NEAR_ONE + Q_LOW


# ----------------------------------------------------------- Laplace ----
@pytest.mark.parametrize("t", [Fraction(1, 10), Fraction(1, 2), Fraction(1), Fraction(10, 3), Fraction(20),
                               Fraction(1000), Fraction(10**6 + 1, 7)])
def test_laplace_quantile_matches_brute_force(t):
    for q in Q_GRID + [1e-300]:
        assert discrete_laplace_quantile(t, q) == ref_laplace_quantile(t, Fraction(q)), q


@given(st.floats(min_value=1e-12, max_value=1 - 1e-12, exclude_min=True, exclude_max=True),
       st.sampled_from([Fraction(1, 3), Fraction(2), Fraction(77, 5), Fraction(500)]))
@settings(max_examples=60, deadline=None)
def test_laplace_quantile_matches_brute_force_random_q(q, t):
    assert discrete_laplace_quantile(t, q) == ref_laplace_quantile(t, Fraction(q))


def test_laplace_quantile_huge_and_tiny_scales():
    # t = 2**-32: p = exp(-2**32), F(-1) < q < F(0) for every float q in (0, 1).
    assert discrete_laplace_quantile(Fraction(1, 2**32), 5e-324) == 0
    assert discrete_laplace_quantile(Fraction(1, 2**32), 1 - 2**-53) == 0
    # t = 2**50: the float start is off by a few units; the exact steps still land on F(z-1) < q <= F(z).
    z = discrete_laplace_quantile(2**50, 0.975)
    with localcontext() as ctx:
        ctx.prec = PREC
        assert laplace_cdf(Fraction(2**50), z) >= dec(Fraction(0.975)) > laplace_cdf(Fraction(2**50), z - 1)


# ---------------------------------------------------------- Gaussian ----
@pytest.mark.parametrize("s", [Fraction(1, 4), Fraction(1), Fraction(10, 3), Fraction(9), Fraction(100),
                               Fraction(255), Fraction(256), Fraction(1000), Fraction(10**4)])
def test_gaussian_quantile_matches_brute_force(s):
    for q in Q_GRID:
        assert discrete_gaussian_quantile(s, q) == ref_gaussian_quantile(s, Fraction(q), 20), q


@pytest.mark.parametrize("s", [Fraction(1, 4), Fraction(2), Fraction(300)])
def test_gaussian_quantile_deep_tails(s):
    for q in (1e-100, 1e-300, 5e-324):
        assert discrete_gaussian_quantile(s, q) == ref_gaussian_quantile(s, Fraction(q), 40), q


@given(st.floats(min_value=1e-9, max_value=1 - 1e-9),
       st.sampled_from([Fraction(1, 3), Fraction(5), Fraction(77, 2), Fraction(400), Fraction(2500)]))
@settings(max_examples=60, deadline=None)
def test_gaussian_quantile_matches_brute_force_random_q(q, s):
    assert discrete_gaussian_quantile(s, q) == ref_gaussian_quantile(s, Fraction(q), 20)


def test_gaussian_tail_bounds_bracket_the_reference():
    # Both methods (direct sum below s = 256, Euler-Maclaurin above) bracket the brute-force tail.
    # 10**5: Euler-Maclaurin for m up to 1580, direct sums beyond.
    for s, ms in [(Fraction(3), (1, 2, 7, 20)), (Fraction(255), (1, 16, 40, 200)), (Fraction(257), (1, 16, 40, 200)),
                  (Fraction(10**4), (1, 50, 196, 500, 1500)), (Fraction(10**5), (1, 316, 632, 1580, 3000))]:
        suffix, norm = gaussian_terms(s, int(40 * math.sqrt(s)) + 20)  # truncation below e**-800
        for m in ms:
            lo, hi = _gaussian_tail.tail_bounds(s, m)
            with localcontext() as ctx:
                ctx.prec = PREC
                assert dec(lo) <= suffix[m] / norm <= dec(hi), (s, m)
            assert hi - lo <= hi * Fraction(1, 10**9)  # tight: exact quantiles except in a tiny band


def test_gaussian_quantile_huge_sigma():
    # sigma = 2**50: the continuous normal quantile times sigma, to within a few units.
    s = Fraction(2**100)
    z = discrete_gaussian_quantile(s, 0.975)
    assert abs(z - 1.959963984540054 * 2**50) < 2**50 * 1e-12
    assert discrete_gaussian_quantile(s, 0.025) == -z


def test_gaussian_pi_bounds():
    lo, hi = _gaussian_tail._pi(60)
    assert lo <= 3141592653589793238462643383279502884197169399375105820974944 <= hi
    assert hi - lo <= 2


# ----------------------------------------------------------- symmetry ----
@pytest.mark.parametrize("noise", [DiscreteLaplace(Fraction(1)), DiscreteLaplace(Fraction(10, 3)),
                                   DiscreteLaplace(Fraction(1000)), DiscreteGaussian(Fraction(1, 4)),
                                   DiscreteGaussian(Fraction(9)), DiscreteGaussian(Fraction(10**4))])
def test_symmetry(noise):
    # Symmetric noise: F(z) + F(-z-1) = 1, so Q(1-q) = -Q(q) unless q equals a CDF value
    # (impossible: the CDF values are irrational). For q in [1/2, 1), 1 - q is exact in floats.
    for q in [0.5, 0.5 + 2**-45, 0.55, 0.8, 0.9, 0.95, 0.975, 0.99, 0.999, 1 - 1e-9, 1 - 2**-53]:
        assert noise.quantile(1 - q) == -noise.quantile(q), q


# ----------------------------------------------------------- validation ----
@pytest.mark.parametrize("bad", [0, 1, 0.0, 1.0, -0.1, 1.5, float("nan"), float("inf"), "x", None, Fraction(1)])
def test_bad_q_raises(bad):
    with pytest.raises(ParameterError, match="q must be a probability"):
        discrete_laplace_quantile(1, bad)
    with pytest.raises(ParameterError, match="q must be a probability"):
        discrete_gaussian_quantile(1, bad)


# ------------------------------------------------------------- coverage ----
def exact_coverage_laplace(t: Fraction, c: int) -> float:
    p = math.exp(-1 / float(t))
    return 1.0 - 2.0 * p ** (c + 1) / (1.0 + p)


def exact_coverage_gaussian(s: Fraction, c: int) -> float:
    z = np.arange(-int(40 * math.sqrt(s)) - 40, int(40 * math.sqrt(s)) + 41, dtype=np.float64)
    w = np.exp(-z * z / (2 * float(s)))
    return math.fsum(w[np.abs(z) <= c]) / math.fsum(w)


@pytest.mark.parametrize("noise, seed", [(DiscreteLaplace(Fraction(1)), 1), (DiscreteLaplace(Fraction(1, 2)), 2),
                                         (DiscreteLaplace(Fraction(10)), 3), (DiscreteGaussian(Fraction(1, 2)), 4),
                                         (DiscreteGaussian(Fraction(2)), 5), (DiscreteGaussian(Fraction(50)), 6)])
@pytest.mark.parametrize("level", [0.9, 0.95])
def test_single_cell_intervals_cover(noise, seed, level):
    radius = noise.interval_radius(level)
    coverage = exact_coverage_laplace if isinstance(noise, DiscreteLaplace) else exact_coverage_gaussian
    param = noise.scale if isinstance(noise, DiscreteLaplace) else noise.sigma2
    # Exact: the radius reaches the level and is the smallest that does (float margin 1e-12).
    assert coverage(param, radius) >= level - 1e-12
    assert coverage(param, radius - 1) < level
    # Simulation: x_hat = x + Z covers x iff |Z| <= radius. With n = 200,000 draws the empirical
    # coverage has sd <= sqrt(0.95 * 0.05 / n) = 4.9e-4; a correct radius (true coverage >= level)
    # falls below level - 4 sd with probability < 4e-5 (fixed seed: deterministic).
    truth = 1234
    x_hat = noise.add(np.full(200_000, truth), np.random.default_rng(seed))
    covered = np.mean(np.abs(x_hat - truth) <= radius)
    assert covered >= level - 4 * math.sqrt(level * (1 - level) / x_hat.size)


def test_normal_approximation_undercovers_where_exact_quantile_does_not():
    # The outside check's 93.4%: at t = 1 (epsilon = 1) the normal radius 1.96 sd = 2.66 covers
    # P(|Z| <= 2) = 0.927 < 0.95; the exact quantile gives radius 3 with coverage 0.973.
    noise = DiscreteLaplace(Fraction(1))
    normal_radius = math.floor(1.959963984540054 * math.sqrt(noise.variance()))
    assert exact_coverage_laplace(Fraction(1), normal_radius) < 0.93
    assert noise.interval_radius(0.95) == 3 and exact_coverage_laplace(Fraction(1), 3) > 0.97


def test_interval_radius_uses_the_exact_level():
    # (1.0 + 0.9) / 2.0 rounds below 19/20 in floats; the radius is taken at exactly 19/20.
    assert Fraction((1.0 + 0.9) / 2.0) < Fraction(19, 20)
    noise = DiscreteGaussian(Fraction(9))
    assert noise.interval_radius(0.9) == discrete_gaussian_quantile(Fraction(9), Fraction(19, 20))
