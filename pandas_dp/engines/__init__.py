"""Engines: the only code that reads rows (pandas by default, Dask and Polars for larger-than-memory frames).

An engine turns a private frame into exact aggregates on a *public* domain
(counts per cell of a :class:`~pandas_dp.domain.grid.Grid`, rows per public group)
and nothing else. It never raises, warns or reports because of a private value:
a value that does not fit the domain is out of domain, dropped and uncounted.

Engines are registered by frame type (:func:`register_engine`); the release
pipeline asks :func:`engine_for` for the engine of the frame it got. The pandas
engine serves ``pandas.DataFrame``; the Dask engine registers itself for Dask
collections when ``dask.dataframe`` is imported, the Polars engine for the
:class:`~pandas_dp.engines.polars.PolarsFrame` that ``LazyFrame.dp`` and
``DataFrame.dp`` release from when ``polars`` is imported, and the Spark engine for
:class:`~pandas_dp.engines.spark.frame.SparkFrame` (what ``pyspark.sql.DataFrame.dp``
hands the releases) when ``pyspark.sql`` is. Algorithms, the budget and
results never see an engine.

An engine is a :class:`~pandas_dp.engines.features.CountingEngine` (every method of the
:class:`Engine` protocol, written once) over the engine's own implementation of the few
:class:`~pandas_dp.engines.primitives.Primitives` (reduce pieces of rows, bound units, count
labels, count groups, check a domain; mypy checks each engine's primitives). To add an engine:
``engines/<name>/__init__.py`` implements the primitives and subclasses ``CountingEngine``, the
engine registers itself for its frame type here (:func:`register_engine`), and the tests' engine
matrix (the ``engine`` fixture of ``tests/test_conformance.py``, and ``tests/engines/test_dask_conformance.py``
and ``tests/engines/test_polars_conformance.py`` for equality with pandas) runs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable, Protocol

import numpy as np
import pandas as pd

from pandas_dp.algorithms.marginals.workload import Marginal, Workload
from pandas_dp.domain.grid import Grid
from pandas_dp.domain.geography import RegionTree
from pandas_dp.engines.pandas import PANDAS_ENGINE
from pandas_dp.engines.pandas.groups import GroupTables
from pandas_dp.engines.pandas.values import ValueGrid
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.units import UnitBounds

__all__ = ["Engine", "CodedRows", "CodedMarginalRows", "CodedValueRows", "engine_for", "register_engine"]


class CodedRows(Protocol):
    """Private rows coded by cell (or group, or region and cell) and privacy unit; never leaves the release."""

    def counts(self, bounds: UnitBounds, key: bytes) -> np.ndarray:
        """Exact int64 counts per cell after bounding every unit's contribution (``key``: the release's row key)."""

    def contributions(self) -> np.ndarray:
        """Units per step of rows in the domain (for ``max_rows="auto"``)."""

    def kept_and_dropped(self, k: int) -> np.ndarray:
        """``[rows kept, rows dropped]`` by ``max_rows=k``, each unit's dropped rows capped at ``k`` (``report_dropped``)."""


class CodedMarginalRows(Protocol):
    """Private rows coded by attribute and privacy unit, for a table set; never leaves the release."""

    def marginals(self, bounds: UnitBounds, key: bytes) -> dict[Marginal, np.ndarray]:
        """Exact counts of every maximal marginal after bounding every unit's contribution."""


class CodedValueRows(Protocol):
    """Private rows coded by cell, value on every value column's grid and privacy unit; never leaves the release."""

    def sums(self, bounds: UnitBounds, key: bytes) -> np.ndarray:
        """``(columns, 2, cells)`` int64 after bounding every unit: rows with a value and their values' sum."""

    def steps(self, bounds: UnitBounds, key: bytes, value: ValueGrid) -> np.ndarray:
        """int64 kept rows per grid value of the one value column, after bounding every unit."""

    def tables(self, bounds: UnitBounds, key: bytes) -> tuple[np.ndarray, dict[int, np.ndarray]]:
        """The sums and ``{column: rows per (cell, sub-bin)}`` of the columns with ``steps``, after bounding."""


