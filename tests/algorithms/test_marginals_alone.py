"""The default marginals plan: no workload table worse than measured alone with an even split (issue 44, item 2).

"Alone": table ``W`` of a ``T``-table workload measured by itself with ``1 / T`` of the loss (by geography,
of every level's part), the same noise and sensitivity. The exact variances of every table at every region
of every level (the tree GLS across the geography, with and without public totals) are computed by
:func:`~pandas_dp.algorithms.marginals.geography.geography_gls` on zero measurements (its variances do not
depend on the values), the alone ones the same way on the one-table workload.
"""

from __future__ import annotations

import hashlib
from fractions import Fraction

import numpy as np
import pytest
import scipy.optimize
from scipy.optimize import minimize

from pandas_dp.algorithms.marginals import alone as module
from pandas_dp.algorithms.marginals.alone import alone_ratios, alone_rows, plan_no_worse_than_alone
from pandas_dp.algorithms.marginals.geography import geography_gls
from pandas_dp.algorithms.marginals.plan import _coverage_entries, _loss_floats, plan_residuals
from pandas_dp.algorithms.marginals.workload import make_workload
from pandas_dp.algorithms.geography.layout import region_layout
from pandas_dp.privacy.loss import UNIT, pure, zcdp
from pandas_dp.releases.geography_arguments import held_totals_sensitivity

# The issue's shape: age x sex, race x college, age x race, sex x college (12, 10, 30 and 4 cells).
ISSUE = ([6, 2, 5, 2], [(0, 1), (2, 3), (0, 2), (1, 3)])
# Mixed table sizes, 4 to 100 cells.
MIXED = [([2, 2, 10, 10], [(0, 1), (2, 3), (0, 2), (1, 3)]),
         ([2, 2, 10, 10, 5], [(0, 1), (2, 3), (0, 2), (1, 3), (3, 4)]),
         ([4, 2, 3, 10, 5], [(0, 1), (2, 3), (1, 2), (3, 4), (0, 2, 4)])]
LEVEL_SHARES = (Fraction(1, 4), Fraction(1, 4), Fraction(1, 2))   # level weights 1:1:2


def _layout():
    """national > 4 regions > 20 states, unequal fan-outs."""
    states = np.repeat(np.arange(4), [2, 4, 6, 8])
    return region_layout([None, np.zeros(4, dtype=np.int64), states])


def _totals(levels):
    pops = np.arange(20, dtype=np.float64) * 37.0 + 500.0
    states = np.repeat(np.arange(4), [2, 4, 6, 8])
    by_level = [np.array([pops.sum()]), np.bincount(states, weights=pops, minlength=4), pops]
    return {lvl: by_level[lvl] for lvl in levels}


def _variances(work, plans, layout, totals):
    zeros = [{a: np.zeros((n, *work.shape(a))) for a in p.measured} for p, n in zip(plans, layout.n_regions)]
    est = geography_gls(zeros, plans, layout, public_totals=totals)
    return [[est.variance(lvl, t) for t in work.tables] for lvl in range(layout.n_levels)]


def _geography(sizes, tables, loss, totals, planner):
    """Every table's largest ratio to alone over the regions of every level, and the summed variance."""
    work = make_workload(sizes, tables)
    layout = _layout()
    sens = held_totals_sensitivity(UNIT) if totals else UNIT
    parts = [loss.part(s) for s in LEVEL_SHARES]
    plans = [planner(work, p, sens) for p in parts]
    var = _variances(work, plans, layout, totals)
    ratios = np.zeros((layout.n_levels, len(tables)))
    for k, t in enumerate(work.tables):
        one = make_workload([sizes[i] for i in t], [tuple(range(len(t)))])
        alone = _variances(one, [plan_residuals(one, loss=p.part(Fraction(1, len(tables))), sensitivity=sens)
                                 for p in parts], layout, totals)
        for lvl in range(layout.n_levels):
            ratios[lvl, k] = float(np.max(var[lvl][k] / alone[lvl][0]))
    total = sum(work.cells(t) * float(np.sum(var[lvl][k])) for lvl in range(layout.n_levels)
                for k, t in enumerate(work.tables))
    return ratios.max(axis=0), total


def _today(work, part, sens):
    return plan_residuals(work, loss=part, sensitivity=sens)


def _default(totals):
    return lambda work, part, sens: plan_no_worse_than_alone(work, loss=part, sensitivity=sens,
                                                             public_totals=bool(totals))


def _planned_ratios(plan, public_totals=False, loss=None):
    """The rows' ratios at the plan's shares; under pure DP against the alone variance less 1/6."""
    e = plan.loss.variance_exponent
    offset = 1.0 / (6.0 * (loss or plan.loss).planning_variance(1.0, plan.sensitivity)) if e == 2 else 0.0
    t = _coverage_entries(plan.workload)
    m = alone_rows(plan.workload, e, public_totals=public_totals, offset=offset)
    return module._ratios(t, m, np.array([float(s) for s in plan.shares]), plan.loss.variance_exponent)


