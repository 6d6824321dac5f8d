"""The public bounds and grid of every value column of ``aggregate``: numbers, dates and durations.

:func:`check_value_grids` reads ``bounds={column: (low, high)}`` and ``resolution=`` (public, checked
before any charge, never read from the data) into one :class:`~pandas_dp.algorithms.aggregate.ValueColumn`
per value column: the bounds in whole grid steps and the step.

* **Numbers**: ``(low, high)`` two finite numbers; ``resolution`` a positive number (default 1).
* **Dates** (datetime columns): ``(low, high)`` two dates (``pd.Timestamp``, ``datetime``, ``date`` or
  ``numpy.datetime64``; both naive, or both tz-aware); ``resolution`` a duration (``pd.Timedelta``,
  ``timedelta``, ``numpy.timedelta64`` or a pandas duration string such as ``"1D"``; default one day).
* **Durations** (timedelta columns): ``(low, high)`` two durations; ``resolution`` a duration (default one
  second).

A date or duration is read as an int64 key, the count of a time unit since the epoch (in UTC for
tz-aware bounds) or in the duration (:mod:`pandas_dp.domain.timevalues`): seconds when the resolution is a
whole number of seconds, nanoseconds otherwise; the grid is then the numeric one over those keys. A sum
of dates means nothing and is refused (ask ``"mean"``, or sum a duration).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp._utils.public import float_array
from pandas_dp._utils.rational import safe_repr, to_fraction
from pandas_dp.algorithms.aggregate import MAX_STEPS, ValueColumn
from pandas_dp.domain.timevalues import UNITS
from pandas_dp.errors import ParameterError

__all__ = ["round_step", "check_value_grids", "same_label", "DEFAULT_TIME_STEPS", "grid_of_steps"]

#: The default resolution of a date column and of a duration column.
DEFAULT_TIME_STEPS = {"datetime": pd.Timedelta(days=1), "timedelta": pd.Timedelta(seconds=1)}

_DATES = (pd.Timestamp, dt.datetime, dt.date, np.datetime64)
_DURATIONS = (pd.Timedelta, dt.timedelta, np.timedelta64)


def same_label(a: Any, b: Any) -> bool:
    """Whether two public column labels are the same label (same type and equal; never raises)."""
    try:
        return bool(type(a) is type(b) and a == b)
    except Exception:  # noqa: BLE001 - labels were checked hashable and comparable with the frame's
        return False


def _lookup(mapping: Any, label: Any, name: str) -> tuple[bool, Any]:
    """``(found, mapping[label])`` for a public mapping keyed by column labels."""
    try:
        keys = list(dict.keys(mapping)) if isinstance(mapping, dict) else list(mapping.keys())
        for key in keys:
            if key is label or same_label(key, label):
                return True, (dict.__getitem__(mapping, key) if isinstance(mapping, dict) else mapping[key])
    except Exception as err:  # noqa: BLE001 - a hostile mapping
        raise ParameterError(f"The '{name}' parameter could not be read as a dict keyed by column; pass a plain "
                             f"dict such as {name}={{'income': ...}}.") from err
    return False, None


def _readable(mapping: Any, name: str) -> None:
    """Refuse a mapping whose keys cannot be read (a key not among the value columns is ignored)."""
    try:
        list(dict.keys(mapping)) if isinstance(mapping, dict) else list(mapping.keys())
    except Exception as err:  # noqa: BLE001 - a hostile mapping
        raise ParameterError(f"The '{name}' parameter could not be read as a dict keyed by column; pass a plain "
                             f"dict such as {name}={{'income': ...}}.") from err


def _items(value: Any) -> list[Any] | None:
    """The two items of a public pair, or None when it is not a list, tuple or array of two."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, np.ndarray)):
        return None
    try:
        items = list(value)
    except Exception:  # noqa: BLE001 - a hostile sequence
        return None
    return items if len(items) == 2 else None


def _bounds_message(label: Any, value: Any) -> str:
    return (f"bounds[{safe_repr(label)}] must be public clipping bounds (low, high) with low < high, chosen without "
            f"looking at the data: two finite numbers (e.g. (0, 250_000) for a yearly income), two dates "
            f"(pd.Timestamp('2000-01-01'), pd.Timestamp('2030-01-01')) or two durations (pd.Timedelta(0), "
            f"pd.Timedelta(hours=24)). Got {safe_repr(value)}.")


