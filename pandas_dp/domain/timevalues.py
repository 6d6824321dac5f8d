"""Private date and duration values as int64 keys, never raising or warning.

A datetime or timedelta domain bins int64 *keys*: the count of its ``unit``
(``"s"``, ``"ms"``, ``"us"`` or ``"ns"``) since the epoch (datetimes, in UTC
for a tz-aware domain) or in the duration (timedeltas). This module turns a
private column into those keys, with ``NAT`` (the smallest int64, below every
edge) for anything that is out of domain. The rules, one row at a time:

* **Columns of the domain's kind** (``datetime64``, ``datetime64[tz]``,
  ``timedelta64``) are read as they are, converted to the domain's unit: a
  finer unit is floored (exact: edges are whole units), a coarser one
  multiplied (values beyond the representable range are out of domain).
* **A naive domain reads the wall clock; a tz-aware one compares instants.**
  A tz-aware domain compares instants (in UTC): its tz-aware values count, in
  any time zone; naive values are out of domain (their time zone is unknown,
  and guessing one would shift them silently). A naive domain counts naive
  values, and tz-aware values at their *local* time in their own zone (what
  ``Series.dt.tz_localize(None)`` gives: ``2024-03-01 00:30-05:00`` counts
  on 1 March). That local time is a fact of the value, not a guess, and it is
  what a naive ``range=`` means on a tz-aware column; before, every such row
  was out of domain and the release was pure noise. The rule is the same
  whatever the column's dtype (``datetime64[ns, tz]``, or ``object`` when one
  odd row made it so), so no private row decides how the others are read.
* **Strings** count where they are ISO 8601 (``format="ISO8601"``:
  deterministic, never a format-inference warning): ``2020-01-31``,
  ``2020-01-31T12:00``, ``2020-01-31 12:00:00+01:00``. A string is tz-aware
  when it ends with ``Z`` or a UTC offset after its time (``+01:00``,
  ``-0500``, ``+01``), naive otherwise. Other strings (``01/31/2020``,
  ``n/a``) are out of domain. Duration strings are pandas' (``"1 days
  02:00:00"``, ``"90min"``, ``"P1DT2H"``); a bare number (``"5"``) has no unit
  and is out of domain.
* **Objects**: ``datetime``/``Timestamp``/``date``/``numpy.datetime64`` (and
  ``timedelta``/``Timedelta``/``numpy.timedelta64``) by the same rules;
  numbers, booleans and anything else are not dates and are out of domain.
  A ``Categorical`` is read through its categories.

Whether a row counts, and where, depends on that row only.
"""

from __future__ import annotations

import datetime as _dt
import warnings
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["NAT", "UNITS", "datetime_keys", "timedelta_keys", "convert_unit"]

#: Key of a missing or out-of-domain value: the smallest int64 (numpy's NaT), below every edge.
NAT = np.iinfo(np.int64).min

#: Units of time keys, coarsest first, and their length in nanoseconds.
UNITS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}

#: A UTC offset (or ``Z``) right after a time of day, at the end of an ISO 8601 string.
_AWARE = (r"(?:\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?|T\d{2}(?:\d{2}(?:\d{2}(?:[.,]\d+)?)?)?)"
          r"\s?(?:[Zz]|[+-]\d{2}(?::?\d{2})?)$")
#: The UTC offset (or ``Z``) ending a string that :data:`_AWARE` matched: removed, the wall-clock time is left.
_OFFSET = r"(?<=\d)\s?(?:[Zz]|[+-]\d{2}(?::?\d{2})?)$"
_BARE_NUMBER = r"^\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*$"


