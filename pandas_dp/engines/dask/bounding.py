"""Contribution bounding on Dask: the rows of each unit meet in one partition, only counts come back.

Every partition codes its rows (cell on the public grid, a 64-bit hash of the
unit's value, the row's global position), the coded rows are shuffled on the
unit hash so that all rows of a unit land in one partition, and each partition
bounds its units and counts (:func:`pandas_dp.engines.pandas.bounding.bound_codes`).
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

from pandas_dp.domain.grid import Grid
from pandas_dp.privacy.units import UnitBounds
from pandas_dp.engines.pandas.counts import cell_codes
from pandas_dp.engines.pandas.bounding import (bound_codes, contribution_histogram, group_cells, kept_and_dropped,
                                              unit_codes, unit_hashes)
from pandas_dp.engines.dask.counts import dask_module, compute_private, partitions, share, sum_arrays, tree_sum

__all__ = ["DaskCodedRows", "DaskCodedGroupRows", "coded_rows", "coded_group_rows"]

_META = pd.DataFrame({"cell": np.array([], dtype=np.int64), "unit": np.array([], dtype=np.uint64),
                      "pos": np.array([], dtype=np.uint64)})


def _code_partition(part: pd.DataFrame, grid: Grid, column: Any, offset: int) -> pd.DataFrame:
    cells = cell_codes(part, grid)
    return pd.DataFrame({"cell": np.asarray(cells, dtype=np.int64), "unit": unit_hashes(part[column]),
                         "pos": np.arange(offset, offset + len(part), dtype=np.uint64)})


def _code_group_partition(part: pd.DataFrame, group: Any, ids: pd.Index | None, column: Any,
                          offset: int) -> pd.DataFrame:
    if ids is not None:
        cells = group_cells(part[group], ids)[0]
    else:  # the group's hash travels as its code: groups meet across partitions by it
        cells = unit_hashes(part[group]).astype(np.int64)
    return pd.DataFrame({"cell": cells, "unit": unit_hashes(part[column]),
                         "pos": np.arange(offset, offset + len(part), dtype=np.uint64)})


def _bounded_group_counts(part: pd.DataFrame, bounds: UnitBounds, key: bytes) -> pd.DataFrame:
    """Kept rows per group hash of one shuffled partition (groups without public ids)."""
    hashes = part["cell"].to_numpy(dtype=np.int64)
    local = np.where(hashes != 0, pd.factorize(hashes)[0], -1)
    units = part["unit"].to_numpy(dtype=np.uint64)
    kept = bound_codes(local, unit_codes(units), bounds, key, positions=part["pos"].to_numpy(dtype=np.uint64),
                       unit_hashes=units, cell_ids=hashes)
    live = kept >= 0
    return (pd.DataFrame({"cell": hashes[live], "count": 1}).groupby("cell", as_index=False)["count"].sum())


def _merge_group_counts(*parts: pd.DataFrame) -> pd.DataFrame:
    return pd.concat(parts, ignore_index=True).groupby("cell", as_index=False)["count"].sum()


def _group_count_values(counts: pd.DataFrame) -> np.ndarray:
    return counts["count"].to_numpy(dtype=np.int64)


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


def _kept_and_dropped(part: pd.DataFrame, k: int) -> np.ndarray:
    return kept_and_dropped(part["cell"].to_numpy(dtype=np.int64), unit_codes(part["unit"].to_numpy(dtype=np.uint64)), k)


def shuffled(frame: Any, columns: list[Any], code: Any, meta: pd.DataFrame | None = None) -> Any:
    """The frame's rows coded by ``code(partition, offset)`` (global positions), shuffled by unit.

    ``meta``: the coded frame's empty form (default: ``cell``, ``unit``, ``pos``).
    """
    dask = dask_module()
    import dask.dataframe as dd

    parts = partitions(frame[columns])
    lengths = compute_private(dask.delayed(_stack, pure=True)(
        *[dask.delayed(_length, pure=True)(p) for p in parts]))
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    coded = [code(p, int(o)) for p, o in zip(parts, offsets)]
    empty = _META.astype({"cell": np.int64}) if meta is None else meta
    return dd.from_delayed(coded, meta=empty, verify_meta=False).shuffle(on="unit")


class DaskCodedRows:
    """The rows of a Dask frame coded by cell and unit, shuffled by unit (lazily; private)."""

    def __init__(self, frame: Any, grid: Grid, bounds: UnitBounds) -> None:
        self.grid, self.size = grid, grid.size
        dask = dask_module()
        shared_grid = share(grid)
        code = dask.delayed(_code_partition, pure=True)
        self.shuffled = shuffled(frame, [*grid.columns, bounds.column],
                                  lambda p, offset: code(p, shared_grid, bounds.column, offset))

    def counts(self, bounds: UnitBounds, key: bytes) -> np.ndarray:
        """Exact counts per cell after bounding every unit's contribution (summed on the workers)."""
        dask = dask_module()
        count = dask.delayed(_bounded_counts, pure=True)
        parts = partitions(self.shuffled)
        total = tree_sum([count(p, bounds, key, self.size) for p in parts], combine=sum_arrays)
        return np.asarray(compute_private(total), dtype=np.int64)

    def contributions(self) -> np.ndarray:
        """Units per step of rows in the domain (for ``max_rows="auto"``)."""
        dask = dask_module()
        hist = dask.delayed(_contributions, pure=True)
        total = tree_sum([hist(p) for p in partitions(self.shuffled)], combine=sum_arrays)
        return np.asarray(compute_private(total), dtype=np.int64)

    def kept_and_dropped(self, k: int) -> np.ndarray:
        """Rows ``max_rows=k`` keeps and drops, each unit's dropped rows capped at ``k`` (a unit sits in one
        partition after the shuffle, so the partitions' pairs add up)."""
        dask = dask_module()
        pair = dask.delayed(_kept_and_dropped, pure=True)
        total = tree_sum([pair(p, int(k)) for p in partitions(self.shuffled)], combine=sum_arrays)
        return np.asarray(compute_private(total), dtype=np.int64)


