"""Speed of hierarchical histograms against the floor, ``np.bincount``, in the same run.

Run: ``python -m benchmarks.bench_hierarchical_speed [--rows 10000000] [--repeat 3] [--bins 1024 65536 1048576]``

* The table (issue 18): ``df.dp.hierarchical_histogram`` with
  ``branching="auto"`` and exact GLS inference (secure noise) on 10^7 rows of
  an ``int64`` and a ``float64`` column (``range=(0, bins)`` and explicit
  edges ``np.arange(bins + 1)``) and a ``Categorical`` column
  (``categories=``), at 2^10 / 2^16 / 2^20 bins, against ``np.bincount`` of the
  precomputed int64 codes. "first" is the first call for a domain (the choice
  of ``b`` is computed: closed-form ranking), "best" the best of ``repeat``
  later calls (the choice is memoised), ``value_counts`` the plain pandas
  histogram; peak memory is ``tracemalloc`` beyond the input, with
  ``np.bincount``'s. Target: within 2.5x ``np.bincount``.
* The parts of a release on the counts alone (choice of b, noise + GLS).
* ``average_range_variance()`` (exact V_Avg) at N = 4096 for b = 2 and b = 16
  and at 2^20 bins, and 2000 exact range std errors at 2^20 bins.
The machine may be shared: compare ratios within one run.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import pandas as pd

import pandas_dp as pdp
from benchmarks import dpbench
from benchmarks._timing import best_of, traced_peak
import pandas_dp.algorithms.tree.branching as branching
from pandas_dp.algorithms.tree.release import release_tree
from pandas_dp.privacy.loss import pure


def _cases(rows: int, bins: int, rng: np.random.Generator) -> list[tuple[str, str, pd.DataFrame, dict, np.ndarray]]:
    ints = rng.integers(0, bins, rows)
    floats = rng.random(rows) * bins
    labels = pd.Index([f"c{i:07d}" for i in range(bins)])
    cat = pd.DataFrame({"x": pd.Categorical.from_codes(ints, dtype=pd.CategoricalDtype(labels))})
    i_frame, f_frame = pd.DataFrame({"x": ints}), pd.DataFrame({"x": floats})
    edges = np.arange(bins + 1)
    f_codes = np.floor(floats).astype(np.int64)
    return [("int64", "range", i_frame, dict(bins=bins, range=(0, bins)), ints),
            ("int64", "edges", i_frame, dict(bins=edges), ints),
            ("float64", "range", f_frame, dict(bins=bins, range=(0, bins)), f_codes),
            ("float64", "edges", f_frame, dict(bins=edges), f_codes),
            ("category", "categories", cat, dict(categories=labels), ints)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--bins", type=int, nargs="+", default=[2**10, 2**16, 2**20])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    budget = pdp.budget(1e12)
    print(f"{args.rows:,} rows; hierarchical_histogram(branching='auto'), GLS inference, secure noise; ratios to "
          f"np.bincount of the precomputed int64 codes in the same run (best of {args.repeat})")
    print(f"{'column':>8} {'bins':>9} {'spec':>10} {'b':>4} {'bincount':>9} {'first':>8} {'ratio':>6} "
          f"{'best':>8} {'ratio':>6} {'vcounts':>8} {'ratio':>6} {'peak':>7} {'bc peak':>7} {'ratio':>6}")
    last = None
    for bins in args.bins:
        for kind, spec, frame, kwargs, codes in _cases(args.rows, bins, rng):
            def release() -> Any:
                with budget:
                    return frame.dp.hierarchical_histogram("x", epsilon=1.0, branching="auto", **kwargs)

            t_bc = best_of(lambda: np.bincount(codes, minlength=bins), args.repeat)
            branching._choose.cache_clear()
            start = time.perf_counter()
            h = release()
            t_first = time.perf_counter() - start
            t_dp = best_of(release, args.repeat)
            t_vc = best_of(lambda: frame["x"].value_counts(), args.repeat)
            mem = traced_peak(release)
            mem_bc = traced_peak(lambda: np.bincount(codes, minlength=bins))
            print(f"{kind:>8} {bins:>9,} {spec:>10} {h.branching:>4} {t_bc:>8.3f}s {t_first:>7.3f}s "
                  f"{t_first / t_bc:>5.2f}x {t_dp:>7.3f}s {t_dp / t_bc:>5.2f}x {t_vc:>7.3f}s {t_vc / t_bc:>5.2f}x "
                  f"{mem:>7.1f} {mem_bc:>7.1f} {mem / mem_bc:>5.1f}x", flush=True)
            last = (bins, codes, h)
    assert last is not None
    bins, codes, h = last
    counts = np.bincount(codes, minlength=bins)
    branching._choose.cache_clear()
    start = time.perf_counter()
    branching.choose_branching(bins)
    t_first_choice = time.perf_counter() - start
    t_choice = best_of(lambda: branching.choose_branching(bins), args.repeat)
    t_tree = best_of(lambda: release_tree(counts, loss=pure(1.0), branching=h.branching), args.repeat)
    t_raw = best_of(lambda: release_tree(counts, loss=pure(1.0), branching=h.branching,
                                         consistent=False), args.repeat)
    print(f"parts at {bins:,} bins: choose_branching first {t_first_choice * 1e3:.1f} ms, memoised "
          f"{t_choice * 1e3:.3f} ms; release_tree (noise + GLS) {t_tree * 1e3:.1f} ms "
          f"(no inference: {t_raw * 1e3:.1f} ms); {h.detail.layout.n_nodes:,} nodes")
    for n in sorted({2**16, 4096}):
        branching._choose.cache_clear()
        start = time.perf_counter()
        choice = branching.choose_branching(n)
        print(f"choose_branching N = {n:,} (first call): {(time.perf_counter() - start) * 1e3:.1f} ms (b = "
              f"{choice.branching}, {len(choice.candidates)} candidates)")
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
