"""Speed of ``df.dp.quantiles`` against pandas' own ``Series.quantile`` of the same deciles.

Run: ``python -m benchmarks.bench_quantiles [--rows 10000000] [--repeat 5]``

Synthetic skewed data (seed 0): ``--rows`` lognormal incomes (median about 36,000). The job (issue 43): the
nine deciles at once,

* pandas_dp: ``df.dp.quantiles("income", [0.1, ..., 0.9], bounds=(0, 500_000), epsilon=1)`` inside a
  budget (secure noise, the production default: checks, one pass that clips and counts the rows on a
  public grid of 4,096 steps, then the mechanism the release picks for nine q's: the recursive exponential
  mechanism, four depths of exact draws; measured 28 Nov 2026: 0.30 s against 0.54 s, ratio 0.55, where the
  tree with its CDF and intervals took 0.43 s);
* pandas: ``s.quantile([0.1, ..., 0.9])`` (exact, no clipping).

Every timing is the median of ``--repeat`` runs, the two interleaved run by run (read the ratio from one
run: the machine is shared). Target (issue 43): within 3x of ``Series.quantile``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

import pandas_dp as pdp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    s = pd.Series(np.random.default_rng(0).lognormal(10.5, 0.8, args.rows), name="income")
    frame = s.to_frame()
    deciles = np.linspace(0.1, 0.9, 9)
    plain, private = [], []
    for _ in range(args.repeat):
        start = time.perf_counter()
        s.quantile(deciles)
        plain.append(time.perf_counter() - start)
        start = time.perf_counter()
        with pdp.budget(epsilon=1.0):
            frame.dp.quantiles("income", deciles, bounds=(0, 500_000), epsilon=1.0)
        private.append(time.perf_counter() - start)
    a, b = float(np.median(plain)), float(np.median(private))
    print(f"{args.rows:,} rows, nine deciles, median of {args.repeat} interleaved runs")
    print(f"Series.quantile {a:.3f} s   df.dp.quantiles {b:.3f} s   ratio {b / a:.2f} (target <= 3)")


if __name__ == "__main__":
    main()
