"""Accuracy of hierarchical histograms on the DPBench 1-D datasets.

Run: ``python -m benchmarks.bench_hierarchical_accuracy [--trials 20] [--datasets HEPTH ADULT]``

DPBench scaled L2 error (Hay et al. 2016) in units of 1e-6, mean over
``--trials`` releases, on the Prefix1D workload (all 4096 prefix ranges) and on
2000 random ranges, at epsilon in {0.1, 1}, for:

* ``identity``: the flat histogram (one discrete Laplace draw per bin);
* ``H2``: Hay et al.'s H-bar (b = 2, root noised, uniform split, exact GLS);
* ``Hb``: Qardaji et al.'s H_b^c (``branching="auto"``, uniform split);
* ``Hb-opt``: H_b^c with the optimal budget split (``budget_split="optimal"``);

each also with ``nonnegative=True`` (suffix ``+nn``; identity: clipped at 0).
Published research code on HEPTH, epsilon = 1, Prefix1D (1e-6): Identity 2.02,
H_2 about 0.95, HB about 0.65-0.69.  Datasets that are absent are skipped.
The linear methods' errors do not depend on the data, and each method reuses
its noise seed across datasets, so their simulated figures move together; the
exact expected errors printed at the end have no simulation noise.
"""

from __future__ import annotations

import argparse
import time
from typing import Callable

import numpy as np
import pandas as pd

from benchmarks import dpbench
from pandas_dp.algorithms.tree.branching import choose_branching
from pandas_dp.algorithms.tree.release import release_tree
from pandas_dp.noise.laplace import discrete_laplace, noise_scale
from pandas_dp.privacy.loss import pure

Estimator = Callable[[np.ndarray, float, np.random.Generator], np.ndarray]


def identity(nonnegative: bool) -> Estimator:
    def run(x: np.ndarray, eps: float, rng: np.random.Generator) -> np.ndarray:
        y = (x + discrete_laplace(noise_scale(1, eps), x.shape, rng=rng)).astype(np.float64)
        return np.maximum(y, 0.0) if nonnegative else y
    return run


def tree(*, branching: int | str, split: str, root: bool, nonnegative: bool) -> Estimator:
    choices: dict[tuple[int, float], int] = {}

    def run(x: np.ndarray, eps: float, rng: np.random.Generator) -> np.ndarray:
        b = branching
        if b == "auto":   # public: depends only on N and epsilon; choose once per setting
            key = (x.size, eps)
            if key not in choices:
                choices[key] = choose_branching(x.size, epsilon=eps, budget_split=split).branching
            b = choices[key]
        return release_tree(x, loss=pure(eps), branching=b, budget_split=split, include_root=root,
                            nonnegative=nonnegative, rng=rng).leaf_estimates()
    return run


def methods() -> dict[str, Estimator]:
    out: dict[str, Estimator] = {}
    for nn in (False, True):
        sfx = "+nn" if nn else ""
        out["identity" + sfx] = identity(nn)
        out["H2" + sfx] = tree(branching=2, split="uniform", root=True, nonnegative=nn)
        out["Hb" + sfx] = tree(branching="auto", split="uniform", root=False, nonnegative=nn)
        out["Hb-opt" + sfx] = tree(branching="auto", split="optimal", root=False, nonnegative=nn)
    return out


def exact_rms(n: int, eps: float, workloads: dict) -> dict[str, dict[str, float]]:
    """sqrt(E ||W x_hat - W x||^2) / |W| for the linear methods, from exact variances.

    Data-independent (divide by a dataset's total for its scaled error); no
    Monte-Carlo noise, so it separates methods whose simulated errors overlap.
    """
    from pandas_dp.noise.laplace import discrete_laplace_variance
    out: dict[str, dict[str, float]] = {}
    zeros = np.zeros(n, dtype=np.int64)
    v_bin = discrete_laplace_variance(noise_scale(1, eps))
    out["identity"] = {w: float(np.sqrt(np.sum((r[:, 1] - r[:, 0]) * v_bin)) / len(r))
                       for w, r in workloads.items()}
    configs = {"H2": dict(branching=2, budget_split="uniform", include_root=True),
               "Hb": dict(branching=choose_branching(n, epsilon=eps).branching,
                          budget_split="uniform", include_root=False),
               "Hb-opt": dict(branching=choose_branching(n, epsilon=eps,
                                                         budget_split="optimal").branching,
                              budget_split="optimal", include_root=False)}
    for label, kw in configs.items():
        rel = release_tree(zeros, loss=pure(eps), rng=np.random.default_rng(0), **kw)
        out[label] = {w: float(np.sqrt(rel.range_variance(r[:, 0], r[:, 1]).sum()) / len(r))
                      for w, r in workloads.items()}
    return out


