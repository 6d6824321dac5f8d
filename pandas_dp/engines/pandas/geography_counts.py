"""Tables by geography, the pandas kernels: every row's (leaf region, cell) and their exact counts.

These kernels code and count one pandas frame (a whole frame, or one piece of a partitioned
one) for ``histogram(..., by=[...], hierarchy=...)``; every engine counts with them
(:meth:`~pandas_dp.engines.features.CountingEngine.region_bin_counts`). The region tree
(:class:`~pandas_dp.domain.geography.RegionTree`) and the grid
(:class:`~pandas_dp.domain.grid.Grid`) are public and were validated before any
row is read; a row that does not fit them is **out of domain and dropped**,
silently and uncounted (how many were dropped is never returned):

* its leaf region (the finest ``by`` column) is not a region of the tree:
  unknown, missing, or not a plain scalar (a list, a dict, an object...);
* a coarser ``by`` column present in the frame is not the leaf's ancestor
  at that level (unknown, missing, or another region: a county under the
  wrong state);
* one of its released columns falls outside the grid (the rules of
  :meth:`Grid.codes <pandas_dp.domain.grid.Grid.codes>`).

Region labels meet the public labels value by value
(:func:`pandas_dp.domain.labels.positions`), exactly as count-of-counts places its
persons (:mod:`.groups`), so whether a row counts, and where, depends
on that row and the public inputs only: adding or removing one row changes
one cell of one region per level by one (L1 = L2 = 1 per level).

The leaf table is one ``bincount`` of ``leaf * cells + cell`` per chunk of
rows (temporaries stay O(chunk)); the engine sums the coarser levels from it
(:func:`pandas_dp.algorithms.geography.layout.level_tables`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pandas_dp.domain.labels import positions
from pandas_dp.domain.grid import Grid
from pandas_dp.domain.geography import RegionTree
from pandas_dp.engines.pandas.counts import CHUNK_ROWS, cell_codes

__all__ = ["leaf_positions", "leaf_cell_codes", "leaf_cell_counts"]


def leaf_positions(frame: pd.DataFrame, tree: RegionTree) -> np.ndarray:
    """Position of every row's leaf region in ``tree.regions[-1]`` (int64); -1 when the row is out of domain.

    Out of domain: the leaf label is not one of the tree's, or a coarser
    location column of the frame (``tree.located``) is not the leaf's
    ancestor at its level. Never raises or warns on a value.
    """
    with np.errstate(all="ignore"):
        leaf = positions(tree.regions[-1], frame[tree.leaf])
        coarser = [c for c in tree.located if c != tree.leaf]
        if coarser:
            found = np.maximum(leaf, 0)
            agree = np.ones(leaf.size, dtype=bool)
            for col in coarser:
                lvl = tree.level_names.index(col)
                agree &= positions(tree.regions[lvl], frame[col]) == tree.ancestors[lvl][found]
            leaf = np.where(agree, leaf, -1)
        return leaf


def leaf_cell_codes(frame: pd.DataFrame, tree: RegionTree, grid: Grid) -> np.ndarray:
    """Code ``leaf * cells + cell`` of every row's (leaf region, cell) (int64); -1 when the row is out of domain."""
    leaf = leaf_positions(frame, tree)
    cell = cell_codes(frame, grid)
    return np.where((leaf >= 0) & (cell >= 0), leaf * grid.size + cell, -1)


def leaf_cell_counts(frame: pd.DataFrame, tree: RegionTree, grid: Grid, *,
                     chunk_rows: int = CHUNK_ROWS) -> np.ndarray:
    """Exact int64 counts of the rows in every (leaf region, cell): shape ``(n_leaves, grid.size)``.

    Rows are coded in chunks of ``chunk_rows`` (:func:`leaf_cell_codes`): a row
    counts in cell ``leaf * cells + cell`` when both its leaf position
    (:func:`leaf_positions`) and its cell code (``grid.codes``) are found.
    """
    n_leaves, cells = len(tree.regions[-1]), grid.size
    counts = np.zeros(n_leaves * cells + 1, dtype=np.int64)
    for start in range(0, max(len(frame), 1), chunk_rows):
        part = frame.iloc[start:start + chunk_rows] if len(frame) > chunk_rows else frame
        # Shift by one so that dropped rows (code -1) land in cell 0, which is discarded.
        codes = leaf_cell_codes(part, tree, grid)
        counts += np.bincount(codes + 1, minlength=counts.size)
    return counts[1:].reshape(n_leaves, cells)
