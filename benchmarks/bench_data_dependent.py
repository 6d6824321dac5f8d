"""Accuracy and speed of the data-dependent histograms (AHP, DPCube) on DPBench.

Run: ``python -m benchmarks.bench_data_dependent [--trials 20] [--sweep] [--out results.md]``.

Accuracy: DPBench scaled L2 error (Hay et al. 2016), mean over trials, in units
of 1e-6, for identity, hierarchical (``branching="auto"``, exact GLS
inference), AHP (greedy) and DPCube (least squares and uniform), at epsilon in
{0.1, 1}. 1-D: Prefix1D and 2000 random ranges; 2-D: 2000 random rectangles.
Datasets that are absent are skipped. ``--sweep`` adds the signal sweep behind
``method="auto"`` (datasets resampled to 1e3..1e6 rows; single bins too).

Speed: AHP at 2^20 bins (target < 5 s) and DPCube at 1000 x 1000 cells
(target < 10 s), on data built by tiling / upsampling DPBench histograms.
"""

from __future__ import annotations

import argparse
import time
from typing import Callable

import numpy as np
import pandas as pd

from benchmarks import dpbench
from pandas_dp.algorithms.ahp import ahp
from pandas_dp.algorithms.dpcube import dpcube
from pandas_dp.noise.laplace import discrete_laplace, noise_scale
from pandas_dp.privacy.loss import pure

Estimator = Callable[[np.ndarray, float, np.random.Generator], np.ndarray]


def identity(x: np.ndarray, eps: float, rng: np.random.Generator) -> np.ndarray:
    return (x + discrete_laplace(noise_scale(1, eps), x.shape, rng=rng)).astype(np.float64)


def hierarchical(x: np.ndarray, eps: float, rng: np.random.Generator) -> np.ndarray:
    """Hierarchical H_b^c with branching="auto" (Qardaji et al.), exact GLS inference."""
    from pandas_dp.algorithms.tree.release import release_tree
    return release_tree(x, loss=pure(eps), branching="auto", rng=rng).leaf_estimates()


def ahp_greedy(x: np.ndarray, eps: float, rng: np.random.Generator) -> np.ndarray:
    return ahp(x.ravel(), loss=pure(eps), rng=rng).estimates.reshape(x.shape)


def dpcube_ls(x: np.ndarray, eps: float, rng: np.random.Generator) -> np.ndarray:
    return dpcube(x, loss=pure(eps), estimate="least_squares", rng=rng).estimates


def dpcube_uniform(x: np.ndarray, eps: float, rng: np.random.Generator) -> np.ndarray:
    return dpcube(x, loss=pure(eps), estimate="uniform", rng=rng).estimates


METHODS: dict[str, Callable] = {
    "identity": identity,
    "hierarchical(auto)": hierarchical,
    "AHP(greedy)": ahp_greedy,
    "DPCube(LS)": dpcube_ls,
    "DPCube(uniform)": dpcube_uniform,
}


def workload_errors(x: np.ndarray, estimate: np.ndarray, *, bins: bool = False) -> dict[str, float]:
    """Scaled L2 errors of an estimate on the dataset's workloads (and single bins if ``bins``)."""
    total = float(x.sum())
    out = {}
    if bins:
        out["bins"] = dpbench.scaled_l2_error(x.ravel(), estimate.ravel(), total)
    if x.ndim == 1:
        for name, w in (("Prefix1D", dpbench.prefix_ranges(x.size)),
                        ("random ranges", dpbench.random_ranges(x.size))):
            out[name] = dpbench.scaled_l2_error(dpbench.range_answers(x, w),
                                                dpbench.range_answers(estimate, w), total)
        return out
    w = dpbench.random_rectangles(x.shape)
    out["random rectangles"] = dpbench.scaled_l2_error(dpbench.rectangle_answers(x, w),
                                                       dpbench.rectangle_answers(estimate, w), total)
    return out


def accuracy_table(datasets: tuple[str, ...], epsilons: tuple[float, ...], trials: int,
                   methods: dict[str, Callable], seed: int = 2016) -> pd.DataFrame:
    """Mean scaled L2 error (x 1e6) per dataset, workload, epsilon and method."""
    rows = []
    for name, x in dpbench.available(datasets):
        for eps in epsilons:
            for mname, fn in methods.items():
                rng = np.random.default_rng(seed)
                errs: dict[str, list[float]] = {}
                t0 = time.perf_counter()
                for _ in range(trials):
                    est = fn(x, eps, rng)
                    for wl, e in workload_errors(x, est).items():
                        errs.setdefault(wl, []).append(e)
                secs = (time.perf_counter() - t0) / trials
                for wl, es in errs.items():
                    rows.append({"dataset": name, "epsilon": eps, "workload": wl, "method": mname,
                                 "error_1e6": 1e6 * float(np.mean(es)),
                                 "sem_1e6": 1e6 * float(np.std(es, ddof=1) / np.sqrt(len(es))),
                                 "seconds": secs})
    return pd.DataFrame(rows)


