"""Key discovery against peers: labels found at the same (epsilon, delta) by pandas_dp, OpenDP and PipelineDP.

Run: ``python -m benchmarks.bench_discover_peers [--rows 1000000] [--labels 100000] [--zipf 1.1] [--seeds 3]``

Benchmark-only dependencies (never needed by pandas_dp), in their own virtual environment::

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install -e . opendp pipeline-dp "polars==1.36.1" pyarrow
    /tmp/peers/bin/python -m benchmarks.bench_discover_peers

(opendp 0.16 needs the polars release it was built against, 1.36.1, and pyarrow.) A peer that cannot be
imported is skipped with a message.

One row per person, each person one label (``c = r = 1``: every peer's simplest contribution bound),
labels drawn from a Zipf law over ``--labels`` possible labels. At each (epsilon, delta):

* **pandas_dp**: ``df.dp.histogram("label", categories="discover", epsilon=, delta=)`` inside
  ``pdp.budget(epsilon=, delta=)``: noisy counts of the released labels (one label per person: truncated
  discrete Laplace thresholding, the truncation and threshold decided exactly).
* **OpenDP** (``opendp.prelude``, ``Context.compositor`` over a polars ``LazyFrame``,
  ``query().group_by("label").agg(dp.len())``): its documented key release, which also returns noisy
  counts (integer Laplace and a threshold it chooses; the threshold is read from ``summarize()``).
* **PipelineDP** (``pipeline_dp.partition_selection.create_partition_selection_strategy``, backed by
  PyDP): the partition *selection* only, with the whole (epsilon, delta) spent on choosing labels (no
  counts; a count would need a share of the budget). Its strategies expose the exact keep probability of
  a label with ``n`` persons, so the table gives the exact expected number kept.

Columns: labels released (mean over seeds; exact expectation for PipelineDP), labels present in the data,
the smallest true count among released labels (pandas_dp and OpenDP, over seeds), the threshold, seconds.

A second table (pandas_dp only, no peer needed) gives the EXACT expectations, from the true label counts
and the noise pmf, of the mechanisms compared for one label per unit (issue 27): (a) discrete Laplace
thresholding (pandas_dp before the truncated mechanism); (b) truncated discrete Laplace thresholding,
counts released; (b') what pandas_dp now uses: (b) mixed per label with the next lower truncation and
threshold so that the whole delta is spent; (c) the optimal selection of Desfontaines et al. at half the
epsilon and the whole delta, then discrete Laplace counts at the other half; and the optimal selection
alone with the whole (epsilon, delta) and no counts (the ceiling). Columns: expected labels released, and
the root mean squared error of the released counts, ``sqrt(sum_labels E[Z**2 1{released}] /
E[labels released])`` (for (c) the counts' noise is independent of the selection: its standard deviation).
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from typing import Any

import numpy as np
import pandas as pd

import pandas_dp as pdp


def _data(rows: int, labels: int, zipf: float, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"label": (rng.zipf(zipf, rows) - 1) % labels})


def ours(df: pd.DataFrame, epsilon: float, delta: float, seeds: int) -> dict[str, Any]:
    counts = df["label"].value_counts()
    found, smallest, seconds, threshold = [], [], [], None
    for seed in range(seeds):
        start = time.perf_counter()
        with pdp.budget(epsilon=epsilon, delta=delta):
            h = df.dp.histogram("label", categories="discover", epsilon=epsilon, delta=delta,
                                rng=np.random.default_rng(seed))
        seconds.append(time.perf_counter() - start)
        released = list(h.counts.index)
        found.append(len(released))
        smallest.append(int(counts.loc[released].min()) if released else np.nan)
        threshold = h.params["threshold"]
    return {"released": np.mean(found), "smallest true count": np.nanmin(smallest), "threshold": threshold,
            "seconds": np.mean(seconds)}


def opendp_release(df: pd.DataFrame, epsilon: float, delta: float, seeds: int) -> dict[str, Any] | str:
    try:
        import polars as pl
        import opendp.prelude as dp
    except ImportError as err:
        return f"skipped (not importable: {err})"
    dp.enable_features("contrib")
    counts = df["label"].value_counts()
    lf = pl.LazyFrame({"label": df["label"].to_numpy()})
    found, smallest, seconds, threshold = [], [], [], None
    for _ in range(seeds):  # OpenDP draws from its own secure source: runs are independent, not seeded
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # the signed= default of dp.len() is changing
            context = dp.Context.compositor(data=lf, privacy_unit=dp.unit_of(contributions=1),
                                            privacy_loss=dp.loss_of(epsilon=epsilon, delta=delta),
                                            split_evenly_over=1)
            query = context.query().group_by("label").agg(dp.len())
            threshold = int(query.summarize()["threshold"][0])
            out = query.release().collect()
        seconds.append(time.perf_counter() - start)
        released = out["label"].to_list()
        found.append(len(released))
        smallest.append(int(counts.loc[released].min()) if released else np.nan)
    return {"released": np.mean(found), "smallest true count": np.nanmin(smallest), "threshold": threshold,
            "seconds": np.mean(seconds)}


def pipelinedp_selection(df: pd.DataFrame, epsilon: float, delta: float, strategy: str) -> dict[str, Any] | str:
    try:
        import pipeline_dp
        from pipeline_dp.partition_selection import create_partition_selection_strategy
    except ImportError as err:
        return f"skipped (not importable: {err})"
    kind = {"truncated geometric": pipeline_dp.PartitionSelectionStrategy.TRUNCATED_GEOMETRIC,
            "Laplace thresholding": pipeline_dp.PartitionSelectionStrategy.LAPLACE_THRESHOLDING,
            "Gaussian thresholding": pipeline_dp.PartitionSelectionStrategy.GAUSSIAN_THRESHOLDING}[strategy]
    start = time.perf_counter()
    selection = create_partition_selection_strategy(kind, epsilon, delta, 1)
    sizes = df["label"].value_counts().to_numpy()
    distinct, how_many = np.unique(sizes, return_counts=True)  # one keep probability per distinct size
    expected = sum(float(selection.probability_of_keep(int(n))) * int(k) for n, k in zip(distinct, how_many))
    return {"released": expected, "smallest true count": np.nan, "threshold": np.nan,
            "seconds": time.perf_counter() - start}


def _optimal_selection(epsilon: float, delta: float, top: int) -> np.ndarray:
    """``pi(0..top)`` of Desfontaines et al.'s recursion: the largest release probability at (epsilon, delta)."""
    pi = np.zeros(top + 1)
    for n in range(1, top + 1):  # benchmark only: a few thousand steps
        prev = pi[n - 1]
        pi[n] = min(math.exp(epsilon) * prev + delta, 1 - math.exp(-epsilon) * (1 - prev - delta), 1.0)
    return pi


