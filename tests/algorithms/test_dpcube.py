"""Tests of the DPCube algorithm (Xiao et al.)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pandas_dp.algorithms.dpcube as dpc
from pandas_dp.algorithms.dpcube import (
    box_sums,
    dpcube,
    kd_partition,
    partition_labels,
    summed_area,
)
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import pure
import pandas_dp.noise.laplace as noise_module
import pandas_dp.privacy.loss as loss_module
from pandas_dp.noise.laplace import discrete_laplace_variance, noise_scale


def sse(a: np.ndarray) -> float:
    a = np.asarray(a, dtype=float)
    return float(np.sum((a - a.mean()) ** 2)) if a.size else 0.0


def dense_design(release) -> tuple[np.ndarray, np.ndarray]:
    """Stacked query matrix [I; H_II] and noise variances of the released views."""
    m = release.labels.size
    lab = release.labels.ravel()
    h2 = (lab[None, :] == np.arange(release.lo.shape[0])[:, None]).astype(float)
    h = np.vstack([np.eye(m), h2])
    var = np.r_[np.full(m, release.noise_variance_1),
                np.full(h2.shape[0], release.noise_variance_2)]
    return h, var


# ----------------------------------------------------------------- least squares

@pytest.mark.parametrize("eps,split", [(1.0, 0.5), (0.4, 0.25), (2.0, 0.8)])
def test_least_squares_equals_dense_gls_solve(eps, split):
    rng = np.random.default_rng(0)
    x = rng.poisson(4, (6, 5))
    x[:3, :2] = 40
    r = dpcube(x, loss=pure(eps), epsilon_split=split, estimate="least_squares", rng=rng)
    h, var = dense_design(r)
    y = np.r_[r.noisy_cells.ravel(), r.partition_counts]
    wts = 1 / np.sqrt(var)
    xhat, *_ = np.linalg.lstsq(h * wts[:, None], y * wts, rcond=None)
    np.testing.assert_allclose(r.estimates.ravel(), xhat, atol=1e-9)
    # exact covariance of the linear estimator: (H^T S^-1 H)^-1
    cov = np.linalg.inv(h.T @ (h / var[:, None]))
    np.testing.assert_allclose(r.variances.ravel(), np.diag(cov), rtol=1e-10)
    # rectangle variance from the closed form equals q^T cov q
    qlo = np.array([[0, 0], [1, 2], [2, 1], [5, 4]])
    qhi = np.array([[6, 5], [4, 5], [3, 2], [6, 5]])
    got = r.box_variance(qlo, qhi)
    for (a, b), (c, d), g in zip(qlo, qhi, got):
        q = np.zeros(x.shape)
        q[a:c, b:d] = 1
        assert g == pytest.approx(q.ravel() @ cov @ q.ravel(), rel=1e-10)


def test_equal_budgets_give_the_papers_h_plus():
    # Paper (Theorem 4.6 proof): H = [ones(1, n_p); I], H^+ rows
    # [1/(n_p+1), n_p/(n_p+1) on the own cell, -1/(n_p+1) elsewhere].
    rng = np.random.default_rng(1)
    x = rng.poisson(3, 12)
    r = dpcube(x, loss=pure(1.0), epsilon_split=0.5, threshold=np.inf, rng=rng)
    assert r.lo.shape[0] == 1
    n_p = 12
    hplus = np.full((n_p, n_p + 1), -1 / (n_p + 1))
    hplus[:, 0] = 1 / (n_p + 1)
    hplus[np.arange(n_p), np.arange(n_p) + 1] = n_p / (n_p + 1)
    y = np.r_[r.partition_counts, r.noisy_cells]
    np.testing.assert_allclose(r.estimates, hplus @ y, atol=1e-9)


def test_uniform_estimate_and_noise_variance():
    rng = np.random.default_rng(2)
    x = rng.poisson(6, (8, 8))
    r = dpcube(x, loss=pure(0.5), estimate="uniform", rng=rng)
    sizes = r.partition_sizes
    np.testing.assert_allclose(r.estimates, r.partition_counts[r.labels] / sizes[r.labels])
    var2 = discrete_laplace_variance(noise_scale(1, r.plan.loss_2.amount))
    np.testing.assert_allclose(r.variances, var2 / sizes[r.labels] ** 2)
    whole = r.box_variance(np.array([[0, 0]]), np.array([[8, 8]]))
    assert whole[0] == pytest.approx(var2 * r.lo.shape[0])


# ----------------------------------------------------------------- kd-tree

def test_kd_tree_reads_only_phase1_noisy_counts(monkeypatch):
    """Changing the true data but not the phase-1 noisy counts gives the same partition."""
    rng = np.random.default_rng(3)
    x = rng.poisson(10, (20, 30))
    x[5:12, 3:20] += 60
    x2 = rng.poisson(10, (20, 30))
    target = x + rng.integers(-2, 3, x.shape)
    real = noise_module.discrete_laplace

    def run(true):
        calls = []

        def fake(scale, size, *, rng=None):
            calls.append(size)
            if len(calls) == 1:
                return (target - true).astype(np.int64)
            return real(scale, size, rng=np.random.default_rng(0))

        monkeypatch.setattr(loss_module, "discrete_laplace", fake)  # the calibrated noise calls it
        return dpcube(true, loss=pure(1.0))

    r1, r2 = run(x), run(x2)
    np.testing.assert_array_equal(r1.lo, r2.lo)
    np.testing.assert_array_equal(r1.hi, r2.hi)
    np.testing.assert_array_equal(r1.noisy_cells, r2.noisy_cells)


def test_split_point_minimizes_weighted_variance_1d():
    y = np.array([0, 1, 0, 9, 10, 11, 10, 30, 31])
    lo, hi = kd_partition(y, threshold=np.inf)
    assert lo.tolist() == [[0]] and hi.tolist() == [[9]]
    # one level: find the split with a threshold that stops after the first split
    costs = [sse(y[:t]) + sse(y[t:]) for t in range(1, 9)]
    best_t = int(np.argmin(costs)) + 1
    thr = max(np.var(y[:best_t]), np.var(y[best_t:])) + 1e-9
    lo, hi = kd_partition(y, threshold=thr)
    assert sorted(map(tuple, np.c_[lo, hi])) == [(0, best_t), (best_t, 9)]


def test_split_on_largest_range_and_leaf_variance():
    rng = np.random.default_rng(4)
    y = rng.integers(-5, 50, (7, 19))
    lo, hi = kd_partition(y, threshold=-1.0)
    assert lo.shape[0] == y.size                     # everything split to single cells
    thr = 30.0
    lo, hi = kd_partition(y, threshold=thr)
    lab = partition_labels(y.shape, lo, hi)
    assert np.array_equal(np.bincount(lab.ravel()), np.prod(hi - lo, axis=1))
    for a, b in zip(lo, hi):
        cell = y[a[0]:b[0], a[1]:b[1]]
        assert cell.size == 1 or np.var(cell) <= thr
    # the split is on the dimension with the larger range, at the variance-minimizing cut
    z = np.zeros((7, 19), dtype=np.int64)
    z[:, 8:] = 10
    lo, hi = kd_partition(z, threshold=0.0)
    assert sorted(map(tuple, np.c_[lo, hi])) == [(0, 0, 7, 8), (0, 8, 7, 19)]
    lo, hi = kd_partition(z.T.copy(), threshold=0.0)
    assert sorted(map(tuple, np.c_[lo, hi])) == [(0, 0, 8, 7), (8, 0, 19, 7)]


def test_box_sums_any_dimension():
    rng = np.random.default_rng(5)
    x = rng.integers(0, 9, (4, 5, 3))
    sat = summed_area(x)
    lo = np.array([[0, 0, 0], [1, 2, 1], [3, 4, 2]])
    hi = np.array([[4, 5, 3], [3, 5, 2], [4, 5, 3]])
    want = [x[a[0]:b[0], a[1]:b[1], a[2]:b[2]].sum() for a, b in zip(lo, hi)]
    assert box_sums(sat, lo, hi).tolist() == want


def test_three_dimensional_release():
    rng = np.random.default_rng(6)
    x = rng.poisson(2, (5, 6, 4))
    r = dpcube(x, loss=pure(1.0), rng=rng)
    assert r.estimates.shape == x.shape
    assert r.partition_sizes.sum() == x.size
    truth = box_sums(summed_area(x), r.lo, r.hi)
    assert np.all(np.abs(r.partition_counts - truth) < 200)


def test_budget_split_exact_and_parameter_errors():
    r = dpcube(np.ones((3, 3), dtype=np.int64), loss=pure(0.3), epsilon_split=0.7,
               rng=np.random.default_rng(0))
    assert r.plan.loss_1.amount + r.plan.loss_2.amount == Fraction("0.3")
    with pytest.raises(ParameterError, match="estimate"):
        dpcube(np.ones(3, dtype=np.int64), loss=pure(1.0), estimate="median")


def test_default_threshold_tied_to_noise_level():
    r = dpcube(np.zeros(10, dtype=np.int64), loss=pure(0.2), rng=np.random.default_rng(0))
    assert r.threshold == pytest.approx(dpc.DEFAULT_THRESHOLD_FACTOR * r.noise_variance_1)


@settings(max_examples=40, deadline=None)
@given(shape=st.sampled_from([(1,), (1, 9), (9, 1), (1, 1), (4, 4), (2, 3, 2)]),
       kind=st.sampled_from(["zeros", "single", "random"]),
       estimate=st.sampled_from(["uniform", "least_squares"]),
       eps=st.sampled_from([0.01, 1.0, 10.0]), seed=st.integers(0, 1000))
def test_degenerate_inputs(shape, kind, estimate, eps, seed):
    rng = np.random.default_rng(seed)
    x = np.zeros(shape, dtype=np.int64)
    if kind == "single":
        x[tuple(rng.integers(k) for k in shape)] = 500
    elif kind == "random":
        x = rng.integers(0, 30, shape)
    r = dpcube(x, loss=pure(eps), estimate=estimate, rng=rng)
    assert r.estimates.shape == x.shape and np.all(np.isfinite(r.estimates))
    assert r.partition_sizes.sum() == x.size
    assert np.array_equal(np.bincount(r.labels.ravel(), minlength=r.lo.shape[0]),
                          r.partition_sizes)
    assert np.all(r.variances > 0)
    if estimate == "least_squares":
        # each partition's estimates add up to the inverse-variance combination
        sums = np.bincount(r.labels.ravel(), r.estimates.ravel())
        cells = np.bincount(r.labels.ravel(), r.noisy_cells.ravel())
        w = r.weights
        np.testing.assert_allclose(sums, cells + r.partition_sizes * w *
                                   (r.partition_counts - cells), atol=1e-6)


def test_least_squares_variance_matches_simulation():
    # One partition (threshold=inf) keeps the estimator linear and fixed, so the empirical
    # variance over 4000 runs must match sigma1^2 (1 - w) per cell and the box formula for
    # a 4-cell range. The sample variance of 4000 draws of a light-tailed sum has relative
    # standard error about sqrt(2/4000) * 1.2 = 2.7%; 12% is > 4 standard errors.
    x = np.array([5, 0, 3, 9, 2, 2, 7, 1, 0, 4])
    rng = np.random.default_rng(9)
    runs = [dpcube(x, loss=pure(0.7), epsilon_split=0.4, threshold=np.inf, rng=rng)
            for _ in range(4000)]
    est = np.array([r.estimates for r in runs])
    r0 = runs[0]
    assert np.var(est[:, 0]) == pytest.approx(r0.variances[0], rel=0.12)
    assert np.var(est[:, 2:6].sum(axis=1)) == pytest.approx(
        r0.box_variance(np.array([[2]]), np.array([[6]]))[0], rel=0.12)
    assert abs(np.mean(est[:, 0]) - x[0]) < 4 * np.sqrt(r0.variances[0] / 4000)
