"""Bin edges from the caller's ``bins=`` and ``range=`` (public arguments only; never the data).

:func:`parse_bins` accepts

* ``bins=int`` with ``range=(low, high)``: evenly spaced edges
  (``numpy.linspace`` for numbers; ``pandas.date_range`` / ``timedelta_range``
  with ``periods=`` for Timestamps / Timedeltas);
* explicit edges: any sequence of numbers, a ``range``, a numpy array, a
  pandas Index, Timestamps (``pd.date_range``), Timedeltas
  (``pd.timedelta_range``), ISO date strings;
* a frequency string (a pandas offset alias: ``"D"``, ``"W"``, ``"M"``,
  ``"Q"``, ``"Y"``, ``"h"``, ``"15min"``...) with ``range=(start, end)``:
  calendar periods, so months have their real lengths. ``"M"``, ``"Q"`` and
  ``"Y"`` are the periods' *starts* (``"MS"``, ``"QS"``, ``"YS"``), ``"W"``
  weeks starting on Monday (``"W-MON"``); ``start`` and ``end`` must be
  period boundaries;
* an ``IntervalIndex`` (numbers, datetimes or timedeltas) with
  ``closed="left"`` and contiguous intervals: its breaks are the edges. An
  index with gaps is refused: a histogram's bins tile its domain (range
  queries and trees sum adjacent bins), and a gap passed as a bin of its own
  costs no privacy (one row still changes one count).

Float edges within two ulps of a 15-digit decimal are moved to it
(``0.30000000000000004`` -> ``0.3``, see :func:`_decimal_edges`), so bins
print as a person writes them. Numeric edges come back as a new float64 array (never the caller's: results
make their arrays read-only), time edges as a ``DatetimeIndex`` (naive or
tz-aware) or ``TimedeltaIndex``. Validation is one vectorized pass over the
edges (finite, strictly increasing, evenly spaced or not), no Python loop
and no copy beyond the edges themselves; a ``range`` becomes ``numpy.arange``
without visiting its elements in Python.
"""

from __future__ import annotations

import datetime as _dt
import math
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp._utils.rational import safe_repr
from pandas_dp.errors import DomainError, ParameterError

__all__ = ["parse_bins", "MAX_CELLS", "FREQUENCY_ALIASES", "is_time_like"]

#: Largest number of cells of a release: each cell holds a count and draws noise (2**26 int64 = 512 MiB).
MAX_CELLS = 2**26

#: Aliases read as the periods' starts (pandas' own "M", "Q", "Y" name month/quarter/year *ends*).
FREQUENCY_ALIASES = {"M": "MS", "ME": "MS", "Q": "QS", "QE": "QS", "Y": "YS", "YE": "YS", "A": "YS",
                     "W": "W-MON"}

_DATETIME_TYPES = (pd.Timestamp, _dt.datetime, _dt.date, np.datetime64)
_TIMEDELTA_TYPES = (pd.Timedelta, _dt.timedelta, np.timedelta64)


def is_time_like(value: Any) -> bool:
    """Whether a public value is a date or a duration (not a number or a string)."""
    return isinstance(value, _DATETIME_TYPES + _TIMEDELTA_TYPES) and not isinstance(value, bool)


def parse_bins(column: str, bins: Any, rng: Any) -> tuple[Any, bool]:
    """Edges and whether they are evenly spaced, from ``bins=`` and ``range=``.

    Raises
    ------
    ParameterError
        A malformed argument.
    DomainError
        A domain that is invalid (not increasing, not finite, too many cells)
        or that would have to come from the data (``bins=int`` without ``range=``).
    """
    if isinstance(bins, (bool, np.bool_)):
        raise ParameterError(f"The 'bins' parameter for column {column!r} must be an int or a sequence of edges. "
                             f"Got {safe_repr(bins)}.")
    if isinstance(bins, np.timedelta64):  # an np.signedinteger, but a duration: not a number of bins
        raise ParameterError(f"The 'bins' parameter for column {column!r} must be an int or a sequence of edges. "
                             f"Got {safe_repr(bins)}.")
    if isinstance(bins, (int, np.integer)):
        return _even_edges(column, int(bins), rng)
    if isinstance(bins, str):
        bins = str.__str__(bins)
    if rng is not None and not isinstance(bins, str):
        raise ParameterError(f"Pass either explicit bin edges or bins=int with range=, not both "
                             f"(column {column!r} got bins={safe_repr(bins)} and range={safe_repr(rng)}).")
    if isinstance(bins, str):
        return _frequency_edges(column, bins, rng)
    if isinstance(bins, pd.IntervalIndex):
        return _interval_edges(column, bins)
    return _explicit_edges(column, bins)


