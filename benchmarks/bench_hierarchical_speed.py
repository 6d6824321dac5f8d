"""Speed of hierarchical histograms against plain pandas in the same run.

Run: ``python -m benchmarks.bench_hierarchical_speed [--rows 10000000] [--repeat 3]``

* ``df.dp.hierarchical_histogram`` (2^20 bins, ``branching="auto"``, exact GLS
  inference, secure noise) against ``df[col].value_counts()`` on the same
  10^7-row int64 column. Target (DESIGN.md section 5): <= 2x.
* The parts of the release alone (choice of b, noise, inference) on the counts.
* ``average_range_variance()`` (exact V_Avg) at N = 4096 for b = 2 and b = 16
  (target: well under a second), and 2000 exact range std errors at 2^20 bins.
* Peak traced memory of the release beyond the input frame.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

import pandas_dp as pdp
from benchmarks import dpbench
from benchmarks._timing import best_of, traced_peak
from pandas_dp.algorithms.branching import choose_branching
from pandas_dp.algorithms.tree import release_tree
from pandas_dp.loss import pure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--bins", type=int, default=2**20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    bins = args.bins
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.integers(0, bins, args.rows)})
    budget = pdp.budget(1e9)

    def release() -> pdp.HierarchicalHistogram:
        with budget:
            return df.dp.hierarchical_histogram("x", bins=bins, range=(0, bins), epsilon=1.0,
                                                branching="auto")

    t_vc = best_of(lambda: df["x"].value_counts(), args.repeat)
    t_dp = best_of(release, args.repeat)
    h = release()
    print(f"{args.rows:,} rows, {bins:,} bins, best of {args.repeat}")
    print(f"value_counts              {t_vc:8.3f} s")
    print(f"dp.hierarchical_histogram {t_dp:8.3f} s   ratio {t_dp / t_vc:5.2f}x  "
          f"(b = {h.branching}, h = {h.height}, target <= 2x)")

    counts = np.bincount(df["x"].to_numpy(), minlength=bins)
    t_choice = best_of(lambda: choose_branching(bins), args.repeat)
    t_tree = best_of(lambda: release_tree(counts, loss=pure(1.0), branching=h.branching), args.repeat)
    t_raw = best_of(lambda: release_tree(counts, loss=pure(1.0), branching=h.branching,
                                         consistent=False), args.repeat)
    print(f"  choose_branching         {t_choice * 1e3:8.1f} ms")
    print(f"  release_tree (GLS)       {t_tree * 1e3:8.1f} ms   (no inference: {t_raw * 1e3:.1f} ms)")
    mem = traced_peak(release)
    print(f"  peak traced memory       {mem:8.1f} MiB   (input column {args.rows * 8 / 2**20:.0f} MiB, "
          f"{h.detail.layout.n_nodes:,} nodes)")

    ranges = dpbench.random_ranges(bins, 2000, seed=0)
    t_rq = best_of(lambda: h.detail.range_variance(ranges[:, 0], ranges[:, 1]), args.repeat)
    print(f"2000 exact range variances at {bins:,} bins: {t_rq * 1e3:.1f} ms")
    for b in (2, 16):
        rel = release_tree(np.zeros(4096, dtype=np.int64), loss=pure(1.0), branching=b)
        t_avg = best_of(rel.average_range_variance, args.repeat)
        print(f"average_range_variance() N = 4096, b = {b:2d}: {t_avg * 1e3:.2f} ms "
              f"(V_Avg = {rel.average_range_variance():.3f})")
    rel = release_tree(np.zeros(bins, dtype=np.int64), loss=pure(1.0), branching=h.branching)
    t_big = best_of(rel.average_range_variance, args.repeat)
    print(f"average_range_variance() N = {bins:,}: {t_big * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
