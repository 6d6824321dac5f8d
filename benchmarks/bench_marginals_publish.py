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

Run: ``python -m benchmarks.bench_marginals_publish [--seeds 10]``
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
                got = {"unconstrained": t.table(table).counts.to_numpy(), "nonnegative": nonneg.table(table).to_numpy(),
                       "integer": ints.table(table).to_numpy(dtype=float),
                       "sample": records.groupby(list(table), observed=False).size().to_numpy(dtype=float)}
                for name, values in got.items():
                    errors[name].append(float(np.mean((values - truth[table]) ** 2)))
        summary = ", ".join(f"{k} {np.sqrt(np.mean(v)):.2f}" for k, v in errors.items())
        print(f"accuracy rho={rho}: RMSE per cell {summary}; negative unconstrained cells {np.mean(negative):.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args()
    speed()
    accuracy(args.seeds)


if __name__ == "__main__":
    main()
