"""Controlled rounding on trees: consistency, integrality, within 1, totals, unbiasedness."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pandas_dp.algorithms.controlled_rounding import controlled_round, integer_tree, tree_parents
from pandas_dp.algorithms.geography.layout import region_layout
from pandas_dp.algorithms.tree.release import release_tree
from pandas_dp.algorithms.tree.layout import tree_layout
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import pure

METHODS = ["largest_remainder", "unbiased"]


@st.composite
def real_trees(draw):
    """A random tree (any fan-out, shuffled codes, sometimes a forest) with consistent
    non-negative real tables: leaves mix zeros, integers, halves and arbitrary fractions."""
    levels = draw(st.integers(1, 4))
    sizes = [draw(st.integers(1, 3))]
    parents: list = [None]
    for _ in range(1, levels):
        fan = draw(st.lists(st.integers(1, 5), min_size=sizes[-1], max_size=sizes[-1]))
        par = np.repeat(np.arange(sizes[-1]), fan)
        perm = np.random.default_rng(draw(st.integers(0, 2**31))).permutation(par.size)
        parents.append(par[perm])
        sizes.append(par.size)
    cells = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    scale = draw(st.sampled_from([1.0, 3.0, 1000.0]))
    kind = rng.integers(0, 4, size=(sizes[-1], cells))
    leaf = np.select([kind == 0, kind == 1, kind == 2],
                     [0.0, rng.integers(0, 5, kind.shape) * 1.0, rng.integers(0, 5, kind.shape) + 0.5],
                     rng.uniform(0, scale, kind.shape))
    lay = region_layout(parents, sizes)
    values = [leaf]
    for lvl in range(levels - 1, 0, -1):
        values.append(lay.aggregate(values[-1], lvl))
    return lay, values[::-1]


def check_rounding(lay, values, out, totals=None) -> None:
    for lvl, (x, r) in enumerate(zip(values, out)):
        assert r.dtype == np.int64 and r.shape == x.shape
        assert np.all(r >= 0)
        # Floor or ceiling of the real value (values within 1e-9 of an integer count as it).
        assert np.all(r >= np.floor(x - 1e-9)) and np.all(r <= np.ceil(x + 1e-9))
        if lvl > 0:
            np.testing.assert_array_equal(lay.aggregate(r, lvl), out[lvl - 1])
        if totals is not None and totals[lvl] is not None:
            np.testing.assert_array_equal(r, totals[lvl])


@settings(max_examples=150, deadline=None)
@given(real_trees(), st.sampled_from(METHODS), st.integers(0, 2**31))
def test_rounding_is_consistent_integral_nonnegative_and_within_one(case, method, seed) -> None:
    lay, values = case
    out = controlled_round(values, lay, method=method, rng=np.random.default_rng(seed))
    check_rounding(lay, values, out)


@settings(max_examples=100, deadline=None)
@given(real_trees(), st.sampled_from(METHODS), st.integers(0, 2**31), st.data())
def test_public_totals_are_matched(case, method, seed, data) -> None:
    lay, values = case
    # Valid public totals for one level: any consistent rounding of it (here an unbiased draw).
    lvl = data.draw(st.integers(0, lay.leaf_level))
    first = controlled_round(values, lay, method="unbiased", rng=np.random.default_rng(seed + 1))
    totals = [None] * lay.n_levels
    totals[lvl] = first[lvl]
    out = controlled_round(values, lay, totals=totals, method=method, rng=np.random.default_rng(seed))
    check_rounding(lay, values, out, totals)


@settings(max_examples=60, deadline=None)
@given(real_trees(), st.sampled_from(METHODS))
def test_integer_input_is_returned_unchanged(case, method) -> None:
    lay, values = case
    ints = controlled_round(values, lay)
    again = controlled_round([v.astype(float) for v in ints], lay, method=method,
                             rng=np.random.default_rng(0))
    for a, b in zip(ints, again):
        np.testing.assert_array_equal(a, b)


def test_largest_remainder_gives_the_ceilings_to_the_largest_fractions() -> None:
    parents = [None, np.array([0, 0, 0, 0, 1, 1])]
    x1 = np.array([[0.9, 1.2], [2.3, 0.5], [0.45, 0.5], [0.35, 1.8], [1.5, 0.0], [2.5, 3.0]])
    x0 = region_layout(parents).aggregate(x1, 1)     # [[4.0, 4.0], [4.0, 3.0]]
    out = controlled_round([x0, x1], parents)
    np.testing.assert_array_equal(out[0], [[4, 4], [4, 3]])
    # Column 0, parent 0: floors 0+2+0+0 = 2, two ceilings go to .9 and .45.
    # Column 1, parent 0: floors 1+0+0+1 = 2, two ceilings: .8, then one of the tied .5 at
    # positions 1 and 2: ties go in van der Corput order of positions (0, 2, 1, 3), so position 2.
    # Parent 1: 4.0 from 1.5 + 2.5 (tie: position 0 first), 3.0 from 0.0 + 3.0.
    np.testing.assert_array_equal(out[1], [[1, 1], [2, 0], [1, 1], [0, 2], [2, 0], [2, 3]])


def test_ties_are_spread_over_the_group() -> None:
    # Sixteen children of 0.25 each: the four ceilings land at positions 0, 8, 4, 12.
    out = controlled_round([np.array([4.0]), np.full(16, 0.25)], [None, np.zeros(16, dtype=int)])
    np.testing.assert_array_equal(np.flatnonzero(out[1]), [0, 4, 8, 12])


def test_roots_round_half_up() -> None:
    out = controlled_round([np.array([0.5, 1.49, 2.51, 3.0])], [None])
    np.testing.assert_array_equal(out[0], [1, 1, 3, 3])


def test_unbiased_rule_is_unbiased_at_every_node() -> None:
    # One tree of fractional values, replicated over 20,000 cells (independent draws per cell).
    parents = [None, np.array([0, 0, 0]), np.array([0, 0, 1, 1, 1, 2])]
    leaf = np.array([0.3, 1.45, 0.2, 0.7, 2.05, 0.9])
    lay = region_layout(parents)
    values = [leaf]
    for lvl in (2, 1):
        values.append(lay.aggregate(values[-1], lvl))
    values = values[::-1]
    n = 20_000
    out = controlled_round([np.repeat(v[:, None], n, axis=1) for v in values], lay,
                           method="unbiased", rng=np.random.default_rng(11))
    for v, r in zip(values, out):
        # Each rounded value is floor + Bernoulli(f): variance f(1 - f) <= 1/4, so the mean of
        # n independent cells has standard error <= 0.5 / sqrt(n) = 0.0035; 5 standard errors
        # on 10 nodes fail with probability < 1e-5 (CLT).
        np.testing.assert_allclose(r.mean(axis=1), v, atol=5 * 0.5 / np.sqrt(n))
    # The deterministic rule is not unbiased here (it rounds the root 5.6 up every time).
    det = controlled_round([np.repeat(v[:, None], 4, axis=1) for v in values], lay)
    assert np.all(det[0] == 6)


@pytest.mark.parametrize("shape,b", [(37, 3), (64, 4), ((6, 9), 2), ((5, 5), 3)])
@pytest.mark.parametrize("method", METHODS)
def test_integer_tree_on_hierarchical_histograms(shape, b, method) -> None:
    rng = np.random.default_rng(1)
    counts = rng.poisson(3.0, size=shape)
    rel = release_tree(counts, loss=pure(0.5), branching=b, nonnegative=True, rng=rng)
    layout = rel.layout
    out = integer_tree(layout, rel.estimates, method=method, rng=rng)
    for k in range(layout.n_levels):
        x = rel.estimates[k]
        assert out[k].dtype == np.int64 and out[k].shape == x.shape
        assert np.all(out[k] >= np.floor(x - 1e-9)) and np.all(out[k] <= np.ceil(x + 1e-9))
        assert np.all(out[k] >= 0)
        if k > 0:
            np.testing.assert_array_equal(layout.aggregate(out[k - 1], k - 1), out[k])
    # A public number of rows at the root, within 1 of the estimate, is matched.
    root = float(rel.estimates[-1].ravel()[0])
    matched = integer_tree(layout, rel.estimates, total=int(np.ceil(root)), method=method, rng=rng)
    assert matched[-1].ravel()[0] == int(np.ceil(root))
    np.testing.assert_array_equal(layout.aggregate(matched[0], 0), matched[1])


def test_tree_parents_of_a_2d_layout() -> None:
    layout = tree_layout((3, 4), 2)          # level shapes (3,4) -> (2,2) -> (1,1)
    parents = tree_parents(layout)
    assert parents[0] is None
    np.testing.assert_array_equal(parents[1], [0, 0, 0, 0])
    # Leaf (i, j) -> node (i // 2, j // 2) of the 2x2 grid, flattened in C order.
    expect = [(i // 2) * 2 + j // 2 for i in range(3) for j in range(4)]
    np.testing.assert_array_equal(parents[2], expect)


def test_nearly_integer_values_from_floating_point_are_robust() -> None:
    # Children summing to the parent only up to floating-point error.
    parents = [None, np.array([0, 0, 0])]
    x1 = np.array([[0.1 + 0.2], [0.7], [2.0 - 1e-13]])       # 0.30000000000000004
    x0 = np.array([[3.0]])
    for method in METHODS:
        out = controlled_round([x0, x1], parents, method=method, rng=np.random.default_rng(0))
        assert out[0][0, 0] == 3 and out[1].sum() == 3 and out[1][2, 0] == 2


@pytest.mark.parametrize("values,totals,match", [
    ([np.array([[1.0]]), np.array([[2.0], [-1.0]])], None, "non-negative"),
    ([np.array([[1.0]]), np.array([[0.2], [0.3]])], None, "consistent"),
    ([np.array([[np.nan]]), np.array([[0.2], [0.3]])], None, "finite"),
    ([np.array([[1.5]]), np.array([[0.7], [0.8]])], [np.array([[3]]), None], "differ"),
    ([np.array([[1.5]]), np.array([[0.7], [0.8]])], [None, np.array([[0], [0]])], "No consistent"),
    ([np.array([[1.5]]), np.array([[0.7], [0.8]])], [np.array([[1.5]]), None], "integer array"),
])
def test_bad_input_is_refused(values, totals, match) -> None:
    with pytest.raises(ParameterError, match=match):
        controlled_round(values, [None, np.array([0, 0])], totals=totals)


def test_unknown_method_is_refused() -> None:
    with pytest.raises(ParameterError, match="largest_remainder"):
        controlled_round([np.array([1.0])], [None], method="nearest")


@settings(max_examples=100, deadline=None)
@given(real_trees(), st.sampled_from(METHODS), st.integers(0, 2**31))
def test_root_totals_over_cells_are_matched(case, method, seed) -> None:
    lay, values = case
    # Any integer between the sums of floors and ceilings of a root's cells is reachable.
    totals = np.rint(values[0].sum(axis=1)).astype(np.int64)
    out = controlled_round(values, lay, root_totals=totals, method=method,
                           rng=np.random.default_rng(seed))
    check_rounding(lay, values, out)
    np.testing.assert_array_equal(out[0].sum(axis=1), totals)


def test_root_totals_unbiased_over_many_roots() -> None:
    # 20,000 independent roots (a forest), each with cells summing to the integer total 4
    # and two children per cell: every node's mean over the roots matches its value.
    n = 20_000
    cells = np.array([0.6, 1.3, 0.35, 1.75])                   # sums to 4
    child = np.array([[0.2, 0.9, 0.05, 1.25], [0.4, 0.4, 0.3, 0.5]])
    parents = [None, np.repeat(np.arange(n), 2)]
    values = [np.tile(cells, (n, 1)), np.tile(child, (n, 1))]
    out = controlled_round(values, parents, root_totals=np.full(n, 4), method="unbiased",
                           rng=np.random.default_rng(4))
    assert np.all(out[0].sum(axis=1) == 4)
    # Standard error of a mean of n Bernoulli draws <= 0.5 / sqrt(n); 5 SE on 12 nodes (CLT).
    np.testing.assert_allclose(out[0].mean(axis=0), cells, atol=5 * 0.5 / np.sqrt(n))
    np.testing.assert_allclose(out[1][0::2].mean(axis=0), child[0], atol=5 * 0.5 / np.sqrt(n))
    np.testing.assert_allclose(out[1][1::2].mean(axis=0), child[1], atol=5 * 0.5 / np.sqrt(n))


def test_unreachable_root_total_is_refused() -> None:
    with pytest.raises(ParameterError, match="root_totals"):
        controlled_round([np.array([[0.5, 0.5]])], [None], root_totals=np.array([3]))
