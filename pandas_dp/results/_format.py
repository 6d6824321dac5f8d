"""How results write numbers and bins for people: ``120,800``, ``3,267.1``, ``[20, 30)``, ``2024-03-01``.

Used by every ``repr``, notebook view (``_repr_html_``) and plot; the data
itself (``counts``, ``to_frame()``) keeps its exact values and index.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["format_number", "format_edge", "interval_label", "index_labels", "estimates_table", "html_params"]


def format_number(value: Any) -> str:
    """An estimate for reading: integral values with thousands separators, others with one decimal.

    Examples
    --------
    >>> format_number(120800.0), format_number(3267.0909), format_number(-0.0), format_number(0.0123)
    ('120,800', '3,267.1', '0', '0.012')
    """
    v = float(value)
    if not math.isfinite(v):
        return str(v)
    if v == 0:
        return "0"
    if v == round(v) and abs(v) < 2**53:
        return f"{v:,.0f}"
    if abs(v) >= 0.1:
        return f"{v:,.1f}"
    return f"{v:.2g}"


def _timedelta_label(value: pd.Timedelta) -> str:
    text = str(value)
    if text.startswith("0 days "):
        text = text[len("0 days "):]
    if text.endswith(" 00:00:00"):
        text = text[: -len(" 00:00:00")]
    return text


def format_edge(value: Any) -> str:
    """A bin edge for reading: numbers with thousands separators (up to 6 significant digits),
    timestamps as dates (with the time of day only when it is not midnight), timedeltas compactly.

    Examples
    --------
    >>> format_edge(250000.0), format_edge(0.30000000000000004), format_edge(pd.Timestamp("2024-03-01"))
    ('250,000', '0.3', '2024-03-01')
    """
    if isinstance(value, (pd.Timestamp, np.datetime64)) or hasattr(value, "strftime"):
        ts = pd.Timestamp(value)
        if ts.hour == ts.minute == ts.second == ts.microsecond == ts.nanosecond == 0:
            return ts.strftime("%Y-%m-%d")
        return ts.strftime("%Y-%m-%d %H:%M" if ts.second == ts.microsecond == 0 else "%Y-%m-%d %H:%M:%S")
    if isinstance(value, (pd.Timedelta, np.timedelta64)):
        return _timedelta_label(pd.Timedelta(value))
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        v = float(value)
        if v == 0:
            return "0"
        if math.isfinite(v) and v == round(v) and abs(v) < 2**53:
            return f"{v:,.0f}"
        return f"{v:,.6g}"
    return str(value)


def interval_label(interval: pd.Interval) -> str:
    """``[20, 30)`` for a half-open bin (brackets follow ``interval.closed``).

    Examples
    --------
    >>> interval_label(pd.Interval(8000.0, 16000.0, closed="left"))
    '[8,000, 16,000)'
    """
    left = "[" if interval.closed in ("left", "both") else "("
    right = "]" if interval.closed in ("right", "both") else ")"
    return f"{left}{format_edge(interval.left)}, {format_edge(interval.right)}{right}"


def _label(value: Any) -> str:
    if isinstance(value, pd.Interval):
        return interval_label(value)
    if isinstance(value, tuple):
        return ", ".join(_label(v) for v in value)
    return str(value)


def index_labels(index: pd.Index) -> list[str]:
    """Readable labels of a result's index: intervals as ``[low, high)``, cells as ``label, label``."""
    return [_label(v) for v in index]


def estimates_table(frame: pd.DataFrame, index_name: str | None = None) -> pd.DataFrame:
    """A copy of ``frame`` for display: readable index labels and every number as :func:`format_number`."""
    shown = frame.copy()
    for column in shown.columns:
        if pd.api.types.is_numeric_dtype(shown[column].dtype) and not pd.api.types.is_bool_dtype(shown[column]):
            values = shown[column].to_numpy(dtype=np.float64, na_value=np.nan)
            shown[column] = [format_number(v) for v in values]
    shown.index = pd.Index(index_labels(frame.index),
                           name=index_name if index_name is not None else frame.index.name)
    return shown


def _param_text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def html_params(params: Mapping[str, Any]) -> str:
    """``key=value, ...`` of a release's parameters, escaped (floats to 6 significant digits)."""
    return ", ".join(f"{html.escape(str(k))}={html.escape(_param_text(v))}" for k, v in params.items())
