"""The functions the features hand to the primitives: count one piece of rows, combine partial counts.

Every function here is module-level (Dask ships it to the workers) and reads one piece of
private rows (a pandas frame or Series, or a :class:`~pandas_dp.engines.primitives.Piece` of
coded rows) or partial counts; none raises or warns on a value. The coders they call are the
pandas kernels (:mod:`pandas_dp.engines.pandas`), so every engine codes a row the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.algorithms.marginals.counting import closure_marginals
from pandas_dp.algorithms.marginals.workload import Marginal, Workload
from pandas_dp.domain.grid import Grid
from pandas_dp.domain.labels import factorize, value_classes
from pandas_dp.domain.geography import RegionTree
from pandas_dp.engines.pandas.bounding import (bound_codes, bounded_cell_counts, contribution_histogram, group_cells,
                                               index_dtype, kept_and_dropped, unit_hashes)
from pandas_dp.engines.pandas.counts import bin_counts, cell_codes, group_counts
from pandas_dp.engines.pandas.geography_counts import leaf_cell_codes, leaf_cell_counts, leaf_positions
from pandas_dp.engines.pandas.geography_marginals import region_attribute_codes, region_marginal_counts
from pandas_dp.engines.pandas.marginals import attribute_codes, in_domain, marginal_counts
from pandas_dp.engines.pandas.values import MISSING, ValueGrid, grid_values, value_tables
from pandas_dp.engines.primitives import Piece
from pandas_dp.privacy.units import UnitBounds

__all__ = ["sum_arrays", "add_tables", "merge_by_id", "Tables", "GeographyTables", "flat_bin_counts",
           "flat_leaf_counts", "id_counts", "merge_id_counts", "counts_array", "public_group_counts",
           "table_counts", "geography_table_counts", "narrow_cell_codes", "group_codes", "group_hash_codes",
           "leaf_codes", "table_codes", "geography_table_codes", "bounded_counts", "contributions",
           "kept_dropped", "bounded_group_counts", "merge_group_counts", "group_count_values", "bounded_tables",
           "ValueTables", "split_value_tables", "value_cell_count", "flat_value_sums", "flat_value_steps", "value_codes", "bounded_value_steps",
           "bounded_value_sums"]


# -- combining partial counts ------------------------------------------------------------------------------


def sum_arrays(*arrays: np.ndarray) -> np.ndarray:
    """Element-wise sum of equally shaped count arrays (one node of a reduction tree)."""
    total = np.array(arrays[0], dtype=np.int64, copy=True)
    for more in arrays[1:]:
        total += more
    return total


def add_tables(*parts: dict[Marginal, np.ndarray]) -> dict[Marginal, np.ndarray]:
    """Cell-wise sum of count tables keyed by marginal (exact int64)."""
    total = {a: np.array(t, dtype=np.int64, copy=True) for a, t in parts[0].items()}
    for more in parts[1:]:
        for a, t in more.items():
            total[a] += t
    return total


def merge_by_id(parts: Sequence[pd.DataFrame], keys: list[str], value: str) -> pd.DataFrame:
    """Merge partial sums per id: the ``value`` of rows with equal ``keys`` (class, id, ...) add up.

    Pieces may hold the ids in different dtypes (one odd row makes a partition's column
    ``object``); they are then merged as objects, by value, never cast to a common numeric
    type that could merge distinct ids.
    """
    found = [p for p in parts if len(p)]
    if not found:
        return parts[0]
    if len({str(p["id"].dtype) for p in found}) > 1:
        found = [p.astype({"id": object}) for p in found]
    both = pd.concat(found, ignore_index=True)
    return both.groupby(keys, sort=False, observed=True, as_index=False)[value].sum()


# -- the public inputs of a piece (one object: a distributed scheduler scatters a tuple item by item) ----------


@dataclass(frozen=True, eq=False)
class Tables:
    """Attributes' one-column grids and their workload."""

    dims: tuple[Grid, ...]
    workload: Workload


@dataclass(frozen=True, eq=False)
class GeographyTables:
    """A region tree, a grid or the attributes' grids, and their workload (a table set by geography)."""

    tree: RegionTree
    grid: Grid | None = None
    dims: tuple[Grid, ...] = ()
    workload: Workload | None = None


@dataclass(frozen=True, eq=False)
class ValueTables:
    """A grid of cells and the public grids of the value columns summed in them; with a region tree, the cells
    are ``(leaf region, cell)``, coded ``leaf * grid.size + cell``."""

    grid: Grid
    values: tuple[ValueGrid, ...]
    tree: RegionTree | None = None


# -- counting a piece of rows without units ----------------------------------------------------------------


def flat_bin_counts(piece: pd.DataFrame, grid: Grid) -> np.ndarray:
    """Exact flat int64 counts of a piece's rows in the cells of ``grid``."""
    return bin_counts(piece, grid).reshape(-1)


def flat_leaf_counts(piece: pd.DataFrame, public: GeographyTables) -> np.ndarray:
    """Exact flat (leaf region, cell) counts of a piece's rows."""
    assert public.grid is not None
    return leaf_cell_counts(piece, public.tree, public.grid).reshape(-1)


