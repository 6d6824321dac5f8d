"""Values of a release's value columns on their public grid, and their sums per cell (pandas kernel).

A value is read as a number (:func:`~pandas_dp.domain.numeric_values.numeric_values`: anything that is
not a real number is NaN), clipped to the column's public bounds and rounded to its public grid step:
``q = rint(clip(x, low, high) / resolution)``, an integer in the public ``[a, b]``. A missing,
non-numeric or infinite value has no ``q`` (:data:`MISSING`): it is dropped from that column's count
and sum and from nothing else. Nothing here raises or warns on a value.

A date or duration column (``kind`` ``"datetime"`` or ``"timedelta"``) is read as int64 keys, the count of
its ``unit`` since the epoch or in the duration (:mod:`pandas_dp.domain.timevalues`, the rules histograms
of dates use: anything that is not a date, or a duration, of the column's kind has no value), and the keys
go on the grid as numbers do (``low``, ``high`` and ``resolution`` are then in keys).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.domain.numeric_values import numeric_values
from pandas_dp.domain.timevalues import NAT, datetime_keys, timedelta_keys

__all__ = ["ValueGrid", "MISSING", "grid_values", "cell_value_sums", "cell_value_steps", "value_tables"]

#: The grid value of a row without a value (missing, not a number, infinite).
MISSING = np.iinfo(np.int64).min


@dataclass(frozen=True)
class ValueGrid:
    """A value column's public grid: ``low``, ``high`` in grid steps, and the step ``resolution``; how its values
    are read (``kind``: ``"number"``, ``"datetime"`` (``aware``: tz-aware instants) or ``"timedelta"``, in keys
    of ``unit``)."""

    column: Any
    low: int
    high: int
    resolution: float
    kind: str = "number"
    unit: str = "s"
    aware: bool = False
    #: Equal sub-bins of ``[low, high]`` whose rows are counted per cell too (0: none), for quantiles per cell.
    steps: int = 0


def _numbers(series: pd.Series, grid: ValueGrid) -> np.ndarray:
    """Every row's value as float64 (numbers, or the keys of dates and durations); NaN where it has none."""
    if grid.kind == "number":
        return np.asarray(numeric_values(series), dtype=np.float64)
    if grid.kind == "datetime":
        keys = datetime_keys(series, aware=grid.aware, unit=grid.unit)
    else:
        keys = timedelta_keys(series, unit=grid.unit)
    return np.where(keys == NAT, np.nan, keys.astype(np.float64))


def grid_values(series: pd.Series, grid: ValueGrid) -> np.ndarray:
    """Every row's value on the grid (int64 in ``[low, high]``), :data:`MISSING` where it has none.

    One float64 copy of the column, clipped, divided and rounded in place (the column itself is never written).
    """
    with np.errstate(all="ignore"):
        x = _numbers(series, grid)
        ok = np.isfinite(x)
        every = bool(ok.all())
        y = np.array(x, dtype=np.float64, copy=True) if every else np.where(ok, x, 0.0)
        low, high, step = float(grid.low), float(grid.high), float(grid.resolution)
        np.clip(y, low * step, high * step, out=y)
        np.divide(y, step, out=y)
        np.rint(y, out=y)
        np.clip(y, low, high, out=y)
    q = y.astype(np.int64)
    if not every:
        q[~ok] = MISSING
    return q


def cell_value_sums(cells: np.ndarray, values: list[np.ndarray], size: int) -> np.ndarray:
    """``(columns, 2, size)`` int64: per column, the rows with a value in every cell and the sum of their values.

    ``cells``: every row's cell code (``< 0``: out of the domain, dropped from everything). When every row is
    in the domain and has a value, nothing is copied (the common case of clean data).
    """
    out = np.zeros((len(values), 2, size), dtype=np.int64)
    live = cells >= 0
    every = bool(live.all())
    whole = cells.astype(np.intp, copy=False)      # no copy for int64 codes on a 64-bit machine
    counted = None
    for i, q in enumerate(values):
        missing = q == MISSING
        if every and not missing.any():
            where, kept = whole, q
            if counted is None:
                counted = np.bincount(where, minlength=size)
            out[i, 0] = counted
        else:
            keep = live & ~missing
            where, kept = cells[keep].astype(np.intp, copy=False), q[keep]
            out[i, 0] = np.bincount(where, minlength=size)
        out[i, 1] = _exact_sums(where, kept, size)
    return out


def _exact_sums(where: np.ndarray, q: np.ndarray, size: int) -> np.ndarray:
    """Exact int64 sums of ``q`` per cell: one weighted ``np.bincount`` per ``2**20`` rows. ``np.bincount`` sums
    in float64, exact for integers below ``2**53``; a grid value is at most ``MAX_STEPS = 2**31 - 1`` in size,
    so every partial sum of a chunk stays below ``2**51`` and is exact (the same integers on every machine)."""
    total = np.zeros(size, dtype=np.int64)
    for start in range(0, q.size, 1 << 20):
        stop = start + (1 << 20)
        total += np.rint(np.bincount(where[start:stop], weights=q[start:stop], minlength=size)).astype(np.int64)
    return total


def cell_value_steps(cells: np.ndarray, q: np.ndarray, grid: ValueGrid, size: int) -> np.ndarray:
    """``(size * grid.steps,)`` int64: rows with a value per (cell, sub-bin); sub-bin ``j`` holds the grid values
    ``q`` with ``(q - low) * steps // (high - low) == j`` (the top value in the last), exact integer arithmetic."""
    keep = (cells >= 0) & (q != MISSING)
    where = np.minimum(((q[keep] - grid.low) * grid.steps) // (grid.high - grid.low), grid.steps - 1)
    return np.bincount(cells[keep] * grid.steps + where, minlength=size * grid.steps).astype(np.int64)


def value_tables(cells: np.ndarray, values: list[np.ndarray], grids: tuple[ValueGrid, ...], size: int) -> np.ndarray:
    """:func:`cell_value_sums` flat, followed by :func:`cell_value_steps` of every grid with ``steps`` (one array:
    partial tables of pieces add up element by element)."""
    sums = cell_value_sums(cells, values, size).reshape(-1)
    extra = [cell_value_steps(cells, q, g, size) for q, g in zip(values, grids) if g.steps]
    return np.concatenate([sums, *extra]) if extra else sums
