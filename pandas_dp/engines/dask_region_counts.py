"""The Dask engine for tables by geography: every region's cell counts, computed as Dask tasks.

The region tree and the grid are public and built on the client from the
frame's column names and the public tables. Every partition is counted where
it lives with the pandas engine's per-row rules
(:func:`pandas_dp.engines.region_counts.leaf_cell_counts`: a row out of
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

from .._optional import import_optional
from ..domain import Grid
from ..regions import RegionTree
from .dask import SPLIT_EVERY, check_known_categories, compute_private, partitions, share, tree_sum
from .region_counts import leaf_cell_counts, level_tables

__all__ = ["region_bin_counts"]


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
        Equal to :func:`pandas_dp.engines.region_counts.region_bin_counts` on
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
