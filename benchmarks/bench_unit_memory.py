"""Peak memory of a release with a privacy unit, as a multiple of the columns it reads (issue 30 item 5).

Run: ``python -m benchmarks.bench_unit_memory [--rows 10000000 100000000] [--scheme rows]``

Rows of (unit, x), two int64 columns (16 bytes a row), one unit per 10 rows, ``max_rows=5`` (or the
cells scheme ``max_cells=3, max_rows_per_cell=2``, or ``max_rows="auto"``), 2^16 bins. The peak is
what tracemalloc sees numpy and pandas allocate during ``df.dp.histogram(...)`` (the frame itself is not
counted); target at most 2x the input. 10^8 rows need about 1.6 GB for the frame and 3 GB for the
release: they run only when /proc/meminfo reports at least 12 GB available (a shared machine).
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np
import pandas as pd

import pandas_dp as pdp

NEEDS_GB = 12


def available_gb() -> float:
    """MemAvailable from /proc/meminfo in GB (infinity where there is no such file)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return float("inf")


def measure(rows: int, scheme: str) -> None:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"unit": rng.integers(0, rows // 10, rows), "x": rng.integers(0, 2**16, rows)})
    size = df.memory_usage(index=False).sum()
    bound = {"rows": {"max_rows": 5}, "auto": {"max_rows": "auto"},
             "cells": {"max_cells": 3, "max_rows_per_cell": 2}}[scheme]
    tracemalloc.start()
    start = time.perf_counter()
    with pdp.budget(epsilon=1.0):
        df.dp.histogram("x", bins=2**16, range=(0, 2**16), epsilon=1.0, privacy_unit="unit",
                        rng=np.random.default_rng(1), **bound)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"{rows:>13,} {scheme:>6} {size / 2**20:>10.0f} {peak / 2**20:>9.0f} {peak / size:>6.2f}x {seconds:>7.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000_000, 100_000_000])
    parser.add_argument("--scheme", choices=["rows", "auto", "cells"], default="rows")
    args = parser.parse_args()
    print(f"{'rows':>13} {'scheme':>6} {'input MiB':>10} {'peak MiB':>9} {'ratio':>7} {'seconds':>7}")
    for rows in args.rows:
        if rows > 20_000_000 and available_gb() < NEEDS_GB:
            print(f"{rows:>13,} skipped: {available_gb():.1f} GB available, {NEEDS_GB} GB needed")
            continue
        measure(rows, args.scheme)


if __name__ == "__main__":
    main()