def _kind(items: list[Any]) -> str:
    """``"datetime"``, ``"timedelta"``, ``"number"`` for a pair of bounds, or ``""`` when they do not agree."""
    if all(isinstance(v, _DATES) for v in items):
        return "datetime"
    if all(isinstance(v, _DURATIONS) for v in items):
        return "timedelta"
    if any(isinstance(v, (bool, np.bool_, str, bytes, *_DATES, *_DURATIONS)) for v in items):
        return ""
    return "number"


def _number_pair(items: list[Any] | None, label: Any, value: Any) -> tuple[float, float]:
    arr = None if items is None else float_array(items)
    if arr is None or arr.shape != (2,) or not np.isfinite(arr).all() or not arr[0] < arr[1]:
        raise ParameterError(_bounds_message(label, value))
    return float(arr[0]), float(arr[1])


def _number_step(value: Any, label: Any) -> float:
    if value is None:
        return 1.0
    try:
        step = float(to_fraction(value, name="resolution"))
    except ParameterError as err:
        raise ParameterError(f"resolution[{safe_repr(label)}] must be a positive number (the public grid step "
                             f"values are rounded to, e.g. 1 or 0.01). Got {safe_repr(value)}.") from err
    if not (step > 0 and math.isfinite(step)):
        raise ParameterError(f"resolution[{safe_repr(label)}] is too small to use. Got {safe_repr(value)}.")
    return step


def _time_step(value: Any, label: Any, kind: str) -> pd.Timedelta:
    if value is None:
        return DEFAULT_TIME_STEPS[kind]
    try:
        step = pd.Timedelta(value) if isinstance(value, (*_DURATIONS, str)) else None
    except (ValueError, TypeError, OverflowError):
        step = None
    if step is None or step is pd.NaT or not step > pd.Timedelta(0):
        raise ParameterError(f"resolution[{safe_repr(label)}] of a {kind} column must be a positive duration (the "
                             f"public grid step, e.g. pd.Timedelta(days=1) or '1h'). Got {safe_repr(value)}.")
    return step


def _time_bounds(items: list[Any], kind: str, label: Any, value: Any) -> tuple[int, int, Any]:
    """The bounds in nanoseconds (UTC instants when tz-aware) and the bounds' time zone (dates only)."""
    tz = None
    try:
        times = [pd.Timestamp(v) for v in items] if kind == "datetime" else [pd.Timedelta(v) for v in items]
        ns = [None if t is pd.NaT else int(t.as_unit("ns").value) for t in times]
    except (ValueError, TypeError, OverflowError, AttributeError) as err:
        raise ParameterError(_bounds_message(label, value)) from err
    if kind == "datetime":
        zones = {t.tz is not None for t in times if t is not pd.NaT}
        if len(zones) != 1:
            raise ParameterError(f"bounds[{safe_repr(label)}] must be two naive dates or two tz-aware ones (the "
                                 f"keys compare wall-clock times or instants, not both). Got {safe_repr(value)}.")
        tz = times[0].tz
    if ns[0] is None or ns[1] is None:
        raise ParameterError(_bounds_message(label, value))
    if not ns[0] < ns[1]:
        raise ParameterError(_bounds_message(label, value))
    return ns[0], ns[1], tz


def _column(label: Any, stats: tuple[str, ...], pair: Any, resolution: Any) -> ValueColumn:
    """One value column's public grid, checked."""
    items = _items(pair)
    kind = _kind(items) if items is not None else ""
    if items is None or kind in ("", "number"):
        low, high = _number_pair(items if kind else None, label, pair)
        step = _number_step(resolution, label)
        return _on_grid(label, stats, low, high, step, resolution, "number", "s", None)
    if kind == "datetime" and "sum" in stats:
        raise ParameterError(f"aggs[{safe_repr(label)}]: a sum of dates means nothing; ask 'count' and 'mean' of "
                             f"a date column, or sum a duration (e.g. the column minus a public start date).")
    low_ns, high_ns, tz = _time_bounds(items, kind, label, pair)
    step = _time_step(resolution, label, kind)
    step_ns = int(step.as_unit("ns").value)
    unit = "s" if step_ns % UNITS["s"] == 0 else "ns"
    per = UNITS[unit]
    return _on_grid(label, stats, low_ns / per, high_ns / per, step_ns / per, resolution, kind, unit, tz)


