"""Range-query variances: papers' exact V_Avg tables, dense and brute-force references."""

from __future__ import annotations

import time

import numpy as np
import pytest

from pandas_dp.algorithms.tree.inference import tree_variances
from pandas_dp.algorithms.tree.layout import TreeLayout, tree_layout
from pandas_dp.algorithms.tree.variance import (approx_average_range_variance,
                                                average_range_variance,
                                                canonical_node_counts, range_variance,
                                                raw_average_range_variance,
                                                raw_level_usage, raw_range_variance)


def uniform_laplace(layout: TreeLayout, epsilon: float = 1.0, include_root: bool = False):
    """Continuous Laplace variances 2 / (epsilon / m)^2 on the m noised levels (Qardaji)."""
    m = layout.height + (1 if include_root else 0)
    v = 2.0 * (m / epsilon) ** 2
    return [v] * layout.height + [v if include_root else np.inf]


# Qardaji et al. 2013, Tables 1-3 (epsilon = 1, V_u = 2): exact V_Avg.
CONSISTENT = [(16, 2, 34.46), (64, 8, 37.07), (128, 12, 54.17), (256, 16, 79.23),
              (256, 2, 220.06), (512, 23, 114.02), (16, 16, 12.00), (32, 16, 35.64),
              (64, 16, 45.43), (128, 16, 57.91), (512, 16, 163.48), (32, 2, 61.34),
              (128, 2, 152.18), (32, 12, 29.60)]
# Incomplete trees whose last node has fewer children: the paper's inference divides
# residuals equally (1/b), which is not the GLS there; the exact GLS (checked against
# dense least squares below) must do at least as well, and stays within 1 %.
INCOMPLETE = [(16, 12, 20.82), (64, 12, 39.31), (256, 12, 116.61), (512, 12, 134.51)]
RAW = [(16, 2, 79.53), (256, 16, 150.98), (64, 8, 67.23), (128, 12, 103.14), (512, 23, 221.57),
       (1024, 32, 320.83), (2048, 46, 463.83), (4096, 16, 606.30), (8192, 21, 795.53),
       (2 ** 20, 16, 3183.34), (2 ** 20, 2, 14400.02), (32, 16, 82.94), (256, 12, 301.80),
       (2048, 12, 801.97), (2048, 16, 546.48), (16, 16, 12.00)]


@pytest.mark.parametrize("n,b,paper", CONSISTENT)
def test_consistent_average_variance_reproduces_qardaji(n: int, b: int, paper: float) -> None:
    layout = tree_layout(n, b)
    value = average_range_variance(layout, tree_variances(layout, uniform_laplace(layout)))
    assert round(value, 2) == pytest.approx(paper, abs=0.011)


@pytest.mark.parametrize("n,b,paper", INCOMPLETE)
def test_exact_gls_beats_paper_on_incomplete_trees(n: int, b: int, paper: float) -> None:
    layout = tree_layout(n, b)
    value = average_range_variance(layout, tree_variances(layout, uniform_laplace(layout)))
    assert paper * 0.99 < value <= paper + 0.005


@pytest.mark.parametrize("n,b,paper", RAW)
def test_raw_average_variance_reproduces_qardaji(n: int, b: int, paper: float) -> None:
    layout = tree_layout(n, b)
    assert round(raw_average_range_variance(layout, uniform_laplace(layout)), 2) == \
        pytest.approx(paper, abs=0.011)


@pytest.mark.parametrize("n,b,paper", [(256, 16, 78.86), (1024, 32, 163.88)])
def test_algorithm_2_estimate_matches_table_2(n: int, b: int, paper: float) -> None:
    # Table 2's V*_Avg[H_b^c] from Algorithms 1-2 (complete trees).
    layout = tree_layout(n, b)
    assert approx_average_range_variance(layout, uniform_laplace(layout)) == \
        pytest.approx(paper, abs=0.01)


def all_ranges(n: int) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = np.triu_indices(n + 1, 1)
    return lo, hi


