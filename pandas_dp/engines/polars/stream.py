"""Streaming a Polars query in batches: every batch a pandas piece, counted with the pandas kernels, combined.

The query (only the columns a release reads) runs on Polars' streaming engine
(``LazyFrame.collect_batches``), so a ``scan_parquet`` over files larger than memory is read a
batch at a time; each batch becomes a pandas frame (Arrow, no copy for numbers without missing
values) and is counted by the feature's pandas function, and the partial counts are combined
``COMBINE_EVERY`` at a time. Memory: one batch and a few partial counts. A failure of the query
itself (a file that cannot be read, files whose columns have different types that the query does
not reconcile) is reported as :class:`~pandas_dp.errors.DataSourceError` without its text, which
may quote a private value; nothing is charged then (counting runs before the charge).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from pandas_dp.engines.polars.frame import polars_module
from pandas_dp.engines.withheld import Source, withheld

__all__ = ["BATCH_ROWS", "COMBINE_EVERY", "batches", "polars_batches", "stream_reduce", "guarded", "to_pandas"]

#: Rows per streamed batch.
BATCH_ROWS = 1 << 20
#: Partial counts combined at once.
COMBINE_EVERY = 8


#: The Polars query's failures, withheld (:mod:`pandas_dp.engines.withheld`).
POLARS_SOURCE = Source("Running the Polars query", "inside Polars",
                       "Parquet files whose columns have different types, or a file that cannot be read",
                       "collect the frame outside pandas_dp")


def guarded(step: Callable[[], Any]) -> Any:
    """Run a step of the user's Polars query; its failure becomes :class:`~pandas_dp.errors.DataSourceError` (no text kept)."""
    return withheld(step, POLARS_SOURCE)


def to_pandas(batch: Any, series: bool) -> Any:
    """A Polars batch as the pandas piece the kernels read (a Series when one column was asked for)."""
    frame = batch.to_pandas()
    return frame.iloc[:, 0] if series else frame


def polars_batches(parts: Sequence[Any], *, batch_rows: int = BATCH_ROWS) -> Iterator[Any]:
    """Every non-empty batch of the rows of the queries ``parts``, in order, as a Polars DataFrame (an empty
    frame gives one empty batch)."""
    pl = polars_module()
    done = object()
    empty = True
    for lazy in parts:
        stream = guarded(lambda: iter(lazy.collect_batches(chunk_size=batch_rows, engine="streaming")))
        while True:
            batch = guarded(lambda: next(stream, done))
            if batch is done:
                break
            if batch.height == 0:
                continue
            empty = False
            yield batch
    if empty:
        yield pl.DataFrame(schema=guarded(parts[0].collect_schema))


def batches(parts: Sequence[Any], *, series: bool = False, batch_rows: int = BATCH_ROWS) -> Iterator[Any]:
    """Every batch of the rows of the queries ``parts``, in order, as a pandas piece (at least one piece: an
    empty frame has one)."""
    for batch in polars_batches(parts, batch_rows=batch_rows):
        yield to_pandas(batch, series)


def stream_reduce(parts: Sequence[Any], count: Callable[[Any, Any], Any], public: Any, combine: Callable[..., Any],
                  *, series: bool = False, batch_rows: int = BATCH_ROWS) -> Any:
    """``combine(count(piece, public) for every batch of the queries parts)``, ``COMBINE_EVERY`` partial counts
    at a time."""
    partial: list[Any] = []
    for piece in batches(parts, series=series, batch_rows=batch_rows):
        partial.append(count(piece, public))
        if len(partial) >= COMBINE_EVERY:
            partial = [combine(*partial)]
    return partial[0] if len(partial) == 1 else combine(*partial)

