"""Key discovery (``categories="discover"``) against pandas ``value_counts``, and the labels it finds.

Run: ``python -m benchmarks.bench_discover [--rows 10000000] [--labels 1000000] [--zipf 1.1] [--strings]
[--repeat 3]``

10^7 rows whose labels follow a Zipf law (``P(label i) ∝ i**-s``) over 10^6 possible labels (issue 27's
setting). The non-private baseline is ``value_counts()`` of the column (every label with its count). The
release counts every label, adds secure discrete Laplace (``epsilon=``) or discrete Gaussian (``rho=``)
noise and keeps the labels whose noisy count reaches the threshold. Target: within 2x ``value_counts``.
Labels found: how many labels are released at each (epsilon, delta), against the labels present and the
labels whose true count is at least the threshold.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

import pandas_dp as pdp
from benchmarks._timing import best_of


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--labels", type=int, default=1_000_000)
    parser.add_argument("--zipf", type=float, default=1.1)
    parser.add_argument("--strings", action="store_true", help="labels as text (object column) instead of int64")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    weights = np.arange(1, args.labels + 1, dtype=np.float64) ** -args.zipf
    labels = rng.choice(args.labels, size=args.rows, p=weights / weights.sum())
    column = pd.Series(labels.astype(str) if args.strings else labels, name="label")
    df = column.to_frame()
    del labels
    truth = df["label"].value_counts()
    print(f"{args.rows:,} rows, {truth.size:,} distinct labels present (Zipf s={args.zipf}, "
          f"{'text' if args.strings else 'int64'} labels)")

    base = best_of(lambda: df["label"].value_counts(), args.repeat)
    loss = {"epsilon": 1.0}

    def release() -> object:
        with pdp.budget(epsilon=10, delta=1e-3):
            return df.dp.histogram("label", categories="discover", delta=1e-7, **loss)

    t = best_of(release, args.repeat)
    print(f"value_counts {base:.2f} s; discover (epsilon=1, delta=1e-7, secure noise) {t:.2f} s = "
          f"{t / base:.2f}x (target <= 2x)")

    print("\n| loss | delta | threshold | released | present | true count >= threshold |")
    print("|---|---|---|---|---|---|")
    for kw in ({"epsilon": 0.1}, {"epsilon": 1.0}, {"rho": 0.005}, {"rho": 0.5}):
        for delta in (1e-9, 1e-6):
            with pdp.budget(**({"rho": 10} if "rho" in kw else {"epsilon": 10}), delta=1e-3):
                h = df.dp.histogram("label", categories="discover", delta=delta,
                                    rng=np.random.default_rng(1), **kw)
            T = h.params["threshold"]
            name, value = next(iter(kw.items()))
            print(f"| {name}={value} | {delta:g} | {T} | {h.counts.size:,} | {truth.size:,} | "
                  f"{int((truth >= T).sum()):,} |")


if __name__ == "__main__":
    main()
