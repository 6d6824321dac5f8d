"""Key discovery when units touch many labels: ours against weighting and a MAD-style adaptive reweighting.

Run: ``python -m benchmarks.bench_discover_mad [--users 200000] [--items 100000] [--epsilon 1] [--delta 1e-6]``

Issue 27 asks for the gain of the adaptive weighting of MAD/MAD2R (Chen, Cohen-Addad, Epasto and
Zadimoghaddam, ICML 2025, "Scalable private partition selection via adaptive weighting") when units touch
many labels. Data: ratings, users of Zipf activity (``zipf(1.6)`` ratings each, at most 1,000) rating
items of Zipf popularity (``zipf(1.1)`` over ``--items``), one rating per (user, item). Every unit is
bounded to ``c`` labels (``c = 10, 30, 100``; random labels, as the library bounds) and one row per label.
All figures are EXACT expected numbers of labels released (sums of release probabilities), on the same
bounded data, at the same ``(epsilon, delta)``:

* **ours** (``histogram(categories="discover", max_cells=c, max_rows_per_cell=1)``): counts, discrete
  Laplace of scale ``c / epsilon``, threshold ``T`` from the exact quantile (``discovery_threshold``).
* **uniform weighting** (the "basic" weighting the MAD paper starts from, here with L1 weights and Laplace
  noise so that it is pure at its core like ours): a unit with ``d <= c`` labels gives ``1 / d`` to each;
  weights get Laplace noise of scale ``1 / epsilon`` (L1 sensitivity 1: a unit's weights never depend on
  another unit's); a label is kept when its noisy weight is ``>= rho``, the smallest ``rho`` with
  ``max_{d <= c} d P(L >= rho - 1/d) <= delta`` (a new unit's ``d`` new labels, union bound).
* **integer weights**: the uniform weighting on our exact footing, implementable with our samplers:
  a unit with ``d`` labels puts integer weight ``floor(c / d)`` on each (sum at most ``c``), discrete
  Laplace of scale ``c / epsilon`` as ours, threshold the smallest ``T`` with
  ``max_d d P(Z >= T - floor(c / d)) <= delta`` (exact quantiles). Like every weighting, it releases
  labels and weighted sums, not counts; **uniform at eps/2** is the uniform weighting at half the
  epsilon, leaving the other half for counts of the labels it releases.
* **adaptive, ceiling** (MAD's idea with its privacy bookkeeping left out): starting from the uniform
  weights, every label whose weight is above ``tau`` (released with probability >= 0.999) is cut to
  ``tau`` and each of its units gets its share of the excess back, spread evenly over its labels below
  ``tau``; three rounds. It keeps the uniform weighting's noise and threshold, so it over-states what MAD
  can do (MAD bounds the rerouted weight to keep the sensitivity; see its paper): its gain over the
  uniform weighting is an upper bound on MAD's.
"""

from __future__ import annotations

import argparse
import math
from fractions import Fraction

import numpy as np
import pandas as pd

from pandas_dp.privacy.loss import DiscreteLaplace
from pandas_dp.privacy.selection import discovery_threshold


