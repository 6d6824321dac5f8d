"""The Dask engine: exact counts of a Dask frame's rows on a public domain, computed as Dask tasks.

Every partition is coded and counted where it lives (values -> bin codes ->
``np.bincount``, the pandas engine's code applied to one pandas partition),
then the per-partition count arrays are summed in a tree of fan-in
``split_every``. Only the aggregated count array (the size of the public
domain) comes back to the client, never rows. Validation reads metadata only
(column names and dtypes).

Releases get the Dask engine (:class:`pandas_dp.engines.dask.DaskEngine`, whose
methods call these functions) from :func:`pandas_dp.engines.engine_for` when the
frame is a ``dask.dataframe`` collection; the counts are identical to those of
the equivalent pandas frame, so a seeded ``rng`` gives identical releases.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp._utils.optional import import_optional
from pandas_dp.domain.grid import CategoryDomain, Grid
from pandas_dp.domain.labels import factorize, value_classes
from pandas_dp.errors import DataSourceError, DomainError
import pandas_dp.engines.pandas.counts as pandas_engine
from pandas_dp.engines.dask.sources import readable

__all__ = ["bin_counts", "merge_by_id", "compute_private", "partitions", "check_known_categories", "tree_sum", "sum_arrays",
           "share", "group_counts", "dask_module", "SPLIT_EVERY"]

SPLIT_EVERY = 8


def dask_module() -> Any:
    return import_optional("dask", extra="dask", purpose="Counting a Dask DataFrame")


def _unknown_categories_label() -> str:
    utils = import_optional("dask.dataframe.utils", extra="dask", purpose="Counting a Dask DataFrame")
    return str(utils.UNKNOWN_CATEGORIES)


def check_known_categories(frame: Any, grid: Grid) -> None:
    """Raise DomainError when a categorical dimension took Dask's unknown-categories placeholder as domain.

    A Dask categorical column whose categories are unknown (e.g. after
    ``astype("category")``) has no public domain in its dtype; finding the
    categories would scan the data (``.cat.as_known()``), which this library
    never does. Passing ``categories=`` gives the domain explicitly.
    """
    placeholder = _unknown_categories_label()
    for dim in grid.dims:
        if not isinstance(dim, CategoryDomain):
            continue
        dtype = frame[dim.column].dtype
        if not isinstance(dtype, pd.CategoricalDtype):
            continue
        known = not (len(dtype.categories) == 1 and str(dtype.categories[0]) == placeholder)
        if not known and list(map(str, dim.labels)) == [placeholder]:
            raise DomainError(
                f"Column {dim.column!r} of the Dask frame is Categorical with unknown categories, so its dtype "
                f"holds no public domain. Pass categories=[...] with every possible label (public knowledge). "
                f"pandas_dp never calls .cat.as_known(), which would read the categories from the data."
            )


def sum_arrays(*arrays: np.ndarray) -> np.ndarray:
    """Element-wise sum of equally shaped count arrays (one node of the reduction tree)."""
    total = np.array(arrays[0], dtype=np.int64, copy=True)
    for more in arrays[1:]:
        total += more
    return total


def share(obj: Any) -> Any:
    """``obj`` as one graph input that every task can use, shipped once per worker.

    On a ``distributed`` scheduler large public objects (bin edges, the
    Groups index) are scattered to the workers (broadcast) instead of being
    embedded in the task graph; on local schedulers they are a Delayed leaf.
    """
    dask = dask_module()
    scheduler = dask.base.get_scheduler()
    client = getattr(scheduler, "__self__", None)
    if client is not None and hasattr(client, "scatter"):
        return client.scatter(obj, broadcast=True, hash=False)
    return dask.delayed(obj, traverse=False)


def tree_sum(parts: Sequence[Any], *, split_every: int = SPLIT_EVERY,
             combine: Callable[..., Any] = sum_arrays) -> Any:
    """One Delayed: ``combine`` applied in a tree of fan-in ``split_every`` over Delayed ``parts``.

    The tree has ``ceil(log_split_every(len(parts)))`` levels, so no task holds
    more than ``split_every`` partial results at once.
    """
    dask = dask_module()
    if split_every < 2:
        raise ValueError(f"split_every must be at least 2. Got {split_every}.")
    if not parts:
        raise ValueError("tree_sum needs at least one part (a Dask frame has at least one partition).")
    node = dask.delayed(combine, pure=True)
    level = list(parts)
    if len(level) == 1:
        return node(level[0])
    while len(level) > 1:
        level = [node(*level[i:i + split_every]) for i in range(0, len(level), split_every)]
    return level[0]


def _partition_counts(partition: pd.DataFrame, grid: Grid) -> np.ndarray:
    """Exact flat int64 counts of one pandas partition (runs on a worker)."""
    return pandas_engine.bin_counts(partition, grid).reshape(-1)


def bin_counts(frame: Any, grid: Grid, *, split_every: int = SPLIT_EVERY) -> np.ndarray:
    """Exact int64 counts of the rows of a Dask ``frame`` in every cell of ``grid`` (shape ``grid.shape``).

    Parameters
    ----------
    frame : dask.dataframe.DataFrame
        Only the grid's columns are read (column projection reaches a Parquet reader).
    grid : Grid
        The public domain.
    split_every : int
        Fan-in of the reduction tree.

    Returns
    -------
    numpy.ndarray
        The counts; the only data that reaches the client.

    Raises
    ------
    DomainError
        A categorical column with unknown categories and no ``categories=``.

    Notes
    -----
    ``counts = sum_p bincount(codes(partition_p))``: the per-partition counts
    are summed exactly in int64, so the result equals the pandas engine's
    count of the concatenated partitions.
    """
    dask = dask_module()
    check_known_categories(frame, grid)
    parts = partitions(frame[list(grid.columns)])
    shared_grid = share(grid)
    count = dask.delayed(_partition_counts, pure=True)
    total = tree_sum([count(p, shared_grid) for p in parts], split_every=split_every)
    return np.asarray(compute_private(total), dtype=np.int64).reshape(grid.shape)


def compute_private(task: Any) -> Any:
    """``task.compute()``, with any failure of the frame's own graph reported without its text."""
    return _guarded(task.compute)


