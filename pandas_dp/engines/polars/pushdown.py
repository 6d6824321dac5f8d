"""Counts pushed into the Polars query: cell codes as Polars expressions, counted by ``group_by(...).len()``.

For the hot paths (a histogram's cells, a table set's marginals) every released column is coded
on its public dimension by a Polars expression and the codes are counted by Polars' streaming
``group_by(codes).len()``: the rows never leave Polars, only one row per non-empty cell (or
attribute combination) does. The expressions follow the pandas coders' rules exactly
(:mod:`pandas_dp.domain.binning`, :mod:`pandas_dp.domain.categories`), so the counts are the
pandas engine's:

* numeric bins (edges ``e_0 < ... < e_n``, bin ``i`` is ``[e_i, e_(i+1))``) on an integer or float
  column: a value's bin is the last edge at or below it. Integer-valued evenly spaced edges
  (``bins=64, range=(0, 128)``) by arithmetic (``floor((x - lo) / w)``), other edges by
  ``search_sorted``, on the rows inside ``[lo, hi)`` (a filter before the group-by). ``Int64`` values compare with integer edges
  rounded up (exact) except where the pandas coder compares in float64 (evenly spaced
  non-integral edges), where they are compared in float64 too; every other numeric type is
  compared in float64 (exact). Missing values, ``NaN`` and values outside ``[e_0, e_n)`` drop.
* a list of text labels on a ``String``, ``Enum`` or ``Categorical`` column: exact text match. The
  rows whose text is a label (``is_in``) are grouped by their text itself and the few groups are
  coded afterwards (``pandas.Index.get_indexer`` on the labels), which costs less than casting
  every row to ``Enum(labels)``; the group-by never holds a text that is not a label, so its
  memory is bounded by the public domain whatever the private column holds. With an other cell,
  every present value outside the list is grouped as one null key and lands there; missing
  values drop. An ``Enum`` column whose codebook is the labels is grouped by its codes. A list of
  integer labels on an integer column: exact match.

Any other dimension or column type (dates, durations, booleans, text holding numbers, mixed
labels) is not pushed down: :func:`cell_expressions` returns None and the engine streams the
batches through the pandas kernels instead (the same counts, slower).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.algorithms.marginals.workload import Marginal, Workload
from pandas_dp.domain.binning import EvenFloats, IntegralFloats
from pandas_dp.domain.categories import CategoryDomain
from pandas_dp.domain.grid import BinDomain, Grid
from pandas_dp.engines.polars.frame import polars_module
from pandas_dp.engines.polars.stream import guarded

__all__ = ["cell_expressions", "grouped_codes", "flat_counts", "table_counts"]

_SMALL_INTS = ("Int8", "Int16", "Int32", "UInt8", "UInt16", "UInt32")
_LIMIT = 2.0**62


def _kind(dtype: Any) -> str | None:
    """``"int64"``, ``"float"`` (compared in float64 exactly) or ``"text"``; None: not pushed down."""
    name = type(dtype).__name__ if not isinstance(dtype, type) else dtype.__name__
    if name == "Int64":
        return "int64"
    if name in _SMALL_INTS or name in ("Float32", "Float64"):
        return "float"
    if name in ("String", "Enum", "Categorical"):
        return "text"
    return None


def _bin_code(column: str, dim: BinDomain, kind: str) -> tuple[Any, Any]:
    """Bin code (Int64) of every value and whether it counts (inside ``[e_0, e_n)``)."""
    pl = polars_module()
    edges = np.asarray(dim.keys, dtype=np.float64)
    n = dim.size
    lo, hi = float(edges[0]), float(edges[-1])
    coder = dim.coder
    x = pl.col(column)
    integer = kind == "int64" and not isinstance(coder, EvenFloats) and max(abs(lo), abs(hi)) < _LIMIT
    if integer:
        keys = np.ceil(edges).astype(np.int64)
        x = x.cast(pl.Int64)
        inside = (x >= int(keys[0])) & (x < int(keys[-1]))
        if isinstance(coder, IntegralFloats):
            code = (x - int(lo)) // int(coder.width) if lo != 0 else x // int(coder.width)
        else:
            code = pl.lit(pl.Series(keys)).search_sorted(x, side="right").cast(pl.Int64) - 1
    else:
        x = x.cast(pl.Float64)
        inside = (x >= lo) & (x < hi)  # False for NaN; null for null: dropped either way
        if isinstance(coder, IntegralFloats):
            code = ((x.floor() - lo) // coder.width).cast(pl.Int64)
        else:
            code = pl.lit(pl.Series(edges)).search_sorted(x, side="right").cast(pl.Int64) - 1
    return code, inside  # a code of a row inside is in [0, n): bins of integer edges hold every integer once


def _label_code(column: str, dim: CategoryDomain, kind: str, dtype: Any) -> tuple[Any, ...] | None:
    """Label key of every value, whether it counts, and (for text) how to code the keys found; None when the
    labels are not pushed down."""
    pl = polars_module()
    labels = list(dim.labels)
    x = pl.col(column)
    if kind == "text" and all(type(v) is str for v in labels) and len(set(labels)) == len(labels):
        if isinstance(dtype, pl.Enum) and list(dtype.categories) == labels:
            code = x.to_physical().cast(pl.Int64)  # the column's own codebook: its codes are the cells
        else:
            text = x.cast(pl.String)
            known = text.is_in(labels)
            decode = _TextCodes(tuple(labels), dim.size - 1 if dim.has_other else -1)
            if dim.has_other:  # every present text outside the list is one null key: the other cell
                return pl.when(known).then(text), x.is_not_null(), decode
            return text, known, decode
    elif (type(dtype).__name__ in ("Int64", *_SMALL_INTS[:3]) and labels
          and all(type(v) in (int, np.int64) for v in labels)):
        code = x.cast(pl.Int64).replace_strict([int(v) for v in labels], list(range(len(labels))), default=None,
                                               return_dtype=pl.Int64)
    else:
        return None
    if dim.has_other:
        return code.fill_null(dim.size - 1), x.is_not_null()
    return code, code.is_not_null()


class _TextCodes:
    """The cell codes of the text keys a group-by found: a label's position, ``missing`` for the null key."""

    def __init__(self, labels: tuple[str, ...], missing: int) -> None:
        self.index, self.missing = pd.Index(labels, dtype=object), missing

    def __call__(self, keys: Any) -> np.ndarray:
        codes = self.index.get_indexer(keys.to_numpy().astype(object, copy=False)).astype(np.int64, copy=False)
        codes[keys.is_null().to_numpy()] = self.missing
        return codes


