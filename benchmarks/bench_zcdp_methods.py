"""Which method under ``rho=``: identity, hierarchical (+nn), UGrid, AGrid, DAWA on the DPBench sets (issue 28.3).

Run: ``python -m benchmarks.bench_zcdp_methods [--trials 3] [--rhos 0.005 0.5] [--datasets HEPTH ADULT]
[--out benchmarks/results/zcdp_methods.md]`` (about 3-4 minutes on one core with the defaults).

Every method runs under a zCDP loss ``rho`` (0.005 and 0.5: ``epsilon**2 / 2`` of
epsilon 0.1 and 1), called as ``histogram(method=..., rho=...)`` calls it, on
the algorithms directly (the same plans and noise objects, without a frame):

* ``identity``: one discrete Gaussian draw per bin (``sigma**2 = 1 / (2 rho)``);
  ``identity+nn`` clips it at 0;
* ``hierarchical``: the Gaussian tree with ``branching="auto"`` chosen for the
  measure and GLS (``hierarchical+nn``: ``nonnegative=True``);
* ``ugrid``, ``agrid`` (2-D): the grids with Gaussian levels and the noisy
  total (``total_share`` 1/20 of rho), sizes from ``sigma**2`` in place of ``2 / epsilon**2``;
* ``dawa``: the pure partition at ``epsilon_1`` (charged ``epsilon_1**2 / 2``
  = the default ratio of rho) and the Gaussian bucket hierarchy with the rest,
  tuned for the workload it is measured on (``"prefix"``, ``"identity"`` for
  single bins, or the library's public random ranges);
* ``+clip``: the same release clipped at 0 (``nonnegative=True`` of identity
  and the grids, the ``+clip`` configurations of ``method="auto"``); ``dawa+nn``:
  the same DAWA release with the bucket tree's non-negative projection
  (DAWA's ``nonnegative=True``);
* references, not candidates: ``dawa (pure)`` and ``agrid (pure)`` at
  ``epsilon = sqrt(2 rho)``, which a rho budget charges ``epsilon**2 / 2 = rho``:
  what the Gaussian sides gain over running the pure method under the same budget
  (on the ``ranges`` workload only, to keep the run under 5 minutes).

Metric: DPBench's scaled L2 error (Hay et al. 2016) x 1e6, mean over
``--trials`` releases, on 2,000 random ranges (1-D) or rectangles (2-D)
(``benchmarks.dpbench``, seed 0; workload ``ranges``), single bins (``bins``)
and, in 1-D, Prefix1D (``prefix``). Printed: the table
and the best method per (dims, workload, rho, data set); written to ``--out``
(and the rows to ``--out`` with ``.json``; ``--tables-from`` re-renders them).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

import numpy as np

from benchmarks import dpbench
from pandas_dp.algorithms.dawa.release import dawa, plan_dawa
from pandas_dp.algorithms.grids import agrid, plan_agrid, plan_ugrid, ugrid
from pandas_dp.algorithms.tree.release import plan_tree, release_tree
from pandas_dp.privacy.loss import ZCDP, pure
from pandas_dp.releases.methods.dawa import public_ranges

Method = Callable[[np.ndarray, np.random.Generator], Any]
RHOS = (0.005, 0.5)


def _rho(value: float) -> ZCDP:
    return ZCDP(Fraction(repr(value)))


def methods(shape: tuple[int, ...], rho: float, workload: str) -> dict[str, Method]:
    """Every method's ``estimates(counts, rng)`` at ``rho``; plans made once (public inputs only).

    A method may return several variants from one release (``{name: estimates}``): ``+clip`` is the
    same release clipped at 0 (post-processing), as ``method="auto"``'s clipped configurations;
    ``dawa+nn`` the same DAWA release projected (its ``nonnegative=True``).
    """
    loss = _rho(rho)
    eps = pure(Fraction(repr(float(np.sqrt(2 * rho)))).limit_denominator(10 ** 6))   # charged eps**2/2 ~ rho
    flat = loss.noise()
    n = shape if len(shape) > 1 else shape[0]
    trees = {"hierarchical": plan_tree(n, loss=loss, branching="auto")}
    if len(shape) == 2:
        trees["hierarchical-geo"] = plan_tree(n, loss=loss, branching="auto", budget_split="geometric")
    dawa_workload = {"prefix": "prefix", "bins": "identity"}.get(workload, public_ranges(shape))

    def clipped(name: str, run: Callable[[np.ndarray, np.random.Generator], np.ndarray]) -> Method:
        def both(x: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
            est = np.asarray(run(x, rng), dtype=np.float64)
            return {name: est, f"{name}+clip": np.maximum(est, 0.0)}
        return both

    out: dict[str, Method] = {"identity": clipped("identity", lambda x, rng: x + flat.sample(x.shape, rng))}
    for name, tree in trees.items():
        out[name] = lambda x, rng, tree=tree: release_tree(x, tree, rng=rng).leaf_estimates()
        out[f"{name}+nn"] = lambda x, rng, tree=tree: release_tree(x, tree, rng=rng, nonnegative=True).leaf_estimates()
    if len(shape) == 2:
        up, ap, ap_pure = plan_ugrid(shape, loss=loss), plan_agrid(shape, loss=loss), plan_agrid(shape, loss=eps)
        out["ugrid"] = clipped("ugrid", lambda x, rng: ugrid(x, up, rng=rng).estimates)
        out["agrid"] = clipped("agrid", lambda x, rng: agrid(x, ap, rng=rng).estimates)
        if workload == "ranges":
            out["agrid (pure)"] = lambda x, rng: agrid(x, ap_pure, rng=rng).estimates
    dplan = plan_dawa(shape, loss=loss, workload=dawa_workload)

    def dawa_both(x: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
        r = dawa(x, dplan, rng=rng)
        return {"dawa": r.estimates, "dawa+nn": r.nonnegative_estimates()}
    out["dawa"] = dawa_both
    if workload == "ranges":                      # the references on the ranges workload only (run time)
        dplan_pure = plan_dawa(shape, loss=eps, workload=dawa_workload)
        out["dawa (pure)"] = lambda x, rng: dawa(x, dplan_pure, rng=rng).estimates
    return out


def workloads(x: np.ndarray) -> dict[str, tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]]:
    """Workload name -> (queries, answers(estimates))."""
    bins = (np.arange(x.size), lambda e: np.asarray(e, dtype=np.float64).ravel())
    if x.ndim == 1:
        ranges = dpbench.random_ranges(x.size, 2000, seed=0)
        prefix = dpbench.prefix_ranges(x.size)
        return {"ranges": (ranges, lambda e: dpbench.range_answers(e, ranges)),
                "prefix": (prefix, lambda e: dpbench.range_answers(e, prefix)), "bins": bins}
    rects = dpbench.random_rectangles(x.shape, 2000, seed=0)
    return {"ranges": (rects, lambda e: dpbench.rectangle_answers(e, rects)), "bins": bins}


def run(datasets: list[str] | None, rhos: tuple[float, ...], trials: int) -> list[dict]:
    rows = []
    names = [(1, n) for n in dpbench.DATASETS_1D] + [(2, n) for n in dpbench.DATASETS_2D]
    for dims, name in names:
        if datasets and name not in datasets:
            continue
        x = dpbench.load(name)
        if x is None:
            print(f"skip {name}: not in {dpbench.DATA_DIR}")
            continue
        total = float(x.sum())
        for wname, (_, answer) in workloads(x).items():
            truth = answer(x)
            for rho in rhos:
                start = time.perf_counter()
                errs: dict[str, list[float]] = {}
                for mname, method in methods(x.shape, rho, wname).items():
                    for t in range(trials):
                        got = method(x, np.random.default_rng(1000 * t + 7))
                        for vname, est in (got.items() if isinstance(got, dict) else [(mname, got)]):
                            errs.setdefault(vname, []).append(
                                dpbench.scaled_l2_error(truth, answer(est), total) * 1e6)
                rows += [{"dims": dims, "dataset": name, "workload": wname, "rho": rho, "method": m,
                          "error": float(np.mean(e))} for m, e in errs.items()]
                print(f"{dims}-D {name:12s} {wname:10s} rho {rho:<6g} {time.perf_counter() - start:5.1f}s",
                      file=sys.stderr)
    return rows


def tables(rows: list[dict]) -> str:
    """Markdown: one table per (dims, workload, rho), methods as columns, the best in bold, and the win counts."""
    out = []
    keys = sorted({(r["dims"], r["workload"], r["rho"]) for r in rows})
    wins: dict[tuple, dict[str, int]] = {}
    for dims, workload, rho in keys:
        sel = [r for r in rows if (r["dims"], r["workload"], r["rho"]) == (dims, workload, rho)]
        meths = list(dict.fromkeys(r["method"] for r in sel))
        out += [f"### {dims}-D, {workload}, rho = {rho:g}", "",
                "| data set | " + " | ".join(meths) + " | best (pure refs excluded) |",
                "|---" * (len(meths) + 2) + "|"]
        count = {m: 0 for m in meths}
        for ds in dict.fromkeys(r["dataset"] for r in sel):
            errs = {r["method"]: r["error"] for r in sel if r["dataset"] == ds}
            best = min((m for m in errs if "(pure)" not in m), key=lambda m: errs[m])
            count[best] += 1
            cells = [f"**{errs[m]:.3g}**" if m == best else f"{errs[m] / errs[best]:.2f}x" if m in errs else ""
                     for m in meths]
            out.append(f"| {ds} | " + " | ".join(cells) + f" | {best} |")
        wins[(dims, workload, rho)] = count
        out.append("")
    out += ["### Summary: ratio to the best per data set (geometric mean, max) and wins", "",
            "| setting | " + " | ".join(f"{m}" for m in _all_methods(rows)) + " |",
            "|---" * (len(_all_methods(rows)) + 1) + "|"]
    for dims, workload, rho in keys:
        sel = [r for r in rows if (r["dims"], r["workload"], r["rho"]) == (dims, workload, rho)]
        ratios: dict[str, list[float]] = {}
        for ds in dict.fromkeys(r["dataset"] for r in sel):
            errs = {r["method"]: r["error"] for r in sel if r["dataset"] == ds}
            best = min(v for m, v in errs.items() if "(pure)" not in m)
            for m, v in errs.items():
                ratios.setdefault(m, []).append(v / best)
        count = wins[(dims, workload, rho)]
        cells = [(f"{np.exp(np.mean(np.log(ratios[m]))):.2f}, {max(ratios[m]):.2f}" +
                  (f" ({count[m]} wins)" if count.get(m) else "")) if m in ratios else "" for m in _all_methods(rows)]
        out.append(f"| {dims}-D {workload} rho {rho:g} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def _all_methods(rows: list[dict]) -> list[str]:
    return list(dict.fromkeys(r["method"] for r in sorted(rows, key=lambda r: -r["dims"])))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--rhos", type=float, nargs="+", default=list(RHOS))
    ap.add_argument("--datasets", nargs="+")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "zcdp_methods.md")
    ap.add_argument("--tables-from", type=Path, help="re-render the tables from a run's .json (no run)")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    if args.tables_from:
        print(tables(json.loads(args.tables_from.read_text())))
        return
    rows = run(args.datasets, tuple(args.rhos), args.trials)
    args.out.with_suffix(".json").write_text(json.dumps(rows, indent=0))
    text = tables(rows)
    print(text)
    header = (f"# Methods under rho= on DPBench (benchmarks/bench_zcdp_methods.py)\n\n"
              f"Scaled L2 error x 1e6 (Hay et al. 2016), mean of {args.trials} trials; 2,000 random ranges / "
              f"rectangles (seed 0) and Prefix1D; rho {', '.join(f'{r:g}' for r in args.rhos)} "
              f"(= epsilon**2 / 2 of epsilon 0.1 and 1). Ratios are to the best in the row. "
              f"Run time {time.perf_counter() - start:.0f} s.\n\n")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(header + text)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
