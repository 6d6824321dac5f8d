"""The ``.dp`` accessor on Spark DataFrames (extra ``spark``).

``pyspark.sql.DataFrame.dp`` has the methods of ``pandas.DataFrame.dp`` (same parameters,
errors and results): the accessor hands the release functions the Spark frame wrapped in a
:class:`~pandas_dp.engines.spark.frame.SparkFrame` (column labels and dtypes from the schema, no
row read), and :func:`pandas_dp.engines.engine_for` returns the Spark engine for it, which counts
on the executors and returns only the aggregated counts. Spark has no Series, so there is no
``Column.dp``. Importing :mod:`pandas_dp` registers these when ``pyspark.sql`` imports.
"""

from __future__ import annotations

from typing import Any

from pandas_dp._utils.optional import import_optional
from pandas_dp.accessors.pandas import DataFrameDPAccessor
from pandas_dp.engines import Engine, register_engine
from pandas_dp.engines.spark import SPARK_ENGINE, SparkFrame

__all__ = ["SparkDataFrameDPAccessor"]

_sql = import_optional("pyspark.sql", extra="spark", purpose="The .dp accessor on Spark frames")


def _spark_engine() -> Engine:
    return SPARK_ENGINE


register_engine(SparkFrame, _spark_engine)


class SparkDataFrameDPAccessor(DataFrameDPAccessor):
    """``pyspark.sql.DataFrame.dp``: the releases of ``pandas.DataFrame.dp``, counted by Spark."""

    def _frame(self) -> Any:
        return SparkFrame(self._obj)


class _Accessor:
    """The ``dp`` attribute of a Spark DataFrame: a fresh :class:`SparkDataFrameDPAccessor` of the frame."""

    def __get__(self, frame: Any, owner: type | None = None) -> Any:
        if frame is None:
            return SparkDataFrameDPAccessor
        return SparkDataFrameDPAccessor(frame)


_sql.DataFrame.dp = _Accessor()
