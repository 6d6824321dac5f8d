"""The Spark engine: the primitives partition by partition on the executors; only counts reach the driver.

:class:`SparkEngine` is the :class:`~pandas_dp.engines.Engine` that
:func:`~pandas_dp.engines.engine_for` returns for a :class:`~pandas_dp.engines.spark.frame.SparkFrame`
(the ``.dp`` accessor of a ``pyspark.sql.DataFrame`` wraps the frame in one; registered by
:mod:`pandas_dp.accessors.spark` when ``pyspark.sql`` imports): the features written once
(:class:`~pandas_dp.engines.features.CountingEngine`) over :class:`SparkPrimitives`, whose pieces
are the partitions' Arrow batches converted to pandas and counted with the pandas kernels on the
executors (:mod:`.reduce`), but for the histogram's counts on numeric bins, which Spark computes
itself (:mod:`.pushdown`);
the unit path repartitions the coded rows by unit (:mod:`.units`). Its results equal the pandas
engine's on the same rows, so a seeded ``rng`` gives identical releases. Importing this package
does not import pyspark: its modules load it on first use through
:func:`pandas_dp._utils.optional.import_optional`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pandas_dp.domain.grid import Grid
from pandas_dp.domain.geography import RegionTree
from pandas_dp.engines import pieces
from pandas_dp.engines.features import CountingEngine
from pandas_dp.engines.pandas.groups import GroupTables
from pandas_dp.engines.spark import groups, labels, pushdown
from pandas_dp.engines.spark.frame import SparkColumn, SparkFrame
from pandas_dp.engines.spark.reduce import reduce_rows
from pandas_dp.engines.spark.units import SparkUnitRows

__all__ = ["SparkEngine", "SparkPrimitives", "SPARK_ENGINE", "SparkFrame", "SparkColumn"]


class SparkPrimitives:
    """The primitives on a Spark frame: every partition is read where it lives, in pieces of Arrow batches."""

    name = "spark"

    def check_domain(self, frame: Any, grid: Grid) -> None:
        return None  # Spark has no categorical type: a domain always comes from the arguments

    def reduce(self, data: Any, columns: Sequence[Any] | None, count: Callable[[Any, Any], Any], public: Any,
               combine: Callable[..., Any], finish: Callable[[Any], Any] | None = None) -> Any:
        if count is pieces.flat_bin_counts and finish is None and pushdown.pushable(data, public):
            return pushdown.bin_counts(data, public)  # the histogram's hot path, counted by Spark itself
        return reduce_rows(data, columns, count, public, combine, finish)

    def unit_rows(self, frame: Any, columns: Sequence[Any], code: Callable[[Any, Any], Sequence[np.ndarray]],
                  public: Any, unit: Any, *, hashes: bool, n_codes: int) -> SparkUnitRows:
        # The unit hashes always travel: the repartition is keyed by them.
        return SparkUnitRows(frame, columns, code, public, unit, n_codes)

    def label_counts(self, values: Any) -> tuple[np.ndarray, np.ndarray]:
        return labels.label_counts(values)

    def count_groups(self, persons: Any, tree: RegionTree, *, group_unit: bool = False) -> GroupTables:
        return groups.count_groups(persons, tree, group_unit=group_unit)


class SparkEngine(CountingEngine):
    """Every operation a release asks of an engine, on a Spark frame (see :class:`~pandas_dp.engines.Engine`)."""

    def __init__(self) -> None:
        super().__init__(SparkPrimitives())

    def __repr__(self) -> str:
        return "SparkEngine()"


#: The one Spark engine (stateless).
SPARK_ENGINE = SparkEngine()