# --------------------------------------------------------------------------------------- the issue's shape
def test_the_issue_shape_flat_small_table_no_worse_than_alone():
    work = make_workload(*ISSUE)
    before = alone_ratios(plan_residuals(work, loss=zcdp(0.5)))
    after = alone_ratios(plan_no_worse_than_alone(work, loss=zcdp(0.5)))
    assert before[3] > 1.29                       # the 4-cell sex x college table, today
    assert np.all(after <= 1.0 + 1e-9), after


@pytest.mark.parametrize("levels", [(), (0,), (1,), (0, 1, 2)], ids=["no totals", "national", "regions", "all"])
def test_the_issue_shape_by_geography_every_region_no_worse_than_alone(levels):
    totals = _totals(levels)
    before, t0 = _geography(*ISSUE, zcdp(0.5), totals, _today)
    after, t1 = _geography(*ISSUE, zcdp(0.5), totals, _default(totals))
    assert before[3] > (1.48 if totals else 1.29)
    assert np.all(after <= 1.0 + 1e-9), after
    assert t1 <= 1.05 * t0                        # measured: 1.016 without totals, 1.033 to 1.040 with them


# ------------------------------------------------------------------------------------- mixed table sizes
@pytest.mark.parametrize("case", range(len(MIXED)))
def test_mixed_table_sizes_flat(case):
    sizes, tables = MIXED[case]
    work = make_workload(sizes, tables)
    today = plan_residuals(work, loss=zcdp(1))
    plan = plan_no_worse_than_alone(work, loss=zcdp(1))
    assert alone_ratios(today).max() > 1.0        # every case needs the bounds
    assert np.all(alone_ratios(plan) <= 1.0 + 1e-9) and np.all(_planned_ratios(plan) <= 1.0)
    factor = plan.total_variance() / today.total_variance()
    assert factor <= 1.15, factor                 # measured: 1.10, 1.08, 1.06
    assert plan.loss == today.loss or plan.loss <= zcdp(1)


@pytest.mark.parametrize("case", range(len(MIXED)))
@pytest.mark.parametrize("levels", [(), (2,)], ids=["no totals", "state totals"])
def test_mixed_table_sizes_by_geography(case, levels):
    totals = _totals(levels)
    sizes, tables = MIXED[case]
    _, t0 = _geography(sizes, tables, zcdp(0.5), totals, _today)
    after, t1 = _geography(sizes, tables, zcdp(0.5), totals, _default(totals))
    assert np.all(after <= 1.0 + 1e-9), after
    # measured without / with state totals: 1.10 / 1.15, 1.08 / 1.11, 1.06 / 1.09. With the totals every
    # level's total is exact and the bounds on the rest are tight: 1.152 is the program's optimum there.
    assert t1 <= (1.16 if totals else 1.15) * t0, t1 / t0


def test_a_wide_size_range_costs_what_the_bounds_cost():
    # 4 to 119 cells, the 4-cell table at 2.3x alone today: the bounds cost 1.14x without totals, 1.18x
    # with them; that is the program's optimum (an SLSQP solve of the same program agrees to 1e-5, below).
    work = make_workload([17, 2, 7, 2], [(0, 1), (2, 3), (0, 2), (1, 3)])
    today = plan_residuals(work, loss=zcdp(1))
    for totals, bound in ((False, 1.14), (True, 1.18)):
        plan = plan_no_worse_than_alone(work, loss=zcdp(1), public_totals=totals)
        assert np.all(_planned_ratios(plan, totals) <= 1.0)
        assert plan.total_variance(planning=True) <= bound * today.total_variance(planning=True)


# --------------------------------------------------------------------------------- the program's optimum
def _dense(sparse):
    out = np.zeros(sparse.shape)
    np.add.at(out, (sparse.rows, sparse.cols), sparse.vals)
    return out


