"""Census table sets: the workload at every level of a geography (``marginals(by=..., hierarchy=...)``).

Synthetic persons with 4 integer-coded attributes (age group 18, sex 2, race 7, ethnicity 2), placed
in 3,000 counties of 50 states (60 each) under the nation; the workload is 4 tables
(age x sex, race x ethnicity, age x race, sex x ethnicity).

1. **time**: ``df.dp.marginals(workload, by=["state", "county"], hierarchy=..., rho=1)`` (count,
   noise, GLS across the geography; seeded numpy noise) against pandas ``groupby(...).size()`` of
   every table at every level (12 group-bys, the same integer columns), best of ``--repeat``, at each
   of ``--rows`` (default 10^6 and 10^7).
2. **accuracy** at equal rho = 1 (exact variances: both releases report them, no simulation), per
   table, the county-level RMSE of one cell of (a) one ``histogram(by=...)`` per table with rho/4
   each, (b) the same workload measured on each level with no GLS across the geography (the
   county's own measurement, the level's third of rho), over the table set's. Ratios above 1 mean
   the table set is more accurate.

3. **memory** (``--memory``): the peak memory of the table set's release against pandas
   ``groupby(...).size()`` of every table at every level, at 10^6 and 10^7 persons in 1, 50 and 3,000
   finest regions (1: one state, ``by="state"``; 50: ``by="state"``; 3,000: ``by=["state",
   "county"]``), printed as a ratio (the target: at most 2x pandas'). Each run is its own child
   process per frame: it builds the frame, warms both up on 1,000 rows (lazy imports), then for each
   resets the kernel's resident-set high-water mark (``/proc/self/clear_refs``), runs once and reads
   ``VmHWM`` less the resident set before the run: the peak extra memory of the run, numpy buffers
   included (resident pages, whoever allocated them), the frame itself excluded. Linux only.

Run: ``python -m benchmarks.bench_census [--rows 1000000 10000000] [--repeat 2] [--memory]``
"""

from __future__ import annotations

import argparse
import gc
import subprocess
import sys

import numpy as np
import pandas as pd

import pandas_dp as pdp
from benchmarks._timing import best_of

SIZES = {"age": 18, "sex": 2, "race": 7, "eth": 2}
WORKLOAD = [("age", "sex"), ("race", "eth"), ("age", "race"), ("sex", "eth")]
STATES, PER_STATE = 50, 60


