"""The pandas engine for count-of-counts: persons + the public region tree -> exact size histograms.

Only this module (and its Dask twin, :mod:`pandas_dp.engines.dask.groups`) reads persons rows.
It never validates them, never raises and never warns on them: the public
tables were validated when the :class:`~pandas_dp.domain.geography.RegionTree` was
built, and a person row that does not fit that tree is **out of domain and
dropped**, silently and uncounted (how many were dropped is never returned):

* with a public Groups table: a group id that is not one of the table's
  (unknown, missing, or not a plain scalar: a list, a dict, an object...), or
  a location column that disagrees with the group's region at its level
  (unknown, missing or another region);
* without one: a missing or non-plain group id, a leaf region that is not in
  the hierarchy, or a coarser location column that is not the leaf's
  ancestor. The group key is then the pair (group id, leaf region): persons
  of one group id in two leaves are two groups. With the group as the privacy
  unit (``privacy_unit="group"``) each id must be one group, since every
  level's noise is calibrated for one group: an id whose in-domain persons
  sit in more than one leaf is out of domain, all its rows dropped (a rule
  that reads that group's own rows only, so a neighbour still moves one group).

Whether a row counts, and in which group, depends on that row and on the
public tables only (:mod:`pandas_dp.domain.labels` decides value by value, never
from a column's dtype). So adding or removing an out-of-domain person
changes nothing, and adding or removing an in-domain person changes one
group's size by one (or creates or removes a group of size one): the
neighbour step of Kuo et al., with the sensitivities of the paper (one
person changes the count-of-counts histogram of one region per level by at
most 2, its cumulative histogram and sorted group sizes by 1, the largest
group size by 1 and, without a Groups table, one region's number of groups
per level by 1).

The exact run-length count-of-counts histogram of every region comes from
one hash of the group ids, ``bincount`` of the sizes and one sort of
(leaf, size) keys. No exact number derived from the data leaves the release
function that calls it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.domain.labels import factorize, positions, value_classes
from pandas_dp.domain.unit_values import canonical_unit_hashes
from pandas_dp.algorithms.count_of_counts import Runs, runs_to_frame
from pandas_dp.errors import ParameterError
from pandas_dp.domain.geography import ROOT, RegionTree, region_tree

__all__ = ["GroupTables", "count_groups", "prepare_groups", "exact_count_of_counts",
           "public_group_positions", "group_leaf_sizes", "bucketed_groups", "tables_from_leaf_runs", "ROOT"]


@dataclass(frozen=True, eq=False)
class GroupTables:
    """Exact inputs of a count-of-counts release (private: never returned to users).

    Attributes
    ----------
    tree : RegionTree
        The public regions (and Groups table) the persons were counted on.
    exact : list of Runs
        Exact count-of-counts histograms per level, root first.
    max_size : int
        True largest group size (private).
    """

    tree: RegionTree
    exact: list[Runs]
    max_size: int

    @property
    def level_names(self) -> tuple[str, ...]:
        """``("national", *location columns)``, coarse to fine."""
        return self.tree.level_names

    @property
    def regions(self) -> tuple[pd.Index, ...]:
        """Region labels of every level (public)."""
        return self.tree.regions

    @property
    def parents(self) -> tuple[np.ndarray, ...]:
        """``parents[l][i]``: position in level ``l-1`` of the parent of region ``i`` of level ``l``."""
        return self.tree.parents

    @property
    def groups_public(self) -> bool:
        """Whether the Groups table was given (its per-region counts are public)."""
        return self.tree.groups_public

    @property
    def totals(self) -> list[np.ndarray]:
        """Number of groups per region, per level."""
        return [r.totals() for r in self.exact]


def _agrees(frame: pd.DataFrame, tree: RegionTree, leaf: np.ndarray, columns: Sequence[str]) -> np.ndarray:
    """Rows whose location ``columns`` all name the ancestor (at their level) of leaf ``leaf`` (>= 0)."""
    ok = np.ones(len(frame), dtype=bool)
    anc = tree.ancestors
    for col in columns:
        lvl = tree.level_names.index(col)
        ok &= positions(tree.regions[lvl], frame[col]) == anc[lvl][leaf]
    return ok


def public_group_positions(frame: pd.DataFrame, tree: RegionTree) -> np.ndarray:
    """Position in the public Groups table of every row's group; -1 when the row is out of domain.

    Out of domain: the group id is not one of the table's, or a location
    column of the frame disagrees with the group's region. Never raises.
    """
    with np.errstate(all="ignore"):
        pos = positions(tree.group_ids, frame[tree.group])
        if tree.located:
            found = pos >= 0
            leaf = tree.group_leaf[np.where(found, pos, 0)]  # type: ignore[index]
            pos[found & ~_agrees(frame, tree, leaf, tree.located)] = -1
        return pos


def _pair_factorize(a: np.ndarray, b: np.ndarray, nb: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Codes of the distinct pairs ``(a, b)`` (``0 <= b < nb``), and the pairs' ``a`` and ``b``."""
    if a.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    if (int(a.max()) + 1) * max(nb, 1) < 2**62:
        codes, keys = pd.factorize(a * np.int64(nb) + b)
        return codes.astype(np.int64), keys // nb, keys % nb
    codes, pairs = pd.factorize(pd.MultiIndex.from_arrays([a, b]))
    return (codes.astype(np.int64), pairs.get_level_values(0).to_numpy(np.int64),
            pairs.get_level_values(1).to_numpy(np.int64))


