"""Speed and memory of ``df.dp.aggregate`` (statistics per cell) against pandas' and Dask's own ``groupby.agg``.

Run: ``python -m benchmarks.bench_aggregate [--rows 10000000] [--cells 1000] [--repeat 5] [--partitions 20]
[--no-dask] [--no-memory] [--no-breakdown] [--profile]``

Synthetic data (seed 0): ``--rows`` rows, ``--cells`` cells (``cells / 20`` regions times 20 age bands,
two int64 cell columns), a skewed ``income`` (lognormal, median about 30,000, float64) and ``hours``
(normal around 38, rounded, float64). The job is the issue's (42): a count, two sums and two means,

* pandas_dp: ``df.dp.aggregate(["region", "band"], {"income": ["count", "sum", "mean"], "hours": ["sum",
  "mean"]}, bounds={"income": (0, 250_000), "hours": (0, 100)}, resolution={"income": 100},
  categories=<the public codes>, epsilon=1)`` inside one large budget (secure noise, the production
  default: checks, domain, one pass over the rows that clips, rounds and sums exactly, noise, the result);
* pandas: ``df.groupby(["region", "band"]).agg(the same aggs)`` (no clipping, no rounding);
* a second case puts the cells in one ``Categorical`` column of ``--cells`` string labels
  (``categories="dtype"``; pandas ``groupby(observed=True)``).

Every timing is the **median** of ``--repeat`` runs, the releases and their baselines interleaved run by
run (the machine is shared: read ratios from one run, not absolute times across runs). Target (issue 42):
the release within 2x of pandas' ``groupby.agg`` of the same statistics in the same run.

``--memory`` (default): the peak traced by ``tracemalloc`` (numpy included) while each runs, in MiB, beside
the input's size. ``--breakdown`` (default): the release's steps, each a median on its own: the public
domain (``make_grid``), the engine's one pass (``value_sums``: clip, round, code the cells, exact sums),
and the fixed cost of the call (the same release on the first 1,000 rows: checks, plan, budget and
ledger, noise on the cells, the result).
``--profile``: ``cProfile`` of one release of each case, the 25 largest cumulative entries.

``--dask`` (default, when dask is installed): the same frame as ``dd.from_pandas(df, npartitions=
--partitions)``, persisted, on Dask's default threaded scheduler: ``ddf.dp.aggregate(...)`` against
``ddf.groupby(cells).agg(aggs).compute()`` on the same partitions (Dask's floor: its own grouped
aggregation), medians interleaved the same way. Target: at the Dask floor (ratio near 1).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import time
from typing import Any, Callable

import numpy as np
import pandas as pd

import pandas_dp as pdp
from benchmarks._timing import traced_peak
from pandas_dp.domain.grid import make_grid
from pandas_dp.engines.pandas import PANDAS_ENGINE
from pandas_dp.engines.pandas.values import ValueGrid

AGGS = {"income": ["count", "sum", "mean"], "hours": ["sum", "mean"]}
BOUNDS = {"income": (0, 250_000), "hours": (0, 100)}
RESOLUTION = {"income": 100}
BANDS = 20


def medians(fns: dict[str, Callable[[], Any]], repeat: int) -> dict[str, float]:
    """Median wall-clock seconds of every function, the functions run in turn ``repeat`` times (interleaved)."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for key, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - start)
    return {k: statistics.median(v) for k, v in times.items()}


