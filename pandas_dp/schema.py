"""pandera schemas for the count-of-counts tables (Kuo et al. section 3).

* **Entities** (the private persons frame): no missing group ids or locations.
* **Groups** (public): unique, non-missing group ids; every group in exactly
  one leaf region (non-missing locations, one row per group).
* **Hierarchy** (public): one row per leaf, one column per level (coarse to
  fine), no missing values, unique leaf ids, and every region has exactly
  one parent in the level above (consistent levels).
* **Join**: every entity's group exists in Groups, and the functional
  dependency group -> leaf region holds.

Schemas are built for the caller's column names. :func:`validate_tables`
validates every table lazily and raises one :class:`pandas_dp.SchemaError`
listing all failure cases, before any budget is charged. The schemas are
exported so that tables can be checked ahead of time::

    pandas_dp.schema.groups_schema("household_id", ["state", "county"]).validate(households, lazy=True)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pandera.pandas as pa
from pandera.errors import SchemaErrors

from .errors import SchemaError

__all__ = [
    "entities_schema",
    "groups_schema",
    "hierarchy_schema",
    "join_failures",
    "validate_tables",
    "raise_failures",
]

_FAILURE_COLUMNS = ["table", "column", "check", "failure_case", "index"]


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


def join_failures(entity_groups: pd.Series, found: np.ndarray, *, table: str = "Entities",
                  check: str = "group_in_Groups") -> pd.DataFrame:
    """Failure cases for entities whose group is missing from Groups (``found`` is False)."""
    bad = ~np.asarray(found, dtype=bool)
    return pd.DataFrame({
        "table": table,
        "column": entity_groups.name,
        "check": check,
        "failure_case": entity_groups[bad].astype(object).to_numpy(),
        "index": entity_groups.index[bad].astype(object).to_numpy(),
    })


def validate_tables(tables: Sequence[tuple[str, pa.DataFrameSchema, pd.DataFrame]]) -> None:
    """Validate every (name, schema, frame) lazily; raise one SchemaError with all failures."""
    failures: list[pd.DataFrame] = []
    for name, schema, frame in tables:
        failures.extend(_collect(schema, frame, name))
    raise_failures(failures)


def raise_failures(failures: Sequence[pd.DataFrame], *, max_lines: int = 20) -> None:
    """Raise :class:`SchemaError` listing ``failures`` (a list of failure-case frames), if any."""
    failures = [f for f in failures if len(f)]
    if not failures:
        return
    cases = pd.concat(failures, ignore_index=True)[_FAILURE_COLUMNS]
    summary = cases.groupby(["table", "column", "check"], sort=False, dropna=False).size()
    lines = [f"  {t}.{c}: {k} failed for {n} row(s)" for (t, c, k), n in summary.items()]
    shown = cases.head(max_lines).to_string(index=False)
    raise SchemaError(
        "Input tables failed validation (nothing was charged):\n" + "\n".join(lines)
        + f"\nFirst failure cases:\n{shown}\nFix the tables (all {len(cases)} failure cases are in "
        "the error's .failure_cases) and call again.",
        failure_cases=cases,
    )
