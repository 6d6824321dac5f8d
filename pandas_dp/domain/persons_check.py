"""The data custodian's check of a persons frame against the public tables: NOT PRIVATE.

:func:`check_persons` reads the private persons frame (Entities) and lists every row a count-of-counts
release would drop as out of domain, and why: group ids and locations that are not plain scalars,
missing, unknown to the public Groups table or Hierarchy, or disagreeing with them. It is for the
custodian's own eyes; no release calls it (releases drop such rows silently and uncounted).

It builds a :class:`~pandas_dp.domain.geography.RegionTree` (:func:`~pandas_dp.domain.geography.region_tree`,
which validates the public tables with :mod:`pandas_dp.domain.schema`) and checks the rows with the
same schemas and failure frames, so it sits above both modules. Public path: ``pandas_dp.schema``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.domain.labels import factorize, positions
from pandas_dp.domain.geography import RegionTree, region_tree
from pandas_dp.domain.schema import (FAILURE_COLUMNS, _collect, entities_schema, join_failures, raise_failures,
                                     scalar_failures)
from pandas_dp.errors import ParameterError

__all__ = ["check_persons"]


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
