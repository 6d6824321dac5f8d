"""pandera schemas and checks for the count-of-counts tables (Kuo et al. section 3).

Public and private tables follow different rules (DESIGN section 6, the
boundary rule):

* **Public tables** are validated loudly, before any private row is read and
  before any budget is charged (:func:`validate_public_tables`, called by
  :func:`pandas_dp.domain.geography.region_tree`):

  - **Groups** (``groups=``): unique, non-missing group ids; every group in
    exactly one leaf region (non-missing locations, one row per group);
  - **Hierarchy** (``hierarchy=``, or the regions of the Groups table): one
    row per leaf, one column per level (coarse to fine), no missing values,
    unique leaf ids, every region with exactly one parent in the level above;
    the Groups table's regions must be regions of the Hierarchy;
  - every label is a plain scalar (string, number, date...; no lists, dicts
    or tuples).

  Every failure of every public table is reported at once in one
  :class:`pandas_dp.SchemaError`.
* **The persons frame** (Entities) is private. Releases never validate it:
  a person whose group or location does not fit the public tables is out of
  domain and dropped, silently and uncounted (see
  :mod:`pandas_dp.engines.pandas.groups`).
  :func:`~pandas_dp.domain.persons_check.check_persons` is the data
  custodian's quality check of the persons frame against the public tables;
  it is **not private** (it lists private rows) and no release calls it.

This module is below :mod:`pandas_dp.domain.geography`: a region tree is built from public tables this
module validated, and :mod:`pandas_dp.domain.persons_check`, which checks private rows against a built
tree, is above both. It imports pandera, so nothing imported by ``import pandas_dp`` imports it at
module level: ``region_tree`` loads it when a tree is built, ``pandas_dp.schema`` on first use.

Schemas are built for the caller's column names and exported so that tables
can be checked ahead of time::

    pandas_dp.schema.groups_schema("household_id", ["state", "county"]).validate(households, lazy=True)
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any, cast

import numpy as np
import pandas as pd
import pandera.pandas as pa
from pandera.errors import SchemaErrors

from pandas_dp.domain.labels import CLASS_NAMES, plain_mask, positions, value_classes
from pandas_dp.errors import SchemaError

__all__ = [
    "entities_schema",
    "groups_schema",
    "hierarchy_schema",
    "scalar_failures",
    "join_failures",
    "validate_tables",
    "validate_public_tables",
    "raise_failures",
    "FAILURE_COLUMNS",
]

#: Columns of every failure-case frame.
FAILURE_COLUMNS = ["table", "column", "check", "failure_case", "index"]

_PUBLIC_HEADER = "The public tables failed validation (no private row was read and nothing was charged):"
_PUBLIC_FOOTER = "Fix the tables (all {n} failure cases are in the error's .failure_cases) and call again."


def entities_schema(group: str, location: Sequence[str] = ()) -> pa.DataFrameSchema:
    """Entities: one row per entity; group id (and location columns, if given) never missing."""
    cols = {group: pa.Column(nullable=False, required=True)}
    cols.update({c: pa.Column(nullable=False, required=True) for c in location})
    return pa.DataFrameSchema(cols, name="Entities", strict=False, coerce=False)


def groups_schema(group: str, location: Sequence[str]) -> pa.DataFrameSchema:
    """Groups: unique non-missing group ids, each in exactly one (non-missing) leaf region."""
    cols = {group: pa.Column(nullable=False, unique=True, required=True)}
    cols.update({c: pa.Column(nullable=False, required=True) for c in location})
    return pa.DataFrameSchema(cols, name="Groups", strict=False, coerce=False)


def _one_parent_check(child: str, parent: str) -> pa.Check:
    def check(frame: pd.DataFrame) -> pd.Series:
        n_parents = frame.groupby(child, sort=False, dropna=False, observed=True)[parent].transform("nunique")
        return n_parents <= 1

    return pa.Check(check, name=f"one_parent({child}->{parent})",
                    error=f"every {child!r} region must have exactly one parent {parent!r}")


def hierarchy_schema(levels: Sequence[str], *, unique_leaves: bool = True) -> pa.DataFrameSchema:
    """Hierarchy: columns ``levels`` coarse to fine, no nulls, unique leaves, one parent per region."""
    levels = list(levels)
    cols = {c: pa.Column(nullable=False, required=True) for c in levels}
    if unique_leaves:
        cols[levels[-1]] = pa.Column(nullable=False, unique=True, required=True)
    checks = [_one_parent_check(levels[i], levels[i - 1]) for i in range(1, len(levels))]
    return pa.DataFrameSchema(cols, checks=checks, name="Hierarchy", strict=False, coerce=False)


def _collect(schema: pa.DataFrameSchema, frame: pd.DataFrame, table: str) -> list[pd.DataFrame]:
    try:
        schema.validate(frame, lazy=True)
    except SchemaErrors as err:
        fc = err.failure_cases
        out = pd.DataFrame({
            "table": table,
            "column": fc["column"].astype(object).to_numpy(),
            "check": fc["check"].astype(str).to_numpy(),
            "failure_case": fc["failure_case"].astype(object).to_numpy(),
            "index": fc["index"].astype(object).to_numpy(),
        })
        return [out]
    return []


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


def scalar_failures(frame: pd.DataFrame, columns: Sequence[str], table: str) -> tuple[pd.DataFrame, np.ndarray]:
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
    ok = np.ones(len(frame), dtype=bool)
    found = []
    for col in columns:
        if plain_mask(frame[col]) is None and frame[col].dtype != object:
            continue  # a typed column holds values of one kind
        classes = value_classes(frame[col])
        odd = classes == 0
        odd[classes == -1] = _signalling_nan(frame[col].to_numpy(dtype=object)[classes == -1])
        if odd.any():
            found.append(_cases(table, col, "scalar_label", frame[col], odd))
        counts = np.bincount(classes[classes > 0], minlength=len(CLASS_NAMES) + 1)
        if np.count_nonzero(counts) > 1:
            main = int(np.argmax(counts))
            other = (classes > 0) & (classes != main)
            found.append(_cases(table, col, f"one_kind_of_label({CLASS_NAMES[main]})", frame[col], other))
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


def validate_tables(tables: Sequence[tuple[str, pa.DataFrameSchema, pd.DataFrame]]) -> None:
    """Validate every (name, schema, frame) lazily; raise one SchemaError with all failures."""
    failures: list[pd.DataFrame] = []
    for name, schema, frame in tables:
        failures.extend(_collect(schema, frame, name))
    raise_failures(failures)


def validate_public_tables(group: str | None, levels: Sequence[str], *, groups: pd.DataFrame | None = None,
                           hierarchy: pd.DataFrame | None = None) -> pd.DataFrame:
    """Validate the public Groups and Hierarchy tables; return the hierarchy (one column per level).

    Run before any private row is read. All failures of a stage are reported
    at once: first every table on its own (labels are plain scalars, then the
    pandera schemas on the rows whose labels are), then, when both tables
    are given, the Groups table's regions against the Hierarchy.

    Parameters
    ----------
    group : str or None
        Group id column of ``groups``.
    levels : sequence of str
        Location columns, coarse to fine.
    groups, hierarchy : DataFrame, optional
        The public tables (columns already checked to exist).

    Returns
    -------
    DataFrame
        The hierarchy: ``hierarchy[levels]``, or the distinct regions of ``groups``.

    Raises
    ------
    SchemaError
        With every failure case (``.failure_cases``).
    """
    levels = list(levels)
    failures: list[pd.DataFrame] = []
    gframe = None
    if groups is not None:
        gcols = cast(list[str], [group, *levels])   # group is set whenever a groups table is given
        bad, ok = scalar_failures(groups, gcols, "Groups")
        failures.append(bad)
        gframe = groups[gcols] if ok.all() else groups.loc[ok, gcols]
        failures.extend(_collect(groups_schema(group, levels), gframe, "Groups"))  # type: ignore[arg-type]
    if hierarchy is not None:
        bad, ok = scalar_failures(hierarchy, levels, "Hierarchy")
        failures.append(bad)
        hier, name = (hierarchy[levels] if ok.all() else hierarchy.loc[ok, levels]), "Hierarchy"
    else:
        hier, name = gframe[levels].drop_duplicates(), "Hierarchy(from Groups)"  # type: ignore[index]
    failures.extend(_collect(hierarchy_schema(levels), hier, name))
    raise_failures(failures)
    if groups is not None and hierarchy is not None:
        raise_failures(_groups_in_hierarchy(groups, levels, hier))
    return hier


def _groups_in_hierarchy(groups: pd.DataFrame, levels: list[str], hier: pd.DataFrame) -> list[pd.DataFrame]:
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
