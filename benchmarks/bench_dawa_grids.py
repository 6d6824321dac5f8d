"""DAWA, UGrid and AGrid against our other methods on the shared DPBench data (issue 17).

Run: ``python -m benchmarks.bench_dawa_grids [--trials 10] [--datasets HEPTH GOWALLA ...]
[--ratios 0.1 0.25 0.5] [--reference] [--skip-accuracy] [--skip-speed] [--out FILE]``

Accuracy: DPBench's scaled L2 error ``||W x - W x_hat||_2 / |W| / total`` (Hay et
al. SIGMOD 2016; ``benchmarks/dpbench.py``), mean over ``--trials`` releases, in
units of 1e-6, on every shared dataset, at epsilon in {0.1, 1}. 1-D workloads:
Prefix1D (all 4096 prefixes) and 2000 random ranges; 2-D: 2000 random
rectangles. Methods: identity; hierarchical (``branching="auto"``, exact GLS)
with and without ``nonnegative=True``; AHP (greedy); DPCube (least squares and
uniform); DAWA (1-D, and 2-D through the Hilbert order), given the workload it
is scored on (DAWA is workload-aware; every other method releases once per
trial and is scored on every workload); UGrid and AGrid (2-D, noisy total with
1/20 of the budget). Each table row gives the error, its standard error and
the ratio to the best method of that dataset, epsilon and workload.

``--ratios`` also runs DAWA with other partition shares (defaults: 0.25 in 1-D,
the paper's; 0.5 in 2-D, measured here). ``--reference`` adds two *reference points that are not our releases*:
``DAWA-ref`` partitions with the research code's calibration (every start
position, noise scaled to one interval's sensitivity, which we could not show
to be epsilon-DP) and our stage 2, to measure what the sound calibration costs;
``AGrid(public N)`` gets the true total as if it were public, as the research
code does.

Speed: DAWA at 4096 bins (target < 0.5 s), AGrid at 256 x 256 (< 0.5 s), DAWA
at 2**20 bins (< 10 s), on data tiled from the DPBench histograms.
"""

from __future__ import annotations

import argparse
import inspect
import io
import time
import zlib
from contextlib import redirect_stdout
from fractions import Fraction
from typing import Callable

import numpy as np
import pandas as pd

from benchmarks import dpbench
from benchmarks.bench_data_dependent import to_markdown
import pandas_dp.algorithms.dawa.strategy as dawa_strategy
from pandas_dp.algorithms.ahp import ahp
from pandas_dp.algorithms.dawa.release import DEFAULT_RATIO, DEFAULT_RATIO_2D, dawa, workload_runs
from pandas_dp.algorithms.dawa.partition import PrivatePartition
from pandas_dp.algorithms.dpcube import dpcube
from pandas_dp.algorithms.grids import agrid, ugrid
from pandas_dp.algorithms.tree.release import release_tree
from pandas_dp.privacy.loss import PureDP

EPSILONS = (0.1, 1.0)

# A method maps (counts, epsilon, rng, workload array) to estimates shaped like the counts.
Method = Callable[[np.ndarray, float, np.random.Generator, np.ndarray], np.ndarray]


def _loss(eps: float) -> PureDP:
    return PureDP(Fraction(repr(eps)))


def _budget(fn: Callable, eps: float) -> dict:
    """``epsilon=`` for the older algorithm signatures, ``loss=`` for those that take a privacy loss."""
    return {"loss": _loss(eps)} if "loss" in inspect.signature(fn).parameters else {"epsilon": eps}


def identity(x, eps, rng, w):
    return _loss(eps).noise().add(x, rng).astype(np.float64)


def hierarchical(nonnegative: bool) -> Method:
    def run(x, eps, rng, w):
        return release_tree(x, branching="auto", nonnegative=nonnegative, rng=rng,
                            **_budget(release_tree, eps)).leaf_estimates()
    return run


def ahp_greedy(x, eps, rng, w):
    return ahp(x.ravel(), rng=rng, **_budget(ahp, eps)).estimates.reshape(x.shape)


def dpcube_method(estimate: str) -> Method:
    def run(x, eps, rng, w):
        return dpcube(x, estimate=estimate, rng=rng, **_budget(dpcube, eps)).estimates
    return run


def dawa_method(ratio: float | Fraction | None = None) -> Method:
    def run(x, eps, rng, w):
        return dawa(x, loss=_loss(eps), ratio=ratio, workload=w, rng=rng).estimates
    return run


def ugrid_method(x, eps, rng, w):
    return ugrid(x, loss=_loss(eps), rng=rng).estimates


def agrid_method(x, eps, rng, w):
    return agrid(x, loss=_loss(eps), rng=rng).estimates