def group_leaf_sizes(frame: pd.DataFrame, tree: RegionTree, *, with_rows: bool = False, one_leaf: bool = False
                     ) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """Without a Groups table: the groups (group id, leaf) of the in-domain rows and their sizes.

    With ``one_leaf=True`` (the group is the privacy unit) the ids whose in-domain rows sit in more
    than one leaf are dropped too, so every group is one id. On Dask, where one partition sees
    part of a group, the engine applies this rule after merging (``one_leaf`` stays False there).

    Returns
    -------
    rows : numpy.ndarray or None
        With ``with_rows=True``, the position in ``frame`` of one row of every
        group (whose group id is the group's); None otherwise.
    leaf : numpy.ndarray
        Leaf position of every group.
    size : numpy.ndarray
        Number of rows of every group (>= 1).

    Out of domain: a missing or non-plain group id, a leaf not in the tree,
    a coarser location that is not the leaf's ancestor. Never raises.
    """
    with np.errstate(all="ignore"):
        gid = factorize(frame[tree.group])
        leaf = positions(tree.regions[-1], frame[tree.leaf])
        ok = (gid >= 0) & (leaf >= 0)
        coarser = tree.located[:-1]
        if coarser:
            ok &= _agrees(frame, tree, np.maximum(leaf, 0), coarser)
        g, lf = (gid, leaf) if ok.all() else (gid[ok], leaf[ok])
        n_ids = int(g.max()) + 1 if g.size else 0
        if one_leaf and g.size:
            spread = _spread_ids(g, lf, n_ids)
            if spread.any():
                keep = ~spread[g]
                ok[np.flatnonzero(ok)[~keep]] = False
                g, lf = g[keep], lf[keep]
        some_leaf = np.full(n_ids, -1, dtype=np.int64)
        some_leaf[g] = lf
        if np.array_equal(some_leaf[g], lf):
            # The usual case: every group id lies in one leaf, so the groups are the ids.
            used = some_leaf >= 0
            remap = np.cumsum(used) - 1
            codes, pair_leaf = remap[g], some_leaf[used]
        else:
            codes, _, pair_leaf = _pair_factorize(g, lf, len(tree.regions[-1]))
        size = np.bincount(codes, minlength=pair_leaf.size).astype(np.int64)
        rows = None
        if with_rows:
            rows = np.zeros(pair_leaf.size, dtype=np.int64)
            rows[codes] = np.flatnonzero(ok)  # any row of the group will do: they share its id
        return rows, pair_leaf, size


def bucketed_groups(frame: pd.DataFrame, tree: RegionTree, buckets: int,
                    one_leaf: bool) -> tuple[pd.DataFrame, np.ndarray]:
    """The (class, id, leaf, size) partial groups of a piece and each one's bucket in ``0..buckets-1``.

    Engines that merge groups across pieces (Dask, Spark) send every bucket to one place: by the
    canonical hash of the id when the group is the unit (``one_leaf``: an id may sit in any leaf),
    else by the group's leaf. The class (boolean, number, string...) goes with the id, so a boolean
    never merges with a number.
    """
    rows, leaf, size = group_leaf_sizes(frame, tree, with_rows=True)
    assert rows is not None
    ids = frame[tree.group].take(rows)
    groups = pd.DataFrame({"cls": value_classes(ids), "id": ids.to_numpy(), "leaf": leaf, "size": size})
    if one_leaf:
        return groups, (canonical_unit_hashes(ids) % np.uint64(buckets)).astype(np.int64)
    return groups, leaf % buckets


