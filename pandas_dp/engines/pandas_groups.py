"""The pandas engine for count-of-counts: persons + groups + hierarchy -> exact size histograms.

Only this module (and the accessor) reads rows. It validates the tables
(pandera schemas and the join checks, all failures at once), builds the
public region tree, and returns the exact run-length count-of-counts
histogram of every region: ``groupby`` sizes via one hash of the group ids
and ``bincount``, then one sort of (leaf, size) keys. No exact number derived
from the data leaves the release function that calls it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..algorithms.count_of_counts import Runs
from ..errors import DomainError, ParameterError
from ..schema import (
    entities_schema,
    groups_schema,
    hierarchy_schema,
    join_failures,
    raise_failures,
    validate_tables,
)

__all__ = ["GroupTables", "prepare_groups", "exact_count_of_counts", "ROOT"]

ROOT = "national"


@dataclass(frozen=True)
class GroupTables:
    """Exact inputs of a count-of-counts release (private: never returned to users).

    Attributes
    ----------
    level_names : tuple of str
        ``("national", *location columns)``, coarse to fine.
    regions : tuple of pandas.Index
        Region labels of every level (public: from the hierarchy / Groups table).
    parents : list
        ``parents[l][i]``: index in level ``l-1`` of the parent of region ``i``
        of level ``l`` (``parents[0]`` is None).
    exact : list of Runs
        Exact count-of-counts histograms per level.
    max_size : int
        True largest group size (private).
    groups_public : bool
        Whether the Groups table was given (its per-region counts are public).
    """

    level_names: tuple[str, ...]
    regions: tuple[pd.Index, ...]
    parents: list[np.ndarray | None]
    exact: list[Runs]
    max_size: int
    groups_public: bool

    @property
    def totals(self) -> list[np.ndarray]:
        """Number of groups per region, per level."""
        return [r.totals() for r in self.exact]


def _levels(location: Any, hierarchy: pd.DataFrame | None) -> list[str]:
    if isinstance(location, str):
        if hierarchy is not None:
            cols = list(hierarchy.columns)
            if not cols or cols[-1] != location:
                raise ParameterError(
                    f"With location={location!r} (a leaf column), the hierarchy table's columns must be "
                    f"its levels coarse to fine ending with {location!r}. Got columns {cols}.")
            return cols
        return [location]
    if isinstance(location, (list, tuple)) and location and all(isinstance(c, str) for c in location):
        if len(set(location)) != len(location):
            raise ParameterError(f"The 'location' parameter repeats a column: {list(location)}.")
        return list(location)
    raise ParameterError(
        f"The 'location' parameter must be a column name (the leaf region, with hierarchy=) or a list of "
        f"column names coarse to fine, e.g. ['state', 'county']. Got {location!r}.")


def _sorted_unique(values: pd.Series) -> pd.Index:
    uniq = pd.Index(pd.unique(values.to_numpy()))
    try:
        return uniq.sort_values()
    except TypeError:
        return uniq


def prepare_groups(persons: pd.DataFrame, group: str, location: Any, *, groups: pd.DataFrame | None = None,
                   hierarchy: pd.DataFrame | None = None) -> GroupTables:
    """Validate the tables and compute exact count-of-counts histograms of every region.

    Raises
    ------
    ParameterError
        Columns missing or arguments of the wrong type.
    DomainError
        When the regions would come from the private frame (no ``groups`` and no ``hierarchy``).
    SchemaError
        With every failure case of every table and of the join.
    """
    if not isinstance(group, str) or group not in persons.columns:
        raise ParameterError(f"The 'group' parameter must name a column of the frame. Got {group!r}; "
                             f"columns are {list(persons.columns)[:20]}.")
    for name, table in (("groups", groups), ("hierarchy", hierarchy)):
        if table is not None and not isinstance(table, pd.DataFrame):
            raise ParameterError(f"The '{name}' parameter must be a pandas DataFrame. Got {type(table).__name__}.")
    levels = _levels(location, hierarchy)
    leaf = levels[-1]
    if ROOT in levels:
        raise ParameterError(f"{ROOT!r} is reserved for the root level; rename that location column.")
    if groups is None and hierarchy is None:
        raise DomainError(
            "Count-of-counts needs public regions: pass groups= (the public Groups table: one row per group "
            f"with columns {[group, *levels]}) or hierarchy= (a public table of regions, one column per level). "
            "Regions read from the persons frame would reveal where people live.")
    if groups is not None:
        missing = [c for c in [group, *levels] if c not in groups.columns]
        if missing:
            raise ParameterError(f"The groups table lacks column(s) {missing}; it needs {[group, *levels]}.")
    if hierarchy is not None:
        missing = [c for c in levels if c not in hierarchy.columns]
        if missing:
            raise ParameterError(f"The hierarchy table lacks column(s) {missing}; it needs {levels}.")
        hier = hierarchy[levels]
        hier_name = "Hierarchy"
    else:
        hier = groups[levels].drop_duplicates()  # type: ignore[index]
        hier_name = "Hierarchy(from Groups)"
    person_loc = [c for c in levels if c in persons.columns]
    if groups is None and leaf not in persons.columns:
        raise ParameterError(f"Without groups=, the frame needs the leaf location column {leaf!r}.")
    # Validate only the columns used: pandera copies the frame it checks.
    ent_loc = person_loc if groups is None else []
    tables = [("Entities", entities_schema(group, ent_loc), persons[[group, *ent_loc]]),
              (hier_name, hierarchy_schema(levels), hier)]
    if groups is not None:
        tables.append(("Groups", groups_schema(group, levels), groups[[group, *levels]]))
    validate_tables(tables)

    # Public region tree.
    regions = [pd.Index([ROOT])]
    parents: list[np.ndarray | None] = [None]
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
    leaf_index = regions[-1]

    # Group sizes and the leaf of every group.
    failures: list[pd.DataFrame] = []
    pgroups = persons[group]
    if groups is not None:
        codes = pd.Index(groups[group]).get_indexer(pgroups)
        found = codes >= 0
        failures.append(join_failures(pgroups, found))
        group_leaf = leaf_index.get_indexer(groups[leaf])
        failures.append(join_failures(groups[leaf], group_leaf >= 0, table="Groups",
                                      check=f"{leaf}_in_{hier_name}"))
        if leaf in persons.columns:
            pleaf = leaf_index.get_indexer(persons[leaf])
            ok = ~found | (group_leaf[np.where(found, codes, 0)] == pleaf)
            failures.append(join_failures(pgroups, ok, check=f"{group}->{leaf} matches Groups"))
        n_groups = len(groups)
    else:
        codes, _ = pd.factorize(pgroups, use_na_sentinel=True)
        n_groups = int(codes.max()) + 1 if codes.size else 0
        pleaf = leaf_index.get_indexer(persons[leaf])
        failures.append(join_failures(persons[leaf], pleaf >= 0, check=f"{leaf}_in_{hier_name}"))
        group_leaf = np.full(n_groups, -1, dtype=np.int64)
        group_leaf[codes] = pleaf
        failures.append(join_failures(pgroups, group_leaf[codes] == pleaf,
                                      check=f"functional dependency {group}->{leaf}"))
    raise_failures(failures)
    sizes = np.bincount(codes, minlength=n_groups).astype(np.int64)
    max_size = int(sizes.max()) if sizes.size else 0
    leaves = _leaf_runs(np.asarray(group_leaf, dtype=np.int64), sizes, len(leaf_index), max_size)
    exact = [leaves]
    for lvl in range(len(regions) - 1, 0, -1):
        exact.append(exact[-1].aggregate(parents[lvl], len(regions[lvl - 1])))
    return GroupTables((ROOT, *levels), tuple(regions), parents, exact[::-1], max_size, groups is not None)


def _leaf_runs(group_leaf: np.ndarray, sizes: np.ndarray, n_leaves: int, max_size: int) -> Runs:
    """Exact (leaf, size, groups) runs from per-group leaf codes and sizes."""
    width = max_size + 1
    if n_leaves * width <= max(4 * sizes.size, 1 << 16):
        dense = np.bincount(group_leaf * width + sizes, minlength=n_leaves * width)
        nz = np.flatnonzero(dense)
        return Runs(nz // width, nz % width, dense[nz].astype(np.int64), np.zeros(nz.size), n_leaves)
    keys, counts = np.unique(group_leaf * width + sizes, return_counts=True)
    return Runs(keys // width, keys % width, counts.astype(np.int64), np.zeros(keys.size), n_leaves)


def exact_count_of_counts(persons: pd.DataFrame, group: str, location: Any, *,
                          groups: pd.DataFrame | None = None,
                          hierarchy: pd.DataFrame | None = None) -> pd.DataFrame:
    """The exact (non-private) count-of-counts of every region, as a tidy frame.

    For evaluation only (e.g. ``CountOfCounts.emd(truth)``): it is not a DP
    release. Columns: ``level``, ``region``, ``size``, ``groups``.
    """
    tables = prepare_groups(persons, group, location, groups=groups, hierarchy=hierarchy)
    return runs_to_frame(tables.exact, tables.level_names, tables.regions)


def runs_to_frame(levels: Sequence[Runs], names: Sequence[str], regions: Sequence[pd.Index]) -> pd.DataFrame:
    """Tidy frame (level, region, size, groups) of per-level run-lengths."""
    parts = []
    for runs, name, idx in zip(levels, names, regions):
        merged = Runs.exact(runs.node, runs.size, runs.groups, runs.n_nodes)
        parts.append(pd.DataFrame({
            "level": name,
            "region": idx.take(merged.node).astype(object) if len(idx) else pd.Index([], dtype=object),
            "size": merged.size,
            "groups": merged.groups,
        }))
    return pd.concat(parts, ignore_index=True)
