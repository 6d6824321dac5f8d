"""Gaussian (zCDP) against Laplace (pure DP) trees and flat histograms on the DPBench 1-D data.

Run: ``python -m benchmarks.bench_zcdp [--trials 10] [--datasets HEPTH ADULT] [--epsilons 0.1 1]
[--figure docs/img/zcdp-error-vs-privacy.png] [--out benchmarks/results/zcdp.md]``

**Equal zCDP cost.** For each epsilon, the pure releases use epsilon (exact
discrete Laplace noise) and the zCDP releases use ``rho = epsilon**2 / 2``,
the zCDP that the pure release implies and what it costs in a rho budget
(Bun and Steinke 2016, Proposition 1.4). Methods, all from
:func:`pandas_dp.algorithms.tree.release.release_tree` and the loss's noise objects:

* ``identity``: one noise draw per bin;
* ``tree``: H_b^c with ``branching="auto"`` (chosen for the measure: the
  Gaussian's variance ``1/(2 rho_k)`` grows as ``1/share`` where the Laplace's
  grows as ``1/share**2``, so Gaussian trees prefer small fan-outs) and the
  uniform split, exact GLS inference;
* ``tree-opt``: the same with ``budget_split="optimal"`` (re-derived per noise).

Metric: DPBench's scaled L2 error (Hay et al. 2016) x 1e6, mean over
``--trials`` releases, on Prefix1D (all 4096 prefixes) and 2,000 random ranges
(``benchmarks.dpbench``). These releases are linear, so their error does not
depend on the data except through the total; the exact expected errors
(from the estimators' variances, no simulation noise) are printed too, and the
Gaussian/Laplace ratio is the same on every dataset up to simulation noise.

**Equal (epsilon, delta) guarantee.** ``--figure`` draws, left, the exact root
mean squared error over all N(N+1)/2 ranges (sqrt of Qardaji's V_Avg) of one
hierarchical release on N = 4096 bins against the (epsilon, 1e-6)-DP
guarantee: pure at epsilon; zCDP at the largest rho whose tight conversion
(Canonne, Kamath, Steinke 2020) is at most epsilon; and zCDP at
``rho = epsilon**2 / 2`` (the equal-cost point, whose own (epsilon, 1e-6)
guarantee is weaker). Right: the same error per table when k such releases
share one (1, 1e-6) guarantee (pure: epsilon / k each; zCDP: rho / k each),
where the square-root composition of Gaussian noise shows.
The sampler speed is printed by ``benchmarks.bench_noise``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from fractions import Fraction
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
from scipy.optimize import brentq

from benchmarks import dpbench
from pandas_dp.algorithms.tree.release import TreePlan, plan_tree, release_tree
from pandas_dp.privacy.loss import PrivacyLoss, pure, zcdp

Method = Callable[[np.ndarray, np.random.Generator], np.ndarray]
N = 4096
DELTA_FIGURE = 1e-6


def losses(eps: float) -> dict[str, PrivacyLoss]:
    """The pure loss at ``eps`` and the zCDP loss of equal zCDP cost, ``rho = eps**2 / 2`` (exact)."""
    e = pure(eps)
    return {"Laplace": e, "Gauss": e.charged_as("zcdp")}


def tree_plan(n: int, loss: PrivacyLoss, split: str) -> TreePlan:
    """The public plan (branching chosen for this loss's noise); made once per setting."""
    return plan_tree(n, loss=loss, branching="auto", budget_split=split)


def methods(n: int, eps: float) -> dict[str, Method]:
    out: dict[str, Method] = {}
    for noise_name, loss in losses(eps).items():
        flat = loss.noise()
        out[f"identity {noise_name}"] = (lambda x, rng, flat=flat: (x + flat.sample(x.shape, rng)).astype(float))
        for label, split in (("tree", "uniform"), ("tree-opt", "optimal")):
            plan = tree_plan(n, loss, split)
            out[f"{label} {noise_name}"] = (lambda x, rng, plan=plan: release_tree(x, plan, rng=rng).leaf_estimates())
    return out


def exact_rms(n: int, eps: float, workloads: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """``sqrt(E||W x_hat - W x||^2) / |W|`` per method and workload, from exact variances (data-free)."""
    out: dict[str, dict[str, float]] = {}
    zeros = np.zeros(n, dtype=np.int64)
    for noise_name, loss in losses(eps).items():
        var = loss.noise().variance()
        out[f"identity {noise_name}"] = {w: math.sqrt(float(np.sum(r[:, 1] - r[:, 0])) * var) / len(r)
                                         for w, r in workloads.items()}
        for label, split in (("tree", "uniform"), ("tree-opt", "optimal")):
            rel = release_tree(zeros, tree_plan(n, loss, split), rng=np.random.default_rng(0))
            out[f"{label} {noise_name}"] = {w: math.sqrt(float(rel.range_variance(r[:, 0], r[:, 1]).sum())) / len(r)
                                            for w, r in workloads.items()}
    return out


def evaluate(x: np.ndarray, method: Method, trials: int, workloads: dict[str, np.ndarray],
             seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    total = float(x.sum())
    truth = {w: dpbench.range_answers(x, r) for w, r in workloads.items()}
    errs: dict[str, list[float]] = {w: [] for w in workloads}
    for _ in range(trials):
        est = method(x, rng)
        for w, r in workloads.items():
            errs[w].append(dpbench.scaled_l2_error(truth[w], dpbench.range_answers(est, r), total))
    return {w: float(np.mean(v)) * 1e6 for w, v in errs.items()}


def geometric_mean(values: pd.Series) -> float:
    return float(np.exp(np.log(values.to_numpy(dtype=float)).mean()))


def _markdown(frame: pd.DataFrame, digits: int = 3) -> str:
    head = [str(frame.index.name or ""), *map(str, frame.columns)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for idx, row in frame.iterrows():
        lines.append("| " + " | ".join([str(idx), *(f"{v:.{digits}g}" for v in row)]) + " |")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------ the figure
def rho_for(epsilon: float, delta: float) -> Fraction:
    """The largest rho (to 1e-12 relative) whose tight (epsilon, delta) conversion is at most ``epsilon``."""
    f = lambda r: zcdp(r).epsilon_delta(delta) - epsilon          # noqa: E731 - increasing in r
    r = brentq(f, 1e-12, 10 * epsilon * epsilon + 10, xtol=1e-15, rtol=1e-13)
    rho = Fraction(r)
    while zcdp(rho).epsilon_delta(delta) > epsilon:
        rho *= Fraction(999_999_999_999, 10**12)
    return rho


def average_range_error(loss: PrivacyLoss, n: int = N) -> tuple[float, float, int]:
    """sqrt(V_Avg) of the flat histogram and of H_b^c (auto b, uniform split), and that b."""
    rel = release_tree(np.zeros(n, dtype=np.int64), tree_plan(n, loss, "uniform"), rng=np.random.default_rng(0))
    flat = loss.noise().variance() * (n + 2) / 3     # mean range length over all n(n+1)/2 ranges is (n+2)/3
    return math.sqrt(flat), math.sqrt(rel.average_range_variance()), rel.branching


def privacy_sweep(epsilons: np.ndarray, delta: float = DELTA_FIGURE) -> pd.DataFrame:
    rows = []
    for eps in epsilons:
        equal_guarantee = rho_for(float(eps), delta)
        for label, loss in (("pure, ε", pure(float(eps))), ("zCDP, same (ε, δ)", zcdp(equal_guarantee)),
                            ("zCDP, ρ = ε²/2", pure(float(eps)).charged_as("zcdp"))):
            flat, tree, b = average_range_error(loss)
            rows.append({"epsilon": float(eps), "release": label, "rho": float(loss.amount) if label != "pure, ε"
                         else float(eps) ** 2 / 2, "epsilon_delta": loss.epsilon_delta(delta),
                         "tree": tree, "identity": flat, "branching": b})
    return pd.DataFrame(rows)


def composition_sweep(tables: np.ndarray, epsilon: float = 1.0, delta: float = DELTA_FIGURE) -> pd.DataFrame:
    """Error per table when ``k`` hierarchical releases share one (epsilon, delta) guarantee."""
    rho = rho_for(epsilon, delta)
    rows = []
    for k in tables:
        for label, loss in (("pure, ε / k each", pure(Fraction(str(epsilon)) / int(k))),
                            ("zCDP, ρ / k each", zcdp(rho / int(k)))):
            flat, tree, b = average_range_error(loss)
            rows.append({"tables": int(k), "release": label, "tree": tree, "identity": flat, "branching": b})
    return pd.DataFrame(rows)


def draw(sweep: pd.DataFrame, tables: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11.5, 4.6))
    colours = {"pure, ε": "C0", "zCDP, same (ε, δ)": "C3", "zCDP, ρ = ε²/2": "C2",
               "pure, ε / k each": "C0", "zCDP, ρ / k each": "C3"}
    fmt = FuncFormatter(lambda v, _: f"{v:g}")
    for label, part in sweep.groupby("release", sort=False):
        ax.plot(part["epsilon"], part["tree"], "-o", ms=3, color=colours[label], label=f"tree, {label}")
        ax.plot(part["epsilon"], part["identity"], "--", color=colours[label], alpha=0.6, label=f"flat, {label}")
    ax.set_xlabel(f"guarantee: ε of (ε, δ = {DELTA_FIGURE:g})-DP (pure releases: ε-DP)")
    ax.set_ylabel("average range error (RMS over all ranges)")
    ax.set_title(f"one release, N = {N:,} bins", fontsize=11)
    for label, part in tables.groupby("release", sort=False):
        bx.plot(part["tables"], part["tree"], "-o", ms=3, color=colours[label], label=f"tree, {label}")
        bx.plot(part["tables"], part["identity"], "--", color=colours[label], alpha=0.6, label=f"flat, {label}")
    bx.set_xlabel(f"k releases sharing one (1, {DELTA_FIGURE:g})-DP guarantee")
    bx.set_ylabel("average range error of each release")
    bx.set_title("many releases under one budget", fontsize=11)
    for a in (ax, bx):
        a.set_xscale("log")
        a.set_yscale("log")
        a.xaxis.set_major_formatter(fmt)
        a.yaxis.set_major_formatter(fmt)
        a.grid(True, which="major", alpha=0.3)
        a.legend(fontsize=7.5)
    fig.suptitle("Hierarchical histograms (branching chosen per measure): error against privacy", fontsize=12)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ------------------------------------------------------------------------------------ main
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=10, help="releases per method, dataset and epsilon")
    parser.add_argument("--datasets", nargs="*", default=list(dpbench.DATASETS_1D))
    parser.add_argument("--epsilons", nargs="*", type=float, default=[0.1, 1.0])
    parser.add_argument("--figure", default=None, help="draw the error-vs-privacy figure to this PNG")
    parser.add_argument("--out", default=None, help="also write the tables as markdown to this file")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    lines: list[str] = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    say(f"# Gaussian (rho = eps^2/2) vs Laplace (eps) on DPBench 1-D, {args.trials} trials "
        f"(shared machine)\n")
    for eps in args.epsilons:
        picks = {f"{label} {name}": tree_plan(N, loss, split).layout.branching
                 for name, loss in losses(eps).items() for label, split in (("tree", "uniform"),
                                                                             ("tree-opt", "optimal"))}
        say(f"eps = {eps:g} (rho = {eps * eps / 2:g}; its (eps, 1e-6) guarantee: "
            f"{zcdp(eps * eps / 2).epsilon_delta(1e-6):.3f}): branching chosen at N = {N:,}: "
            + ", ".join(f"{k} b={v}" for k, v in picks.items()))
    rows = []
    for d, name in enumerate(args.datasets):
        x = dpbench.load(name)
        if x is None:
            say(f"skip {name}: not found in {dpbench.DATA_DIR}")
            continue
        workloads = {"Prefix1D": dpbench.prefix_ranges(x.size),
                     "Random2000": dpbench.random_ranges(x.size, 2000, seed=0)}
        for eps in args.epsilons:
            for i, (label, method) in enumerate(methods(x.size, eps).items()):
                res = evaluate(x, method, args.trials, workloads, seed=10_000 * (d + 1) + 100 * i + int(10 * eps))
                rows.append({"dataset": name, "epsilon": eps, "method": label, **res})
    if not rows:
        say("no dataset found")
        return
    table = pd.DataFrame(rows)
    order = list(methods(N, args.epsilons[0]))
    headline = []
    for workload in ("Prefix1D", "Random2000"):
        for eps in args.epsilons:
            wide = table[table["epsilon"] == eps].pivot_table(index="dataset", columns="method", values=workload,
                                                             sort=False)[order]
            ratios = pd.DataFrame({
                "tree G/L": wide["tree Gauss"] / wide["tree Laplace"],
                "tree-opt G/L": wide["tree-opt Gauss"] / wide["tree-opt Laplace"],
                "tree/identity G": wide["tree Gauss"] / wide["identity Gauss"],
                "tree/identity L": wide["tree Laplace"] / wide["identity Laplace"],
            })
            both = pd.concat([wide, ratios], axis=1)
            both.loc["geometric mean"] = [geometric_mean(both[c]) for c in both.columns]
            both.index.name = "dataset"
            say(f"\n## {workload}, eps = {eps:g} vs rho = {eps * eps / 2:g}: scaled L2 error x 1e6 "
                f"(mean of {args.trials}); ratios < 1 favour the first")
            say(_markdown(both))
            headline.append((workload, eps, both.loc["geometric mean", "tree G/L"],
                             both.loc["geometric mean", "tree-opt G/L"]))
    say("\n## Exact expected errors (sqrt(E||W x_hat - W x||^2)/|W|, divide by a dataset's total), N = 4096")
    workloads = {"Prefix1D": dpbench.prefix_ranges(N), "Random2000": dpbench.random_ranges(N, 2000, seed=0)}
    for eps in args.epsilons:
        exact = pd.DataFrame(exact_rms(N, eps, workloads)).T
        exact.index.name = f"eps={eps:g}"
        say(_markdown(exact, digits=4))
        for w in workloads:
            say(f"  {w}: tree Gauss/Laplace {exact.loc['tree Gauss', w] / exact.loc['tree Laplace', w]:.3f}, "
                f"tree-opt {exact.loc['tree-opt Gauss', w] / exact.loc['tree-opt Laplace', w]:.3f}")
    say("\n## Headline: geometric mean over datasets of Gaussian-tree error / Laplace-tree error at rho = eps^2/2")
    for workload, eps, uniform, optimal in headline:
        say(f"  {workload:10s} eps={eps:<4g} tree {uniform:.3f} ({1 / uniform:.2f}x more accurate), "
            f"tree-opt {optimal:.3f} ({1 / optimal:.2f}x)")
    if args.figure:
        sweep = privacy_sweep(np.geomspace(0.1, 2, 14))
        tables = composition_sweep(np.unique(np.geomspace(1, 100, 15).round().astype(int)))
        draw(sweep, tables, Path(args.figure))
        say(f"\n## Figure data (exact, N = {N:,}; written to {args.figure})")
        show = sweep.pivot_table(index="epsilon", columns="release", values="tree", sort=False)
        show.index = [f"{v:.3g}" for v in show.index]
        show.index.name = "epsilon (delta 1e-6)"
        say(_markdown(show, digits=4))
        picks = sweep.pivot_table(index="epsilon", columns="release", values="branching", sort=False)
        say("branching chosen: " + "; ".join(f"eps {e:.3g}: " + ", ".join(f"{k} {int(v)}" for k, v in row.items())
                                             for e, row in picks.iloc[::4].iterrows()))
        say(f"\n## k tables sharing (1, {DELTA_FIGURE:g}): average range error of each (exact, N = {N:,})")
        per = tables.pivot_table(index="tables", columns="release", values="tree", sort=False)
        per["zCDP / pure"] = per.iloc[:, 1] / per.iloc[:, 0]
        say(_markdown(per, digits=4))
    say(f"\n({time.perf_counter() - start:.0f} s)")
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
