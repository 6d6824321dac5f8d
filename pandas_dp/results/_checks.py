"""Checks of the public arguments of result methods (plots, samples, lookups).

A result's methods read only the release and their own arguments, so a bad
argument is the caller's: it raises :class:`pandas_dp.ParameterError` saying
what was expected and what was given, never the exception a hostile value
raises (an ``__eq__`` that raises, an unhashable region label, an ``ax`` that
is not an Axes). Keyword arguments passed through to matplotlib
(``**kwargs`` of ``plot``) are matplotlib's to check.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from pandas_dp._utils.checks import check_flag, integer_in
from pandas_dp._utils.optional import import_optional
from pandas_dp._utils.rational import safe_repr
from pandas_dp.errors import ParameterError

__all__ = ["MAX_SAMPLE_ROWS", "check_axes", "check_flag", "check_count", "check_rows", "find_label", "level_position",
           "range_pairs", "region_position"]

#: Most synthetic rows one ``sample()`` call draws (8 bytes per row and column; 2**31 rows is 16 GiB).
MAX_SAMPLE_ROWS = 2**31


def range_pairs(low: Any) -> np.ndarray:
    """A list of ``(low, high)`` pairs as an object array of shape ``(k, 2)``, or ``ParameterError``."""
    try:
        pairs = None if isinstance(low, (str, bytes)) else np.asarray(low, dtype=object)
    except Exception:  # noqa: BLE001 - a public argument whose conversion raises anything
        pairs = None
    if pairs is None or pairs.ndim != 2 or pairs.shape[1] != 2:
        raise ParameterError(f"range_query takes (low, high) or a list of (low, high) pairs. "
                             f"Got {safe_repr(low)}.")
    return pairs


def check_axes(ax: Any, purpose: str) -> Any:
    """``None`` or a matplotlib ``Axes`` (the plot extra is needed either way)."""
    axes = import_optional("matplotlib.axes", extra="plot", purpose=purpose)
    if ax is not None and not isinstance(ax, axes.Axes):
        raise ParameterError(f"The 'ax' parameter of {purpose} must be a matplotlib Axes or None (a new figure). "
                             f"Got {type(ax).__name__}; pass e.g. ax=plt.subplots()[1].")
    return ax


def check_count(value: Any, name: str, purpose: str, *, low: int = 0, high: int | None = None) -> int:
    """An integer (not a bool) in ``[low, high]``."""
    number = integer_in(value, low, high)
    if number is None:
        span = f">= {low}" if high is None else f"in [{low}, {high:,}]"
        raise ParameterError(f"The '{name}' parameter of {purpose} must be an integer {span}. "
                             f"Got {safe_repr(value)}.")
    return number


def check_rows(rows: int, purpose: str) -> None:
    """Refuse to build more than :data:`MAX_SAMPLE_ROWS` synthetic rows at once."""
    if rows > MAX_SAMPLE_ROWS:
        raise ParameterError(f"{purpose} would draw {rows:,} rows, above the limit of {MAX_SAMPLE_ROWS:,} per call. "
                             f"Pass a smaller n= (rows are drawn with the released proportions).")


def find_label(value: Any, labels: Sequence[Any]) -> int | None:
    """Position of ``value`` among public, unique ``labels`` (level or region names), or None when it is not one.

    Never raises: an unhashable value, or one whose ``__eq__``/``__hash__`` raises, is not a label.

    Examples
    --------
    >>> find_label("state", ("national", "state")), find_label(["state"], ("national", "state"))
    (1, None)
    """
    try:
        hash(value)
        index = labels if isinstance(labels, pd.Index) else pd.Index(list(labels), dtype=object, tupleize_cols=False)
        found = int(index.get_indexer(pd.Index([value], dtype=object, tupleize_cols=False))[0])
    except Exception:  # noqa: BLE001 - a hostile value is not a label
        return None
    return None if found < 0 else found


def level_position(level: Any, levels: Sequence[str]) -> int:
    """Position of a geography level named ``level`` (a :class:`ParameterError` naming the levels if none).

    A str subclass is read as its plain text (its own ``__eq__`` is never called).
    """
    pos = find_label(str.__str__(level), levels) if isinstance(level, str) else None
    if pos is None:
        raise ParameterError(f"Unknown level {safe_repr(level)}; this release has levels {list(levels)}.")
    return pos


def region_position(region: Any, regions: Sequence[Any], level: str, lvl: int) -> int:
    """Position of ``region`` among the public ``regions`` of level ``level`` (number ``lvl``), or a
    :class:`ParameterError` showing the first ten."""
    pos = find_label(region, regions)
    if pos is None:
        raise ParameterError(f"Unknown region {safe_repr(region)} at level {level!r}; its regions are "
                             f"{list(regions[:10])}{' ...' if len(regions) > 10 else ''} "
                             f"(result.regions[{lvl}] lists them all).")
    return pos
