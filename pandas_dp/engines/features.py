"""Every count a release asks of an engine, written once above the engine's primitives.

:class:`CountingEngine` implements the :class:`~pandas_dp.engines.Engine` facade (the
methods releases call) with the :class:`~pandas_dp.engines.primitives.Primitives` of one
engine: each method picks the columns to read, the public inputs, the module-level
functions of :mod:`pandas_dp.engines.pieces` that code and count a piece of rows, and how
partial counts combine. An engine is ``CountingEngine(primitives)``; the counts are the
same exact integers on every engine, and the unit path keeps the same rows (keyed by the
release key and each row's position in the frame).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.algorithms.marginals.workload import Marginal, Workload
from pandas_dp.algorithms.geography.layout import level_tables
from pandas_dp.domain.categories import CategoryDomain
from pandas_dp.domain.grid import Grid
from pandas_dp.domain.label_text import public_order
from pandas_dp.domain.geography import RegionTree
from pandas_dp.engines import pieces
from pandas_dp.engines.pandas.groups import GroupTables
from pandas_dp.engines.pandas.values import ValueGrid
from pandas_dp.engines.primitives import Primitives, UnitRows
from pandas_dp.privacy.units import UnitBounds

__all__ = ["CountingEngine", "CodedCells", "CodedGroups", "CodedTables", "CodedValues"]


class CodedCells:
    """Rows coded by cell (``size`` cells) and by unit, for contribution bounding (private)."""

    def __init__(self, rows: UnitRows, size: int) -> None:
        self.rows, self.size = rows, size

    def counts(self, bounds: UnitBounds, key: bytes) -> np.ndarray:
        """Exact int64 counts per cell after bounding every unit's contribution (``key``: the release's row key)."""
        return np.asarray(self.rows.reduce(pieces.bounded_counts, (bounds, key, self.size), pieces.sum_arrays),
                          dtype=np.int64)

    def contributions(self) -> np.ndarray:
        """Units per step of rows in the domain (for ``max_rows="auto"``)."""
        return np.asarray(self.rows.reduce(pieces.contributions, (), pieces.sum_arrays), dtype=np.int64)

    def kept_and_dropped(self, k: int) -> np.ndarray:
        """``[rows kept, rows dropped]`` by ``max_rows=k``, each unit's dropped rows capped at ``k`` (a unit sits
        in one piece, so the pieces' pairs add up)."""
        return np.asarray(self.rows.reduce(pieces.kept_dropped, (int(k),), pieces.sum_arrays), dtype=np.int64)


class CodedGroups(CodedCells):
    """Rows coded by the hash of their group (no public ids) and by unit (private)."""

    def counts(self, bounds: UnitBounds, key: bytes) -> np.ndarray:
        """Kept rows of every group present (any order; groups meet across pieces by their hash)."""
        return np.asarray(self.rows.reduce(pieces.bounded_group_counts, (bounds, key), pieces.merge_group_counts,
                                           pieces.group_count_values), dtype=np.int64)


class CodedTables:
    """Rows coded by attribute (and leaf region) and by unit, for a table set (private)."""

    def __init__(self, rows: UnitRows, workload: Workload) -> None:
        self.rows, self.workload = rows, workload

    def marginals(self, bounds: UnitBounds, key: bytes) -> dict[Marginal, np.ndarray]:
        """Exact counts of every maximal marginal after bounding every unit's contribution."""
        return _tables(self.rows.reduce(pieces.bounded_tables, (self.workload, bounds, key), pieces.add_tables))


class CodedValues:
    """Rows coded by cell, grid value of every value column and unit, for sums with bounded units (private)."""

    def __init__(self, rows: UnitRows, size: int, grids: tuple[ValueGrid, ...]) -> None:
        self.rows, self.size, self.grids = rows, size, grids

    def sums(self, bounds: UnitBounds, key: bytes) -> np.ndarray:
        """``(columns, 2, cells)`` int64 after bounding every unit: rows with a value and their values' sum."""
        return self.tables(bounds, key)[0]

    def tables(self, bounds: UnitBounds, key: bytes) -> tuple[np.ndarray, dict[int, np.ndarray]]:
        """:meth:`sums`, and the rows per (cell, sub-bin) of every column with ``steps``, after bounding every unit."""
        flat = self.rows.reduce(pieces.bounded_value_sums, (bounds, key, self.size, self.grids), pieces.sum_arrays)
        return pieces.split_value_tables(flat, self.grids, self.size)

    def steps(self, bounds: UnitBounds, key: bytes, value: ValueGrid) -> np.ndarray:
        """Kept rows per grid value ``value.low..value.high`` of the (one) value column, after bounding every unit."""
        return np.asarray(self.rows.reduce(pieces.bounded_value_steps, (bounds, key, value), pieces.sum_arrays),
                          dtype=np.int64)


