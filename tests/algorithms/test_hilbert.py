"""Tests of the Hilbert-curve ordering and of rectangles as runs along it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pandas_dp.algorithms.hilbert import (hilbert_cells, hilbert_index, hilbert_order, hilbert_side,
                                          rectangle_runs)


@pytest.mark.parametrize("side", [1, 2, 4, 8, 32, 256])
def test_index_is_a_bijection_of_the_square(side):
    rr, cc = np.divmod(np.arange(side * side), side)
    d = hilbert_index(rr, cc, side)
    np.testing.assert_array_equal(np.sort(d), np.arange(side * side))
    r2, c2 = hilbert_cells(d, side)
    np.testing.assert_array_equal(r2, rr)
    np.testing.assert_array_equal(c2, cc)


@pytest.mark.parametrize("side", [2, 4, 16, 128])
def test_consecutive_positions_are_neighbouring_cells(side):
    r, c = hilbert_cells(np.arange(side * side), side)
    np.testing.assert_array_equal(np.abs(np.diff(r)) + np.abs(np.diff(c)), 1)


@pytest.mark.parametrize("side,level", [(16, 1), (16, 2), (64, 3)])
def test_aligned_blocks_are_contiguous_stretches(side, level):
    """The property DAWA relies on: every aligned 2**j block is one stretch of the curve."""
    block = 1 << level
    rr, cc = np.divmod(np.arange(side * side), side)
    d = hilbert_index(rr, cc, side)
    block_id = (rr // block) * (side // block) + cc // block
    lo = np.full(block_id.max() + 1, np.iinfo(np.int64).max)
    np.minimum.at(lo, block_id, d)
    np.testing.assert_array_equal(d // (block * block), lo[block_id] // (block * block))
    assert np.all(lo % (block * block) == 0)


def test_first_order_curve_is_the_u_shape():
    # The order-1 curve visits (0,0), (0,1), (1,1), (1,0) (Hilbert 1891, first step).
    np.testing.assert_array_equal(hilbert_cells(np.arange(4), 2)[0], [0, 0, 1, 1])
    np.testing.assert_array_equal(hilbert_cells(np.arange(4), 2)[1], [0, 1, 1, 0])
    assert hilbert_side((256, 256)) == 256 and hilbert_side((5, 3)) == 8 and hilbert_side((1, 1)) == 1


@pytest.mark.parametrize("shape", [(8, 8), (5, 7), (1, 9), (13, 2), (256, 256)])
def test_order_is_a_permutation_of_the_cells(shape):
    order = hilbert_order(shape)
    np.testing.assert_array_equal(np.sort(order), np.arange(shape[0] * shape[1]))


def _brute_runs(rect, shape):
    pos = np.empty(shape[0] * shape[1], dtype=np.int64)
    pos[hilbert_order(shape)] = np.arange(pos.size)
    grid = np.zeros(shape, dtype=bool)
    grid[rect[0]:rect[1], rect[2]:rect[3]] = True
    return np.sort(pos[grid.ravel()])


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 20), st.integers(1, 20), st.data())
def test_rectangle_runs_cover_exactly_the_rectangle(n1, n2, data):
    r = sorted(data.draw(st.lists(st.integers(0, n1), min_size=2, max_size=2, unique=True)))
    c = sorted(data.draw(st.lists(st.integers(0, n2), min_size=2, max_size=2, unique=True)))
    rect = np.array([[r[0], r[1], c[0], c[1]]])
    q, lo, hi = rectangle_runs(rect, (n1, n2))
    covered = np.concatenate([np.arange(a, b) for a, b in zip(lo, hi)])
    np.testing.assert_array_equal(np.sort(covered), _brute_runs(rect[0], (n1, n2)))
    assert np.all(q == 0)
    assert np.all(lo[1:] > hi[:-1])                     # sorted, disjoint and maximal


def test_many_rectangles_at_once_match_one_by_one():
    rng = np.random.default_rng(0)
    shape = (32, 32)
    a, b = rng.integers(0, 32, (2, 40, 2))
    rects = np.column_stack([a.min(1), a.max(1) + 1, b.min(1), b.max(1) + 1])
    q, lo, hi = rectangle_runs(rects, shape)
    for i, rect in enumerate(rects):
        sel = q == i
        single = rectangle_runs(rect[None], shape)
        np.testing.assert_array_equal(lo[sel], single[1])
        np.testing.assert_array_equal(hi[sel], single[2])
    # a square aligned block of the power-of-two grid is a single run
    q, lo, hi = rectangle_runs(np.array([[8, 16, 16, 24]]), shape)
    assert lo.size == 1 and hi[0] - lo[0] == 64
