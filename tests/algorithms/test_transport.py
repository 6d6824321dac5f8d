"""Two-way controlled rounding with fixed margins (:mod:`pandas_dp.algorithms.transport_rounding`) and the
projection onto a level's transportation polytope (:mod:`pandas_dp.algorithms.marginals.transport`):
exact margins, floor/ceiling wherever a real table has those margins (Bacharach), non-negativity under
any consistent margins, and the projection's optimality certified by its KKT conditions."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from pandas_dp.algorithms.marginals.transport import transport_project
from pandas_dp.algorithms.transport_rounding import transport_round


def _blocks(draw_sizes, s: int, rng: np.random.Generator):
    block = np.repeat(np.arange(len(draw_sizes)), draw_sizes)
    return block, rng.gamma(0.6, 3.0, size=(block.size, s)) * (rng.random((block.size, s)) < 0.7)


def _column_sums(values: np.ndarray, block: np.ndarray, n_blocks: int) -> np.ndarray:
    out = np.zeros((n_blocks, values.shape[1]), dtype=values.dtype)
    np.add.at(out, block, values)
    return out


@settings(max_examples=30, deadline=None)
@given(sizes=st.lists(st.integers(1, 6), min_size=1, max_size=4), s=st.integers(1, 6), seed=st.integers(0, 2**32 - 1))
def test_a_real_table_with_integer_margins_rounds_within_its_floors_and_ceilings(sizes, s, seed):
    """Move mass around cycles of an integer table (margins kept): the real table has integer margins, so
    a rounding within floor/ceiling with those margins exists, and the maximum flow finds one."""
    rng = np.random.default_rng(seed)
    block, _ = _blocks(sizes, s, rng)
    base = rng.integers(0, 4, size=(block.size, s)).astype(np.float64)
    x = base.copy()
    for _ in range(4 * block.size):             # cycles r1 a1 + r2 a2 - r1 a2 - r2 a1 within a block
        b = rng.integers(len(sizes))
        rows = np.flatnonzero(block == b)
        r1, r2 = rng.choice(rows, 2)
        a1, a2 = rng.choice(s, 2)
        if r1 == r2 or a1 == a2:
            continue
        step = rng.uniform(0, min(x[r1, a2], x[r2, a1]))
        x[r1, a1] += step
        x[r2, a2] += step
        x[r1, a2] -= step
        x[r2, a1] -= step
    rows_total = base.sum(axis=1).astype(np.int64)
    cols_total = _column_sums(base, block, len(sizes)).astype(np.int64)
    out = transport_round(x, block, rows_total, cols_total)
    assert out.dtype == np.int64 and (out >= 0).all()
    assert np.array_equal(out.sum(axis=1), rows_total)
    assert np.array_equal(_column_sums(out, block, len(sizes)), cols_total)
    assert np.all(out >= np.floor(x - 1e-9)) and np.all(out <= np.ceil(x + 1e-9))


@settings(max_examples=30, deadline=None)
@given(sizes=st.lists(st.integers(1, 5), min_size=1, max_size=3), s=st.integers(1, 5), seed=st.integers(0, 2**32 - 1))
def test_any_consistent_margins_are_met_exactly_with_non_negative_integers(sizes, s, seed):
    """Margins unrelated to the values (only each block's totals agree): still exact and non-negative."""
    rng = np.random.default_rng(seed)
    block, x = _blocks(sizes, s, rng)
    other = rng.integers(0, 5, size=x.shape)
    out = transport_round(x, block, other.sum(axis=1), _column_sums(other, block, len(sizes)))
    assert (out >= 0).all()
    assert np.array_equal(out.sum(axis=1), other.sum(axis=1))
    assert np.array_equal(_column_sums(out, block, len(sizes)), _column_sums(other, block, len(sizes)))


def test_the_nearest_rounding_is_kept_when_the_margins_allow_it():
    """Integer margins of a table whose nearest rounding has them: that rounding comes back."""
    x = np.array([[0.7, 0.3, 2.0], [0.3, 1.7, 1.0]])
    out = transport_round(x, np.zeros(2, dtype=int), np.array([3, 3]), np.array([[1, 2, 3]]))
    assert np.array_equal(out, [[1, 0, 2], [0, 2, 1]])


def test_integer_input_comes_back_unchanged():
    x = np.array([[3.0, 0.0], [1.0, 2.0], [5.0, 5.0]])
    block = np.array([0, 0, 1])
    assert np.array_equal(transport_round(x, block, x.sum(axis=1).astype(int),
                                          _column_sums(x, block, 2).astype(int)), x)


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(1, 6), min_size=1, max_size=4), cells=st.integers(1, 8), seed=st.integers(0, 2**32 - 1))
def test_the_projection_meets_its_kkt_conditions(sizes, cells, seed):
    """``x = max(0, t - v (a + b))`` by construction; with every parent's cells and every child's total met
    it is the unique projection (KKT conditions of a strictly convex QP suffice)."""
    rng = np.random.default_rng(seed)
    codes = np.repeat(np.arange(len(sizes)), sizes)
    truth = rng.gamma(0.5, 4.0, size=(codes.size, cells)) * (rng.random((codes.size, cells)) < 0.8)
    parents = _column_sums(truth, codes, len(sizes))
    t = truth + rng.normal(0, 3.0, size=truth.shape)
    v = rng.uniform(0.5, 2.0, size=codes.size)
    done = transport_project(t, v, codes, parents, truth.sum(axis=1), tol=1e-10, max_sweeps=100_000)
    x = done.x
    assert (x >= 0).all()
    assert np.allclose(_column_sums(x, codes, len(sizes)), parents, atol=1e-9)
    assert np.allclose(x.sum(axis=1), truth.sum(axis=1), atol=1e-9)
    assert np.allclose(x, np.maximum(t - v[:, None] * (done.a[:, None] + done.b[codes]), 0.0), atol=1e-9)


def test_the_projection_of_a_feasible_point_is_that_point():
    codes = np.array([0, 0, 1])
    x = np.array([[1.0, 2.0], [3.0, 0.0], [4.0, 4.0]])
    done = transport_project(x, np.ones(3), codes, _column_sums(x, codes, 2), x.sum(axis=1), tol=1e-12)
    assert np.allclose(done.x, x) and done.sweeps == 1


def test_needs_beyond_int32_are_met_exactly():
    """Grid units of a large table: sums far above 2**31 still come out exact (the flow's capacities are
    int32; the north-west corner meets the rest)."""
    x = np.array([[2.0**40 + 0.5, 3.0e9 + 0.5], [1.0, 2.0**35 + 0.25]])
    rows = np.array([2**40 + 2**33, 2**35 - 2**33 + 2], dtype=np.int64)
    cols = np.array([[2**40 + 2**33 - 3_000_000_000 + 1, 3_000_000_001 + 2**35 - 2**33 + 1 - 1]], dtype=np.int64)
    cols[0, 1] = rows.sum() - cols[0, 0]
    out = transport_round(x, np.zeros(2, dtype=int), rows, cols)
    assert (out >= 0).all() and np.array_equal(out.sum(axis=1), rows) and np.array_equal(out.sum(axis=0), cols[0])