@pytest.mark.parametrize("totals", [False, True])
@pytest.mark.parametrize("case", [ISSUE, MIXED[0]], ids=["issue", "4 to 100 cells"])
def test_the_constrained_optimum_matches_a_general_solver(case, totals):
    work = make_workload(*case)
    t = _dense(_coverage_entries(work))
    m = _dense(alone_rows(work, 1, public_totals=totals))
    c = _loss_floats(work, [Fraction(1)] * len(work.tables))
    plan = plan_no_worse_than_alone(work, loss=zcdp(1), public_totals=totals)
    ours = np.array([float(s) for s in plan.shares])

    def loss(s):
        return float(c @ (1.0 / (t @ s)))

    ref = minimize(loss, np.maximum(ours, 1e-6), method="SLSQP", bounds=[(1e-9, 1.0)] * len(c),
                   constraints=[{"type": "eq", "fun": lambda s: s.sum() - 1.0},
                                {"type": "ineq", "fun": lambda s: 1.0 - m @ (1.0 / (t @ s))}],
                   options={"ftol": 1e-14, "maxiter": 500})
    assert np.all(m @ (1.0 / (t @ ref.x)) <= 1.0 + 1e-6)
    assert np.all(m @ (1.0 / (t @ ours)) <= 1.0)
    assert loss(ours) <= loss(ref.x) * (1.0 + 5e-5)


# --------------------------------------------------------------------------- today's plan where it suffices
@pytest.mark.parametrize("objective", ["sum", "max"])
@pytest.mark.parametrize("loss", [zcdp(1), pure(1)], ids=["zcdp", "pure"])
def test_today_plan_is_kept_exactly_when_it_meets_every_bound(objective, loss):
    for sizes, tables in (([2, 3, 2], [(0, 1), (1, 2)]), ([3, 4, 2, 5], [(0, 1), (1, 2, 3), (0, 3)])):
        work = make_workload(sizes, tables)
        today = plan_residuals(work, loss=loss, objective=objective)
        if np.all(_planned_ratios(today, loss=loss) <= 1.0):
            assert plan_no_worse_than_alone(work, loss=loss, objective=objective) == today


@pytest.mark.parametrize("totals", [False, True])
@pytest.mark.parametrize("objective", ["sum", "max"])
@pytest.mark.parametrize("loss", [zcdp(1), pure(1)], ids=["zcdp", "pure"])
def test_every_program_meets_the_bounds_and_spends_at_most_the_loss(objective, loss, totals):
    work = make_workload(*ISSUE)
    plan = plan_no_worse_than_alone(work, loss=loss, objective=objective, public_totals=totals)
    assert np.all(_planned_ratios(plan, totals, loss) <= 1.0)
    assert plan.loss <= loss and float(plan.loss.amount) >= float(loss.amount) * (1 - 1e-9)
    assert set(work.maximal) <= set(plan.measured)
    if not totals:
        # the exact noise too (pure DP: the bounds are the alone variance less 1/6, the discrete Laplace's
        # largest shortfall)
        assert np.all(alone_ratios(plan) <= 1.0 + 1e-9)


@pytest.mark.parametrize("epsilon", [0.05, 1, 4, 30])
def test_pure_dp_exact_variances_no_worse_than_alone_at_every_scale(epsilon):
    for sizes, tables in [ISSUE, *MIXED]:
        plan = plan_no_worse_than_alone(make_workload(sizes, tables), loss=pure(epsilon))
        assert np.all(alone_ratios(plan) <= 1.0 + 1e-9), (epsilon, sizes, alone_ratios(plan))


# ------------------------------------------------------------------------------- the same plan everywhere
def _raise(*args, **kwargs):  # type: ignore[no-untyped-def]
    raise AssertionError("the planner called a function whose last bits depend on the CPU")


@pytest.mark.parametrize("objective", ["sum", "max"])
@pytest.mark.parametrize("loss", [zcdp(1), pure(1)], ids=["zcdp", "pure"])
def test_the_bounded_planner_calls_no_cpu_dependent_routine(monkeypatch, objective, loss):
    work = make_workload(*ISSUE)
    for name in ("dot", "matmul", "exp", "log", "sum", "power", "cbrt", "einsum", "inner", "vdot"):
        monkeypatch.setattr(np, name, _raise)
    monkeypatch.setattr(np.linalg, "solve", _raise)
    monkeypatch.setattr(scipy.optimize, "minimize", _raise)
    plan = plan_no_worse_than_alone(work, loss=loss, objective=objective, public_totals=True)
    assert set(work.maximal) <= set(plan.measured)


# sha256 of the exact shares (multiples of 2**-40): deterministic by construction, so pinned.
GOLDEN = {("ZCDP", False): "13ef9835b1412749", ("ZCDP", True): "1de3a26af75ca5a6",
          ("PureDP", False): "d396a622454d4dab", ("PureDP", True): "0d3e73815e35bb2b"}


@pytest.mark.parametrize("loss", [zcdp(1), pure(1)], ids=["zcdp", "pure"])
@pytest.mark.parametrize("totals", [False, True])
def test_golden_bounded_plans(loss, totals):
    plan = plan_no_worse_than_alone(make_workload(*ISSUE), loss=loss, public_totals=totals)
    text = " ".join(str(s) for s in plan.shares)
    assert hashlib.sha256(text.encode()).hexdigest()[:16] == GOLDEN[(type(loss).__name__, totals)], text