def exact_comparison(df: pd.DataFrame, epsilon: float, delta: float) -> list[dict[str, Any]]:
    """Exact expected labels and count error of (a), (b), (c) and the optimal selection (module docstring)."""
    from fractions import Fraction

    from pandas_dp.privacy.loss import DiscreteLaplace
    from pandas_dp.privacy.selection import discovery_threshold, truncated_mixture

    sizes, how_many = np.unique(df["label"].value_counts().to_numpy(), return_counts=True)
    scale, d = 1 / Fraction(str(epsilon)), Fraction(str(delta))
    a = math.exp(-epsilon)

    def released(z: np.ndarray, pmf: np.ndarray, threshold: int) -> tuple[float, float]:
        passes = sizes[:, None] + z[None, :] >= threshold          # labels x noise values
        labels = float(how_many @ (passes * pmf).sum(axis=1))
        squared = float(how_many @ (passes * pmf * z.astype(float) ** 2).sum(axis=1))
        return labels, math.sqrt(squared / labels)

    rows = []
    t_a = discovery_threshold(DiscreteLaplace(scale), d)
    wide = np.arange(-int(80 / epsilon) - 200, int(80 / epsilon) + 201)
    rows.append(("(a) discrete Laplace thresholding, counts", t_a,
                 *released(wide, (1 - a) / (1 + a) * a ** np.abs(wide), t_a)))
    k, t_b, mu = truncated_mixture(scale, d)
    z = np.arange(-k, k + 1)
    pmf_k = a ** np.abs(z) / (a ** np.abs(z)).sum()
    rows.append((f"(b) truncated discrete Laplace (k={k}) thresholding, counts", t_b, *released(z, pmf_k, t_b)))
    low = np.where(np.abs(z) <= k - 1, a ** np.abs(z), 0.0)
    n_k, e_k = released(z, pmf_k, t_b)
    n_low, e_low = released(z, low / low.sum(), t_b - 1)
    m = float(mu)
    mixed = (1 - m) * n_k + m * n_low
    rows.append((f"(b') (b) mixed with (k-1, T-1) at mu={m:.4f} (pandas_dp now), counts", t_b, mixed,
                 math.sqrt(((1 - m) * e_k**2 * n_k + m * e_low**2 * n_low) / mixed)))
    half = _optimal_selection(epsilon / 2, delta, int(sizes.max()))
    a2 = math.exp(-epsilon / 2)
    rows.append(("(c) optimal selection at epsilon/2, counts at epsilon/2", np.nan,
                 float(how_many @ half[sizes]), math.sqrt(2 * a2) / (1 - a2)))
    full = _optimal_selection(epsilon, delta, int(sizes.max()))
    rows.append(("optimal selection alone (no counts)", np.nan, float(how_many @ full[sizes]), np.nan))
    return [{"epsilon": epsilon, "delta": delta, "mechanism": name, "threshold": t, "expected labels": n,
             "count rmse": e} for name, t, n, e in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--labels", type=int, default=100_000)
    parser.add_argument("--zipf", type=float, default=1.1)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--delta", type=float, nargs="*", default=[1e-6])
    args = parser.parse_args()
    df = _data(args.rows, args.labels, args.zipf)
    present = df["label"].nunique()
    print(f"{args.rows:,} rows (one per person), {present:,} distinct labels present (Zipf s={args.zipf} over "
          f"{args.labels:,}); mean of {args.seeds} seeds (PipelineDP: exact expectation)\n")
    rows = []
    for delta in args.delta:
        for epsilon in (0.1, 1.0):
            runs: list[tuple[str, Any]] = [
                ("pandas_dp discover (counts)", ours(df, epsilon, delta, args.seeds)),
                ("OpenDP group_by + dp.len (counts)", opendp_release(df, epsilon, delta, args.seeds))]
            runs += [(f"PipelineDP {s} (selection only)", pipelinedp_selection(df, epsilon, delta, s))
                     for s in ("truncated geometric", "Laplace thresholding", "Gaussian thresholding")]
            for name, out in runs:
                if isinstance(out, str):
                    print(f"{name}: {out}")
                    continue
                rows.append({"epsilon": epsilon, "delta": delta, "library": name, **out})
    table = pd.DataFrame(rows)
    print(table.to_markdown(index=False, floatfmt=".4g") if _has_tabulate() else table.to_string(index=False))
    exact = pd.DataFrame([row for delta in args.delta for epsilon in (0.1, 0.5, 1.0, 2.0)
                          for row in exact_comparison(df, epsilon, delta)])
    print("\nExact expectations, one label per unit (pandas_dp only):\n")
    print(exact.to_markdown(index=False, floatfmt=".4g") if _has_tabulate() else exact.to_string(index=False))


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    main()
