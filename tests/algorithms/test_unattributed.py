"""Tests for pandas_dp.algorithms.unattributed (Hay et al. S-bar)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pandas_dp.algorithms.unattributed import (
    noisy_group_count,
    sorted_to_count_of_counts,
    top_n_sorted,
    unattributed_histogram,
)
from pandas_dp.privacy.loss import pure
from pandas_dp.noise.laplace import discrete_laplace_variance, noise_scale


def test_top_n_sorted_pads_and_truncates() -> None:
    np.testing.assert_array_equal(top_n_sorted(np.array([2, 0, 10, 2]), 4), [0, 2, 2, 10])
    np.testing.assert_array_equal(top_n_sorted(np.array([5, 1]), 4), [0, 0, 1, 5])
    np.testing.assert_array_equal(top_n_sorted(np.array([5, 1, 3]), 2), [3, 5])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 20), max_size=15), st.integers(0, 18), st.integers(0, 16))
def test_top_n_sensitivity_one(counts: list[int], n: int, where: int) -> None:
    # Neighbour: one more row, in an existing group or in a new group.
    c = np.array(counts, dtype=np.int64)
    if c.size and where < c.size:
        c2 = c.copy()
        c2[where] += 1
    else:
        c2 = np.append(c, 1)
    d = np.abs(top_n_sorted(c, n) - top_n_sorted(c2, n)).sum()
    assert d <= 1


def test_sbar_output_is_sorted_nonnegative_integral() -> None:
    rng = np.random.default_rng(0)
    s = np.sort(rng.integers(0, 5, size=300))
    est = unattributed_histogram(s, noise=pure(0.5).noise(), rng=rng)
    assert est.counts.dtype == np.int64
    assert np.all(np.diff(est.counts) >= 0) and est.counts.min() >= 0
    assert est.counts.size == s.size
    v = discrete_laplace_variance(noise_scale(1, 0.5))
    np.testing.assert_allclose(est.variances, v / est.block_lengths)


def test_sbar_error_ten_times_lower_on_concentrated_sequence() -> None:
    # Hay et al. Theorem 2 / Figure 4: on a sequence with d = 3 distinct counts the error of
    # S-bar is O(d log^3 n / eps^2), against n * Var(Z) for the sorted noisy counts S~.
    # n = 1000, eps = 1: E||S~ - S||^2 ~ 1000 * 1.84; S-bar's error is a few hundred at most,
    # so a 10x margin averaged over 5 seeds is safe.
    s = np.array([10] * 800 + [14] * 50 + [18] * 150, dtype=np.int64)
    raw, inferred = [], []
    for seed in range(5):
        rng = np.random.default_rng(seed)
        est = unattributed_histogram(s, noise=pure(1.0).noise(), rng=np.random.default_rng(seed))
        noisy = s + (rng.geometric(1 - np.exp(-1.0), s.size) - rng.geometric(1 - np.exp(-1.0), s.size))
        raw.append(np.sum((noisy - s) ** 2))
        inferred.append(np.sum((est.counts - s) ** 2))
    assert np.mean(raw) >= 10 * np.mean(inferred)


def test_noisy_group_count_nonnegative() -> None:
    rng = np.random.default_rng(1)
    vals = [noisy_group_count(0, noise=pure(0.1).noise(), limit=10**6, rng=rng) for _ in range(50)]
    assert min(vals) >= 0


def test_sorted_to_count_of_counts() -> None:
    sizes, groups = sorted_to_count_of_counts(np.array([1, 1, 2, 3, 3]))
    np.testing.assert_array_equal(sizes, [1, 2, 3])
    np.testing.assert_array_equal(groups, [2, 1, 2])