def agrid_public_total(x, eps, rng, w):
    return agrid(x, loss=_loss(eps), expected_total=float(x.sum()), rng=rng).estimates


# ------------------------------------------------------------------------ reference calibration (not DP)

def _research_partition(x: np.ndarray, eps1: float, b2: float, rng: np.random.Generator) -> np.ndarray:
    """Reference only: power-of-two intervals at every start, each with Laplace noise for ONE interval.

    Re-implements the calibration of the research code (dpcomp_core's approximate L1
    partition, as described in its source) to measure what our sound calibration
    costs. Each bin lies in about 2n of these intervals, so this is not shown to be
    eps1-DP; never use it for a release.
    """
    n = x.size
    xf = x.astype(np.float64)
    lengths = [1 << k for k in range(n.bit_length()) if (1 << k) <= n]
    cost = np.full((len(lengths), n + 1), np.inf)        # cost[k, e]: interval [e - L_k, e)
    for k, length in enumerate(lengths):
        win = np.lib.stride_tricks.sliding_window_view(xf, length)
        dev = np.abs(win - win.mean(axis=1, keepdims=True)).sum(axis=1)
        if length > 1:
            scale = (2.0 - 1.0 / length - 1.0 / n) / eps1
            dev = np.maximum(dev + rng.laplace(0.0, scale, dev.size), 0.0)
        cost[k, length:] = dev + b2
    best = np.zeros(n + 1)
    choice = np.zeros(n + 1, dtype=np.int64)
    steps = np.array(lengths)
    for e in range(1, n + 1):                              # sequential dynamic programme (reference only)
        ok = steps <= e
        total = best[e - steps[ok]] + cost[np.flatnonzero(ok), e]
        i = int(np.argmin(total[::-1]))                     # ties: the longest interval
        j = ok.sum() - 1 - i
        best[e], choice[e] = total[::-1][i], steps[j]
    edges = [n]
    while edges[-1] > 0:
        edges.append(edges[-1] - choice[edges[-1]])
    return np.array(edges[::-1], dtype=np.int64)


def dawa_reference(x, eps, rng, w):
    """DAWA with the research calibration of stage 1 (reference point, not a DP release)."""
    if x.ndim != 1:
        raise ValueError("the reference calibration is only run on 1-D data")
    loss = _loss(eps)
    part_loss, strat_loss = loss.split([DEFAULT_RATIO, 1 - DEFAULT_RATIO])
    edges = _research_partition(x, float(part_loss.amount), 1.0 / float(strat_loss.amount), rng)
    q, lo, hi, m = workload_runs(w, x.shape)
    from pandas_dp.algorithms.dawa.runs import bucket_runs
    strategy = dawa_strategy.choose_strategy(bucket_runs(q, lo, hi, edges, m))
    answers = dawa_strategy.answer_hierarchy(np.add.reduceat(x, edges[:-1]), strategy, loss=strat_loss, rng=rng)
    sizes = np.diff(edges)
    return np.repeat(answers.estimates / sizes, sizes)


# ------------------------------------------------------------------------ accuracy

def methods_for(dims: int, *, reference: bool, ratios: tuple[float, ...]) -> dict[str, Method]:
    out: dict[str, Method] = {
        "identity": identity,
        "hierarchical": hierarchical(False),
        "hierarchical+nn": hierarchical(True),
        "AHP": ahp_greedy,
        "DPCube(LS)": dpcube_method("least_squares"),
        "DPCube(uniform)": dpcube_method("uniform"),
        "DAWA": dawa_method(),
    }
    default = DEFAULT_RATIO if dims == 1 else DEFAULT_RATIO_2D
    for r in ratios:
        if Fraction(repr(r)) != default:
            out[f"DAWA(ratio={r})"] = dawa_method(r)
    if dims == 2:
        out["UGrid"] = ugrid_method
        out["AGrid"] = agrid_method
    if reference:
        if dims == 1:
            out["DAWA-ref"] = dawa_reference
        else:
            out["AGrid(public N)"] = agrid_public_total
    return out


WORKLOAD_AWARE = ("DAWA",)
REFERENCES = ("DAWA-ref", "AGrid(public N)")


def workloads_for(x: np.ndarray) -> dict[str, np.ndarray]:
    if x.ndim == 1:
        return {"Prefix1D": dpbench.prefix_ranges(x.size), "random ranges": dpbench.random_ranges(x.size)}
    return {"random rectangles": dpbench.random_rectangles(x.shape)}