def cell_expressions(schema: Any, dims: Sequence[Any]) -> list[tuple[Any, ...]] | None:
    """Per dimension, a key expression (an Int64 code, or a label's text), the condition for a row to count
    and, for text keys, the function that codes the keys found; None when a dimension is not pushed down."""
    out = []
    for dim in dims:
        if dim.column not in schema:
            return None
        dtype = schema[dim.column]
        kind = _kind(dtype)
        if kind is None:
            return None
        if isinstance(dim, BinDomain):
            if dim.kind != "number" or kind == "text" or np.asarray(dim.keys).dtype != np.float64:
                return None
            out.append(_bin_code(dim.column, dim, kind))
        elif isinstance(dim, CategoryDomain):
            code = _label_code(dim.column, dim, kind, dtype)
            if code is None:
                return None
            out.append(code)
        else:
            return None
    return out


def grouped_codes(lazy: Any, codes: Sequence[tuple[Any, ...]]) -> tuple[list[np.ndarray], np.ndarray]:
    """Every combination of codes present among the rows that count and its rows, by a streaming
    ``filter(...).group_by(codes).len()``: one int64 array per code and the int64 counts."""
    pl = polars_module()
    names = [f"__code{i}" for i in range(len(codes))]
    counts = pl.all_horizontal([code[1] for code in codes]) if len(codes) > 1 else codes[0][1]
    query = (lazy.filter(counts)
             .group_by([code[0].alias(n) for code, n in zip(codes, names)]).agg(pl.len().alias("__rows")))
    out = guarded(lambda: query.collect(engine="streaming"))
    found = [code[2](out[n]) if len(code) > 2 else out[n].to_numpy().astype(np.int64, copy=False)
             for code, n in zip(codes, names)]
    return found, out["__rows"].to_numpy().astype(np.int64, copy=False)


def flat_counts(lazy: Any, grid: Grid, codes: Sequence[tuple[Any, ...]]) -> np.ndarray:
    """Flat int64 counts of the cells of ``grid`` (C order)."""
    found, rows = grouped_codes(lazy, codes)
    flat = np.ravel_multi_index(tuple(found), grid.shape) if found[0].size else np.zeros(0, dtype=np.int64)
    counts = np.zeros(grid.size, dtype=np.int64)
    np.add.at(counts, flat, rows)
    return counts


def table_counts(lazy: Any, workload: Workload, codes: Sequence[tuple[Any, ...]]) -> dict[Marginal, np.ndarray]:
    """Every maximal marginal of ``workload`` from the counts of the attribute combinations present."""
    found, rows = grouped_codes(lazy, codes)
    tables = {}
    for a in workload.maximal:
        table = np.zeros(workload.cells(a), dtype=np.int64)
        if a:
            np.add.at(table, np.ravel_multi_index(tuple(found[i] for i in a), workload.shape(a)), rows)
        else:
            table[...] = rows.sum()
        tables[a] = table.reshape(workload.shape(a))
    return tables