class Engine(Protocol):
    """Every operation a release asks of an engine (:class:`~pandas_dp.engines.features.CountingEngine`, for
    :class:`~pandas_dp.engines.pandas.PandasEngine` and :class:`~pandas_dp.engines.dask.DaskEngine`).

    Each method reads private rows and returns exact aggregates on a public domain; none raises,
    warns or reports because of a private value.
    """

    def bin_counts(self, frame: Any, grid: Grid) -> np.ndarray:
        """Exact int64 counts of ``frame``'s rows in every cell of ``grid`` (shape ``grid.shape``)."""

    def value_sums(self, frame: Any, grid: Grid, values: Sequence[ValueGrid],
                   tree: RegionTree | None = None) -> np.ndarray:
        """``(columns, 2, cells)`` int64: per value column and cell (with a region ``tree``: per (leaf region,
        cell)), the rows with a value and the sum of their values on the column's public grid (a missing or
        non-numeric value is dropped from its column only)."""

    def value_tables(self, frame: Any, grid: Grid, values: Sequence[ValueGrid],
                     tree: RegionTree | None = None) -> tuple[np.ndarray, dict[int, np.ndarray]]:
        """:meth:`value_sums`, and the rows per (cell, sub-bin) of every value column with ``steps``, in one pass."""

    def value_steps(self, frame: Any, value: ValueGrid) -> np.ndarray:
        """int64 rows per grid value ``value.low..value.high`` of one value column (clipped, rounded; missing
        dropped)."""

    def coded_value_rows(self, frame: Any, grid: Grid, values: Sequence[ValueGrid], bounds: UnitBounds,
                         tree: RegionTree | None = None) -> CodedValueRows:
        """The rows coded by cell (or (leaf region, cell)), grid value of every value column and privacy unit,
        for bounded sums."""

    def group_counts(self, values: Any, ids: pd.Index | None) -> np.ndarray:
        """Rows per public group id (aligned with ``ids``), or per group present when ``ids`` is None."""

    def coded_rows(self, frame: Any, grid: Grid, bounds: UnitBounds) -> CodedRows:
        """The rows coded by cell and privacy unit, for contribution bounding."""

    def coded_group_rows(self, frame: Any, group: Any, ids: pd.Index | None, bounds: UnitBounds) -> CodedRows:
        """The rows coded by public group id and privacy unit, for contribution bounding."""

    def count_groups(self, persons: Any, tree: RegionTree, *, group_unit: bool = False) -> GroupTables:
        """Exact count-of-counts tables of every region of a public region tree (odd rows dropped).

        ``group_unit``: the group is the privacy unit, so without a Groups table an id whose persons
        sit in more than one leaf is out of domain (each id is one group).
        """

    def region_bin_counts(self, frame: Any, tree: RegionTree, grid: Grid) -> list[np.ndarray]:
        """Exact counts of every region's cells, one table per level of ``tree`` (root first)."""

    def coded_region_rows(self, frame: Any, tree: RegionTree, grid: Grid, bounds: UnitBounds) -> CodedRows:
        """The rows coded by (leaf region, cell) and privacy unit, for contribution bounding."""

    def marginal_counts(self, frame: Any, dims: Sequence[Grid], workload: Workload) -> dict[Marginal, np.ndarray]:
        """Exact int64 counts of every maximal marginal of ``workload``'s closure (one-column grids ``dims``)."""

    def coded_marginal_rows(self, frame: Any, dims: Sequence[Grid], workload: Workload,
                            bounds: UnitBounds) -> CodedMarginalRows:
        """The rows coded by attribute and privacy unit, for a table set with contribution bounding."""

    def region_marginal_counts(self, frame: Any, tree: RegionTree, dims: Sequence[Grid],
                               workload: Workload) -> dict[Marginal, np.ndarray]:
        """Exact int64 counts of every maximal marginal of ``workload``, whose attribute 0 is the leaf region
        of ``tree`` (the other attributes: the one-column grids ``dims``); shapes ``(n_leaves, *cells)``."""

    def coded_region_marginal_rows(self, frame: Any, tree: RegionTree, dims: Sequence[Grid], workload: Workload,
                                   bounds: UnitBounds) -> CodedMarginalRows:
        """The rows coded by leaf region, attribute and privacy unit, for a table set by geography."""

    def label_counts(self, frame: Any, column: Any, bounds: UnitBounds | None = None,
                     key: bytes = b"") -> tuple[np.ndarray, np.ndarray]:
        """``(labels, counts)``: every label present in ``column`` (:mod:`pandas_dp.domain.label_text`) and its
        exact int64 count; with ``bounds``, after bounding every unit (``key``: the release's row key)."""


_REGISTRY: dict[type, Callable[[], Engine]] = {}


def register_engine(frame_type: type, load: Callable[[], Engine]) -> None:
    """Serve frames of ``frame_type`` (and its subclasses) with the engine ``load()`` returns."""
    _REGISTRY[frame_type] = load


def _pandas() -> Engine:
    return PANDAS_ENGINE


register_engine(pd.DataFrame, _pandas)


def engine_for(frame: Any) -> Engine:
    """The engine that counts the rows of ``frame``.

    Raises
    ------
    ParameterError
        When no engine serves the frame's type.
    """
    for cls in type(frame).__mro__:
        load = _REGISTRY.get(cls)
        if load is not None:
            return load()
    raise ParameterError(f"pandas_dp releases read a pandas or Dask DataFrame; got {type(frame).__name__}. "
                         f"Convert it first (e.g. pd.DataFrame(...)).")