def answers(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return dpbench.range_answers(x, w) if x.ndim == 1 else dpbench.rectangle_answers(x, w)


def _seed(*parts: object) -> int:
    return zlib.crc32("|".join(map(str, parts)).encode())


def accuracy(datasets: tuple[str, ...], trials: int, *, reference: bool, ratios: tuple[float, ...]
             ) -> pd.DataFrame:
    """Long table: one row per dataset, epsilon, workload and method."""
    rows = []
    for name, x in dpbench.available(datasets):
        total = float(x.sum())
        wls = workloads_for(x)
        truth = {wl: answers(x, w) for wl, w in wls.items()}
        for eps in EPSILONS:
            for mname, fn in methods_for(x.ndim, reference=reference, ratios=ratios).items():
                rng = np.random.default_rng(_seed(name, eps, mname))
                errs: dict[str, list[float]] = {wl: [] for wl in wls}
                secs: list[float] = []
                aware = mname.startswith(WORKLOAD_AWARE)
                for _ in range(trials):
                    if aware:
                        for wl, w in wls.items():
                            t0 = time.perf_counter()
                            est = fn(x, eps, rng, w)
                            secs.append(time.perf_counter() - t0)
                            errs[wl].append(dpbench.scaled_l2_error(truth[wl], answers(est, w), total))
                    else:
                        t0 = time.perf_counter()
                        est = fn(x, eps, rng, next(iter(wls.values())))
                        secs.append(time.perf_counter() - t0)
                        for wl, w in wls.items():
                            errs[wl].append(dpbench.scaled_l2_error(truth[wl], answers(est, w), total))
                for wl, es in errs.items():
                    rows.append({"dataset": name, "dims": x.ndim, "epsilon": eps, "workload": wl,
                                 "method": mname, "error_1e6": 1e6 * float(np.mean(es)),
                                 "sem_1e6": 1e6 * float(np.std(es, ddof=1) / np.sqrt(len(es))),
                                 "seconds": float(np.mean(secs))})
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    ours = ~frame["method"].isin(REFERENCES) & ~frame["method"].str.contains("ratio=")
    key = ["dataset", "epsilon", "workload"]
    best = frame[ours].groupby(key)["error_1e6"].min().rename("best")
    frame = frame.join(best, on=key)
    frame["ratio_to_best"] = frame["error_1e6"] / frame["best"]
    return frame.drop(columns="best")


def summaries(frame: pd.DataFrame) -> list[str]:
    parts = []
    for (dims, wl, eps), sub in frame.groupby(["dims", "workload", "epsilon"], sort=False):
        wide = sub.pivot_table(index="dataset", columns="method", values="error_1e6", sort=False)
        ratio = sub.pivot_table(index="dataset", columns="method", values="ratio_to_best", sort=False)
        cols = list(dict.fromkeys(sub["method"]))
        parts.append(f"#### {dims}-D, {wl}, epsilon = {eps}: scaled L2 error x 1e6\n\n"
                     + to_markdown(wide[cols]))
        parts.append(f"Ratio to the best of our methods (1 = best):\n\n" + to_markdown(ratio[cols]))
    ours = frame[~frame["method"].str.contains("ratio=")]
    geo = ours.assign(lr=np.log(ours["ratio_to_best"])).groupby(["dims", "method"], sort=False)["lr"]
    table = pd.DataFrame({"geo-mean ratio": np.exp(geo.mean()), "worst ratio": np.exp(geo.max()),
                          "cases best": ours.assign(w=ours["ratio_to_best"] <= 1 + 1e-12)
                          .groupby(["dims", "method"], sort=False)["w"].sum(),
                          "cases": geo.size()})
    table.loc[table.index.get_level_values("method").isin(REFERENCES), "cases best"] = np.nan
    parts.append("#### Summary over datasets, epsilons and workloads (ratio to the best of our methods; "
                 "reference points are not counted as best)\n\n" + to_markdown(table))
    return parts


def ratio_sweep(frame: pd.DataFrame) -> str | None:
    dawa_rows = frame[frame["method"].str.startswith("DAWA") & (frame["method"] != "DAWA-ref")]
    if dawa_rows["method"].nunique() < 2:
        return None
    key = ["dataset", "epsilon", "workload"]
    best = dawa_rows.groupby(key)["error_1e6"].transform("min")
    regret = dawa_rows.assign(regret=dawa_rows["error_1e6"] / best)
    table = regret.groupby(["dims", "method"])["regret"].agg(
        geo_mean=lambda r: float(np.exp(np.mean(np.log(r)))), worst="max",
        best_count=lambda r: int((r <= 1 + 1e-12).sum()))
    return ("#### DAWA's partition share (regret against the best share per case)\n\n" + to_markdown(table))


# ------------------------------------------------------------------------ speed

def _time(fn: Callable[[], object], repeat: int = 3) -> float:
    fn()                                                   # warm caches (noise tables) once
    return float(min(_timed(fn) for _ in range(repeat)))


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def speed() -> pd.DataFrame:
    rows = []
    base = dpbench.load("HEPTH")
    base = base if base is not None else np.random.default_rng(0).poisson(80, 4096)
    grid = dpbench.load("GOWALLA")
    grid = grid if grid is not None else np.random.default_rng(0).poisson(3, (256, 256))
    big = np.tile(base, (1 << 20) // base.size)
    rects = dpbench.random_rectangles(grid.shape)
    for eps in EPSILONS:
        loss = _loss(eps)
        rng = np.random.default_rng(1)
        cases = [
            ("DAWA, 4096 bins, Prefix1D", 0.5, lambda: dawa(base, loss=loss, rng=rng)),
            ("DAWA, 4096 bins, 2000 random ranges", 0.5,
             lambda: dawa(base, loss=loss, workload=dpbench.random_ranges(base.size), rng=rng)),
            ("AGrid, 256 x 256", 0.5, lambda: agrid(grid, loss=loss, rng=rng)),
            ("UGrid, 256 x 256", 0.5, lambda: ugrid(grid, loss=loss, rng=rng)),
            ("DAWA 2-D, 256 x 256, 2000 rectangles", float("nan"),
             lambda: dawa(grid, loss=loss, workload=rects, rng=rng)),
            ("DAWA, 2^20 bins, Prefix1D (2^20 queries)", 10.0, lambda: dawa(big, loss=loss, rng=rng)),
        ]
        for job, target, fn in cases:
            rows.append({"job": job, "epsilon": eps, "seconds": _time(fn, repeat=1 if "2^20" in job else 3),
                         "target_s": target})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------ main

PUBLISHED = """#### Against published numbers

* Where the numbers come from. The DAWA paper (Li, Hay, Miklau, Wang, PVLDB 2014) and the AGrid
  paper (Qardaji, Yang, Li, ICDE 2013) report their accuracy in figures, with other metrics
  (average absolute error per query; relative error with a floor of 0.1% of N) and on datasets
  that are only partly these ones (AGrid's "checkin" is Gowalla at another scale). DPBench
  (Hay et al., SIGMOD 2016) uses this scaled L2 error but on the datasets resampled to fixed
  scales (1e3 ... 1e7), in figures and on dpcomp.org's interactive viewer. None of them prints
  a table at these datasets' natural scale, so there is no printed number to hold DAWA to
  within 1.1x here; the relations stated in issue 17 (measured by the lead against
  dpcomp_core at natural scale) are the published-side evidence this run is compared with:
  research DAWA beats hierarchical+nn by up to 1.7x on sparse small-total 1-D data at
  epsilon 0.1; research AGrid beats our best 2-D method by 1.4-2.5x at epsilon 0.1; research
  DAWA-2D beat our best by 4.6x on one sparse 2-D set at epsilon 0.1.
* ``--reference`` runs DAWA-ref (the research code's stage-1 calibration with our stage 2) and
  AGrid with the true total given as public (as the research code does), so the cost of our
  privacy-sound choices can be read off the same table.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--datasets", nargs="*", default=list(dpbench.DATASETS_1D + dpbench.DATASETS_2D))
    parser.add_argument("--ratios", nargs="*", type=float, default=[],
                        help="also run DAWA with these partition shares (the default share is 0.25)")
    parser.add_argument("--reference", action="store_true",
                        help="add DAWA-ref and AGrid(public N), reference points that are not DP releases")
    parser.add_argument("--skip-accuracy", action="store_true")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--out", default=None, help="also write the whole output to this file")
    args = parser.parse_args()
    buf = io.StringIO()
    with redirect_stdout(buf):
        print(f"# DAWA, UGrid, AGrid on DPBench ({args.trials} trials; timings on a shared machine, noisy)\n")
        if not args.skip_accuracy:
            frame = accuracy(tuple(args.datasets), args.trials, reference=args.reference,
                             ratios=tuple(args.ratios))
            if not frame.empty:
                print("\n\n".join(summaries(frame)))
                sweep = ratio_sweep(frame)
                if sweep:
                    print("\n" + sweep)
                print("\n" + PUBLISHED)
                print("#### Every row (dataset, epsilon, workload, method)\n")
                print(to_markdown(frame.drop(columns="dims"), index=False))
        if not args.skip_speed:
            print("\n#### Speed (best of 3 runs; 2^20 bins: one run)\n")
            print(to_markdown(speed(), index=False))
    text = buf.getvalue()
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
