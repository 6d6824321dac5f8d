"""Tests of the exact discrete Gaussian sampler and its variance (pandas_dp.noise.discrete_gaussian)."""

from __future__ import annotations

import math
import os
from decimal import ROUND_FLOOR, Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from _secure_source import M64, NumpyWithoutRandom, forked_child_draws, gen_draw, scripted_draw
import pandas_dp.noise.discrete_gaussian as dg
import pandas_dp.noise.laplace as noise
from pandas_dp.noise.csprng import SecureRandom
from pandas_dp.noise.discrete_gaussian import discrete_gaussian, discrete_gaussian_variance
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import ZCDP, DiscreteGaussian, Sensitivity


# ------------------------------------------------------------------ helpers ----
def ref_floor_acceptance(sigma2: Fraction, t: int, k: int, bits: int = 64) -> int:
    """floor(2**bits exp(-(k - sigma2/t)**2 / (2 sigma2))) with decimal at 160 digits, unambiguous."""
    gamma = (k - sigma2 / t) ** 2 / (2 * sigma2)
    with localcontext() as ctx:
        ctx.prec = 160
        scaled = (-(Decimal(gamma.numerator) / Decimal(gamma.denominator))).exp() * Decimal(2) ** bits
        fl = scaled.to_integral_value(rounding=ROUND_FLOOR)
        if gamma != 0:  # irrational: must be far (at 160 digits) from an integer (0 < scaled < 1 is clear)
            assert fl == 0 or scaled - fl > Decimal("1e-100")
            assert fl + 1 - scaled > Decimal("1e-100")
    return int(fl)


def pmf(sigma2: float, support: np.ndarray) -> np.ndarray:
    """Exact pmf (float) on ``support``, normalized over |z| <= 40 sigma + 40 (the rest is below 1e-300)."""
    half = int(40 * math.sqrt(sigma2)) + 40
    z = np.arange(-half, half + 1, dtype=np.float64)
    norm = math.fsum(np.exp(-z * z / (2 * sigma2)))
    s = support.astype(np.float64)
    return np.exp(-s * s / (2 * sigma2)) / norm


