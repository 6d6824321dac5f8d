"""How results write numbers, bins and guarantees for people: ``120,800``, ``[20, 30)``, ``ρ = 0.125 (zCDP)``.

Used by every ``repr``, notebook view (``_repr_html_``) and plot; the data
itself (``counts``, ``to_frame()``) keeps its exact values and index.
A release states its privacy measure and the noise it drew the same way
everywhere: ``ε = 0.5, noise scale t = 2`` for pure DP (discrete Laplace),
``ρ = 0.125 (zCDP), σ = 2`` for zCDP (discrete Gaussian); ``repr`` writes
``epsilon=0.5, noise_scale=2`` and ``rho=0.125 (zCDP), sigma=2``.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["format_number", "format_edge", "interval_label", "index_labels", "estimates_table", "html_params",
           "privacy_text", "noise_text", "guarantee_text", "bounding_note", "release_note", "with_note"]


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


#: Parameters the heading already states (the noise and its size, by :func:`noise_text`).
_SHOWN_IN_HEADING = frozenset({"noise", "sigma2", "noise_scale"})


def _param_text(value: Any) -> str:
    """A parameter's value for reading: exact rationals (``"29000/19"``) and floats as numbers
    (6 significant digits), booleans as yes/no, sequences and mappings item by item."""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, str):
        try:
            number = Fraction(value) if "/" in value else None
        except (ValueError, ZeroDivisionError):
            number = None
        return value if number is None else _param_text(float(number))
    if isinstance(value, (float, np.floating, Fraction)):
        return format_edge(float(value))
    if isinstance(value, (int, np.integer)):
        return format_edge(int(value))
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_param_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_param_text(v) for v in value) + "]"
    return str(value)


def html_params(params: Mapping[str, Any]) -> str:
    """``key: value · ...`` of a release's parameters for a notebook, escaped.

    The noise and its size are left out (the heading states them as ``σ`` or
    ``t``); exact rationals and floats read as numbers, booleans as yes/no,
    underscores as spaces. ``result.params`` itself keeps the exact values.

    Examples
    --------
    >>> html_params({"noise": "discrete Gaussian", "sigma2": "5", "sensitivity": 1, "nonnegative": False,
    ...              "unit_sensitivity": "29000/19"})
    'sensitivity: 1 · nonnegative: no · unit sensitivity: 1,526.32'
    """
    return " · ".join(f"{html.escape(str(k).replace('_', ' '))}: {html.escape(_param_text(v))}"
                      for k, v in params.items() if k not in _SHOWN_IN_HEADING)


def privacy_text(loss: Any, epsilon: float | None = None, *, html: bool = True) -> str:
    """The release's privacy loss in its measure: ``ε = 0.5`` or ``ρ = 0.125 (zCDP)``.

    Parameters
    ----------
    loss : PrivacyLoss or None
        The release's loss (:mod:`pandas_dp.privacy.loss`); ``None`` falls back to ``epsilon``.
    epsilon : float, optional
        The pure epsilon of a result that carries no loss.
    html : bool
        Greek letters and spaces for notebooks and plots; ``epsilon=0.5`` /
        ``rho=0.125 (zCDP)`` for ``repr``.

    Examples
    --------
    >>> from pandas_dp.privacy.loss import pure, zcdp
    >>> privacy_text(pure(0.5)), privacy_text(zcdp(0.125)), privacy_text(zcdp(0.125), html=False)
    ('ε = 0.5', 'ρ = 0.125 (zCDP)', 'rho=0.125 (zCDP)')
    """
    if loss is not None and getattr(loss, "measure", None) == "zcdp":
        value = f"{float(loss.amount):g}"
        return f"ρ = {value} (zCDP)" if html else f"rho={value} (zCDP)"
    amount = loss.amount if loss is not None else epsilon
    if amount is None:
        return ""
    value = f"{float(amount):g}"
    return f"ε = {value}" if html else f"epsilon={value}"


def _noise_values(described: Sequence[Mapping[str, Any] | None]) -> tuple[str, list[float]]:
    """The kind (``"sigma"`` or ``"scale"``) and the distinct values, in order, of noise descriptions."""
    kind, values = "", []
    for d in described:
        if not d:
            continue
        if d.get("sigma2") is not None:
            kind, value = "sigma", math.sqrt(Fraction(str(d["sigma2"])))
        elif d.get("noise_scale") is not None:
            kind, value = "scale", float(Fraction(str(d["noise_scale"])))
        else:
            continue
        shown = float(f"{value:.4g}")
        if shown not in values:
            values.append(shown)
    return kind, values


def noise_text(described: Sequence[Mapping[str, Any] | None] | Mapping[str, Any] | None, *, html: bool = True,
               by: str = "by level") -> str:
    """The noise drawn, from its descriptions (``Noise.describe()``): ``σ = 2`` or ``noise scale t = 2``.

    ``σ`` is the discrete Gaussian's parameter (``sqrt(sigma2)``), ``t`` the
    discrete Laplace scale, to four significant digits. Several noises of
    different sizes (the levels of a tree, the phases of AHP) show their range
    followed by ``by``; no description gives ``""``.

    Examples
    --------
    >>> noise_text({"noise": "discrete Gaussian", "sigma2": "5"})
    'σ = 2.236'
    >>> noise_text([{"noise_scale": "6"}, {"noise_scale": "3"}, None], html=False)
    'noise_scale=3..6 by level'
    """
    if described is None:
        return ""
    items = [described] if isinstance(described, Mapping) else list(described)
    kind, values = _noise_values(items)
    if not values:
        return ""
    low, high = min(values), max(values)
    number = f"{low:g}" if low == high else (f"{low:g}–{high:g} {by}" if html else f"{low:g}..{high:g} {by}")
    if kind == "sigma":
        return f"σ = {number}" if html else f"sigma={number}"
    return f"noise scale t = {number}" if html else f"noise_scale={number}"


def guarantee_text(loss: Any, epsilon: float | None, described: Any, *, html: bool = True,
                   by: str = "by level") -> str:
    """:func:`privacy_text` and :func:`noise_text` joined: ``ρ = 0.125 (zCDP), σ = 2``."""
    parts = [privacy_text(loss, epsilon, html=html), noise_text(described, html=html, by=by)]
    return ", ".join(p for p in parts if p)


def bounding_note(params: Mapping[str, Any]) -> str:
    """What the intervals of a release with a bounded privacy unit leave out, or ``""`` without one.

    With ``privacy_unit=`` and ``max_rows=k`` (or ``max_cells``/``max_rows_per_cell``), rows of a unit
    beyond its bound are dropped before counting: the estimates are then biased low for units with more
    rows, and the intervals cover the noise only. Said where the numbers are (``repr``, notebook view,
    ``to_frame().attrs["note"]``, plots); public (the bound is a parameter or the released ``"auto"`` choice).

    Examples
    --------
    >>> bounding_note({"privacy_unit": "rider", "max_rows": 5})
    'intervals cover the noise only: each rider kept at most 5 rows (rows beyond were dropped; that bias is not in the intervals)'
    >>> bounding_note({"noise": "discrete Laplace"})
    ''
    >>> bounding_note({"privacy_unit": "pid", "max_rows": 5, "dropped_share": 0.386, "dropped_cap": 5,
    ...                "dropped_interval": [0.36, 0.412], "dropped_interval_level": 0.95}).split("; ")[2]
    'about 39% of rows were dropped by max_rows=5 (95% interval 36% to 41%'
    """
    unit = params.get("privacy_unit")
    if unit is None or unit in ("person", "group"):  # count_of_counts' units bound nothing here
        return ""
    if params.get("max_cells") is not None:
        kept = (f"at most {params['max_rows_per_cell']} rows in each of at most {params['max_cells']} cells")
    elif params.get("max_rows") is not None:
        kept = f"at most {params['max_rows']} rows"
        if params.get("max_rows_auto_quantile") is not None:
            kept += " (max_rows='auto')"
    else:
        return ""
    note = (f"intervals cover the noise only: each {unit} kept {kept} (rows beyond were dropped; that bias is "
            f"not in the intervals)")
    if params.get("dropped_share") is not None:
        low, high = params["dropped_interval"]
        level = float(params.get("dropped_interval_level", 0.95))
        note += (f"; about {_percent(params['dropped_share'])} of rows were dropped by max_rows={params['max_rows']} "
                 f"({level:.0%} interval {_percent(low)} to {_percent(high)}; private estimate, each {unit}'s dropped "
                 f"rows counted up to {params['dropped_cap']})")
    return note


def _percent(share: Any) -> str:
    """A share as a person writes it: ``12%``, ``0.4%``, ``0%``."""
    value = 100.0 * float(share)
    return f"{value:.0f}%" if value >= 10 or value == 0 else f"{value:.1g}%" if value < 1 else f"{value:.1f}%"


def release_note(params: Mapping[str, Any]) -> str:
    """What a release's intervals leave out: :func:`bounding_note`, ``method="auto"``'s ``auto_note`` and a
    published table's ``published_note`` (non-negative or integer tables: variances of the unconstrained ones)."""
    return "; ".join(n for n in (bounding_note(params), str(params.get("auto_note") or ""),
                                 str(params.get("published_note") or "")) if n)


def with_note(frame: pd.DataFrame, params: Mapping[str, Any]) -> pd.DataFrame:
    """``frame`` with :func:`release_note` in ``frame.attrs["note"]`` when there is one (the same frame)."""
    note = release_note(params)
    if note:
        frame.attrs["note"] = note
    return frame
