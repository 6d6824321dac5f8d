"""The Spark reduce primitive: every partition counted by a pandas function on the executors, partial counts combined.

Each partition's rows (the columns read only) arrive as Arrow batches, are joined into pandas
pieces (:func:`~pandas_dp.engines.spark.partitions.frames`) and counted by the feature's public
function; the counts of one partition are combined there, and only the partition's combined
count (a public-size array or table, pickled in one cell) reaches the driver, which combines the
few of them. A frame without rows is counted as one empty piece, so the result has its shape.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any

import pyarrow as pa

from pandas_dp.engines.spark.frame import SparkColumn, quoted
from pandas_dp.engines.spark.partitions import collect, frames, guarded, packed

__all__ = ["reduce_rows", "selected"]


def selected(data: Any, columns: Sequence[Any] | None) -> tuple[Any, Any]:
    """The Spark frame of the columns read, and the one column's name when ``data`` is a column (else None)."""
    if isinstance(data, SparkColumn):
        return data.frame.spark.select(quoted(data.name)), data.name
    return (data.spark if columns is None else data.spark.select(*[quoted(c) for c in columns])), None


def _partition(batches: Iterator[pa.RecordBatch], count: Callable[[Any, Any], Any], public: Any,
               combine: Callable[..., Any], column: Any) -> Iterator[pa.RecordBatch]:
    """One partition's combined count (runs on an executor; nothing when the partition has no rows)."""
    total = None
    for frame in frames(batches):
        part = count(frame if column is None else frame[column], public)
        total = part if total is None else combine(total, part)
    if total is not None:
        yield packed(total)


def reduce_rows(data: Any, columns: Sequence[Any] | None, count: Callable[[Any, Any], Any], public: Any,
                combine: Callable[..., Any], finish: Callable[[Any], Any] | None = None) -> Any:
    """``finish(combine(count(piece, public) for every piece))`` over a :class:`SparkFrame` or :class:`SparkColumn`."""
    spark, column = selected(data, columns)
    parts = collect(spark, partial(_partition, count=count, public=public, combine=combine, column=column))
    if not parts:
        empty = guarded(lambda: spark.limit(0).toArrow()).to_pandas()
        parts = [count(empty if column is None else empty[column], public)]
    total = parts[0] if len(parts) == 1 else combine(*parts)
    return total if finish is None else finish(total)
