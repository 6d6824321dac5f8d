"""Odd private values and the neighbour that holds one: ``adversarial_values`` and ``with_row``.

A private row may hold anything a file or an upstream join can produce. The
boundary rule (DESIGN section 6) says such a row is out of domain and
dropped, and never steers an exception, a warning or a domain. These helpers
build the neighbouring pairs that check it: ``D`` and ``D' = with_row(D,
{column: odd value})``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp._utils.optional import import_optional
from pandas_dp.errors import ParameterError
from pandas_dp.testing._neighbours import new_label

__all__ = ["ADVERSARIAL_KINDS", "adversarial_values", "with_row"]

#: The fixed odd values, by kind (each factory returns a fresh object, so mutable ones are never shared).
ADVERSARIAL_KINDS: dict[str, Callable[[], Any]] = {
    "NaN": lambda: float("nan"),
    "None": lambda: None,
    "pd.NA": lambda: pd.NA,
    "pd.NaT": lambda: pd.NaT,
    "inf": lambda: float("inf"),
    "-inf": lambda: float("-inf"),
    "1e308": lambda: 1e308,
    "-1e308": lambda: -1e308,
    "huge int 2**70": lambda: 2**70,
    "huge negative int -2**70": lambda: -(2**70),
    "empty string": lambda: "",
    "stray string": lambda: "n/a",
    "list (unhashable)": lambda: [1, 2],
    "dict (unhashable)": lambda: {"a": 1},
    "set (unhashable)": lambda: {1, 2},
    "pd.Timestamp": lambda: pd.Timestamp("2021-03-04 05:06:07"),
    "np.datetime64": lambda: np.datetime64("2021-03-04T05:06"),
    "pd.Timedelta": lambda: pd.Timedelta("3 days 2 hours"),
    "bytes": lambda: b"\x00\xff",
    "nested tuple": lambda: (1, (2, "x")),
    "bool": lambda: True,
    "complex": lambda: complex(1, 2),
}


def _known_set(known: Iterable[Any]) -> frozenset[Any]:
    if isinstance(known, (str, bytes)) or not isinstance(known, Iterable):
        raise ParameterError(f"The 'known' parameter of adversarial_values must be a collection of the column's "
                             f"public values (group ids, locations, categories). Got {known!r}.")
    values = list(known)
    bad = [v for v in values if not isinstance(v, Hashable)]
    if bad:
        raise ParameterError(f"The 'known' values of adversarial_values must be hashable; got {bad[:3]!r}.")
    return frozenset(values)


def adversarial_values(known: Iterable[Any] = ()) -> Any:
    """Hypothesis strategy of odd private values that a release must treat as out of domain.

    Parameters
    ----------
    known : collection, optional
        The column's public values (group ids of a Groups table, locations,
        declared categories). Generated ids and labels avoid them, so they are
        an *unknown* group id, an *unknown* location, a *new* label.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Draws one of: NaN, None, ``pd.NA``, ``pd.NaT``, inf, -inf, 1e308,
        -1e308, ``2**70`` and ``-2**70`` (beyond int64), an empty or stray
        string, an unhashable list, dict or set, a ``pd.Timestamp``, a
        ``np.datetime64``, a ``pd.Timedelta``, bytes, a nested tuple, a bool,
        a complex number (``ADVERSARIAL_KINDS``); an int64 not in ``known``
        (an unknown group id); a short text not in ``known`` (a stray string,
        an unknown location, a new label). Each draw is a fresh object.

    Raises
    ------
    MissingDependencyError
        When hypothesis is not installed (``pip install 'pandas-dp[test]'``).

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> from pandas_dp.testing import adversarial_values
    >>> seen = []
    >>> @settings(max_examples=20, database=None)
    ... @given(adversarial_values(known=[1, 2, 3]))
    ... def check(value):
    ...     seen.append(value)
    >>> check()
    >>> len(seen) > 0
    True
    """
    st = import_optional("hypothesis.strategies", extra="test", purpose="adversarial_values")
    avoid = _known_set(known)

    def unknown(v: Any) -> bool:
        return v not in avoid

    fixed = st.sampled_from(list(ADVERSARIAL_KINDS.values())).map(lambda make: make())
    ids = st.integers(min_value=-(2**63), max_value=2**63 - 1).filter(unknown)
    labels = st.text(min_size=1, max_size=12).filter(unknown)
    return st.one_of(fixed, ids, labels)


def _one(value: Any) -> pd.Series:
    """A one-element Series holding ``value`` as is (lists and sets stay one element), dtype inferred."""
    cell = np.empty(1, dtype=object)
    cell[0] = value
    return pd.Series(cell).infer_objects()


def _is_missing(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    if isinstance(value, (float, np.floating)):
        return math.isnan(value)
    return isinstance(value, np.datetime64) and np.isnat(value)


def _combined(col: pd.Series, piece: pd.Series | None, value: Any) -> pd.Series:
    """``col`` plus one value: the column's dtype when the value fits it, else what ``pd.concat`` makes."""
    if piece is not None:  # a copy of a row of this very column: same dtype
        return pd.concat([col, piece], ignore_index=True)
    dtype = col.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        if _is_missing(value):
            extra = pd.Series(pd.Categorical([None], dtype=dtype))
            return pd.concat([col, extra], ignore_index=True)
        if isinstance(value, Hashable):
            cats = dtype.categories
            if value not in cats:  # categories built from the data, as astype("category") would make them
                col = col.cat.add_categories([value])
            extra = pd.Series(pd.Categorical([value], dtype=col.dtype))
            return pd.concat([col, extra], ignore_index=True)
        return pd.concat([col.astype(object), _one(value)], ignore_index=True)
    if _is_missing(value) and (dtype.kind not in "iub" or not isinstance(dtype, np.dtype)):
        try:  # a missing value in a column that can hold one keeps the column's dtype
            extra = pd.Series(pd.array([value], dtype=dtype))
            return pd.concat([col, extra], ignore_index=True)
        except (TypeError, ValueError):
            pass
    if not len(col):
        return _one(value)
    return pd.concat([col, _one(value)], ignore_index=True)


