"""The Dask engine: the primitives partition by partition; only counts come back to the client.

:class:`DaskEngine` is the :class:`~pandas_dp.engines.Engine` that
:func:`~pandas_dp.engines.engine_for` returns for a ``dask.dataframe`` collection
(registered by :mod:`pandas_dp.accessors.dask` when Dask imports): the features written
once (:class:`~pandas_dp.engines.features.CountingEngine`) over :class:`DaskPrimitives`,
whose pieces are the partitions, counted with the pandas kernels where they live and
combined in reduction trees (:mod:`.graph`); the unit path bounds every partition, then gathers the surviving rows by unit
(:mod:`.shuffle`). Its results equal the pandas engine's on the same rows, so a seeded
``rng`` gives identical releases. Importing this package does not import Dask: its modules
load it on first use through :func:`pandas_dp._utils.optional.import_optional`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pandas_dp.domain.grid import Grid
from pandas_dp.domain.geography import RegionTree
from pandas_dp.engines.dask import groups, labels
from pandas_dp.engines.dask.graph import (SPLIT_EVERY, check_known_categories, compute_private, dask_module, partitions,
                                          share, tree_sum)
from pandas_dp.engines.dask.shuffle import DaskUnitRows
from pandas_dp.engines.features import CountingEngine
from pandas_dp.engines.pandas.groups import GroupTables

__all__ = ["DaskEngine", "DaskPrimitives", "DASK_ENGINE"]


class DaskPrimitives:
    """The primitives on a Dask collection: every partition is a piece; reduction trees of fan-in ``split_every``."""

    name = "dask"

    def __init__(self, split_every: int = SPLIT_EVERY) -> None:
        self.split_every = split_every

    def check_domain(self, frame: Any, grid: Grid) -> None:
        check_known_categories(frame, grid)

    def reduce(self, data: Any, columns: Sequence[Any] | None, count: Callable[[Any, Any], Any], public: Any,
               combine: Callable[..., Any], finish: Callable[[Any], Any] | None = None) -> Any:
        dask = dask_module()
        parts = partitions(data if columns is None else data[list(columns)])
        run = dask.delayed(count, pure=True)
        shared = share(public) if public is not None else None
        total = tree_sum([run(p, shared) for p in parts], split_every=self.split_every, combine=combine)
        if finish is not None:
            total = dask.delayed(finish, pure=True)(total)
        return compute_private(total)

    def unit_rows(self, frame: Any, columns: Sequence[Any], code: Callable[[Any, Any], Sequence[np.ndarray]],
                  public: Any, unit: Any, *, hashes: bool, n_codes: int) -> DaskUnitRows:
        # The unit hashes always travel: the rows meet by them.
        return DaskUnitRows(frame, columns, code, public, unit, n_codes, self.split_every)

    def label_counts(self, values: Any) -> tuple[np.ndarray, np.ndarray]:
        return labels.label_counts(values)

    def count_groups(self, persons: Any, tree: RegionTree, *, group_unit: bool = False) -> GroupTables:
        return groups.count_groups(persons, tree, split_every=self.split_every, group_unit=group_unit)


class DaskEngine(CountingEngine):
    """Every operation a release asks of an engine, on a Dask frame (see :class:`~pandas_dp.engines.Engine`).

    ``split_every``: fan-in of the reduction trees.
    """

    def __init__(self, split_every: int = SPLIT_EVERY) -> None:
        super().__init__(DaskPrimitives(split_every))

    def __repr__(self) -> str:
        return "DaskEngine()"


#: The one Dask engine (stateless).
DASK_ENGINE = DaskEngine()
