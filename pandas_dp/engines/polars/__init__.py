"""The Polars engine: the primitives on a Polars query, streamed in batches or counted inside Polars.

:class:`PolarsEngine` is the :class:`~pandas_dp.engines.Engine` that
:func:`~pandas_dp.engines.engine_for` returns for a :class:`~.frame.PolarsFrame` (what
``polars.LazyFrame.dp`` and ``polars.DataFrame.dp`` release from; registered by
:mod:`pandas_dp.accessors.polars` when Polars imports): the features written once
(:class:`~pandas_dp.engines.features.CountingEngine`) over :class:`PolarsPrimitives`.

* ``reduce`` pushes a histogram's cell counts and a table set's marginals into the Polars query
  where the dimensions allow it (:mod:`.pushdown`: codes as Polars expressions, counted by a
  streaming ``group_by(...).len()``); every other count streams the query in batches
  (:mod:`.stream`), each counted by the pandas kernels, the partial counts combined.
* ``unit_rows`` codes the batches and keeps the codes and unit hashes of every row, in the
  frame's order (:mod:`.units`): the same rows are kept as on pandas.
* ``label_counts`` counts the labels of every batch and merges them (:mod:`.labels`).
* ``count_groups`` collects the group and geography columns and counts them with the pandas
  kernels (memory: those columns).
* ``check_domain`` refuses the placeholder categories of a Polars ``Categorical`` (:mod:`.frame`).

Its results equal the pandas engine's on the same rows, so a seeded ``rng`` gives identical
releases. Importing this package does not import Polars: its modules load it on first use
(:func:`~.frame.polars_module`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.domain.grid import Grid
from pandas_dp.domain.geography import RegionTree
from pandas_dp.engines import pieces
from pandas_dp.engines.features import CountingEngine
from pandas_dp.engines.pandas import groups
from pandas_dp.engines.pandas.groups import GroupTables
from pandas_dp.engines.polars import labels
from pandas_dp.engines.polars.frame import PolarsColumn, PolarsFrame, check_known_categories, selected
from pandas_dp.engines.polars.sources import file_parts
from pandas_dp.engines.polars.pushdown import cell_expressions, flat_counts, table_counts
from pandas_dp.engines.polars.stream import BATCH_ROWS, guarded, stream_reduce, to_pandas
from pandas_dp.engines.polars.units import PolarsUnitRows, coded_piece

__all__ = ["PolarsEngine", "PolarsPrimitives", "POLARS_ENGINE", "PolarsFrame", "polars_frame"]


class PolarsPrimitives:
    """The primitives on a :class:`~.frame.PolarsFrame`: pushed into Polars, or its batches as pandas pieces.

    ``batch_rows``: rows per streamed batch; ``push_down``: whether counts Polars can compute are
    computed there (False: every count streams through the pandas kernels; the same counts).
    """

    name = "polars"

    def __init__(self, batch_rows: int = BATCH_ROWS, push_down: bool = True) -> None:
        self.batch_rows, self.push_down = batch_rows, push_down

    def check_domain(self, frame: Any, grid: Grid) -> None:
        check_known_categories(frame, grid)

    def reduce(self, data: Any, columns: Sequence[Any] | None, count: Callable[[Any, Any], Any], public: Any,
               combine: Callable[..., Any], finish: Callable[[Any], Any] | None = None) -> Any:
        series = isinstance(data, PolarsColumn)
        totals = []
        for lazy in selected(data, columns):  # one query, or one per file of a scan whose files' types disagree
            out = None if series or not self.push_down else _pushed(lazy, count, public)
            if out is None:
                out = stream_reduce([lazy], count, public, combine, series=series, batch_rows=self.batch_rows)
            totals.append(out)
        total = totals[0] if len(totals) == 1 else combine(*totals)
        return total if finish is None else finish(total)

    def unit_rows(self, frame: Any, columns: Sequence[Any], code: Callable[[Any, Any], Sequence[np.ndarray]],
                  public: Any, unit: Any, *, hashes: bool, n_codes: int) -> PolarsUnitRows:
        return PolarsUnitRows(coded_piece(frame, columns, code, public, unit, hashes=hashes, n_codes=n_codes,
                                          batch_rows=self.batch_rows))

    def label_counts(self, values: Any) -> tuple[np.ndarray, np.ndarray]:
        return labels.label_counts(values)

    def count_groups(self, persons: Any, tree: RegionTree, *, group_unit: bool = False) -> GroupTables:
        columns = [tree.group, *(c for c in tree.located if c != tree.group)]
        rows = [to_pandas(guarded(lambda: lazy.collect(engine="streaming")), False)
                for lazy in selected(persons, columns)]
        return groups.count_groups(rows[0] if len(rows) == 1 else _stacked(rows), tree, group_unit=group_unit)


def _pushed(lazy: Any, count: Callable[[Any, Any], Any], public: Any) -> Any:
    """The counts computed inside Polars, or None when ``count`` or its dimensions are not pushed down."""
    if count is pieces.flat_bin_counts and public.ndim > 0:
        codes = cell_expressions(guarded(lazy.collect_schema), public.dims)
        return None if codes is None else flat_counts(lazy, public, codes)
    if count is pieces.table_counts and public.dims:
        codes = cell_expressions(guarded(lazy.collect_schema), [dim.dims[0] for dim in public.dims])
        return None if codes is None else table_counts(lazy, public.workload, codes)
    return None


def _stacked(rows: list[pd.DataFrame]) -> pd.DataFrame:
    """The rows of every part, one frame (a column whose types differ between parts holds objects)."""
    mixed = [c for c in rows[0].columns if len({str(r[c].dtype) for r in rows}) > 1]
    return pd.concat([r.astype({c: object for c in mixed}) for r in rows], ignore_index=True)


def polars_frame(data: Any) -> PolarsFrame:
    """The :class:`~.frame.PolarsFrame` releases read ``data`` (a LazyFrame or DataFrame) through; a Parquet scan
    whose files disagree on a column's type is read file by file (:func:`.sources.file_parts`)."""
    frame = PolarsFrame(data)
    parts = file_parts(frame.lazy, frame.schema)
    return frame if parts is None else PolarsFrame(frame.lazy, parts)


class PolarsEngine(CountingEngine):
    """Every operation a release asks of an engine, on a Polars frame (see :class:`~pandas_dp.engines.Engine`)."""

    def __init__(self, batch_rows: int = BATCH_ROWS, push_down: bool = True) -> None:
        super().__init__(PolarsPrimitives(batch_rows, push_down))

    def __repr__(self) -> str:
        return "PolarsEngine()"


#: The one Polars engine (stateless).
POLARS_ENGINE = PolarsEngine()
