"""The Dask engine: the same operations as the pandas engine, partition by partition.

:class:`DaskEngine` is the :class:`~pandas_dp.engines.Engine` that
:func:`~pandas_dp.engines.engine_for` returns for a ``dask.dataframe`` collection
(registered by :mod:`pandas_dp.accessors.dask` when Dask imports). Its results
equal the pandas engine's on the same rows, so a seeded ``rng`` gives identical
releases. Importing this package does not import Dask: its modules load it on
first use through :func:`pandas_dp._utils.optional.import_optional`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.algorithms.marginals.workload import Marginal, Workload
from pandas_dp.domain.grid import Grid
from pandas_dp.domain.regions import RegionTree
from pandas_dp.engines.dask import bounding, labels, counts, groups, region_counts, marginals, region_marginals
from pandas_dp.engines.pandas.groups import GroupTables
from pandas_dp.engines.pandas.labels import bounded_label_counts
from pandas_dp.privacy.units import UnitBounds

__all__ = ["DaskEngine", "DASK_ENGINE"]


class DaskEngine:
    """Every operation a release asks of an engine, on a Dask frame (see :class:`~pandas_dp.engines.Engine`)."""

    name = "dask"

    def bin_counts(self, frame: Any, grid: Grid) -> np.ndarray:
        return counts.bin_counts(frame, grid)

    def group_counts(self, values: Any, ids: pd.Index | None) -> np.ndarray:
        return counts.group_counts(values, ids)

    def coded_rows(self, frame: Any, grid: Grid, bounds: UnitBounds) -> bounding.DaskCodedRows:
        return bounding.coded_rows(frame, grid, bounds)

    def coded_group_rows(self, frame: Any, group: Any, ids: pd.Index | None,
                         bounds: UnitBounds) -> bounding.DaskCodedGroupRows:
        return bounding.coded_group_rows(frame, group, ids, bounds)

    def count_groups(self, persons: Any, tree: RegionTree, *, group_unit: bool = False) -> GroupTables:
        return groups.count_groups(persons, tree, group_unit=group_unit)

    def region_bin_counts(self, frame: Any, tree: RegionTree, grid: Grid) -> list[np.ndarray]:
        return region_counts.region_bin_counts(frame, tree, grid)

    def coded_region_rows(self, frame: Any, tree: RegionTree, grid: Grid,
                          bounds: UnitBounds) -> region_counts.DaskCodedRegionRows:
        return region_counts.coded_region_rows(frame, tree, grid, bounds)

    def marginal_counts(self, frame: Any, dims: Sequence[Grid], workload: Workload) -> dict[Marginal, np.ndarray]:
        return marginals.marginal_counts(frame, dims, workload)

    def coded_marginal_rows(self, frame: Any, dims: Sequence[Grid], workload: Workload,
                            bounds: UnitBounds) -> marginals.DaskCodedMarginalRows:
        return marginals.coded_marginal_rows(frame, dims, workload, bounds)

    def region_marginal_counts(self, frame: Any, tree: RegionTree, dims: Sequence[Grid],
                               workload: Workload) -> dict[Marginal, np.ndarray]:
        return region_marginals.region_marginal_counts(frame, tree, dims, workload)

    def coded_region_marginal_rows(self, frame: Any, tree: RegionTree, dims: Sequence[Grid], workload: Workload,
                                   bounds: UnitBounds) -> region_marginals.DaskCodedRegionMarginalRows:
        return region_marginals.coded_region_marginal_rows(frame, tree, dims, workload, bounds)

    def label_counts(self, frame: Any, column: Any, bounds: UnitBounds | None = None,
                     key: bytes = b"") -> tuple[np.ndarray, np.ndarray]:
        found, counts = labels.label_counts(frame[column])
        if bounds is None:
            return found, counts
        return bounded_label_counts(frame, column, found, bounds, key, self.coded_rows)

    def __repr__(self) -> str:
        return "DaskEngine()"


#: The one Dask engine (stateless).
DASK_ENGINE = DaskEngine()
