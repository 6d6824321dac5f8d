"""Speed of the flat histogram against plain pandas/numpy in the same run.

Run: ``python -m benchmarks.bench_flat [--rows 10000000] [--repeat 5]``

For 10^7 rows of an int64 column, prints the best-of-``repeat`` time of
``df.dp.histogram`` (secure noise, the production default) against
``df[col].value_counts()`` and ``np.bincount`` for 10^3, 2^16 and 2^20 bins,
and the ratio. Target (DESIGN.md section 5): <= 1.5x value_counts at 2^16 bins.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

import pandas_dp as pdp
from benchmarks._timing import best_of, traced_peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"{args.rows:,} rows, int64 column, best of {args.repeat}")
    print(f"{'bins':>9} {'value_counts':>13} {'bincount':>10} {'dp.histogram':>13} {'ratio vc':>9} "
          f"{'ratio bc':>9} {'peak MiB':>9}")
    for bins in (10**3, 2**16, 2**20):
        df = pd.DataFrame({"x": rng.integers(0, bins, args.rows)})
        values = df["x"].to_numpy()
        t_vc = best_of(lambda: df["x"].value_counts(), args.repeat)
        t_bc = best_of(lambda: np.bincount(values, minlength=bins), args.repeat)
        big = pdp.budget(1e6)

        def release() -> object:
            with big:
                return df.dp.histogram("x", bins=bins, range=(0, bins), epsilon=1.0)

        t_dp = best_of(release, args.repeat)
        mem = traced_peak(release)
        print(f"{bins:>9,} {t_vc:>12.3f}s {t_bc:>9.3f}s {t_dp:>12.3f}s {t_dp / t_vc:>8.2f}x {t_dp / t_bc:>8.2f}x "
              f"{mem:>9.1f}")
    print(f"(input column: {args.rows * 8 / 2**20:.0f} MiB)")


if __name__ == "__main__":
    main()
