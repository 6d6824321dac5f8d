"""The Dask engine for count-of-counts: persons (Dask) + public tables -> exact size histograms per region.

The public tables (``groups``, ``hierarchy``) are pandas frames on the
client. Everything that reads persons runs as Dask tasks:

1. per partition: the Entities schema (pandera) and the join checks, giving
   failure cases only; every valid row becomes (group key, leaf code), where
   the key is the group's position in the public Groups table, or the group
   id itself when there is no Groups table (the leaf then comes from the row);
2. a distributed groupby on the group key: each partition aggregates its
   rows per group and splits them into ``buckets``; per bucket, a tree
   reduction merges the partial aggregates, so every group ends in exactly
   one bucket root. With a Groups table of at most ``DENSE_MAX_GROUPS``
   groups the aggregate is a dense ``bincount`` over the table's positions
   (buckets are contiguous slices; merging is addition); otherwise a sparse
   per-group (size, smallest and largest leaf code) frame (buckets by a hash
   of the key; sizes add up, leaf codes take min/max);
3. each bucket root turns its groups into run-length (leaf, size, groups)
   histograms and lists the groups that span two leaves (a broken
   functional dependency group -> leaf); a last tree merges the runs.

Only failure cases and run-length histograms (size: number of leaves times
distinct sizes) come back to the client, never rows. The argument checks,
the validation of the public tables and the region tree are those of the
pandas engine, run on the frame's empty metadata, so the result is a
:class:`~pandas_dp.engines.pandas_groups.GroupTables` equal to the pandas
engine's for the same data.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

from .._optional import import_optional
from ..algorithms.count_of_counts import Runs
from ..errors import SchemaError
from ..schema import entities_schema, join_failures, raise_failures, validate_tables
from .dask import SPLIT_EVERY, share, sum_arrays, tree_sum
from .pandas_groups import GroupTables, prepare_groups as prepare_on_meta

__all__ = ["prepare_groups", "DENSE_MAX_GROUPS"]

DENSE_MAX_GROUPS = 1 << 23

_AGG_COLUMNS = ["size", "lmin", "lmax"]


@dataclasses.dataclass(frozen=True)
class _Public:
    """What every partition task needs from the public tables (sent once per worker)."""

    group: str
    leaf: str
    leaf_index: pd.Index
    group_index: pd.Index | None      # None: no Groups table, keys are the group ids
    group_leaf: np.ndarray | None     # leaf code of every group of the Groups table
    entity_location: tuple[str, ...]  # location columns the Entities schema checks (pandas engine's choice)
    leaf_in_persons: bool
    check_name: str
    buckets: int
    bounds: np.ndarray | None         # dense aggregates: bucket b holds positions bounds[b]:bounds[b+1]


def _bucket_of(keys: pd.Index, buckets: int) -> np.ndarray:
    if buckets == 1:
        return np.zeros(len(keys), dtype=np.int64)
    return (pd.util.hash_array(np.asarray(keys), categorize=False) % np.uint64(buckets)).astype(np.int64)


def _partition_aggregate(part: pd.DataFrame, pub: _Public) -> tuple[pd.DataFrame, list[pd.DataFrame]]:
    """Failure cases and per-bucket (key -> size, lmin, lmax) aggregates of one persons partition."""
    pgroups = part[pub.group]
    failures: list[pd.DataFrame] = []
    loc = list(pub.entity_location)
    try:
        validate_tables([("Entities", entities_schema(pub.group, loc), part[[pub.group, *loc]])])
    except SchemaError as err:
        failures.append(err.failure_cases.assign(_stage=0))
    if pub.group_index is not None:
        codes = pub.group_index.get_indexer(pgroups)
        found = codes >= 0
        failures.append(join_failures(pgroups, found))
        lcode = pub.group_leaf[np.where(found, codes, 0)]  # type: ignore[index]
        if pub.leaf_in_persons:
            pleaf = pub.leaf_index.get_indexer(part[pub.leaf])
            failures.append(join_failures(pgroups, ~found | (lcode == pleaf),
                                          check=f"{pub.group}->{pub.leaf} matches Groups"))
        valid = found
        keys: Any = codes
        if pub.bounds is not None:
            counts = np.bincount(codes[valid], minlength=len(pub.group_index))
            dense = [counts[pub.bounds[b]:pub.bounds[b + 1]] for b in range(pub.buckets)]
            return _stage_failures(failures), dense
    else:
        lcode = pub.leaf_index.get_indexer(part[pub.leaf])
        failures.append(join_failures(part[pub.leaf], lcode >= 0, check=pub.check_name))
        valid = (lcode >= 0) & pgroups.notna().to_numpy()
        keys = pgroups.to_numpy()
    rows = pd.DataFrame({"key": keys[valid], "leaf": lcode[valid]})
    agg = rows.groupby("key", sort=False).agg(size=("leaf", "size"), lmin=("leaf", "min"), lmax=("leaf", "max"))
    bucket = _bucket_of(agg.index, pub.buckets)
    return _stage_failures(failures), [agg[bucket == b] for b in range(pub.buckets)]


def _stage_failures(failures: list[pd.DataFrame]) -> pd.DataFrame:
    """One frame of failure cases; ``_stage`` 0 for the schema, 1 for the join checks."""
    found = [f if "_stage" in f else f.assign(_stage=1) for f in failures if len(f)]
    return pd.concat(found, ignore_index=True) if found else pd.DataFrame()


def _merge_aggregates(*parts: pd.DataFrame) -> pd.DataFrame:
    """Merge partial per-group aggregates of one bucket (sizes add, leaf codes min/max)."""
    both = pd.concat(parts)
    return both.groupby(level=0, sort=False).agg(size=("size", "sum"), lmin=("lmin", "min"), lmax=("lmax", "max"))


def _merge_failures(*parts: pd.DataFrame) -> pd.DataFrame:
    found = [p for p in parts if len(p)]
    return pd.concat(found, ignore_index=True) if found else pd.DataFrame()


@dataclasses.dataclass(frozen=True)
class _BucketRuns:
    """Exact (leaf, size, groups) runs of some groups, and the keys of groups spanning two leaves."""

    node: np.ndarray
    size: np.ndarray
    groups: np.ndarray
    split_keys: np.ndarray


def _bucket_runs(agg: pd.DataFrame) -> _BucketRuns:
    """Runs of the groups of one bucket root (a group's leaf is its single leaf code)."""
    one_leaf = (agg["lmin"] == agg["lmax"]).to_numpy()
    leaf = agg["lmin"].to_numpy(dtype=np.int64)[one_leaf]
    size = agg["size"].to_numpy(dtype=np.int64)[one_leaf]
    pairs = pd.DataFrame({"leaf": leaf, "size": size}).value_counts(sort=False)
    return _BucketRuns(pairs.index.get_level_values("leaf").to_numpy(dtype=np.int64),
                       pairs.index.get_level_values("size").to_numpy(dtype=np.int64),
                       pairs.to_numpy(dtype=np.int64), agg.index.to_numpy()[~one_leaf])


def _dense_bucket_runs(sizes: np.ndarray, pub: _Public, bucket: int) -> _BucketRuns:
    """Runs of the groups at positions ``bounds[bucket]:bounds[bucket+1]`` of the Groups table."""
    leaf = pub.group_leaf[pub.bounds[bucket]:pub.bounds[bucket + 1]]  # type: ignore[index]
    width = int(sizes.max()) + 1 if sizes.size else 1
    keys, counts = np.unique(leaf * width + sizes, return_counts=True)
    return _BucketRuns(keys // width, keys % width, counts.astype(np.int64), np.empty(0, dtype=np.int64))


def _merge_runs(*parts: _BucketRuns) -> _BucketRuns:
    return _BucketRuns(*(np.concatenate([getattr(p, f) for p in parts])
                         for f in ("node", "size", "groups", "split_keys")))


def _split_group_failures(part: pd.DataFrame, group: str, keys: np.ndarray, check: str) -> pd.DataFrame:
    """Rows of ``part`` whose group spans several leaves (a broken functional dependency)."""
    pgroups = part[group]
    return join_failures(pgroups, ~pgroups.isin(keys).to_numpy(), check=check)


def prepare_groups(persons: Any, group: str, location: Any, *, groups: pd.DataFrame | None = None,
                   hierarchy: pd.DataFrame | None = None, buckets: int | None = None,
                   split_every: int = SPLIT_EVERY) -> GroupTables:
    """Validate the tables and compute exact count-of-counts histograms of every region, on Dask.

    Parameters
    ----------
    persons : dask.dataframe.DataFrame
        The entities (private); read only by Dask tasks.
    group, location, groups, hierarchy
        As for :func:`pandas_dp.engines.pandas_groups.prepare_groups`.
    buckets : int, optional
        Hash buckets of the distributed groupby (default: one per 8 partitions).
    split_every : int
        Fan-in of the reduction trees.

    Returns
    -------
    GroupTables
        Equal to the pandas engine's result on the same rows.

    Raises
    ------
    ParameterError, DomainError, SchemaError
        As the pandas engine. Failures of the public tables are reported
        before the persons frame is read; with a Groups table the failure
        cases are the pandas engine's. Without one, every row of a group that
        spans two leaves is a failure case of the functional dependency.
    """
    dask = import_optional("dask", extra="dask", purpose="count_of_counts on a Dask DataFrame")
    # Argument checks, public tables and the region tree: the pandas engine on the empty metadata.
    meta = persons._meta
    tables = prepare_on_meta(meta, group, location, groups=groups, hierarchy=hierarchy)
    leaf = tables.level_names[-1]
    leaf_index = tables.regions[-1]
    hier_name = "Hierarchy" if hierarchy is not None else "Hierarchy(from Groups)"
    n_buckets = buckets if buckets is not None else max(1, persons.npartitions // 8)
    bounds = None
    if groups is not None:
        group_index = pd.Index(groups[group])
        group_leaf = leaf_index.get_indexer(groups[leaf]).astype(np.int64)
        n_buckets = min(n_buckets, max(len(group_index), 1))
        if len(group_index) <= DENSE_MAX_GROUPS:
            bounds = np.linspace(0, len(group_index), n_buckets + 1).astype(np.int64)
    else:
        group_index, group_leaf = None, None
    leaf_in_persons = leaf in meta.columns
    entity_location = tuple(c for c in tables.level_names[1:] if c in meta.columns) if groups is None else ()
    pub = _Public(group, leaf, leaf_index, group_index, group_leaf, entity_location, leaf_in_persons,
                  f"{leaf}_in_{hier_name}", n_buckets, bounds)
    columns = [group, *entity_location]
    if leaf_in_persons and leaf not in columns:
        columns.append(leaf)
    parts = persons[columns].to_delayed(optimize_graph=True)
    shared = share(pub)
    aggregate = dask.delayed(_partition_aggregate, nout=2, pure=True)
    per_part = [aggregate(p, shared) for p in parts]
    failures = tree_sum([f for f, _ in per_part], split_every=split_every, combine=_merge_failures)
    pieces = [bucket_pieces[b] for _, bucket_pieces in per_part for b in range(n_buckets)]
    merge = sum_arrays if bounds is not None else _merge_aggregates
    roots = [tree_sum(pieces[b::n_buckets], split_every=split_every, combine=merge) for b in range(n_buckets)]
    if bounds is not None:
        bucket_runs = [dask.delayed(_dense_bucket_runs, pure=True)(r, shared, b) for b, r in enumerate(roots)]
    else:
        bucket_runs = [dask.delayed(_bucket_runs, pure=True)(r) for r in roots]
    runs = tree_sum(bucket_runs, split_every=split_every, combine=_merge_runs)
    found, leaf_runs = dask.compute(failures, runs)
    if len(found):
        # As on pandas: schema failures (stage 0) are reported alone, join failures (stage 1) after them.
        first = found[found["_stage"] == found["_stage"].min()]
        raise_failures([first.drop(columns="_stage")])
    if leaf_runs.split_keys.size:
        check = f"functional dependency {group}->{leaf}"
        split = dask.delayed(leaf_runs.split_keys, traverse=False)
        rows = [dask.delayed(_split_group_failures, pure=True)(p, group, split, check)
                for p in persons[[group]].to_delayed(optimize_graph=True)]
        raise_failures([tree_sum(rows, split_every=split_every, combine=_merge_failures).compute()])
    node, size, count = leaf_runs.node, leaf_runs.size, leaf_runs.groups
    if group_leaf is not None:
        # Groups of the public table without persons: public totals minus the non-empty groups, per leaf.
        empty = (np.bincount(group_leaf, minlength=len(leaf_index))
                 - np.bincount(node, weights=count, minlength=len(leaf_index)).astype(np.int64))
        node = np.concatenate([node, np.arange(len(leaf_index), dtype=np.int64)])
        size = np.concatenate([size, np.zeros(len(leaf_index), dtype=np.int64)])
        count = np.concatenate([count, empty])
    leaves = Runs.exact(node, size, count, len(leaf_index))
    exact = [leaves]
    for lvl in range(len(tables.regions) - 1, 0, -1):
        exact.append(exact[-1].aggregate(tables.parents[lvl], len(tables.regions[lvl - 1])))
    max_size = int(leaves.size.max()) if leaves.size.size else 0
    return dataclasses.replace(tables, exact=exact[::-1], max_size=max_size)
