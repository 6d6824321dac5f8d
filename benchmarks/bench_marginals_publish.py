"""Publishable table sets: speed and error of ``nonnegative``, ``integer`` and ``sample``.

Two parts, one command (about a minute on the 2-core reference machine):

1. **speed**: the projection (FISTA), the record model (IPF), the integer rounding and a sample of the
   whole total, on joints of 16^4 and 32^4 cells with their six two-way tables, from sparse synthetic
   counts (about 6 * 10^5 and 10^7 persons) plus Gaussian noise of standard deviation 30; printed
   with the solver's steps, the model's fit and the integer tables' RMSE against the non-negative
   ones, table by table (the leading table is within 1 in every cell).
2. **accuracy**: on the bundled synthetic persons (age in 19 bins x sex x 30 counties, the three
   two-way tables), the RMSE of one cell against the true tables for the unconstrained release,
   its non-negative and integer tables and the tables of a sample of the published total, over
   ``--seeds`` seeds at two values of rho, with the share of negative unconstrained cells.

3. **by geography**: 3,000 counties in 50 states, four tables over four attributes (a 144-cell joint),
   3 * 10^5 synthetic persons at rho=1: the release, ``nonnegative()`` and ``integer()`` timed, with
   the county-level RMSE against the unconstrained tables (the ``error()`` figures) and against the truth.

Run: ``python -m benchmarks.bench_marginals_publish [--seeds 10] [--part all|speed|accuracy|by]``
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
import pandas as pd

import pandas_dp as pdp
from pandas_dp.algorithms.marginals.nonnegative import project_nonnegative, table_of
from pandas_dp.algorithms.marginals.sample import fit_model, integer_joint, sample_joint
from pandas_dp.data import load_persons


def speed() -> None:
    rng = np.random.default_rng(0)
    for size in (16, 32):
        shape = (size,) * 4
        tables = list(itertools.combinations(range(4), 2))
        truth = rng.poisson(rng.gamma(0.3, 30.0, size=shape)).astype(float)
        noisy = [table_of(truth, t) + rng.normal(0.0, 30.0, size=(size, size)) for t in tables]
        t0 = time.perf_counter()
        fit = project_nonnegative(shape, tables, noisy, [1.0] * len(tables))
        t1 = time.perf_counter()
        published = [table_of(fit.joint, t) for t in tables]
        model = fit_model(shape, tables, published, support=fit.joint > 0)
        t2 = time.perf_counter()
        total = int(round(float(fit.joint.sum())))
        ints = integer_joint(model.joint, total, first=tables[0])
        t3 = time.perf_counter()
        sample_joint(model.joint, total, np.random.default_rng(1))
        t4 = time.perf_counter()
        rmse = [float(np.sqrt(np.mean((table_of(ints.astype(float), t) - p) ** 2))) for t, p in zip(tables, published)]
        print(f"speed {size}^4 ({truth.sum():,.0f} persons): projection {t1 - t0:.2f}s ({fit.iterations} steps), "
              f"IPF {t2 - t1:.2f}s ({model.sweeps} sweeps, fit {model.error:.1e}), rounding {t3 - t2:.2f}s, "
              f"sample {t4 - t3:.2f}s; integer RMSE per table {[round(r, 2) for r in rmse]}")


def accuracy(seeds: int) -> None:
    persons = load_persons()
    counties = sorted(persons["county"].unique())     # the benchmark's public domain (a fixed list)
    workload = [("age", "sex"), ("sex", "county"), ("age", "county")]
    domains = dict(bins={"age": list(range(0, 100, 5))}, categories={"sex": ["F", "M"], "county": counties})
    binned = persons.assign(age=pd.cut(persons["age"], domains["bins"]["age"], right=False))
    truth = {t: binned.groupby(list(t), observed=False).size().to_numpy(dtype=float) for t in workload}
    for rho in (0.01, 0.1):
        errors: dict[str, list[float]] = {"unconstrained": [], "nonnegative": [], "integer": [], "sample": []}
        negative = []
        for seed in range(seeds):
            with pdp.budget(rho=rho):
                t = persons.dp.marginals(workload, **domains, rho=rho, rng=np.random.default_rng(seed))
            nonneg, ints = t.nonnegative(), t.integer()
            records = nonneg.sample(rng=np.random.default_rng(seed))
            negative.append(float((t.to_frame()["estimate"] < 0).mean()))
            for table in workload:
                got = {"unconstrained": t.table(table).counts.to_numpy(),
                       "nonnegative": nonneg.table(table).counts.to_numpy(),
                       "integer": ints.table(table).counts.to_numpy(dtype=float),
                       "sample": records.groupby(list(table), observed=False).size().to_numpy(dtype=float)}
                for name, values in got.items():
                    errors[name].append(float(np.mean((values - truth[table]) ** 2)))
        summary = ", ".join(f"{k} {np.sqrt(np.mean(v)):.2f}" for k, v in errors.items())
        print(f"accuracy rho={rho}: RMSE per cell {summary}; negative unconstrained cells {np.mean(negative):.1%}")


def by_geography(persons: int = 300_000, rho: float = 1.0) -> None:
    """3,000 counties in 50 states, four tables (age x sex, race x hispanic, age x race, sex x race):
    the release, then its ``nonnegative()`` and ``integer()`` tables by geography, timed, with their
    county-level RMSE against the unconstrained tables and against the truth."""
    rng = np.random.default_rng(0)
    states = [f"S{s:02d}" for s in range(50)]
    counties = [f"{s}-{c:02d}" for s in states for c in range(60)]
    hierarchy = pd.DataFrame({"state": np.repeat(states, 60), "county": counties})
    weight = rng.gamma(0.7, size=len(counties))
    county = rng.choice(len(counties), size=persons, p=weight / weight.sum())
    frame = pd.DataFrame({"state": hierarchy["state"].to_numpy()[county], "county": hierarchy["county"].to_numpy()[county],
                          "age": rng.choice(6, size=persons, p=[.22, .1, .25, .2, .13, .1]),
                          "sex": rng.integers(0, 2, persons), "race": rng.choice(6, size=persons, p=[.6, .13, .06, .01, .1, .1]),
                          "hispanic": rng.choice(2, size=persons, p=[.8, .2])})
    workload = [("age", "sex"), ("race", "hispanic"), ("age", "race"), ("sex", "race")]
    cats = {"age": list(range(6)), "sex": [0, 1], "race": list(range(6)), "hispanic": [0, 1]}
    with pdp.budget(rho=rho):
        t0 = time.perf_counter()
        t = frame.dp.marginals(workload, categories=cats, rho=rho, by=["state", "county"], hierarchy=hierarchy,
                               rng=np.random.default_rng(1))
        t1 = time.perf_counter()
    nonneg = t.nonnegative()
    t2 = time.perf_counter()
    ints = nonneg.integer()   # the same as t.integer(), without fitting again
    t3 = time.perf_counter()
    fit = nonneg.params["publish"]
    print(f"by geography ({persons:,} persons, {len(counties):,} counties in {len(states)} states, joint "
          f"{np.prod(t.domain.shape)} cells, rho={rho}): release {t1 - t0:.2f}s, nonnegative {t2 - t1:.2f}s "
          f"(solver steps per level {fit['solver_iterations']}), integer {t3 - t2:.2f}s")
    est = t.geography
    for name, result in (("nonnegative", nonneg), ("integer", ints)):
        err = result.error()
        county = err[err["level"] == "county"]
        print(f"  {name}: county-level RMSE vs unconstrained per table "
              f"{[round(v, 3) for v in county['rmse_vs_unconstrained']]}"
              + (f", rounding's extra RMSE {[round(v, 3) for v in county['rmse_vs_nonnegative']]}"
                 if name == "integer" else ""))
    for table in workload:
        axes = sorted(t.columns.index(c) for c in table)
        truth = frame.groupby(["county", *(t.columns[a] for a in axes)], observed=False).size()
        true = truth.reindex(pd.MultiIndex.from_product([counties, *(cats[t.columns[a]] for a in axes)]),
                             fill_value=0).to_numpy(dtype=float).reshape(len(counties), -1)
        gls = est.marginal(2, axes).reshape(len(counties), -1)
        errs = {"unconstrained": gls,
                "nonnegative": nonneg._values(np.asarray(nonneg.joints[2]), axes).reshape(len(counties), -1),
                "integer": ints._values(np.asarray(ints.joints[2]), axes).reshape(len(counties), -1)}
        text = ", ".join(f"{k} {np.sqrt(np.mean((v - true) ** 2)):.3f}" for k, v in errs.items())
        print(f"  {' x '.join(table)}: county RMSE vs truth {text}; negative unconstrained cells {np.mean(gls < 0):.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--part", choices=["all", "speed", "accuracy", "by"], default="all")
    args = parser.parse_args()
    if args.part in ("all", "speed"):
        speed()
    if args.part in ("all", "accuracy"):
        accuracy(args.seeds)
    if args.part in ("all", "by"):
        by_geography()


if __name__ == "__main__":
    main()
