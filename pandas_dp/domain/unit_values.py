"""Canonical unit identity: one 64-bit hash per privacy-unit value, whatever dtype holds it.

A privacy unit (``privacy_unit="person_id"``) is identified by its value, never by the dtype of
the column, partition or file that holds it: 17, 17.0, ``np.uint8(17)`` and the text ``"17"`` are
one unit on the pandas and the Dask engine alike, so one odd private row that turns a partition's
id column into float64 or object splits no person into two units (issue 24). The engines hash the
unit column with :func:`canonical_unit_hashes`; values are compared as
:mod:`pandas_dp.domain.labels` compares values with numeric labels, and a value that cannot be
read has no unit (hash 0, the row is dropped), never an error.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.domain.labels import _sanitized, value_classes

__all__ = ["canonical_unit_hashes"]

_TEXT_KEY = "pandas_dp:unit:t"   # 16 bytes: text units
_BIG_KEY = "pandas_dp:unit:b"    # 16 bytes: integers outside int64, by their decimal text
_FLOAT_TAG = np.uint64(0x5851F42D4C957F2D)  # non-integral numbers, by their float64 bits
_TWO_63 = float(2 ** 63)


def canonical_unit_hashes(values: Any) -> np.ndarray:
    """A 64-bit hash of the canonical value of every row's unit; 0 where there is no unit.

    A unit is identified by its value, never by the dtype of the column (or partition, or file)
    that holds it, so that one person is one unit on every engine and an odd row that changes its
    column's dtype changes no other unit's identity. Canonical values, compared as
    :mod:`pandas_dp.domain.labels` compares values with numeric labels:

    * a number (int, float, ``Decimal``, numpy scalar, in any dtype) that is integral is that
      integer: 17, 17.0 and ``np.uint8(17)`` are one unit; other numbers are their float64 value;
    * text that reads as a number is that number (``"17"`` and ``"17.0"`` are 17: Dask and
      ``read_csv`` may hold every id of a column as text when one value is odd); other text is
      itself;
    * booleans and other plain scalars (dates, bytes, ...) are their ``str()`` text;
    * missing values and values that are not plain scalars have no unit (hash 0; the row is dropped).

    Merging two values into one unit is safe (each still contributes at most its bound); what
    this rules out is one person counted as two units.
    """
    try:
        return _canonical_hashes(values)
    except Exception:  # noqa: BLE001 - a hostile private value: it has no unit (boundary rule)
        return _canonical_hashes(pd.Series(_sanitized(values), dtype=object))


def _canonical_hashes(values: Any) -> np.ndarray:
    dtype = getattr(values, "dtype", None)
    if isinstance(dtype, pd.CategoricalDtype):
        per_category = _canonical_hashes(pd.Series(dtype.categories))
        codes = np.asarray(values.cat.codes if isinstance(values, pd.Series) else values.codes, dtype=np.int64)
        return np.where(codes >= 0, per_category[np.maximum(codes, 0)], np.uint64(0)).astype(np.uint64)
    classes = np.asarray(value_classes(values))
    out = np.zeros(classes.size, dtype=np.uint64)
    if not (classes > 0).any():
        return out
    if isinstance(dtype, np.dtype) and dtype.kind in "iuf":
        arr = np.asarray(values)
        sel = classes == 2
        out[sel] = _number_hashes(arr[sel])
        return np.where(sel, np.maximum(out, np.uint64(1)), np.uint64(0)).astype(np.uint64)
    arr = values.to_numpy(dtype=object) if isinstance(values, (pd.Series, pd.Index)) else np.asarray(values, dtype=object)
    for cls in np.unique(classes[classes > 0]):
        sel = classes == cls
        if cls == 2:      # numbers held as objects
            out[sel] = _number_hashes(_object_numbers(arr[sel]))
        elif cls == 3:    # text
            out[sel] = _text_unit_hashes(arr[sel])
        else:             # booleans, dates, bytes, ...: their text
            out[sel] = _hash_text([_str_or_empty(v) for v in arr[sel]], _TEXT_KEY)
    return np.where(classes > 0, np.maximum(out, np.uint64(1)), np.uint64(0)).astype(np.uint64)


def _str_or_empty(value: Any) -> str:
    try:
        return str(value)
    except Exception:  # noqa: BLE001 - a private value's own __str__ may raise anything
        return ""


def _hash_text(texts: Any, key: str) -> np.ndarray:
    arr = np.asarray(texts, dtype=object)
    if arr.size == 0:
        return np.zeros(0, dtype=np.uint64)
    return np.asarray(pd.util.hash_array(arr, hash_key=key, categorize=False), dtype=np.uint64)


def _hash_int64(ints: np.ndarray) -> np.ndarray:
    if ints.size == 0:
        return np.zeros(0, dtype=np.uint64)
    return np.asarray(pd.util.hash_array(np.asarray(ints, dtype=np.int64), categorize=False), dtype=np.uint64)


def _object_numbers(arr: np.ndarray) -> np.ndarray:
    """Numbers held as objects -> int64 when all are integers of int64, else objects (Python int or float)."""
    from pandas.api.types import infer_dtype

    if infer_dtype(arr, skipna=False) == "integer":
        try:
            return np.asarray(arr, dtype=np.int64)
        except (OverflowError, TypeError, ValueError):
            pass
    return np.array([_canonical_number(v) for v in arr] + [None], dtype=object)[:-1]


def _canonical_number(value: Any) -> int | float:
    """An integral number as a Python int, any other as a float64."""
    if isinstance(value, (int, np.integer)):
        return int(value)
    f = float(value)
    if math.isfinite(f) and f == math.floor(f):
        import decimal

        if isinstance(value, decimal.Decimal) and value == value.to_integral_value():
            return int(value)
        return int(f)
    return f


def _number_hashes(arr: np.ndarray) -> np.ndarray:
    """Hashes of numbers: integers by value (int64, or their decimal text beyond), others by float64 bits."""
    out = np.zeros(arr.size, dtype=np.uint64)
    if arr.size == 0:
        return out
    if arr.dtype.kind == "i":
        return _hash_int64(arr.astype(np.int64))
    if arr.dtype.kind == "u":
        small = arr < np.uint64(1 << 63)
        out[small] = _hash_int64(arr[small].astype(np.int64))
        out[~small] = _hash_text([str(int(v)) for v in arr[~small]], _BIG_KEY)
        return out
    if arr.dtype.kind == "f":
        v = arr.astype(np.float64)
        with np.errstate(invalid="ignore"):
            integral = np.isfinite(v) & (v == np.floor(v))
        small = integral & (np.abs(v) < _TWO_63)
        big = integral & ~small
        other = ~integral
        out[small] = _hash_int64(v[small].astype(np.int64))
        out[big] = _hash_text([str(int(x)) for x in v[big]], _BIG_KEY)
        out[other] = _hash_int64(v[other].view(np.int64)) ^ _FLOAT_TAG
        return out
    # objects: Python ints of any size and floats
    is_int = np.fromiter((isinstance(v, int) for v in arr), dtype=bool, count=arr.size)
    ints = arr[is_int]
    fits = np.fromiter((-(1 << 63) <= v < (1 << 63) for v in ints), dtype=bool, count=ints.size)
    sub = np.zeros(ints.size, dtype=np.uint64)
    sub[fits] = _hash_int64(np.array(list(ints[fits]), dtype=np.int64))
    sub[~fits] = _hash_text([str(v) for v in ints[~fits]], _BIG_KEY)
    out[is_int] = sub
    floats = np.array(list(arr[~is_int]), dtype=np.float64)
    out[~is_int] = _hash_int64(floats.view(np.int64)) ^ _FLOAT_TAG if floats.size else np.zeros(0, np.uint64)
    return out


# Text that reads as a number (ASCII only, the same in RE2 and Python's re): optional spaces and sign,
# then an integer, or a decimal with an optional exponent.
_INT_TEXT = "[ ]*[+-]?[0-9]+[ ]*"
_MAX_DIGITS = 4000  # int() refuses longer text: such an integer is identified by its text
_SHORT_INT_TEXT = "[ ]*[+-]?[0-9]{1,18}[ ]*"  # exactly an int64
_FLOAT_TEXT = "[ ]*[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]{1,4})?[ ]*"


def _text_unit_hashes(arr: np.ndarray) -> np.ndarray:
    """Hashes of text units: text that reads as a number as that number, other text as itself.

    Classified and parsed with Arrow (vectorized); text Arrow cannot hold (lone surrogates) is read
    value by value with the same patterns.
    """
    try:
        import pyarrow as pa  # a core dependency; the per-value path gives the same hashes without it
        import pyarrow.compute as pc
    except ImportError:  # pragma: no cover - pyarrow is installed with the package
        return _text_unit_hashes_slow(arr)
    try:
        text = pa.array(arr, type=pa.string())
    except Exception:  # noqa: BLE001 - a private string Arrow cannot encode: the per-value path
        return _text_unit_hashes_slow(arr)
    out = np.zeros(arr.size, dtype=np.uint64)
    bare = pc.replace_substring_regex(pc.utf8_trim(text, " "), "^[+]", "")
    short = pc.match_substring_regex(text, f"^{_SHORT_INT_TEXT}$").to_numpy(zero_copy_only=False)
    whole = pc.match_substring_regex(text, f"^{_INT_TEXT}$").to_numpy(zero_copy_only=False)
    real = pc.match_substring_regex(text, f"^{_FLOAT_TEXT}$").to_numpy(zero_copy_only=False) & ~whole
    plain = ~(whole | real)
    if short.any():
        out[short] = _hash_int64(pc.cast(bare.filter(pa.array(short)), pa.int64()).to_numpy())
    long_int = whole & ~short
    if long_int.any():
        out[long_int] = [_long_int_hash(t) for t in arr[long_int]]
    if real.any():
        out[real] = _number_hashes(pc.cast(bare.filter(pa.array(real)), pa.float64()).to_numpy())
    if plain.any():
        out[plain] = _hash_text(arr[plain], _TEXT_KEY)
    return out


def _text_unit_hashes_slow(arr: np.ndarray) -> np.ndarray:
    import re

    out = np.zeros(arr.size, dtype=np.uint64)
    for i, t in enumerate(arr):
        if re.fullmatch(_INT_TEXT, t, flags=re.ASCII):
            out[i] = _long_int_hash(t)
            continue
        elif re.fullmatch(_FLOAT_TEXT, t, flags=re.ASCII):
            out[i] = _number_hashes(np.array([float(t)], dtype=np.float64))[0]
        else:
            try:
                out[i] = _hash_text([t], _TEXT_KEY)[0]
            except UnicodeError:  # lone surrogates: by its bytes (two texts may merge: safe)
                out[i] = _hash_text([t.encode("utf-8", "surrogatepass").decode("latin-1")], _TEXT_KEY)[0]
    return out


def _long_int_hash(text: str) -> np.uint64:
    """Hash of one integer written as text (any length)."""
    if len(text.strip(" ").lstrip("+-")) > _MAX_DIGITS:
        return np.uint64(_hash_text([text], _TEXT_KEY)[0])
    return np.uint64(_number_hashes(np.array([int(text), None], dtype=object)[:1])[0])
