"""The pandas engine: counts, group rows, region counts and unit bounding on in-memory frames.

:class:`PandasEngine` is the :class:`~pandas_dp.engines.Engine` that
:func:`~pandas_dp.engines.engine_for` returns for a ``pandas.DataFrame``; its
methods are the functions of :mod:`.counts`, :mod:`.groups`, :mod:`.region_counts`
and :mod:`.bounding`, which stay importable for tests and benchmarks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.algorithms.marginals.workload import Marginal, Workload
from pandas_dp.domain.grid import Grid
from pandas_dp.domain.regions import RegionTree
from pandas_dp.engines.pandas import bounding, labels, counts, groups, region_counts, marginals, region_marginals
from pandas_dp.domain.label_text import labels_and_codes
from pandas_dp.privacy.units import UnitBounds

__all__ = ["PandasEngine", "PANDAS_ENGINE"]


class PandasEngine:
    """Every operation a release asks of an engine, on a ``pandas.DataFrame`` (see :class:`~pandas_dp.engines.Engine`)."""

    name = "pandas"

    def bin_counts(self, frame: pd.DataFrame, grid: Grid) -> np.ndarray:
        return counts.bin_counts(frame, grid)

    def group_counts(self, values: pd.Series, ids: pd.Index | None) -> np.ndarray:
        return counts.group_counts(values, ids)

    def coded_rows(self, frame: pd.DataFrame, grid: Grid, bounds: UnitBounds) -> bounding.CodedRows:
        return bounding.coded_rows(frame, grid, bounds)

    def coded_group_rows(self, frame: pd.DataFrame, group: Any, ids: pd.Index | None,
                         bounds: UnitBounds) -> bounding.CodedRows:
        return bounding.coded_group_rows(frame, group, ids, bounds)

    def count_groups(self, persons: pd.DataFrame, tree: RegionTree, *, group_unit: bool = False) -> groups.GroupTables:
        return groups.count_groups(persons, tree, group_unit=group_unit)

    def region_bin_counts(self, frame: pd.DataFrame, tree: RegionTree, grid: Grid) -> list[np.ndarray]:
        return region_counts.region_bin_counts(frame, tree, grid)

    def coded_region_rows(self, frame: pd.DataFrame, tree: RegionTree, grid: Grid,
                          bounds: UnitBounds) -> bounding.CodedRows:
        return region_counts.coded_region_rows(frame, tree, grid, bounds)

    def marginal_counts(self, frame: Any, dims: Sequence[Grid], workload: Workload) -> dict[Marginal, np.ndarray]:
        return marginals.marginal_counts(frame, dims, workload)

    def coded_marginal_rows(self, frame: Any, dims: Sequence[Grid], workload: Workload,
                            bounds: UnitBounds) -> marginals.CodedMarginalRows:
        return marginals.coded_marginal_rows(frame, dims, workload, bounds)

    def region_marginal_counts(self, frame: Any, tree: RegionTree, dims: Sequence[Grid],
                               workload: Workload) -> dict[Marginal, np.ndarray]:
        return region_marginals.region_marginal_counts(frame, tree, dims, workload)

    def coded_region_marginal_rows(self, frame: Any, tree: RegionTree, dims: Sequence[Grid], workload: Workload,
                                   bounds: UnitBounds) -> marginals.CodedMarginalRows:
        return region_marginals.coded_region_marginal_rows(frame, tree, dims, workload, bounds)

    def label_counts(self, frame: pd.DataFrame, column: Any, bounds: UnitBounds | None = None,
                     key: bytes = b"") -> tuple[np.ndarray, np.ndarray]:
        if bounds is None:
            return labels.label_counts(frame[column])
        found = labels_and_codes(frame[column])[0]
        return labels.bounded_label_counts(frame, column, found, bounds, key, self.coded_rows)

    def __repr__(self) -> str:
        return "PandasEngine()"


#: The one pandas engine (stateless).
PANDAS_ENGINE = PandasEngine()
