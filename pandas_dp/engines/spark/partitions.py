"""Running a pandas function on every partition of a Spark frame, on the executors; only its result comes back.

Every partition's rows arrive as Arrow record batches (``DataFrame.mapInArrow``: no Python
object per row, and no use of pyspark's own pandas conversion). :func:`frames` joins a
partition's batches into pandas frames of at most :data:`CHUNK_ROWS` rows (converted by
pyarrow), the pieces the features' public functions count; :func:`collect` runs a
per-partition function that yields each partition's partial result pickled in one binary
cell, and unpickles the few cells on the driver. A failure of the frame's own plan (a source
that cannot be read, a user function that raises) is reported as
:class:`~pandas_dp.errors.DataSourceError` without its text, which may quote private values.
"""

from __future__ import annotations

import pickle
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pandas as pd
import pyarrow as pa

from pandas_dp._utils.optional import import_optional
from pandas_dp.engines.withheld import Source, withheld

__all__ = ["CHUNK_ROWS", "frames", "table_frame", "packed", "collect", "guarded", "spark_functions", "RESULT", "map_in_arrow"]

#: Rows per pandas piece: a partition's Arrow batches are joined up to this many rows, then converted.
CHUNK_ROWS = 1 << 20
#: The schema of a partial result: one pickled object per cell.
RESULT = "r binary"


def spark_functions() -> Any:
    """``pyspark.sql.functions``, or the error naming the ``spark`` extra."""
    return import_optional("pyspark.sql.functions", extra="spark", purpose="Counting a Spark DataFrame")


def table_frame(batches: list[pa.RecordBatch], schema: pa.Schema | None = None) -> pd.DataFrame:
    """Record batches as one pandas frame (pyarrow's conversion: the dtypes a pandas reader would give)."""
    table = pa.Table.from_batches(batches, schema=schema) if batches or schema is None else schema.empty_table()
    return table.to_pandas()


def frames(batches: Iterator[pa.RecordBatch], rows: int = CHUNK_ROWS) -> Iterator[pd.DataFrame]:
    """A partition's rows as pandas frames of at most about ``rows`` rows each (empty batches skipped)."""
    held: list[pa.RecordBatch] = []
    n = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        held.append(batch)
        n += batch.num_rows
        if n >= rows:
            yield table_frame(held)
            held, n = [], 0
    if held:
        yield table_frame(held)


def packed(obj: Any) -> pa.RecordBatch:
    """One partial result as a record batch of one binary cell (the schema :data:`RESULT`)."""
    return pa.RecordBatch.from_arrays([pa.array([pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)],
                                                pa.binary())], names=["r"])


#: The Spark frame's failures, withheld (:mod:`pandas_dp.engines.withheld`).
SPARK_SOURCE = Source("Computing the Spark frame", "inside its own plan",
                      "a file that cannot be read, or a function of the frame that raises",
                      "run the frame outside pandas_dp")


def guarded(step: Callable[[], Any]) -> Any:
    """Run a Spark action on the user's frame; any failure becomes :class:`~pandas_dp.errors.DataSourceError` without its text."""
    return withheld(step, SPARK_SOURCE)


def map_in_arrow(spark: Any, per_partition: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]],
                 schema: str) -> Any:
    """``spark.mapInArrow(per_partition, schema)`` (lazy).

    pyspark warns on every ``mapInArrow`` under pandas 3 that it does not fully support it (a
    warning about pyspark's own pandas conversion, which this engine does not use: pyarrow converts
    the batches), so that one warning is silenced here.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
        return spark.mapInArrow(per_partition, schema)


def collect(spark: Any, per_partition: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]) -> list[Any]:
    """The unpickled partial results that ``per_partition`` yields (:func:`packed`) on every partition of ``spark``."""
    mapped = map_in_arrow(spark, per_partition, RESULT)
    rows = guarded(lambda: mapped.collect())
    return [pickle.loads(row[0]) for row in rows]
