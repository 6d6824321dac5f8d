"""A Spark DataFrame as the releases see it: pandas-like metadata from its schema, rows left in Spark.

The release functions read a frame's column labels (``frame.columns``) and, for
``categories="dtype"``, whether a column is a pandas ``Categorical``
(``frame[column].dtype``). :class:`SparkFrame` answers both from the Spark schema
without reading a row: the labels are the schema's field names and every dtype is the
numpy dtype the field's type maps to (Spark has no categorical type, so
``categories="dtype"`` is refused with the usual message). ``frame[column]`` is a
:class:`SparkColumn`, ``frame[[columns]]`` a :class:`SparkFrame` of those columns; the
Spark engine (:mod:`pandas_dp.engines.spark`) reads the rows of either.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["SparkFrame", "SparkColumn", "numpy_dtype", "quoted"]

#: Spark type name -> the numpy dtype a pandas frame of the same values would have (metadata only).
_DTYPES = {"ByteType": "int8", "ShortType": "int16", "IntegerType": "int32", "LongType": "int64",
           "FloatType": "float32", "DoubleType": "float64", "BooleanType": "bool",
           "TimestampType": "datetime64[us]", "TimestampNTZType": "datetime64[us]"}


def quoted(name: Any) -> str:
    """A column name as a Spark SQL identifier (back-quoted: dots and spaces in names stay part of the name)."""
    return "`" + str(name).replace("`", "``") + "`"


def numpy_dtype(spark_type: Any) -> np.dtype[Any]:
    """The numpy dtype standing for a Spark data type (``object`` for strings, dates, decimals and nested types)."""
    return np.dtype(_DTYPES.get(type(spark_type).__name__, "object"))


class SparkColumn:
    """One column of a :class:`SparkFrame` (its rows are read by the Spark engine only)."""

    def __init__(self, frame: SparkFrame, name: str) -> None:
        self.frame, self.name = frame, name

    @property
    def dtype(self) -> np.dtype[Any]:
        """The numpy dtype of the column's Spark type."""
        return self.frame.dtypes[self.name]

    def __repr__(self) -> str:
        return f"SparkColumn({self.name!r})"


class SparkFrame:
    """A ``pyspark.sql.DataFrame`` with the metadata the releases read (see the module docstring)."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self._fields = tuple(spark.schema.fields)

    @property
    def columns(self) -> pd.Index:
        """The column labels: the schema's field names."""
        return pd.Index([f.name for f in self._fields], dtype=object)

    @property
    def dtypes(self) -> pd.Series:
        """The numpy dtype of every column (:func:`numpy_dtype`)."""
        return pd.Series([numpy_dtype(f.dataType) for f in self._fields], index=self.columns, dtype=object)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, (list, tuple)):
            return SparkFrame(self.spark.select(*[quoted(k) for k in key]))
        return SparkColumn(self, key)

    def __repr__(self) -> str:
        return f"SparkFrame({', '.join(f'{f.name}: {f.dataType.simpleString()}' for f in self._fields)})"
