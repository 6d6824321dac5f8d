"""Polars engine: time and peak memory of releases against Polars' own streaming ``group_by(...).len()``.

Run: ``python benchmarks/bench_polars.py [--rows 10000000] [--parquet-rows 100000000] [--repeat 3]``
(``--rows 1000000 --parquet-rows 5000000`` for a quick run; ``--parquet-rows 0`` skips the scan).

Every measurement runs in its own child process, which prints its best time of ``repeat`` and its
peak resident memory (``ru_maxrss``), so one measurement's memory never counts in another's.

1. In memory (``rows`` rows: ``age`` int64 in [0, 128), ``state`` text of 8 labels, ``pid`` with
   about 3 rows per person): ``lf.dp.histogram("age", bins=64, range=(0, 128))`` against
   ``lf.group_by(pl.col("age") // 2).len()``; the 2-way table set ``lf.dp.marginals([("age", "state")])``
   (age in 8 bins) against ``group_by([age // 16, "state"]).len()``, with ``state`` as text and as a
   ``pl.Enum`` of the 8 labels; the histogram with
   ``privacy_unit="pid", max_rows=5`` against the plain release (target: within 3x) and its peak
   memory against the frame's own size (target: the release's extra memory within 2x of it), and
   against the same release on the pandas frame (the pandas engine, whose bounding kernel it shares).
2. A Parquet scan (``parquet-rows`` rows in files of 10^7 rows under ``/tmp/pandas_dp_bench_polars``,
   written once; beyond 10^8 rows the 10^8 rows' files are read again through links, so 10^9 rows take
   no more disk, and are read from the page cache): the same histogram and table set on ``pl.scan_parquet`` against the same
   ``group_by(...).len()`` on the scan, each with its peak memory (target: under 2 GB, time within 1.5x).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

DATA = Path("/tmp/pandas_dp_bench_polars")
FILE_ROWS = 10_000_000
STATES = ["CA", "NY", "TX", "WA", "AZ", "NV", "OR", "UT"]


def _frame(rows: int, seed: int = 0):
    import polars as pl

    rng = np.random.default_rng(seed)
    return pl.DataFrame({"age": rng.integers(0, 128, rows), "state": np.array(STATES)[rng.integers(0, 8, rows)],
                         "pid": np.sort(rng.integers(0, max(rows // 3, 1), rows))})


#: Distinct rows written at most; a larger scan reads these files again (links), so its size costs no disk.
UNIQUE_ROWS = 100_000_000


def _write(rows: int) -> str:
    folder = DATA / str(rows)
    if not (folder / "done").exists():
        folder.mkdir(parents=True, exist_ok=True)
        unique = min(rows, UNIQUE_ROWS)
        source = folder if rows == unique else Path(_write(unique)).parent
        if rows == unique:
            for i, start in enumerate(range(0, rows, FILE_ROWS)):
                _frame(min(FILE_ROWS, rows - start), seed=i).write_parquet(folder / f"part{i:05d}.parquet")
        else:
            files = sorted(source.glob("*.parquet"))
            for i in range(rows // FILE_ROWS):
                (folder / f"part{i:05d}.parquet").symlink_to(files[i % len(files)])
        (folder / "done").write_text("ok")
    return str(folder / "*.parquet")


def _task(name: str, source: str, rows: int):
    """The callable a child times (the frame is built or scanned outside the timing)."""
    import polars as pl

    import pandas_dp as pdp

    lf = pl.scan_parquet(source) if source != "memory" else _frame(rows).lazy()
    if name.endswith("(Enum)"):  # the state column typed by its codebook, as a Polars user would store it
        lf = lf.with_columns(pl.col("state").cast(pl.Enum(STATES)))
    if source == "memory":
        lf = lf.collect().lazy()   # in memory, built before the timing
    pdf = lf.collect().to_pandas() if name.startswith("pandas") else None
    age = pl.col("age")
    tasks = {
        "polars histogram": lambda: lf.group_by(age // 2).len().collect(engine="streaming"),
        "polars table": lambda: lf.group_by([age // 16, "state"]).len().collect(engine="streaming"),
        "dp histogram": lambda: lf.dp.histogram("age", bins=64, range=(0, 128), epsilon=1.0,
                                                rng=np.random.default_rng(0)),
        "dp table": lambda: lf.dp.marginals([("age", "state")], bins={"age": list(range(0, 129, 16))},
                                            categories={"state": STATES}, epsilon=1.0, rng=np.random.default_rng(0)),
        "dp histogram units": lambda: lf.dp.histogram("age", bins=64, range=(0, 128), epsilon=1.0,
                                                      privacy_unit="pid", max_rows=5, rng=np.random.default_rng(0)),
        "pandas histogram units": lambda: pdf.dp.histogram("age", bins=64, range=(0, 128), epsilon=1.0,
                                                           privacy_unit="pid", max_rows=5, rng=np.random.default_rng(0)),
        "frame only": lambda: None,
    }
    tasks["dp table (Enum)"], tasks["polars table (Enum)"] = tasks["dp table"], tasks["polars table"]
    run = tasks[name]
    if name.startswith(("dp", "pandas")):
        return lambda: _in_budget(pdp, run)
    return run


def _in_budget(pdp, run):
    with pdp.budget(epsilon=1.0):
        return run()


def _child(name: str, source: str, rows: int, repeat: int) -> None:
    run = _task(name, source, rows)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": best, "peak": peak}))


def _measure(name: str, source: str, rows: int, repeat: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", name, "--source", source, "--rows", str(rows),
                          "--repeat", str(repeat)], check=True, capture_output=True, text=True,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def _report(title: str, source: str, rows: int, repeat: int, units: bool) -> None:
    print(f"\n== {title}: {rows:,} rows")
    base = _measure("frame only", source, rows, 1)
    print(f"   frame alone: peak RSS {base['peak'] / 2**20:,.0f} MiB")
    pairs = [("dp histogram", "polars histogram"), ("dp table", "polars table")]
    if units:
        pairs += [("dp table (Enum)", "polars table (Enum)"), ("dp histogram units", "dp histogram"),
                  ("dp histogram units", "pandas histogram units")]
    for ours, theirs in pairs:
        a, b = _measure(ours, source, rows, repeat), _measure(theirs, source, rows, repeat)
        print(f"   {ours:<20} {a['seconds']:8.3f} s  peak {a['peak'] / 2**20:7,.0f} MiB | {theirs:<18} "
              f"{b['seconds']:8.3f} s  peak {b['peak'] / 2**20:7,.0f} MiB | time ratio {a['seconds'] / b['seconds']:.2f}x")
        if ours == "dp histogram units" and theirs == "dp histogram":
            extra, frame = a["peak"] - base["peak"], rows * 24
            print(f"   units: memory beyond the frame {extra / 2**20:,.0f} MiB = {extra / frame:.2f}x the frame's "
                  f"{frame / 2**20:,.0f} MiB (3 int64-sized columns)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--parquet-rows", type=int, default=100_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child")
    parser.add_argument("--source", default="memory")
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.source, args.rows, args.repeat)
        return
    if args.rows:
        _report("in memory", "memory", args.rows, args.repeat, units=True)
    if args.parquet_rows:
        source = _write(args.parquet_rows)
        _report(f"Parquet scan ({source})", source, args.parquet_rows, 1, units=False)


if __name__ == "__main__":
    main()
