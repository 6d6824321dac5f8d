"""Measurements behind ``method="auto"``: every candidate release on DPBench shapes at many scales.

Run: ``python -m benchmarks.auto_evidence [--trials 6] [--out benchmarks/results/auto_evidence.csv]``
(then ``python -m benchmarks.bench_auto --fit`` derives the rule from the file).

Cases. Every shared DPBench dataset (``benchmarks/dpbench.py``) gives a *shape*;
each shape is measured at its natural scale and resampled (multinomial, fixed
seed, DPBench's own protocol) to totals ``1e3, 10^3.5, .., 1e7`` (half decades), on its own domain and on
a coarser one (1-D: 4096 -> 512 bins; 2-D: 256 x 256 -> 64 x 64 cells, summing
blocks), at epsilon in {0.1, 1}. Synthetic shapes (:data:`SYNTHETIC`: flat,
smooth bumps, sparse Zipf spikes, piecewise-constant steps; 1-D and 2-D; and in
2-D three families written from the shape facts of held-out data, two shapes
each: one dominant cell or 2 x 2 block over sparse spikes, like capital gain x
loss; a few hundred small dense clusters and lines over an empty grid, like cab
pick-ups and check-ins; a heavy-tailed axis times a smooth one, like income x
age; and two zero-inflated amounts, most rows at 0 / 0 and the rest on one
axis each or, for 10% of them, on both, like capital gain x loss) are resampled
the same way (they have no natural scale). Families are added with
``--datasets SYN2-ZEROS SYN2-ZEROS-B --trials 10 --append`` (a few minutes). Workloads: 1-D Prefix1D, 2,000 random ranges and
single bins; 2-D 2,000 random rectangles and single cells (seed 0, as in
``bench_dawa_grids``).

Candidates are the registered methods run through the release layer
(``plan_method`` + the method's ``release``, i.e. exactly what
``histogram(method=...)`` does after counting), with the knobs ``auto`` may set:
``hierarchical`` with and without ``nonnegative`` (and the geometric budget split
in 2-D), AHP, DPCube (least squares, uniform), DAWA tuned for the scored
workload (``"prefix"``, ``"ranges"`` -- a public sample, not the scored ranges --
or ``"identity"``), UGrid and AGrid (2-D), and, as free post-processing, every
flat-ish release clipped at 0 (``+clip``) and DAWA's release with its bucket tree projected to
non-negative totals (``dawa+nn``, what ``nonnegative=True`` gives). One configuration is measured
again, its rows replaced and every other row kept, with ``--configs dawa --replace`` (DAWA's
``+nn`` variant was added that way, same seeds: its plain rows came out identical). Metric: DPBench's scaled L2 error
``||W x - W x_hat||_2 / |W| / total``, mean over ``--trials`` releases.
"""

from __future__ import annotations

import argparse
import functools
import time
import zlib
from typing import Any

import numpy as np
import pandas as pd

from benchmarks import dpbench
from pandas_dp.domain.grid import Grid, make_grid
from pandas_dp.privacy.loss import pure
from pandas_dp.releases.methods import METHODS, plan_method

EPSILONS = (0.1, 1.0)
#: Resampled totals: half decades from 1e3 to 1e7, so that log10(N eps) at both epsilons steps by half a
#: decade and the fit's quarter-decade bounds (``auto_fit.CUTS``) fall between measured scales, not on a
#: guess halfway across a decade (a natural-scale set, ADULT-2D at N eps = 10^3.51, sat on such a guess).
SCALES = tuple(float(10 ** (k / 2)) for k in range(6, 15))
COARSE = {1: 8, 2: 4}      # block size per axis of the coarse domain
#: Domains: block size per axis by dimensions. The evidence has ``fine`` and ``coarse``; ``mid`` (128 x 128 in
#: 2-D, 2,048 bins in 1-D) is a size the fit never sees, to check the shipped rule on (``bench_auto --held-out-domain``).
DOMAINS = {"fine": {1: 1, 2: 1}, "coarse": COARSE, "mid": {1: 2, 2: 2}}