def hierarchy() -> pd.DataFrame:
    county = np.arange(STATES * PER_STATE)
    return pd.DataFrame({"state": county // PER_STATE, "county": county})


def persons(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    county = rng.integers(0, STATES * PER_STATE, n)
    frame = {"state": county // PER_STATE, "county": county}
    for name, size in SIZES.items():
        frame[name] = rng.integers(0, size, n).astype(np.int64)
    return pd.DataFrame(frame)


CATEGORIES = {name: list(range(size)) for name, size in SIZES.items()}


def release(df: pd.DataFrame, rho: float = 1.0, **kw):
    with pdp.budget(rho=rho):
        return df.dp.marginals(WORKLOAD, categories=CATEGORIES, by=["state", "county"], hierarchy=hierarchy(),
                               rho=rho, rng=np.random.default_rng(1), **kw)


def groupbys(df: pd.DataFrame) -> None:
    for table in WORKLOAD:
        for level in ([], ["state"], ["county"]):
            df.groupby([*level, *table], sort=False).size()


def time_part(rows: list[int], repeat: int) -> None:
    print("rows        table set (s)   pandas groupby, 12 (s)   ratio")
    for n in rows:
        df = persons(n)
        ours = best_of(lambda: release(df), repeat)
        theirs = best_of(lambda: groupbys(df), repeat)
        print(f"{n:>10,}  {ours:13.2f}   {theirs:22.2f}   {ours / theirs:5.2f}")


def accuracy_part() -> None:
    df = persons(200_000, seed=3)
    rho = 1.0
    t = release(df, rho)
    county = t.levels.index("county")
    finest = t.geography.plans[county]
    print("table          set RMSE   (a) histogram(by) per table   (b) levels without GLS")
    for table in WORKLOAD:
        attrs = tuple(list(t.columns).index(c) for c in table)
        ours = float(np.mean(t.geography.variance(county, attrs)))
        with pdp.budget(rho=rho):
            h = df.dp.histogram(list(table), categories=[CATEGORIES[c] for c in table], by=["state", "county"],
                                hierarchy=hierarchy(), rho=rho / len(WORKLOAD), rng=np.random.default_rng(2))
        hv = h.variance.xs("county", level="level").to_numpy()
        alone = finest.cell_variance(tuple(sorted(attrs)))
        print(f"{' x '.join(table):13s}  {np.sqrt(ours):8.3f}   {np.sqrt(hv.mean() / ours):27.2f}x   "
              f"{np.sqrt(alone / ours):20.2f}x")


MEMORY_REGIONS = (1, 50, 3000)


def geography(regions: int) -> dict:
    """The ``by``/``hierarchy`` arguments of a run with ``regions`` finest regions (module docstring)."""
    if regions == STATES * PER_STATE:
        return {"by": ["state", "county"], "hierarchy": hierarchy()}
    return {"by": "state", "hierarchy": pd.DataFrame({"state": np.arange(regions)})}


def placed(n: int, regions: int) -> pd.DataFrame:
    df = persons(n)
    if regions == 1:
        df["state"] = 0
    return df


def run_once(df: pd.DataFrame, who: str, regions: int) -> None:
    if who == "ours":
        with pdp.budget(rho=1.0):
            df.dp.marginals(WORKLOAD, categories=CATEGORIES, rho=1.0, rng=np.random.default_rng(1),
                            **geography(regions))
    else:
        levels = [[], ["state"]] + ([["county"]] if regions == STATES * PER_STATE else [])
        for table in WORKLOAD:
            for level in levels:
                df.groupby([*level, *table], sort=False).size()


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        line = next(x for x in f if x.startswith(field + ":"))
    return int(line.split()[1]) * 1024


def memory_child(n: int, regions: int) -> None:
    """The measured runs of one frame in this process (``--memory-child``): prints both peaks in bytes."""
    df = placed(n, regions)
    for who in ("ours", "pandas"):
        run_once(placed(1000, regions), who, regions)       # lazy imports and caches, not measured
    peaks = []
    for who in ("ours", "pandas"):
        gc.collect()
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")                                    # reset VmHWM to the current resident set
        before = _status("VmRSS")
        run_once(df, who, regions)
        peaks.append(_status("VmHWM") - before)
    print(*peaks)


def memory_part(rows: list[int]) -> None:
    print("rows        regions   table set peak (MB)   pandas groupby peak (MB)   ratio")
    for n in rows:
        for regions in MEMORY_REGIONS:
            out = subprocess.run([sys.executable, "-m", "benchmarks.bench_census", "--memory-child", str(n),
                                  str(regions)], capture_output=True, text=True, check=True)
            ours, theirs = (int(v) / 2**20 for v in out.stdout.split()[-2:])
            print(f"{n:>10,}  {regions:7,}   {ours:19.0f}   {theirs:24.0f}   {ours / theirs:5.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--no-time", action="store_true")
    parser.add_argument("--no-accuracy", action="store_true")
    parser.add_argument("--memory", action="store_true", help="peak memory against pandas (child processes)")
    parser.add_argument("--memory-child", nargs=2, metavar=("ROWS", "REGIONS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        n, regions = args.memory_child
        memory_child(int(n), int(regions))
        return
    if args.memory:
        memory_part(args.rows)
        return
    if not args.no_accuracy:
        accuracy_part()
    if not args.no_time:
        time_part(args.rows, args.repeat)


if __name__ == "__main__":
    main()