def with_row(frame: pd.DataFrame, column_values: Mapping[str, Any], *, template: int = 0) -> pd.DataFrame:
    """``D' = frame`` plus one row: a copy of a template row with the given column values.

    Parameters
    ----------
    frame : DataFrame
        The dataset ``D``.
    column_values : dict
        ``{column: value}`` for the new row; the value is stored as is (a
        list stays one cell).
    template : int
        Position of the row copied for the other columns (default the first
        row; missing values when ``frame`` is empty).

    Returns
    -------
    DataFrame
        ``frame`` with one more row, at a new index label. A column keeps its
        dtype when the value fits it (an int in an int column, a missing
        value in a float, string or datetime column); otherwise it gets the
        dtype pandas makes when it meets such a value: ``float64`` for NaN in
        an int column, ``object`` for a stray string, an unhashable object, a
        date or ``2**70`` in a numeric column, as when a file with that one
        odd row is read. A categorical column gains the new label as a
        category, as ``astype("category")`` or ``read_csv(dtype="category")``
        would make it (an unhashable value makes it ``object``).

    Raises
    ------
    ParameterError
        When ``frame`` is not a DataFrame, a column is unknown, or
        ``template`` is not a row position.

    Examples
    --------
    >>> import pandas as pd
    >>> from pandas_dp.testing import with_row
    >>> d = pd.DataFrame({"age": [30, 41], "state": ["CA", "NY"]})
    >>> d2 = with_row(d, {"age": "n/a"})
    >>> d2["age"].dtype, d2["age"].iloc[-1], d2["state"].iloc[-1]
    (dtype('O'), 'n/a', 'CA')
    """
    if not isinstance(frame, pd.DataFrame):
        raise ParameterError(f"with_row needs a pandas DataFrame; got {type(frame).__name__}. Convert a Dask "
                             f"frame with .compute() first and rebuild it from the result.")
    if not isinstance(column_values, Mapping):
        raise ParameterError(f"The 'column_values' parameter of with_row must be a dict {{column: value}}. "
                             f"Got {column_values!r}.")
    unknown = [c for c in column_values if c not in frame.columns]
    if unknown:
        raise ParameterError(f"with_row got unknown column(s) {unknown}; the frame has {list(frame.columns)[:20]}.")
    n = len(frame)
    if isinstance(template, bool) or not isinstance(template, (int, np.integer)) or not (
            -n <= int(template) < n or n == 0):
        raise ParameterError(f"The 'template' parameter of with_row must be a row position in [-{n}, {n}). "
                             f"Got {template!r}.")
    index = frame.index.append(pd.Index([new_label(frame)]))
    columns: dict[Any, pd.Series] = {}
    for col in frame.columns:
        series = frame[col].reset_index(drop=True)
        if col in column_values:
            columns[col] = _combined(series, None, column_values[col])
        elif n:
            columns[col] = _combined(series, series.iloc[[int(template)]], None)
        else:
            columns[col] = _combined(series, None, np.nan)
    out = pd.DataFrame(columns)
    out.index = index
    return out
