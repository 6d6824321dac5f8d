"""The pandas engine: exact counts of a frame's rows on a public domain, at the speed of ``np.bincount``.

This is the only place where pandas rows are read. Values that fall outside
the domain, missing values and values that are not of the domain's kind (a
stray string in a numeric column, an unhashable object) are dropped here,
without an error or a warning; how many were dropped is never returned.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.domain.binning import CHUNK_ROWS, ChunkBuffers
from pandas_dp.domain.grid import Grid
from pandas_dp.domain.labels import factorize, positions

__all__ = ["bin_counts", "cell_codes", "column_values", "group_counts", "CHUNK_ROWS"]


def column_values(series: pd.Series, dim: Any) -> Any:
    """The values of one column in the form the dimension's ``codes`` expects.

    Numeric bins get a plain int64/float64 numpy array from
    :func:`~pandas_dp.domain.grid.numeric_values` (anything that is not a real
    number becomes NaN, never an error); date and duration bins get int64
    keys (:mod:`pandas_dp.domain.timevalues`); categories get the Series itself (a
    Categorical keeps its codes, so no label is hashed).
    """
    return dim.column_values(series)


def _readers(frame: pd.DataFrame, grid: Grid) -> list[tuple[np.ndarray, Any]]:
    """Per dimension: the column's values (whole, read once; no copy for int64/float64/datetime64
    columns) and the chunk coder of the dimension."""
    return [dim.reader(frame[c]) for c, dim in zip(grid.columns, grid.dims)]


def _flat_chunk(readers: list[tuple[np.ndarray, Any]], grid: Grid, start: int, stop: int,
                buffers: list[ChunkBuffers]) -> np.ndarray:
    """Flat cell codes of rows ``start:stop`` of a multi-dimensional grid, ``-1`` when any coordinate drops."""
    flat: np.ndarray | None = None
    for (values, coder), buf, n in zip(readers, buffers, grid.shape):
        sub = coder.codes(values[start:stop], buf)
        if coder.offset:
            sub = sub - coder.offset
        bad = (sub < 0) | (sub >= n)
        if flat is None:
            flat = sub.astype(np.int64, copy=True)
            flat[bad] = -1
        else:
            bad |= flat < 0
            flat *= n
            flat += sub
            flat[bad] = -1
    assert flat is not None
    return flat


def cell_codes(frame_chunk: pd.DataFrame, grid: Grid, *, dtype: Any = np.int64) -> np.ndarray:
    """Flat cell code of every row of ``frame_chunk`` (C order over ``grid.shape``), ``-1`` = out of domain.

    The per-chunk step "values -> cell codes" of :func:`bin_counts`, on its own
    (a step such as contribution bounding can sit between it and the count).
    Never raises or warns on a value. Returns a new array of ``dtype``: int64 (a code
    below 0 is out of the domain), or int32 for a grid of fewer than ``2**31`` cells
    (every code out of the domain is then exactly -1; half the memory per row).
    """
    readers = _readers(frame_chunk, grid)
    rows = len(frame_chunk)
    narrow = np.dtype(dtype) != np.int64
    if narrow and (np.dtype(dtype) != np.int32 or grid.size >= 2**31 - 1):
        raise ValueError(f"cell codes are int64, or int32 for fewer than 2**31 cells; not {dtype}")
    out = np.empty(rows, dtype=dtype)
    buffers = [ChunkBuffers() for _ in readers]
    with np.errstate(all="ignore"):
        for start in range(0, rows, CHUNK_ROWS):
            stop = min(start + CHUNK_ROWS, rows)
            if grid.ndim == 1:
                values, coder = readers[0]
                if narrow:  # in int64 first: a code out of int32's range must not wrap into the domain
                    part = np.array(coder.codes(values[start:stop], buffers[0]), dtype=np.int64)
                else:
                    part = out[start:stop]
                    part[...] = coder.codes(values[start:stop], buffers[0])
                if coder.offset:
                    part -= coder.offset
                part[part >= grid.size] = -1
                if narrow:
                    part[part < 0] = -1
                    out[start:stop] = part
            else:
                out[start:stop] = _flat_chunk(readers, grid, start, stop, buffers)
    return out


def bin_counts(frame: pd.DataFrame, grid: Grid, *, chunk_rows: int = CHUNK_ROWS) -> np.ndarray:
    """Exact int64 counts of the rows of ``frame`` in every cell of ``grid`` (shape ``grid.shape``).

    Each column is read once (no copy for int64, float64 and datetime64
    columns) and coded in chunks of ``chunk_rows`` rows that stay in cache; the
    codes of a chunk are counted straight into one accumulator with
    ``np.add.at`` (no per-chunk count array). The accumulator has two more
    cells than the grid, where dropped rows land: they are discarded.

    Notes
    -----
    ``counts[c] = #{rows r : code(r) = c}``, the same as
    ``np.bincount(cell_codes(frame, grid)[codes >= 0], minlength=grid.size)``
    in O(chunk) extra memory beyond the counts.
    """
    readers = _readers(frame, grid)
    rows = len(frame)
    buffers = [ChunkBuffers(min(chunk_rows, max(rows, 1))) for _ in readers]
    with np.errstate(all="ignore"):
        if grid.ndim == 1:
            (values, coder), = readers
            acc = np.zeros(grid.size + 2, dtype=np.int64)
            for start in range(0, rows, chunk_rows):
                np.add.at(acc, coder.codes(values[start:start + chunk_rows], buffers[0]), 1)
            return acc[coder.offset:coder.offset + grid.size]
        acc = np.zeros(grid.size + 1, dtype=np.int64)
        for start in range(0, rows, chunk_rows):
            np.add.at(acc, _flat_chunk(readers, grid, start, min(start + chunk_rows, rows), buffers), 1)
        return acc[:grid.size].reshape(grid.shape)


def group_counts(values: pd.Series, ids: pd.Index | None) -> np.ndarray:
    """Rows per group: aligned with the public group ids ``ids``, or per present group when ``ids`` is None.

    With ``ids``, rows whose id is not one of ``ids`` are dropped. Without,
    every plain scalar id (a string, number, date...) is a group; missing ids
    and ids that are not plain scalars (lists, dicts, tuples, objects) are
    dropped. The counts of the groups present then come back in no
    particular order and without their ids. Never raises or warns on the
    values: whether a row counts, and where, depends on that row only
    (:mod:`pandas_dp.domain.labels`), so the sensitivity stays 1.
    """
    if ids is not None:
        codes = positions(ids, values)
        return np.bincount(codes + 1, minlength=len(ids) + 1)[1:].astype(np.int64, copy=False)
    codes = factorize(values)
    return np.bincount(codes[codes >= 0]).astype(np.int64, copy=False)