def public_group_counts(values: pd.Series, ids: pd.Index) -> np.ndarray:
    """Rows per public group id of a piece (other ids dropped)."""
    return group_counts(values, ids)


def id_counts(values: pd.Series, public: None = None) -> pd.DataFrame:
    """Rows per id of a piece: (class, id, count), missing and non-plain ids dropped, in order of appearance."""
    codes = factorize(values)
    present = codes >= 0
    counts = np.bincount(codes[present]).astype(np.int64)
    first = np.zeros(counts.size, dtype=np.int64)
    first[codes[present]] = np.flatnonzero(present)  # any row of an id will do
    ids = values.take(first)
    # The class (boolean, number, string...) goes with the id: a boolean never merges with a number.
    return pd.DataFrame({"cls": value_classes(ids), "id": ids.to_numpy(), "count": counts})


def merge_id_counts(*parts: pd.DataFrame) -> pd.DataFrame:
    """Merge per-id counts: equal (class, id) add up, by value (ids of different dtypes compared as objects)."""
    return merge_by_id(parts, ["cls", "id"], "count")


def counts_array(sizes: pd.DataFrame) -> np.ndarray:
    """The counts of a per-id count frame, without the ids."""
    return sizes["count"].to_numpy(dtype=np.int64)


def table_counts(piece: pd.DataFrame, public: Tables) -> dict[Marginal, np.ndarray]:
    """Exact counts of every maximal marginal of a piece's rows."""
    return marginal_counts(piece, public.dims, public.workload)


def geography_table_counts(piece: pd.DataFrame, public: GeographyTables) -> dict[Marginal, np.ndarray]:
    """Exact counts of every maximal marginal over (leaf region, cells) of a piece's rows."""
    assert public.workload is not None
    return region_marginal_counts(piece, public.tree, public.dims, public.workload)


def _cells(piece: pd.DataFrame, grid: Grid) -> np.ndarray:
    """Every row's cell code (int64; -1 out of the domain); a grid of no columns is one cell."""
    if grid.ndim == 0:
        return np.zeros(len(piece), dtype=np.int64)
    return cell_codes(piece, grid)


def _value_cells(piece: pd.DataFrame, public: ValueTables) -> np.ndarray:
    """Every row's cell code, or with a tree its ``leaf * cells + cell`` code (-1: out of the domain)."""
    cells = _cells(piece, public.grid)
    if public.tree is None:
        return cells
    leaf = leaf_positions(piece, public.tree)
    return np.where((leaf >= 0) & (cells >= 0), leaf * public.grid.size + cells, -1)


def split_value_tables(flat: np.ndarray, grids: Sequence[ValueGrid], size: int) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """The ``(columns, 2, size)`` sums and ``{column: (size * steps,) counts}`` of a flat :func:`flat_value_sums`."""
    flat = np.asarray(flat, dtype=np.int64)
    head = len(grids) * 2 * size
    sums, steps, at = flat[:head].reshape(len(grids), 2, size), {}, head
    for i, g in enumerate(grids):
        if g.steps:
            steps[i] = flat[at:at + size * g.steps]
            at += size * g.steps
    return sums, steps


def value_cell_count(public: ValueTables) -> int:
    """How many cells the value sums have: the grid's, times the leaf regions with a tree."""
    leaves = 1 if public.tree is None else len(public.tree.regions[-1])
    return leaves * public.grid.size


def flat_value_sums(piece: pd.DataFrame, public: ValueTables) -> np.ndarray:
    """Flat: per value column and cell the rows with a value and the sum of their grid values, then the rows per
    (cell, sub-bin) of every column with ``steps`` (:func:`~.pandas.values.value_tables`)."""
    values = [grid_values(piece[v.column], v) for v in public.values]
    return value_tables(_value_cells(piece, public), values, public.values, value_cell_count(public))


def flat_value_steps(piece: pd.DataFrame, public: ValueTables) -> np.ndarray:
    """Rows per grid value ``low..high`` of the one value column of ``public`` (clipped, rounded; missing dropped)."""
    v = public.values[0]
    q = grid_values(piece[v.column], v)
    return np.bincount(q[q != MISSING] - v.low, minlength=v.high - v.low + 1).astype(np.int64)


def value_codes(piece: pd.DataFrame, public: ValueTables) -> list[np.ndarray]:
    """Every row's cell code, then its grid value in every value column (``MISSING``: none)."""
    return [_value_cells(piece, public), *(grid_values(piece[v.column], v) for v in public.values)]


# -- coding a piece of rows for unit bounding ----------------------------------------------------------------


def narrow_cell_codes(piece: pd.DataFrame, grid: Grid) -> list[np.ndarray]:
    """Cell codes (int32 below ``2**31`` cells: half the memory per row; out of domain exactly -1)."""
    return [cell_codes(piece, grid, dtype=index_dtype(grid.size))]


def group_codes(piece: pd.DataFrame, public: tuple[Any, pd.Index]) -> list[np.ndarray]:
    """Position of every row's group among the public ids (-1: unknown, missing or odd)."""
    group, ids = public
    return [group_cells(piece[group], ids)[0]]


