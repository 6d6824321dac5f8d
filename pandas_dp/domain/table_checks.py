"""Checks of public tables in plain pandas: their failure cases, and whether a table passes them all.

The pandera schemas of :mod:`pandas_dp.domain.schema` report every failure of the public Groups and
Hierarchy tables; this module holds what they share without pandera: the failure-case frames
(:data:`FAILURE_COLUMNS`, :func:`label_failures`, :func:`join_failures`, :func:`groups_in_hierarchy`),
the one-parent rule (:func:`one_parent`), the :class:`~pandas_dp.SchemaError` that lists them
(:func:`raise_failures`), and :func:`valid_hierarchy`, which tells tables that pass every check apart in
plain pandas. Building a region tree from valid tables (the usual case) therefore never loads pandera
(about 1.5 s on first use: its import and its backends); only tables that fail are handed to the
schemas, which report every failure case.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any, cast

import numpy as np
import pandas as pd

from pandas_dp.domain.labels import CLASS_NAMES, plain_mask, positions, value_classes
from pandas_dp.errors import SchemaError

__all__ = ["FAILURE_COLUMNS", "label_failures", "join_failures", "groups_in_hierarchy", "one_parent",
           "raise_failures", "valid_hierarchy"]

#: Columns of every failure-case frame.
FAILURE_COLUMNS = ["table", "column", "check", "failure_case", "index"]

_PUBLIC_HEADER = "The public tables failed validation (no private row was read and nothing was charged):"
_PUBLIC_FOOTER = "Fix the tables (all {n} failure cases are in the error's .failure_cases) and call again."


def _cases(table: str, column: Any, check: str, values: pd.Series, bad: np.ndarray) -> pd.DataFrame:
    """Failure cases of the rows ``bad`` of ``values`` (a column of ``table``)."""
    bad = np.asarray(bad, dtype=bool)
    return pd.DataFrame({
        "table": table,
        "column": column,
        "check": check,
        "failure_case": values.to_numpy(dtype=object)[bad],
        "index": values.index[bad].astype(object).to_numpy(),
    }, columns=FAILURE_COLUMNS)


def label_failures(public: pd.DataFrame, columns: Sequence[str], table: str) -> tuple[pd.DataFrame, np.ndarray]:
    """Labels of ``columns`` that are not plain scalars, or not of the column's one kind.

    A label column holds plain scalars (strings, numbers, booleans, or dates)
    of one kind: a list, dict, tuple or other object is a ``scalar_label``
    failure; in a column that mixes kinds (numbers and strings, say), the
    labels not of its most common kind are ``one_kind_of_label`` failures.

    Returns
    -------
    failures : DataFrame
        One failure case per such cell.
    ok : numpy.ndarray
        Rows whose cells are all plain scalars of their column's kind, or
        missing (those pandera can check).
    """
    ok = np.ones(len(public), dtype=bool)
    found = []
    for col in columns:
        if plain_mask(public[col]) is None and public[col].dtype != object:
            continue  # a typed column holds values of one kind
        classes = value_classes(public[col])
        odd = classes == 0
        odd[classes == -1] = _signalling_nan(public[col].to_numpy(dtype=object)[classes == -1])
        if odd.any():
            found.append(_cases(table, col, "scalar_label", public[col], odd))
        counts = np.bincount(classes[classes > 0], minlength=len(CLASS_NAMES) + 1)
        if np.count_nonzero(counts) > 1:
            main = int(np.argmax(counts))
            other = (classes > 0) & (classes != main)
            found.append(_cases(table, col, f"one_kind_of_label({CLASS_NAMES[main]})", public[col], other))
            odd = odd | other
        ok &= ~odd
    failures = pd.concat(found, ignore_index=True) if found else pd.DataFrame(columns=FAILURE_COLUMNS)
    return failures, ok


def _signalling_nan(values: np.ndarray) -> np.ndarray:
    """Which of these (missing) values are ``Decimal('sNaN')``: not a label, and pandas' ``isna`` raises on it."""
    if not values.size:
        return np.zeros(0, dtype=bool)
    return np.fromiter((isinstance(v, Decimal) and v.is_snan() for v in values), dtype=bool, count=values.size)


def _shown(value: Any) -> str:
    """A failure case as text for the message (a cell whose ``__str__`` raises is shown by type)."""
    try:
        return str(value)
    except Exception:  # noqa: BLE001 - a public table's cell may be any object
        return f"<{type(value).__name__} object>"


