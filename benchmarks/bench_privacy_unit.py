"""Speed and memory of a release with a privacy unit against the plain pandas pipeline that does the same work.

Run: ``python -m benchmarks.bench_privacy_unit [--rows 10000000] [--units 1000000] [--repeat 3] [--dask]``

10^7 rows of (unit, value) with 10^6 units, ``max_rows=5``, 2^16 bins (issue 14's setting). The
non-private pipelines do the same work: keep 5 rows per unit (``groupby(unit).head(5)``, which keeps the
first ones, and ``groupby(unit).sample(n=5)`` as pandas has it, for units with at least 5 rows plus all
rows of the others) and count them (``value_counts``). The release draws its random row keys from the
secure source (AES), bounds, counts and adds secure noise. Target: within 2x the pandas pipeline, peak
memory within 2x its peak. ``--dask`` adds the Dask engine on 8 partitions (local threads).
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
    parser.add_argument("--units", type=int, default=1_000_000)
    parser.add_argument("--bins", type=int, default=2**16)
    parser.add_argument("--max-rows", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dask", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"unit": rng.integers(0, args.units, args.rows), "x": rng.integers(0, args.bins, args.rows)})
    k = args.max_rows

    def pandas_head() -> object:
        return df.groupby("unit", sort=False).head(k)["x"].value_counts()

    def pandas_sample() -> object:
        sizes = df.groupby("unit", sort=False)["x"].transform("size")
        heavy = df[sizes > k].groupby("unit", sort=False).sample(n=k, random_state=1)
        return pd.concat([df[sizes <= k], heavy])["x"].value_counts()

    budget = pdp.budget(1e9)

    def release() -> object:
        with budget:
            return df.dp.histogram("x", bins=args.bins, range=(0, args.bins), epsilon=1.0, privacy_unit="unit",
                                   max_rows=k)

    print(f"{args.rows:,} rows, {args.units:,} units, max_rows={k}, {args.bins:,} bins, best of {args.repeat}")
    t_head = best_of(pandas_head, args.repeat)
    t_sample = best_of(pandas_sample, 1)
    t_dp = best_of(release, args.repeat)
    m_head, m_dp = traced_peak(pandas_head), traced_peak(release)
    print(f"{'pipeline':<42} {'seconds':>8} {'peak MiB':>9}")
    print(f"{'pandas groupby.head(k) + value_counts':<42} {t_head:>8.3f} {m_head:>9.0f}")
    print(f"{'pandas groupby.sample(n=k) + value_counts':<42} {t_sample:>8.3f}")
    print(f"{'df.dp.histogram(privacy_unit=, max_rows=k)':<42} {t_dp:>8.3f} {m_dp:>9.0f}")
    print(f"ratio to head: {t_dp / t_head:.2f}x time, {m_dp / m_head:.2f}x memory; "
          f"ratio to sample: {t_dp / t_sample:.2f}x time")
    if args.dask:
        import dask
        import dask.dataframe as dd

        ddf = dd.from_pandas(df, npartitions=8)

        def dask_release() -> object:
            with budget, dask.config.set(scheduler="threads"):
                return ddf.dp.histogram("x", bins=args.bins, range=(0, args.bins), epsilon=1.0,
                                        privacy_unit="unit", max_rows=k)

        t_dask = best_of(dask_release, 1)
        print(f"{'dask (8 partitions, threads)':<42} {t_dask:>8.3f}")
    print(f"(input: {df.memory_usage(index=False).sum() / 2**20:.0f} MiB)")


if __name__ == "__main__":
    main()
