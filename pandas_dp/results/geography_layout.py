"""Pandas shapes of a release by geography: its MultiIndex, its tidy frame, its synthetic rows.

The estimates of a :class:`~pandas_dp.results.geography.GeographyHistogram`
are stored level after level (coarse to fine), region after region (in the
order of ``regions[l]``), cell after cell (C order of the grid). Everything
here is built from those positions with ``np.repeat``/``np.tile``, never by a
loop over regions or cells.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.domain.grid import BinDomain, Grid
from pandas_dp.results._sampling import cell_counts, draw_cells, sampled_columns, sampling_rng

__all__ = ["RESERVED_NAMES", "level_offsets", "geography_index", "cell_columns", "tidy_frame", "leaf_ancestors",
           "synthetic_rows"]

#: Names of the first two index levels and of the tidy frame's value columns (a released column may not use them).
RESERVED_NAMES = ("level", "region", "estimate", "std_error")


def level_offsets(n_regions: Sequence[int], cells: int) -> np.ndarray:
    """Start of every level's block in the flat estimates (and the total at the end)."""
    return np.concatenate([[0], np.cumsum(np.asarray(n_regions, dtype=np.int64) * cells)])


def _region_level(regions: Sequence[pd.Index]) -> tuple[pd.Index, np.ndarray]:
    """One index of the labels of every level, and the code of every region (levels concatenated)."""
    labels = np.concatenate([r.to_numpy(dtype=object) for r in regions])
    codes, uniques = pd.factorize(labels)
    return pd.Index(uniques), codes.astype(np.int64)


def geography_index(levels: Sequence[str], regions: Sequence[pd.Index], grid: Grid) -> pd.MultiIndex:
    """The ``(level, region, *cells)`` MultiIndex of every estimate, in storage order."""
    cells = grid.size
    n = np.array([len(r) for r in regions], dtype=np.int64)
    region_labels, region_codes = _region_level(regions)
    level_codes = np.repeat(np.arange(len(levels), dtype=np.int64), n * cells)
    per_dim = np.unravel_index(np.arange(cells, dtype=np.int64), grid.shape)
    total = int(n.sum())
    codes = [level_codes, np.repeat(region_codes, cells), *(np.tile(c, total) for c in per_dim)]
    names = ["level", "region", *grid.columns]
    return pd.MultiIndex(levels=[pd.Index(list(levels)), region_labels, *(d.index for d in grid.dims)],
                         codes=codes, names=names, verify_integrity=False)


def cell_columns(grid: Grid, cell: np.ndarray) -> dict[str, Any]:
    """One column per dimension for the cells ``cell`` (flat codes): intervals for bins, labels for categories."""
    per_dim = np.unravel_index(np.asarray(cell, dtype=np.int64), grid.shape)
    out: dict[str, Any] = {}
    for dim, idx in zip(grid.dims, per_dim):
        if isinstance(dim, BinDomain):
            out[dim.column] = pd.arrays.IntervalArray.from_breaks(dim.edges, closed="left").take(idx)
        else:
            out[dim.column] = pd.Categorical.from_codes(idx, categories=dim.categories)
    return out


def tidy_frame(levels: Sequence[str], regions: Sequence[pd.Index], grid: Grid, estimate: np.ndarray,
               std_error: np.ndarray) -> pd.DataFrame:
    """``level, region, <cell columns>, estimate, std_error``: one row per region and cell."""
    cells = grid.size
    n = np.array([len(r) for r in regions], dtype=np.int64)
    level = pd.Categorical.from_codes(np.repeat(np.arange(len(levels)), n * cells), categories=list(levels))
    labels = np.concatenate([r.to_numpy(dtype=object) for r in regions])
    data: dict[str, Any] = {"level": level, "region": np.repeat(labels, cells)}
    data.update(cell_columns(grid, np.tile(np.arange(cells, dtype=np.int64), int(n.sum()))))
    data["estimate"] = np.asarray(estimate)
    data["std_error"] = np.asarray(std_error)
    return pd.DataFrame(data)


def leaf_ancestors(parents: Sequence[np.ndarray]) -> list[np.ndarray]:
    """``out[l][j]``: position in level ``l`` of the ancestor of leaf ``j`` (``out[-1]`` is the identity)."""
    leaf = len(parents) - 1
    out = [np.arange(len(parents[leaf]), dtype=np.int64)]
    for lvl in range(leaf, 0, -1):
        out.append(np.asarray(parents[lvl], dtype=np.int64)[out[-1]])
    return out[::-1]


def synthetic_rows(leaf_estimates: np.ndarray, levels: Sequence[str], regions: Sequence[pd.Index],
                   parents: Sequence[np.ndarray], grid: Grid, n: Any, rng: Any) -> pd.DataFrame:
    """Synthetic rows of the finest level: one column per level below the root, then the grid's columns.

    ``n=None`` gives every (leaf, cell) ``round(max(estimate, 0))`` rows; an
    integer draws ``n`` rows with probabilities proportional to those counts
    (see :func:`~pandas_dp.results._sampling.draw_cells`).
    """
    gen = sampling_rng(rng)
    cells = grid.size
    codes = draw_cells(cell_counts(np.asarray(leaf_estimates).reshape(-1)), n, gen)
    leaf, cell = codes // cells, codes % cells
    anc = leaf_ancestors(parents)
    data: dict[str, Any] = {}
    for lvl in range(1, len(levels)):
        data[levels[lvl]] = regions[lvl].take(anc[lvl][leaf]).to_numpy()
    data.update(sampled_columns(grid, cell, gen))
    return pd.DataFrame(data)
