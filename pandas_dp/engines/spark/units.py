"""The Spark unit-rows primitive: rows coded where they live, repartitioned so that each unit's rows meet.

Every partition codes its rows with the feature's pandas function and adds the canonical
64-bit hash of every row's unit (:func:`~pandas_dp.engines.pandas.bounding.unit_hashes`) and
the row's global position; the coded rows (integers only) are repartitioned by the unit hash,
so each unit's rows sit in one partition. Each such partition is one
:class:`~pandas_dp.engines.primitives.Piece`: the feature's step bounds its units and counts
there, and only the partial counts reach the driver.

Positions. Row keys are a pseudorandom function of a row's position, so the Spark engine keeps
the rows the pandas engine keeps when it numbers the rows as pandas does: partition by
partition, in each partition's order. The lengths of the partitions are counted first (one job over
the columns read), then every partition numbers its rows from its offset.
This needs the frame's partitioning and row order to be deterministic (the same in both jobs),
as they are for files, tables and frames built from local data; for a frame whose order is not
(after a shuffle without a sort, for instance) the positions are still distinct rows' numbers in
each job, so every unit still keeps at most its bound, but which rows are kept may differ from
pandas (cache or sort the frame first to pin them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa

from pandas_dp._utils.optional import import_optional
from pandas_dp.engines.pandas.bounding import unit_codes, unit_hashes
from pandas_dp.engines.primitives import Piece
from pandas_dp.engines.spark.frame import SparkFrame, quoted
from pandas_dp.engines.spark.partitions import collect, frames, guarded, map_in_arrow, packed

__all__ = ["SparkUnitRows"]


def _names(n_codes: int) -> list[str]:
    return [*(f"c{i}" for i in range(n_codes)), "unit", "pos"]


def _task_partition() -> int:
    """The index of the partition the running task reads."""
    return int(import_optional("pyspark", extra="spark", purpose="Counting a Spark DataFrame").TaskContext.get()
               .partitionId())


def _length_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(partition index, rows) of one partition (runs on an executor)."""
    n = sum(batch.num_rows for batch in batches)
    yield pa.RecordBatch.from_arrays([pa.array([_task_partition()], pa.int64()), pa.array([n], pa.int64())],
                                     names=["p", "n"])


def _code_partition(batches: Iterator[pa.RecordBatch], code: Callable[[Any, Any], Sequence[np.ndarray]], public: Any,
                    unit: Any, offsets: dict[int, int], n_codes: int) -> Iterator[pa.RecordBatch]:
    """One partition's rows as (c0.., unit hash, global position), all int64 (runs on an executor)."""
    at = offsets.get(_task_partition(), 0)
    for frame in frames(batches):
        codes = [np.asarray(c, dtype=np.int64) for c in code(frame, public)]
        hashes = unit_hashes(frame[unit]).view(np.int64)
        positions = np.arange(at, at + len(frame), dtype=np.int64)
        at += len(frame)
        yield pa.RecordBatch.from_arrays([pa.array(a) for a in (*codes, hashes, positions)], names=_names(n_codes))


def _piece(batches: list[pa.RecordBatch], n_codes: int) -> Piece:
    """The coded rows of one repartitioned partition as a :class:`Piece`."""
    schema = pa.schema([(name, pa.int64()) for name in _names(n_codes)])
    table = pa.Table.from_batches(batches, schema=schema)
    column = [np.asarray(table.column(i).to_numpy(), dtype=np.int64) for i in range(n_codes + 2)]
    hashes = column[n_codes].view(np.uint64)
    return Piece(tuple(column[:n_codes]), unit_codes(hashes), hashes, column[n_codes + 1].view(np.uint64))


def _step_partition(batches: Iterator[pa.RecordBatch], n_codes: int, step: Callable[..., Any],
                    args: tuple[Any, ...]) -> Iterator[pa.RecordBatch]:
    """``step`` on the rows of one repartitioned partition (every unit's rows in it; runs on an executor)."""
    held = [b for b in batches if b.num_rows]
    if held:
        yield packed(step(_piece(held, n_codes), *args))


class SparkUnitRows:
    """The rows of a Spark frame coded and repartitioned by unit (lazily: each :meth:`reduce` runs one job)."""

    def __init__(self, frame: SparkFrame, columns: Sequence[Any], code: Callable[[Any, Any], Sequence[np.ndarray]],
                 public: Any, unit: Any, n_codes: int) -> None:
        read = frame.spark.select(*[quoted(c) for c in columns])
        counted = map_in_arrow(read, _length_partition, "p long, n long")
        lengths = sorted((int(p), int(n)) for p, n in guarded(lambda: counted.collect()))
        offsets = dict(zip([p for p, _ in lengths], np.cumsum([0, *(n for _, n in lengths)])[:-1].tolist()))
        schema = ", ".join(f"{name} long" for name in _names(n_codes))
        coded = map_in_arrow(read, partial(_code_partition, code=code, public=public, unit=unit,
                                              offsets=offsets, n_codes=n_codes), schema)
        parallelism = int(frame.spark.sparkSession.sparkContext.defaultParallelism)
        self.n_codes = n_codes
        self.shuffled = coded.repartition(max(len(lengths), parallelism, 1), "unit")

    def reduce(self, step: Callable[..., Any], args: tuple[Any, ...], combine: Callable[..., Any],
               finish: Callable[[Any], Any] | None = None) -> Any:
        """``finish(combine(step(piece, *args) for every repartitioned partition))``; the steps run on executors."""
        parts = collect(self.shuffled, partial(_step_partition, n_codes=self.n_codes, step=step, args=args))
        if not parts:
            empty = np.zeros(0, dtype=np.int64)
            parts = [step(Piece(tuple(empty for _ in range(self.n_codes)), unit_codes(empty.view(np.uint64)),
                                empty.view(np.uint64), empty.view(np.uint64)), *args)]
        total = parts[0] if len(parts) == 1 else combine(*parts)
        return total if finish is None else finish(total)
