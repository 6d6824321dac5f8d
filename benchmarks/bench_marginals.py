"""Table sets (ResidualPlanner core): optimality of the plan, counting speed, scale.

Three parts, one command (each part takes well under two minutes on the 2-core reference machine):

1. **plan** (``--no-plan`` skips it): all 2-way and all 3-way marginals of 8 attributes, for
   three size profiles, at rho = 1 (zCDP; the sum of every cell's variance):

   * ``plan/opt``: a certified upper bound on the plan's total variance over the optimum of its
     program (convex: the Frank-Wolfe duality gap at the plan bounds the distance to the optimum;
     the program itself is checked against dense GLS and brute-force optimisation on tiny domains
     in tests/algorithms/test_marginals_plan.py);
   * ``plan/paper``: over ResidualPlanner's optimum for *continuous* Gaussian noise (the paper's
     cost, which integer noise cannot claim: the price of a provable integer mechanism);
   * ``discard/plan``: the paper's closed form at the provable cost, which keeps only each noisy
     marginal's own residual, over the plan;
   * ``separate/plan``: one table per workload marginal with an even split of rho and no
     consistency, over the plan;
   * a second table: the other programs (zCDP ``"max"``, pure-DP ``"sum"`` and ``"max"``), their
     loss, support and time (the planner uses exact operations only, so these are the same
     on every machine; the module docstring of ``algorithms/marginals/plan.py`` gives their
     agreement with the former float solvers).

2. **count** (``--no-count``): all 28 two-way marginals of 8 integer-coded attributes (sizes 2..10)
   at ``--rows`` rows (default 10^7): :func:`closure_marginals` (every closure marginal, out-of-domain
   check included) against ``np.bincount`` over precomputed combined codes of each of the 28 tables
   and pandas ``groupby([a, b]).size()`` of each, in the same run (best of ``--repeat``).

3. **scale** (``--no-scale``): all 3-way marginals of 30 attributes (sizes 2..10) at ``--rows-scale``
   rows (default 10^6): time of the plan, of the counting kernel, of the measurement (secure discrete
   Gaussian noise) and of the reconstruction (every residual component, then every one of the 4,060
   tables), and the peak traced memory of plan + measure + reconstruct, next to the cells of the
   closure's marginals.

4. **release** (``--no-release``): the release layer, ``df.dp.marginals`` against one ``df.dp.histogram``
   per table with an even split of the same loss, at rho = 1 and at epsilon = 1, on the real Adult
   census extract of /work/shared/data/dpbench/ADULT-2D.npy (capital gain x capital loss of 32,561
   persons, 16 x 16 bins; the two-way table and both one-way tables; skipped when the folder is
   absent) and on the bundled synthetic persons (all 6 two-way tables of age, sex, state, county).
   Printed per table: the RMSE of one cell, separate / marginals (exact: both releases report exact
   variances), and whether the separate tables agree (they never do; the marginals always do).

Run: ``python -m benchmarks.bench_marginals [--rows 10000000] [--rows-scale 1000000]``
"""

from __future__ import annotations

import argparse
import itertools
import math
import time

import numpy as np
import pandas as pd

from benchmarks._timing import best_of, traced_peak
from pandas_dp.algorithms.marginals.counting import closure_marginals, combined_codes
from pandas_dp.algorithms.marginals.measure import measure_marginals
from pandas_dp.algorithms.marginals.plan import _loss_floats, coverage, gaussian_optimum, plan_residuals
from pandas_dp.algorithms.marginals.reconstruct import reconstruct
from pandas_dp.algorithms.marginals.workload import make_workload
from pandas_dp.privacy.loss import pure, zcdp

PROFILES = {"all 2": [2] * 8, "all 10": [10] * 8, "2..10": [2, 3, 4, 5, 6, 7, 8, 10]}


def optimality_bound(plan) -> float:  # type: ignore[no-untyped-def]
    """Certified upper bound on the plan's loss over the program's optimum (Frank-Wolfe duality gap).

    The ``"sum"`` loss ``f(u) = sum_A' c_A' / tau_A'(u)`` is convex in the precisions ``u`` (linear
    in the shares under zCDP) on the simplex ``sum u = U``; for any ``u``, with ``g`` its gradient,
    ``f(u) - f* <= g . u - U min_A g_A``. So ``f(u) / f* <= f / (f - gap)``.
    """
    w = plan.workload
    t = coverage(w)
    c = _loss_floats(w, plan.weights)
    u = 1.0 / plan.planning_variances()
    tau = t @ u
    f = float((c / tau).sum())
    g = -(t.T @ (c / tau ** 2))
    gap = float(g @ u - u.sum() * g.min())
    return f / (f - gap)


