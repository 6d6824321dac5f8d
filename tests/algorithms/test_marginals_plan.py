"""ResidualPlanner's plan: closed forms and the solved program against brute-force optimisation.

References are computed independently of the module's coefficients: dense
marginal matrices over the full (tiny) domain, dense generalized least squares
for the variances, and scipy.optimize over the noise scales.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import minimize

from pandas_dp.algorithms.marginals.plan import gaussian_optimum, plan_residuals
from pandas_dp.algorithms.marginals.workload import make_workload
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import DiscreteGaussian, DiscreteLaplace, Sensitivity, ZCDP, pure, zcdp

SLOW = pytest.mark.slow
# The default run keeps one case per test (the brute force takes seconds); --runslow runs them all.
CASES = [
    ([2, 3, 2], [(0, 1), (1, 2)], None),
    pytest.param([3, 2], [(0, 1)], None, marks=SLOW),
    pytest.param([2, 2, 3], [(0,), (1,), (2,)], None, marks=SLOW),
    pytest.param([2, 3, 2], [(0, 1), (1, 2), (0, 2)], [1, 2, 0.5], marks=SLOW),
    pytest.param([3, 2, 2], [(0, 1, 2), (0,)], [1, 30], marks=SLOW),
]


def marginal_matrix(sizes, attrs) -> np.ndarray:
    """Dense M_A: data vector over the full domain (row-major) -> A-marginal."""
    out = np.ones((1, 1))
    for i, n in enumerate(sizes):
        out = np.kron(out, np.eye(n) if i in attrs else np.ones((1, n)))
    return out


def sub_matrix(n) -> np.ndarray:
    """Sub: rows e_0 - e_k, k = 1..n-1."""
    return np.hstack([np.ones((n - 1, 1)), -np.eye(n - 1)])


def residual_matrix(sizes, attrs) -> np.ndarray:
    """R_A = (kron Sub_i over A) M_A as one dense matrix over the full domain."""
    out = np.ones((1, 1))
    for i, n in enumerate(sizes):
        out = np.kron(out, sub_matrix(n) if i in attrs else np.ones((1, n)))
    return out


def kron_all(mats) -> np.ndarray:
    out = np.ones((1, 1))
    for m in mats:
        out = np.kron(out, m)
    return out


def dense_losses(sizes, tables, weights, blocks) -> tuple[float, float]:
    """("sum", "max") losses of the GLS estimate from measurements (B, covariance) by dense algebra."""
    info = sum(b.T @ np.linalg.inv(cov) @ b for b, cov in blocks)
    inv = np.linalg.pinv(info, rcond=1e-13, hermitian=True)
    total, worst = 0.0, 0.0
    for w, wt in zip(tables, weights):
        m = marginal_matrix(sizes, w)
        cells = np.diag(m @ inv @ m.T)
        total += wt * cells.sum()
        worst = max(worst, wt * cells.max())
    return total, worst


def paper_program(sizes, tables, weights, log_sigma2) -> tuple[float, float]:
    """Each residual measured alone with N(0, sigma_A^2 (Sub Sub^T)^kron): (sum loss, privacy cost 2 rho)."""
    closure = sorted({s for t in tables for k in range(len(t) + 1) for s in itertools.combinations(t, k)})
    blocks, cost = [], 0.0
    for a, ls in zip(closure, log_sigma2):
        b = residual_matrix(sizes, a)
        cov = math.exp(ls) * kron_all([sub_matrix(sizes[i]) @ sub_matrix(sizes[i]).T for i in a])
        blocks.append((b, cov))
        cost += float(np.max(np.diag(b.T @ np.linalg.inv(cov) @ b)))  # squared Mahalanobis column norm
    return dense_losses(sizes, tables, weights, blocks)[0], cost


def closure_of(tables):
    return sorted({s for t in tables for k in range(len(t) + 1) for s in itertools.combinations(t, k)},
                  key=lambda a: (len(a), a))


def marginal_program(sizes, tables, weights, precisions, exponent) -> tuple[float, float, float]:
    """Marginals measured with isotropic noise of variance 1 / precision: (sum loss, max loss, scale-free cost).

    zCDP (exponent 1): cost 2 rho = sum_A precision_A; pure (exponent 2): epsilon = sum_A sqrt(2 precision_A).
    """
    blocks = []
    for a, u in zip(closure_of(tables), precisions):
        if u > 0:
            m = marginal_matrix(sizes, a)
            blocks.append((m, np.eye(m.shape[0]) / u))
    total, worst = dense_losses(sizes, tables, weights, blocks)
    cost = float(np.sum(precisions)) if exponent == 1 else float(np.sum(np.sqrt(2 * np.asarray(precisions))))
    return total, worst, cost


@pytest.mark.parametrize("sizes,tables,weights", CASES[:4])
def test_paper_closed_form_is_the_brute_force_optimum(sizes, tables, weights) -> None:
    """(sum sqrt(p_A c_A))**2 / (2 rho) equals a numerical minimum of the dense program (Xiao et al. Thm 5.2)."""
    w = make_workload(sizes, tables)
    wts = [1.0] * len(tables) if weights is None else [float(x) for x in weights]
    n = len(w.closure)

    def scale_free(z):  # loss * cost is invariant to scaling every sigma^2: at 2 rho = 1 it is the loss
        loss, cost = paper_program(sizes, w.tables, wts, z)
        return loss * cost

    best = minimize(scale_free, np.zeros(n), method="BFGS", options={"gtol": 1e-10}).fun
    closed = gaussian_optimum(w, rho=0.5, weights=weights)
    assert closed == pytest.approx(best, rel=1e-6)


@pytest.mark.parametrize("sizes,tables,weights", CASES)
@pytest.mark.parametrize("loss,exponent", [(zcdp(Fraction(1, 2)), 1), (pure(1), 2)])
def test_sum_plan_is_the_brute_force_optimum(sizes, tables, weights, loss, exponent) -> None:
    w = make_workload(sizes, tables)
    wts = [1.0] * len(tables) if weights is None else [float(x) for x in weights]
    plan = plan_residuals(w, loss=loss, weights=weights)
    n = len(w.closure)
    maximal = [a in w.maximal for a in w.closure]

    def scale_free(u):
        total, _, cost = marginal_program(sizes, w.tables, wts, u, exponent)
        return total * cost ** exponent  # at cost 1 (rho = 1/2, epsilon = 1): the loss

    bounds = [(1e-7 if m else 0.0, None) for m in maximal]
    starts = [np.ones(n), np.array([1.0 if m else 1e-3 for m in maximal]), np.linspace(0.5, 2.0, n)]
    best = min(minimize(scale_free, x0, method="L-BFGS-B", bounds=bounds,
                        options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 5000}).fun for x0 in starts)
    assert plan.total_variance(planning=True) == pytest.approx(best, rel=1e-6)
    # the module's own variance formula agrees with dense GLS at the plan's variances
    u = 1.0 / plan.planning_variances()
    assert marginal_program(sizes, w.tables, wts, u, exponent)[0] == pytest.approx(
        plan.total_variance(planning=True), rel=1e-9)


@pytest.mark.parametrize("sizes,tables,weights", CASES)
def test_max_plan_is_the_brute_force_optimum(sizes, tables, weights) -> None:
    w = make_workload(sizes, tables)
    wts = [1.0] * len(tables) if weights is None else [float(x) for x in weights]
    plan = plan_residuals(w, loss=zcdp(Fraction(1, 2)), objective="max", weights=weights)
    n = len(w.closure)
    maximal = [a in w.maximal for a in w.closure]

    # Epigraph over precisions at 2 rho = sum u = 1 with the dense per-table cell variances.
    def tables_gap(x):
        u, t = x[:n], x[n]
        blocks = [(marginal_matrix(sizes, a), np.eye(w.cells(a)) / ui) for a, ui in zip(w.closure, u) if ui > 0]
        info = sum(b.T @ np.linalg.inv(cov) @ b for b, cov in blocks)
        inv = np.linalg.pinv(info, rcond=1e-13, hermitian=True)
        return np.array([t - wt * np.diag(marginal_matrix(sizes, tb) @ inv @ marginal_matrix(sizes, tb).T).max()
                         for tb, wt in zip(w.tables, wts)])

    best = np.inf
    for x0 in (np.full(n, 1.0 / n), np.array([1.0 if m else 0.01 for m in maximal])):
        x0 = x0 / x0.sum()
        start = np.concatenate([x0, [-tables_gap(np.concatenate([x0, [0.0]])).min() + 1.0]])
        res = minimize(lambda x: x[n], start, method="SLSQP",
                       bounds=[(1e-6 if m else 0.0, 1.0) for m in maximal] + [(0, None)],
                       constraints=[{"type": "ineq", "fun": tables_gap},
                                    {"type": "eq", "fun": lambda x: 1.0 - x[:n].sum()}],
                       options={"ftol": 1e-14, "maxiter": 2000})
        if res.success:
            best = min(best, float(res.x[n]))
    assert plan.max_variance(planning=True) == pytest.approx(best, rel=1e-6)
    assert plan.max_variance(planning=True) <= plan_residuals(
        w, loss=zcdp(Fraction(1, 2)), weights=weights).max_variance(planning=True) * (1 + 1e-9)


def test_single_table_measures_only_the_table() -> None:
    """For one marginal the optimum is the table itself: 6 cells, sigma**2 = 1 / (2 rho)."""
    plan = plan_residuals(make_workload([2, 3], [(0, 1)]), loss=zcdp(Fraction(1, 4)))
    assert plan.measured == ((0, 1),)
    assert plan.noises[-1] == DiscreteGaussian(Fraction(2))
    assert plan.total_variance(planning=True) == pytest.approx(12.0, rel=1e-12)


def test_provable_cost_against_the_papers_continuous_optimum() -> None:
    """Price of integer noise with a provable cost: between 1 and the residual-only closed form."""
    for sizes in ([2] * 6, [5] * 6):
        w = make_workload(sizes, list(itertools.combinations(range(6), 2)))
        ours = plan_residuals(w, loss=zcdp(Fraction(1, 2))).total_variance(planning=True)
        paper = gaussian_optimum(w, rho=0.5)
        discarding = gaussian_optimum(w, rho=0.5, paper_cost=False)
        assert paper < ours < discarding


def test_plan_is_exact_rational_and_repeatable() -> None:
    w = make_workload([3, 4, 2, 5], [(0, 1), (1, 2, 3), (0, 3)])
    for objective in ("sum", "max"):
        a = plan_residuals(w, loss=zcdp(0.3), objective=objective, weights=[1, 2, 3])
        b = plan_residuals(w, loss=zcdp(0.3), objective=objective, weights=[1, 2, 3])
        assert a.shares == b.shares and a.noises == b.noises
        assert all(isinstance(s, Fraction) and (s * 2**40).denominator == 1 for s in a.shares)
        assert sum(a.shares) <= 1 and sum(a.shares) > 1 - Fraction(len(a.shares), 2**40)
        assert a.loss.amount == sum(p.amount for p in a.losses) <= Fraction(3, 10)
        for part, noise in zip(a.losses, a.noises):
            assert noise is None or noise == DiscreteGaussian(Fraction(1) / (2 * part.amount))


def test_pure_plan_uses_discrete_laplace_and_splits_epsilon() -> None:
    w = make_workload([3, 3, 3], [(0, 1), (1, 2)])
    plan = plan_residuals(w, loss=pure(1))
    assert plan.loss.amount <= 1
    for part, noise in zip(plan.losses, plan.noises):
        assert noise is None or (isinstance(noise, DiscreteLaplace) and noise.scale >= 1 / part.amount)


def test_sensitivity_of_a_privacy_unit_scales_the_noise() -> None:
    w = make_workload([2, 3], [(0,), (1,)])
    one = plan_residuals(w, loss=zcdp(1))
    five = plan_residuals(w, loss=zcdp(1), sensitivity=Sensitivity.cells(cells=1, per_cell=5))
    assert one.shares == five.shares
    for a, b in zip(one.noises, five.noises):
        assert (a is None) == (b is None)
        if a is not None:
            assert b.sigma2 == 25 * a.sigma2


def test_size_one_attribute_has_no_residual_to_measure() -> None:
    w = make_workload([1, 3], [(0, 1)])
    plan = plan_residuals(w, loss=zcdp(1))
    assert np.isfinite(plan.total_variance())
    assert plan.total_variance(planning=True) == pytest.approx(3 * 0.5, rel=1e-9)


@pytest.mark.parametrize("kwargs,fragment", [
    ({"objective": "mean"}, "'sum' or 'max'"),
    ({"weights": [1]}, "one positive weight per workload marginal"),
    ({"weights": [1, 0]}, "greater than 0"),
    ({"weights": [1, float("nan")]}, "NaN"),
    ({"weights": "ab"}, "sequence of positive numbers"),
])
def test_invalid_plan_inputs_raise(kwargs, fragment) -> None:
    with pytest.raises(ParameterError, match=fragment):
        plan_residuals(make_workload([2, 3], [(0,), (1,)]), loss=zcdp(1), **kwargs)


def test_a_loss_too_small_for_the_sampler_raises_before_any_noise() -> None:
    with pytest.raises(ParameterError, match="too small"):
        plan_residuals(make_workload([2, 3], [(0,), (1,)]), loss=ZCDP(Fraction(1, 2**101)))


def test_polished_sum_plan_does_not_depend_on_where_the_warm_up_stopped() -> None:
    """The active-set Newton polish reaches the one optimum from different warm starts: the same grid shares.

    (Every machine runs the same exact operations, so the plan is the same bits everywhere; this
    checks the polish, not rounding: starts differing by 1e-6 or by 90 warm-up steps agree.)
    """
    from pandas_dp.algorithms.marginals import plan as module

    w = make_workload([2, 3, 4, 5, 6], list(itertools.combinations(range(5), 2)))
    t = module._coverage_entries(w)
    c = module._loss_floats(w, [Fraction(1)] * len(w.tables))
    required = np.array([a in w.maximal for a in w.closure])
    start = np.sqrt(c) / math.fsum(np.sqrt(c).tolist())
    wobble = start * (1 + 1e-6 * np.sin(np.arange(len(start))))
    wobble = wobble / math.fsum(wobble.tolist())
    a = module._on_grid(module._zcdp_sum(t, c, start, required, warm=100)[0], required)
    b = module._on_grid(module._zcdp_sum(t, c, wobble, required, warm=10)[0], required)
    assert a == b
    assert plan_residuals(w, loss=zcdp(1)).shares == tuple(Fraction(int(s * 2**40), 2**40) for s in a)