#: name -> (method, knobs, nonnegative, dims, clip variant too). DAWA's workload is set per scored workload.
CONFIGS: dict[str, tuple[str, dict, bool, tuple[int, ...], bool]] = {
    "identity": ("identity", {}, False, (1, 2), True),
    "hierarchical": ("hierarchical", {}, False, (1, 2), False),
    "hierarchical+nn": ("hierarchical", {}, True, (1, 2), False),
    "hierarchical-geo": ("hierarchical", {"budget_split": "geometric"}, False, (2,), False),
    "hierarchical-geo+nn": ("hierarchical", {"budget_split": "geometric"}, True, (2,), False),
    "ahp": ("ahp", {}, False, (1, 2), True),
    "dpcube": ("dpcube", {}, False, (1, 2), True),
    "dpcube-uniform": ("dpcube", {"estimate": "uniform"}, False, (1, 2), True),
    "dawa": ("dawa", {}, False, (1, 2), False),
    "ugrid": ("ugrid", {}, False, (2,), True),
    "agrid": ("agrid", {}, False, (2,), True),
}
#: Configurations whose release also gives a ``+nn`` variant: the result's ``detail.nonnegative_estimates()``, what
#: the method releases for ``nonnegative=True`` (DAWA: the bucket tree's non-negative consistent projection). Same
#: draws as the plain variant: the projection is post-processing.
PROJECTED = frozenset({"dawa"})
#: DAWA's workload knob for each scored workload (2-D single cells: not run, too slow to tune).
DAWA_FOR = {"prefix": "prefix", "ranges": "ranges", "bins": "identity"}


@functools.lru_cache(maxsize=None)
def grid_of(shape: tuple[int, ...]) -> Grid:
    """The public grid of a counts shape (one unit-width bin per cell)."""
    cols = ["a", "b"][:len(shape)]
    frame = pd.DataFrame({c: [0] for c in cols})
    if len(shape) == 1:
        return make_grid(frame, cols, bins=shape[0], range=(0, shape[0]))
    return make_grid(frame, cols, bins=list(shape), range=[(0, s) for s in shape])


def release_estimates(counts: np.ndarray, method: str, knobs: dict, epsilon: float, nonnegative: bool,
                      rng: np.random.Generator, *, result: bool = False) -> Any:
    """The estimates of ``histogram(method=...)`` on exact ``counts`` (the release step, no counting).

    ``result=True`` returns the result object instead of its estimates. ``counts`` is not changed: the
    release layer owns the counts it is given (identity and the trees add their noise into them in
    place), so it gets a copy; passing ``counts`` itself made every later trial and configuration run
    on already-noised counts while being scored against the exact ones.
    """
    counts = np.array(counts, dtype=np.int64, copy=True)
    grid = grid_of(tuple(counts.shape))
    loss = pure(epsilon)
    planned = plan_method(method, grid, loss, knobs)
    out = METHODS[method].release(counts, grid, planned, rng=rng, nonnegative=nonnegative, loss=loss)
    return out if result else out.counts.to_numpy(dtype=np.float64).reshape(counts.shape)


def workloads(shape: tuple[int, ...]) -> dict[str, np.ndarray | None]:
    """Scored workloads: 1-D prefix / ranges / bins, 2-D rectangles (``ranges``) / cells (``bins``)."""
    if len(shape) == 1:
        return {"prefix": dpbench.prefix_ranges(shape[0]), "ranges": dpbench.random_ranges(shape[0]), "bins": None}
    return {"ranges": dpbench.random_rectangles(shape), "bins": None}


def answers(x: np.ndarray, w: np.ndarray | None) -> np.ndarray:
    if w is None:
        return np.asarray(x, dtype=np.float64).ravel()
    return dpbench.range_answers(x, w) if x.ndim == 1 else dpbench.rectangle_answers(x, w)


