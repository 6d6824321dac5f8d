"""The Dask engine for tables by geography: every region's cell counts, computed as Dask tasks.

The region tree and the grid are public and built on the client from the
frame's column names and the public tables. Every partition is counted where
it lives with the pandas engine's per-row rules
(:func:`pandas_dp.engines.pandas.region_counts.leaf_cell_counts`: a row out of
domain is dropped in its partition, silently), the per-partition leaf tables
(``n_leaves x cells`` int64) are summed exactly in a reduction tree of fan-in
``split_every``, and only that table reaches the client, where the coarser
levels are summed from it. No task raises or warns on a value; a failure of
the frame's own graph is reported without its text
(:class:`~pandas_dp.errors.DataSourceError`).

The result equals the pandas engine's on the same rows, for any
partitioning, so a seeded ``rng`` gives identical releases.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp._utils.optional import import_optional
from pandas_dp.domain.grid import Grid
from pandas_dp.domain.regions import RegionTree
from pandas_dp.privacy.units import UnitBounds
from pandas_dp.engines.pandas.bounding import unit_hashes
from pandas_dp.engines.dask.counts import SPLIT_EVERY, check_known_categories, compute_private, partitions, share, tree_sum
from pandas_dp.engines.dask.bounding import DaskCodedRows, shuffled
from pandas_dp.algorithms.regions.layout import level_tables
from pandas_dp.engines.pandas.region_counts import leaf_cell_codes, leaf_cell_counts

__all__ = ["region_bin_counts", "coded_region_rows"]


@dataclass(frozen=True, eq=False)
class _Job:
    """What every partition task needs (public; shipped once per worker)."""

    tree: RegionTree
    grid: Grid


def _partition_leaf_counts(partition: pd.DataFrame, job: _Job) -> np.ndarray:
    """Exact flat (leaf, cell) counts of one pandas partition (runs on a worker)."""
    return leaf_cell_counts(partition, job.tree, job.grid).reshape(-1)


def region_bin_counts(frame: Any, tree: RegionTree, grid: Grid, *, split_every: int = SPLIT_EVERY) -> list[np.ndarray]:
    """Exact cell counts of every region of ``tree`` for a Dask ``frame`` (root level first).

    Parameters
    ----------
    frame : dask.dataframe.DataFrame
        Only ``tree.located`` and ``grid.columns`` are read (column projection
        reaches a Parquet reader).
    tree : RegionTree
        The public regions.
    grid : Grid
        The public cells of every region's histogram.
    split_every : int
        Fan-in of the reduction tree.

    Returns
    -------
    list of numpy.ndarray
        Equal to :func:`pandas_dp.engines.pandas.region_counts.region_bin_counts` on
        the same rows.

    Raises
    ------
    DomainError
        A categorical grid column with unknown categories and no ``categories=``.
    DataSourceError
        The frame's own graph failed (its message withheld).
    """
    dask = import_optional("dask", extra="dask", purpose="Counting a Dask DataFrame by region")
    check_known_categories(frame, grid)
    columns = list(dict.fromkeys([*tree.located, *grid.columns]))
    parts = partitions(frame[columns])
    job = share(_Job(tree, grid))
    count = dask.delayed(_partition_leaf_counts, pure=True)
    total = tree_sum([count(p, job) for p in parts], split_every=split_every)
    leaf = np.asarray(compute_private(total), dtype=np.int64).reshape(len(tree.regions[-1]), grid.size)
    return level_tables(leaf, tree)


def _code_region_partition(part: pd.DataFrame, job: _Job, column: Any, offset: int) -> pd.DataFrame:
    """One partition's rows coded by (leaf, cell), unit hash and global position (runs on a worker)."""
    return pd.DataFrame({"cell": leaf_cell_codes(part, job.tree, job.grid), "unit": unit_hashes(part[column]),
                         "pos": np.arange(offset, offset + len(part), dtype=np.uint64)})


class DaskCodedRegionRows(DaskCodedRows):
    """Rows of a Dask frame coded by (leaf region, cell) and unit, shuffled by unit (lazily; private)."""

    def __init__(self, frame: Any, tree: RegionTree, grid: Grid, bounds: UnitBounds) -> None:
        dask = import_optional("dask", extra="dask", purpose="Counting a Dask DataFrame by region")
        check_known_categories(frame, grid)
        self.grid, self.size = grid, len(tree.regions[-1]) * grid.size
        job = share(_Job(tree, grid))
        code = dask.delayed(_code_region_partition, pure=True)
        columns = list(dict.fromkeys([*tree.located, *grid.columns, bounds.column]))
        self.shuffled = shuffled(frame, columns, lambda p, offset: code(p, job, bounds.column, offset))


def coded_region_rows(frame: Any, tree: RegionTree, grid: Grid, bounds: UnitBounds) -> DaskCodedRegionRows:
    """Rows of a Dask frame coded by (leaf region, cell) and unit (lazy; equal to the pandas engine's counts)."""
    return DaskCodedRegionRows(frame, tree, grid, bounds)
