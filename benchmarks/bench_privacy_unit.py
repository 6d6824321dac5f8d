"""Speed and memory of a release with a privacy unit against the plain release and the plain pandas pipeline.

Run: ``python -m benchmarks.bench_privacy_unit [--rows 10000000] [--units N] [--repeat 3] [--sample]
[--dask] [--files 10] [--layout random|sorted]``

``rows`` rows of (unit, value) with ``units`` units (default one per 10 rows), ``max_rows=5``, 2^16
bins (issue 14's setting). On pandas, in the same run: the release without a unit (``plain``), the
release with ``privacy_unit="unit", max_rows=5`` (``units``), and the non-private pipeline doing the same
work: keep 5 rows per unit (``groupby(unit).head(5)``) and count them (``value_counts``);
``--sample`` adds ``groupby(unit).sample(n=5)`` as pandas has it (slow). Printed: the units/plain and
units/head ratios and the tracemalloc peak against the input's size.

``--dask`` adds the Dask engine: the frame is written as ``--files`` Parquet files under
``benchmarks/_data/`` (once; gitignored) and read with ``dd.read_parquet`` on a ``LocalCluster`` of 2
worker processes with 1 thread each (as ``bench_dask``); the plain and the units release are timed
the same way (best of ``repeat``, interleaved), and the memory is the workers' peak resident memory
during the units release (their first after one plain release) above their memory before it, summed
over the workers, against the input's size. ``--layout sorted`` writes the rows sorted by unit (each unit's
rows in one file, as in data partitioned by person); ``random`` spreads every unit over the files.
Targets (issue 45): units within 3x of plain on both engines, memory within 2x of the input.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

import pandas_dp as pdp
from benchmarks._timing import best_of, traced_peak

DATA = Path(__file__).resolve().parent / "_data"
BINS = 2**16
K = 5


def frame(rows: int, units: int, layout: str) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"unit": rng.integers(0, units, rows), "x": rng.integers(0, BINS, rows)})
    if layout == "sorted":
        df = df.sort_values("unit", kind="stable", ignore_index=True)
    return df


def parquet_dir(df: pd.DataFrame, files: int, layout: str) -> Path:
    """The frame as ``files`` Parquet files, written once (marker file ``_done``)."""
    path = DATA / f"units_{len(df)}_{df['unit'].max() + 1}_{files}_{layout}"
    if not (path / "_done").exists():
        path.mkdir(parents=True, exist_ok=True)
        edges = np.linspace(0, len(df), files + 1).astype(np.int64)
        for i, (a, b) in enumerate(zip(edges[:-1], edges[1:])):
            df.iloc[a:b].to_parquet(path / f"part-{i:04d}.parquet", index=False)
        (path / "_done").write_text(str(len(df)))
    return path


def releases(data: Any) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """(plain release, units release) of ``data`` (a pandas or Dask frame)."""
    budget = pdp.budget(1e12)

    def plain() -> Any:
        with budget:
            return data.dp.histogram("x", bins=BINS, range=(0, BINS), epsilon=1.0)

    def units() -> Any:
        with budget:
            return data.dp.histogram("x", bins=BINS, range=(0, BINS), epsilon=1.0, privacy_unit="unit", max_rows=K)

    return plain, units


def interleaved(a: Callable[[], Any], b: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """Best-of-``repeat`` seconds of both, run alternately (load from other processes hits both alike)."""
    a(), b()
    ta, tb = [], []
    for _ in range(repeat):
        ta.append(best_of(a, 1))
        tb.append(best_of(b, 1))
    return min(ta), min(tb)


def pandas_part(df: pd.DataFrame, repeat: int, sample: bool) -> None:
    size = df.memory_usage(index=False).sum() / 2**20

    def head() -> object:
        return df.groupby("unit", sort=False).head(K)["x"].value_counts()

    plain, units = releases(df)
    t_plain, t_units = interleaved(plain, units, repeat)
    t_head = best_of(head, repeat)
    m_head, m_units = traced_peak(head), traced_peak(units)
    print(f"{'pandas':<8} {'seconds':>8} {'peak MiB':>9}")
    print(f"{'plain release (no unit)':<44} {t_plain:>8.3f}")
    print(f"{'units release (max_rows=5)':<44} {t_units:>8.3f} {m_units:>9.0f}")
    print(f"{'groupby.head(5) + value_counts (non-private)':<44} {t_head:>8.3f} {m_head:>9.0f}")
    if sample:
        def pandas_sample() -> object:
            sizes = df.groupby("unit", sort=False)["x"].transform("size")
            heavy = df[sizes > K].groupby("unit", sort=False).sample(n=K, random_state=1)
            return pd.concat([df[sizes <= K], heavy])["x"].value_counts()

        print(f"{'groupby.sample(n=5) + value_counts':<44} {best_of(pandas_sample, 1):>8.3f}")
    print(f"pandas: units/plain {t_units / t_plain:.1f}x, units/head {t_units / t_head:.2f}x, "
          f"memory {m_units / size:.2f}x the input ({size:.0f} MiB)")


def worker_memory(client: Any) -> float:
    """Summed peak resident memory of the workers (MiB) since they started."""
    def hwm() -> int:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        return 0

    return sum(client.run(hwm).values()) / 2**20


def worker_rss(client: Any) -> float:
    def rss() -> int:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return 0

    return sum(client.run(rss).values()) / 2**20


def dask_part(df: pd.DataFrame, files: int, layout: str, repeat: int) -> None:
    import dask.dataframe as dd
    import distributed

    size = df.memory_usage(index=False).sum() / 2**20
    path = parquet_dir(df, files, layout)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  silence_logs=50) as cluster, distributed.Client(cluster) as client:
        ddf = dd.read_parquet(str(path))
        plain, units = releases(ddf)
        plain()                            # the workers import what the releases use
        idle = worker_rss(client)
        units()                            # fresh workers: their first heavy job
        peak = worker_memory(client) - idle
        t_plain, t_units = interleaved(plain, units, repeat)
    print(f"{'dask':<8} {'seconds':>8} {'workers peak MiB':>17}")
    print(f"{'plain release (no unit)':<44} {t_plain:>8.3f}")
    print(f"{'units release (max_rows=5)':<44} {t_units:>8.3f} {peak:>17.0f}")
    print(f"dask ({files} Parquet files, {layout}, 2 worker processes): units/plain {t_units / t_plain:.1f}x, "
          f"workers' peak above idle {peak / size:.2f}x the input ({size:.0f} MiB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--units", type=int, default=None, help="default: one unit per 10 rows")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sample", action="store_true")
    parser.add_argument("--dask", action="store_true")
    parser.add_argument("--no-pandas", action="store_true", help="only the Dask part")
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--layout", choices=["random", "sorted"], default="random")
    args = parser.parse_args()
    units = args.units or max(args.rows // 10, 1)
    df = frame(args.rows, units, args.layout)
    print(f"{args.rows:,} rows, {units:,} units ({args.layout}), max_rows={K}, {BINS:,} bins, best of {args.repeat}")
    if not args.no_pandas:
        pandas_part(df, args.repeat, args.sample)
    if args.dask:
        dask_part(df, args.files, args.layout, args.repeat)


if __name__ == "__main__":
    main()
