"""Ordered attributes in table sets (issue 46): workload error against RP+ and HDMM, a census workload, plan time.

One command, plan-only (public inputs; the errors are the plans' exact variances of the integer noise):

    python -m benchmarks.bench_ordered

1. Prefix^d and AllRange^d over n = 64 (one table of d ordered attributes), rho = 1/2 (the RP+ repository's
   normalisation ``sum_A p_A / sigma_A**2 = 1``): RMSE over the workload's queries, next to the numbers the
   RP+ repository publishes for d = 5 (cmla-psu/ResidualPlannerPlus,
   experiments/HDMM_baseline/journal/scalability_kron_comparison_{P,R}.csv: HDMM's OPT_X and OPT_M, RP+) and
   the best any single Kronecker strategy can do under L2 (the convex optimum of ``tr(G X^{-1})`` per
   attribute, ``diag X <= 1``, solved here in floats: a bound, not a mechanism with exact integer noise).
2. A census workload, ages 0..99 by single year crossed with sex, race and county, asked by cells, 5- and
   10-year brackets and all ranges: RMSE of each kind of query with ``ordered={"age": "ranges"}`` against
   today's categorical table set at the same rho.
3. Plan time of all 3-way tables of 10 attributes with 3 ordered ones.
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np

from pandas_dp.algorithms.marginals.alone import plan_no_worse_than_alone
from pandas_dp.algorithms.marginals.ordered import CELL_BOUND, AttributeQueries, AxisSplit, box_variances, choose_strategy
from pandas_dp.algorithms.marginals.plan import plan_residuals
from pandas_dp.algorithms.marginals.workload import make_workload
from pandas_dp.privacy.loss import zcdp

#: Published by the RP+ repository (d = 5, n = 64; RMSE per workload query).
PUBLISHED = {"prefix": {"HDMM OPT_X": 770.097286, "HDMM OPT_M": 818.146218, "RP+": 1172.219355},
             "ranges": {"HDMM OPT_X": 1362.318585, "HDMM OPT_M": 679.014943, "RP+": 677.293411}}


def _kron_bound(gram: np.ndarray, steps: int = 3000) -> float:
    """``min tr(G X^{-1})`` over ``diag X <= 1`` (the L2 factorisation optimum; dual fixed point, floats)."""
    n = len(gram)
    lam = np.ones(n)
    for _ in range(steps):
        root = np.sqrt(lam)
        w, v = np.linalg.eigh(root[:, None] * gram * root[None, :])
        half = (v * np.sqrt(np.clip(w, 0, None))) @ v.T
        x = half / root[:, None] / root[None, :]
        lam = lam * np.diag(x)
        lam = lam / lam.mean()
    x = x / np.diag(x).max()
    return float(np.trace(gram @ np.linalg.inv(x)))


def _mean_query_variance(plan, q: AttributeQueries) -> float:
    """The mean variance of the Kronecker workload ``q^d`` on the one table of every attribute:
    ``sum_B V_B prod_{i in B} tr(G C_i) / |q| prod_{i not in B} pi_i^T G pi_i / |q|``."""
    work = plan.workload
    r = plan.residual_variances()
    gram = q.gram()
    table = work.tables[0]
    factors = [plan.strategies[i].factors(gram) for i in table]
    return math.fsum(float(r[work.index[b]]) * math.prod(factors[k][0 if i in b else 1] / q.count
                                                          for k, i in enumerate(table))
                     for b in work.closure)


def kronecker_workloads() -> None:
    print("1. One table of d ordered attributes, n = 64, rho = 1/2: RMSE per workload query")
    print(f"{'workload':>12} {'d':>2} {'this plan':>11} {'L2 Kronecker bound':>19} {'published (d=5)':>40}")
    n = 64
    for kind in ("prefix", "ranges"):
        q = AttributeQueries(kind, n)
        bound = _kron_bound(q.gram())
        for d in range(2, 6):
            work = make_workload([n] * d, [tuple(range(d))], [q] * d)
            start = time.perf_counter()
            plan = plan_residuals(work, loss=zcdp(0.5))
            took = time.perf_counter() - start
            rmse = math.sqrt(_mean_query_variance(plan, q))
            published = ", ".join(f"{k} {v:.1f}" for k, v in PUBLISHED[kind].items()) if d == 5 else ""
            print(f"{kind:>12} {d:>2} {rmse:>11.2f} {math.sqrt((bound / q.count) ** d):>19.2f} {published:>40}"
                  f"   (plan {took:.1f} s; tree {plan.strategies[0].blocks}, weights {plan.strategies[0].weights})")


def _rmse(plan, table, queries) -> float:
    """RMSE over the Kronecker products of the per-attribute query lists (``queries[k]``: rows over axis k)."""
    work = plan.workload
    r = plan.residual_variances()
    sub = tuple(float(r[work.index[tuple(sorted(table[b] for b in range(len(table)) if m >> b & 1))]])
                for m in range(1 << len(table)))
    splits = tuple(AxisSplit.of(work.sizes[i], plan.strategies[i] if plan.strategies else None) for i in table)
    # Kronecker queries: enumerate the cross product by broadcasting one axis's list at a time
    grids = np.meshgrid(*[np.arange(len(q)) for q in queries], indexing="ij")
    rows = [q[g.ravel()] for q, g in zip(queries, grids)]
    return math.sqrt(float(np.mean(box_variances(sub, splits, rows))))


def census(tables: list[tuple[int, ...]]) -> None:
    print(f"\n2. Census workload: age 0..99 (single years, 0) x sex (2, 1) x race (6, 2) x county (30, 3), rho = 1, "
          f"tables {tables}")
    sizes = [100, 2, 6, 30]
    ages = AttributeQueries("ranges", 100, cell_bound=CELL_BOUND)
    ordered = plan_no_worse_than_alone(make_workload(sizes, tables, [ages, None, None, None]), loss=zcdp(1))
    flat = plan_no_worse_than_alone(make_workload(sizes, tables), loss=zcdp(1))
    eye = np.eye(100)
    brackets = {b: np.array([[1.0 if k // b == j else 0.0 for k in range(100)] for j in range(100 // b)])
                for b in (5, 10)}
    every = AttributeQueries("ranges", 100).matrix()
    kinds = {"single years": eye, "5-year brackets": brackets[5], "10-year brackets": brackets[10],
             "all ranges": every}
    print(f"{'table':>16} {'age queries':>17} {'categorical':>12} {'ordered':>9} {'ratio':>6}")
    for table in [(0,), (0, 1), (0, 3)]:
        for name, q in kinds.items():
            others = [np.eye(sizes[i]) for i in table[1:]]
            a, b = _rmse(flat, table, [q, *others]), _rmse(ordered, table, [q, *others])
            print(f"{str(table):>16} {name:>17} {a:>12.3f} {b:>9.3f} {a / b:>6.2f}x")
    print(f"   age tree: blocks {ordered.strategies[0].blocks}, weights {ordered.strategies[0].weights}")


def plan_time() -> None:
    print("\n3. Plan time: all 3-way tables of 10 attributes (3 ordered: 100, 64, 50 values; 7 of 2..8 values)")
    sizes = [100, 64, 50, 2, 3, 4, 5, 6, 7, 8]
    choose_strategy.cache_clear()   # the trees' choice is part of the plan's time
    asked = [AttributeQueries("ranges", 100, cell_bound=CELL_BOUND), AttributeQueries("prefix", 64, cell_bound=CELL_BOUND),
             AttributeQueries("ranges", 50, cell_bound=CELL_BOUND)] + [None] * 7
    work = make_workload(sizes, itertools.combinations(range(10), 3), asked)
    start = time.perf_counter()
    plan = plan_no_worse_than_alone(work, loss=zcdp(1))
    took = time.perf_counter() - start
    cells = sum(work.cells(a) for a in work.closure)
    print(f"   {len(work.tables)} tables, {len(work.closure)} closure marginals ({cells:,} cells): plan {took:.1f} s, "
          f"{len(plan.measured)} measured")


if __name__ == "__main__":
    kronecker_workloads()
    census([(0, 1, 2), (0, 3)])
    census([(0, 1, 2), (0, 3), (1, 2, 3)])
    plan_time()
