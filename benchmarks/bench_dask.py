"""Dask engine at 10^8 rows: speed against ``value_counts``, client memory, and a memory cap pandas cannot meet.

Run: ``python benchmarks/bench_dask.py [--rows 100000000] [--files 50] [--repeat 3]``
(``--rows 2000000`` for a quick run).

1. Writes ``rows`` rows as Parquet files under ``benchmarks/_data/`` (once;
   gitignored): ``flat`` int64 in [0, 2^16), ``tree`` int64 in [0, 2^20),
   ``income`` float64 — 24 bytes a row in memory.
2. Starts a ``LocalCluster`` with 2 worker processes (1 thread each) and
   times, best of ``repeat``, on that cluster in the same run:
   ``ddf.dp.histogram("flat", bins=2**16, ...)`` against
   ``ddf["flat"].value_counts().compute()``, and
   ``ddf.dp.hierarchical_histogram("tree", bins=2**20, ...)`` (branching
   ``"auto"``, exact inference on the client) against
   ``ddf["tree"].value_counts().compute()``. Target (issue #6): <= 1.3x.
   Count-of-counts (``--coc-persons``, default 10^7 persons, 4*10^6
   households, 1/50/3000 regions, public Groups table) against the
   non-private distributed count-of-counts of the leaves (groupby size, join
   with Groups, groupby (county, size)).
3. Client memory: the tracemalloc peak of the client process during each
   release (the scheduler runs in this process too), against the table size.
4. A memory cap: two child processes import the same libraries and connect
   the same way, then set ``RLIMIT_AS`` to their current address space plus
   half the in-memory table size. The pandas child loads the table with
   ``pd.read_parquet`` and must fail with ``MemoryError``; the Dask child
   (a client of the same cluster) runs both releases under the same cap.
   The headroom is at least 256 MiB, so at small ``--rows`` pandas fits too.
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
from typing import Any, Callable

import numpy as np

from benchmarks._timing import best_of, traced_peak

DATA = Path(__file__).resolve().parent / "_data"
FLAT_BINS = 2**16
TREE_BINS = 2**20
BYTES_PER_ROW = 24


def data_dir(rows: int, files: int) -> Path:
    """Parquet files of the benchmark table, generated once (marker file ``_done``)."""
    path = DATA / f"dask_{rows}_{files}"
    if (path / "_done").exists():
        return path
    import pandas as pd

    path.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(2026)
    per_file = -(-rows // files)
    start = time.perf_counter()
    for i in range(files):
        n = min(per_file, rows - i * per_file)
        if n <= 0:
            break
        # Skewed, realistic-looking values: most mass in the middle of each public domain.
        flat = np.clip(rng.normal(FLAT_BINS / 2, FLAT_BINS / 8, n), 0, FLAT_BINS - 1).astype(np.int64)
        tree = np.clip(rng.normal(TREE_BINS / 2, TREE_BINS / 6, n), 0, TREE_BINS - 1).astype(np.int64)
        income = rng.gamma(2.0, 20_000.0, n)
        pd.DataFrame({"flat": flat, "tree": tree, "income": income}).to_parquet(
            path / f"part-{i:04d}.parquet", index=False)
    (path / "_done").write_text(str(rows))
    print(f"generated {rows:,} rows in {files} Parquet files in {time.perf_counter() - start:.1f} s")
    return path


def jobs(path: Path) -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    """(release, non-private baseline) per job, reading the Parquet files through Dask."""
    import dask.dataframe as dd

    import pandas_dp as pdp

    ddf = dd.read_parquet(str(path))
    big = pdp.budget(1e9)

    def flat() -> Any:
        with big:
            return ddf.dp.histogram("flat", bins=FLAT_BINS, range=(0, FLAT_BINS), epsilon=1.0)

    def tree() -> Any:
        with big:
            return ddf.dp.hierarchical_histogram("tree", bins=TREE_BINS, range=(0, TREE_BINS), epsilon=1.0,
                                                 branching="auto")

    out = {"flat histogram, 2^16 bins": (flat, lambda: ddf["flat"].value_counts().compute())}
    if hasattr(ddf.dp, "hierarchical_histogram"):
        out["hierarchical, 2^20 bins, auto b"] = (tree, lambda: ddf["tree"].value_counts().compute())
    return out


def coc_data(persons: int, files: int) -> tuple[Path, Any]:
    """Persons Parquet files (household ids) and the public Groups table: 0.4 groups per person,
    3 levels (national, 50 states, 3000 counties), household sizes 1 + Poisson(1.5)."""
    import pandas as pd

    path = DATA / f"coc_{persons}_{files}"
    rng = np.random.default_rng(7)
    n_groups = int(persons * 0.4)
    county = rng.integers(0, 3000, n_groups)
    groups = pd.DataFrame({"household_id": np.arange(n_groups, dtype=np.int64), "state": county // 60,
                           "county": county})
    if not (path / "_done").exists():
        path.mkdir(parents=True, exist_ok=True)
        ids = np.repeat(groups["household_id"].to_numpy(), rng.poisson(1.5, n_groups) + 1)
        ids = rng.permutation(np.resize(ids, persons))  # exactly `persons` rows; some households empty
        for i, chunk in enumerate(np.array_split(ids, files)):
            pd.DataFrame({"household_id": chunk}).to_parquet(path / f"part-{i:04d}.parquet", index=False)
        (path / "_done").write_text(str(persons))
    return path, groups


def coc_job(persons: int, files: int) -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    """Count-of-counts on Dask against the non-private distributed count-of-counts of the leaves
    (groupby size, join with the Groups table, groupby (county, size))."""
    import dask.dataframe as dd

    import pandas_dp as pdp

    path, groups = coc_data(persons, files)
    ddf = dd.read_parquet(str(path))
    public = dd.from_pandas(groups.set_index("household_id")[["county"]], npartitions=8).persist()
    big = pdp.budget(1e9)

    def release() -> Any:
        with big:
            return ddf.dp.count_of_counts("household_id", ["state", "county"], epsilon=1.0, groups=groups)

    def baseline() -> Any:
        sizes = ddf.groupby("household_id").size().to_frame("size")
        joined = public.join(sizes, how="left").fillna({"size": 0})
        return joined.groupby(["county", "size"]).size().compute()

    label = f"count-of-counts, {persons:.0e} persons"
    return {label: (release, baseline)}


def vm_size() -> int:
    """Current address-space size of this process in bytes (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")


def peak_rss() -> int:
    """Peak resident set size of this process in bytes (VmHWM; unlike ru_maxrss, not inherited over exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def child(kind: str, path: Path, address: str, headroom: int) -> None:
    """Child process: same imports and setup, then RLIMIT_AS = current + headroom, then the job."""
    import dask.dataframe as dd  # noqa: F401
    import distributed
    import pandas as pd
    import pyarrow.parquet as pq

    import pandas_dp  # noqa: F401

    client = distributed.Client(address) if kind == "dask" else None
    pq.read_table(next(iter(sorted(path.glob("*.parquet")))))   # warm the Arrow thread pool, as both do
    cap = vm_size() + headroom
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    result: dict[str, Any] = {"kind": kind, "cap_bytes": cap, "headroom_bytes": headroom}
    start = time.perf_counter()
    try:
        if kind == "pandas":
            frame = pd.read_parquet(path)
            result["ok"] = True
            result["rows"] = len(frame)
            frame["flat"].value_counts()
        else:
            for name, (release, _) in jobs(path).items():
                release()
            result["ok"] = True
    except Exception as err:  # report any failure; only a MemoryError shows the cap was the cause
        result["ok"] = False
        result["memory_error"] = isinstance(err, MemoryError)
        result["error"] = f"{type(err).__name__}: {str(err)[:120]}"
    result["seconds"] = round(time.perf_counter() - start, 2)
    result["peak_rss_bytes"] = peak_rss()
    if client is not None:
        client.close()
    print("RESULT " + json.dumps(result), flush=True)


def run_child(kind: str, path: Path, address: str, headroom: int) -> dict[str, Any]:
    env = dict(os.environ, MALLOC_ARENA_MAX="2")
    proc = subprocess.run([sys.executable, __file__, "--child", kind, "--path", str(path), "--address", address,
                           "--headroom", str(headroom)], capture_output=True, text=True, env=env)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    return {"kind": kind, "ok": False, "error": f"exit {proc.returncode}: {' | '.join(tail)}"}


def run_job(name: str, release: Callable[[], Any], baseline: Callable[[], Any], repeat: int) -> None:
    """Print best-of-``repeat`` times of both (interleaved), their ratio and the client's traced peak."""
    release(), baseline()   # warm-up: imports and worker caches on both sides
    t_base, t_dp = [], []
    for _ in range(repeat):   # interleaved, so load from other processes hits both alike
        t_base.append(best_of(baseline, 1))
        t_dp.append(best_of(release, 1))
    peak = traced_peak(release)
    print(f"{name:<34} {min(t_base):>11.2f}s {min(t_dp):>9.2f}s {min(t_dp) / min(t_base):>6.2f} {peak:>16.1f}",
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-cap", action="store_true", help="skip the memory-cap demonstration")
    parser.add_argument("--coc-persons", type=int, default=10_000_000,
                        help="persons of the count-of-counts job (0 skips it)")
    parser.add_argument("--child", choices=["pandas", "dask"], help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    parser.add_argument("--address", help=argparse.SUPPRESS)
    parser.add_argument("--headroom", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, Path(args.path), args.address, args.headroom)
        return

    import distributed

    path = data_dir(args.rows, args.files)
    table = args.rows * BYTES_PER_ROW
    disk = sum(f.stat().st_size for f in path.glob("*.parquet"))
    print(f"{args.rows:,} rows x 3 columns: {table / 2**30:.2f} GiB in memory, {disk / 2**30:.2f} GiB of Parquet "
          f"in {args.files} files; LocalCluster 2 worker processes x 1 thread; best of {args.repeat}")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  silence_logs=50) as cluster, distributed.Client(cluster):
        print(f"{'job':<34} {'non-private':>12} {'pandas_dp':>10} {'ratio':>6} {'client peak MiB':>16}")
        for name, (release, baseline) in jobs(path).items():
            run_job(name, release, baseline, args.repeat)
        rss = peak_rss()
        if args.coc_persons:   # its data (and the public Groups table) are generated in this process
            for name, (release, baseline) in coc_job(args.coc_persons, max(2, args.files // 5)).items():
                run_job(name, release, baseline, args.repeat)
        print(f"client process peak RSS after the histogram jobs (imports, scheduler, all runs): {rss / 2**20:.0f} "
              f"MiB; table in memory: {table / 2**20:.0f} MiB")
        if args.no_cap:
            return
        headroom = max(table // 2, 256 * 2**20)
        print(f"\nmemory cap: RLIMIT_AS = address space after imports + {headroom / 2**20:.0f} MiB "
              f"(half the in-memory table, at least 256 MiB)")
        for kind in ("pandas", "dask"):
            res = run_child(kind, path, cluster.scheduler_address, headroom)
            status = "completed" if res.get("ok") else f"FAILED ({res.get('error')})"
            extra = (f", cap {res['cap_bytes'] / 2**30:.2f} GiB, peak RSS {res['peak_rss_bytes'] / 2**20:.0f} MiB, "
                     f"{res['seconds']} s") if "cap_bytes" in res else ""
            print(f"  {kind:<6}: {status}{extra}")


if __name__ == "__main__":
    main()
