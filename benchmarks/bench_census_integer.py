"""Integer and non-negative census tables with public totals: every level's accuracy (issue 44, item 1).

The issue's shape, synthetic: 4 regions > 51 states of unequal size (log-normal, 30 to a few thousand
persons), four tables (age x sex, race x college, age x race, sex x college), rho = 0.5, public state
totals. Per level (national, region, state), the RMSE of one cell against the truth for the
unconstrained tables, ``nonnegative()`` and ``integer()``, over ``--seeds`` seeds, with the ratios to the
unconstrained RMSE (the target: at most 1.15x at every level), then the same without public totals.
Also the time of ``integer()`` (fit and rounding) against pandas ``groupby(...).size()`` of every table
at every level, in the same run.

Run: ``python -m benchmarks.bench_census_integer [--seeds 10]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

import pandas_dp as pdp

WORKLOAD = [("age", "sex"), ("race", "college"), ("age", "race"), ("sex", "college")]
CATEGORIES = {"age": list(range(6)), "sex": [0, 1], "race": list(range(5)), "college": [0, 1]}
LEVELS = ("national", "region", "state")


def survey(seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    region = np.r_[np.arange(4), rng.integers(0, 4, 47)]
    pop = np.round(rng.lognormal(np.log(600), 1.0, 51)).astype(int) + 30
    state = np.repeat(np.arange(51), pop)
    n = state.size
    frame = pd.DataFrame({"region": region[state], "state": state, "age": rng.integers(0, 6, n),
                          "sex": rng.integers(0, 2, n), "race": rng.choice(5, n, p=[.6, .15, .12, .08, .05]),
                          "college": (rng.random(n) < .35).astype(int)})
    return frame, pd.DataFrame({"region": region, "state": np.arange(51)})


def truth(frame: pd.DataFrame, level: str, table: tuple[str, ...]) -> np.ndarray:
    keys = [] if level == "national" else [level]
    regions = [sorted(frame[level].unique())] if keys else []
    index = pd.MultiIndex.from_product(regions + [CATEGORIES[c] for c in table])
    return frame.groupby(keys + list(table)).size().reindex(index, fill_value=0).to_numpy(float)


def level_values(result, frame: pd.DataFrame, level: str, table: tuple[str, ...]) -> np.ndarray:
    if level == "national":
        return result.table(table).counts.to_numpy(float)
    return np.concatenate([result.table(table, level=level, region=r).counts.to_numpy(float)
                           for r in sorted(frame[level].unique())])


def accuracy(frame: pd.DataFrame, hierarchy: pd.DataFrame, seeds: int, totals: bool) -> float:
    public = {"state": frame.groupby("state").size().astype(float)} if totals else None
    squared: dict[tuple[str, str], list[np.ndarray]] = {}
    spent = 0.0
    for seed in range(seeds):
        with pdp.budget(rho=0.5):
            release = frame.dp.marginals(WORKLOAD, categories=CATEGORIES, by=["region", "state"], hierarchy=hierarchy,
                                         rho=0.5, public_totals=public, rng=np.random.default_rng(seed))
        t0 = time.perf_counter()
        ints = release.integer()
        spent += time.perf_counter() - t0
        for name, result in (("unconstrained", release), ("nonnegative", release.nonnegative()), ("integer", ints)):
            for level in LEVELS:
                for table in WORKLOAD:
                    error = level_values(result, frame, level, table) - truth(frame, level, table)
                    squared.setdefault((name, level), []).append(error ** 2)
    print(f"{'with' if totals else 'without'} public state totals ({seeds} seeds): RMSE of one cell")
    for level in LEVELS:
        base = np.sqrt(np.mean(np.concatenate(squared[("unconstrained", level)])))
        text = "  ".join(f"{name} {np.sqrt(np.mean(np.concatenate(squared[(name, level)]))):5.2f} "
                         f"({np.sqrt(np.mean(np.concatenate(squared[(name, level)]))) / base:.2f}x)"
                         for name in ("nonnegative", "integer"))
        print(f"  {level:9s} unconstrained {base:5.2f}  {text}")
    return spent / seeds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args()
    frame, hierarchy = survey()
    print(f"{len(frame):,} persons in 51 states of 4 regions, joint of "
          f"{np.prod([len(c) for c in CATEGORIES.values()])} cells")
    integer_time = accuracy(frame, hierarchy, args.seeds, totals=True)
    accuracy(frame, hierarchy, args.seeds, totals=False)
    t0 = time.perf_counter()
    for table in WORKLOAD:
        for level in LEVELS:
            frame.groupby(([] if level == "national" else [level]) + list(table)).size()
    pandas_time = time.perf_counter() - t0
    print(f"integer() with totals {integer_time:.3f} s; pandas groupby of the 12 tables {pandas_time:.3f} s "
          f"({integer_time / pandas_time:.1f}x)")


if __name__ == "__main__":
    main()
