"""Histogram counts computed by Spark itself: numeric bins coded by SQL expressions, ``groupBy(code).count()``.

The hot path of every histogram (:func:`pandas_dp.engines.pieces.flat_bin_counts`) is pushed down
to Spark when every dimension of the grid bins numbers (:class:`~pandas_dp.domain.grid.BinDomain`
of kind ``"number"``) of a numeric Spark column (byte, short, int, long, float, double): no row
leaves the JVM, and only the counts of the cells present (at most the grid's size) reach the
driver. A row counts in bin ``i`` when ``edges[i] <= x < edges[i + 1]`` (the pandas coder's rule);
a null, NaN or infinite value, or one outside ``[edges[0], edges[-1])``, is dropped. Evenly spaced
edges are coded arithmetically, then corrected by one comparison with the public edge on each
side (so the float rounding of the arithmetic never moves a value to a neighbouring bin); a few
uneven edges by comparisons; integers on integral edges by an exact integer quotient. Anything else (text columns, labels, dates, large uneven domains) is
counted by the pandas kernels on the executors (:mod:`pandas_dp.engines.spark.reduce`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pandas_dp.domain.grid import BinDomain, Grid
from pandas_dp.engines.spark.frame import SparkFrame, quoted
from pandas_dp.engines.spark.partitions import guarded, spark_functions

__all__ = ["pushable", "bin_counts", "NUMERIC_TYPES", "MAX_EDGES", "MAX_UNEVEN_EDGES"]

#: Spark types whose values are numbers as pandas reads them (booleans and decimals are left to pandas).
NUMERIC_TYPES = frozenset({"ByteType", "ShortType", "IntegerType", "LongType", "FloatType", "DoubleType"})
#: Largest number of edges written into a plan (an array literal) for evenly spaced bins.
MAX_EDGES = 1 << 14
#: Largest number of uneven edges coded by comparisons (one per edge and row).
MAX_UNEVEN_EDGES = 65
#: Largest grid counted by Spark (the counts of the cells present are collected to the driver).
MAX_CELLS = 1 << 22


def pushable(frame: Any, grid: Grid) -> bool:
    """Whether Spark can count ``grid`` on ``frame`` itself (see the module docstring)."""
    if not isinstance(frame, SparkFrame) or grid.ndim == 0 or grid.size > MAX_CELLS:
        return False
    types = {f.name: type(f.dataType).__name__ for f in frame.spark.schema.fields}
    for dim in grid.dims:
        if not (isinstance(dim, BinDomain) and dim.kind == "number" and types.get(dim.column) in NUMERIC_TYPES):
            return False
        limit = MAX_EDGES if dim.equal_width else MAX_UNEVEN_EDGES
        if len(dim.edges) > limit or not np.all(np.isfinite(np.asarray(dim.edges, dtype=np.float64))):
            return False
    return True


#: Integral edges and values below this size are exact in double arithmetic (quotients included).
_EXACT = float(2**52)
_INTEGRAL = frozenset({"ByteType", "ShortType", "IntegerType", "LongType"})


def _bin(F: Any, dim: BinDomain, spark_type: str) -> tuple[Any, Any]:
    """(whether the row is in the domain, its bin) as Spark column expressions."""
    edges = np.asarray(dim.edges, dtype=np.float64)
    n = edges.size - 1
    lo, hi = float(edges[0]), float(edges[-1])
    column = F.col(quoted(dim.column))
    x = column.cast("double")
    if not dim.equal_width:
        code = F.lit(0).cast("long")
        for e in edges[1:-1]:
            code = code + (x >= F.lit(float(e))).cast("long")
        return _inside(F, x, lo, hi), code
    width = (hi - lo) / n
    if (spark_type in _INTEGRAL and lo.is_integer() and width.is_integer() and max(abs(lo), abs(hi)) < _EXACT
            and np.array_equal(edges, lo + width * np.arange(n + 1))):
        # Integers on integral edges: the quotient of two integers below 2**52 floors exactly.
        inside = column.isNotNull() & (column >= F.lit(int(lo))) & (column < F.lit(int(hi)))
        return inside, F.floor((column - F.lit(int(lo))) / F.lit(int(width))).cast("long")
    guess = F.floor((x - F.lit(lo)) * F.lit(n / (hi - lo))).cast("long")
    guess = F.least(F.greatest(guess, F.lit(0).cast("long")), F.lit(n - 1).cast("long"))
    if np.array_equal(edges[:-1], lo + np.arange(n, dtype=np.float64) * width):
        # Edge i is lo + i * width in double arithmetic, as Spark computes it: one comparison on each side.
        def edge(i: Any) -> Any:
            return F.lit(lo) + i.cast("double") * F.lit(width)
        up = (guess < F.lit(n - 1)) & (x >= edge(guess + 1))
    else:
        at = F.array(*[F.lit(float(e)) for e in edges])

        def edge(i: Any) -> Any:
            return F.element_at(at, (i + 1).cast("int"))
        up = x >= edge(guess + 1)
    code = F.when(x < edge(guess), guess - 1).when(up, guess + 1).otherwise(guess)
    return _inside(F, x, lo, hi), code


def _inside(F: Any, x: Any, lo: float, hi: float) -> Any:
    return x.isNotNull() & ~F.isnan(x) & (x >= F.lit(lo)) & (x < F.lit(hi))


def bin_counts(frame: SparkFrame, grid: Grid) -> np.ndarray:
    """Exact flat int64 counts of ``frame``'s rows in the cells of ``grid``, counted by Spark (:func:`pushable`)."""
    F = spark_functions()
    inside: Any = None
    code: Any = None
    types = {f.name: type(f.dataType).__name__ for f in frame.spark.schema.fields}
    for dim in grid.dims:
        assert isinstance(dim, BinDomain)
        ok, c = _bin(F, dim, types[dim.column])
        inside = ok if inside is None else inside & ok
        code = c if code is None else code * F.lit(dim.size).cast("long") + c
    counted = frame.spark.where(inside).groupBy(code.alias("cell")).count()
    rows = guarded(lambda: counted.collect())
    flat = np.zeros(grid.size, dtype=np.int64)
    if rows:
        cells = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        flat[cells] = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
    return flat
