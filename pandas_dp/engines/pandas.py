"""The pandas engine: exact counts of a frame's rows on a public domain.

This is the only place where pandas rows are read. Values that fall outside
the domain, missing values and values that are not of the domain's kind (a
stray string in a numeric column, an unhashable object) are dropped here,
without an error or a warning; how many were dropped is never returned.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..domain import BinDomain, Grid, numeric_values

from .bounding import coded_group_rows, coded_rows  # noqa: E402  (rows coded by cell and unit, for bounding)

__all__ = ["coded_rows", "coded_group_rows", "bin_counts", "column_values", "group_counts", "count_groups", "prepare_groups"]


def column_values(series: pd.Series, dim: Any) -> Any:
    """The values of one column in the form the dimension's ``codes`` expects.

    Numeric bins get a plain int64/float64 numpy array from
    :func:`~pandas_dp.domain.numeric_values` (anything that is not a real
    number becomes NaN, never an error); categories get the Series itself (a
    Categorical keeps its codes, so no label is hashed).
    """
    if isinstance(dim, BinDomain):
        return numeric_values(series)
    return series


CHUNK_ROWS = 1 << 21


def bin_counts(frame: pd.DataFrame, grid: Grid, *, chunk_rows: int = CHUNK_ROWS) -> np.ndarray:
    """Exact int64 counts of the rows of ``frame`` in every cell of ``grid`` (shape ``grid.shape``).

    Rows are coded in chunks so the temporaries stay O(chunk) however long the frame is.
    """
    columns = [column_values(frame[c], d) for c, d in zip(grid.columns, grid.dims)]
    counts = np.zeros(grid.size + 1, dtype=np.int64)
    for start in range(0, max(len(frame), 1), chunk_rows):
        arrays = [col[start:start + chunk_rows] for col in columns]
        codes = grid.codes(arrays)
        # Shift by one so that dropped rows (code -1) land in cell 0, which is discarded.
        codes += 1
        counts += np.bincount(codes, minlength=grid.size + 1)
    return counts[1:].reshape(grid.shape)


def group_counts(values: pd.Series, ids: pd.Index | None) -> np.ndarray:
    """Rows per group: aligned with the public group ids ``ids``, or per present group when ``ids`` is None.

    With ``ids``, rows whose id is not one of ``ids`` are dropped. Without,
    every plain scalar id (a string, number, date...) is a group; missing ids
    and ids that are not plain scalars (lists, dicts, tuples, objects) are
    dropped. The counts of the groups present then come back in no
    particular order and without their ids. Never raises or warns on the
    values: whether a row counts, and where, depends on that row only
    (:mod:`pandas_dp._labels`), so the sensitivity stays 1.
    """
    from .._labels import factorize, positions

    if ids is not None:
        codes = positions(ids, values)
        return np.bincount(codes + 1, minlength=len(ids) + 1)[1:].astype(np.int64, copy=False)
    codes = factorize(values)
    return np.bincount(codes[codes >= 0]).astype(np.int64, copy=False)


def count_groups(*args: Any, **kwargs: Any) -> Any:
    """Count persons on a public region tree for count-of-counts (see :mod:`.pandas_groups`)."""
    from .pandas_groups import count_groups as count

    return count(*args, **kwargs)


def prepare_groups(*args: Any, **kwargs: Any) -> Any:
    """Build the public region tree and count per region (see :mod:`.pandas_groups`)."""
    from .pandas_groups import prepare_groups as prepare

    return prepare(*args, **kwargs)