def _spread_ids(ids: np.ndarray, leaf: np.ndarray, n_ids: int) -> np.ndarray:
    """``spread[i]``: whether the rows of id ``i`` (codes ``0..n_ids-1``) sit in more than one leaf."""
    lo = np.full(n_ids, np.iinfo(np.int64).max, dtype=np.int64)
    hi = np.full(n_ids, -1, dtype=np.int64)
    np.minimum.at(lo, ids, leaf)
    np.maximum.at(hi, ids, leaf)
    return (hi >= 0) & (lo != hi)


def tables_from_leaf_runs(tree: RegionTree, leaves: Runs) -> GroupTables:
    """Exact tables of every level from the leaf level's runs (children summed per parent)."""
    exact = [leaves]
    for lvl in range(len(tree.regions) - 1, 0, -1):
        exact.append(exact[-1].aggregate(tree.parents[lvl], len(tree.regions[lvl - 1])))
    max_size = int(leaves.size.max()) if leaves.size.size else 0
    return GroupTables(tree, exact[::-1], max_size)


def count_groups(persons: pd.DataFrame, tree: RegionTree, *, group_unit: bool = False) -> GroupTables:
    """Exact count-of-counts histograms of every region of ``tree`` (the private step of a release).

    Parameters
    ----------
    persons : pandas.DataFrame
        The private entities; only ``tree.group`` and ``tree.located`` are read.
    tree : RegionTree
        Built by :func:`pandas_dp.domain.geography.region_tree` with a ``group`` column.
    group_unit : bool
        The group is the privacy unit: without a Groups table, an id in more than one leaf is
        out of domain (every group is one id).

    Returns
    -------
    GroupTables
        With a Groups table, every group of the table (empty ones as size 0);
        without, every (group id, leaf) pair of the in-domain rows.

    Notes
    -----
    Rows out of domain (see the module notes) are dropped before counting,
    silently; nothing here raises or warns on the rows' values.
    """
    n_leaves = len(tree.regions[-1])
    if tree.group_ids is not None:
        pos = public_group_positions(persons, tree)
        sizes = np.bincount(pos[pos >= 0], minlength=len(tree.group_ids)).astype(np.int64)
        group_leaf = np.asarray(tree.group_leaf, dtype=np.int64)
    else:
        _, group_leaf, sizes = group_leaf_sizes(persons, tree, one_leaf=group_unit)
    max_size = int(sizes.max()) if sizes.size else 0
    return tables_from_leaf_runs(tree, _leaf_runs(group_leaf, sizes, n_leaves, max_size))


def prepare_groups(persons: pd.DataFrame, group: str, location: Any, *, groups: pd.DataFrame | None = None,
                   hierarchy: pd.DataFrame | None = None) -> GroupTables:
    """Build the public region tree and count the persons on it (:func:`region_tree` + :func:`count_groups`).

    Raises
    ------
    ParameterError, DomainError, SchemaError
        From the arguments and the public tables only (see :func:`~pandas_dp.domain.geography.region_tree`).
    """
    tree = region_tree(persons.columns, group, location, groups=groups, hierarchy=hierarchy)
    if tree.group is None:
        raise ParameterError(f"The 'group' parameter must name a column of the frame. Got None; "
                             f"columns are {list(persons.columns)[:20]}.")
    return count_groups(persons, tree)


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

    For evaluation only: it reads the rows and adds no noise, so it is not a DP
    release and costs no budget. Compare a release with it
    (``coc.emd(truth)``). Public as :func:`pandas_dp.testing.exact_count_of_counts`.

    Parameters
    ----------
    persons : pandas.DataFrame
        One row per person (entity), as given to ``persons.dp.count_of_counts``.
    group : str
        The column naming each person's group (household, aircraft...).
    location : str or list of str
        The location column(s), coarsest first, as in the release.
    groups : pandas.DataFrame, optional
        One row per group with its location: groups without persons count as size 0.
    hierarchy : pandas.DataFrame, optional
        The region tree when the locations are not nested columns, as in the release.

    Returns
    -------
    pandas.DataFrame
        Columns ``level``, ``region``, ``size``, ``groups``: the number of groups of
        each size in every region, one row per (region, size) with at least one group.

    Examples
    --------
    >>> from pandas_dp.data import load_households, load_persons
    >>> from pandas_dp.testing import exact_count_of_counts
    >>> truth = exact_count_of_counts(load_persons(), "household_id", "state", groups=load_households())
    >>> truth.columns.tolist()
    ['level', 'region', 'size', 'groups']
    >>> int(truth.loc[truth["level"] == "national", "groups"].sum())
    4000
    """
    tables = prepare_groups(persons, group, location, groups=groups, hierarchy=hierarchy)
    return runs_to_frame(tables.exact, tables.level_names, tables.regions)
