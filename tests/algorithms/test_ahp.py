"""Tests of the AHP algorithm (Zhang et al., SDM 2014)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pandas_dp.algorithms.ahp as ahp_mod
from pandas_dp.algorithms.ahp import ahp
from pandas_dp.algorithms.ahp_clustering import (
    EMPIRICAL_MAX_BINS,
    OPTIMAL_MAX_BINS,
    _best_lookahead,
    _empirical_ks,
    clustering_error,
    empirical_clustering,
    greedy_clustering,
    optimal_clustering,
)
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import pure
import pandas_dp.noise.laplace as noise_module
import pandas_dp.privacy.loss as loss_module
from pandas_dp.noise.laplace import discrete_laplace_variance, noise_scale

EXAMPLE = np.array([1, 1, 3, 3, 4, 6, 7])
C_EXAMPLE = 2 / 0.5 ** 2          # 2 / epsilon_2^2 with epsilon_2 = 0.5 (Example 3.1)


# ----------------------------------------------------------------- references (plain Python)

def ref_err_star(v: np.ndarray, c: float) -> np.ndarray:
    """err*(H_j) by its definition: min over all l >= j (Zhang et al., Sec. 4.2)."""
    n = v.size
    return np.array([min((v[j] - v[j:l + 1].mean()) ** 2 + c / (l - j + 1) ** 2
                         for l in range(j, n)) for j in range(n)])


def ref_greedy(v: np.ndarray, c: float) -> list[int]:
    """Algorithm 3 literally, bin by bin, with the full err* minimum."""
    err_star = ref_err_star(v, c)
    starts, cluster = [0], [v[0]]

    def err(cl):
        a = np.asarray(cl, dtype=float)
        return float(np.sum((a - a.mean()) ** 2)) + c / a.size

    for j in range(1, v.size):
        if err(cluster + [v[j]]) < err(cluster) + err_star[j]:
            cluster.append(v[j])
        else:
            starts.append(j)
            cluster = [v[j]]
    return starts


def all_clusterings(n: int):
    for cuts in itertools.product((0, 1), repeat=n - 1):
        yield np.array([0] + [i + 1 for i, b in enumerate(cuts) if b])


# ----------------------------------------------------------------- Example 3.1

def test_example_3_1_intermediate_values():
    # Paper: err(C1 + H3) = 16/3, err(C1) = 4, err*(H3) = 1/9 + 8/9 = 1 (cluster {3,3,4}).
    assert clustering_error(np.array([1, 1, 3]), np.array([0]), noise_variance=C_EXAMPLE) == \
        pytest.approx(16 / 3)
    assert clustering_error(np.array([1, 1]), np.array([0]), noise_variance=C_EXAMPLE) == 4
    assert _best_lookahead(EXAMPLE, C_EXAMPLE)[2] == pytest.approx(1.0)


@pytest.mark.parametrize("fn", [greedy_clustering, empirical_clustering, optimal_clustering])
def test_example_3_1_clusters(fn):
    # Paper: clusters {1,1}, {3,3,4}, {6,7}.
    starts = fn(EXAMPLE, noise_variance=C_EXAMPLE)
    assert starts.tolist() == [0, 2, 5]


# ----------------------------------------------------------------- clustering vs references

def test_lookahead_matches_definition():
    rng = np.random.default_rng(1)
    for _ in range(150):
        n = int(rng.integers(1, 50))
        v = np.sort(rng.integers(0, 25, n))
        c = float(rng.uniform(0.05, 80))
        np.testing.assert_allclose(_best_lookahead(v, c), ref_err_star(v, c), rtol=1e-12)


def test_greedy_matches_literal_algorithm_3():
    rng = np.random.default_rng(2)
    for _ in range(100):
        n = int(rng.integers(1, 60))
        v = np.sort(np.where(rng.random(n) < 0.4, 0, rng.integers(0, 40, n)))
        c = float(rng.uniform(0.5, 100))
        assert greedy_clustering(v, noise_variance=c).tolist() == ref_greedy(v, c)


def test_optimal_is_brute_force_minimum_and_beats_others():
    rng = np.random.default_rng(3)
    for _ in range(40):
        n = int(rng.integers(1, 11))
        v = np.sort(rng.integers(0, 30, n))
        c = float(rng.uniform(0.5, 60))
        brute = min(clustering_error(v, s, noise_variance=c) for s in all_clusterings(n))
        opt = clustering_error(v, optimal_clustering(v, noise_variance=c), noise_variance=c)
        assert opt == pytest.approx(brute, rel=1e-9, abs=1e-9)
        for fn in (greedy_clustering, empirical_clustering):
            other = clustering_error(v, fn(v, noise_variance=c), noise_variance=c)
            assert other >= opt - 1e-9


def test_empirical_is_best_of_the_four_k_values():
    rng = np.random.default_rng(4)
    for _ in range(30):
        n = int(rng.integers(2, 11))
        v = np.sort(rng.integers(0, 30, n))
        c = float(rng.uniform(0.5, 60))
        ks = set(_empirical_ks(v))
        brute = min(clustering_error(v, s, noise_variance=c) for s in all_clusterings(n)
                    if s.size <= max(ks) and any(s.size <= k for k in ks))
        got = clustering_error(v, empirical_clustering(v, noise_variance=c), noise_variance=c)
        assert got == pytest.approx(brute, rel=1e-9, abs=1e-9)


def test_empirical_rules_of_thumb():
    v = np.arange(64)
    ks = _empirical_ks(v)
    # sqrt(64) = 8, Sturges ceil(1 + 6) = 7, Doane: symmetric data (skew 0) -> 7, Rice 2*4 = 8
    assert ks == [8, 7, 7, 8]


def test_size_limits_refused_with_clear_error():
    with pytest.raises(ParameterError, match="optimal"):
        optimal_clustering(np.zeros(OPTIMAL_MAX_BINS + 1, dtype=np.int64), noise_variance=1.0)
    with pytest.raises(ParameterError, match="empirical"):
        empirical_clustering(np.zeros(EMPIRICAL_MAX_BINS + 1, dtype=np.int64),
                             noise_variance=1.0)


# ----------------------------------------------------------------- the mechanism

def test_budget_split_sums_exactly():
    for eps, share in [(0.1, 0.85), (1.0, 0.3), (Fraction(1, 3), 0.5), (0.7, Fraction(2, 7))]:
        e1, e2 = pure(eps).phases(share)
        total = Fraction(repr(eps)) if isinstance(eps, float) else eps
        assert e1.amount + e2.amount == total and e1.amount > 0 and e2.amount > 0
    with pytest.raises(ParameterError, match="share"):
        pure(1.0).phases(1.0)


def test_release_is_consistent_with_clusters():
    rng = np.random.default_rng(5)
    x = np.concatenate([np.zeros(200, dtype=np.int64), rng.poisson(50, 100), rng.poisson(5, 50)])
    r = ahp(x, loss=pure(0.5), rng=rng)
    k = r.cluster_sizes.size
    assert r.estimates.shape == x.shape
    # every bin of a cluster carries the cluster's released sum / size
    np.testing.assert_allclose(np.bincount(r.labels, weights=r.estimates, minlength=k),
                               r.cluster_sums)
    var2 = discrete_laplace_variance(noise_scale(1, r.plan.loss_2.amount))
    np.testing.assert_allclose(r.variances, var2 / r.cluster_sizes[r.labels] ** 2)
    assert r.plan.loss_1.amount + r.plan.loss_2.amount == Fraction("0.5")
    assert r.theta == pytest.approx(ahp_mod.DEFAULT_ETA * np.log(x.size) / float(r.plan.loss_1.amount))


def test_structure_depends_only_on_phase1_noisy_counts(monkeypatch):
    """Two different true histograms with identical phase-1 noisy counts get equal clusters."""
    rng = np.random.default_rng(6)
    x = rng.poisson(20, 300)
    x2 = x + rng.integers(-5, 6, 300)
    base_noise = rng.integers(-3, 4, 300)
    target = x + base_noise                          # the phase-1 noisy counts of both runs
    real = noise_module.discrete_laplace

    def run(true):
        calls = []

        def fake(scale, size, *, rng=None):
            calls.append(size)
            if len(calls) == 1:                      # phase 1: make noisy == target
                return (target - true).astype(np.int64)
            return real(scale, size, rng=np.random.default_rng(0))

        monkeypatch.setattr(loss_module, "discrete_laplace", fake)  # the calibrated noise calls it
        return ahp(true, loss=pure(1.0))

    r1, r2 = run(x), run(x2)
    np.testing.assert_array_equal(r1.labels, r2.labels)
    assert not np.array_equal(np.bincount(r1.labels, x), np.bincount(r2.labels, x2))


def test_range_variance_matches_dense_linear_form():
    rng = np.random.default_rng(7)
    x = rng.poisson(10, 40)
    r = ahp(x, loss=pure(0.3), rng=rng)
    k = r.cluster_sizes.size
    a = np.zeros((x.size, k))                       # bins = A @ cluster noise
    a[np.arange(x.size), r.labels] = 1.0 / r.cluster_sizes[r.labels]
    lo = np.array([0, 3, 10, 0])
    hi = np.array([40, 17, 11, 1])
    for l, h, got in zip(lo, hi, r.range_variance(lo, hi)):
        q = np.zeros(x.size)
        q[l:h] = 1
        assert got == pytest.approx(r.noise_variance * np.sum((q @ a) ** 2))


def test_noise_unbiased_for_cluster_sums():
    # The released total = true total + sum of k independent draws, mean 0 and
    # variance k * Var(Z); 400 trials -> the mean is within 4 standard errors of 0.
    x = np.r_[np.zeros(50, dtype=np.int64), np.full(50, 30)]
    rng = np.random.default_rng(8)
    errs, ks = [], []
    for _ in range(400):
        r = ahp(x, loss=pure(1.0), rng=rng)
        errs.append(r.estimates.sum() - x.sum())
        ks.append(r.cluster_sizes.size)
    eps2 = Fraction(1) - Fraction(repr(ahp_mod.DEFAULT_EPSILON_SPLIT))
    var = np.mean(ks) * discrete_laplace_variance(noise_scale(1, eps2))
    assert abs(np.mean(errs)) < 4 * np.sqrt(var / 400)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), kind=st.sampled_from(["zeros", "single", "random"]),
       clustering=st.sampled_from(["greedy", "empirical", "optimal"]),
       eps=st.sampled_from([0.01, 0.5, 5.0]), seed=st.integers(0, 1000))
def test_degenerate_inputs(n, kind, clustering, eps, seed):
    rng = np.random.default_rng(seed)
    x = np.zeros(n, dtype=np.int64)
    if kind == "single":
        x[rng.integers(n)] = 1000
    elif kind == "random":
        x = rng.integers(0, 50, n)
    r = ahp(x, loss=pure(eps), clustering=clustering, rng=rng)
    assert r.estimates.shape == (n,) and np.all(np.isfinite(r.estimates))
    assert r.labels.min() == 0 and r.labels.max() == r.cluster_sizes.size - 1
    assert r.cluster_sizes.sum() == n and np.all(r.cluster_sizes > 0)
    np.testing.assert_allclose(np.bincount(r.labels, r.estimates), r.cluster_sums)
    assert np.all(r.variances > 0)
