"""Tests for the per-node count-of-counts estimators and the EMD metric."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from pandas_dp.algorithms.count_of_counts import (
    SENSITIVITY,
    Runs,
    estimate_level,
    estimate_max_size,
    largest_remainder_round,
    project_to_simplex,
)
from pandas_dp.privacy.loss import Sensitivity, pure
from pandas_dp.metrics import emd, mse


def _level(sizes_per_node: list[list[int]]) -> Runs:
    node = np.concatenate([[i] * len(s) for i, s in enumerate(sizes_per_node)] or [[]]).astype(int)
    size = np.concatenate([np.asarray(s, dtype=int) for s in sizes_per_node] or [[]]).astype(int)
    return Runs.exact(node, size, np.ones(node.size, dtype=int), len(sizes_per_node))


# --- EMD (Kuo et al. section 3.1) -------------------------------------------------------------
def test_emd_kuo_section_3_1_example() -> None:
    # 100 groups of size 1; all of size 2 is 100 persons away, all of size 5 is 400 away.
    truth, a, b = np.zeros(6), np.zeros(6), np.zeros(6)
    truth[1], a[2], b[5] = 100, 100, 100
    assert emd(a, truth) == 100.0
    assert emd(b, truth) == 400.0


def test_emd_mapping_and_padding() -> None:
    assert emd({1: 2, 2: 1, 4: 1}, [0, 2, 1, 0, 1]) == 0.0
    assert emd({0: 1}, {3: 1}) == 3.0
    assert mse([1, 2, 3], [1, 2, 5]) == 4 / 3


# --- estimators --------------------------------------------------------------------------------
node_sizes = st.lists(st.lists(st.integers(0, 12), max_size=25), min_size=1, max_size=5)


@settings(max_examples=40, deadline=None)
@given(node_sizes, st.sampled_from(["naive", "hg", "hc"]), st.integers(0, 2**32 - 1))
def test_estimates_integral_nonnegative_with_public_totals(sizes, method, seed) -> None:
    exact = _level(sizes)
    g = exact.totals()
    est = estimate_level(exact, g, method=method, noise=pure(0.3).noise(SENSITIVITY[method]), max_size=10,
                         rng=np.random.default_rng(seed))
    assert est.groups.dtype == np.int64 and est.size.dtype == np.int64
    assert est.groups.min(initial=1) > 0 and est.size.min(initial=0) >= 0
    np.testing.assert_array_equal(est.totals(), g)
    assert np.all(est.var >= 0)


@pytest.mark.parametrize("method", ["naive", "hg", "hc"])
def test_huge_epsilon_recovers_truth(method: str) -> None:
    exact = _level([[1, 1, 2, 5, 5, 5], [0, 3], [], [7]])
    est = estimate_level(exact, exact.totals(), method=method, noise=pure(1e9).noise(SENSITIVITY[method]), max_size=8,
                         rng=np.random.default_rng(0))
    np.testing.assert_array_equal(est.dense(9), exact.dense(9))


def test_min_size_one_never_outputs_empty_groups() -> None:
    exact = _level([[1, 1, 2, 5], [3, 3, 3]])
    for method in ("naive", "hg", "hc"):
        est = estimate_level(exact, np.array([5, 2]), method=method, noise=pure(0.2).noise(SENSITIVITY[method]), max_size=6,
                             min_size=1, rng=np.random.default_rng(2))
        assert est.size.min() >= 1
        np.testing.assert_array_equal(est.totals(), [5, 2])


def test_hc_truncates_at_max_size() -> None:
    exact = _level([[1, 50, 80]])
    est = estimate_level(exact, exact.totals(), method="hc", noise=pure(1e9).noise(), max_size=10,
                         rng=np.random.default_rng(0))
    np.testing.assert_array_equal(est.size, [1, 10])
    np.testing.assert_array_equal(est.groups, [1, 2])


def test_hc_variance_heuristic() -> None:
    # Kuo 5.1.2: a group of estimated size i gets Var(H_hat[i]) / H_hat[i], Var = 2 v inside.
    exact = _level([[2] * 40])
    est = estimate_level(exact, exact.totals(), method="hc", noise=pure(1e9).noise(), max_size=5,
                         rng=np.random.default_rng(0))
    v = pure(1e9).noise().variance()  # the variance the noise reports (floored where it underflows)
    np.testing.assert_allclose(est.var, [2 * v / 40])


def test_hc_beats_naive_in_emd() -> None:
    # Kuo et al. section 4: naive is orders of magnitude worse (noise on all K cells).
    rng = np.random.default_rng(5)
    sizes = rng.geometric(0.4, size=2000)
    exact = _level([list(sizes)])
    res = {}
    for method in ("naive", "hc"):
        errs = [emd(estimate_level(exact, exact.totals(), method=method, noise=pure(0.5).noise(SENSITIVITY[method]), max_size=200,
                                   rng=np.random.default_rng(s)).dense(201)[0],
                    exact.dense(201)[0]) for s in range(3)]
        res[method] = np.mean(errs)
    assert res["hc"] * 5 < res["naive"]


def test_max_size_estimate_covers_truth() -> None:
    # margin of 5 sd: P(K < max) = P(Z < -5 sd) ~ exp(-5 sqrt 2)/2 < 1e-3 per draw.
    rng = np.random.default_rng(0)
    ks = [estimate_max_size(40, noise=pure(0.5).noise(), rng=rng) for _ in range(200)]
    assert min(ks) >= 40
    assert np.median(ks) < 40 + 30


@pytest.mark.parametrize("seed", range(4))
def test_projection_to_simplex_matches_qp(seed: int) -> None:
    rng = np.random.default_rng(seed)
    y = rng.normal(2, 5, size=(1, 8))
    g = 20.0
    ref = minimize(lambda x: np.sum((x - y[0]) ** 2), np.full(8, g / 8), bounds=[(0, None)] * 8,
                   constraints=[{"type": "eq", "fun": lambda x: x.sum() - g}], method="SLSQP",
                   options={"ftol": 1e-12}).x
    np.testing.assert_allclose(project_to_simplex(y, np.array([g]))[0], ref, atol=1e-5)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0, 100, allow_nan=False), min_size=1, max_size=12))
def test_largest_remainder(xs: list[float]) -> None:
    x = np.array([xs])
    g = int(np.floor(x.sum()))
    x = x * (g / x.sum()) if x.sum() > 0 else x
    r = largest_remainder_round(x, np.array([g]))
    assert r.sum() == g
    assert np.all(np.abs(r - x) < 1 + 1e-9)


# --- private group totals (Kuo et al. footnote 5) ----------------------------------------------
def test_consistent_group_totals_invariants_and_accuracy() -> None:
    from pandas_dp.algorithms.count_of_counts import consistent_group_totals

    parents = [None, np.zeros(3, dtype=int), np.array([0, 0, 1, 1, 2, 2, 2])]
    leaf = np.array([500, 0, 20, 3000, 1, 0, 77])
    errs = []
    for seed in range(20):
        out = consistent_group_totals(leaf, parents, [1, 3, 7], noise=pure(1.0).noise(Sensitivity.cells(cells=3)), rng=np.random.default_rng(seed))
        assert all(o.dtype == np.int64 and o.min() >= 0 for o in out)
        np.testing.assert_array_equal(np.bincount(parents[2], out[2], 3), out[1])
        assert out[0][0] == out[1].sum()
        errs.append(np.abs(out[2] - leaf).mean())
    # Noise scale 3 per node (3 levels, epsilon 1): sd 4.2; least squares over 11 noisy totals
    # cannot do worse on average than the 3-sd bound below.
    assert np.mean(errs) < 13
    huge = consistent_group_totals(leaf, parents, [1, 3, 7], noise=pure(1e9).noise(Sensitivity.cells(cells=3)), rng=np.random.default_rng(0))
    np.testing.assert_array_equal(huge[2], leaf)