def coarsen(x: np.ndarray, blocks: dict[int, int] = COARSE) -> np.ndarray:
    """Sum blocks of ``blocks[d]`` cells per axis (:data:`COARSE` by default)."""
    k = blocks[x.ndim]
    if x.ndim == 1:
        return x.reshape(-1, k).sum(axis=1)
    return x.reshape(x.shape[0] // k, k, x.shape[1] // k, k).sum(axis=(1, 3))


def resample(x: np.ndarray, total: float, seed: int) -> np.ndarray:
    """A multinomial sample of ``total`` rows from the shape of ``x`` (DPBench's scaling)."""
    p = x.ravel() / x.sum()
    return np.random.default_rng(seed).multinomial(int(total), p).reshape(x.shape).astype(np.int64)


def _synthetic(name: str) -> np.ndarray:
    """A synthetic shape (probabilities on 4096 bins or 256 x 256 cells), fixed by its name."""
    rng = np.random.default_rng(seed_of("synthetic", name))
    two_d = name.startswith("SYN2")
    shape = (256, 256) if two_d else (4096,)
    kind = name.split("-")[1]          # SYN2-CITY-B: a second shape of the family CITY (its own seed)
    grids = np.meshgrid(*[np.arange(k) for k in shape], indexing="ij")
    if kind == "UNIFORM":
        p = np.ones(shape)
    elif kind == "BUMPS":              # smooth clusters of different widths on an empty background
        p = np.zeros(shape)
        for _ in range(6):
            centre = [rng.integers(0, k) for k in shape]
            width = rng.uniform(0.01, 0.08) * shape[0]
            p += rng.random() * np.exp(-0.5 * sum((g - c) ** 2 for g, c in zip(grids, centre)) / width ** 2)
        p[p < 1e-3 * p.max()] = 0
    elif kind == "SPIKES":             # Zipf weights on a sparse random support
        p = np.zeros(int(np.prod(shape)))
        support = rng.choice(p.size, max(8, p.size // 200), replace=False)
        p[support] = 1.0 / np.arange(1, support.size + 1) ** 1.1
        p = p.reshape(shape)
    elif kind == "STEPS":              # piecewise constant: random boxes of random density, half empty
        p = np.zeros(shape)
        for _ in range(12):
            lo = [rng.integers(0, k) for k in shape]
            hi = [min(k, a + rng.integers(k // 32, k // 4)) for a, k in zip(lo, shape)]
            p[tuple(slice(a, b) for a, b in zip(lo, hi))] += rng.exponential()
    elif kind == "DOMINANT":           # one cell holds 85% (a 0/0 cell, like capital gain x loss; -B: a
        p = np.zeros(shape)            # 2 x 2 block holds 65%); the rest: sparse Zipf spikes, mostly on the
        r0, c0 = (int(rng.integers(0, k // 16)) for k in shape)       # dominant row and column, a few anywhere
        block = name.endswith("-B")
        p[r0:r0 + 1 + block, c0:c0 + 1 + block] = 0.65 / 4 if block else 0.85
        rest = ((("row", 0.14), ("col", 0.14), ("any", 0.07)) if block else
                (("row", 0.06), ("col", 0.06), ("any", 0.03)))
        for where, share in rest:
            n = int(rng.integers(20, 60))
            rows = np.full(n, r0) if where == "row" else rng.integers(0, shape[0], n)
            cols = np.full(n, c0) if where == "col" else rng.integers(0, shape[1], n)
            w = 1.0 / np.arange(1, n + 1) ** 1.2
            np.add.at(p, (rows, cols), share * w / w.sum())
    elif kind == "CITY":               # a few hundred small dense clusters and a few lines (streets)
        p = np.zeros(shape)            # over a mostly empty grid, cluster weights heavy-tailed
        n = int(rng.integers(200, 400))
        centres = [rng.integers(0, k, n) for k in shape]
        widths = rng.uniform(0.4, 2.0, n)
        weights = rng.pareto(1.2, n) + 1.0
        pts = int(rng.integers(60, 120))         # sample each cluster as points, kept on the grid
        for axis_c, w, wt in zip(zip(*centres), widths, weights):
            xy = [np.clip(np.rint(c + w * rng.standard_normal(pts)).astype(int), 0, k - 1)
                  for c, k in zip(axis_c, shape)]
            np.add.at(p, tuple(xy), wt / pts)
        for _ in range(int(rng.integers(8, 16))):
            a = [rng.integers(0, k) for k in shape]
            b = [rng.integers(0, k) for k in shape]
            t = np.linspace(0.0, 1.0, 400)
            xy = tuple(np.rint(u + (v - u) * t).astype(int) for u, v in zip(a, b))
            np.add.at(p, xy, 0.25 * weights.mean() * rng.random() / t.size)
    elif kind == "INCOME":             # heavy-tailed skew along one axis times a smooth other axis
        income = np.arange(shape[0], dtype=np.float64)
        mode = rng.uniform(6, 20)
        tail = (1.0 + income / mode) ** -rng.uniform(2.2, 3.2) * (1.0 - np.exp(-(income + 0.5) / (0.3 * mode)))
        age = np.arange(shape[1], dtype=np.float64)
        smooth = sum(rng.uniform(0.5, 1.0) * np.exp(-0.5 * ((age - rng.uniform(0.2, 0.8) * shape[1])
                                                            / (rng.uniform(0.08, 0.2) * shape[1])) ** 2)
                     for _ in range(2))
        p = np.outer(tail, smooth)
    elif kind == "ZEROS":              # two zero-inflated amounts (two incomes, gain and loss): most rows 0 / 0,
        k = shape[0]                   # the rest on one axis each, a few distinct heavy-tailed values; -B: 10% of
        both = 0.1 if name.endswith("-B") else 0.0                   # the non-zero rows have both amounts
        p00 = rng.uniform(0.65, 0.75) if both else rng.uniform(0.8, 0.9)

        def amount() -> np.ndarray:
            support = np.sort(rng.choice(np.arange(1, k), int(rng.integers(30, 90)), replace=False))
            weight = (1.0 + support / rng.uniform(5, 30)) ** -rng.uniform(1.5, 2.5) * rng.pareto(1.5, support.size)
            v = np.zeros(k)
            v[support] = weight
            return v / v.sum()

        first, second = amount(), amount()
        non_zero = 1.0 - p00
        on_first = non_zero * rng.uniform(0.3, 0.7)
        p = np.zeros(shape)
        p[0, 0] = p00
        p[0, :] += on_first * (1.0 - both) * second
        p[:, 0] += (non_zero - on_first) * (1.0 - both) * first
        p += non_zero * both * np.outer(first, second)
    else:
        raise ValueError(name)
    return p / p.sum()


#: Synthetic shapes (1-D over 4096 bins, 2-D over 256 x 256), resampled like the DPBench ones.
SYNTHETIC = ("SYN-UNIFORM", "SYN-BUMPS", "SYN-SPIKES", "SYN-STEPS",
             "SYN2-UNIFORM", "SYN2-BUMPS", "SYN2-SPIKES", "SYN2-STEPS",
             "SYN2-DOMINANT", "SYN2-CITY", "SYN2-INCOME", "SYN2-DOMINANT-B", "SYN2-CITY-B", "SYN2-INCOME-B",
             "SYN2-ZEROS", "SYN2-ZEROS-B")


def seed_of(*parts: Any) -> int:
    return zlib.crc32("|".join(map(str, parts)).encode())


def cases(datasets: tuple[str, ...], scales: tuple[float, ...], domains: tuple[str, ...] = ("fine", "coarse")
          ) -> list[dict]:
    """Every (shape, domain, scale) case: natural scale and resampled, on each of ``domains`` (:data:`DOMAINS`)."""
    out = []
    for name in datasets:
        synthetic = name in SYNTHETIC
        x = _synthetic(name) if synthetic else dpbench.load(name)
        if x is None:
            print(f"skip {name}: not in {dpbench.DATA_DIR}")
            continue
        for domain, base in ((d, coarsen(x, DOMAINS[d])) for d in domains):
            if not synthetic:
                out.append({"dataset": name, "domain": domain, "scale": "natural", "x": base})
            for total in scales:
                out.append({"dataset": name, "domain": domain, "scale": f"{total:.0e}",
                            "x": resample(base, total, seed_of(name, domain, total))})
    return out


def measure(case: dict, epsilon: float, trials: int, configs: tuple[str, ...] | None = None) -> list[dict]:
    """Mean scaled L2 error of every candidate (of ``configs``, all if None) on every workload of one case."""
    x = case["x"]
    d, total = x.ndim, float(x.sum())
    wls = workloads(x.shape)
    truth = {wl: answers(x, w) for wl, w in wls.items()}
    rows = []
    for cname, (method, knobs, _, dims, _) in CONFIGS.items():
        if d not in dims or (configs is not None and cname not in configs):
            continue
        runs = [(wl, dict(knobs, workload=DAWA_FOR[wl])) for wl in wls] if method == "dawa" else [(None, knobs)]
        for only, kn in runs:
            if method == "dawa" and d == 2 and only == "bins":
                continue
            rng = np.random.default_rng(seed_of(case["dataset"], case["domain"], case["scale"], epsilon, cname, only))
            errs: dict[tuple[str, str], list[float]] = {}
            t0 = time.perf_counter()
            for _ in range(trials):
                for variant, e in _variants(x, cname, kn, epsilon, rng).items():
                    for wl, w in wls.items():
                        if only is None or wl == only:
                            errs.setdefault((variant, wl), []).append(
                                dpbench.scaled_l2_error(truth[wl], answers(e, w), total))
            secs = (time.perf_counter() - t0) / trials
            for (variant, wl), es in errs.items():
                rows.append({"dataset": case["dataset"], "domain": case["domain"], "scale": case["scale"],
                             "dims": d, "cells": int(x.size), "total": total, "epsilon": epsilon,
                             "workload": wl, "config": variant, "error": float(np.mean(es)),
                             "sem": float(np.std(es, ddof=1) / np.sqrt(len(es))) if len(es) > 1 else np.nan,
                             "seconds": secs})
    return rows


def _variants(x: np.ndarray, cname: str, knobs: dict, epsilon: float, rng: np.random.Generator
              ) -> dict[str, np.ndarray]:
    """One release of a :data:`CONFIGS` entry, by name: its estimates, clipped at 0 (``+clip``, where the entry
    says so) and, for :data:`PROJECTED` ones, the projected estimates (``+nn``): post-processing of one release."""
    method, _, nonneg, _, clip = CONFIGS[cname]
    if cname in PROJECTED:
        detail = release_estimates(x, method, knobs, epsilon, nonneg, rng, result=True).detail
        est = detail.estimates.reshape(x.shape)
        out = {cname: est, cname + "+nn": detail.nonnegative_estimates().reshape(x.shape)}
    else:
        est = release_estimates(x, method, knobs, epsilon, nonneg, rng)
        out = {cname: est}
    if clip:
        out[cname + "+clip"] = np.maximum(est, 0.0)
    return out


def errors_of(x: np.ndarray, config: str, workload: str, epsilon: float, trials: int,
              rng: np.random.Generator) -> np.ndarray:
    """Scaled L2 errors of one configuration (a :data:`CONFIGS` name, ``+clip`` for its clipped variant, ``+nn`` for
    the projected variant of a :data:`PROJECTED` one) on one workload, over ``trials`` releases of ``x``."""
    base = config if config in CONFIGS else config.removesuffix("+clip").removesuffix("+nn")
    knobs = CONFIGS[base][1]
    if CONFIGS[base][0] == "dawa":
        knobs = dict(knobs, workload=DAWA_FOR[workload])
    w = workloads(x.shape)[workload]
    truth, total = answers(x, w), float(x.sum())
    out = np.empty(trials)
    for i in range(trials):
        out[i] = dpbench.scaled_l2_error(truth, answers(_variants(x, base, knobs, epsilon, rng)[config], w), total)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument("--datasets", nargs="*",
                        default=list(dpbench.DATASETS_1D + dpbench.DATASETS_2D + SYNTHETIC))
    parser.add_argument("--scales", nargs="*", type=float, default=list(SCALES))
    parser.add_argument("--domains", nargs="*", default=["fine", "coarse"], choices=list(DOMAINS))
    parser.add_argument("--out", default="benchmarks/results/auto_evidence.csv.gz")
    parser.add_argument("--append", action="store_true", help="add the rows to those already in --out")
    parser.add_argument("--configs", nargs="*", choices=list(CONFIGS), default=None,
                        help="measure only these configurations (and their variants)")
    parser.add_argument("--replace", action="store_true",
                        help="with --configs: replace their rows (and their variants') in --out by the fresh ones, "
                             "keep every other row")
    args = parser.parse_args()
    if args.replace and not args.configs:
        parser.error("--replace needs --configs")
    old = pd.read_csv(args.out, dtype={"scale": str}) if args.append or args.replace else pd.DataFrame()
    if args.replace:
        old = old[~old["config"].isin(variants_of(tuple(args.configs)))]
    configs = None if args.configs is None else tuple(args.configs)
    rows: list[dict] = []
    for case in cases(tuple(args.datasets), tuple(args.scales), tuple(args.domains)):
        for eps in EPSILONS:
            t0 = time.perf_counter()
            rows += measure(case, eps, args.trials, configs)
            print(f"{case['dataset']:12s} {case['domain']:6s} {case['scale']:8s} eps={eps:<4g} "
                  f"{time.perf_counter() - t0:6.1f}s", flush=True)
            pd.concat([old, pd.DataFrame(rows)]).to_csv(args.out, index=False, float_format="%.5g")
    print(f"wrote {len(old) + len(rows)} rows to {args.out}")


def variants_of(configs: tuple[str, ...]) -> list[str]:
    """The evidence's names for ``configs`` and their ``+clip`` / ``+nn`` variants (what ``--replace`` removes)."""
    return [v for c in configs for v in (c, c + "+clip", c + "+nn")]


if __name__ == "__main__":
    main()
