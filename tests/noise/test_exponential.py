"""The exponential mechanism's exact draw (``pandas_dp.noise.exponential``).

The reference probabilities are ``exp(-gamma d_j)`` normalised in float64 (ample for a test: the draws are
counted, not the weights). Chi-square tests run with fixed seeds and the threshold ``p > 1e-4``: a correct
sampler's p-value is uniform, so one seed fails with chance ``1e-4``, and a fixed seed either always passes or
always fails (no flakiness); a sampler off by a few percent on any candidate fails at these sample sizes.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import pandas_dp.noise.exponential as expo
from pandas_dp.errors import ParameterError
from pandas_dp.noise.csprng import SecureRandom
from pandas_dp.noise.exponential import exponential_index, level_bounds


def probabilities(gamma: Fraction, scores) -> np.ndarray:
    w = np.exp(-float(gamma) * (np.asarray(scores, dtype=float) - np.min(scores)))
    return w / w.sum()


def draws(gamma, scores, n, rng) -> np.ndarray:
    return np.bincount([exponential_index(gamma, scores, rng=rng) for _ in range(n)], minlength=len(scores))


def pvalue(counts: np.ndarray, probs: np.ndarray) -> float:
    return float(stats.chisquare(counts, probs * counts.sum()).pvalue)


@pytest.mark.parametrize("gamma, scores, seed", [
    (Fraction(1, 2), [0, 1, 1, 3, 0], 1),
    (Fraction(1, 10), [7, 2, 2, 2, 9, 30, 4], 2),
    (Fraction(3), [1, 1, 1, 2], 3),
])
def test_draws_follow_the_exact_probabilities(gamma, scores, seed):
    counts = draws(gamma, scores, 3000, np.random.default_rng(seed))
    assert pvalue(counts, probabilities(gamma, scores)) > 1e-4


def test_the_refinement_path_draws_from_the_same_distribution(monkeypatch):
    """Start at 2 bits of weight precision: almost every draw straddles a bracket and refines."""
    monkeypatch.setattr(expo, "_START_BITS", 1)
    calls = []
    real = expo.level_bounds
    monkeypatch.setattr(expo, "level_bounds", lambda *a: calls.append(a[2]) or real(*a))
    gamma, scores = Fraction(1, 3), [0, 2, 1, 5, 0, 3]
    counts = draws(gamma, scores, 3000, np.random.default_rng(4))
    assert len(calls) > 3300 and max(calls) >= 8          # most draws refined at least once
    assert pvalue(counts, probabilities(gamma, scores)) > 1e-4


def test_a_tie_between_a_word_and_a_bracket_is_resolved_by_more_words(monkeypatch):
    """Words that put U exactly on a level's boundary (to 64 bits) still give an exact draw: the first word
    lands on ``S_0 / S`` for two equal weights (1/2), so the next word decides."""
    words = iter([np.uint64(1 << 63), np.uint64(0), np.uint64(1 << 63), np.uint64((1 << 64) - 1)])
    source = lambda n, out=None: np.array([next(words) for _ in range(n)], dtype=np.uint64)  # noqa: E731
    monkeypatch.setattr(expo, "word_source", lambda rng: source)
    assert exponential_index(1, [4, 4, 9**9], rng=None) in (0, 1)


def test_two_equal_scores_are_a_fair_coin():
    counts = draws(Fraction(1), [3, 3], 3000, np.random.default_rng(5))
    assert stats.binomtest(int(counts[0]), 3000).pvalue > 1e-4


def test_huge_scores_neither_underflow_nor_win():
    gamma = Fraction(1, 7)
    lo, hi = level_bounds(gamma, np.array([0, 10**6, 2**62], dtype=np.int64), 64)
    assert lo[0] == hi[0] == 1 << 64
    assert lo[1] == lo[2] == 0 and 0 < hi[1] == hi[2] <= 4            # exactly tiny: at most a few 2**-64
    rng = np.random.default_rng(6)
    assert {exponential_index(gamma, [2**62, 0, 10**15], rng=rng) for _ in range(300)} == {1}


def test_far_candidates_keep_their_share_when_many():
    """10**4 candidates at score 60 against one at 0 with gamma = 1/10: each far one has weight e**-6, all
    together about 24.8 times the near one; the near one's share is 1 / (1 + 10**4 e**-6)."""
    scores = np.full(10_001, 60, dtype=np.int64)
    scores[0] = 0
    rng = np.random.default_rng(7)
    hits = sum(exponential_index(Fraction(1, 10), scores, rng=rng) == 0 for _ in range(2000))
    share = 1 / (1 + 10_000 * np.exp(-6.0))
    assert stats.binomtest(hits, 2000, share).pvalue > 1e-4


def test_brackets_hold_and_are_tight():
    gamma = Fraction(2, 3)
    e = np.arange(0, 200, dtype=np.int64)
    lo, hi = level_bounds(gamma, e, 80)
    exact = [Fraction(2**80) * Fraction(np.exp(-float(gamma) * k)) for k in e]  # float: a sanity band only
    assert all(lo_k <= hi_k for lo_k, hi_k in zip(lo, hi))
    assert max(int(h) - int(lo_k) for lo_k, h in zip(lo, hi)) <= 4
    assert all(abs(float(lo_k) - float(x)) <= 1e-12 * float(x) + 4 for lo_k, x in zip(lo, exact))


def test_a_single_candidate_and_the_rng_forms():
    assert exponential_index(Fraction(1, 2), [12345]) == 0
    scores = [3, 0, 1]
    assert exponential_index(1, scores, rng=SecureRandom()) in (0, 1, 2)
    assert exponential_index(1, scores) in (0, 1, 2)
    a = [exponential_index(0.5, scores, rng=np.random.default_rng(8)) for _ in range(5)]
    b = [exponential_index(0.5, scores, rng=np.random.default_rng(8)) for _ in range(5)]
    assert a == b


@pytest.mark.parametrize("gamma, scores, rng", [
    (0, [1, 2], None), (-1, [1, 2], None), (float("nan"), [1, 2], None), (1, [], None), (1, [-1, 2], None),
    (1, [1.5, 2.0], None), (1, [[1, 2]], None), (1, [1, 2], 42),
])
def test_bad_arguments_raise_clearly(gamma, scores, rng):
    with pytest.raises(ParameterError):
        exponential_index(gamma, scores, rng=rng)


def test_far_apart_exponents_take_binary_powers_and_stay_tight():
    """A tiny gamma and exponents up to 10**12 (beyond the cached table of 64 * 4096): the brackets come from
    binary powers of p**64, within a few units and around the float value (a sanity band only)."""
    gamma = Fraction(1, 10**9)
    e = np.array([0, 1, 63, 64, 262_143, 262_144, 10**6, 10**9, 3 * 10**10, 10**12], dtype=np.int64)
    lo, hi = level_bounds(gamma, e, 64)
    for lo_k, hi_k, k in zip(lo, hi, e):
        x = 2.0**64 * np.exp(-float(gamma) * float(k))
        assert lo_k <= hi_k <= lo_k + 8
        assert abs(float(lo_k) - x) <= 1e-9 * x + 8
    rng = np.random.default_rng(9)
    scores = rng.integers(0, 10**12, 50_000)
    assert 0 <= exponential_index(gamma, scores, rng=rng) < scores.size