def chisquare_dg(z: np.ndarray, sigma2: float) -> float:
    """p-value of a chi-square goodness of fit.

    Values are grouped in blocks of ``width = max(1, floor(sigma / 10))`` consecutive
    integers (single values up to sigma = 20). Bins: ``z < -K``, the blocks covering
    ``[-K, K]``, ``z > K``, with ``K`` chosen so every bin expects at least 20 draws.
    """
    n = z.size
    width = max(1, int(math.sqrt(sigma2) / 10))
    half = int(40 * math.sqrt(sigma2)) + 40
    support = np.arange(-half, half + 1)
    p = pmf(sigma2, support)
    # Blocks [-width/2 + j*width, ...] symmetric around 0: block index of each integer.
    block = np.floor_divide(support + width // 2, width)
    prob = np.bincount(block - block.min(), weights=p)
    centre = -block.min()
    big = np.flatnonzero(n * prob >= 20)
    r = int(min(centre - big.min(), big.max() - centre)) - 1  # blocks -r..r, both ends pooled
    lower = prob[: centre - r].sum()
    upper = prob[centre + r + 1 :].sum()
    expected = n * np.concatenate([[lower], prob[centre - r : centre + r + 1], [upper]])
    zb = np.floor_divide(z + width // 2, width)
    observed = np.bincount(np.clip(zb, -r - 1, r + 1) + r + 1, minlength=2 * r + 3)
    return float(stats.chisquare(observed, expected * (n / expected.sum())).pvalue)


def forced_sampler(sigma2: Fraction, max_buckets: int) -> dg._Sampler:
    """A sampler whose acceptance table uses multi-value buckets (the large-sigma path)."""
    sampler = dg._Sampler(sigma2)
    sampler.accept = dg._Acceptance(sigma2, sampler.t, max_buckets=max_buckets)
    return sampler


def run(sampler: dg._Sampler, n: int, draw) -> np.ndarray:
    out, total = [], 0
    while total < n:
        got = sampler.propose(1 << 16, draw, None)
        out.append(got)
        total += got.size
    return np.concatenate(out)[:n]


# ----------------------------------------------------------- thresholds ----
@pytest.mark.parametrize("sigma2", [Fraction(1, 4), Fraction(1), Fraction(10, 3), Fraction(100), Fraction(12345, 7)])
def test_acceptance_thresholds_match_decimal_reference(sigma2):
    s = dg._sampler(sigma2)
    acc = s.accept
    assert acc.exact and acc.shift == 0 and s.t == math.isqrt(sigma2.numerator // sigma2.denominator) + 1
    ref = [min(ref_floor_acceptance(sigma2, s.t, k), M64) for k in range(acc.n)]
    assert acc.low[:-1].tolist() == ref and acc.high[:-1].tolist() == ref
    # Beyond the table every threshold is 0 (a(k) < 2**-64): the sentinel is exact.
    assert acc.low[-1] == acc.high[-1] == 0
    assert ref_floor_acceptance(sigma2, s.t, acc.n) == 0 and acc.n > sigma2 / s.t


@pytest.mark.parametrize("sigma2, buckets", [(Fraction(100), 8), (Fraction(49, 3), 3), (Fraction(400), 16),
                                             (Fraction(10**4 + 1, 3), 64), (Fraction(9), 2)])
def test_bucket_bounds_bracket_every_threshold(sigma2, buckets):
    # Multi-value buckets (forced at small sigma): L <= floor(2**64 a(k)) <= H for every k, checked by brute force.
    t = math.isqrt(sigma2.numerator // sigma2.denominator) + 1
    acc = dg._Acceptance(sigma2, t, max_buckets=buckets)
    assert acc.shift > 0 and not acc.exact
    step = 1 << acc.shift
    for k in range((acc.n + 1) * step):
        b = min(k >> acc.shift, acc.n)
        exact = min(ref_floor_acceptance(sigma2, t, k), M64)
        assert acc.low[b] <= exact <= acc.high[b], (k, b)


def test_large_sigma_uses_buckets_and_is_bounded():
    acc = dg._sampler(Fraction(10**8)).accept
    assert acc.shift > 0 and acc.n <= dg._MAX_BUCKETS
    # Random k: the bucket bounds bracket the exact threshold.
    rng = np.random.default_rng(0)
    for k in rng.integers(0, (acc.n + 2) << acc.shift, size=200).tolist():
        b = min(k >> acc.shift, acc.n)
        exact = min(ref_floor_acceptance(Fraction(10**8), 10**4 + 1, k), M64)
        assert acc.low[b] <= exact <= acc.high[b]


# ------------------------------------------------------ ties and uncertainty ----
@pytest.mark.parametrize("sigma2, k", [(Fraction(1), 0), (Fraction(1), 2), (Fraction(10, 3), 1), (Fraction(100), 37)])
def test_tie_resolved_by_next_digits(sigma2, k):
    acc = dg._sampler(sigma2).accept
    t = dg._sampler(sigma2).t
    w = ref_floor_acceptance(sigma2, t, k)
    d1 = ref_floor_acceptance(sigma2, t, k, 128) & M64
    d2 = ref_floor_acceptance(sigma2, t, k, 192) & M64
    assert 0 < d1 < M64 and 0 < d2 < M64
    # U = 0.w u1 u2...: U < a(k) iff the first differing digit of U is below a(k)'s.
    assert acc.decide(k, w, scripted_draw([d1 - 1])) is True
    assert acc.decide(k, w, scripted_draw([d1 + 1])) is False
    assert acc.decide(k, w, scripted_draw([d1, d2 - 1])) is True
    assert acc.decide(k, w, scripted_draw([d1, d2 + 1])) is False
    # Away from the threshold no further word is drawn.
    assert acc.decide(k, w - 1, scripted_draw([])) is True
    assert acc.decide(k, w + 1, scripted_draw([])) is False


def test_peak_with_acceptance_one_always_accepts():
    # sigma2 = 4, t = 3: the peak sigma2/t = 4/3 is not an integer; sigma2 = 9/4, t = 2: peak 9/8.
    # sigma2 = 6, t = 3: peak 2 exactly, a(2) = 1: every word accepts, even the largest.
    acc = dg._sampler(Fraction(6)).accept
    assert dg._sampler(Fraction(6)).t == 3 and acc.gamma(2) == 0
    assert acc.low[2] == M64
    assert acc.decide(2, M64, scripted_draw([])) is True


def test_ties_in_the_vectorized_round_go_through_the_exact_digits():
    # Craft a round: proposal words (their Laplace values are computed first), acceptance words
    # equal to each proposal's threshold (all ties), then one extra word per tie that decides it.
    sigma2 = Fraction(10, 3)
    s = dg._sampler(sigma2)
    m = 64
    w1 = np.random.default_rng(3).integers(0, 1 << 64, size=m, dtype=np.uint64)
    y = s.laplace.sample_words(w1.copy(), scripted_draw([]))  # no extra words needed for these
    k = np.abs(y)
    w2 = s.accept.low[np.minimum(k, s.accept.n)]
    extra, expected = [], []
    for i in range(m):
        d1 = ref_floor_acceptance(sigma2, s.t, int(k[i]), 128) & M64
        assert 0 < d1 < M64
        word = d1 - 1 if i % 2 else d1 + 1  # odd positions accept, even reject
        extra.append(word)
        expected.append(i % 2 == 1)
    got = s.propose(m, scripted_draw(list(w1) + list(w2) + extra), None)
    np.testing.assert_array_equal(got, y[np.array(expected)])


@pytest.mark.parametrize("sigma2, buckets", [(Fraction(100), 8), (Fraction(10**4), 64), (Fraction(2), 2)])
def test_bucket_path_identical_to_exact_path(sigma2, buckets):
    # Same words, exact single-value table vs coarse buckets with exact resolution of the
    # uncertain band: the accepted values must be identical (both decide U < a(k) exactly).
    exact = dg._Sampler(sigma2)
    coarse = forced_sampler(sigma2, buckets)
    assert exact.accept.exact and not coarse.accept.exact
    m = 20_000
    words = np.random.default_rng(11).integers(0, 1 << 64, size=2 * m, dtype=np.uint64)
    # Put acceptance words right on bucket bounds and thresholds to stress the uncertain band.
    y = exact.laplace.sample_words(words[:m].copy(), scripted_draw([]))
    k = np.abs(y)
    bc = np.minimum(k >> coarse.accept.shift, coarse.accept.n)
    words[m : m + 2000] = coarse.accept.low[bc[:2000]]
    words[m + 2000 : m + 4000] = coarse.accept.high[bc[2000:4000]]
    words[m + 4000 : m + 6000] = exact.accept.low[np.minimum(k[4000:6000], exact.accept.n)] + np.uint64(1)
    extra = list(np.random.default_rng(12).integers(0, 1 << 64, size=m, dtype=np.uint64))  # for ties
    a = exact.propose(m, scripted_draw(list(words) + extra), None)
    b = coarse.propose(m, scripted_draw(list(words) + extra), None)
    np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------ distribution ----
@pytest.mark.parametrize("sigma2, seed", [(0.25, 1), (1, 2), (9, 3), (100, 4), (10_000, 5), (10**8, 6)])
def test_chisquare_goodness_of_fit(sigma2, seed):
    # sigma in {0.5, 1, 3, 10, 100, 10**4} (the last on the bucket path). Fixed seeds: deterministic.
    # A correct sampler fails p < 1e-4 with probability 1e-4 over seeds; any systematic
    # error in the pmf at n = 10**6 (e.g. a wrong t or acceptance) gives p ~ 0.
    z = discrete_gaussian(sigma2, 1_000_000, rng=np.random.default_rng(seed))
    assert chisquare_dg(z, float(sigma2)) > 1e-4


@pytest.mark.parametrize("sigma2, buckets, seed", [(Fraction(400), 64, 21), (Fraction(2500), 128, 22)])
def test_chisquare_forced_bucket_path(sigma2, buckets, seed):
    z = run(forced_sampler(sigma2, buckets), 300_000, gen_draw(seed))
    assert chisquare_dg(z, float(sigma2)) > 1e-4  # fixed seed, as above


def test_chisquare_secure_source():
    z = discrete_gaussian(Fraction(7, 2), 500_000)
    # Unseeded (secure) draws: false failure probability 1e-6.
    assert chisquare_dg(z, 3.5) > 1e-6


@pytest.mark.parametrize("sigma2, seed", [(Fraction(1, 4), 11), (Fraction(1), 12), (Fraction(50), 13),
                                          (Fraction(10**6), 14)])
def test_mean_and_variance(sigma2, seed):
    n = 1_000_000
    z = discrete_gaussian(sigma2, n, rng=np.random.default_rng(seed)).astype(np.float64)
    var = discrete_gaussian_variance(sigma2)
    half = int(40 * math.sqrt(sigma2)) + 40
    s = np.arange(-half, half + 1, dtype=np.float64)
    w = np.exp(-s * s / (2 * float(sigma2)))
    mu4 = math.fsum(s**4 * w) / math.fsum(w)
    # CLT: mean ~ N(0, var/n); sample variance ~ N(var, (mu4 - var**2)/n) with the exact
    # fourth moment. Five standard errors: false failure probability < 1e-6 each.
    assert abs(z.mean()) < 5 * math.sqrt(var / n)
    assert abs(z.var() - var) < 5 * math.sqrt((mu4 - var * var) / n)


# ---------------------------------------------------------------- variance ----
def dec_variance(sigma2: Fraction) -> Decimal:
    """Brute-force variance at 50 digits: sum over |z| <= 40 sigma + 40 (the rest is below 1e-340)."""
    with localcontext() as ctx:
        ctx.prec = 50
        s = Decimal(sigma2.numerator) / Decimal(sigma2.denominator)
        half = int(40 * math.sqrt(sigma2)) + 40
        num = den = Decimal(0)
        for z in range(1, half + 1):
            term = (-(Decimal(z * z)) / (2 * s)).exp()
            num += z * z * term
            den += term
        return 2 * num / (1 + 2 * den)


@pytest.mark.parametrize("sigma2", [Fraction(1, 100), Fraction(1, 4), Fraction(1, 2), Fraction(99, 100), Fraction(1),
                                    Fraction(3, 2), Fraction(10, 3), Fraction(100), Fraction(12345, 7)])
def test_variance_matches_brute_force(sigma2):
    got = discrete_gaussian_variance(sigma2)
    ref = float(dec_variance(sigma2))
    assert got == pytest.approx(ref, rel=2e-15)
    assert got <= float(sigma2)  # Var < sigma2 (CKS 2020, Section 2)


def test_variance_large_sigma_is_sigma2():
    # For s >= 10 the Poisson correction is below exp(-197): Var = s to float precision.
    for s in (10, 10**6, 2**100):
        assert discrete_gaussian_variance(s) == float(s)


# ------------------------------------------------------------ API behaviour ----
def test_shape_dtype_and_reproducibility():
    z = discrete_gaussian(Fraction(5), (3, 4), rng=np.random.default_rng(0))
    assert z.shape == (3, 4) and z.dtype == np.int64
    assert discrete_gaussian(1, 0).shape == (0,)
    assert discrete_gaussian(1, (2, 0)).shape == (2, 0)
    n = (1 << 16) + 5  # several rounds
    a = discrete_gaussian(2.5, n, rng=np.random.default_rng(42))
    b = discrete_gaussian(Fraction(5, 2), n, rng=np.random.default_rng(42))
    c = discrete_gaussian(2.5, n, rng=np.random.default_rng(43))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_sigma2_rounding_and_limits():
    big = Fraction(10**30 + 1, 3 * 10**29 + 7)
    assert dg._as_sigma2(big) >= big and dg._as_sigma2(big).denominator <= 2**64
    assert dg._as_sigma2(2**100) == 2**100
    assert discrete_gaussian(2**100, 5, rng=np.random.default_rng(1)).dtype == np.int64
    np.testing.assert_array_equal(discrete_gaussian(Fraction(1, 2**64), 50), 0)


@pytest.mark.parametrize("bad", [0, -2, float("inf"), float("nan"), "x", 2**100 + 1, None, True])
def test_bad_sigma2_raises(bad):
    with pytest.raises(ParameterError, match="sigma2"):
        discrete_gaussian(bad, 3)
    with pytest.raises(ParameterError, match="sigma2"):
        discrete_gaussian_variance(bad)


@pytest.mark.parametrize("bad", [2.5, -1, (2, -1), "3"])
def test_bad_size_raises(bad):
    with pytest.raises(ParameterError, match="size"):
        discrete_gaussian(1, bad)


def test_bad_rng_raises():
    with pytest.raises(ParameterError, match="rng"):
        discrete_gaussian(1, 3, rng=np.random.RandomState(0))


def test_noise_object_from_zcdp_loss():
    noise_obj = ZCDP(Fraction(1, 8)).noise(Sensitivity.cells(cells=1))
    assert noise_obj == DiscreteGaussian(Fraction(4))
    out = noise_obj.add(np.zeros(1000, dtype=np.int64), np.random.default_rng(0))
    assert out.dtype == np.int64 and out.shape == (1000,)
    assert noise_obj.variance() == pytest.approx(4.0, rel=1e-12)
    assert noise_obj.quantile(0.5) == 0 and noise_obj.interval_radius(0.95) == 4


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX only")
@pytest.mark.parametrize("explicit", [False, True])
def test_forked_child_draws_different_noise(explicit):
    source = SecureRandom() if explicit else None
    discrete_gaussian(100, 4, rng=source)  # the source exists before the fork
    child, parent = forked_child_draws(lambda: discrete_gaussian(10**12, 16, rng=source))
    assert child.size == 16
    # Same keystream would give equal draws; independent ones (sigma = 10**6) coincide w.p. ~1e-100.
    assert not np.array_equal(child, parent)


def test_secure_path_never_touches_numpy_bit_generators(monkeypatch):
    import pandas_dp.noise.csprng as _csprng
    import pandas_dp.noise.words as _words

    legacy_state = np.random.get_state()[1].copy()
    generator = np.random.default_rng(0)
    for module in (dg, noise, _csprng, _words):
        monkeypatch.setattr(module, "np", NumpyWithoutRandom(np))
    with pytest.raises(AssertionError, match="numpy.random"):  # the guard works
        discrete_gaussian(3, 10, rng=generator)
    for s2 in (Fraction(1, 4), 100, 10**8):  # exact table, bucket table
        assert discrete_gaussian(s2, 70_000).size == 70_000
    np.testing.assert_array_equal(np.random.get_state()[1], legacy_state)


@given(st.floats(min_value=1e-6, max_value=1e6, allow_nan=False, allow_infinity=False),
       st.integers(0, 300))
@settings(max_examples=40, deadline=None)
def test_any_positive_sigma2_gives_int64_noise_and_consistent_summaries(sigma2, n):
    z = discrete_gaussian(sigma2, n, rng=np.random.default_rng(n))
    assert z.dtype == np.int64 and z.shape == (n,)
    var = discrete_gaussian_variance(sigma2)
    assert 0.0 <= var <= float(Fraction(repr(sigma2)))
    assert dg.discrete_gaussian_quantile(sigma2, 0.5) == 0
    c = dg.discrete_gaussian_quantile(sigma2, 0.975)
    assert c >= 0 and dg.discrete_gaussian_quantile(sigma2, 0.025) == -c


@given(st.one_of(st.floats(max_value=0.0), st.floats(min_value=2.0**100 * 1.0001), st.just(float("nan"))))
@settings(max_examples=40, deadline=None)
def test_out_of_range_sigma2_raises(bad):
    with pytest.raises(ParameterError, match="sigma2"):
        discrete_gaussian(bad, 2)


@pytest.mark.slow
@pytest.mark.parametrize("sigma2", [Fraction(9), Fraction(10**4)])
def test_chisquare_secure_source_large_sample(sigma2):
    z = discrete_gaussian(sigma2, 20_000_000)
    # Unseeded, 2e7 draws: power against pmf errors of ~1e-3 relative; false failure probability 1e-6.
    assert chisquare_dg(z, float(sigma2)) > 1e-6
