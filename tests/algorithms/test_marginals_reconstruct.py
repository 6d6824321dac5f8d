"""Measurement and reconstruction: dense GLS reference, exact consistency, variances, unbiasedness."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pandas_dp.algorithms.marginals.counting import closure_marginals
from pandas_dp.algorithms.marginals.measure import measure_marginals
from pandas_dp.algorithms.marginals.plan import plan_residuals
from pandas_dp.algorithms.marginals.reconstruct import reconstruct
from pandas_dp.algorithms.marginals.workload import make_workload
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import pure, zcdp


def marginal_matrix(sizes, attrs) -> np.ndarray:
    """Dense M_A: data vector over the full domain (row-major) -> A-marginal."""
    out = np.ones((1, 1))
    for i, n in enumerate(sizes):
        out = np.kron(out, np.eye(n) if i in attrs else np.ones((1, n)))
    return out


def exact_marginals(x: np.ndarray, workload) -> dict:
    """Every closure marginal of the full-domain count array x."""
    return {a: x.sum(axis=tuple(i for i in range(x.ndim) if i not in a)) if a != tuple(range(x.ndim)) else x
            for a in workload.closure}


def dense_gls(plan, measurement, x_shape):
    """GLS over the full domain from every noisy marginal: (estimate of x up to estimability, covariance)."""
    sizes = plan.workload.sizes
    info = np.zeros((int(np.prod(x_shape)),) * 2)
    rhs = np.zeros(int(np.prod(x_shape)))
    for a, y, v in zip(plan.residuals, measurement.noisy, plan.noise_variances()):
        if y is None:
            continue
        m = marginal_matrix(sizes, a)
        info += m.T @ m / v
        rhs += m.T @ y.ravel().astype(np.float64) / v
    cov = np.linalg.pinv(info, rcond=1e-13, hermitian=True)
    return cov @ rhs, cov


CASES = [
    ([2, 3, 2], [(0, 1), (1, 2)], None, zcdp(Fraction(1, 3))),
    ([3, 2, 2], [(0, 1, 2), (0,)], [1, 30], zcdp(Fraction(1, 2))),
    ([2, 3, 2, 2], [(0, 1), (1, 2), (2, 3), (0, 3)], None, pure(1)),
    ([3, 4], [(0,), (1,)], [2, 1], zcdp(1)),
]


@pytest.mark.parametrize("sizes,tables,weights,loss", CASES)
@pytest.mark.parametrize("objective", ["sum", "max"])
def test_estimates_and_variances_equal_dense_gls(sizes, tables, weights, loss, objective) -> None:
    w = make_workload(sizes, tables)
    rng = np.random.default_rng(7)
    x = rng.integers(0, 20, size=sizes)
    plan = plan_residuals(w, loss=loss, objective=objective, weights=weights)
    measurement = measure_marginals(exact_marginals(x, w), plan, rng=rng)
    est = reconstruct(measurement)
    xhat, cov = dense_gls(plan, measurement, sizes)
    for attrs in w.closure:
        m = marginal_matrix(sizes, attrs)
        assert np.allclose(est.marginal(attrs).ravel(), m @ xhat, rtol=0, atol=1e-9 * max(1.0, np.abs(m @ xhat).max()))
        cell_var = np.diag(m @ cov @ m.T)
        assert np.allclose(cell_var, est.variance(attrs), rtol=1e-9, atol=0)
        assert est.variance(attrs) == pytest.approx(plan.cell_variance(attrs), rel=1e-12)


@settings(max_examples=10, deadline=None)
@given(st.data())
def test_every_table_sums_to_every_smaller_one_and_one_total(data) -> None:
    d = data.draw(st.integers(2, 4))
    sizes = data.draw(st.lists(st.integers(1, 4), min_size=d, max_size=d))
    tables = data.draw(st.lists(st.lists(st.integers(0, d - 1), min_size=1, max_size=3, unique=True),
                                min_size=1, max_size=4))
    w = make_workload(sizes, tables)
    x = np.random.default_rng(1).integers(0, 5, size=sizes)
    plan = plan_residuals(w, loss=zcdp(1))
    est = reconstruct(measure_marginals(exact_marginals(x, w), plan, rng=np.random.default_rng(2)))
    total = est.total()
    for attrs in w.closure:
        table = est.marginal(attrs)
        assert table.sum() == pytest.approx(total, abs=1e-8 * max(1.0, abs(total)))
        for axis, attr in enumerate(attrs):
            smaller = tuple(a for a in attrs if a != attr)
            assert np.allclose(table.sum(axis=axis), est.marginal(smaller), rtol=0, atol=1e-8 * max(1.0, abs(total)))


def test_axis_order_follows_the_request_and_unknown_marginals_raise() -> None:
    w = make_workload([2, 3, 4], [(0, 1), (2,)])
    plan = plan_residuals(w, loss=zcdp(1))
    x = np.arange(24).reshape(2, 3, 4)
    est = reconstruct(measure_marginals(exact_marginals(x, w), plan, rng=np.random.default_rng(0)))
    assert np.array_equal(est.marginal((1, 0)), est.marginal((0, 1)).T)
    with pytest.raises(ParameterError, match="not in the workload"):
        est.marginal((0, 2))
    with pytest.raises(ParameterError, match="not in the workload"):
        est.variance((1, 2))


def test_measurement_adds_the_planned_noise_only_to_measured_marginals() -> None:
    w = make_workload([2, 3], [(0, 1), (0,)])
    plan = plan_residuals(w, loss=zcdp(1), weights=[1, 100])
    x = np.array([[1, 2, 3], [4, 5, 6]])
    m = measure_marginals(exact_marginals(x, w), plan, rng=np.random.default_rng(3))
    for a, y, noise in zip(plan.residuals, m.noisy, plan.noises):
        assert (y is None) == (noise is None)
        if y is not None:
            assert y.dtype == np.int64 and y.shape == w.shape(a)
    with pytest.raises(ValueError, match="missing"):
        measure_marginals({}, plan, rng=np.random.default_rng(3))


@pytest.mark.slow
def test_unbiased_with_the_exact_variance() -> None:
    """Monte Carlo, 2000 releases at a fixed seed: mean within 5 standard errors, variance within 10%.

    The standard error of a sample variance of 2000 near-normal draws is about 3.2% of the variance,
    so 10% is over three standard errors; the seed makes the outcome the same on every run.
    """
    w = make_workload([2, 3, 2], [(0, 1), (1, 2)])
    plan = plan_residuals(w, loss=zcdp(Fraction(1, 10)))
    x = np.random.default_rng(5).integers(0, 30, size=(2, 3, 2))
    exact = exact_marginals(x, w)
    rng = np.random.default_rng(11)
    draws = np.array([reconstruct(measure_marginals(exact, plan, rng=rng)).marginal((1, 2)).ravel()
                      for _ in range(2000)])
    var = reconstruct(measure_marginals(exact, plan, rng=rng)).variance((1, 2))
    assert np.all(np.abs(draws.mean(axis=0) - exact[(1, 2)].ravel()) < 5 * np.sqrt(var / 2000))
    assert np.allclose(draws.var(axis=0, ddof=1), var, rtol=0.10)


def test_reconstruction_works_on_counts_from_the_kernel() -> None:
    w = make_workload([3, 2, 4], [(0, 1), (0, 2), (1, 2)])
    rng = np.random.default_rng(0)
    codes = [rng.integers(0, n, 1000) for n in w.sizes]
    counts = closure_marginals(codes, w)
    plan = plan_residuals(w, loss=zcdp(100000))
    est = reconstruct(measure_marginals(counts, plan, rng=rng))
    for a in itertools.chain(w.tables, [(), (2,)]):
        assert np.allclose(est.marginal(a), counts[a], atol=0.1)