# ------------------------------------------------------------------------------------ bins=int, range=

def _even_edges(column: str, n: int, rng: Any) -> tuple[Any, bool]:
    if rng is None:
        raise DomainError(
            f"The 'bins' parameter of histogram must be a sequence of edges or an int with range=. "
            f"Got bins={n} without range for column {column!r}. Deriving the range from the data "
            f"would leak it: pass range=(low, high) from public knowledge."
        )
    if n < 1:
        raise ParameterError(f"The 'bins' parameter for column {column!r} must be at least 1. Got {n}.")
    if n > MAX_CELLS:
        raise DomainError(f"bins={n:,} for column {column!r} is above the limit of {MAX_CELLS:,} "
                          f"cells (2**26): every cell gets its own noisy count. Use coarser bins.")
    low, high = _range_pair(column, rng)
    if isinstance(low, float):
        # high - low must be finite too: np.linspace over (-1e308, 1e308) overflows to inf edges.
        if not (math.isfinite(low) and math.isfinite(high) and math.isfinite(high - low)) or not low < high:
            raise DomainError(f"The 'range' for column {column!r} must be finite with low < high (and high - low "
                              f"below about 1.8e308). Got {safe_repr(rng)}.")
        edges = np.linspace(low, high, n + 1)
        if edges.base is not None:  # linspace returns a view: own the edges, so a result freezes them in place
            edges = edges.copy()
        step = (high - low) / n
        # linspace is strictly increasing when a step spans several floats; check narrow ranges edge by edge.
        if not step > 8 * np.spacing(max(abs(low), abs(high))) and np.any(np.diff(edges) <= 0):
            raise DomainError(f"range={safe_repr(rng)} is too narrow for bins={n} on column {column!r}.")
        return _decimal_edges(edges), True
    if not low < high:
        raise DomainError(f"The 'range' for column {column!r} must have low < high. Got {safe_repr(rng)}.")
    make = pd.date_range if isinstance(low, pd.Timestamp) else pd.timedelta_range
    edges = make(low, high, periods=n + 1)
    return _checked_time_edges(column, edges, rng)


def _decimal_edges(edges: np.ndarray) -> np.ndarray:
    """``linspace`` edges with rounding noise removed: each edge within 2 ulps of a 15-digit decimal becomes it.

    ``np.linspace(44.88, 44.97, 17)[1]`` is ``44.885625000000005`` and
    ``np.linspace(0, 1, 11)[3]`` is ``0.30000000000000004``: the float a person
    means (``44.885625``, ``0.3``) is one ulp away. Moving an edge by at most
    two ulps to the decimal it stands for makes bins print as written and puts
    a value written ``0.3`` in the bin that starts at ``0.3``. Edges with no
    such decimal (``1/3``) and the two ends of the range stay as they are; the
    result is used only if it is still strictly increasing. Public values
    only, one vectorized pass.

    Examples
    --------
    >>> _decimal_edges(np.linspace(0.0, 1.0, 11)).tolist()[:4]
    [0.0, 0.1, 0.2, 0.3]
    >>> _decimal_edges(np.linspace(0.0, 1.0, 4)).tolist() == np.linspace(0.0, 1.0, 4).tolist()
    True
    """
    if not 3 <= edges.size <= 2**16 + 1:  # labels a person reads; larger domains keep linspace's edges, uncopied
        return edges
    top = float(np.abs(edges).max())
    if top == 0:
        return edges
    digits = 14 - math.floor(math.log10(top))  # 15 significant digits at the largest edge
    if not 0 <= digits <= 22:  # 10**digits exact in float64: the division below is correctly rounded
        return edges
    scale = 10.0 ** digits
    with np.errstate(all="ignore"):
        scaled = np.round(edges * scale)
        decimal = scaled / scale
        close = (np.abs(scaled) < 2.0**53) & (np.abs(decimal - edges) <= 2 * np.abs(np.spacing(edges)))
    close[[0, -1]] = False
    if not close.any():
        return edges
    snapped = np.where(close, decimal, edges)
    return snapped if bool(np.all(np.diff(snapped) > 0)) else edges


