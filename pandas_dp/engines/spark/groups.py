"""The Spark engine for count-of-counts: persons + the public region tree -> exact size histograms.

The region tree is public (built on the driver from the column names and the public tables,
as on pandas). Every read of persons runs on the executors with the pandas engine's per-row
rules (:mod:`pandas_dp.engines.pandas.groups`): a row out of domain is dropped where it is read.

* With a public Groups table, every piece counts its rows per position of the table (a dense
  ``bincount``, the table's size); the partial sizes add up (:func:`~pandas_dp.engines.spark.reduce.reduce_rows`)
  and the driver turns the sizes into (leaf, size, groups) runs, empty groups included.
* Without one, every piece makes partial (class, group id, leaf, size) groups, split into
  buckets by leaf (with the group as the privacy unit: by the canonical hash of the id, so
  every leaf of an id meets in one bucket), each bucket pickled in one cell; the cells are
  repartitioned by bucket and every partition merges its buckets' groups by value
  (:func:`~pandas_dp.engines.pieces.merge_by_id`) and returns only their (leaf, size, groups)
  runs. No group id reaches the driver.

The result is a :class:`~pandas_dp.engines.pandas.groups.GroupTables` equal to the pandas
engine's on the same rows, for any partitioning.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from pandas_dp.algorithms.count_of_counts import Runs
from pandas_dp.domain.geography import RegionTree
from pandas_dp.engines.pandas.groups import (GroupTables, bucketed_groups, public_group_positions,
                                             tables_from_leaf_runs)
from pandas_dp.engines.pieces import merge_by_id, sum_arrays
from pandas_dp.engines.spark.frame import SparkFrame
from pandas_dp.engines.spark.partitions import collect, frames, map_in_arrow, packed
from pandas_dp.engines.spark.reduce import reduce_rows, selected

__all__ = ["count_groups", "public_sizes", "leaf_runs"]


def public_sizes(piece: pd.DataFrame, tree: RegionTree) -> np.ndarray:
    """Rows of one piece per position of the public Groups table (rows out of domain dropped)."""
    pos = public_group_positions(piece, tree)
    assert tree.group_ids is not None
    return np.bincount(pos[pos >= 0], minlength=len(tree.group_ids)).astype(np.int64)


def leaf_runs(leaf: np.ndarray, size: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(leaf, size, groups) runs of groups given by their leaf and size (one sort of the pairs)."""
    pairs = pd.DataFrame({"leaf": np.asarray(leaf, dtype=np.int64), "size": np.asarray(size, dtype=np.int64)})
    counted = pairs.value_counts(sort=False)
    return (counted.index.get_level_values("leaf").to_numpy(dtype=np.int64),
            counted.index.get_level_values("size").to_numpy(dtype=np.int64), counted.to_numpy(dtype=np.int64))


@dataclass(frozen=True)
class _Plan:
    """What every task needs (public)."""

    tree: RegionTree
    buckets: int
    one_leaf: bool


def _bucket_partition(batches: Iterator[pa.RecordBatch], plan: _Plan) -> Iterator[pa.RecordBatch]:
    """Partial (class, id, leaf, size) groups of one partition, one pickled cell per bucket (runs on an executor)."""
    for frame in frames(batches):
        groups, bucket = bucketed_groups(frame, plan.tree, plan.buckets, plan.one_leaf)
        for b in np.unique(bucket):
            cell = pickle.dumps(groups[bucket == b], protocol=pickle.HIGHEST_PROTOCOL)
            yield pa.RecordBatch.from_arrays([pa.array([int(b)], pa.int64()), pa.array([cell], pa.binary())],
                                             names=["bucket", "groups"])


def _runs_partition(batches: Iterator[pa.RecordBatch], one_leaf: bool) -> Iterator[pa.RecordBatch]:
    """The (leaf, size, groups) runs of the groups of the buckets in one partition (runs on an executor)."""
    parts = [pickle.loads(cell) for batch in batches for cell in batch.column(1).to_pylist()]
    if not parts:
        return
    groups = merge_by_id(parts, ["cls", "id", "leaf"], "size")
    if one_leaf and len(groups):
        leaves = groups.groupby(["cls", "id"], sort=False, observed=True)["leaf"].transform("nunique")
        groups = groups[leaves.to_numpy() == 1]
    yield packed(leaf_runs(groups["leaf"].to_numpy(dtype=np.int64), groups["size"].to_numpy(dtype=np.int64)))


def count_groups(persons: SparkFrame, tree: RegionTree, *, group_unit: bool = False) -> GroupTables:
    """Exact count-of-counts histograms of every region of ``tree``, counted on the executors.

    Equal to :func:`pandas_dp.engines.pandas.groups.count_groups` on the same rows; rows out of
    domain are dropped; nothing raises or warns on the rows' values.
    """
    n_leaves = len(tree.regions[-1])
    columns = [tree.group, *(c for c in tree.located if c != tree.group)]
    if tree.group_ids is not None:
        sizes = reduce_rows(persons, columns, public_sizes, tree, sum_arrays)
        node, size, count = leaf_runs(np.asarray(tree.group_leaf, dtype=np.int64), sizes)
        return tables_from_leaf_runs(tree, Runs.exact(node, size, count, n_leaves))
    spark, _ = selected(persons, columns)
    parallelism = int(spark.sparkSession.sparkContext.defaultParallelism)
    plan = _Plan(tree, max(parallelism, 1), group_unit)
    cells = map_in_arrow(spark, partial(_bucket_partition, plan=plan), "bucket long, groups binary")
    runs = collect(cells.repartition(plan.buckets, "bucket"), partial(_runs_partition, one_leaf=group_unit))
    empty = np.zeros(0, dtype=np.int64)
    node, size, count = (np.concatenate([r[i] for r in runs] or [empty]) for i in range(3))
    return tables_from_leaf_runs(tree, Runs.exact(node, size, count, n_leaves))