def join_failures(entity_groups: pd.Series, found: np.ndarray, *, table: str = "Entities",
                  check: str = "group_in_Groups") -> pd.DataFrame:
    """Failure cases for the rows of ``entity_groups`` where ``found`` is False."""
    return _cases(table, entity_groups.name, check, entity_groups, ~np.asarray(found, dtype=bool))


def one_parent(public: pd.DataFrame, child: str, parent: str) -> pd.Series:
    """Per row: whether its ``child`` region has at most one ``parent`` region in ``public`` (missing ones aside)."""
    n_parents = public.groupby(child, sort=False, dropna=False, observed=True)[parent].transform("nunique")
    return n_parents <= 1


def valid_hierarchy(group: str | None, levels: Sequence[str], *, groups: pd.DataFrame | None = None,
                    hierarchy: pd.DataFrame | None = None) -> pd.DataFrame | None:
    """The hierarchy :func:`pandas_dp.domain.schema.validate_public_tables` returns, when the tables pass every check.

    The same checks in plain pandas, stopping at the first failure: labels are plain scalars of one kind
    per column, the schemas' columns hold no missing value, group ids and leaves are unique, every region
    has one parent, and the Groups table's regions are the Hierarchy's. ``None`` when any fails: the
    schemas then report every failure case.
    """
    levels = list(levels)
    gframe = None
    if groups is not None:
        gcols = cast(list[str], [group, *levels])   # group is set whenever a groups table is given
        if len(label_failures(groups, gcols, "Groups")[0]):
            return None
        gframe = groups[gcols]
        if gframe.isna().to_numpy().any() or gframe[group].duplicated().any():
            return None
    if hierarchy is not None:
        if len(label_failures(hierarchy, levels, "Hierarchy")[0]):
            return None
        hier = hierarchy[levels]
    else:
        hier = gframe[levels].drop_duplicates()  # type: ignore[index]
    if hier.isna().to_numpy().any() or hier[levels[-1]].duplicated().any():
        return None
    if not all(one_parent(hier, levels[i], levels[i - 1]).all() for i in range(1, len(levels))):
        return None
    if groups is not None and hierarchy is not None and any(len(f) for f in groups_in_hierarchy(groups, levels, hier)):
        return None
    return hier


def groups_in_hierarchy(groups: pd.DataFrame, levels: list[str], hier: pd.DataFrame) -> list[pd.DataFrame]:
    """Groups whose leaf is not in the Hierarchy, or whose coarser regions disagree with it."""
    leaf = levels[-1]
    leaves = pd.Index(hier[leaf])
    code = positions(leaves, groups[leaf])
    found = code >= 0
    out = [join_failures(groups[leaf], found, table="Groups", check=f"{leaf}_in_Hierarchy")]
    for col in levels[:-1]:
        want = hier[col].to_numpy(dtype=object)[np.maximum(code, 0)]
        agree = ~found | (groups[col].to_numpy(dtype=object) == want)
        out.append(join_failures(groups[col], agree, table="Groups", check=f"{leaf}->{col} matches Hierarchy"))
    return out


def raise_failures(failures: Sequence[pd.DataFrame], *, max_lines: int = 20, header: str = _PUBLIC_HEADER,
                   footer: str = _PUBLIC_FOOTER) -> None:
    """Raise :class:`SchemaError` listing ``failures`` (a list of failure-case frames), if any.

    ``footer`` may use ``{n}``, the number of failure cases.
    """
    failures = [f for f in failures if len(f)]
    if not failures:
        return
    cases = pd.concat(failures, ignore_index=True)[FAILURE_COLUMNS]
    summary = cases.groupby(["table", "column", "check"], sort=False, dropna=False).size()
    lines = [f"  {t}.{c}: {k} failed for {n} row(s)" for (t, c, k), n in summary.items()]
    head = cases.head(max_lines).astype(object)
    shown = head.assign(**{c: [_shown(v) for v in head[c]] for c in ("column", "failure_case", "index")}
                        ).to_string(index=False)
    raise SchemaError(
        header + "\n" + "\n".join(lines) + f"\nFirst failure cases:\n{shown}\n" + footer.format(n=len(cases)),
        failure_cases=cases,
    )