def _range_pair(column: str, rng: Any) -> tuple[Any, Any]:
    """``(low, high)`` as floats, or as Timestamps / Timedeltas of one kind."""
    try:
        if isinstance(rng, (str, bytes, dict, set)) or len(rng) != 2:
            raise TypeError
        pair = (rng[0], rng[1])
    except Exception as err:  # noqa: BLE001 - a public argument whose len/indexing raises anything
        raise ParameterError(f"The 'range' parameter for column {column!r} must be a pair (low, high). "
                             f"Got {safe_repr(rng)}.") from err
    if not any(is_time_like(v) or _is_text(v) for v in pair):
        try:
            return float(pair[0]), float(pair[1])
        except Exception as err:  # noqa: BLE001 - a hostile __float__, an int beyond the double range
            raise ParameterError(f"The 'range' parameter for column {column!r} must be a pair (low, high). "
                                 f"Got {safe_repr(rng)}.") from err
    if all(_is_number_text(v) for v in pair):
        try:
            return float(pair[0]), float(pair[1])
        except Exception as err:  # noqa: BLE001 - a hostile __float__, an int beyond the double range
            raise ParameterError(f"The 'range' parameter for column {column!r} must be a pair (low, high). "
                                 f"Got {safe_repr(rng)}.") from err
    return _time_pair(column, pair, rng)


def _is_text(value: Any) -> bool:
    return isinstance(value, (str, bytes))


def _is_number_text(value: Any) -> bool:
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return True
    if not isinstance(value, str):
        return False
    try:
        float(value)
    except Exception:  # noqa: BLE001 - not a number's text
        return False
    return True


def _time_pair(column: str, pair: tuple[Any, Any], rng: Any) -> tuple[Any, Any]:
    """Two dates (Timestamps of the same awareness) or two durations, parsed from the public range."""
    out = [_time_value(column, v, rng) for v in pair]
    kinds = {type(v) for v in out}
    if len(kinds) != 1:
        raise ParameterError(f"The 'range' for column {column!r} mixes a date and a duration: {safe_repr(rng)}. "
                             f"Pass two Timestamps (dates) or two Timedeltas (durations).")
    low, high = out
    if isinstance(low, pd.Timestamp) and (low.tzinfo is None) != (high.tzinfo is None):
        raise DomainError(f"The 'range' for column {column!r} mixes a tz-aware and a naive date: {safe_repr(rng)}. "
                          f"Give both a time zone (a tz-aware domain) or neither.")
    if isinstance(low, pd.Timestamp) and low.tzinfo is not None:
        high = high.tz_convert(low.tzinfo)
    return low, high


def _time_value(column: str, value: Any, rng: Any) -> Any:
    """A Timestamp or Timedelta from a public value (strings: ISO 8601 dates, then pandas durations)."""
    try:
        if isinstance(value, _TIMEDELTA_TYPES):
            out: Any = pd.Timedelta(value)
        elif isinstance(value, _DATETIME_TYPES):
            out = pd.Timestamp(value)
        elif isinstance(value, str):
            out = _parse_text(str.__str__(value))
        else:
            out = None
    except Exception:  # noqa: BLE001 - a date or duration pandas cannot represent (out of bounds, generic unit)
        out = None
    if out is None or out is pd.NaT:
        raise ParameterError(f"The 'range' for column {column!r} must be two numbers, two dates or two durations. "
                             f"Got {safe_repr(rng)}; dates as pd.Timestamp or ISO 8601 text ('2020-01-01'), durations as "
                             f"pd.Timedelta or text such as '1 days'.")
    return out


def _parse_text(text: str) -> Any:
    """A duration (pandas' formats: ``"1 days"``, ``"6h"``, ``"PT6H"``), else an ISO 8601 date, else None.

    A bare number has no unit and is neither; durations go first because
    pandas reads ``"10:00"`` as today's date at 10:00.
    """
    if _is_number_text(text):
        return None
    try:
        return pd.Timedelta(text)
    except Exception:  # noqa: BLE001 - not a duration pandas can read
        pass
    try:
        return pd.Timestamp(pd.to_datetime(text, format="ISO8601"))
    except Exception:  # noqa: BLE001 - not a date pandas can read
        return None


# ------------------------------------------------------------------------------------ frequency strings