def coded_rows(frame: Any, grid: Grid, bounds: UnitBounds) -> DaskCodedRows:
    """Code the rows of a Dask frame by cell and unit (lazy; the graph is guarded like every count)."""
    return DaskCodedRows(frame, grid, bounds)


class DaskCodedGroupRows(DaskCodedRows):
    """Rows coded by group (unattributed histograms) and unit, shuffled by unit (lazily; private)."""

    def __init__(self, frame: Any, group: Any, ids: pd.Index | None, bounds: UnitBounds) -> None:
        dask = dask_module()
        self.ids = ids
        self.size = len(ids) if ids is not None else 0
        shared = share(ids)
        code = dask.delayed(_code_group_partition, pure=True)
        self.shuffled = shuffled(frame, [group, bounds.column] if group != bounds.column else [group],
                                  lambda p, offset: code(p, group, shared, bounds.column, offset))

    def counts(self, bounds: UnitBounds, key: bytes) -> np.ndarray:
        """Kept rows per public group (aligned with the ids), or per group present (no ids: any order)."""
        if self.ids is not None:
            return super().counts(bounds, key)
        dask = dask_module()
        count = dask.delayed(_bounded_group_counts, pure=True)
        merged = tree_sum([count(p, bounds, key) for p in partitions(self.shuffled)], combine=_merge_group_counts)
        return np.asarray(compute_private(dask.delayed(_group_count_values, pure=True)(merged)), dtype=np.int64)


def coded_group_rows(frame: Any, group: Any, ids: pd.Index | None, bounds: UnitBounds) -> DaskCodedGroupRows:
    """Rows of a Dask frame coded by group and unit (lazy)."""
    return DaskCodedGroupRows(frame, group, ids, bounds)
