"""What integer hierarchical histograms cost in error, on the DPBench 1-D datasets.

Run: ``python -m benchmarks.bench_integer_tree [--trials 10] [--datasets HEPTH ADULT]``

For every dataset and epsilon in {0.1, 1}, ``--trials`` releases of Qardaji's
H_b^c (``branching="auto"``, uniform split, exact GLS) with
``nonnegative=True``; the same noisy tree is then published three ways:

* ``nonneg``: the real-valued non-negative consistent tree (the baseline);
* ``integer``: :func:`~pandas_dp.algorithms.controlled_rounding.integer_tree`
  with the default largest-remainder rule;
* ``integer-unbiased``: the same with the unbiased (systematic sampling) rule.

Metric: DPBench's scaled L2 error on Prefix1D (all prefix ranges) x 1e6,
mean over trials (Hay et al., SIGMOD 2016), and the mean over trials of the
ratio integer / nonneg.  Because the three share their noise, the ratio
isolates what rounding adds.  Datasets that are absent are skipped.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from benchmarks import dpbench
from pandas_dp.algorithms.tree.branching import choose_branching
from pandas_dp.algorithms.controlled_rounding import integer_tree
from pandas_dp.algorithms.tree.release import release_tree
from pandas_dp.privacy.loss import pure


def run(x: np.ndarray, eps: float, trials: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    b = choose_branching(x.size, epsilon=eps).branching     # public: N and epsilon only
    ranges = dpbench.prefix_ranges(x.size)
    truth = dpbench.range_answers(x, ranges)
    total = float(x.sum())
    errs: dict[str, list[float]] = {"nonneg": [], "integer": [], "integer-unbiased": []}
    for _ in range(trials):
        rel = release_tree(x, loss=pure(eps), branching=b, nonnegative=True, rng=rng)
        leaves = {"nonneg": rel.estimates[0],
                  "integer": integer_tree(rel.layout, rel.estimates)[0],
                  "integer-unbiased": integer_tree(rel.layout, rel.estimates, method="unbiased",
                                                   rng=rng)[0]}
        for name, est in leaves.items():
            errs[name].append(dpbench.scaled_l2_error(truth, dpbench.range_answers(est, ranges), total))
    out = {name: float(np.mean(v)) * 1e6 for name, v in errs.items()}
    base = np.asarray(errs["nonneg"])
    out["ratio"] = float(np.mean(np.asarray(errs["integer"]) / base))
    out["ratio-unbiased"] = float(np.mean(np.asarray(errs["integer-unbiased"]) / base))
    out["b"] = b
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--datasets", nargs="*", default=list(dpbench.DATASETS_1D))
    parser.add_argument("--epsilons", nargs="*", type=float, default=[0.1, 1.0])
    args = parser.parse_args()
    start = time.perf_counter()
    rows = []
    for i, name in enumerate(args.datasets):
        x = dpbench.load(name)
        if x is None:
            print(f"skip {name}: not found in {dpbench.DATA_DIR}")
            continue
        for eps in args.epsilons:
            res = run(x, eps, args.trials, seed=100 + i)
            rows.append({"dataset": name, "epsilon": eps, **res})
            print(f"{name:12s} eps={eps:<4g} b={res['b']:<3d} nonneg {res['nonneg']:9.4f}  "
                  f"integer {res['integer']:9.4f} (x{res['ratio']:.4f})  unbiased "
                  f"{res['integer-unbiased']:9.4f} (x{res['ratio-unbiased']:.4f})", flush=True)
    if not rows:
        return
    frame = pd.DataFrame(rows).set_index(["dataset", "epsilon"])
    print(f"\nPrefix1D scaled L2 error x 1e6, mean of {args.trials} trials (same noise per column):")
    print(frame[["nonneg", "integer", "integer-unbiased", "ratio", "ratio-unbiased"]]
          .to_string(float_format=lambda v: f"{v:.4f}"))
    print("\nmean ratio by epsilon:")
    print(frame.groupby(level="epsilon")[["ratio", "ratio-unbiased"]].mean()
          .to_string(float_format=lambda v: f"{v:.4f}"))
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