def _frequency_edges(column: str, freq: str, rng: Any) -> tuple[Any, bool]:
    if rng is None:
        raise DomainError(f"bins={safe_repr(freq)} for column {column!r} needs range=(start, end): the first and last "
                          f"edges come from public knowledge, never from the data.")
    alias = FREQUENCY_ALIASES.get(freq, freq)
    try:
        offset = pd.tseries.frequencies.to_offset(alias)
    except Exception as err:  # noqa: BLE001 - not a frequency pandas can read
        raise ParameterError(f"The 'bins' parameter for column {column!r} got {safe_repr(freq)}, which is neither a number "
                             f"of bins nor a pandas frequency ('D', 'W', 'M', 'Q', 'Y', 'h', '15min'...).") from err
    low, high = _range_pair(column, rng)
    if isinstance(low, float):
        raise ParameterError(f"bins={safe_repr(freq)} (a frequency) for column {column!r} needs a range of dates or "
                             f"durations. Got range={safe_repr(rng)}; pass e.g. range=('2020-01-01', '2021-01-01').")
    if not low < high:
        raise DomainError(f"The 'range' for column {column!r} must have start < end. Got {safe_repr(rng)}.")
    fixed = isinstance(offset, (pd.offsets.Tick, pd.offsets.Day))
    try:
        if isinstance(low, pd.Timestamp):
            edges = pd.date_range(low, high, freq=offset)
        elif fixed:
            edges = pd.timedelta_range(low, high, freq=offset)
        else:
            raise ValueError(f"{offset.freqstr} is a calendar frequency")
    except Exception as err:  # noqa: BLE001 - pandas refuses these periods
        raise DomainError(f"bins={safe_repr(freq)} on column {column!r}: {err}. Durations take fixed frequencies "
                          f"('D', 'h', '15min'...), dates any calendar one.") from err
    if edges.size < 2 or edges[0] != low or edges[-1] != high:
        grid = offset.freqstr
        raise DomainError(
            f"range={safe_repr(rng)} for bins={safe_repr(freq)} on column {column!r} must start and end on the boundaries of its "
            f"periods ({grid}): {_nearest(low, offset)} and {_nearest(high, offset)}. The bins are whole periods.")
    return _checked_time_edges(column, edges, rng)


def _nearest(value: Any, offset: Any) -> str:
    try:
        if offset.is_on_offset(value):
            return f"{value} is one"
        return f"around {value} they are {offset.rollback(value)} and {offset.rollforward(value)}"
    except Exception:  # noqa: BLE001 - only a hint in a message
        return f"{value} is not one"


# ------------------------------------------------------------------------------------ explicit edges

def _interval_edges(column: str, bins: pd.IntervalIndex) -> tuple[Any, bool]:
    if bins.size == 0:
        raise DomainError(f"The IntervalIndex for column {column!r} is empty; pass at least one interval.")
    if bins.closed != "left":
        raise DomainError(f"The IntervalIndex for column {column!r} is closed={bins.closed!r}; bins are half-open "
                          f"[low, high). Build it with pd.IntervalIndex.from_breaks(edges, closed='left').")
    left, right = bins.left, bins.right
    if not bool((left[1:] == right[:-1]).all()):
        raise DomainError(
            f"The IntervalIndex for column {column!r} has gaps or overlaps; its intervals must tile the domain "
            f"(each one starts where the previous one ends). Add each gap as a bin of its own: it costs no "
            f"privacy (one row still changes one count) and its estimate can be ignored.")
    return _explicit_edges(column, left.append(right[-1:]))


