"""Tree layout: integer heights, non-padded levels, aggregation over 1-D and d-dim grids."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pandas_dp.algorithms.tree.layout import tree_height, tree_layout


@pytest.mark.parametrize("b", [2, 3, 7, 10, 16, 1000])
@pytest.mark.parametrize("h", [1, 2, 3, 5])
def test_height_exact_at_and_around_powers(b: int, h: int) -> None:
    # b**h leaves need exactly h levels, one more leaf needs h + 1.
    assert tree_height(b ** h, b) == h
    assert tree_height(b ** h + 1, b) == h + 1
    assert tree_height(b ** h - 1, b) == (h if b ** h - 1 > b ** (h - 1) else h - 1)


def test_height_where_float_log_fails() -> None:
    # math.log(1000, 10) is 2.9999999999999996: ceil would still be 3, but
    # log(10**15, 10) style rounding errors are exactly what integer loops avoid.
    assert math.log(1000, 10) != 3.0
    assert tree_height(1000, 10) == 3
    assert tree_height(10 ** 15, 10) == 15
    assert tree_height(1, 2) == 0


def test_levels_of_non_power_domain_have_no_padding() -> None:
    layout = tree_layout(10, 3)
    assert layout.level_shapes == ((10,), (4,), (2,), (1,))
    assert layout.height == 3
    assert layout.n_nodes == 17
    np.testing.assert_array_equal(layout.n_children(1), [3, 3, 3, 1])
    low, high = layout.intervals(1)
    np.testing.assert_array_equal(low, [0, 3, 6, 9])
    np.testing.assert_array_equal(high, [3, 6, 9, 10])
    low, high = layout.intervals(2)
    np.testing.assert_array_equal(high, [9, 10])


def test_aggregate_and_expand_1d() -> None:
    layout = tree_layout(10, 3)
    x = np.arange(10)
    np.testing.assert_array_equal(layout.aggregate(x, 0), [3, 12, 21, 9])
    np.testing.assert_array_equal(layout.expand(np.array([1, 2, 3, 4]), 0),
                                  [1, 1, 1, 2, 2, 2, 3, 3, 3, 4])


def test_ddim_layout_fanout_b_to_the_d() -> None:
    layout = tree_layout((5, 9), 2)
    assert layout.level_shapes == ((5, 9), (3, 5), (2, 3), (1, 2), (1, 1))
    x = np.arange(45).reshape(5, 9)
    parent = layout.aggregate(x, 0)
    assert parent.shape == (3, 5)
    # Brute force: every leaf (i, j) goes to parent (i // 2, j // 2).
    ref = np.zeros((3, 5), dtype=np.int64)
    for i in range(5):
        for j in range(9):
            ref[i // 2, j // 2] += x[i, j]
    np.testing.assert_array_equal(parent, ref)
    assert layout.n_children(1).max() == 4
    assert layout.expand(parent, 0).shape == (5, 9)
    np.testing.assert_array_equal(layout.expand(parent, 0)[4, 8], parent[2, 4])


def test_total_preserved_up_the_tree() -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(0, 50, size=(7, 4, 6))
    layout = tree_layout(x.shape, 3)
    level = x
    for k in range(layout.height):
        level = layout.aggregate(level, k)
        assert level.shape == layout.level_shapes[k + 1]
        assert level.sum() == x.sum()
    assert level.shape == (1, 1, 1)


def test_invalid_layout() -> None:
    with pytest.raises(ValueError):
        tree_layout(10, 1)
    with pytest.raises(ValueError):
        tree_layout((0, 3), 2)
