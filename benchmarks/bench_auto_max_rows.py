"""How stable ``max_rows="auto"`` is over seeds, and the share of the loss that stability needs (issues 29, 44).

Run: ``python -m benchmarks.bench_auto_max_rows [--seeds 200] [--epsilon 1.0 0.1]``

Units with log-normal numbers of rows: three shapes (median 60, 10 and 200 rows) at 300 to 20,000 units,
and two movielens-like ones (ratings per user: median 96, 0.9 quantile about 330; 6,040 and 943 users).
For each epsilon and shape, the library's rule (:func:`pandas_dp.releases.shared.choose_max_rows` on the
units' histogram over :data:`~pandas_dp.privacy.units.AUTO_STEPS`) runs on every seed with the noise of
the documented share (:data:`~pandas_dp.privacy.units.AUTO_SHARE`, ``max_rows="auto"``); printed: the
target (the smallest step at or above the true 0.9 quantile), the share of seeds within one step of it,
the 5-95% range of the chosen bounds, and the smallest share of the ladder 1/20, 1/10, 1/5, 1/3, 1/2
(``max_rows=AutoMaxRows(share=...)``) at which 90% of seeds are within one step ("-": none of them).

The bound behind it: the choice compares the noisy count of the units above a step with a tenth of the
total; it is within one step in 90% of seeds when the tail of ``m`` units above the quantile is about
``ln 9 / (share * epsilon)`` or larger. One post-processing of the same histogram was tried and not kept
(negative noisy cells clipped to 0 before the cumulative sums: it helps on some shapes and hurts on others,
by its upward bias from the empty cells). Runs in seconds: the rule is post-processing of a 21-cell
histogram.
"""

from __future__ import annotations

import argparse
from fractions import Fraction

import numpy as np

from pandas_dp.privacy.loss import PureDP
from pandas_dp.privacy.units import AUTO_QUANTILE, AUTO_SHARE, AUTO_STEPS
from pandas_dp.releases.shared import choose_max_rows

STEPS = np.asarray(AUTO_STEPS)
LADDER = (AUTO_SHARE, Fraction(1, 10), Fraction(1, 5), Fraction(1, 3), Fraction(1, 2))
#: (name, units, log-normal median, sigma)
SHAPES = [(f"median {median}", units, median, sigma) for units in (300, 2_000, 20_000)
          for median, sigma in ((60, 1.3), (10, 2.0), (200, 0.5))]
SHAPES += [("movielens-like", 6_040, 96, 0.95), ("movielens-like", 943, 96, 0.95)]


def within_one_step(contributions: np.ndarray, target: int, share: Fraction, epsilon: float,
                    seeds: int) -> tuple[float, np.ndarray]:
    """Share of seeds whose choice is within one step of ``target``, and the choices."""
    noise = PureDP(Fraction(repr(epsilon)) * share).noise()
    chosen = np.array([choose_max_rows(contributions, noise, np.random.default_rng(seed)) for seed in range(seeds)])
    return float(np.mean(abs(np.searchsorted(STEPS, chosen) - target) <= 1)), chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--epsilon", type=float, nargs="+", default=[1.0, 0.1])
    args = parser.parse_args()
    for epsilon in args.epsilon:
        print(f"\nepsilon {epsilon}, {args.seeds} seeds; 'auto' spends {AUTO_SHARE} of it")
        print(f"{'shape':<15} {'units':>6} {'q90':>5} {'target':>6} | {'+-1':>5} {'5-95%':>10} | {'90% needs':>9}")
        for name, units, median, sigma in SHAPES:
            rows = np.ceil(np.random.default_rng(units).lognormal(np.log(median), sigma, units)).astype(np.int64)
            cell = np.minimum(np.searchsorted(STEPS, rows, side="left"), len(STEPS) - 1)
            contributions = np.bincount(cell, minlength=len(STEPS)).astype(np.int64)
            q90 = int(np.quantile(rows, AUTO_QUANTILE, method="inverted_cdf"))
            target = min(int(np.searchsorted(STEPS, q90)), len(STEPS) - 1)
            near, chosen = within_one_step(contributions, target, AUTO_SHARE, epsilon, args.seeds)
            lo, hi = np.percentile(chosen, [5, 95])
            needs = next((str(share) for share in LADDER
                          if within_one_step(contributions, target, share, epsilon, args.seeds)[0] >= 0.9), "-")
            print(f"{name:<15} {units:>6,} {q90:>5} {STEPS[target]:>6} | {near:>5.2f} {lo:>4.0f}-{hi:<5.0f} | "
                  f"{needs:>9}")


if __name__ == "__main__":
    main()