def _explicit_edges(column: str, bins: Any) -> tuple[Any, bool]:
    if isinstance(bins, (pd.DatetimeIndex, pd.TimedeltaIndex)):
        return _checked_time_edges(column, bins, bins)
    if isinstance(bins, range):
        arr: Any = np.arange(bins.start, bins.stop, bins.step, dtype=np.int64)
    elif isinstance(bins, (np.ndarray, pd.Index, pd.Series)):
        arr = bins.to_numpy() if not isinstance(bins, np.ndarray) else bins
    elif hasattr(bins, "__iter__") and not isinstance(bins, (bytes, dict, set)):
        try:
            items = list(bins)
        except Exception as err:  # noqa: BLE001 - an iterable whose iteration raises
            raise ParameterError(f"The 'bins' parameter for column {column!r} must be an int with range= or an "
                                 f"increasing sequence of numeric edges. Got {safe_repr(bins)}.") from err
        if any(is_time_like(v) for v in items) or (items and all(isinstance(v, str) for v in items)
                                                    and not all(_is_number_text(v) for v in items)):
            return _time_edges_from(column, items, bins)
        try:
            arr = np.asarray(items, dtype=np.float64)
        except Exception as err:  # noqa: BLE001 - a hostile __float__, an int beyond the double range
            raise ParameterError(f"The 'bins' parameter for column {column!r} must be an int with range= or an "
                                 f"increasing sequence of numeric edges. Got {safe_repr(bins)}.") from err
    else:
        raise ParameterError(f"The 'bins' parameter for column {column!r} must be an int with range= or an "
                             f"increasing sequence of numeric edges. Got {safe_repr(bins)}.")
    if arr.dtype.kind in "mM":
        return _time_edges_from(column, arr, bins)
    try:
        with np.errstate(all="ignore"):
            edges = np.array(arr, dtype=np.float64)  # a new array: results lock theirs read-only
    except Exception as err:  # noqa: BLE001 - a hostile __float__, an int beyond the double range
        raise ParameterError(f"The 'bins' parameter for column {column!r} must be an int with range= or an "
                             f"increasing sequence of numeric edges. Got {safe_repr(bins)}.") from err
    if edges.ndim != 1 or edges.size < 2:
        raise DomainError(f"Bin edges for column {column!r} need at least two values. Got {safe_repr(bins)}.")
    with np.errstate(all="ignore"):  # edges -1e308, 1e308: an inf width, refused below
        widths = np.subtract(edges[1:], edges[:-1])
    smallest = widths.min()
    if not (math.isfinite(edges[0]) and math.isfinite(edges[-1]) and smallest > 0 and math.isfinite(widths.max())):
        if not np.all(np.isfinite(edges)) or not np.all(np.isfinite(widths)):
            raise DomainError(f"Bin edges for column {column!r} must be finite (and span less than about "
                              f"1.8e308). Got {safe_repr(bins)}.")
        raise DomainError(f"Bin edges for column {column!r} must be strictly increasing. Got {safe_repr(bins)}.")
    even = bool(widths.max() == smallest)
    if arr.dtype.kind == "f":  # float edges (often a linspace): rounding noise removed as for bins=int
        edges = _decimal_edges(edges)  # at most 2 ulps per edge: the even coder's edge correction still holds
    return edges, even


def _time_edges_from(column: str, items: Any, shown: Any) -> tuple[Any, bool]:
    message = (f"The 'bins' edges for column {column!r} must all be numbers, all dates (Timestamps or ISO 8601 "
               f"text, all naive or all tz-aware) or all durations (Timedeltas). Got {safe_repr(shown)}.")
    try:
        if isinstance(items, np.ndarray) and items.dtype.kind in "mM":
            edges: Any = pd.TimedeltaIndex(items) if items.dtype.kind == "m" else pd.DatetimeIndex(items)
        else:
            values = [_parse_text(v) if isinstance(v, str) else v for v in items]
            if all(isinstance(v, _TIMEDELTA_TYPES) for v in values):
                edges = pd.TimedeltaIndex(values)
            elif all(isinstance(v, _DATETIME_TYPES) and not isinstance(v, bool) for v in values):
                edges = pd.DatetimeIndex([pd.Timestamp(v) for v in values])
            else:
                raise TypeError(message)
    except Exception as err:  # noqa: BLE001 - dates or durations pandas cannot represent
        raise ParameterError(message) from err
    return _checked_time_edges(column, edges, shown)


def _checked_time_edges(column: str, edges: Any, shown: Any) -> tuple[Any, bool]:
    if edges.size < 2:
        raise DomainError(f"Bin edges for column {column!r} need at least two values. Got {safe_repr(shown)}.")
    if edges.hasnans:
        raise DomainError(f"Bin edges for column {column!r} must be real dates or durations, not NaT. Got {safe_repr(shown)}.")
    if edges.unit not in ("s", "ms", "us", "ns"):
        edges = edges.as_unit("s")
    keys = edges.asi8
    widths = np.subtract(keys[1:], keys[:-1])
    smallest = widths.min()
    if not smallest > 0:
        raise DomainError(f"Bin edges for column {column!r} must be strictly increasing. Got {safe_repr(shown)}.")
    if edges.size - 1 > MAX_CELLS:
        raise DomainError(f"{edges.size - 1:,} bins for column {column!r} are above the limit of {MAX_CELLS:,} "
                          f"cells (2**26): every cell gets its own noisy count. Use coarser bins.")
    return edges.rename(None), bool(widths.max() == smallest)
