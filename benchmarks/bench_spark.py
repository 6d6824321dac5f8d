"""Spark engine at 10^7 rows (local[2]): a histogram release against Spark's own ``groupBy(bin).count()``.

Run: ``python benchmarks/bench_spark.py [--rows 10000000] [--repeat 3] [--partitions 4]``
(``--rows 1000000`` for a quick run). Needs pyspark and a Java runtime.

Builds ``rows`` rows in Spark (``spark.range``: ``age`` long in [0, 100), ``income`` double in
[0, 1000), ``person`` long, five rows a person), cached in memory, and times, best of ``repeat``,
in the same run and session (the two interleaved):

* ``sdf.dp.histogram("age", bins=10, range=(0, 100))`` (the release: budget, counts pushed down to
  Spark, noise on the driver) against ``sdf.groupBy(floor(age / 10)).count().collect()`` on the same
  bins. Target (issue 45): at most 1.5x.
* the same 2-D (``age`` x ``income``, 10 x 8 bins) against its ``groupBy`` of both bins;
* for information: the same counts through the Arrow path (every partition's batches counted by
  the pandas kernels on the executors), and the histogram with a privacy unit (``max_rows=2``:
  rows coded, repartitioned by unit, bounded), each against the ``groupBy``.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from typing import Any

import numpy as np

from benchmarks._timing import best_of


def _session(partitions: int) -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spark = (SparkSession.builder.master("local[2]").appName("bench_spark")
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.sql.shuffle.partitions", str(partitions)).config("spark.driver.memory", "3g")
                 .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=4)
    args = parser.parse_args()

    import pandas_dp as pdp
    from pandas_dp.domain.grid import make_grid
    from pandas_dp.engines.pieces import flat_bin_counts, sum_arrays
    from pandas_dp.engines.spark import SparkFrame
    from pandas_dp.engines.spark.reduce import reduce_rows
    import pandas as pd

    spark = _session(args.partitions)
    from pyspark.sql import functions as F

    sdf = (spark.range(args.rows, numPartitions=args.partitions)
           .select(F.floor(F.rand(1) * 100).cast("long").alias("age"), (F.rand(2) * 1000).alias("income"),
                   (F.col("id") / 5).cast("long").alias("person")).cache())
    sdf.count()
    print(f"{args.rows:,} rows in {args.partitions} cached partitions, local[2], best of {args.repeat}")

    def reference_1d() -> Any:
        return sdf.groupBy(F.floor(F.col("age") / 10)).count().collect()

    def reference_2d() -> Any:
        return sdf.groupBy(F.floor(F.col("age") / 10), F.floor(F.col("income") / 125)).count().collect()

    def release(columns: Any, **kwargs: Any) -> Any:
        with pdp.budget(epsilon=10.0):
            return sdf.dp.histogram(columns, epsilon=1.0, **kwargs)

    grid = make_grid(pd.DataFrame({"age": [0]}), ["age"], bins=10, range=(0, 100))
    exact = np.array(sorted((int(k), int(n)) for k, n in reference_1d()))[:, 1]
    pushed = release("age", bins=10, range=(0, 100))
    arrow = reduce_rows(SparkFrame(sdf), ["age"], flat_bin_counts, grid, sum_arrays)
    assert np.array_equal(arrow, exact), "the Arrow path's counts differ from Spark's"
    assert pushed.counts.size == 10

    cases = [
        ("histogram 1-D, 10 bins", reference_1d, lambda: release("age", bins=10, range=(0, 100))),
        ("histogram 2-D, 10 x 8 bins", reference_2d,
         lambda: release(["age", "income"], bins=[10, 8], range=[(0, 100), (0, 1000)])),
        ("Arrow path (pandas kernels on executors), 1-D", reference_1d,
         lambda: reduce_rows(SparkFrame(sdf), ["age"], flat_bin_counts, grid, sum_arrays)),
        ("privacy unit, max_rows=2, 1-D", reference_1d,
         lambda: release("age", bins=10, range=(0, 100), privacy_unit="person", max_rows=2)),
    ]
    for name, reference, ours in cases:
        ours()  # warm: Python workers started, plan compiled
        # Interleaved, best of each: a burst of other load on the machine hits both sides alike.
        base, took = float("inf"), float("inf")
        for _ in range(args.repeat):
            base = min(base, best_of(reference, 1))
            took = min(took, best_of(ours, 1))
        target = "  (target <= 1.5x)" if name.startswith("histogram 1-D") else ""
        print(f"{name:48s} release {took:7.2f} s   groupBy().count() {base:6.2f} s   ratio {took / base:5.2f}x{target}")
    spark.stop()


if __name__ == "__main__":
    main()
