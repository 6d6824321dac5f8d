"""The Dask graph plumbing of the engine's primitives: partitions, shared public inputs, reduction trees.

Every partition is read where it lives (``to_delayed``), public objects are shipped once per
worker (:func:`share`), partial results are combined in a tree of fan-in ``split_every``
(:func:`tree_sum`), and only the combined result is computed to the client
(:func:`compute_private`, which withholds the text of a failure of the frame's own graph).
Validation reads metadata only (:func:`check_known_categories`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from pandas_dp._utils.optional import import_optional
from pandas_dp.domain.grid import CategoryDomain, Grid
from pandas_dp.errors import DomainError
from pandas_dp.engines.dask.sources import readable
from pandas_dp.engines.pieces import sum_arrays
from pandas_dp.engines.withheld import Source, withheld

__all__ = ["compute_private", "partitions", "check_known_categories", "tree_sum", "share", "dask_module", "SPLIT_EVERY"]

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


#: The Dask frame's failures, withheld (:mod:`pandas_dp.engines.withheld`).
DASK_SOURCE = Source("Computing the Dask frame", "inside its own graph",
                     "files whose columns have different types, or a file that cannot be read",
                     "compute the frame outside pandas_dp")


def _guarded(step: Callable[[], Any]) -> Any:
    """Run a step of the user's Dask graph; a failure becomes :class:`~pandas_dp.errors.DataSourceError`.

    The user's graph upstream of the counting can fail (a CSV whose column types differ between
    files, a failing read, an object column Dask cannot turn into strings): see
    :func:`~pandas_dp.engines.withheld.withheld`.
    """
    return withheld(step, DASK_SOURCE)
