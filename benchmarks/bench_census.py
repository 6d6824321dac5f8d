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

Run: ``python -m benchmarks.bench_census [--rows 1000000 10000000] [--repeat 2]``
"""

from __future__ import annotations

import argparse

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--no-time", action="store_true")
    parser.add_argument("--no-accuracy", action="store_true")
    args = parser.parse_args()
    if not args.no_accuracy:
        accuracy_part()
    if not args.no_time:
        time_part(args.rows, args.repeat)


if __name__ == "__main__":
    main()
