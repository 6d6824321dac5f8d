"""Tests for the top-down consistency of hierarchical count-of-counts (Kuo et al. section 5)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from pandas_dp.algorithms.count_of_counts import SENSITIVITY, Runs, estimate_level
from pandas_dp.privacy.loss import pure
from pandas_dp.algorithms.count_of_counts_matching import (
    aggregate_up,
    match_runs,
    merge_matching,
    top_down,
)


def _runs(node, size, groups, n_nodes, var=None) -> Runs:
    node, size, groups = (np.asarray(a, dtype=np.int64) for a in (node, size, groups))
    v = np.ones(node.size) if var is None else np.asarray(var, dtype=float)
    return Runs(node, size, groups, v, n_nodes).normalized()


def _check_matching_is_perfect(parent: Runs, child: Runs, m) -> None:
    np.testing.assert_array_equal(np.bincount(m.parent_run, m.groups, parent.size.size), parent.groups)
    np.testing.assert_array_equal(np.bincount(m.child_run, m.groups, child.size.size), child.groups)


def test_paper_proportional_sharing_example() -> None:
    # Kuo 5.2.1: parent has 300 groups of size 1; children have 200, 100, 100 groups of size 1.
    # 50% / 25% / 25% of the parent's size-1 groups go to the three children; the leftover
    # 50 / 25 / 25 children groups of size 1 match the parent's next size (here 2).
    parent = _runs([0, 0], [1, 2], [300, 100], 1)
    child = _runs([0, 1, 2], [1, 1, 1], [200, 100, 100], 3)
    m = match_runs(parent, child, np.array([0, 0, 0]))
    _check_matching_is_perfect(parent, child, m)
    got = {(int(parent.size[p]), int(child.node[c])): int(n)
           for p, c, n in zip(m.parent_run, m.child_run, m.groups)}
    assert got == {(1, 0): 150, (1, 1): 75, (1, 2): 75, (2, 0): 50, (2, 1): 25, (2, 2): 25}
    assert m.cost(parent, child) == 100


def _random_instance(rng, n_children):
    child_sizes = [rng.integers(0, 6, size=rng.integers(0, 7)) for _ in range(n_children)]
    g = sum(len(c) for c in child_sizes)
    parent_sizes = rng.integers(0, 6, size=g)
    parent = _runs(np.zeros(g), parent_sizes, np.ones(g), 1)
    node = np.concatenate([[i] * len(c) for i, c in enumerate(child_sizes)]).astype(int)
    child = _runs(node, np.concatenate(child_sizes), np.ones(g), n_children)
    return parent, child, parent_sizes, np.concatenate(child_sizes)


@pytest.mark.parametrize("seed", range(30))
def test_matching_cost_equals_brute_force_optimum(seed: int) -> None:
    # Lemma 5: Algorithm 2 is a minimum-cost perfect matching under |size difference| costs.
    rng = np.random.default_rng(seed)
    parent, child, ps, cs = _random_instance(rng, int(rng.integers(1, 4)))
    if ps.size == 0:
        return
    m = match_runs(parent, child, np.zeros(child.n_nodes, dtype=int))
    _check_matching_is_perfect(parent, child, m)
    cost = np.abs(ps[:, None] - cs[None, :])
    r, c = linear_sum_assignment(cost)
    assert m.cost(parent, child) == cost[r, c].sum()


def test_weighted_merge_formula() -> None:
    # Kuo Eq. 5-6: s = (s_p/v_p + s_c/v_c) / (1/v_p + 1/v_c), v = 1/(1/v_p + 1/v_c).
    parent = _runs([0], [10], [4], 1, var=[1.0])
    child = _runs([0], [4], [4], 1, var=[3.0])
    m = match_runs(parent, child, np.array([0]))
    out = merge_matching(parent, child, m, merge="weighted")
    np.testing.assert_array_equal(out.size, [round((10 / 1 + 4 / 3) / (1 + 1 / 3))])  # 8.5 -> 9
    np.testing.assert_allclose(out.var, [0.75])
    avg = merge_matching(parent, child, m, merge="average")
    np.testing.assert_array_equal(avg.size, [7])
    np.testing.assert_allclose(avg.var, [1.0])


def test_exact_estimates_are_fixed_points() -> None:
    rng = np.random.default_rng(4)
    leaf_node = rng.integers(0, 6, size=200)
    leaf_size = rng.geometric(0.3, size=200)
    leaves = Runs.exact(leaf_node, leaf_size, np.ones(200, dtype=int), 6)
    parents = [None, np.array([0, 0]), np.array([0, 0, 1, 1, 1, 1])]
    levels = aggregate_up(leaves, parents, [1, 2, 6])
    levels = [Runs(r.node, r.size, r.groups, np.ones(r.node.size), r.n_nodes) for r in levels]
    out = top_down(levels, parents)
    for got, want in zip(out, levels):
        np.testing.assert_array_equal(got.dense(), want.dense())


@st.composite
def hierarchies(draw):
    n1 = draw(st.integers(1, 3))
    n2_per = [draw(st.integers(1, 3)) for _ in range(n1)]
    parent2 = np.repeat(np.arange(n1), n2_per)
    n2 = parent2.size
    sizes = [draw(st.lists(st.integers(0, 9), max_size=12)) for _ in range(n2)]
    method = draw(st.sampled_from(["naive", "hg", "hc"]))
    merge = draw(st.sampled_from(["weighted", "average"]))
    seed = draw(st.integers(0, 2**32 - 1))
    return n1, parent2, sizes, method, merge, seed


@settings(max_examples=60, deadline=None)
@given(hierarchies())
def test_four_invariants_on_random_hierarchies(h) -> None:
    n1, parent2, sizes, method, merge, seed = h
    rng = np.random.default_rng(seed)
    node = np.concatenate([[i] * len(s) for i, s in enumerate(sizes)] + [[]]).astype(int)
    size = np.concatenate([np.asarray(s, dtype=int) for s in sizes] + [np.zeros(0, int)])
    leaves = Runs.exact(node, size, np.ones(node.size, dtype=int), parent2.size)
    parents = [None, np.zeros(n1, dtype=int), parent2]
    exact = aggregate_up(leaves, parents, [1, n1, parent2.size])
    est = [estimate_level(e, e.totals(), method=method, noise=pure(0.4).noise(SENSITIVITY[method]), max_size=8, rng=rng) for e in exact]
    out = top_down(est, parents, merge=merge)
    for lvl, (got, truth) in enumerate(zip(out, exact)):
        assert got.groups.dtype == np.int64 and got.size.dtype == np.int64      # integral
        assert got.groups.min(initial=1) > 0 and got.size.min(initial=0) >= 0  # non-negative
        np.testing.assert_array_equal(got.totals(), truth.totals())             # public totals
        if lvl:                                                                 # consistency
            up = got.aggregate(parents[lvl], out[lvl - 1].n_nodes)
            width = max(up.dense().shape[1], out[lvl - 1].dense().shape[1])
            np.testing.assert_array_equal(up.dense(width), out[lvl - 1].dense(width))


def test_rejects_inconsistent_totals() -> None:
    parent = _runs([0], [1], [3], 1)
    child = _runs([0], [1], [2], 1)
    with pytest.raises(ValueError, match="as many groups"):
        match_runs(parent, child, np.array([0]))
