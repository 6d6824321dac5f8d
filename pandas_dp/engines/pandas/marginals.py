"""Table sets, the pandas kernels: every maximal marginal of a workload over one frame in one pass.

Each column of the workload is coded once on its public dimension (the
histogram's coders: :func:`~pandas_dp.engines.pandas.counts.cell_codes` on a
one-column grid, ``-1`` for a value outside the domain, missing or of the
wrong kind), then every maximal marginal of the workload's closure is counted
with one ``np.bincount`` over combined codes
(:func:`~pandas_dp.algorithms.marginals.counting.closure_marginals`). Rows are
taken in blocks of :data:`BLOCK_ROWS`, so the codes of a block (8 bytes per
column and row) are all the memory used besides the tables. A row outside the
domain of any workload column is dropped from every marginal: all tables count
one set of rows. Nothing here raises or warns because of a value.

Every engine counts with these kernels, one piece of rows at a time; with a privacy
unit, each unit keeps at most ``max_rows`` of its rows in the domain, chosen at random
by the row keys of :mod:`~pandas_dp.engines.pandas.bounding`, before counting
(:func:`pandas_dp.engines.pieces.bounded_tables`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from pandas_dp.algorithms.marginals.counting import closure_marginals
from pandas_dp.algorithms.marginals.workload import Marginal, Workload
from pandas_dp.domain.grid import Grid
from pandas_dp.engines.pandas.counts import cell_codes

__all__ = ["BLOCK_ROWS", "attribute_codes", "in_domain", "marginal_counts"]

#: Rows coded at a time (their codes stay small next to the tables).
BLOCK_ROWS = 1 << 20


def attribute_codes(frame: pd.DataFrame, dims: Sequence[Grid]) -> list[np.ndarray]:
    """The code of every row on every attribute's one-column grid (int64, ``-1`` outside its domain)."""
    return [cell_codes(frame, dim) for dim in dims]


def in_domain(codes: Sequence[np.ndarray], sizes: Sequence[int]) -> np.ndarray:
    """Whether each row is inside the domain of every attribute."""
    ok = np.ones(len(codes[0]) if codes else 0, dtype=bool)
    for c, n in zip(codes, sizes):
        ok &= (c >= 0) & (c < n)
    return ok


def _empty(workload: Workload) -> dict[Marginal, np.ndarray]:
    return {a: np.zeros(workload.shape(a), dtype=np.int64) for a in workload.maximal}


def marginal_counts(frame: pd.DataFrame, dims: Sequence[Grid], workload: Workload, *,
                    block_rows: int = BLOCK_ROWS) -> dict[Marginal, np.ndarray]:
    """Exact int64 counts of every maximal marginal of ``workload``'s closure.

    Parameters
    ----------
    frame : DataFrame
        The private rows; only the attributes' columns are read.
    dims : sequence of Grid
        One one-column grid per attribute (attribute ``i`` is ``dims[i]``), public.
    workload : Workload
        The workload over those attributes.

    Returns
    -------
    dict
        ``workload.maximal`` marginal -> counts with one axis per attribute (attribute order).
        Smaller closure marginals are sums of these
        (:func:`~pandas_dp.algorithms.marginals.counting.sum_down`).
    """
    total = _empty(workload)
    rows = len(frame)
    for start in range(0, rows, block_rows):
        part = frame.iloc[start:start + block_rows]
        counted = closure_marginals(attribute_codes(part, dims), workload, only=workload.maximal)
        for a in workload.maximal:
            total[a] += counted[a]
    return total