def signal_sweep(totals: tuple[int, ...] = (1_000, 10_000, 100_000, 1_000_000), eps: float = 1.0,
                 trials: int = 10) -> pd.DataFrame:
    """Which method wins as a function of the signal ``total * epsilon / cells``.

    As in DPBench, each dataset's shape is kept and its scale varied: the true data is a
    multinomial sample of ``total`` rows from the dataset's empirical distribution (fixed
    seed). Errors depend on ``total`` and ``epsilon`` mostly through their product, the
    quantity ``method="auto"`` can know in advance (``expected_total``).
    """
    rows = []
    for name in dpbench.DATASETS_1D + dpbench.DATASETS_2D:
        base = dpbench.load(name)
        if base is None:
            continue
        p = base.ravel() / base.sum()
        for total in totals:
            x = np.random.default_rng(11).multinomial(total, p).reshape(base.shape).astype(np.int64)
            errs: dict[tuple[str, str], list[float]] = {}
            for mname, fn in METHODS.items():
                rng = np.random.default_rng(5)
                for _ in range(trials):
                    for wl, e in workload_errors(x, fn(x, eps, rng), bins=True).items():
                        errs.setdefault((mname, wl), []).append(e)
            for (mname, wl), es in errs.items():
                rows.append({"dataset": name, "dims": base.ndim, "total": total,
                             "signal": total * eps / base.size, "workload": wl, "method": mname,
                             "error_1e6": 1e6 * float(np.mean(es))})
    return pd.DataFrame(rows)


def sweep_summary(sweep: pd.DataFrame) -> pd.DataFrame:
    """Winner counts and geometric-mean error ratio to identity per (dims, signal, workload)."""
    key = ["dims", "signal", "workload", "dataset"]
    wide = sweep.pivot_table(index=key, columns="method", values="error_1e6")
    ratio = wide.div(wide["identity"], axis=0)
    out = np.exp(np.log(ratio).groupby(level=["dims", "signal", "workload"]).mean())
    out.columns = [f"{c} / identity" for c in out.columns]
    winners = wide.idxmin(axis=1).groupby(level=["dims", "signal", "workload"]).agg(
        lambda w: ", ".join(f"{k} {v}" for k, v in w.value_counts().items()))
    return out.assign(wins=winners)


def speed_checks() -> pd.DataFrame:
    """AHP at 2^20 bins and DPCube at 1000 x 1000 cells (wall-clock seconds)."""
    rows = []
    base = dpbench.load("HEPTH")
    base = base if base is not None else np.random.default_rng(0).poisson(80, 4096)
    x1 = np.tile(base, 2 ** 20 // base.size)
    for eps in (0.1, 1.0):
        t0 = time.perf_counter()
        r = ahp(x1, loss=pure(eps), rng=np.random.default_rng(1))
        rows.append({"job": "AHP greedy, 2^20 bins", "epsilon": eps,
                     "seconds": time.perf_counter() - t0, "target_s": 5.0,
                     "structure": f"{r.cluster_sizes.size} clusters"})
    g = dpbench.load("GOWALLA")
    g = g if g is not None else np.random.default_rng(0).poisson(3, (256, 256))
    x2 = np.kron(g, np.ones((4, 4), dtype=np.int64))[:1000, :1000]
    for eps in (0.1, 1.0):
        for est in ("least_squares", "uniform"):
            t0 = time.perf_counter()
            r = dpcube(x2, loss=pure(eps), estimate=est, rng=np.random.default_rng(1))
            rows.append({"job": f"DPCube {est}, 1000x1000", "epsilon": eps,
                         "seconds": time.perf_counter() - t0, "target_s": 10.0,
                         "structure": f"{r.lo.shape[0]} partitions"})
    return pd.DataFrame(rows)


def to_markdown(frame: pd.DataFrame, *, index: bool = True, digits: int = 3) -> str:
    """A GitHub markdown table (no optional dependency)."""
    f = frame.reset_index() if index else frame

    def fmt(v: object) -> str:
        if isinstance(v, (float, np.floating)):
            return "" if np.isnan(v) else f"{v:.{digits}g}"
        return str(v)

    lines = ["| " + " | ".join(map(str, f.columns)) + " |", "|" + "---|" * f.shape[1]]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in f.itertuples(index=False)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--out", default=None, help="write the markdown tables to this file")
    parser.add_argument("--skip-accuracy", action="store_true")
    parser.add_argument("--sweep", action="store_true", help="also run the signal sweep (for auto)")
    args = parser.parse_args()
    parts = []
    if not args.skip_accuracy:
        eps = (0.1, 1.0)
        one = accuracy_table(dpbench.DATASETS_1D, eps, args.trials, METHODS)
        two = accuracy_table(dpbench.DATASETS_2D, eps, args.trials, METHODS)
        for title, table in (("1-D", one), ("2-D", two)):
            if table.empty:
                continue
            wide = table.pivot_table(index=["workload", "epsilon", "dataset"], columns="method",
                                     values="error_1e6", sort=False)
            wide = wide[[m for m in METHODS if m in wide.columns]]
            parts.append(f"### {title}: scaled L2 error x 1e6 (mean of {args.trials} trials)\n\n"
                         + to_markdown(wide))
            best = wide.idxmin(axis=1).value_counts()
            parts.append(f"Best method counts ({title}):\n\n" + to_markdown(best.rename("wins").to_frame()))
    if args.sweep:
        sweep = signal_sweep(trials=max(5, args.trials // 2))
        parts.append("### Signal sweep (epsilon = 1, totals 1e3..1e6): geometric-mean error ratio to "
                     "identity, and wins per dataset\n\n" + to_markdown(sweep_summary(sweep)))
    speed = speed_checks()
    parts.append("### Speed\n\n" + to_markdown(speed, index=False))
    text = "\n\n".join(parts)
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
