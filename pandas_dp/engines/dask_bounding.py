"""Contribution bounding on Dask: the rows of each unit meet in one partition, only counts come back.

Every partition codes its rows (cell on the public grid, a 64-bit hash of the
unit's value, the row's global position), the coded rows are shuffled on the
unit hash so that all rows of a unit land in one partition, and each partition
bounds its units and counts (:func:`pandas_dp.engines.bounding.bound_codes`).
Row keys are a pseudorandom function of the global position and units are
identified by the same hash as on pandas, so a seeded release is identical to
the pandas engine's. The global positions need each partition's length: they
are computed on the workers and used only to number the rows; nothing else
about the rows reaches the client, and nothing about them is ever returned.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..domain import Grid
from ..units import UnitBounds
from .bounding import bound_codes, contribution_histogram, unit_codes, unit_hashes
from .dask import _dask, compute_private, partitions, share, sum_arrays, tree_sum

__all__ = ["DaskCodedRows", "coded_rows"]

_META = pd.DataFrame({"cell": np.array([], dtype=np.int64), "unit": np.array([], dtype=np.uint64),
                      "pos": np.array([], dtype=np.uint64)})


def _code_partition(part: pd.DataFrame, grid: Grid, column: Any, offset: int) -> pd.DataFrame:
    from .pandas import column_values

    cells = grid.codes([column_values(part[c], d) for c, d in zip(grid.columns, grid.dims)])
    return pd.DataFrame({"cell": np.asarray(cells, dtype=np.int64), "unit": unit_hashes(part[column]),
                         "pos": np.arange(offset, offset + len(part), dtype=np.uint64)})


def _length(part: pd.DataFrame) -> int:
    return len(part)


def _stack(*lengths: int) -> np.ndarray:
    return np.asarray(lengths, dtype=np.int64)


def _bounded_counts(part: pd.DataFrame, bounds: UnitBounds, key: bytes, size: int) -> np.ndarray:
    hashes = part["unit"].to_numpy(dtype=np.uint64)
    kept = bound_codes(part["cell"].to_numpy(dtype=np.int64), unit_codes(hashes), bounds, key,
                       positions=part["pos"].to_numpy(dtype=np.uint64), unit_hashes=hashes)
    return np.bincount(kept + 1, minlength=size + 1)[1:].astype(np.int64)


def _contributions(part: pd.DataFrame) -> np.ndarray:
    return contribution_histogram(part["cell"].to_numpy(dtype=np.int64),
                                  unit_codes(part["unit"].to_numpy(dtype=np.uint64)))


class DaskCodedRows:
    """The rows of a Dask frame coded by cell and unit, shuffled by unit (lazily; private)."""

    def __init__(self, frame: Any, grid: Grid, bounds: UnitBounds) -> None:
        self.grid, self.size = grid, grid.size
        dask = _dask()
        import dask.dataframe as dd

        parts = partitions(frame[[*grid.columns, bounds.column]])
        lengths = compute_private(dask.delayed(_stack, pure=True)(
            *[dask.delayed(_length, pure=True)(p) for p in parts]))
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        shared_grid = share(grid)
        code = dask.delayed(_code_partition, pure=True)
        coded = [code(p, shared_grid, bounds.column, int(o)) for p, o in zip(parts, offsets)]
        self.shuffled = dd.from_delayed(coded, meta=_META, verify_meta=False).shuffle(on="unit")

    def counts(self, bounds: UnitBounds, key: bytes) -> np.ndarray:
        """Exact counts per cell after bounding every unit's contribution (summed on the workers)."""
        dask = _dask()
        count = dask.delayed(_bounded_counts, pure=True)
        parts = partitions(self.shuffled)
        total = tree_sum([count(p, bounds, key, self.size) for p in parts], combine=sum_arrays)
        return np.asarray(compute_private(total), dtype=np.int64)

    def contributions(self) -> np.ndarray:
        """Units per step of rows in the domain (for ``max_rows="auto"``)."""
        dask = _dask()
        hist = dask.delayed(_contributions, pure=True)
        total = tree_sum([hist(p) for p in partitions(self.shuffled)], combine=sum_arrays)
        return np.asarray(compute_private(total), dtype=np.int64)


def coded_rows(frame: Any, grid: Grid, bounds: UnitBounds) -> DaskCodedRows:
    """Code the rows of a Dask frame by cell and unit (lazy; the graph is guarded like every count)."""
    return DaskCodedRows(frame, grid, bounds)