def dense_leaf_covariance(layout: TreeLayout, sigma2: list) -> np.ndarray:
    n = layout.n_leaves
    rows = []
    w = []
    for k in range(layout.n_levels):
        if not np.isfinite(sigma2[k]):
            continue
        low, high = layout.intervals(k)
        a = ((np.arange(n) >= low[:, None]) & (np.arange(n) < high[:, None])).astype(float)
        rows.append(a)
        w.append(np.full(a.shape[0], 1.0 / sigma2[k]))
    a, w = np.vstack(rows), np.concatenate(w)
    return np.linalg.inv(a.T @ (w[:, None] * a))


@pytest.mark.parametrize("n,b", [(8, 2), (10, 3), (17, 4), (31, 2), (26, 5), (12, 12), (40, 6)])
@pytest.mark.parametrize("root", [False, True])
def test_range_variance_equals_dense_quadratic_form(n: int, b: int, root: bool) -> None:
    rng = np.random.default_rng(n * b)
    layout = tree_layout(n, b)
    sigma2 = list(rng.uniform(0.5, 3.0, size=layout.n_levels))
    if not root:
        sigma2[-1] = np.inf
    tv = tree_variances(layout, sigma2)
    cov = dense_leaf_covariance(layout, sigma2)
    lo, hi = all_ranges(n)
    cum = np.zeros((n + 1, n + 1))
    cum[1:, 1:] = np.cumsum(np.cumsum(cov, 0), 1)
    ref = cum[hi, hi] - cum[lo, hi] - cum[hi, lo] + cum[lo, lo]   # q' cov q
    np.testing.assert_allclose(range_variance(layout, tv, lo, hi), ref, rtol=1e-9, atol=1e-12)
    assert average_range_variance(layout, tv) == pytest.approx(ref.mean(), rel=1e-11)


def brute_min_nodes(layout: TreeLayout, noised: list, lo: int, hi: int) -> list[int]:
    """Maximal noised nodes inside [lo, hi), found by scanning every node."""
    nodes = []
    for k in range(layout.n_levels):
        if not noised[k]:
            continue
        low, high = layout.intervals(k)
        for j in np.flatnonzero((low >= lo) & (high <= hi)):
            nodes.append((k, int(low[j]), int(high[j])))
    counts = [0] * layout.n_levels
    for k, a, b in nodes:
        covered_above = any(k2 > k and a2 <= a and b <= b2 for k2, a2, b2 in nodes)
        if not covered_above:
            counts[k] += 1
    return counts


@pytest.mark.parametrize("n,b,root", [(10, 3, False), (16, 2, True), (23, 4, False), (9, 9, False),
                                      (30, 2, False), (27, 3, True)])
def test_canonical_decomposition_is_minimal(n: int, b: int, root: bool) -> None:
    layout = tree_layout(n, b)
    noised = [True] * layout.height + [root]
    lo, hi = all_ranges(n)
    counts, _ = canonical_node_counts(layout, noised, lo, hi)
    for i in range(lo.size):
        assert list(counts[i]) == brute_min_nodes(layout, noised, lo[i], hi[i])
    # The closed-form usage per level is the column sum over all ranges.
    np.testing.assert_array_equal(raw_level_usage(layout, noised), counts.sum(axis=0))
    sigma2 = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0][: layout.n_levels]
    sigma2 = [s if on else np.inf for s, on in zip(sigma2, noised)]
    assert raw_average_range_variance(layout, sigma2) == pytest.approx(
        raw_range_variance(layout, sigma2, lo, hi).mean(), rel=1e-12)


def test_average_range_variance_is_fast_for_4096() -> None:
    layout = tree_layout(4096, 2)
    tv = tree_variances(layout, uniform_laplace(layout))
    start = time.perf_counter()
    average_range_variance(layout, tv)
    assert time.perf_counter() - start < 0.25


def test_range_variance_vectorized_large() -> None:
    # 2000 ranges over 2^20 leaves: O(h) per range.
    layout = tree_layout(2 ** 20, 16)
    tv = tree_variances(layout, uniform_laplace(layout))
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 2 ** 20, size=(2, 2000))
    lo, hi = np.minimum(a, b), np.maximum(a, b) + 1
    v = range_variance(layout, tv, lo, hi)
    assert np.all(v > 0) and np.all(np.isfinite(v))
    # The whole domain is the root: variance P_root = V_down(root).
    assert range_variance(layout, tv, [0], [2 ** 20])[0] == pytest.approx(tv.variances[-1][0])
