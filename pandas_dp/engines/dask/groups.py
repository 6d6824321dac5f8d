"""The Dask engine for count-of-counts: persons (Dask) + the public region tree -> exact size histograms.

The region tree is public: it is built on the client from the frame's column
names and the public tables (:func:`pandas_dp.domain.geography.region_tree`), as on
pandas. Everything that reads persons runs as Dask tasks with the pandas
engine's per-row rules (:mod:`pandas_dp.engines.pandas.groups`): a row out of domain is
dropped in the partition that holds it, silently. No task raises or warns on
a value, no dtype metadata is enforced on the partitions (they are read with
``to_delayed``), and only run-length histograms (leaves times distinct
sizes) come back to the client, never rows, ids or failure cases.

1. Per partition, the in-domain rows become partial group sizes: with a
   Groups table of at most ``DENSE_MAX_GROUPS`` groups, a dense ``bincount``
   over the table's positions; with a larger one, sparse (position, size)
   pairs; without a Groups table, (group id, leaf, size) triples.
2. The partial sizes are split into ``buckets``: contiguous slices of
   positions (dense), positions modulo ``buckets`` (sparse), or leaves modulo
   ``buckets`` (no Groups table: a group is a (group id, leaf) pair, so all
   its rows land in one bucket whatever dtype its id has in each partition).
   With the group as the privacy unit and no Groups table, by the canonical
   hash of the id (:func:`pandas_dp.domain.unit_values.canonical_unit_hashes`,
   the same for 17, 17.0 and "17"), so that all leaves of an id meet in one
   bucket, where an id found in more than one leaf is dropped (as on pandas).
   Each bucket is merged in a reduction tree of fan-in ``split_every``, so
   every group ends in exactly one bucket root.
3. Each bucket root turns its groups into (leaf, size, groups) runs; a last
   tree concatenates them. Public groups without persons are added on the
   client from the public Groups table.

The result is a :class:`~pandas_dp.engines.pandas.groups.GroupTables` equal
to the pandas engine's for the same rows, for any partitioning.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp._utils.optional import import_optional
from pandas_dp.algorithms.count_of_counts import Runs
from pandas_dp.errors import ParameterError
from pandas_dp.domain.geography import RegionTree, region_tree
from pandas_dp.engines.dask.graph import SPLIT_EVERY, compute_private, partitions, share, tree_sum
from pandas_dp.engines.pieces import merge_by_id, sum_arrays
from pandas_dp.engines.pandas.groups import (GroupTables, bucketed_groups, public_group_positions,
                                             tables_from_leaf_runs)

__all__ = ["count_groups", "prepare_groups", "DENSE_MAX_GROUPS"]

DENSE_MAX_GROUPS = 1 << 23


@dataclasses.dataclass(frozen=True)
class _Plan:
    """What every partition task needs (public; sent once per worker)."""

    tree: RegionTree
    buckets: int
    bounds: np.ndarray | None  # dense aggregates: bucket b holds positions bounds[b]:bounds[b+1]
    one_leaf: bool = False  # the group is the unit: an id in more than one leaf is out of domain


def _partition_pieces(part: pd.DataFrame, plan: _Plan) -> list[Any]:
    """Per-bucket partial group sizes of one persons partition (in-domain rows only)."""
    tree = plan.tree
    if tree.group_ids is not None:
        pos = public_group_positions(part, tree)
        pos = pos[pos >= 0]
        if plan.bounds is not None:
            counts = np.bincount(pos, minlength=len(tree.group_ids)).astype(np.int64)
            return [counts[plan.bounds[b]:plan.bounds[b + 1]] for b in range(plan.buckets)]
        keys, sizes = np.unique(pos, return_counts=True)
        bucket = keys % plan.buckets
        return [pd.Series(sizes[bucket == b].astype(np.int64), index=keys[bucket == b])
                for b in range(plan.buckets)]
    groups, bucket = bucketed_groups(part, tree, plan.buckets, plan.one_leaf)
    return [groups[bucket == b] for b in range(plan.buckets)]


def _merge_positions(*parts: pd.Series) -> pd.Series:
    """Merge sparse (position -> size) partial sizes of one bucket."""
    both = pd.concat(parts)
    return both.groupby(level=0, sort=False).sum()


def _merge_groups(*parts: pd.DataFrame) -> pd.DataFrame:
    """Merge (class, group id, leaf, size) partial sizes of one bucket: sizes of equal (class, id, leaf) add up."""
    return merge_by_id(parts, ["cls", "id", "leaf"], "size")


@dataclasses.dataclass(frozen=True)
class _BucketRuns:
    """Exact (leaf, size, groups) runs of the groups of some buckets."""

    node: np.ndarray
    size: np.ndarray
    groups: np.ndarray


def _runs_of(leaf: np.ndarray, size: np.ndarray) -> _BucketRuns:
    pairs = pd.DataFrame({"leaf": leaf.astype(np.int64), "size": size.astype(np.int64)}).value_counts(sort=False)
    return _BucketRuns(pairs.index.get_level_values("leaf").to_numpy(dtype=np.int64),
                       pairs.index.get_level_values("size").to_numpy(dtype=np.int64),
                       pairs.to_numpy(dtype=np.int64))


def _dense_bucket_runs(sizes: np.ndarray, plan: _Plan, bucket: int) -> _BucketRuns:
    """Runs of the groups at positions ``bounds[bucket]:bounds[bucket+1]`` of the Groups table (empty ones too)."""
    leaf = plan.tree.group_leaf[plan.bounds[bucket]:plan.bounds[bucket + 1]]  # type: ignore[index]
    return _runs_of(leaf, sizes)


def _sparse_bucket_runs(sizes: pd.Series, plan: _Plan) -> _BucketRuns:
    """Runs of the non-empty groups of one sparse bucket (positions of the Groups table)."""
    leaf = plan.tree.group_leaf[sizes.index.to_numpy(dtype=np.int64)]  # type: ignore[index]
    return _runs_of(leaf, sizes.to_numpy(dtype=np.int64))


def _group_bucket_runs(groups: pd.DataFrame, one_leaf: bool = False) -> _BucketRuns:
    """Runs of the (group id, leaf) groups of one bucket (``one_leaf``: ids in several leaves dropped)."""
    if one_leaf and len(groups):
        leaves = groups.groupby(["cls", "id"], sort=False, observed=True)["leaf"].transform("nunique")
        groups = groups[leaves.to_numpy() == 1]
    return _runs_of(groups["leaf"].to_numpy(dtype=np.int64), groups["size"].to_numpy(dtype=np.int64))


def _merge_runs(*parts: _BucketRuns) -> _BucketRuns:
    return _BucketRuns(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("node", "size", "groups")))


def count_groups(persons: Any, tree: RegionTree, *, buckets: int | None = None,
                 split_every: int = SPLIT_EVERY, group_unit: bool = False) -> GroupTables:
    """Exact count-of-counts histograms of every region of ``tree``, counted by Dask tasks.

    Parameters
    ----------
    persons : dask.dataframe.DataFrame
        The entities (private); only ``tree.group`` and ``tree.located`` are
        read, by Dask tasks.
    tree : RegionTree
        Built by :func:`pandas_dp.domain.geography.region_tree` with a ``group`` column.
    buckets : int, optional
        Buckets of the distributed groupby (default: one per 8 partitions).
    split_every : int
        Fan-in of the reduction trees.
    group_unit : bool
        The group is the privacy unit: without a Groups table an id in more than one leaf is out
        of domain (each id is one group), as on pandas.

    Returns
    -------
    GroupTables
        Equal to :func:`pandas_dp.engines.pandas.groups.count_groups` on the
        same rows. Rows out of domain are dropped; nothing raises or warns on
        the rows' values.
    """
    dask = import_optional("dask", extra="dask", purpose="count_of_counts on a Dask DataFrame")
    n_leaves = len(tree.regions[-1])
    n_buckets = buckets if buckets is not None else max(1, persons.npartitions // 8)
    bounds = None
    if tree.group_ids is not None:
        n_buckets = min(n_buckets, max(len(tree.group_ids), 1))
        if len(tree.group_ids) <= DENSE_MAX_GROUPS:
            bounds = np.linspace(0, len(tree.group_ids), n_buckets + 1).astype(np.int64)
    plan = _Plan(tree, n_buckets, bounds, one_leaf=group_unit and tree.group_ids is None)
    columns = [tree.group, *(c for c in tree.located if c != tree.group)]
    parts = partitions(persons[columns])
    shared = share(plan)
    pieces = dask.delayed(_partition_pieces, pure=True)
    per_part = [pieces(p, shared) for p in parts]
    if tree.group_ids is None:
        merge: Any = _merge_groups
    elif bounds is None:
        merge = _merge_positions
    else:
        merge = sum_arrays
    roots = [tree_sum([pp[b] for pp in per_part], split_every=split_every, combine=merge) for b in range(n_buckets)]
    if bounds is not None:
        bucket_runs = [dask.delayed(_dense_bucket_runs, pure=True)(r, shared, b) for b, r in enumerate(roots)]
    elif tree.group_ids is not None:
        bucket_runs = [dask.delayed(_sparse_bucket_runs, pure=True)(r, shared) for r in roots]
    else:
        bucket_runs = [dask.delayed(_group_bucket_runs, pure=True)(r, plan.one_leaf) for r in roots]
    runs = compute_private(tree_sum(bucket_runs, split_every=split_every, combine=_merge_runs))
    node, size, count = runs.node, runs.size, runs.groups
    if tree.group_ids is not None and bounds is None:
        # Groups of the public table without persons: public totals minus the non-empty groups, per leaf.
        empty = (tree.leaf_group_counts()
                 - np.bincount(node, weights=count, minlength=n_leaves).astype(np.int64))
        node = np.concatenate([node, np.arange(n_leaves, dtype=np.int64)])
        size = np.concatenate([size, np.zeros(n_leaves, dtype=np.int64)])
        count = np.concatenate([count, empty])
    return tables_from_leaf_runs(tree, Runs.exact(node, size, count, n_leaves))


def prepare_groups(persons: Any, group: str, location: Any, *, groups: pd.DataFrame | None = None,
                   hierarchy: pd.DataFrame | None = None, buckets: int | None = None,
                   split_every: int = SPLIT_EVERY) -> GroupTables:
    """Build the public region tree and count a Dask persons frame on it (``region_tree`` + :func:`count_groups`).

    Raises
    ------
    ParameterError, DomainError, SchemaError
        From the arguments and the public tables only, before any task runs.
    """
    tree = region_tree(persons.columns, group, location, groups=groups, hierarchy=hierarchy)
    if tree.group is None:
        raise ParameterError(f"The 'group' parameter must name a column of the frame. Got None; "
                             f"columns are {list(persons.columns)[:20]}.")
    return count_groups(persons, tree, buckets=buckets, split_every=split_every)