def _on_grid(label: Any, stats: tuple[str, ...], low: float, high: float, step: float, given: Any, kind: str,
             unit: str, tz: Any) -> ValueColumn:
    with np.errstate(all="ignore"):
        a, b = float(np.rint(low / step)), float(np.rint(high / step))
    if not (math.isfinite(a) and math.isfinite(b) and max(abs(a), abs(b)) <= MAX_STEPS):
        raise ParameterError(f"bounds[{safe_repr(label)}] span more than {MAX_STEPS:,} steps of resolution "
                             f"{safe_repr(given)}; pass a coarser resolution= (e.g. 100) or tighter public bounds.")
    if not a < b:
        raise ParameterError(f"resolution={safe_repr(given)} is coarser than bounds[{safe_repr(label)}]: both bounds "
                             f"round to one grid value. Pass a finer resolution.")
    return ValueColumn(label, stats, int(a), int(b), step, kind=kind, unit=unit, tz=tz)


def check_value_grids(asked: list[tuple[Any, tuple[str, ...]]], bounds: Any,
                      resolution: Any) -> tuple[ValueColumn, ...]:
    """Every value column's public bounds and grid step, checked (``bounds`` required, never from the data)."""
    if not isinstance(bounds, Mapping):
        raise ParameterError(f"The 'bounds' parameter must be a dict of value column -> (low, high), public "
                             f"clipping bounds for every column of aggs= (e.g. bounds={{'income': (0, 250_000)}}); "
                             f"they are never read from the data. Got {safe_repr(bounds)}.")
    _readable(bounds, "bounds")
    per_column = isinstance(resolution, Mapping)
    if per_column:
        _readable(resolution, "resolution")
    out = []
    for label, stats in asked:
        found, pair = _lookup(bounds, label, "bounds")
        if not found:
            raise ParameterError(f"The 'bounds' parameter has no bounds for the value column {safe_repr(label)}; "
                                 f"pass public clipping bounds for every column of aggs=, e.g. "
                                 f"bounds={{{safe_repr(label)}: (low, high)}}.")
        step = _lookup(resolution, label, "resolution")[1] if per_column else resolution
        out.append(_column(label, stats, pair, step))
    return tuple(out)


def round_step(raw: float) -> float:
    """The largest ``m x 10**e`` (``m`` in 1, 2, 5) at most ``raw > 0``, found in exact arithmetic (no libm
    logarithm decides it), as the float nearest that decimal."""
    target = Fraction(raw)
    e = len(str(target.numerator // target.denominator)) - 1 if target >= 1 else \
        -len(str(target.denominator // max(target.numerator, 1)))
    while Fraction(10) ** e > target:
        e -= 1
    while Fraction(10) ** (e + 1) <= target:
        e += 1
    step = next(m * Fraction(10) ** e for m in (5, 2, 1) if m * Fraction(10) ** e <= target)
    return float(step)


def grid_of_steps(label: Any, pair: Any, steps: int) -> ValueColumn:
    """A value column's grid of about ``steps`` equal steps between public bounds (numbers, dates or durations).

    For numbers the step is the largest round number ``1, 2 or 5 x 10**e`` at most ``(high - low) / steps``
    (between ``steps`` and ``2.5 steps`` steps): grid values are then round decimals, so values recorded as
    round numbers (whole minutes, cents, whole dollars) fall on grid values exactly and a quantile inside a
    tie of them is released as the tied value itself, not beside it. For dates and durations the step is
    ``(high - low) / steps`` in whole seconds when it is at least one second, else whole nanoseconds.
    Raises the errors of :func:`check_value_grids` for bad bounds.
    """
    items = _items(pair)
    kind = _kind(items) if items is not None else ""
    if items is None or kind in ("", "number"):
        low, high = _number_pair(items if kind else None, label, pair)
        return _on_grid(label, ("quantile",), low, high, round_step((high - low) / steps), pair, "number", "s",
                        None)
    low_ns, high_ns, tz = _time_bounds(items, kind, label, pair)
    step_ns = max((high_ns - low_ns) // steps, 1)
    unit = "s" if step_ns >= UNITS["s"] else "ns"
    if unit == "s":
        step_ns -= step_ns % UNITS["s"]
    per = UNITS[unit]
    return _on_grid(label, ("quantile",), low_ns / per, high_ns / per, step_ns / per, pair, kind, unit, tz)