def evaluate(x: np.ndarray, estimator: Estimator, eps: float, trials: int, workloads: dict,
             seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    total = float(x.sum())
    truth = {name: dpbench.range_answers(x, w) for name, w in workloads.items()}
    errs: dict[str, list[float]] = {name: [] for name in workloads}
    for _ in range(trials):
        est = estimator(x, eps, rng)
        for name, w in workloads.items():
            errs[name].append(dpbench.scaled_l2_error(truth[name], dpbench.range_answers(est, w), total))
    return {name: float(np.mean(v)) * 1e6 for name, v in errs.items()}


def _markdown(frame: pd.DataFrame) -> str:
    """A pipe table (without the optional 'tabulate' dependency)."""
    head = ["dataset", "epsilon", *map(str, frame.columns)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (name, eps), row in frame.iterrows():
        lines.append("| " + " | ".join([str(name), f"{eps:g}", *(f"{v:.4f}" for v in row)]) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--datasets", nargs="*", default=list(dpbench.DATASETS_1D))
    parser.add_argument("--epsilons", nargs="*", type=float, default=[0.1, 1.0])
    parser.add_argument("--out", default=None, help="also write the table as markdown here")
    args = parser.parse_args()
    rows = []
    start = time.perf_counter()
    for name in args.datasets:
        x = dpbench.load(name)
        if x is None:
            print(f"skip {name}: not found in {dpbench.DATA_DIR}")
            continue
        workloads = {"Prefix1D": dpbench.prefix_ranges(x.size),
                     "Random2000": dpbench.random_ranges(x.size, 2000, seed=0)}
        for eps in args.epsilons:
            for i, (label, est) in enumerate(methods().items()):
                res = evaluate(x, est, eps, args.trials, workloads, seed=1000 + i)
                rows.append({"dataset": name, "epsilon": eps, "method": label, **res})
                print(f"{name:12s} eps={eps:<4g} {label:12s} Prefix1D {res['Prefix1D']:9.4f}  "
                      f"Random2000 {res['Random2000']:9.4f}", flush=True)
    if not rows:
        return
    n = 4096
    workloads = {"Prefix1D": dpbench.prefix_ranges(n),
                 "Random2000": dpbench.random_ranges(n, 2000, seed=0)}
    print("\nExact sqrt(E||W x_hat - W x||^2)/|W| of the linear methods (divide by a dataset's "
          "total for its expected scaled L2 error), N = 4096:")
    for eps in args.epsilons:
        for label, res in exact_rms(n, eps, workloads).items():
            print(f"  eps={eps:<4g} {label:9s} Prefix1D {res['Prefix1D']:8.4f}  "
                  f"Random2000 {res['Random2000']:8.4f}")
    table = pd.DataFrame(rows)
    for workload in ("Prefix1D", "Random2000"):
        wide = table.pivot_table(index=["dataset", "epsilon"], columns="method", values=workload,
                                 sort=False)
        order = [m for m in methods() if m in wide.columns]
        print(f"\n{workload}: scaled L2 error x 1e6, mean of {args.trials} trials")
        print(wide[order].round(4).to_string())
        if args.out:
            with open(args.out, "a", encoding="utf-8") as fh:
                fh.write(f"\n### {workload} (scaled L2 error x 1e6, {args.trials} trials)\n\n")
                fh.write(_markdown(wide[order].round(4)) + "\n")
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
