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
from typing import cast

import warnings

import numpy as np
import pandas as pd

#: pandera tries to import pyspark.pandas when pyspark is installed (the spark extra), on import and again on
#: validation; under pandas 3 pyspark then warns that its own pandas support is incomplete: a warning about the
#: environment, never about the tables, so it is silenced around pandera.
_PYSPARK_WARNING = "PySpark does not yet fully support pandas"

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=_PYSPARK_WARNING, category=FutureWarning)
    import pandera.pandas as pa
    from pandera.errors import SchemaErrors

from pandas_dp.domain.table_checks import (FAILURE_COLUMNS, groups_in_hierarchy, join_failures, label_failures,
                                          one_parent, raise_failures)

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
        return one_parent(frame, child, parent)

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


def scalar_failures(frame: pd.DataFrame, columns: Sequence[str], table: str) -> tuple[pd.DataFrame, np.ndarray]:
    """Labels of ``columns`` of the public table ``frame`` that are not plain scalars, or not of the column's one kind.

    See :func:`pandas_dp.domain.table_checks.label_failures` (the same, without pandera).
    """
    return label_failures(frame, columns, table)


def _collect(schema: pa.DataFrameSchema, frame: pd.DataFrame, table: str) -> list[pd.DataFrame]:
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_PYSPARK_WARNING, category=FutureWarning)
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
        raise_failures(groups_in_hierarchy(groups, levels, hier))
    return hier
