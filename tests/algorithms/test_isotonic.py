"""Tests for pandas_dp.algorithms.isotonic (weighted, bounded PAV)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import isotonic_regression as scipy_iso
from scipy.optimize import minimize

from pandas_dp.algorithms.isotonic import isotonic_regression, segmented_isotonic_regression

floats = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False)


@pytest.mark.parametrize(
    ("noisy", "inferred"),
    [  # Hay et al. 2010, Table 2 (original output -> inferred output)
        ([10, 11, 13], [10, 11, 13]),
        ([10, 13, 11], [10, 12, 12]),
        ([14, 9, 10], [11, 11, 11]),
        ([14, 9, 10, 15], [11, 11, 11, 15]),
    ],
)
def test_hay_table_2(noisy: list[int], inferred: list[int]) -> None:
    fit = isotonic_regression(np.array(noisy, dtype=float))
    np.testing.assert_allclose(fit.values, inferred)


def test_hay_table_2_blocks() -> None:
    fit = isotonic_regression(np.array([14.0, 9, 10, 15]))
    np.testing.assert_array_equal(fit.block_starts, [0, 3])
    np.testing.assert_array_equal(fit.block_lengths, [3, 1])
    np.testing.assert_array_equal(fit.block_length_per_position(), [3, 3, 3, 1])
    np.testing.assert_array_equal(fit.block_of(), [0, 0, 0, 1])


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("increasing", [True, False])
def test_matches_scipy_weighted(seed: int, increasing: bool) -> None:
    rng = np.random.default_rng(seed)
    y = rng.normal(size=500).cumsum() * 0.1 + rng.normal(size=500)
    w = rng.uniform(0.1, 3.0, size=500)
    ref = scipy_iso(y, weights=w, increasing=increasing).x
    got = isotonic_regression(y, weights=w, increasing=increasing).values
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("seed", range(4))
def test_bounded_against_constrained_qp(seed: int) -> None:
    # Reference: SLSQP on the QP min ||x-y||^2, x_i <= x_{i+1}, lo <= x <= hi.
    rng = np.random.default_rng(seed)
    y = rng.normal(5, 4, size=7)
    lo, hi = 2.0, 7.0
    cons = [{"type": "ineq", "fun": (lambda x, i=i: x[i + 1] - x[i])} for i in range(6)]
    ref = minimize(lambda x: np.sum((x - y) ** 2), np.clip(np.sort(y), lo, hi),
                   bounds=[(lo, hi)] * 7, constraints=cons, method="SLSQP",
                   options={"ftol": 1e-12, "maxiter": 500}).x
    got = isotonic_regression(y, lower=lo, upper=hi).values
    np.testing.assert_allclose(got, ref, atol=1e-5)


def test_segments_are_independent() -> None:
    rng = np.random.default_rng(3)
    parts = [rng.integers(-50, 50, size=n).astype(float) for n in (5, 1, 30, 12)]
    starts = np.cumsum([0] + [p.size for p in parts[:-1]])
    upper = np.array([10.0, 3.0, 20.0, 5.0])
    fit = segmented_isotonic_regression(np.concatenate(parts), starts, lower=0.0, upper=upper,
                                        increasing=False)
    expected = np.concatenate([
        np.clip(scipy_iso(p, increasing=False).x, 0, u) for p, u in zip(parts, upper)
    ])
    np.testing.assert_allclose(fit.values, expected, atol=1e-9)
    assert set(starts).issubset(set(fit.block_starts))


@settings(max_examples=60, deadline=None)
@given(st.lists(floats, min_size=1, max_size=60))
def test_properties_monotone_idempotent_mean(ys: list[float]) -> None:
    y = np.array(ys)
    fit = isotonic_regression(y)
    x = fit.values
    assert np.all(np.diff(x) >= -1e-9 * (1 + np.abs(x[1:])))
    np.testing.assert_allclose(isotonic_regression(x).values, x, atol=1e-9)
    # Each block (run of equal fitted value) keeps the mean of its observations.
    sums = np.add.reduceat(y, fit.block_starts)
    np.testing.assert_allclose(sums / fit.block_lengths, x[fit.block_starts], rtol=1e-9, atol=1e-6)
    assert fit.block_lengths.sum() == y.size


def test_empty() -> None:
    fit = isotonic_regression(np.zeros(0))
    assert fit.values.size == 0 and fit.block_starts.size == 0
