"""Private values -> codes on public labels, never raising and never warning.

The boundary rule (DESIGN section 6): a private value that does not fit the
declared domain is out of domain and dropped, silently. Group ids and region
names are matched against public labels (a ``pandas.Index``) or, when no
public list exists, grouped by equality. A value takes part only when it is a
*plain scalar*: a string, a number, a boolean, bytes, a date, time,
timestamp, timedelta or period, not missing. Anything else (lists, dicts,
sets, arrays, tuples, complex numbers, other objects, ``NaN``/``None``/
``NaT``/``NA``, ``Decimal('NaN')``) gets code -1.

Every decision is made value by value, so that whether a value matches never
depends on the other values of its column. A column's dtype does depend on
them: one odd row turns an ``int64`` column into ``object``, and Dask (its
``dataframe.convert-string`` default) or ``read_csv`` then hold every id as
a string (``"17"`` for 17). So values are compared with the labels in the
labels' own terms:

* numeric labels: numbers match by value, strings are read as numbers
  (``"17"`` and ``"17.0"`` match 17; integers of up to 18 digits exactly),
  booleans never match;
* string labels: strings match as they are, numbers through ``str()``
  (17 matches ``"17"``, 1.5 matches ``"1.5"``), booleans never match;
* boolean labels: only booleans match;
* date, time or bytes labels: only values of those types match (pandas equality);
* labels that mix these kinds (refused in public tables): pandas equality.

Object columns are classified in one C pass (``pandas.api.types.infer_dtype``);
only columns that mix kinds of values are classified value by value.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from pandas.api.types import infer_dtype

__all__ = ["PLAIN_TYPES", "value_classes", "plain_mask", "public_labels", "positions", "factorize",
           "CLASS_NAMES"]

# Classes of values: missing, not plain, boolean, number, string, other plain scalar.
_MISSING, _NONE, _BOOL, _NUMBER, _STRING, _OTHER = -1, 0, 1, 2, 3, 4

#: Names of the classes of plain values (for messages about public labels).
CLASS_NAMES = {_BOOL: "boolean", _NUMBER: "number", _STRING: "string", _OTHER: "date/time/bytes"}

_OTHER_TYPES: tuple[type, ...] = (bytes, datetime.date, datetime.time, datetime.timedelta, np.datetime64,
                                  np.timedelta64, pd.Period)

#: Types whose values are plain scalars (hashable, with value equality).
PLAIN_TYPES: tuple[type, ...] = (str, bool, np.bool_, int, float, np.integer, np.floating, decimal.Decimal,
                                 *_OTHER_TYPES)

#: ``infer_dtype`` answers (object arrays, missing values skipped) that give one class to every value.
_KIND_CLASS = {
    "string": _STRING, "integer": _NUMBER, "floating": _NUMBER, "mixed-integer-float": _NUMBER,
    "boolean": _BOOL, "bytes": _OTHER, "datetime64": _OTHER, "datetime": _OTHER, "date": _OTHER,
    "timedelta64": _OTHER, "timedelta": _OTHER, "time": _OTHER, "period": _OTHER, "empty": _MISSING,
}

_INT_TEXT = r"[+-]?[0-9]{1,18}"  # integers that parse exactly into int64


def _class_of(value: Any) -> int:
    """Class of one value of an object column (never raises)."""
    if value is None or value is pd.NA or value is pd.NaT:
        return _MISSING
    if isinstance(value, (bool, np.bool_)):
        return _BOOL
    if isinstance(value, (np.datetime64, np.timedelta64)):  # before numbers: np.timedelta64 is an np.integer
        if np.isnat(value):
            return _MISSING
        # A generic-unit value (np.timedelta64(1)) has no hash: it cannot be a label.
        return _NONE if np.datetime_data(value.dtype)[0] == "generic" else _OTHER
    if isinstance(value, str):
        return _STRING
    if isinstance(value, (int, np.integer)):
        return _NUMBER
    if isinstance(value, (float, np.floating)):
        return _MISSING if value != value else _NUMBER
    if isinstance(value, decimal.Decimal):
        return _MISSING if value.is_nan() else _NUMBER  # Decimal('sNaN') raises on hashing and comparison
    if isinstance(value, _OTHER_TYPES):
        return _OTHER
    return _NONE


def _dtype_class(dtype: Any) -> int | None:
    """Class of every present value of a typed (non-object) column; None: classify values one by one."""
    if pd.api.types.is_bool_dtype(dtype):
        return _BOOL
    if pd.api.types.is_complex_dtype(dtype):
        return _NONE
    if pd.api.types.is_numeric_dtype(dtype):
        return _NUMBER
    if pd.api.types.is_string_dtype(dtype) and dtype != object:
        return _STRING
    if (pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype)
            or isinstance(dtype, pd.PeriodDtype)):
        return _OTHER
    return None


def _as_object(values: Any) -> np.ndarray:
    if isinstance(values, (pd.Series, pd.Index)):
        return values.to_numpy(dtype=object)
    return np.asarray(values, dtype=object)


def _classify(values: Any) -> tuple[Any, int | np.ndarray, np.ndarray]:
    """(values as an indexable array, class of all values or of each, which values are present and plain)."""
    dtype = getattr(values, "dtype", None)
    cls = _dtype_class(dtype) if dtype is not None and dtype != object else None
    if cls is None:
        values = _as_object(values)
        cls = _KIND_CLASS.get(infer_dtype(values, skipna=True))
        if cls is None:
            classes = np.fromiter(map(_class_of, values), dtype=np.int8, count=len(values))
            return values, classes, classes > _NONE
    if cls in (_NONE, _MISSING):
        return values, cls, np.zeros(len(values), dtype=bool)
    return values, cls, ~np.asarray(pd.isna(values), dtype=bool)


def value_classes(values: Any) -> np.ndarray:
    """Class of every value: -1 missing, 0 not a plain scalar, 1 boolean, 2 number, 3 string, 4 other."""
    if isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
        per_category = value_classes(values.dtype.categories)
        codes = np.asarray(values.cat.codes if isinstance(values, pd.Series) else values.codes, dtype=np.int64)
        return np.where(codes >= 0, per_category[np.maximum(codes, 0)], _MISSING).astype(np.int8)
    values, cls, present = _classify(values)
    if isinstance(cls, np.ndarray):
        return cls
    out = np.full(len(present), _MISSING, dtype=np.int8)
    if cls == _NONE:  # a dtype of non-scalars: missing values stay missing
        out[~np.asarray(pd.isna(values), dtype=bool)] = _NONE
    out[present] = cls
    return out


def plain_mask(values: Any) -> np.ndarray | None:
    """Which values are plain scalars or missing: None when all are, else a boolean mask.

    Used to report (public tables) or skip (private rows) lists, dicts,
    tuples and other objects.
    """
    dtype = getattr(values, "dtype", None)
    if dtype is not None and dtype != object and _dtype_class(dtype) not in (None, _NONE):
        return None
    mask = value_classes(values) != _NONE
    return None if mask.all() else mask


def _label_class(labels: pd.Index) -> int | None:
    """The one class of the public labels (None when they mix classes)."""
    if len(labels) == 0:
        return None
    classes = np.unique(value_classes(labels))
    return int(classes[0]) if classes.size == 1 and classes[0] > _NONE else None


def _format_numbers(values: Any) -> np.ndarray:
    """Numbers as ``str()`` writes them (``17`` -> ``"17"``, ``1.5`` -> ``"1.5"``)."""
    arr = np.asarray(values)
    if arr.dtype.kind in "iuf":
        return arr.astype(str).astype(object)
    return np.array([_text(v) for v in arr], dtype=object) if arr.size else np.empty(0, dtype=object)


def _text(value: Any) -> str | None:
    """``str(value)``, or None (matching no label) for a number whose ``__str__`` raises."""
    try:
        return str(value)
    except Exception:  # noqa: BLE001 - a private value's own __str__ may raise anything
        return None


def _parsed_positions(labels: pd.Index, strings: Any) -> np.ndarray:
    """Positions in numeric ``labels`` of strings read as numbers (integers of <= 18 digits exactly)."""
    text = pd.Series(_as_object(strings), dtype=object)
    exact = text.str.fullmatch(_INT_TEXT).to_numpy(dtype=bool, na_value=False)
    out = np.full(len(text), -1, dtype=np.int64)
    if exact.any():
        out[exact] = labels.get_indexer(pd.to_numeric(text[exact]).to_numpy(dtype=np.int64))
    if (~exact).any():
        other = pd.to_numeric(text[~exact], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        out[~exact] = labels.get_indexer(other)
    return out


def _lookup(labels: pd.Index, label_class: int | None, value_class: int, values: Any) -> np.ndarray:
    """Positions in ``labels`` of present values of one class."""
    if label_class is None or value_class == label_class:
        return labels.get_indexer(values)
    if label_class == _NUMBER and value_class == _STRING:
        return _parsed_positions(labels, values)
    if label_class == _STRING and value_class == _NUMBER:
        return labels.get_indexer(_format_numbers(values))
    return np.full(len(values), -1, dtype=np.int64)


def _well_behaved(value: Any) -> bool:
    """Whether a value can be hashed and compared with itself without raising."""
    try:
        hash(value)
        bool(value == value)
    except Exception:  # noqa: BLE001 - a private value's own methods may raise anything
        return False
    return True


def _sanitized(values: Any) -> np.ndarray:
    """``values`` as objects, with every value that is not :func:`_well_behaved` made missing (None).

    The slow path, taken only when the vectorized one raised. A value whose ``__hash__`` or
    ``__eq__`` raises (a str subclass, say) can never be found among labels or grouped, whichever
    path runs, so it is dropped either way: whether a value counts depends on it alone.
    """
    arr = _as_object(values)
    keep = np.fromiter(map(_well_behaved, arr), dtype=bool, count=len(arr))
    return np.where(keep, arr, np.array(None, dtype=object))


def _coded(values: Any, code: Callable[[int, Any], np.ndarray]) -> np.ndarray:
    """``code(class, values)`` on the present plain values of each class; -1 elsewhere (never raises)."""
    try:
        return _coded_values(values, code)
    except Exception:  # noqa: BLE001 - a hostile private value: drop it (boundary rule)
        return _coded_values(_sanitized(values), code)


def _coded_values(values: Any, code: Callable[[int, Any], np.ndarray]) -> np.ndarray:
    dtype = getattr(values, "dtype", None)
    with np.errstate(all="ignore"):
        if isinstance(dtype, pd.CategoricalDtype):
            # Decide per category (exactly as for the same values in any other dtype), then spread.
            per_category = _coded(dtype.categories, code)
            cat_codes = np.asarray(values.cat.codes if isinstance(values, pd.Series) else values.codes,
                                   dtype=np.int64)
            return np.where(cat_codes >= 0, per_category[np.maximum(cat_codes, 0)], -1)
        arr, classes, present = _classify(values)
        if not isinstance(classes, np.ndarray) and present.all():
            return np.asarray(code(int(classes), arr), dtype=np.int64)
        out = np.full(len(present), -1, dtype=np.int64)
        if not isinstance(classes, np.ndarray):
            if present.any():
                out[present] = code(int(classes), arr[present])
            return out
        for cls in np.unique(classes[present]):
            sel = present & (classes == cls)
            out[sel] = code(int(cls), arr[sel])
        return out


def public_labels(labels: pd.Index) -> pd.Index:
    """A public label index in the form :func:`positions` expects (a Categorical index as plain labels)."""
    if isinstance(labels.dtype, pd.CategoricalDtype):
        return pd.Index(labels.to_numpy())
    return labels


def positions(labels: pd.Index, values: Any) -> np.ndarray:
    """Position in the public ``labels`` of every value (int64), -1 when it is not a label.

    ``labels`` must be unique and hold no missing value (it is public and
    validated). See the module notes for how values meet labels.

    Examples
    --------
    >>> import pandas as pd
    >>> positions(pd.Index([10, 20, 30]), pd.Series([20, [1], None, "10", 10.0, True], dtype=object)).tolist()
    [1, -1, -1, 0, 0, -1]
    """
    labels = public_labels(labels)
    label_class = _label_class(labels)
    return _coded(values, lambda cls, v: _lookup(labels, label_class, cls, v))


def factorize(values: Any) -> np.ndarray:
    """Codes ``0..k-1`` grouping equal plain values; -1 for missing or non-plain values.

    Values are equal when pandas says so and they are of the same class
    (booleans, numbers, strings, other), so a boolean never joins a number's
    group, whatever the column's dtype.

    Examples
    --------
    >>> import pandas as pd
    >>> factorize(pd.Series(["a", {"b": 1}, "a", float("nan"), 7], dtype=object)).tolist()
    [0, -1, 0, -1, 1]
    """
    try:
        return _factorized(values)
    except Exception:  # noqa: BLE001 - a hostile private value: drop it (boundary rule)
        return _factorized(_sanitized(values))


def _factorized(values: Any) -> np.ndarray:
    dtype = getattr(values, "dtype", None)
    with np.errstate(all="ignore"):
        if isinstance(dtype, pd.CategoricalDtype):
            per_category = factorize(dtype.categories)
            cat_codes = np.asarray(values.cat.codes if isinstance(values, pd.Series) else values.codes,
                                   dtype=np.int64)
            codes = np.where(cat_codes >= 0, per_category[np.maximum(cat_codes, 0)], -1)
            present = codes >= 0
            codes[present] = pd.factorize(codes[present])[0]  # unused categories leave gaps: renumber
            return codes
        arr, classes, present = _classify(values)
        if not isinstance(classes, np.ndarray) and present.all():
            return np.asarray(pd.factorize(arr)[0], dtype=np.int64)
        codes = np.full(len(present), -1, dtype=np.int64)
        if present.any():
            found = pd.factorize(arr[present])[0]
            if isinstance(classes, np.ndarray):
                # Values of different classes never share a group (True is not 1, as in typed columns).
                found = pd.factorize(found * 8 + classes[present])[0]
            codes[present] = found
        return codes
