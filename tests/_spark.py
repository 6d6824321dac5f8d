"""A local Spark session for the Spark engine's tests (one per test process), and pandas frames moved into it.

Every Spark test is slow (``@pytest.mark.slow``: Spark's local start takes about 10 s) and is
skipped without pyspark or without a Java runtime. The session runs ``local[2]`` with two
shuffle partitions and no UI; its Python workers run this interpreter (``PYSPARK_PYTHON``).
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
import warnings
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest


def java_found() -> bool:
    """Whether a Java runtime is on PATH or under JAVA_HOME."""
    home = os.environ.get("JAVA_HOME")
    return shutil.which("java") is not None or bool(home and os.path.exists(os.path.join(home, "bin", "java")))


@functools.lru_cache(maxsize=1)
def _session() -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spark = (SparkSession.builder.master("local[2]").appName("pandas_dp-tests")
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "2")
                 .config("spark.default.parallelism", "2").config("spark.sql.session.timeZone", "UTC")
                 .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def spark_session() -> Any:
    """The test process's local Spark session (skips the test without pyspark or Java)."""
    pytest.importorskip("pyspark")
    if not java_found():
        pytest.skip("no Java runtime for Spark")
    return _session()


def _one_type(frame: pd.DataFrame) -> pd.DataFrame:
    """Object columns that mix value types (a word among numbers) as text, as a Spark reader types them."""
    out = frame.copy()
    for column in out.columns:
        values = out[column]
        if values.dtype == object and len({type(v) for v in values[values.notna()]}) > 1:
            out[column] = pd.Series([None if pd.isna(v) else str(v) for v in values], dtype=object, index=out.index)
    return out


def to_spark(frame: pd.DataFrame, partitions: int | None = None) -> Any:
    """``frame`` as a Spark DataFrame (rows in order; ``partitions`` contiguous slices when given).

    A Spark column has one type: an object column mixing value types becomes a text column.
    """
    spark = spark_session()
    frame = _one_type(frame)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = spark.createDataFrame(pa.Table.from_pandas(frame, preserve_index=False))
    if partitions is not None:
        # Contiguous slices in order (a range partitioning of the row positions, sorted in each), so every row
        # keeps the position it has in the pandas frame.
        at = "__position__"
        numbered = spark.createDataFrame(pa.Table.from_pandas(frame.assign(**{at: range(len(frame))}),
                                                              preserve_index=False))
        out = numbered.repartitionByRange(partitions, at).sortWithinPartitions(at).drop(at)
    return out
