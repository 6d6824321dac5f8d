"""pandera schemas and checks for the count-of-counts tables (Kuo et al. section 3).

Public and private tables follow different rules (DESIGN section 6, the
boundary rule):

* **Public tables** are validated loudly, before any private row is read and
  before any budget is charged (:func:`validate_public_tables`, called by
  :func:`pandas_dp.domain.regions.region_tree`):

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
  :mod:`pandas_dp.engines.pandas.groups`). :func:`check_persons` is the data
  custodian's quality check of the persons frame against the public tables;
  it is **not private** (it lists private rows) and no release calls it.

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

from pandas_dp.domain.labels import CLASS_NAMES, factorize, plain_mask, positions, value_classes
from pandas_dp.domain.regions import RegionTree, region_tree
from pandas_dp.errors import ParameterError, SchemaError

__all__ = [
    "entities_schema",
    "groups_schema",
    "hierarchy_schema",
    "scalar_failures",
    "join_failures",
    "validate_tables",
    "validate_public_tables",
    "raise_failures",
    "check_persons",
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


# -- quality assurance for custodians (NOT private) -----------------------------------------------
def check_persons(persons: pd.DataFrame, group: str, location: Any, *, groups: pd.DataFrame | None = None,
                  hierarchy: pd.DataFrame | None = None, raise_on_failure: bool = False) -> pd.DataFrame:
    """Every row of the persons frame that a count-of-counts release would drop, and why. NOT PRIVATE.

    For the data custodian's own eyes: this reads the private persons frame
    and reports its rows (group ids, regions, row index). Never publish its
    output, never run it where an analyst sees the result. Releases
    (``DataFrame.dp.count_of_counts``) never call it: they drop these rows
    silently and uncounted, so that nothing they show depends on them.

    Parameters
    ----------
    persons : pandas.DataFrame
        The private Entities table (one row per person).
    group, location, groups, hierarchy
        As for ``DataFrame.dp.count_of_counts``; the public tables are
        validated first (a broken public table raises :class:`SchemaError`).
    raise_on_failure : bool
        Raise :class:`SchemaError` listing the failures instead of returning them.

    Returns
    -------
    DataFrame
        Columns ``table``, ``column``, ``check``, ``failure_case``, ``index``
        (the persons frame's index label), one row per failure, empty when the
        frame fits the public tables. Checks:

        * ``scalar_label``: a group id or location that is not a plain scalar
          (a list, a dict, a tuple, an object);
        * ``not_nullable``: a missing group id or location;
        * ``group_in_Groups``: a group id missing from the Groups table;
        * ``{group}->{level} matches Groups``: a location that disagrees with
          the group's region in the Groups table;
        * ``{leaf}_in_Hierarchy``: (no Groups table) a leaf region missing
          from the hierarchy;
        * ``{leaf}->{level} matches Hierarchy``: (no Groups table) a coarser
          location that is not the leaf's ancestor;
        * ``functional dependency {group}->{leaf}``: (no Groups table) every
          row of a group id found in several leaves. Releases count such a
          group id once per leaf (as separate groups), they do not drop it.

    Raises
    ------
    ParameterError, DomainError
        Bad arguments (as for ``count_of_counts``).
    SchemaError
        A public table is broken; or, with ``raise_on_failure=True``, the
        persons frame has failures.

    Examples
    --------
    >>> import pandas as pd
    >>> households = pd.DataFrame({"hh": [1, 2], "county": ["a", "b"]})
    >>> persons = pd.DataFrame({"hh": [1, 1, 2, 7], "county": ["a", "b", "b", "a"]})
    >>> check_persons(persons, "hh", ["county"], groups=households)[["check", "failure_case", "index"]]
                           check failure_case index
    0            group_in_Groups            7     3
    1  hh->county matches Groups            1     1
    """
    if not isinstance(persons, pd.DataFrame):
        raise ParameterError(
            f"check_persons reads a pandas DataFrame. Got {type(persons).__name__}. For a Dask frame, run it "
            f"on ddf.compute() (it is a quality check on the custodian's side, not a release).")
    if not isinstance(raise_on_failure, (bool, np.bool_)):
        raise ParameterError(f"The 'raise_on_failure' parameter must be True or False. Got {raise_on_failure!r}.")
    tree = region_tree(persons.columns, group, location, groups=groups, hierarchy=hierarchy)
    if tree.group is None:
        raise ParameterError("check_persons needs the 'group' column of the persons frame. Got None.")
    columns = [group, *tree.located]
    bad, ok = scalar_failures(persons, columns, "Entities")
    failures = [bad, *_collect(entities_schema(group, tree.located), persons.loc[ok, columns], "Entities")]
    failures.extend(_located_failures(persons, tree))
    cases = pd.concat([f for f in failures if len(f)] or [pd.DataFrame(columns=FAILURE_COLUMNS)],
                      ignore_index=True)[FAILURE_COLUMNS]
    if raise_on_failure:
        raise_failures([cases], header=(
            "check_persons: rows of the persons frame that releases drop as out of domain "
            "(this report shows private rows; it is for the custodian's eyes only):"),
            footer=("All {n} failure cases are in the error's .failure_cases. Releases drop these rows "
                    "silently; fix them (or the public tables) if they should be counted."))
    return cases


def _located_failures(persons: pd.DataFrame, tree: RegionTree) -> list[pd.DataFrame]:
    """Join failures of the persons' groups and locations against the public region tree."""
    group, leaf = tree.group, tree.leaf
    ids = persons[group]
    out: list[pd.DataFrame] = []
    anc = tree.ancestors
    if tree.group_ids is not None:
        gpos = positions(tree.group_ids, ids)
        found = gpos >= 0
        out.append(join_failures(ids, found))
        leaf_of = tree.group_leaf[np.maximum(gpos, 0)]  # type: ignore[index]
        for col in tree.located:
            lvl = tree.level_names.index(col)
            agree = ~found | (positions(tree.regions[lvl], persons[col]) == anc[lvl][leaf_of])
            out.append(join_failures(ids, agree, check=f"{group}->{col} matches Groups"))
        return out
    lcode = positions(tree.regions[-1], persons[leaf])
    known = lcode >= 0
    out.append(join_failures(persons[leaf], known, check=f"{leaf}_in_Hierarchy"))
    for col in tree.located[:-1]:
        lvl = tree.level_names.index(col)
        agree = ~known | (positions(tree.regions[lvl], persons[col]) == anc[lvl][np.maximum(lcode, 0)])
        out.append(join_failures(persons[col], agree, check=f"{leaf}->{col} matches Hierarchy"))
    gcode = factorize(ids)
    valid = known & (gcode >= 0)
    n = int(gcode.max()) + 1 if gcode.size else 0
    lo = np.full(n, np.iinfo(np.int64).max)
    hi = np.full(n, -1)
    np.minimum.at(lo, gcode[valid], lcode[valid])
    np.maximum.at(hi, gcode[valid], lcode[valid])
    split = np.zeros(len(ids), dtype=bool)
    split[valid] = (lo != hi)[gcode[valid]]
    out.append(join_failures(ids, ~split, check=f"functional dependency {group}->{leaf}"))
    return out