def part_plan() -> None:
    print("## plan: total variance at rho = 1 (sum of every workload cell's variance)\n")
    print("| workload | sizes | closure | measured | plan/opt | plan/paper | discard/plan | separate/plan | plan s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for k in (2, 3):
        for name, sizes in PROFILES.items():
            w = make_workload(sizes, list(itertools.combinations(range(8), k)))
            start = time.perf_counter()
            plan = plan_residuals(w, loss=zcdp(1))
            took = time.perf_counter() - start
            ours = plan.total_variance(planning=True)
            separate = sum(w.cells(t) for t in w.tables) * len(w.tables) / 2.0
            print(f"| all {k}-way of 8 | {name} | {len(w.closure)} | {len(plan.measured)} "
                  f"| {optimality_bound(plan):.9f} | {ours / gaussian_optimum(w, rho=1):.4f} "
                  f"| {gaussian_optimum(w, rho=1, paper_cost=False) / ours:.4f} | {separate / ours:.3f} "
                  f"| {took:.2f} |")
    print()
    print("## plan: every program (exact operations only: the same shares on every machine)\n")
    print("| workload | sizes | program | measured | loss at rho = 1 / epsilon = 1 | plan s |")
    print("|---|---|---|---:|---:|---:|")
    for k in (2, 3):
        for name, sizes in PROFILES.items():
            w = make_workload(sizes, list(itertools.combinations(range(8), k)))
            for label, loss, objective in (("zCDP max", zcdp(1), "max"), ("pure sum", pure(1), "sum"),
                                           ("pure max", pure(1), "max")):
                start = time.perf_counter()
                plan = plan_residuals(w, loss=loss, objective=objective)
                took = time.perf_counter() - start
                value = plan.max_variance(planning=True) if objective == "max" else plan.total_variance(planning=True)
                print(f"| all {k}-way of 8 | {name} | {label} | {len(plan.measured)} | {value:.6g} | {took:.2f} |")
    print()


def part_count(rows: int, repeat: int) -> None:
    sizes = PROFILES["2..10"]
    rng = np.random.default_rng(0)
    codes = [rng.integers(0, n, rows).astype(np.int8) for n in sizes]
    w = make_workload(sizes, list(itertools.combinations(range(8), 2)))
    combined = [combined_codes(codes, t, sizes) for t in w.tables]
    frame = pd.DataFrame({f"a{i}": c for i, c in enumerate(codes)})

    def kernel() -> None:
        closure_marginals(codes, w)

    def floor() -> None:
        for t, c in zip(w.tables, combined):
            np.bincount(c, minlength=w.cells(t))

    def pandas_groupby() -> None:
        for a, b in w.tables:
            frame.groupby([f"a{a}", f"a{b}"]).size()

    t_kernel = best_of(kernel, repeat)
    t_floor = best_of(floor, repeat)
    t_pandas = best_of(pandas_groupby, 1)  # tens of seconds at 10^7 rows: one run
    print(f"## count: all 28 two-way marginals of 8 attributes, {rows:,} rows\n")
    print("| closure_marginals s | bincount on precomputed codes s | pandas groupby().size() s "
          "| kernel / bincount | kernel / pandas |")
    print("|---:|---:|---:|---:|---:|")
    print(f"| {t_kernel:.3f} | {t_floor:.3f} | {t_pandas:.3f} | {t_kernel / t_floor:.2f} | {t_kernel / t_pandas:.3f} |")
    print()


def part_scale(rows: int) -> None:
    sizes = [2 + (i * 7) % 9 for i in range(30)]
    w = make_workload(sizes, list(itertools.combinations(range(30), 3)))
    rng = np.random.default_rng(1)
    codes = [rng.integers(0, n, rows).astype(np.int8) for n in sizes]
    times: dict[str, float] = {}

    def timed(name: str, fn):  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        out = fn()
        times[name] = time.perf_counter() - start
        return out

    plan = timed("plan", lambda: plan_residuals(w, loss=zcdp(1)))
    counts = timed("count", lambda: closure_marginals(codes, w, only=plan.measured))
    measurement = timed("measure", lambda: measure_marginals(counts, plan))
    estimates = timed("reconstruct", lambda: reconstruct(measurement))
    timed("tables", lambda: [estimates.marginal(t) for t in w.tables])

    def pipeline() -> None:
        p = plan_residuals(w, loss=zcdp(1))
        reconstruct(measure_marginals(counts, p))

    peak = traced_peak(pipeline)
    closure_cells = sum(w.cells(a) for a in w.closure)
    print(f"## scale: all 3-way marginals of 30 attributes (sizes 2..10), {rows:,} rows\n")
    print(f"closure {len(w.closure)} marginals ({closure_cells:,} cells), {len(plan.measured)} measured; "
          f"full domain {float(math.prod(sizes)):.2e} cells\n")
    print("| plan s | count s | measure s | reconstruct s | 4,060 tables s | plan+measure+reconstruct s "
          "| peak MiB (plan+measure+reconstruct) |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    core = times["plan"] + times["measure"] + times["reconstruct"] + times["tables"]
    print(f"| {times['plan']:.2f} | {times['count']:.1f} | {times['measure']:.2f} | {times['reconstruct']:.2f} "
          f"| {times['tables']:.2f} | {core:.1f} | {peak:.0f} |")
    print()


def _release_datasets() -> list[tuple[str, pd.DataFrame, list[tuple[str, ...]], dict]]:
    from pathlib import Path

    import pandas_dp  # noqa: F401 - registers the accessor
    from pandas_dp.data import STATES, load_persons

    out = []
    here = Path(__file__).resolve()
    found = [p / "shared" / "data" / "dpbench" / "ADULT-2D.npy" for p in (here.parents[2], here.parents[3])]
    adult = next((p for p in found if p.is_file()), None)
    if adult is not None:
        counts = np.load(adult).astype(np.int64)
        cells = np.repeat(np.arange(counts.size), counts.ravel())
        frame = pd.DataFrame({"gain": cells // counts.shape[1] // 16, "loss": cells % counts.shape[1] // 16})
        out.append(("ADULT-2D (real)", frame, [("gain", "loss"), ("gain",), ("loss",)],
                    dict(categories={"gain": list(range(16)), "loss": list(range(16))})))
    persons = load_persons()
    counties = sorted(persons["county"].unique())  # the synthetic data's public county list
    out.append(("persons (synthetic)", persons, list(itertools.combinations(["age", "sex", "state", "county"], 2)),
                dict(bins={"age": [0, 18, 30, 45, 65, 95]},
                     categories={"sex": ["F", "M"], "state": STATES, "county": counties})))
    return out


def part_release() -> None:
    import pandas_dp as pdp

    print("## release: one histogram per table (even split) vs marginals, RMSE of one cell, separate / marginals\n")
    print("| data | loss | table | cells | separate RMSE | marginals RMSE | ratio | separate totals agree |")
    print("|---|---|---|---:|---:|---:|---:|---|")
    for name, frame, workload, domains in _release_datasets():
        for measure in ("rho", "epsilon"):
            loss = {measure: 1.0}
            with pdp.budget(**loss):
                tables = frame.dp.marginals(workload, **domains, **loss, rng=np.random.default_rng(0))
            part = {measure: 1.0 / len(workload)}
            with pdp.budget(**loss):
                separate = [frame.dp.histogram(list(t), **{k: {c: v[c] for c in t if c in v} for k, v in
                                                            domains.items()}, **part, rng=np.random.default_rng(1))
                            for t in workload]
            totals = [float(h.counts.sum()) for h in separate]
            agree = "yes" if np.ptp(totals) == 0 else f"no (spread {np.ptp(totals):.1f})"
            sums = [0.0, 0.0, 0]
            for t, h in zip(workload, separate):
                mine = float(np.sqrt(tables.table(t).variance.iloc[0]))
                theirs = float(np.sqrt(h.variance.iloc[0]))
                sums = [sums[0] + theirs ** 2 * h.domain.size, sums[1] + mine ** 2 * h.domain.size,
                        sums[2] + h.domain.size]
                print(f"| {name} | {measure} = 1 | {' x '.join(t)} | {h.domain.size} | {theirs:.2f} | {mine:.2f} | "
                      f"{theirs / mine:.2f} | {agree} |")
            # the loss the plan minimises (loss="sum"): every workload cell's variance, summed
            theirs, mine = np.sqrt(sums[0] / sums[2]), np.sqrt(sums[1] / sums[2])
            print(f"| {name} | {measure} = 1 | **every cell** | {sums[2]} | {theirs:.2f} | {mine:.2f} | "
                  f"**{theirs / mine:.2f}** | |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=10**7)
    parser.add_argument("--rows-scale", type=int, default=10**6)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-plan", action="store_true")
    parser.add_argument("--no-count", action="store_true")
    parser.add_argument("--no-scale", action="store_true")
    parser.add_argument("--no-release", action="store_true")
    args = parser.parse_args()
    if not args.no_plan:
        part_plan()
    if not args.no_count:
        part_count(args.rows, args.repeat)
    if not args.no_scale:
        part_scale(args.rows_scale)
    if not args.no_release:
        part_release()


if __name__ == "__main__":
    main()