def partitions(collection: Any) -> list[Any]:
    """The Delayed partitions of a Dask collection (graph optimised), guarded like :func:`compute_private`.

    Every CSV read in the collection's graph reads its numeric columns as text and converts them
    value by value (:func:`pandas_dp.engines.dask.sources.readable`): a private token in a numeric
    column is out of domain, dropped, instead of making the graph fail.
    """
    return _guarded(lambda: readable(collection).to_delayed(optimize_graph=True))


def _guarded(step: Callable[[], Any]) -> Any:
    """Run a step of the user's Dask graph; a failure becomes :class:`~pandas_dp.errors.DataSourceError`.

    Counting never raises on a private value, but the user's graph upstream of it can (a CSV
    whose column types differ between files, a failing read, an object column Dask cannot turn
    into strings): that error's message may quote a private value, so it is replaced (nothing
    has been charged at this step; compute the frame outside pandas_dp to see the original
    error). Such a frame cannot be released at all: computing it fails with or without pandas_dp.
    """
    try:
        return step()
    except Exception:  # noqa: BLE001 - any failure of the user's graph
        pass
    # Raised outside the handler, so the original error is not even kept as the context.
    raise DataSourceError(
        "Computing the Dask frame failed inside its own graph (for example files whose columns have "
        "different types, or a file that cannot be read). Its error is withheld because its text may "
        "quote private values; compute the frame outside pandas_dp to see it. Nothing was charged.")


def _partition_group_counts(values: pd.Series, ids: pd.Index) -> np.ndarray:
    """Rows per public id of one partition (``pandas`` engine rules: other ids are dropped)."""
    return pandas_engine.group_counts(values, ids)


def _partition_id_counts(values: pd.Series) -> pd.DataFrame:
    """Rows per id of one partition: (class, id, count), missing and non-plain ids dropped."""
    codes = factorize(values)
    present = codes >= 0
    counts = np.bincount(codes[present]).astype(np.int64)
    first = np.zeros(counts.size, dtype=np.int64)
    first[codes[present]] = np.flatnonzero(present)  # any row of an id will do
    ids = values.take(first)
    # The class (boolean, number, string...) goes with the id: a boolean never merges with a number.
    return pd.DataFrame({"cls": value_classes(ids), "id": ids.to_numpy(), "count": counts})


def merge_by_id(parts: Sequence[pd.DataFrame], keys: list[str], value: str) -> pd.DataFrame:
    """Merge partial sums per id: the ``value`` of rows with equal ``keys`` (class, id, ...) add up.

    Partitions may hold the ids in different dtypes (one odd row makes a
    partition's column ``object``); they are then merged as objects, by
    value, never cast to a common numeric type that could merge distinct ids.
    """
    found = [p for p in parts if len(p)]
    if not found:
        return parts[0]
    if len({str(p["id"].dtype) for p in found}) > 1:
        found = [p.astype({"id": object}) for p in found]
    both = pd.concat(found, ignore_index=True)
    return both.groupby(keys, sort=False, observed=True, as_index=False)[value].sum()


def _merge_id_counts(*parts: pd.DataFrame) -> pd.DataFrame:
    """Merge per-id counts: equal (class, id) add up, by value (ids of different dtypes compared as objects)."""
    return merge_by_id(parts, ["cls", "id"], "count")


def group_counts(values: Any, ids: pd.Index | None, *, split_every: int = SPLIT_EVERY) -> np.ndarray:
    """Rows per group of a Dask Series: on the public ids ``ids`` (in their order), or per present group.

    With ``ids``, rows of other groups are dropped and the result is aligned
    with ``ids`` (per-partition ``bincount`` of the positions, tree-summed).
    Without, the row counts of the groups present, in no particular order:
    per-partition counts per id merged in a reduction tree; only the counts
    come back to the client, not the ids. The rules for odd ids are the
    pandas engine's (nothing raises or warns on a value).

    Parameters
    ----------
    values : dask.dataframe.Series
        Group id of every row.
    ids : pandas.Index or None
        The public group ids, or None.
    split_every : int
        Fan-in of the reduction tree.

    Returns
    -------
    numpy.ndarray
        int64 counts, equal (up to order when ``ids`` is None) to the pandas
        engine's ``group_counts``.
    """
    dask = dask_module()
    parts = partitions(values)
    if ids is not None:
        shared = share(ids)
        count = dask.delayed(_partition_group_counts, pure=True)
        total = tree_sum([count(p, shared) for p in parts], split_every=split_every)
        return np.asarray(compute_private(total), dtype=np.int64)
    per_id = dask.delayed(_partition_id_counts, pure=True)
    merged = tree_sum([per_id(p) for p in parts], split_every=split_every, combine=_merge_id_counts)
    return np.asarray(compute_private(dask.delayed(_counts_array, pure=True)(merged)), dtype=np.int64)


def _counts_array(sizes: pd.DataFrame) -> np.ndarray:
    """The counts of a per-id count frame, without the group ids."""
    return sizes["count"].to_numpy(dtype=np.int64)
