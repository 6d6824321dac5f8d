"""Private values of a numeric domain: any column as int64 or float64, ``NaN`` where a value is not a number."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["numeric_values"]


def numeric_values(series: Any) -> np.ndarray:
    """A column's values as an int64 or float64 numpy array, ``NaN`` where a value is not a real number.

    Never raises and never warns, whatever the values: numeric dtypes are read
    as they are (booleans as 0/1, unsigned integers above ``2**63 - 1`` as
    floats, complex numbers with a non-zero imaginary part as ``NaN``); dates,
    durations and categoricals are not numbers (all ``NaN``); any other column
    goes through ``pandas.to_numeric(errors="coerce")`` (so the strings of a CSV
    column that pandas could not read as numbers still count where they parse).

    Parameters
    ----------
    series : pandas.Series
        The column (private data).

    Returns
    -------
    numpy.ndarray
        ``int64`` or ``float64`` values aligned with the rows.
    """
    dtype = series.dtype
    if isinstance(dtype, np.dtype):
        kind = dtype.kind
        if kind in "if":
            return series.to_numpy(copy=False)
        if kind == "b":
            return series.to_numpy(dtype=np.int64)
        if kind == "u":
            arr = series.to_numpy(copy=False)
            return arr.astype(np.int64) if dtype.itemsize < 8 else arr.astype(np.float64)
        if kind == "c":
            arr = series.to_numpy(copy=False)
            return np.where(arr.imag == 0, arr.real, np.nan)
        if kind in "mM":
            return np.full(len(series), np.nan)
    elif isinstance(dtype, pd.CategoricalDtype):
        return np.full(len(series), np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            converted = pd.to_numeric(series, errors="coerce")
        except Exception:  # noqa: BLE001 - a private value may break the converter: element by element
            converted = pd.Series([_real_or_nan(v) for v in series.to_numpy(dtype=object)], dtype=np.float64)
        if isinstance(converted.dtype, np.dtype):
            if converted.dtype.kind in "mMO":
                return np.full(len(series), np.nan)
            return numeric_values(converted)
        try:
            return converted.to_numpy(dtype=np.float64, na_value=np.nan)
        except Exception:  # noqa: BLE001
            return np.full(len(series), np.nan)


def _real_or_nan(value: Any) -> float:
    try:
        out = float(value) if isinstance(value, (int, float, np.number, str, bytes)) else math.nan
    except Exception:  # noqa: BLE001
        return math.nan
    return out
