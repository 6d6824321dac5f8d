"""Table sets on the pandas engine: every maximal marginal of a workload in one pass over the rows.

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

With a privacy unit, the rows are coded by attribute and by unit, and each unit
keeps at most ``max_rows`` of its rows in the domain, chosen at random by the
row keys of :mod:`~pandas_dp.engines.pandas.bounding` (the same rows on the Dask
engine), before counting.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pandas_dp.algorithms.marginals.counting import closure_marginals
from pandas_dp.algorithms.marginals.workload import Marginal, Workload
from pandas_dp.domain.grid import Grid
from pandas_dp.engines.pandas.bounding import bound_codes, units_of
from pandas_dp.engines.pandas.counts import cell_codes
from pandas_dp.privacy.units import UnitBounds

__all__ = ["BLOCK_ROWS", "attribute_codes", "in_domain", "marginal_counts", "add_tables", "CodedMarginalRows",
           "coded_marginal_rows"]

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


def add_tables(*parts: dict[Marginal, np.ndarray]) -> dict[Marginal, np.ndarray]:
    """Cell-wise sum of count tables keyed by marginal (exact int64)."""
    total = {a: np.array(t, dtype=np.int64, copy=True) for a, t in parts[0].items()}
    for more in parts[1:]:
        for a, t in more.items():
            total[a] += t
    return total


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


@dataclass(frozen=True)
class CodedMarginalRows:
    """The private rows coded by attribute and by unit (never leaves the release)."""

    codes: tuple[np.ndarray, ...]
    units: np.ndarray
    workload: Workload
    positions: np.ndarray | None = None

    def marginals(self, bounds: UnitBounds, key: bytes) -> dict[Marginal, np.ndarray]:
        """Exact counts of every maximal marginal after each unit keeps at most ``max_rows`` rows.

        A row counts toward its unit's bound only when it is inside the domain (the histogram's
        rule); the kept rows are the unit's rows of smallest key (uniformly random, the same
        rows on every engine).
        """
        live = np.where(in_domain(self.codes, self.workload.sizes), 0, -1).astype(np.int64)
        kept = bound_codes(live, self.units, bounds, key, positions=self.positions) >= 0
        codes = [np.where(kept, c, -1) for c in self.codes]
        if not codes:
            return _empty(self.workload)
        return closure_marginals(codes, self.workload, only=self.workload.maximal)


def coded_marginal_rows(frame: pd.DataFrame, dims: Sequence[Grid], workload: Workload,
                        bounds: UnitBounds) -> CodedMarginalRows:
    """Code every row by attribute and by unit (pandas engine); never raises on a value."""
    units, _ = units_of(frame[bounds.column], hashes=False)
    return CodedMarginalRows(tuple(attribute_codes(frame, dims)), units, workload)
