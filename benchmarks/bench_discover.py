"""Key discovery (``categories="discover"``) against pandas ``value_counts``, and the labels it finds.

Run: ``python -m benchmarks.bench_discover [--rows 10000000] [--labels 1000000] [--zipf 1.1] [--strings]
[--repeat 3]``

10^7 rows whose labels follow a Zipf law (``P(label i) ∝ i**-s``) over 10^6 possible labels (issue 27's
setting). The non-private baseline is ``value_counts()`` of the column (every label with its count). The
release counts every label, adds secure discrete Laplace (``epsilon=``) or discrete Gaussian (``rho=``)
noise and keeps the labels whose noisy count reaches the threshold. Target: within 2x ``value_counts``.
Labels found: how many labels are released at each (epsilon, delta), against the labels present and the
labels whose true count is at least the threshold. Under ``epsilon=`` (one row per unit, each unit one
label: Desfontaines, Voss, Gipson and Mandayam's setting, PoPETS 2022) the last column is the expected
number of labels their optimal *selection* would release with the whole (epsilon, delta), which the
release there now follows (truncated noise, counts included; ``expected`` is its exact sum): a label of
true count ``n`` is kept with probability ``pi(n)``, ``pi(0) = 0``,
``pi(n) = min(e^eps pi(n-1) + delta, 1 - e^-eps (1 - pi(n-1) - delta), 1)`` (the largest probabilities
that the two (epsilon, delta) constraints between counts ``n - 1`` and ``n`` allow, taken greedily). It
releases no counts; the thresholding's expected number is ``sum P(n + Z >= T)`` over labels.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

import pandas_dp as pdp
from benchmarks._timing import best_of
from benchmarks.bench_discover_peers import _optimal_selection


def optimal_selection(epsilon: float, delta: float, top: int) -> np.ndarray:
    """``pi(0..top)``: the keep probabilities of the optimal single-partition selection (floats)."""
    return _optimal_selection(epsilon, delta, top)


def expected_truncated(h, counts: np.ndarray) -> float:
    """``sum P(release)`` over the labels for the truncated mixture (``epsilon=``, one label per unit).

    A label takes truncation ``k`` and threshold ``T`` with probability ``1 - mu`` and ``(k - 1, T - 1)``
    with probability ``mu`` (``params["noise_bound"]``, ``params["lower_pair_probability"]``).
    """
    from fractions import Fraction

    a = float(np.exp(-1 / float(h.noise.scale)))
    k, threshold = int(h.params["noise_bound"]), int(h.params["threshold"])
    mu = float(Fraction(h.params.get("lower_pair_probability", "0")))
    sizes, how_many = np.unique(counts, return_counts=True)

    def passes(bound: int, t: int) -> float:
        z = np.arange(-bound, bound + 1)
        pmf = a ** np.abs(z) / (a ** np.abs(z)).sum()
        tail = np.cumsum(pmf[::-1])[::-1]  # tail[i] = P(Z >= z[i])
        need = np.clip(t - sizes, -bound, bound + 1)
        p = np.where(need > bound, 0.0, tail[np.clip(need + bound, 0, 2 * bound)])
        return float(how_many @ p)

    return (1 - mu) * passes(k, threshold) + mu * passes(k - 1, threshold - 1)


def expected_threshold(noise, threshold: int, counts: np.ndarray) -> float:
    """``sum P(n + Z >= T)`` over the labels' true counts ``n`` (discrete Laplace or Gaussian noise)."""
    top = int(counts.max()) + 1
    width = int(60 * np.sqrt(noise.variance())) + 10
    z = np.arange(-width, width + 1)
    pmf = noise.pmf(z)
    tail = np.cumsum(pmf[::-1])[::-1]  # tail[i] = P(Z >= z[i])
    need = np.clip(threshold - np.arange(top), -width, width + 1)  # P(Z >= T - n)
    p = np.where(need > width, 0.0, tail[np.clip(need + width, 0, 2 * width)])
    p[threshold - np.arange(top) < -width] = 1.0
    return float(p[counts].sum())


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

    print("\n| loss | delta | threshold | released | expected | present | true count >= threshold | optimal selection |")
    print("|---|---|---|---|---|---|---|---|")
    counts = truth.to_numpy()
    for kw in ({"epsilon": 0.1}, {"epsilon": 1.0}, {"rho": 0.005}, {"rho": 0.5}):
        for delta in (1e-9, 1e-6):
            with pdp.budget(**({"rho": 10} if "rho" in kw else {"epsilon": 10}), delta=1e-3):
                h = df.dp.histogram("label", categories="discover", delta=delta,
                                    rng=np.random.default_rng(1), **kw)
            T = h.params["threshold"]
            name, value = next(iter(kw.items()))
            expected = (expected_truncated(h, counts) if "noise_bound" in h.params
                        else expected_threshold(h.noise, T, counts))
            optimal = (f"{optimal_selection(value, delta, int(counts.max()))[counts].sum():,.0f}"
                       if name == "epsilon" else "")
            print(f"| {name}={value} | {delta:g} | {T} | {h.counts.size:,} | {expected:,.0f} | {truth.size:,} | "
                  f"{int((truth >= T).sum()):,} | {optimal} |")


if __name__ == "__main__":
    main()
