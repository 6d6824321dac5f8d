"""Counting kernel: closure marginals from integer codes against a row-by-row reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pandas_dp.algorithms.marginals.counting import closure_marginals, combined_codes
from pandas_dp.algorithms.marginals.workload import make_workload


def reference(codes, workload) -> dict:
    """Row by row: a row counts in every marginal iff every workload attribute is in its domain."""
    out = {a: np.zeros(workload.shape(a), dtype=np.int64) for a in workload.closure}
    for row in zip(*codes):
        if any(not 0 <= row[i] < workload.sizes[i] for i in workload.attributes):
            continue
        for a in workload.closure:
            out[a][tuple(row[i] for i in a)] += 1
    return out


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_kernel_equals_row_by_row_counts(data) -> None:
    d = data.draw(st.integers(1, 4))
    sizes = data.draw(st.lists(st.integers(1, 4), min_size=d, max_size=d))
    tables = data.draw(st.lists(st.lists(st.integers(0, d - 1), min_size=0, max_size=3, unique=True),
                                min_size=1, max_size=4))
    w = make_workload(sizes, tables)
    rows = data.draw(st.integers(0, 60))
    codes = [np.array(data.draw(st.lists(st.integers(-1, n), min_size=rows, max_size=rows)), dtype=np.int64)
             for n in sizes]
    got = closure_marginals(codes, w)
    want = reference(codes, w)
    assert set(got) == set(w.closure)
    for a in w.closure:
        assert got[a].dtype == np.int64 and got[a].shape == w.shape(a)
        assert np.array_equal(got[a], want[a]), a


def test_a_row_out_of_domain_anywhere_is_dropped_from_every_marginal() -> None:
    w = make_workload([2, 3], [(0,), (1,)])
    codes = [np.array([0, 1, -1, 1]), np.array([2, -1, 0, 1])]
    got = closure_marginals(codes, w)
    assert got[(0,)].tolist() == [1, 1] and got[(1,)].tolist() == [0, 1, 1] and int(got[()]) == 2


def test_only_a_subset_and_unused_attributes_are_ignored() -> None:
    w = make_workload([2, 3, 5], [(0, 1)])
    codes = [np.array([0, 1, 1]), np.array([2, 0, 0]), np.array([-1, -1, 9])]  # attribute 2 unused
    got = closure_marginals(codes, w, only=[(1,)])
    assert list(got) == [(1,)] and got[(1,)].tolist() == [2, 0, 1]


def test_combined_codes_are_row_major() -> None:
    codes = [np.array([1, 0]), np.array([2, 1]), np.array([3, 0])]
    assert combined_codes(codes, (0, 2), (2, 3, 4)).tolist() == [7, 0]
    assert combined_codes(codes, (0, 1, 2), (2, 3, 4)).tolist() == [1 * 12 + 2 * 4 + 3, 4]
    assert np.ravel_multi_index((codes[0], codes[1], codes[2]), (2, 3, 4)).tolist() == [23, 4]


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
def test_any_integer_code_dtype(dtype) -> None:
    w = make_workload([3, 4], [(0, 1)])
    rng = np.random.default_rng(0)
    codes = [rng.integers(-1, 3, 500).astype(dtype), rng.integers(-1, 4, 500).astype(dtype)]
    got = closure_marginals(codes, w)
    assert np.array_equal(got[(0, 1)], reference(codes, w)[(0, 1)])


def test_several_chunks_with_out_of_domain_rows() -> None:
    """More rows than one chunk (2**16): the chunked counts equal np.add.at over the whole columns."""
    w = make_workload([3, 300, 4, 2], [(0, 1), (1, 2, 3), (0, 3)])  # 1200- and 2400-cell tables: uint16 codes
    rng = np.random.default_rng(9)
    rows = 150_001
    codes = [rng.integers(-1, n, rows) for n in w.sizes]
    got = closure_marginals(codes, w)
    keep = np.all([c >= 0 for c in codes], axis=0)
    for a in w.closure:
        want = np.zeros(w.shape(a), dtype=np.int64)
        if a:
            np.add.at(want, tuple(codes[i][keep] for i in a), 1)
        else:
            want = np.int64(keep.sum())
        assert np.array_equal(got[a], want), a
