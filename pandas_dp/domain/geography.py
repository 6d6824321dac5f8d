"""The public region tree: levels, regions and parents, built and validated before any private row is read.

A release over a geography (count-of-counts, tables by geography) needs the
regions of every level, coarse to fine under the root ``"national"``, and
the parent of every region. They are public: they come from a Hierarchy
table (``hierarchy=``, one column per level) or from the regions of a
public Groups table (``groups=``, one row per group with its region), never
from the private frame. :func:`region_tree` checks the arguments against
the private frame's **column names only**, validates the public tables with
pandera (every failure at once, one :class:`pandas_dp.SchemaError`), and
returns a frozen :class:`RegionTree`. Engines then code the private rows on
it; rows that do not fit are out of domain and dropped (DESIGN section 6).

Tables that pass every check are told apart in plain pandas
(:func:`~pandas_dp.domain.table_checks.valid_hierarchy`); only tables that fail one are handed to the
pandera schemas (:mod:`pandas_dp.domain.schema`), which list every failure case. That module is below
this one and is imported only then: pandera would add about a third to ``import pandas_dp`` (every
engine imports this module), and about 1.5 s to the first tree built. The custodian's check of private
rows against a tree (:mod:`pandas_dp.domain.persons_check`) is above both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.domain.labels import public_labels
from pandas_dp.domain.table_checks import valid_hierarchy
from pandas_dp._utils.rational import safe_repr
from pandas_dp.errors import DomainError, ParameterError

__all__ = ["ROOT", "RegionTree", "region_tree"]

#: Name of the root level (and of its only region).
ROOT = "national"


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=np.int64)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class RegionTree:
    """A public hierarchy of regions, and optionally the public Groups table placed in it.

    Attributes
    ----------
    level_names : tuple of str
        ``("national", *location columns)``, coarse to fine.
    regions : tuple of pandas.Index
        The region labels of every level (``regions[0]`` is ``["national"]``).
    parents : tuple of numpy.ndarray
        ``parents[l][i]``: position in level ``l - 1`` of the parent of region
        ``i`` of level ``l`` (int64; ``parents[0]`` is ``[-1]``, the root has
        no parent).
    located : tuple of str
        The location columns present in the private frame (coarse to fine).
        Every one of them must agree with the tree for a row to be in domain.
    group : str or None
        The group id column (None for releases without groups).
    group_ids : pandas.Index or None
        The public Groups table's group ids, in its row order (None without it).
    group_leaf : numpy.ndarray or None
        Leaf position of every group of ``group_ids``.
    """

    level_names: tuple[str, ...]
    regions: tuple[pd.Index, ...]
    parents: tuple[np.ndarray, ...]
    located: tuple[str, ...]
    group: str | None = None
    group_ids: pd.Index | None = None
    group_leaf: np.ndarray | None = None

    @property
    def leaf(self) -> str:
        """Name of the finest level."""
        return self.level_names[-1]

    @property
    def groups_public(self) -> bool:
        """Whether a public Groups table was given (its numbers of groups per region are then public)."""
        return self.group_ids is not None

    @cached_property
    def ancestors(self) -> tuple[np.ndarray, ...]:
        """``ancestors[l][j]``: position in level ``l`` of the ancestor of leaf ``j`` (int64)."""
        out = [np.arange(len(self.regions[-1]), dtype=np.int64)]
        for lvl in range(len(self.regions) - 1, 0, -1):
            out.append(self.parents[lvl][out[-1]])
        return tuple(_frozen(a) for a in out[::-1])

    def leaf_group_counts(self) -> np.ndarray:
        """Number of groups of the public Groups table in every leaf (ParameterError without one)."""
        if self.group_leaf is None:
            raise ParameterError("This region tree has no public Groups table; its group counts are private.")
        return np.bincount(self.group_leaf, minlength=len(self.regions[-1])).astype(np.int64)


def _plain(label: Any) -> Any:
    """A str subclass as a plain str (its own ``__eq__``/``__hash__`` are never called); other labels as given."""
    return str.__str__(label) if isinstance(label, str) else label


def _levels(location: Any, hierarchy: pd.DataFrame | None) -> list[str]:
    if isinstance(location, str):
        location = _plain(location)
        if hierarchy is not None:
            cols = list(hierarchy.columns)
            if not cols or cols[-1] != location:
                raise ParameterError(
                    f"With location={safe_repr(location)} (a leaf column), the hierarchy table's columns must "
                    f"be its levels coarse to fine ending with {safe_repr(location)}. Got columns "
                    f"{safe_repr(cols, 200)}.")
            return cols
        return [location]
    if isinstance(location, (list, tuple)) and location and all(isinstance(c, str) for c in location):
        location = [_plain(c) for c in location]
        if len(set(location)) != len(location):
            raise ParameterError(f"The 'location' parameter repeats a column: {location}.")
        return location
    raise ParameterError(
        f"The 'location' parameter must be a column name (the leaf region, with hierarchy=) or a list of "
        f"column names coarse to fine, e.g. ['state', 'county']. Got {safe_repr(location)}.")


def _sorted_unique(values: pd.Series) -> pd.Index:
    uniq = pd.Index(pd.unique(values.to_numpy()))
    try:
        return uniq.sort_values()
    except TypeError:
        return uniq


def _check_columns(columns: Sequence[Any], group: Any, groups: Any, hierarchy: Any) -> None:
    if group is not None and (not isinstance(group, str) or group not in columns):
        raise ParameterError(f"The 'group' parameter must name a column of the frame. Got {safe_repr(group)}; "
                             f"columns are {safe_repr(list(columns)[:20], 400)}.")
    if group is None and groups is not None:
        raise ParameterError("A groups= table needs the 'group' parameter: the name of the group id column "
                             "of the frame and of the table. Got None.")
    for name, table in (("groups", groups), ("hierarchy", hierarchy)):
        if table is not None and not isinstance(table, pd.DataFrame):
            raise ParameterError(f"The '{name}' parameter must be a pandas DataFrame. Got {type(table).__name__}.")
        if isinstance(table, pd.DataFrame) and isinstance(table.columns, pd.MultiIndex):
            raise ParameterError(f"The '{name}' table has MultiIndex columns; its columns must be the plain names "
                                 f"of the group and location columns. Flatten them first (e.g. "
                                 f"table.columns = table.columns.get_level_values(-1)).")
        if isinstance(table, pd.DataFrame) and len(table) == 0:
            raise ParameterError(f"The '{name}' table has no rows: a release over public regions needs at least "
                                 f"one {'group' if name == 'groups' else 'region'}. Pass the full public table.")


def _check_unique_labels(where: str, labels: Sequence[Any], used: Sequence[str]) -> None:
    repeated = [c for c in used if sum(1 for label in labels if label == c) > 1]
    if repeated:
        raise ParameterError(f"The {where} has several columns named {repeated}; rename them so that each "
                             f"is one column.")


def region_tree(columns: Sequence[Any], group: str | None, location: Any, *,
                groups: pd.DataFrame | None = None, hierarchy: pd.DataFrame | None = None) -> RegionTree:
    """Check the arguments and the public tables, and build the public region tree.

    Reads no private row: the private frame enters through its column names.

    Parameters
    ----------
    columns : sequence of labels
        The private frame's column names (``frame.columns``; a Dask frame's
        columns are metadata).
    group : str or None
        The group id column of the frame (and of ``groups``). None when the
        release has no groups (then ``groups`` must be None).
    location : str or list of str
        Location columns coarse to fine (``["state", "county"]``), or the leaf
        column alone with ``hierarchy=`` (whose columns are then the levels).
    groups : DataFrame, optional
        Public Groups table: one row per group (empty groups included) with
        the ``group`` and location columns.
    hierarchy : DataFrame, optional
        Public Hierarchy table: one row per leaf region, one column per level.

    Returns
    -------
    RegionTree
        Regions sorted within each level (when their labels are orderable).

    Raises
    ------
    ParameterError
        Columns missing from the frame or the tables, arguments of the wrong type.
    DomainError
        Neither ``groups`` nor ``hierarchy``: the regions would come from the data.
    SchemaError
        Every failure of the public tables (before anything private is read).

    Notes
    -----
    Without a Groups table the leaf column must be in the frame (it places
    every row). Location columns of the frame that are coarser than the leaf
    are optional; when present they must agree with the tree for a row to be
    in domain.

    Examples
    --------
    >>> import pandas as pd
    >>> hier = pd.DataFrame({"state": ["A", "A", "B"], "county": ["a1", "a2", "b1"]})
    >>> tree = region_tree(["hh", "county"], "hh", "county", hierarchy=hier)
    >>> tree.level_names, [list(r) for r in tree.regions], tree.parents[2].tolist()
    (('national', 'state', 'county'), [['national'], ['A', 'B'], ['a1', 'a2', 'b1']], [0, 0, 1])
    """
    try:
        cols = list(columns)
    except Exception as err:  # noqa: BLE001 - not an iterable of labels
        raise ParameterError(f"The 'columns' argument must be the frame's column names. Got "
                             f"{safe_repr(columns)}.") from err
    group = _plain(group)
    _check_columns(cols, group, groups, hierarchy)
    levels = _levels(location, hierarchy)
    if group is not None and group in levels:
        raise ParameterError(f"The group column {group!r} is also a location column {levels}; location columns "
                             f"name the regions the groups live in. Remove it from 'location'.")
    leaf = levels[-1]
    if ROOT in levels:
        raise ParameterError(f"{ROOT!r} is reserved for the root level; rename that location column.")
    if groups is None and hierarchy is None:
        needed = [group, *levels] if group is not None else levels
        raise DomainError(
            f"This release needs public regions: pass groups= (the public Groups table: one row per group "
            f"with columns {needed}) or hierarchy= (a public table of regions, one column per level). "
            "Regions read from the persons frame would reveal where people live.")
    if groups is not None:
        missing = [c for c in [group, *levels] if c not in groups.columns]
        if missing:
            raise ParameterError(f"The groups table lacks column(s) {missing}; it needs {[group, *levels]}.")
        _check_unique_labels("groups table", list(groups.columns), [group, *levels])
    if hierarchy is not None:
        missing = [c for c in levels if c not in hierarchy.columns]
        if missing:
            raise ParameterError(f"The hierarchy table lacks column(s) {missing}; it needs {levels}.")
        _check_unique_labels("hierarchy table", list(hierarchy.columns), levels)
    if groups is None and leaf not in cols:
        raise ParameterError(f"Without groups=, the frame needs the leaf location column {leaf!r}.")
    located = tuple(c for c in levels if c in cols)
    _check_unique_labels("frame", cols, [c for c in (group, *located) if c is not None])

    hier = valid_hierarchy(group, levels, groups=groups, hierarchy=hierarchy)
    if hier is None:  # a check failed: the schemas list every failure case
        from pandas_dp.domain.schema import validate_public_tables  # local: pandera loads only for failing tables

        hier = validate_public_tables(group, levels, groups=groups, hierarchy=hierarchy)
    regions = [pd.Index([ROOT])]
    parents = [np.full(1, -1, dtype=np.int64)]
    for i, col in enumerate(levels):
        idx = _sorted_unique(hier[col])
        if i == 0:
            par = np.zeros(len(idx), dtype=np.int64)
        else:
            pairs = hier[[levels[i - 1], col]].drop_duplicates(subset=[col])
            par = np.empty(len(idx), dtype=np.int64)
            par[idx.get_indexer(pairs[col])] = regions[-1].get_indexer(pairs[levels[i - 1]])
        regions.append(idx)
        parents.append(par)
    group_ids = group_leaf = None
    if groups is not None:
        group_ids = public_labels(pd.Index(groups[group]))
        group_leaf = _frozen(regions[-1].get_indexer(groups[leaf]))
    return RegionTree((ROOT, *levels), tuple(regions), tuple(_frozen(p) for p in parents), located, group,
                      group_ids, group_leaf)
