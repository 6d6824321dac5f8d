"""The marginals plan is made of exact operations only, so a seed gives the same plan on every CPU.

The planner's solvers (algorithms/marginals/plan.py) use elementwise IEEE-754 operations,
``np.sqrt``, ``np.bincount`` sums and ``math.fsum``, whose results are fixed bit for bit; no
BLAS, LAPACK, libm transcendental or scipy solver decides a share. These tests check that (the
guard), pin the exact shares of small plans (golden: deterministic by construction, so
byte-identity is legitimate), and check the support where the optimum puts shares at 0.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.optimize
from scipy.optimize import minimize

from pandas_dp.algorithms.marginals import plan as module
from pandas_dp.algorithms.marginals.plan import plan_residuals
from pandas_dp.algorithms.marginals.workload import make_workload
from pandas_dp.privacy.loss import pure, zcdp

PROGRAMS = [("sum", zcdp(1)), ("max", zcdp(1)), ("sum", pure(1)), ("max", pure(1))]


def _raise(*args, **kwargs):  # type: ignore[no-untyped-def]
    raise AssertionError("the planner called a function whose last bits depend on the CPU")


@pytest.mark.parametrize("objective,loss", PROGRAMS)
def test_planner_calls_no_cpu_dependent_routine(monkeypatch, objective, loss) -> None:
    for name in ("dot", "matmul", "exp", "log", "sum", "power", "cbrt", "einsum", "inner", "vdot"):
        monkeypatch.setattr(np, name, _raise)
    monkeypatch.setattr(np.linalg, "solve", _raise)
    monkeypatch.setattr(scipy.optimize, "minimize", _raise)
    w = make_workload([3, 4, 2, 5], [(0, 1), (1, 2, 3), (0, 3)])
    plan = plan_residuals(w, loss=loss, objective=objective, weights=[1, 2, 3])
    assert set(w.maximal) <= set(plan.measured)


# sha256 of " ".join(str(share) for share in plan.shares): exact rationals (multiples of 2**-40).
GOLDEN = {
    ("chain", "sum", "ZCDP"): "9181b0c095c2c797",
    ("chain", "max", "ZCDP"): "9181b0c095c2c797",
    ("chain", "sum", "PureDP"): "054bbfa232b317ae",
    ("chain", "max", "PureDP"): "054bbfa232b317ae",
    ("weighted", "sum", "ZCDP"): "0784a93b041336cd",
    ("weighted", "max", "ZCDP"): "ae15efb7935603be",
    ("weighted", "sum", "PureDP"): "50902316072a7fb0",
    ("weighted", "max", "PureDP"): "004e6c4539e80aec",
    ("degenerate", "sum", "ZCDP"): "452ee174627e1f74",
    ("degenerate", "max", "ZCDP"): "a34776629f3f5396",
    ("degenerate", "sum", "PureDP"): "2e134e6533fb9f3b",
    ("degenerate", "max", "PureDP"): "67edc0b67a5103dc",
}
WORKLOADS = {
    "chain": ([2, 3, 2], [(0, 1), (1, 2)], None),
    "weighted": ([3, 4, 2, 5], [(0, 1), (1, 2, 3), (0, 3)], [1, 2, 3]),
    "degenerate": ([3, 2, 2], [(0, 1, 2), (0,)], [1, 30]),
}


@pytest.mark.parametrize("name", sorted(WORKLOADS))
@pytest.mark.parametrize("objective,loss", PROGRAMS)
def test_golden_plans(name, objective, loss) -> None:
    sizes, tables, weights = WORKLOADS[name]
    plan = plan_residuals(make_workload(sizes, tables), loss=loss, objective=objective, weights=weights)
    text = " ".join(str(s) for s in plan.shares)
    assert hashlib.sha256(text.encode()).hexdigest()[:16] == GOLDEN[(name, objective, type(loss).__name__)], text


def test_symmetric_chain_splits_evenly() -> None:
    """Two 2-way tables of a symmetric chain: the optimum measures both tables with equal shares."""
    plan = plan_residuals(make_workload([2, 3, 2], [(0, 1), (1, 2)]), loss=zcdp(1))
    assert plan.measured == ((0, 1), (1, 2))
    a, b = plan.shares[-2:]
    assert abs(a - b) <= Fraction(2, 2**32) and a + b <= 1


def test_degenerate_zero_shares_reach_exactly_zero() -> None:
    """Weighted 3-way + 1-way: the optimum measures the two tables only, though the optimum is degenerate.

    (The multiplicative algorithm alone leaves the other six marginals shares shrinking like
    1 / steps; the drop stage sets them to 0.) The support and the loss equal a brute-force
    optimisation of the same program with L-BFGS-B, whose bounds give exact zeros.
    """
    w = make_workload([3, 2, 2], [(0, 1, 2), (0,)])
    plan = plan_residuals(w, loss=zcdp(Fraction(1, 2)), weights=[1, 30])
    assert plan.measured == ((0,), (0, 1, 2))
    t = module.coverage(w).toarray()
    c = module._loss_floats(w, [Fraction(1), Fraction(30)])
    required = np.array([a in w.maximal for a in w.closure])

    def scale_free(u):  # type: ignore[no-untyped-def]
        return float((c / (t @ u)).sum() * u.sum())

    res = minimize(scale_free, np.ones(len(c)), method="L-BFGS-B",
                   bounds=[(1e-9 if r else 0.0, None) for r in required],
                   options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 5000})
    u = res.x / res.x.sum()
    assert tuple(a for a, x in zip(w.closure, u) if x > 1e-6) == plan.measured
    assert plan.total_variance(planning=True) == pytest.approx(res.fun, rel=1e-9)


def test_frank_wolfe_certificate_on_an_eight_attribute_workload() -> None:
    """All 2-way tables of 8 attributes (sizes 2..10): the solver stops with the gap certified."""
    w = make_workload([2, 3, 4, 5, 6, 7, 8, 10], list(itertools.combinations(range(8), 2)))
    c = module._loss_floats(w, [Fraction(1)] * len(w.tables))
    required = np.array([a in w.maximal for a in w.closure])
    start = np.sqrt(c) / math.fsum(np.sqrt(c).tolist())
    u, f, gap = module._zcdp_sum(module._coverage_entries(w), c, start, required)
    assert 0.0 <= gap <= module._SUM_TOL * f
    assert math.fsum(u.tolist()) == pytest.approx(1.0, abs=1e-15)
    assert np.count_nonzero(u >= 2.0 ** -32) == len(w.tables)


def test_cube_root_of_the_pure_closed_form() -> None:
    """Newton's cube root from a power of two above it: within one rounding of the true root."""
    c = np.array([0.0, 5e-324, 1e-300, 1e-5, 0.5, 1.0, 8.0, 27.0, 3.0, 1e10, 1e300, 1.7e308])
    x = module._closed_form_floats(c, 2)
    assert x[0] == 0.0
    for ci, xi in zip(c[1:], x[1:]):
        exact = Fraction(ci)
        lo, hi = Fraction(np.nextafter(xi, 0.0)), Fraction(np.nextafter(xi, np.inf))
        assert lo ** 3 <= exact <= hi ** 3


def test_pure_plan_searches_supports() -> None:
    """Pure DP, a 2x3 table (weight 5) and its 3-cell margin (weight 30): measure the table alone.

    Splitting epsilon between the table and the margin is a stationary point of the (not convex)
    program that the multiplicative steps reach from the closed form; the search over supports
    drops the margin. Exact: 6 cells of variance 2 / epsilon**2 = 2, the margin's 3 cells sum
    2 of them: 5 * 6 * 2 + 30 * 3 * 4 = 420, below every split on a fine grid.
    """
    w = make_workload([2, 3], [(0, 1), (1,)])
    plan = plan_residuals(w, loss=pure(1), weights=[5, 30])
    assert plan.measured == ((0, 1),)
    assert plan.total_variance(planning=True) == pytest.approx(420.0, rel=1e-12)
    t = module._coverage_entries(w)
    c = module._loss_floats(w, [Fraction(5), Fraction(30)])
    margin = w.closure.index((1,))
    for split in np.linspace(0.001, 0.999, 999):
        s = np.zeros(len(w.closure))
        s[margin], s[-1] = split, 1.0 - split
        assert 2.0 * module._evaluate(t, c, s * s)[1] > 420.0
