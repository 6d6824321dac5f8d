"""The exact sums of value columns per cell (``engines/pandas/values.py``): integers, the same on every machine."""

from __future__ import annotations

import numpy as np

from pandas_dp.algorithms.aggregate import MAX_STEPS
from pandas_dp.engines.pandas.values import MISSING, cell_value_sums


def test_sums_at_the_largest_grid_values_over_many_chunks_are_exact():
    """3 * 2**20 + 7 rows of +-(2**31 - 1) and small values in two cells: Python's integers are the reference."""
    n = 3 * (1 << 20) + 7
    rng = np.random.default_rng(0)
    q = np.where(rng.random(n) < 0.7, MAX_STEPS, -MAX_STEPS).astype(np.int64) + rng.integers(-3, 0, n) * (
        rng.random(n) < 0.5)
    q = np.clip(q, -MAX_STEPS, MAX_STEPS)
    cells = rng.integers(0, 2, n).astype(np.int64)
    out = cell_value_sums(cells, [q], 2)
    for c in range(2):
        assert int(out[0, 1, c]) == sum(int(v) for v in q[cells == c])
        assert int(out[0, 0, c]) == int((cells == c).sum())


def test_rows_out_of_the_domain_or_without_a_value_are_dropped_from_their_column_only():
    cells = np.array([0, 1, -1, 1, 0], dtype=np.int64)
    a = np.array([5, MISSING, 9, 2, 1], dtype=np.int64)
    b = np.array([1, 1, 1, 1, 1], dtype=np.int64)
    out = cell_value_sums(cells, [a, b], 2)
    assert out[0].tolist() == [[2, 1], [6, 2]]
    assert out[1].tolist() == [[2, 2], [2, 2]]
