"""Scale benchmark: hierarchical count-of-counts at census scale.

A generated census-like table (default 10^7 persons in 4*10^6 households,
national > 50 states > 3,000 counties) released with
``persons.dp.count_of_counts`` against the plain, non-private pandas
count-of-counts (groupby size, then value_counts per region at each level)
on the same frames in the same run. Reports wall time, the ratio (target
<= 5x, DESIGN.md section 5) and peak memory allocated beyond the inputs
(tracemalloc, which also sees numpy buffers).

Run: ``python benchmarks/bench_count_of_counts.py [--persons N] [--households N] [--methods hc,hg]``
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from typing import Any, Callable

import numpy as np
import pandas as pd

import pandas_dp as pdp


def make_census(n_persons: int, n_households: int, n_states: int = 50, n_counties: int = 3000,
                seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Persons and the public Households table; sizes ~ 1 + Poisson, a few large group quarters."""
    rng = np.random.default_rng(seed)
    county = rng.integers(0, n_counties, size=n_households)
    state = county * n_states // n_counties
    mean_extra = max(n_persons / n_households - 1.0, 0.0)
    sizes = 1 + rng.poisson(mean_extra, size=n_households)
    sizes[rng.random(n_households) < 0.01] = 0                 # vacant units: groups with no person
    gq = rng.choice(n_households, size=min(50, n_households), replace=False)
    sizes[gq] = rng.integers(100, 3000, size=gq.size)          # group quarters (heavy tail)
    # Adjust to exactly n_persons by adding/removing persons in random non-GQ households.
    diff = n_persons - int(sizes.sum())
    if diff > 0:
        np.add.at(sizes, rng.integers(0, n_households, size=diff), 1)
    while diff < 0:
        idx = rng.integers(0, n_households, size=-diff)
        take = np.bincount(idx, minlength=n_households)
        sizes = sizes - np.minimum(take, sizes)
        diff = n_persons - int(sizes.sum())
    households = pd.DataFrame({"household_id": np.arange(n_households, dtype=np.int64),
                               "state": state.astype(np.int64), "county": county.astype(np.int64)})
    hh = np.repeat(np.arange(n_households, dtype=np.int64), sizes)
    persons = pd.DataFrame({"household_id": hh, "state": state[hh], "county": county[hh]})
    return persons, households


def nonprivate_count_of_counts(persons: pd.DataFrame, households: pd.DataFrame) -> list[pd.Series]:
    """Plain pandas: group sizes (empty households included), then value_counts per region and level."""
    sizes = persons.groupby("household_id").size().reindex(households["household_id"], fill_value=0)
    frame = households.assign(size=sizes.to_numpy())
    out = [frame["size"].value_counts()]
    for level in ("state", "county"):
        out.append(frame[[level, "size"]].value_counts())
    return out


def measure(fn: Callable[[], Any], repeats: int = 1) -> tuple[float, float, Any]:
    """Best wall time (s) over ``repeats`` and peak traced allocation (MB) of one call."""
    best = np.inf
    result = None
    for _ in range(repeats):
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return best, peak / 2**20, result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--persons", type=int, default=10_000_000)
    ap.add_argument("--households", type=int, default=4_000_000)
    ap.add_argument("--methods", default="hc,hg")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    t = time.perf_counter()
    persons, households = make_census(args.persons, args.households)
    print(f"generated {len(persons):,} persons in {len(households):,} households "
          f"(1 / {households['state'].nunique()} / {households['county'].nunique()} regions) "
          f"in {time.perf_counter() - t:.1f} s; input {persons.memory_usage().sum() / 2**20:.0f} MB + "
          f"{households.memory_usage().sum() / 2**20:.0f} MB")
    base_t, base_m, _ = measure(lambda: nonprivate_count_of_counts(persons, households), args.repeats)
    print(f"non-private pandas count-of-counts: {base_t:6.2f} s, peak {base_m:7.0f} MB")
    for method in args.methods.split(","):
        def release(method: str = method) -> pdp.CountOfCounts:
            with pdp.budget(1.0):
                return persons.dp.count_of_counts("household_id", ["state", "county"], epsilon=1.0,
                                                  groups=households, method=method, progress=False,
                                                  rng=np.random.default_rng(0))
        dp_t, dp_m, coc = measure(release, args.repeats)
        print(f"dp count_of_counts method={method:5s}: {dp_t:6.2f} s, peak {dp_m:7.0f} MB, "
              f"ratio {dp_t / base_t:4.2f}x (target <= 5x), K={coc.params['max_size']}, "
              f"{len(coc.frame):,} output rows")


if __name__ == "__main__":
    main()