def convert_unit(keys: np.ndarray, source: str, target: str) -> np.ndarray:
    """int64 keys of unit ``source`` in unit ``target`` (``NAT`` stays ``NAT``; overflow -> ``NAT``)."""
    if source == target:
        return keys
    a, b = UNITS[source], UNITS[target]
    missing = keys == NAT
    if a > b:  # to a finer unit: multiply, out of range -> NAT
        factor = a // b
        limit = np.iinfo(np.int64).max // factor
        ok = (keys >= -limit) & (keys <= limit) & ~missing
        out = np.where(ok, keys * factor, NAT)
    else:  # to a coarser unit: floor (exact, the edges being whole units of the target)
        out = np.floor_divide(keys, b // a)
        out[missing] = NAT
    return out


def _unit_of(unit: str) -> str:
    if unit not in UNITS:
        raise ValueError(f"unsupported time unit {unit!r}")
    return unit


def _keys_of(values: Any, unit: str) -> np.ndarray:
    """int64 keys of a datetime64/timedelta64 array-like (naive numpy, or a DatetimeIndex/Series)."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "mM":
        return np.full(arr.shape, NAT, dtype=np.int64)
    source, _ = np.datetime_data(arr.dtype)
    if source not in UNITS:  # days, minutes...: whole units of a second or coarser
        arr = arr.astype(arr.dtype.kind + "8[s]")
        source = "s"
    return convert_unit(arr.view(np.int64), source, unit)


def _object_array(series: pd.Series) -> np.ndarray:
    return np.asarray(series.to_numpy(dtype=object, na_value=None), dtype=object)


def _parse_datetimes(values: np.ndarray, *, aware: bool, unit: str) -> np.ndarray:
    """Keys of an object array holding strings, datetime-likes and anything else (per element)."""
    keys = np.full(values.size, NAT, dtype=np.int64)
    if not values.size:
        return keys
    kind = pd.api.types.infer_dtype(values, skipna=True)
    if kind == "string":
        is_str, is_obj = ~pd.isna(values), np.zeros(values.size, bool)
    elif kind in ("datetime", "datetime64", "date"):
        is_str, is_obj = np.zeros(values.size, bool), ~pd.isna(values)
    else:
        cls = np.frompyfunc(_datetime_class, 1, 1)(values).astype(np.int8)
        is_str, is_obj = cls == 1, cls == 2
    if is_str.any():
        keys[is_str] = _parse_strings(values[is_str], aware=aware, unit=unit)
    if is_obj.any():
        keys[is_obj] = _parse_objects(values[is_obj], aware=aware, unit=unit)
    return keys


def _datetime_class(value: Any) -> int:
    """1 for a string, 2 for a datetime-like object, 0 for anything else (never raises)."""
    if isinstance(value, str):
        return 1
    if isinstance(value, (_dt.datetime, _dt.date, np.datetime64)) and not isinstance(value, bool):
        return 2
    return 0


def _parse_strings(strings: np.ndarray, *, aware: bool, unit: str) -> np.ndarray:
    text = pd.Series(strings, dtype=object)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            has_offset = text.str.contains(_AWARE, regex=True).to_numpy(dtype=bool, na_value=False)
            if not aware and has_offset.any():  # a naive domain reads the wall clock: drop the offsets
                text = text.where(~has_offset, text.str.replace(_OFFSET, "", regex=True))
            parsed = pd.to_datetime(text, format="ISO8601", errors="coerce", utc=True)
        except Exception:  # noqa: BLE001 - a private value may break the parser: element by element
            return np.array([_one_string(s, aware, unit) for s in strings], dtype=np.int64)
    # UTC instants (aware) or wall times (naive); a copy, as pandas hands out read-only arrays.
    keys = np.array(_keys_of(parsed.dt.tz_localize(None), unit), dtype=np.int64)
    if aware:
        keys[~has_offset] = NAT
    return keys


def _one_string(text: Any, aware: bool, unit: str) -> int:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            has_offset = bool(pd.Series([text]).str.contains(_AWARE, regex=True).iloc[0])
            if has_offset and not aware:
                text = pd.Series([text]).str.replace(_OFFSET, "", regex=True).iloc[0]
            ts = pd.to_datetime(pd.Series([text], dtype=object), format="ISO8601", errors="coerce", utc=True)
        if aware and not has_offset:
            return NAT
        return int(_keys_of(ts.dt.tz_localize(None), unit)[0])
    except Exception:  # noqa: BLE001
        return NAT


def _parse_objects(objects: np.ndarray, *, aware: bool, unit: str) -> np.ndarray:
    has_tz = np.frompyfunc(_has_tz, 1, 1)(objects).astype(bool)
    if not aware and has_tz.any():  # a naive domain reads the wall clock: each value's local time
        objects = objects.copy()
        objects[has_tz] = np.frompyfunc(_wall_clock, 1, 1)(objects[has_tz])
        has_tz = np.zeros(objects.size, dtype=bool)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            parsed = pd.to_datetime(pd.Series(objects, dtype=object), errors="coerce", utc=True)
            keys = np.array(_keys_of(parsed.dt.tz_localize(None), unit), dtype=np.int64)
        except Exception:  # noqa: BLE001
            keys = np.array([_one_object(v, unit, aware) for v in objects], dtype=np.int64)
    keys[has_tz != aware] = NAT
    return keys


def _wall_clock(value: Any) -> Any:
    """A tz-aware datetime's local time as a naive one; None (out of domain) when that raises."""
    try:
        return value.replace(tzinfo=None)
    except Exception:  # noqa: BLE001 - a private value's own replace may raise anything
        return None


def _has_tz(value: Any) -> bool:
    try:
        return getattr(value, "tzinfo", None) is not None
    except Exception:  # noqa: BLE001
        return False


def _one_object(value: Any, unit: str, aware: bool = True) -> int:
    try:
        ts = pd.Timestamp(value)
        if ts.tzinfo is not None:
            ts = ts.tz_convert("UTC").tz_localize(None) if aware else ts.tz_localize(None)
        return int(_keys_of(np.array([ts.to_datetime64()]), unit)[0])
    except Exception:  # noqa: BLE001
        return NAT


def datetime_keys(series: Any, *, aware: bool, unit: str) -> np.ndarray:
    """int64 keys (``unit`` since the epoch; UTC when ``aware``) of a private column, ``NAT`` when out of domain.

    Parameters
    ----------
    series : pandas.Series
        The column (private data); any dtype.
    aware : bool
        Whether the domain is tz-aware (then only tz-aware values count, as
        instants); a naive domain counts naive values, and tz-aware values at
        their local (wall-clock) time.
    unit : str
        The domain's unit.

    Returns
    -------
    numpy.ndarray
        int64 keys aligned with the rows. Never raises, never warns.
    """
    if not isinstance(series, pd.Series):
        series = pd.Series(series) if np.ndim(series) else pd.Series([series])
    dtype = series.dtype
    try:
        if isinstance(dtype, pd.DatetimeTZDtype):
            values = series.array  # asi8: UTC instants, no copy
            if not aware:  # a naive domain reads the wall clock
                values = values.tz_localize(None)
            return convert_unit(values.asi8, _unit_of(values.unit), unit)
        if isinstance(dtype, np.dtype) and dtype.kind == "M":
            return _keys_of(series.to_numpy(copy=False), unit) if not aware else np.full(len(series), NAT, dtype=np.int64)
        if isinstance(dtype, pd.CategoricalDtype):
            cats = datetime_keys(pd.Series(dtype.categories), aware=aware, unit=unit)
            return np.append(cats, NAT)[series.cat.codes.to_numpy()]
        if (isinstance(dtype, np.dtype) and dtype.kind == "O") or pd.api.types.is_string_dtype(dtype):
            return _parse_datetimes(_object_array(series), aware=aware, unit=unit)
    except Exception:  # noqa: BLE001 - a private value may break a converter: element by element
        return np.array([_one_datetime(v, aware, unit) for v in _object_array(series)], dtype=np.int64)
    return np.full(len(series), NAT, dtype=np.int64)


def _one_datetime(value: Any, aware: bool, unit: str) -> int:
    cls = _datetime_class(value)
    if cls == 1:
        return _one_string(value, aware, unit)
    if cls == 2 and (_has_tz(value) or not aware):
        return _one_object(value, unit, aware)
    return NAT


def timedelta_keys(series: Any, *, unit: str) -> np.ndarray:
    """int64 keys (``unit``) of a private duration column, ``NAT`` when out of domain (never raises or warns).

    ``timedelta64`` columns are read as they are; strings in pandas' duration
    formats and ``timedelta``-like objects are converted; bare numbers (no
    unit), dates and anything else are out of domain.
    """
    if not isinstance(series, pd.Series):
        series = pd.Series(series) if np.ndim(series) else pd.Series([series])
    dtype = series.dtype
    try:
        if isinstance(dtype, np.dtype) and dtype.kind == "m":
            return _keys_of(series.to_numpy(copy=False), unit)
        if isinstance(dtype, pd.CategoricalDtype):
            cats = timedelta_keys(pd.Series(dtype.categories), unit=unit)
            return np.append(cats, NAT)[series.cat.codes.to_numpy()]
        if (isinstance(dtype, np.dtype) and dtype.kind == "O") or pd.api.types.is_string_dtype(dtype):
            return _parse_timedeltas(_object_array(series), unit)
    except Exception:  # noqa: BLE001
        return np.array([_one_timedelta(v, unit) for v in _object_array(series)], dtype=np.int64)
    return np.full(len(series), NAT, dtype=np.int64)


def _timedelta_class(value: Any) -> int:
    if isinstance(value, str):
        return 1
    if isinstance(value, (_dt.timedelta, np.timedelta64)):
        return 2
    return 0


def _parse_timedeltas(values: np.ndarray, unit: str) -> np.ndarray:
    keys = np.full(values.size, NAT, dtype=np.int64)
    if not values.size:
        return keys
    cls = np.frompyfunc(_timedelta_class, 1, 1)(values).astype(np.int8)
    keep = cls > 0
    if not keep.any():
        return keys
    picked = pd.Series(values[keep], dtype=object)
    bare = picked.str.fullmatch(_BARE_NUMBER).to_numpy(dtype=bool, na_value=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            parsed = pd.to_timedelta(picked.where(~bare, None), errors="coerce")
        except Exception:  # noqa: BLE001
            keys[keep] = [_one_timedelta(v, unit) for v in values[keep]]
            return keys
    keys[keep] = _keys_of(parsed, unit)
    return keys


def _one_timedelta(value: Any, unit: str) -> int:
    try:
        if _timedelta_class(value) == 0:
            return NAT
        if isinstance(value, str):
            import re

            if re.fullmatch(_BARE_NUMBER, value):
                return NAT
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            td = pd.Timedelta(value)
        if td is pd.NaT:
            return NAT
        return int(_keys_of(np.array([td.to_timedelta64()]), unit)[0])
    except Exception:  # noqa: BLE001
        return NAT