def group_hash_codes(piece: pd.DataFrame, group: Any) -> list[np.ndarray]:
    """Every row's group as the canonical hash of its id (0: no group): groups meet across pieces by it."""
    return [unit_hashes(piece[group]).astype(np.int64)]


def leaf_codes(piece: pd.DataFrame, public: GeographyTables) -> list[np.ndarray]:
    """Code ``leaf * cells + cell`` of every row (-1: out of domain)."""
    assert public.grid is not None
    return [leaf_cell_codes(piece, public.tree, public.grid)]


def table_codes(piece: pd.DataFrame, public: Tables) -> list[np.ndarray]:
    """Every row's code on every attribute (-1: outside its domain)."""
    return attribute_codes(piece, public.dims)


def geography_table_codes(piece: pd.DataFrame, public: GeographyTables) -> list[np.ndarray]:
    """Every row's leaf region (attribute 0), then its code on every attribute."""
    return region_attribute_codes(piece, public.tree, public.dims)


# -- bounding every unit of a piece, then counting --------------------------------------------------------------


def bounded_counts(piece: Piece, bounds: UnitBounds, key: bytes, size: int) -> np.ndarray:
    """Exact counts per cell after bounding every unit (:func:`~.pandas.bounding.bounded_cell_counts`)."""
    return bounded_cell_counts(piece.codes[0], piece.units, bounds, key, size, positions=piece.positions,
                               unit_hashes=piece.hashes)


def contributions(piece: Piece) -> np.ndarray:
    """Units per step of rows in the domain (for ``max_rows="auto"``; a unit sits in one piece)."""
    return contribution_histogram(piece.codes[0], piece.units)


def kept_dropped(piece: Piece, k: int) -> np.ndarray:
    """Rows ``max_rows=k`` keeps and drops, each unit's dropped rows capped at ``k``."""
    return kept_and_dropped(piece.codes[0], piece.units, k)


def bounded_group_counts(piece: Piece, bounds: UnitBounds, key: bytes) -> pd.DataFrame:
    """Kept rows per group hash of one piece (groups without public ids): (cell: the hash, count)."""
    hashes = np.asarray(piece.codes[0], dtype=np.int64)
    local = np.where(hashes != 0, pd.factorize(hashes)[0], -1)
    kept = bound_codes(local, piece.units, bounds, key, positions=piece.positions, unit_hashes=piece.hashes,
                       cell_ids=hashes)
    live = kept >= 0
    return pd.DataFrame({"cell": hashes[live], "count": 1}).groupby("cell", as_index=False)["count"].sum()


def merge_group_counts(*parts: pd.DataFrame) -> pd.DataFrame:
    """Merge kept rows per group hash."""
    return pd.concat(parts, ignore_index=True).groupby("cell", as_index=False)["count"].sum()


def group_count_values(counts: pd.DataFrame) -> np.ndarray:
    """The kept rows of every group, without the groups' hashes."""
    return counts["count"].to_numpy(dtype=np.int64)


def bounded_tables(piece: Piece, workload: Workload, bounds: UnitBounds, key: bytes) -> dict[Marginal, np.ndarray]:
    """Exact counts of every maximal marginal after each unit keeps at most ``max_rows`` rows in the domain.

    A row counts toward its unit's bound only when it is inside the domain of every attribute
    (the histogram's rule); the kept rows are the unit's rows of smallest key.
    """
    codes = list(piece.codes)
    live = np.where(in_domain(codes, workload.sizes), 0, -1).astype(np.int64)
    kept = bound_codes(live, piece.units, bounds, key, positions=piece.positions, unit_hashes=piece.hashes) >= 0
    if not codes:
        return {a: np.zeros(workload.shape(a), dtype=np.int64) for a in workload.maximal}
    return closure_marginals([np.where(kept, c, -1) for c in codes], workload, only=workload.maximal)


def bounded_value_steps(piece: Piece, bounds: UnitBounds, key: bytes, value: ValueGrid) -> np.ndarray:
    """:func:`flat_value_steps` of the rows every unit keeps (at most ``max_rows`` rows in the domain)."""
    kept = bound_codes(np.asarray(piece.codes[0], dtype=np.int64), piece.units, bounds, key,
                       positions=piece.positions, unit_hashes=piece.hashes)
    q = np.asarray(piece.codes[1], dtype=np.int64)
    live = (kept >= 0) & (q != MISSING)
    return np.bincount(q[live] - value.low, minlength=value.high - value.low + 1).astype(np.int64)


def bounded_value_sums(piece: Piece, bounds: UnitBounds, key: bytes, size: int,
                       grids: tuple[ValueGrid, ...]) -> np.ndarray:
    """:func:`flat_value_sums` of the rows every unit keeps (at most ``max_rows`` rows in the domain, the
    histogram's rule: a row counts toward its unit's bound when it is in a cell, with or without values)."""
    kept = bound_codes(np.asarray(piece.codes[0], dtype=np.int64), piece.units, bounds, key,
                       positions=piece.positions, unit_hashes=piece.hashes)
    return value_tables(kept, [np.asarray(c, dtype=np.int64) for c in piece.codes[1:]], grids, size)
