"""How stable ``max_rows="auto"`` is over seeds: the bound it chooses on one data set, 200 seeds (issue 29 item 3).

Run: ``python -m benchmarks.bench_auto_max_rows [--seeds 200] [--epsilon 1.0]``

Units with log-normal numbers of rows (three shapes: median 60, 10 and 200 rows), 300 to 20,000 units.
For each, the library's rule (:func:`pandas_dp.releases.shared.choose_max_rows` on the units' histogram
over :data:`~pandas_dp.privacy.units.AUTO_STEPS`, noise of ``AUTO_SHARE`` of epsilon) runs on 200 seeds;
printed: the target (the smallest step at or above the true 0.9 quantile of rows per unit), the share of
seeds choosing it, the share within one step of it, and the 5-95% range of the chosen bounds. Beside it,
one post-processing of the same noisy histogram that was tried to reduce the spread without spending more:
negative noisy cells clipped to 0 before the cumulative sums. It helps on some shapes and hurts on others
(its upward bias from the empty cells), so the library keeps its rule; with few units the 10% tail is a few
dozen units, below the noise of 5% of the loss, and only a public max_rows (or a larger loss) is stable.
Runs in seconds: the rule is post-processing of a 21-cell histogram.
"""

from __future__ import annotations

import argparse
from fractions import Fraction

import numpy as np

from pandas_dp.privacy.loss import PureDP
from pandas_dp.privacy.units import AUTO_QUANTILE, AUTO_SHARE, AUTO_STEPS
from pandas_dp.releases.shared import choose_max_rows

STEPS = np.asarray(AUTO_STEPS)


def clipped_rule(contributions: np.ndarray, noise: object, rng: np.random.Generator) -> int:
    """The tried alternative: the same noisy histogram with its negative cells set to 0."""
    noisy = np.maximum(noise.add(contributions, rng), 0).astype(np.float64)  # type: ignore[attr-defined]
    cum = np.cumsum(noisy)
    if cum[-1] <= 0:
        return AUTO_STEPS[0]
    return AUTO_STEPS[int(np.searchsorted(cum, AUTO_QUANTILE * cum[-1], side="left"))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--epsilon", type=float, default=1.0)
    args = parser.parse_args()
    noise = PureDP(Fraction(repr(args.epsilon)) * AUTO_SHARE).noise()
    print(f"epsilon {args.epsilon}, {args.seeds} seeds, noise {noise.describe()} per step")
    print(f"{'units':>6} {'median':>6} {'sigma':>5} {'q90':>5} {'target':>6} | {'rule':<8} {'at':>5} {'+-1':>5} "
          f"{'5-95%':>10}")
    for units in (300, 2_000, 20_000):
        for median, sigma in ((60, 1.3), (10, 2.0), (200, 0.5)):
            rows = np.ceil(np.random.default_rng(units).lognormal(np.log(median), sigma, units)).astype(np.int64)
            cell = np.minimum(np.searchsorted(STEPS, rows, side="left"), len(STEPS) - 1)
            contributions = np.bincount(cell, minlength=len(STEPS)).astype(np.int64)
            q90 = int(np.quantile(rows, AUTO_QUANTILE, method="inverted_cdf"))
            target = min(int(np.searchsorted(STEPS, q90)), len(STEPS) - 1)
            for name, rule in (("library", choose_max_rows), ("clipped", clipped_rule)):
                chosen = np.array([rule(contributions, noise, np.random.default_rng(seed))
                                   for seed in range(args.seeds)])
                index = np.searchsorted(STEPS, chosen)
                lo, hi = np.percentile(chosen, [5, 95])
                head = (f"{units:>6,} {median:>6} {sigma:>5} {q90:>5} {STEPS[target]:>6}" if name == "library"
                        else " " * 32)
                print(f"{head} | {name:<8} {np.mean(index == target):>5.2f} {np.mean(abs(index - target) <= 1):>5.2f} "
                      f"{lo:>4.0f}-{hi:<5.0f}")


if __name__ == "__main__":
    main()