def ratings(users: int, items: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    degree = np.minimum(rng.zipf(1.6, users), 1000)
    user = np.repeat(np.arange(users), degree)
    item = (rng.zipf(1.1, user.size) - 1) % items
    return pd.DataFrame({"user": user, "item": item}).drop_duplicates(ignore_index=True)


def bounded(frame: pd.DataFrame, cells: int, seed: int = 1) -> pd.DataFrame:
    """At most ``cells`` random labels per unit (one row each), as the library's bounding keeps."""
    rng = np.random.default_rng(seed)
    shuffled = frame.iloc[rng.permutation(len(frame))]
    rank = shuffled.groupby("user").cumcount().to_numpy()
    return shuffled[rank < cells].reset_index(drop=True)


def ours(frame: pd.DataFrame, cells: int, epsilon: float, delta: float) -> tuple[float, int]:
    noise = DiscreteLaplace(Fraction(cells) / Fraction(str(epsilon)))
    t = discovery_threshold(noise, Fraction(str(delta)), cells, 1)
    sizes, how_many = np.unique(frame["item"].value_counts().to_numpy(), return_counts=True)
    a = math.exp(-1 / float(noise.scale))
    k = t - sizes  # P(n + Z >= t) = P(Z >= k)
    above = np.where(k >= 1, a ** np.maximum(k, 1) / (1 + a), 1 - a ** np.maximum(1 - k, 1) / (1 + a))
    return float(how_many @ above), t


def laplace_pass(weights: np.ndarray, rho: float, epsilon: float) -> float:
    gap = (rho - weights) * epsilon
    return float(np.where(gap > 0, 0.5 * np.exp(-np.abs(gap)), 1 - 0.5 * np.exp(-np.abs(gap))).sum())


def uniform_threshold(cells: int, epsilon: float, delta: float) -> float:
    d = np.arange(1, cells + 1)
    return float((1 / d + np.log(d / (2 * delta)) / epsilon).max())


def item_weights(frame: pd.DataFrame, w: np.ndarray, items: int) -> np.ndarray:
    return np.bincount(frame["item"].to_numpy(), weights=w, minlength=items)


def adaptive(frame: pd.DataFrame, items: int, rho: float, epsilon: float, rounds: int = 3) -> np.ndarray:
    user, item = frame["user"].to_numpy(), frame["item"].to_numpy()
    degree = np.bincount(user)
    w = 1.0 / degree[user]
    tau = rho + math.log(500) / epsilon  # P(pass) >= 0.999 at and above tau
    for _ in range(rounds):
        total = item_weights(frame, w, items)
        heavy = total[item] > tau
        excess = np.where(heavy, w * (1 - tau / np.maximum(total[item], tau)), 0.0)
        w = w - excess
        light = ~heavy
        per_user = np.bincount(user, weights=excess, minlength=degree.size)
        room = np.bincount(user, weights=light.astype(float), minlength=degree.size)
        share = np.divide(per_user, room, out=np.zeros_like(per_user), where=room > 0)
        w = w + np.where(light, share[user], 0.0)
    return item_weights(frame, w, items)


def integer_weights(frame: pd.DataFrame, cells: int, epsilon: float, delta: float) -> tuple[float, int]:
    """The uniform weighting on our exact footing: integer weights ``floor(c / d)``, discrete Laplace ``c / eps``.

    A unit's weights sum to at most ``c`` (the sensitivity of our counts), so the noise is ours; the
    threshold ``T`` is the smallest with ``max_d d P(Z >= T - floor(c / d)) <= delta`` (exact quantiles).
    """
    user, item = frame["user"].to_numpy(), frame["item"].to_numpy()
    degree = np.bincount(user)
    w = cells // degree[user]
    noise = DiscreteLaplace(Fraction(cells) / Fraction(str(epsilon)))
    t = max(discovery_threshold(noise, Fraction(str(delta)), d, cells // d) for d in range(1, cells + 1))
    total = np.bincount(item, weights=w).astype(np.int64)
    sizes, how_many = np.unique(total[total > 0], return_counts=True)
    a = math.exp(-1 / float(noise.scale))
    k = t - sizes
    above = np.where(k >= 1, a ** np.maximum(k, 1) / (1 + a), 1 - a ** np.maximum(1 - k, 1) / (1 + a))
    return float(how_many @ above), t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=200_000)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-6)
    args = parser.parse_args()
    frame = ratings(args.users, args.items)
    print(f"{len(frame):,} ratings by {frame['user'].nunique():,} users of {frame['item'].nunique():,} items; "
          f"epsilon={args.epsilon}, delta={args.delta:g}; exact expected labels released\n")
    rows = []
    for cells in (10, 30, 100):
        b = bounded(frame, cells)
        found, t = ours(b, cells, args.epsilon, args.delta)
        rho = uniform_threshold(cells, args.epsilon, args.delta)
        uniform_w = item_weights(b, 1.0 / np.bincount(b["user"].to_numpy())[b["user"].to_numpy()], args.items)
        uniform = laplace_pass(uniform_w[uniform_w > 0], rho, args.epsilon)
        ceiling = adaptive(b, args.items, rho, args.epsilon)
        best = laplace_pass(ceiling[uniform_w > 0], rho, args.epsilon)
        exact_w, t_w = integer_weights(b, cells, args.epsilon, args.delta)
        half = laplace_pass(uniform_w[uniform_w > 0], uniform_threshold(cells, args.epsilon / 2, args.delta),
                            args.epsilon / 2)
        rows.append({"c": cells, "rows kept": len(b), "ours (counts)": found, "ours T": t,
                     "integer weights floor(c/d)": exact_w, "its T": t_w,
                     "uniform weighting": uniform, "uniform at eps/2": half, "rho": rho,
                     "adaptive ceiling": best, "ceiling / uniform": best / uniform})
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:,.4g}"))


if __name__ == "__main__":
    main()