class CountingEngine:
    """The :class:`~pandas_dp.engines.Engine` methods, once, over ``primitives`` (see the module docstring)."""

    def __init__(self, primitives: Primitives) -> None:
        self.primitives = primitives

    @property
    def name(self) -> str:
        """The engine's name (``"pandas"``, ``"dask"``)."""
        return self.primitives.name

    def _check(self, frame: Any, grids: Sequence[Grid]) -> None:
        for grid in grids:
            self.primitives.check_domain(frame, grid)

    def bin_counts(self, frame: Any, grid: Grid) -> np.ndarray:
        """Exact int64 counts of ``frame``'s rows in every cell of ``grid`` (shape ``grid.shape``).

        Examples
        --------
        >>> import pandas as pd
        >>> from pandas_dp.domain.grid import make_grid
        >>> from pandas_dp.engines.pandas import PANDAS_ENGINE
        >>> df = pd.DataFrame({"age": [3, 15, 17, 200, None]})
        >>> PANDAS_ENGINE.bin_counts(df, make_grid(df, ["age"], bins=[0, 10, 20])).tolist()
        [1, 2]
        """
        self._check(frame, [grid])
        flat = self.primitives.reduce(frame, list(grid.columns), pieces.flat_bin_counts, grid, pieces.sum_arrays)
        return np.asarray(flat, dtype=np.int64).reshape(grid.shape)

    def value_sums(self, frame: Any, grid: Grid, values: Sequence[ValueGrid],
                   tree: RegionTree | None = None) -> np.ndarray:
        """``(columns, 2, cells)`` int64: per value column and cell, the rows with a value and the exact sum
        of their values on the column's public grid (:mod:`pandas_dp.engines.pandas.values`). With a region
        ``tree`` the cells are ``(leaf region, cell)``, ``leaf * grid.size + cell`` (rows out of the tree dropped,
        as :mod:`pandas_dp.engines.pandas.geography_counts` drops them).

        Examples
        --------
        >>> import pandas as pd
        >>> from pandas_dp.domain.grid import make_grid
        >>> from pandas_dp.engines.pandas import PANDAS_ENGINE
        >>> from pandas_dp.engines.pandas.values import ValueGrid
        >>> df = pd.DataFrame({"sex": ["F", "M", "F", "F"], "pay": [10.4, 3.0, None, 500.0]})
        >>> PANDAS_ENGINE.value_sums(df, make_grid(df, ["sex"], categories=["F", "M"]),
        ...                          [ValueGrid("pay", 0, 100, 1.0)]).tolist()
        [[[2, 1], [110, 3]]]
        """
        return self.value_tables(frame, grid, values, tree)[0]

    def value_tables(self, frame: Any, grid: Grid, values: Sequence[ValueGrid],
                     tree: RegionTree | None = None) -> tuple[np.ndarray, dict[int, np.ndarray]]:
        """:meth:`value_sums`, and ``{column: rows per (cell, sub-bin)}`` (``cell * steps + sub-bin``) of every
        value column with ``steps`` (:func:`~pandas_dp.engines.pandas.values.cell_value_steps`), in one pass."""
        self._check(frame, [grid])
        public = pieces.ValueTables(grid, tuple(values), tree)
        located = () if tree is None else tree.located
        columns = list(dict.fromkeys([*located, *grid.columns, *(v.column for v in values)]))
        flat = self.primitives.reduce(frame, columns, pieces.flat_value_sums, public, pieces.sum_arrays)
        return pieces.split_value_tables(flat, tuple(values), pieces.value_cell_count(public))

    def value_steps(self, frame: Any, value: ValueGrid) -> np.ndarray:
        """Rows per grid value ``value.low..value.high`` of one value column (clipped to its bounds, rounded to
        its step; a row without a value is dropped): the histogram quantiles are read from.

        Examples
        --------
        >>> import pandas as pd
        >>> from pandas_dp.engines.pandas import PANDAS_ENGINE
        >>> from pandas_dp.engines.pandas.values import ValueGrid
        >>> df = pd.DataFrame({"pay": [0.4, 3.0, None, 500.0, -7.0, "n/a"]})
        >>> PANDAS_ENGINE.value_steps(df, ValueGrid("pay", 0, 4, 1.0)).tolist()
        [2, 0, 0, 1, 1]
        """
        public = pieces.ValueTables(Grid(()), (value,))
        flat = self.primitives.reduce(frame, [value.column], pieces.flat_value_steps, public, pieces.sum_arrays)
        return np.asarray(flat, dtype=np.int64)

    def coded_value_rows(self, frame: Any, grid: Grid, values: Sequence[ValueGrid], bounds: UnitBounds,
                         tree: RegionTree | None = None) -> CodedValues:
        """The rows coded by cell (with a ``tree``: by (leaf region, cell)), value on every value column's grid,
        and privacy unit (sums with bounded units; the bound applies to the rows in the domain)."""
        self._check(frame, [grid])
        public = pieces.ValueTables(grid, tuple(values), tree)
        located = () if tree is None else tree.located
        columns = list(dict.fromkeys([*located, *grid.columns, *(v.column for v in values), bounds.column]))
        rows = self.primitives.unit_rows(frame, columns, pieces.value_codes, public, bounds.column,
                                         hashes=bounds.scheme == "cells", n_codes=1 + len(values))
        return CodedValues(rows, pieces.value_cell_count(public), tuple(values))

    def group_counts(self, values: Any, ids: pd.Index | None) -> np.ndarray:
        """Rows per public group id (aligned with ``ids``), or per group present when ``ids`` is None (any order)."""
        if ids is not None:
            counted = self.primitives.reduce(values, None, pieces.public_group_counts, ids, pieces.sum_arrays)
        else:
            counted = self.primitives.reduce(values, None, pieces.id_counts, None, pieces.merge_id_counts,
                                             pieces.counts_array)
        return np.asarray(counted, dtype=np.int64)

    def coded_rows(self, frame: Any, grid: Grid, bounds: UnitBounds) -> CodedCells:
        """The rows coded by cell and privacy unit, for contribution bounding."""
        rows = self.primitives.unit_rows(frame, [*grid.columns, bounds.column], pieces.narrow_cell_codes, grid,
                                         bounds.column, hashes=bounds.scheme == "cells", n_codes=1)
        return CodedCells(rows, grid.size)

    def coded_group_rows(self, frame: Any, group: Any, ids: pd.Index | None, bounds: UnitBounds) -> CodedCells:
        """The rows coded by public group id (or, without ids, by their group's hash) and privacy unit."""
        columns = [group, bounds.column] if group != bounds.column else [group]
        hashes = bounds.scheme == "cells"
        if ids is not None:
            rows = self.primitives.unit_rows(frame, columns, pieces.group_codes, (group, ids), bounds.column,
                                             hashes=hashes, n_codes=1)
            return CodedCells(rows, len(ids))
        rows = self.primitives.unit_rows(frame, columns, pieces.group_hash_codes, group, bounds.column,
                                         hashes=hashes, n_codes=1)
        return CodedGroups(rows, 0)

    def count_groups(self, persons: Any, tree: RegionTree, *, group_unit: bool = False) -> GroupTables:
        """Exact count-of-counts tables of every region of a public region tree (odd rows dropped)."""
        return self.primitives.count_groups(persons, tree, group_unit=group_unit)

    def region_bin_counts(self, frame: Any, tree: RegionTree, grid: Grid) -> list[np.ndarray]:
        """Exact cell counts of every region of ``tree``, one ``(n_regions, grid.size)`` table per level (root first).

        Every parent's row is the sum of its children's; rows out of domain
        (:mod:`pandas_dp.engines.pandas.geography_counts`) are dropped, silently.

        Examples
        --------
        >>> import pandas as pd
        >>> from pandas_dp.domain.grid import make_grid
        >>> from pandas_dp.domain.geography import region_tree
        >>> from pandas_dp.engines.pandas import PANDAS_ENGINE
        >>> hier = pd.DataFrame({"state": ["A", "A", "B"], "county": ["a1", "a2", "b1"]})
        >>> df = pd.DataFrame({"state": ["A", "B", "A", "B"], "county": ["a2", "b1", "b1", None],
        ...                    "sex": ["F", "M", "F", "F"]})
        >>> tree = region_tree(df.columns, None, ["state", "county"], hierarchy=hier)
        >>> grid = make_grid(df, ["sex"], categories=["F", "M"])
        >>> [t.tolist() for t in PANDAS_ENGINE.region_bin_counts(df, tree, grid)]
        [[[1, 1]], [[1, 0], [0, 1]], [[0, 0], [1, 0], [0, 1]]]
        """
        self._check(frame, [grid])
        columns = list(dict.fromkeys([*tree.located, *grid.columns]))
        flat = self.primitives.reduce(frame, columns, pieces.flat_leaf_counts, pieces.GeographyTables(tree, grid),
                                      pieces.sum_arrays)
        return level_tables(np.asarray(flat, dtype=np.int64).reshape(len(tree.regions[-1]), grid.size), tree)

    def coded_region_rows(self, frame: Any, tree: RegionTree, grid: Grid, bounds: UnitBounds) -> CodedCells:
        """The rows coded by (leaf region, cell) and privacy unit: the bounds apply to the leaf table, whose sums
        are the coarser levels (a unit moves each level by at most its row bound)."""
        self._check(frame, [grid])
        columns = list(dict.fromkeys([*tree.located, *grid.columns, bounds.column]))
        rows = self.primitives.unit_rows(frame, columns, pieces.leaf_codes, pieces.GeographyTables(tree, grid),
                                         bounds.column, hashes=bounds.scheme == "cells", n_codes=1)
        return CodedCells(rows, len(tree.regions[-1]) * grid.size)

    def marginal_counts(self, frame: Any, dims: Sequence[Grid], workload: Workload) -> dict[Marginal, np.ndarray]:
        """Exact int64 counts of every maximal marginal of ``workload``'s closure (one-column grids ``dims``)."""
        self._check(frame, dims)
        public = pieces.Tables(tuple(dims), workload)
        return _tables(self.primitives.reduce(frame, [dim.columns[0] for dim in dims], pieces.table_counts, public,
                                              pieces.add_tables))

    def coded_marginal_rows(self, frame: Any, dims: Sequence[Grid], workload: Workload,
                            bounds: UnitBounds) -> CodedTables:
        """The rows coded by attribute and privacy unit, for a table set with contribution bounding."""
        self._check(frame, dims)
        read = [*(dim.columns[0] for dim in dims), bounds.column]  # the unit is never a released column
        rows = self.primitives.unit_rows(frame, read, pieces.table_codes, pieces.Tables(tuple(dims), workload),
                                         bounds.column, hashes=False, n_codes=len(dims))
        return CodedTables(rows, workload)

    def region_marginal_counts(self, frame: Any, tree: RegionTree, dims: Sequence[Grid],
                               workload: Workload) -> dict[Marginal, np.ndarray]:
        """Exact int64 counts of every maximal marginal of ``workload``, whose attribute 0 is the leaf region
        of ``tree`` (the other attributes: the one-column grids ``dims``); shapes ``(n_leaves, *cells)``."""
        self._check(frame, dims)
        public = pieces.GeographyTables(tree, dims=tuple(dims), workload=workload)
        return _tables(self.primitives.reduce(frame, _geography_columns(tree, dims), pieces.geography_table_counts,
                                              public, pieces.add_tables))

    def coded_region_marginal_rows(self, frame: Any, tree: RegionTree, dims: Sequence[Grid], workload: Workload,
                                   bounds: UnitBounds) -> CodedTables:
        """The rows coded by leaf region, attribute and privacy unit, for a table set by geography."""
        self._check(frame, dims)
        public = pieces.GeographyTables(tree, dims=tuple(dims), workload=workload)
        rows = self.primitives.unit_rows(frame, [*_geography_columns(tree, dims), bounds.column],
                                         pieces.geography_table_codes, public, bounds.column, hashes=False,
                                         n_codes=len(dims) + 1)
        return CodedTables(rows, workload)

    def label_counts(self, frame: Any, column: Any, bounds: UnitBounds | None = None,
                     key: bytes = b"") -> tuple[np.ndarray, np.ndarray]:
        """``(labels, counts)``: every label present in ``column`` and its exact int64 count.

        With ``bounds``, the present labels in their public order
        (:func:`~pandas_dp.domain.label_text.public_order`) become an internal domain (never shown)
        on which every unit is bounded as for a histogram (``key``: the release's row key), so every
        engine keeps the same rows.
        """
        labels, counts = self.primitives.label_counts(frame[column])
        if bounds is None:
            return labels, counts
        labels = labels[public_order(labels)]
        if labels.size == 0:
            return labels, np.zeros(0, dtype=np.int64)
        domain = CategoryDomain(column, pd.Index(labels, dtype=labels.dtype, tupleize_cols=False))
        return labels, self.coded_rows(frame, Grid((domain,)), bounds).counts(bounds, key)


def _tables(tables: dict[Marginal, np.ndarray]) -> dict[Marginal, np.ndarray]:
    return {a: np.asarray(t, dtype=np.int64) for a, t in tables.items()}


def _geography_columns(tree: RegionTree, dims: Sequence[Grid]) -> list[Any]:
    return list(dict.fromkeys([*tree.located, *(dim.columns[0] for dim in dims)]))