def make_frames(rows: int, cells: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(two int64 cell columns, one Categorical cell column) frames with the same values, seed 0."""
    if cells % BANDS:
        raise SystemExit(f"--cells must be a multiple of {BANDS}")
    rng = np.random.default_rng(0)
    region = rng.integers(0, cells // BANDS, rows)
    band = rng.integers(0, BANDS, rows)
    income = rng.lognormal(np.log(30_000), 0.9, rows)
    hours = np.round(rng.normal(38, 10, rows))
    two = pd.DataFrame({"region": region, "band": band, "income": income, "hours": hours})
    labels = pd.Index([f"cell{i:05d}" for i in range(cells)])
    cell = pd.Categorical.from_codes(region * BANDS + band, dtype=pd.CategoricalDtype(labels))
    one = pd.DataFrame({"cell": cell, "income": income, "hours": hours})
    return two, one


def cases(two: pd.DataFrame, one: pd.DataFrame, cells: int) -> list[tuple[str, Any, list[str], dict[str, Any]]]:
    """(name, frame, cell columns, the release's domain keywords)."""
    return [
        ("2 int64 columns", two, ["region", "band"],
         {"categories": {"region": list(range(cells // BANDS)), "band": list(range(BANDS))}}),
        ("1 Categorical column", one, ["cell"], {"categories": "dtype"}),
    ]


def release_fn(frame: Any, cols: list[str], domain: dict[str, Any]) -> Callable[[], Any]:
    budget = pdp.budget(epsilon=1e12)

    def release() -> Any:
        with budget:
            return frame.dp.aggregate(cols, AGGS, bounds=BOUNDS, resolution=RESOLUTION, epsilon=1.0, **domain)
    return release


def pandas_fn(frame: pd.DataFrame, cols: list[str]) -> Callable[[], Any]:
    return lambda: frame.groupby(cols, observed=True).agg(AGGS)


def breakdown(frame: pd.DataFrame, cols: list[str], domain: dict[str, Any], repeat: int) -> dict[str, float]:
    """Median seconds of the release and its steps: the domain, the engine's pass, and the fixed cost of the
    call (the same release on the first 1,000 rows: checks, plan, budget and ledger, noise, the result)."""
    grid = make_grid(frame, cols, **domain)
    value_grids = [ValueGrid("income", 0, 2_500, 100.0), ValueGrid("hours", 0, 100, 1.0)]
    return medians({"release": release_fn(frame, cols, domain),
                    "domain (make_grid)": lambda: make_grid(frame, cols, **domain),
                    "engine pass (value_sums)": lambda: PANDAS_ENGINE.value_sums(frame, grid, value_grids),
                    "fixed cost (release on 1,000 rows)": release_fn(frame.iloc[:1000], cols, domain)},
                   repeat)


def profile(fn: Callable[[], Any]) -> str:
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(25)
    return out.getvalue()


def dask_rows(frames: list[tuple[str, Any, list[str], dict[str, Any]]], partitions: int,
              repeat: int) -> list[dict[str, Any]]:
    try:
        import dask
        import dask.dataframe as dd
    except ImportError as err:
        print(f"Dask skipped (not importable: {err})")
        return []
    out = []
    for name, frame, cols, domain in frames:
        ddf = dd.from_pandas(frame, npartitions=partitions).persist()
        fns = {"dp": release_fn(ddf, cols, domain),
               "dask": lambda: ddf.groupby(cols, observed=True).agg(AGGS).compute()}
        t = medians(fns, repeat)
        out.append({"case": name, "partitions": partitions, "dask groupby.agg s": t["dask"],
                    "ddf.dp.aggregate s": t["dp"], "ratio": t["dp"] / t["dask"],
                    "scheduler": dask.config.get("scheduler", "threads (default)")})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--cells", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--no-dask", dest="dask", action="store_false")
    parser.add_argument("--no-memory", dest="memory", action="store_false")
    parser.add_argument("--no-breakdown", dest="breakdown", action="store_false")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    pd.set_option("display.width", 200)
    two, one = make_frames(args.rows, args.cells)
    frames = cases(two, one, args.cells)
    print(f"{args.rows:,} rows, {args.cells:,} cells, aggs={AGGS}; median of {args.repeat} interleaved runs; "
          f"pandas {pd.__version__}, numpy {np.__version__}")
    rows = []
    for name, frame, cols, domain in frames:
        release = release_fn(frame, cols, domain)
        t = medians({"dp": release, "pandas": pandas_fn(frame, cols)}, args.repeat)
        row = {"case": name, "pandas groupby.agg s": t["pandas"], "df.dp.aggregate s": t["dp"],
               "ratio": t["dp"] / t["pandas"]}
        if args.memory:
            row["input MiB"] = frame.memory_usage(deep=True).sum() / 2**20
            row["pandas peak MiB"] = traced_peak(pandas_fn(frame, cols))
            row["dp peak MiB"] = traced_peak(release)
            row["peak ratio"] = row["dp peak MiB"] / row["pandas peak MiB"]
        rows.append(row)
    print("\npandas (target: ratio <= 2)")
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if args.breakdown:
        name, frame, cols, domain = frames[0]
        steps = breakdown(frame, cols, domain, args.repeat)
        table = pd.DataFrame({"seconds": steps, "share of release": {k: v / steps["release"]
                                                                    for k, v in steps.items()}})
        print(f"\nbreakdown of the release ({name}), medians of {args.repeat}")
        print(table.to_string(float_format=lambda v: f"{v:.3f}"))
    if args.profile:
        for name, frame, cols, domain in frames:
            print(f"\ncProfile of one release ({name}), by cumulative time")
            print(profile(release_fn(frame, cols, domain)))
    if args.dask:
        drows = dask_rows(frames, args.partitions, args.repeat)
        if drows:
            print("\nDask, same partitions, threaded scheduler (target: ratio near 1, the Dask floor)")
            print(pd.DataFrame(drows).to_string(index=False, float_format=lambda v: f"{v:.3f}"))


if __name__ == "__main__":
    main()
