"""Tests of DAWA (Li, Hay, Miklau, Wang, PVLDB 2014): partition, strategy, estimates, privacy."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pandas_dp.algorithms.dawa.runs as dr
import pandas_dp.algorithms.dawa.strategy as ds
from pandas_dp.algorithms.dawa.release import (DEFAULT_RATIO, DEFAULT_RATIO_2D, dawa, partition_epsilon, plan_dawa,
                                               workload_runs)
from pandas_dp.algorithms.dawa.partition import (deviation_costs, exact_partition, least_cost_partition,
                                                 level_sensitivities, partition_loss_shares, private_partition)
from pandas_dp.algorithms.hilbert import hilbert_order
from pandas_dp.algorithms.tree.layout import tree_layout
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import ZCDP, PureDP
from pandas_dp.testing import assert_dp

from _slow import FULL as SLOW_FULL, QUICK_TRIALS

EPS1 = PureDP(Fraction(1))


def candidates(n: int) -> list[tuple[int, int]]:
    layout = tree_layout(n, 2)
    out = []
    for k in range(layout.n_levels):
        lo, hi = layout.intervals(k)
        out += list(zip(lo.tolist(), hi.tolist()))
    return out


def dev(x: np.ndarray, a: int, b: int) -> float:
    seg = np.asarray(x[a:b], dtype=float)
    return float(np.abs(seg - seg.mean()).sum())


def brute_force_partition(n: int, cost) -> tuple[float, list[int]]:
    """Least-cost partition of [0, n) into candidate intervals, by exhaustive search over all 2**(n-1)."""
    allowed = set(candidates(n))
    best = (np.inf, [])
    for cuts in itertools.product([0, 1], repeat=n - 1):
        edges = [0] + [i + 1 for i, c in enumerate(cuts) if c] + [n]
        pieces = list(zip(edges[:-1], edges[1:]))
        if all(p in allowed for p in pieces):
            total = sum(cost(a, b) for a, b in pieces)
            if total < best[0] - 1e-9:
                best = (total, edges)
    return best


# ----------------------------------------------------------------------------- stage 1: partition

@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=1, max_size=37))
def test_deviation_costs_equal_their_definition(values):
    x = np.array(values)
    layout = tree_layout(x.size, 2)
    costs = deviation_costs(x)
    for k in range(1, layout.n_levels):
        lo, hi = layout.intervals(k)
        want = [(b - a) * dev(x, a, b) for a, b in zip(lo, hi)]
        np.testing.assert_allclose(costs[k - 1], want, atol=1e-9)
        assert costs[k - 1].dtype == np.int64


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 30), min_size=2, max_size=33), st.data())
def test_one_row_moves_one_candidate_per_level_within_its_sensitivity(values, data):
    """The calibration: L1 change of level k's deviations <= 2 (1 - 1/L_k) after dividing by |B|."""
    x = np.array(values)
    j = data.draw(st.integers(0, x.size - 1))
    y = x.copy()
    y[j] += 1
    layout = tree_layout(x.size, 2)
    for k, (cx, cy, sens) in enumerate(zip(deviation_costs(x), deviation_costs(y), level_sensitivities(x.size)),
                                       start=1):
        lo, hi = layout.intervals(k)
        change = np.abs(cy - cx) / (hi - lo)
        assert np.count_nonzero(change) <= 1
        assert change.sum() <= float(sens) + 1e-12


def test_level_shares_are_exact_and_follow_the_sensitivities():
    for n in (1, 2, 5, 8, 4096, 1000):
        shares = partition_loss_shares(n)
        assert sum(shares, Fraction(0)) == (1 if n > 1 else 0)
        sens = level_sensitivities(n)
        assert all(a / b == shares[0] / sens[0] for a, b in zip(shares, sens))
    # n = 4096: sum_k 2 (1 - 2**-k), k = 1..12 = 24 - 2 (1 - 2**-12)
    assert sum(level_sensitivities(4096), Fraction(0)) == 24 - 2 * (1 - Fraction(1, 4096))


@pytest.mark.parametrize("seed", range(6))
def test_partition_dp_equals_brute_force_on_exact_costs(seed):
    """With the noise switched off (exact deviations), the tree DP is the optimum over candidate partitions."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 12))
    x = rng.integers(0, 20, n) * rng.integers(0, 2, n)
    b2 = float(rng.choice([0.5, 3.0, 10.0]))
    edges = exact_partition(x, b2)
    best, _ = brute_force_partition(n, lambda a, b: dev(x, a, b) + b2)
    got = sum(dev(x, a, b) + b2 for a, b in zip(edges[:-1], edges[1:]))
    assert got == pytest.approx(best)


@pytest.mark.parametrize("seed", range(6))
def test_partition_dp_equals_brute_force_on_arbitrary_costs(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(2, 12))
    layout = tree_layout(n, 2)
    costs = tuple(rng.exponential(3.0, layout.level_sizes[k]) for k in range(1, layout.n_levels))
    lookup = {(0, 0): 0.0}
    for k in range(1, layout.n_levels):
        for (a, b), c in zip(zip(*layout.intervals(k)), costs[k - 1]):
            lookup[(int(a), int(b))] = min(lookup.get((int(a), int(b)), np.inf), float(c))
    edges = least_cost_partition(costs, 1.0, n)
    best, best_edges = brute_force_partition(n, lambda a, b: (lookup.get((a, b), 0.0) if b - a > 1 else 0.0) + 1.0)
    got = sum((lookup.get((int(a), int(b)), 0.0) if b - a > 1 else 0.0) + 1.0
              for a, b in zip(edges[:-1], edges[1:]))
    assert got == pytest.approx(best)


def test_partition_reads_data_only_through_its_noisy_costs():
    """Same noisy first-phase values (crafted data, same seed) give the same buckets and strategy."""
    rng = np.random.default_rng(7)
    x = rng.integers(0, 40, 64)
    x[20:40] = 0
    y = x.copy()
    y[0::2], y[1::2] = x[1::2], x[0::2]      # swap within aligned pairs: every candidate's deviation is unchanged
    assert not np.array_equal(x, y)
    for a, b in zip(deviation_costs(x), deviation_costs(y)):
        np.testing.assert_array_equal(a, b)
    rx = dawa(x, loss=EPS1, rng=np.random.default_rng(3))
    ry = dawa(y, loss=EPS1, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(rx.edges, ry.edges)
    for a, b in zip(rx.partition.noisy_costs, ry.partition.noisy_costs):
        np.testing.assert_array_equal(a, b)
    assert rx.strategy.shares == ry.strategy.shares


def test_flat_data_gives_one_bucket_and_a_step_gives_two():
    part = private_partition(np.full(64, 7), loss=PureDP(Fraction(100)), bucket_cost=1.0,
                             rng=np.random.default_rng(0))
    assert part.edges.tolist() == [0, 64]
    step = np.r_[np.zeros(32, dtype=np.int64), np.full(32, 500)]
    part = private_partition(step, loss=PureDP(Fraction(100)), bucket_cost=1.0, rng=np.random.default_rng(0))
    assert part.edges.tolist() == [0, 32, 64]


# ----------------------------------------------------------------------------- losses

@pytest.mark.parametrize("ratio", [0.25, 0.3, Fraction(1, 3)])
@pytest.mark.parametrize("loss", [PureDP(Fraction(1, 10)), PureDP(Fraction(3, 2))])
def test_phase_losses_add_up_to_the_whole_exactly(ratio, loss):
    x = np.random.default_rng(1).integers(0, 30, 100)
    rel = dawa(x, loss=loss, ratio=ratio, rng=np.random.default_rng(2))
    assert rel.partition_loss + rel.strategy_loss == loss
    total = sum(rel.phase_losses, loss.zero())
    assert total == loss
    assert sum(rel.partition.level_losses, loss.zero()) == rel.partition_loss
    assert rel.partition_loss == loss.part(Fraction(ratio) if isinstance(ratio, Fraction) else
                                           Fraction(repr(ratio)))
    assert rel.ratio == (Fraction(ratio) if isinstance(ratio, Fraction) else Fraction(repr(ratio)))
    assert DEFAULT_RATIO == Fraction(1, 4) and DEFAULT_RATIO_2D == Fraction(1, 2)
    assert dawa(x, loss=loss, rng=np.random.default_rng(2)).ratio == DEFAULT_RATIO
    assert dawa(x.reshape(10, 10), loss=loss, rng=np.random.default_rng(2)).ratio == DEFAULT_RATIO_2D


# ----------------------------------------------------------------------------- stage 2: least squares

def dense_strategy(rel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stacked node-sum rows over the buckets, noisy answers, noise variances (all noised levels)."""
    layout = rel.strategy.layout
    k = rel.n_buckets
    rows, y, var = [], [], []
    for level in range(layout.n_levels):
        if rel.answers.noisy[level] is None:
            continue
        lo, hi = layout.intervals(level)
        for a, b, v in zip(lo, hi, np.ravel(rel.answers.noisy[level])):
            r = np.zeros(k)
            r[a:b] = 1
            rows.append(r)
            y.append(v)
            var.append(rel.answers.level_variances[level])
    return np.array(rows), np.array(y, dtype=float), np.array(var)


def bucket_weights(rel, queries) -> np.ndarray:
    """Dense bucket-weight rows of queries (fraction of each bucket's bins inside the query)."""
    q, lo, hi, m = workload_runs(queries, rel.shape)
    n = int(np.prod(rel.shape))
    w = np.zeros((m, rel.n_buckets))
    sizes = np.diff(rel.edges)
    for qi, a, b in zip(q, lo, hi):
        cells = np.zeros(n)
        cells[a:b] = 1
        w[qi] += np.add.reduceat(cells, rel.edges[:-1]) / sizes
    return w


@pytest.mark.parametrize("seed,eps", [(0, 1.0), (1, 0.2), (2, 5.0)])
def test_least_squares_equals_dense_lstsq_and_variances_equal_the_dense_covariance(seed, eps):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 25, 48)
    x[10:30] = rng.integers(0, 2, 20)
    rel = dawa(x, loss=PureDP(Fraction(repr(eps))), rng=rng)
    a, y, var = dense_strategy(rel)
    w = 1 / np.sqrt(var)
    xhat, *_ = np.linalg.lstsq(a * w[:, None], y * w, rcond=None)
    np.testing.assert_allclose(rel.bucket_estimates, xhat, atol=1e-8)
    cov = np.linalg.inv(a.T @ (a / var[:, None]))
    np.testing.assert_allclose(rel.bucket_variances, np.diag(cov), rtol=1e-9)
    sizes = np.diff(rel.edges)
    np.testing.assert_allclose(rel.estimates, np.repeat(xhat / sizes, sizes), atol=1e-8)
    np.testing.assert_allclose(rel.variances, np.repeat(np.diag(cov) / sizes ** 2, sizes), rtol=1e-9)
    ranges = np.array([[0, 48], [3, 17], [5, 6], [20, 47], [0, 1], [31, 32]])
    wq = bucket_weights(rel, ranges)
    np.testing.assert_allclose(rel.range_variance(ranges[:, 0], ranges[:, 1]),
                               np.einsum("qi,ij,qj->q", wq, cov, wq), rtol=1e-9)
    np.testing.assert_allclose(rel.range_estimate(ranges[:, 0], ranges[:, 1]), wq @ xhat, atol=1e-8)


def test_greedy_level_error_equals_the_dense_trace():
    rng = np.random.default_rng(4)
    n = 60
    edges = np.unique(np.r_[0, rng.choice(np.arange(1, n), 17, replace=False), n])
    k = edges.size - 1
    ranges = np.sort(rng.integers(0, n + 1, (30, 2)), axis=1)
    ranges = ranges[ranges[:, 0] < ranges[:, 1]]
    br = dr.bucket_runs(np.arange(len(ranges)), ranges[:, 0], ranges[:, 1], edges, len(ranges))
    w = np.zeros((len(ranges), k))
    for i, (a, b) in enumerate(ranges):
        cells = np.zeros(n)
        cells[a:b] = 1
        w[i] = np.add.reduceat(cells, edges[:-1]) / np.diff(edges)
    for p in [None, (Fraction(1, 2), Fraction(3, 10), Fraction(9, 10), Fraction(1), Fraction(2, 5))]:
        g = ds.greedy_hierarchy(br)
        shares = g.shares if p is None else ds.level_shares(p[:g.layout.n_levels - 1])
        rows = []
        for level, share in enumerate(shares):
            lo, hi = g.layout.intervals(level)
            for a, b in zip(lo, hi):
                r = np.zeros(k)
                r[a:b] = float(share)
                rows.append(r)
        a = np.array(rows)
        m = np.linalg.pinv(a.T @ a)
        dense = float(np.trace(w @ m @ w.T))
        if p is None:
            assert g.local_error == pytest.approx(dense, rel=1e-9)
        assert ds.workload_error(g.layout, br, np.array([float(s) for s in shares])) == pytest.approx(dense, rel=1e-9)


@pytest.mark.parametrize("k", [1, 2, 3, 7, 8, 13, 64, 100])
def test_compact_variances_equal_the_full_tree_variances(k):
    from pandas_dp.algorithms.tree.inference import tree_variances
    layout = tree_layout(k, 2)
    rng = np.random.default_rng(k)
    sigma2 = rng.uniform(0.5, 3.0, layout.n_levels)
    sigma2[rng.random(layout.n_levels) < 0.3] = np.inf
    sigma2[0] = 1.0
    full = tree_variances(layout, sigma2)
    c = dr.compact_variances(layout, sigma2)
    for level in range(layout.n_levels):
        v = full.vdown[level].ravel()
        assert np.allclose(v[:-1], c.v_full[level]) and v[-1] == pytest.approx(c.v_last[level])
        if level:
            vs = full.child_var[level].ravel()
            assert np.allclose(vs[:-1], c.vs_full[level]) and vs[-1] == pytest.approx(c.vs_last[level])
    ranges = np.sort(rng.integers(0, k + 1, (20, 2)), axis=1)
    ranges = ranges[ranges[:, 0] < ranges[:, 1]]
    if ranges.size:
        br = dr.bucket_runs(np.arange(len(ranges)), ranges[:, 0], ranges[:, 1], np.arange(k + 1), len(ranges))
        plan = dr.variance_plan(layout, br)
        np.testing.assert_allclose(dr.plan_variance(plan, c), dr.plan_variance(plan, full), rtol=1e-10)


def test_chosen_strategy_is_never_worse_than_greedy_or_uniform():
    rng = np.random.default_rng(5)
    x = rng.poisson(30, 512)
    rel = dawa(x, loss=PureDP(Fraction(1, 2)), rng=rng)
    e = rel.strategy.errors
    assert e["chosen"] <= min(e["greedy"], e["uniform"], e["buckets"]) * (1 + 1e-6)
    assert sum(rel.strategy.shares, Fraction(0)) == 1
    assert sum(rel.strategy.greedy.shares, Fraction(0)) == 1


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 60), min_size=1, max_size=70), st.integers(0, 2**31))
def test_release_invariants_on_any_counts(values, seed):
    x = np.array(values)
    rel = dawa(x, loss=EPS1, rng=np.random.default_rng(seed))
    e = rel.edges
    assert e[0] == 0 and e[-1] == x.size and np.all(np.diff(e) > 0)
    assert rel.estimates.shape == x.shape and np.all(np.isfinite(rel.estimates))
    np.testing.assert_allclose(np.add.reduceat(rel.estimates, e[:-1]), rel.bucket_estimates, atol=1e-8)
    assert np.all(rel.variances > 0)
    assert sum(rel.phase_losses, EPS1.zero()) == EPS1
    # the estimate is consistent: the whole domain is the root of the bucket tree
    assert rel.range_estimate([0], [x.size])[0] == pytest.approx(rel.estimates.sum())


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=70), st.integers(0, 2**31),
       st.sampled_from([Fraction(1, 20), Fraction(1, 2), Fraction(4)]))
def test_nonnegative_estimates_are_the_bucket_trees_projection_spread_evenly(values, seed, eps):
    """``nonnegative_estimates`` is post-processing of the noisy bucket tree: non-negative, constant inside
    a bucket, the whole domain is the clipped least-squares root, and nothing moves where the least-squares
    bucket totals are already non-negative."""
    x = np.array(values)
    rel = dawa(x, loss=PureDP(eps), rng=np.random.default_rng(seed))
    before = rel.estimates.copy()
    nn = rel.nonnegative_estimates()
    np.testing.assert_array_equal(rel.estimates, before)                 # the least-squares release is kept
    assert nn.shape == x.shape and np.all(nn >= 0)
    sizes = np.diff(rel.edges)
    totals = np.add.reduceat(nn, rel.edges[:-1])
    np.testing.assert_allclose(nn, np.repeat(totals / sizes, sizes), rtol=1e-12, atol=1e-12)
    assert totals.sum() == pytest.approx(max(rel.bucket_estimates.sum(), 0.0), rel=1e-9, abs=1e-9)
    if np.all(rel.bucket_estimates >= 0):
        np.testing.assert_allclose(nn, rel.estimates, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(rel.nonnegative_estimates(), nn)     # deterministic: no new noise


def test_nonnegative_estimates_in_2d_go_back_on_the_grid_along_the_hilbert_line():
    rng = np.random.default_rng(3)
    x = rng.poisson(0.3, (16, 16))
    x[:4, :4] += 25
    rel = dawa(x, loss=PureDP(Fraction(1, 5)), workload="prefix", rng=np.random.default_rng(2))
    nn = rel.nonnegative_estimates()
    assert nn.shape == x.shape and np.all(nn >= 0)
    line = nn.ravel()[rel.order]
    sizes = np.diff(rel.edges)
    totals = np.add.reduceat(line, rel.edges[:-1])
    np.testing.assert_allclose(line, np.repeat(totals / sizes, sizes), atol=1e-12)
    assert totals.sum() == pytest.approx(max(rel.bucket_estimates.sum(), 0.0))


def test_the_projection_lowers_prefix_error_where_clipping_raises_it():
    """On a sparse shape at a small loss the least-squares bucket totals go negative: clipping them adds mass to
    every prefix after them, the projection takes it from the neighbours. Mean squared prefix error over 40
    fixed seeds (deterministic): the projection 0.94x the least squares', clipping 3.7x the projection."""
    x = np.zeros(256, dtype=np.int64)
    x[[3, 40, 41, 97, 180, 181, 182, 250]] = [30, 12, 9, 40, 5, 6, 7, 22]
    truth = np.cumsum(x)
    err = {"ls": [], "nn": [], "clip": []}
    for seed in range(40):
        rel = dawa(x, loss=PureDP(Fraction(1, 10)), workload="prefix", rng=np.random.default_rng(seed))
        for name, est in (("ls", rel.estimates), ("nn", rel.nonnegative_estimates()),
                          ("clip", np.maximum(rel.estimates, 0))):
            err[name].append(np.mean((np.cumsum(est) - truth) ** 2))
    ls, nn, clip = (np.mean(err[k]) for k in ("ls", "nn", "clip"))
    assert nn <= ls and clip > 1.3 * nn


# ----------------------------------------------------------------------------- 2-D

def test_two_dimensional_dawa_runs_on_the_hilbert_line():
    rng = np.random.default_rng(6)
    x = rng.poisson(2, (12, 10))
    x[:6, :5] += 30
    rects = np.array([[0, 12, 0, 10], [2, 7, 1, 9], [5, 6, 5, 6], [0, 3, 4, 10]])
    rel = dawa(x, loss=EPS1, workload=rects, rng=np.random.default_rng(1))
    assert rel.estimates.shape == x.shape and rel.variances.shape == x.shape
    order = hilbert_order(x.shape)
    np.testing.assert_array_equal(rel.order, order)
    line = rel.estimates.ravel()[order]
    sizes = np.diff(rel.edges)
    np.testing.assert_allclose(line, np.repeat(rel.bucket_estimates / sizes, sizes))
    a, y, var = dense_strategy(rel)
    cov = np.linalg.inv(a.T @ (a / var[:, None]))
    wq = bucket_weights(rel, rects)
    np.testing.assert_allclose(rel.rectangle_variance(rects), np.einsum("qi,ij,qj->q", wq, cov, wq), rtol=1e-9)
    direct = [rel.estimates[r0:r1, c0:c1].sum() for r0, r1, c0, c1 in rects]
    np.testing.assert_allclose(rel.rectangle_estimate(rects), direct)


def test_inner_and_outer_whole_bucket_queries_bracket_the_query():
    rng = np.random.default_rng(8)
    x = rng.integers(0, 9, 100)
    rel = dawa(x, loss=EPS1, rng=rng)
    ranges = np.array([[0, 100], [7, 55], [13, 14], [rel.edges[1], rel.edges[-2]]])
    io = rel.inner_outer(ranges)
    aligned = rel.aligned(ranges)
    assert aligned[0] and aligned[3]
    edges = set(rel.edges.tolist())
    for i, (a, b) in enumerate(ranges):
        inner_a = min(e for e in edges if e >= a)
        inner_b = max(e for e in edges if e <= b)
        outer_a = max(e for e in edges if e <= a)
        outer_b = min(e for e in edges if e >= b)
        inner = rel.estimates[inner_a:inner_b].sum() if inner_a < inner_b else 0.0
        assert io["inner_estimate"][i] == pytest.approx(inner)
        assert io["outer_estimate"][i] == pytest.approx(rel.estimates[outer_a:outer_b].sum())
        assert x[inner_a:max(inner_a, inner_b)].sum() <= x[a:b].sum() <= x[outer_a:outer_b].sum()
        if aligned[i]:
            assert io["inner_variance"][i] == pytest.approx(rel.range_variance([a], [b])[0])
    assert io["outer_variance"][0] == pytest.approx(rel.range_variance([0], [100])[0])


@pytest.mark.parametrize("rho,ratio", [(Fraction(1, 8), Fraction(1, 4)), (Fraction(1, 10), Fraction(1, 3))])
def test_zcdp_partition_is_pure_and_the_charges_add_up_to_rho_exactly(rho, ratio):
    # Stage 1 stays pure at epsilon_1 (charged epsilon_1**2 / 2 <= ratio * rho, within 2**-40 of it);
    # stage 2 takes exactly the rest of rho, split over the levels by the L2 shares w_l**2 / sum w**2.
    x = np.random.default_rng(9).integers(0, 20, 64)
    rel = dawa(x, loss=ZCDP(rho), ratio=ratio, rng=np.random.default_rng(0))
    eps1 = rel.partition_loss
    assert isinstance(eps1, PureDP) and all(isinstance(p, PureDP) for p in rel.partition.level_losses)
    assert sum(rel.partition.level_losses, eps1.zero()) == eps1
    assert eps1.epsilon ** 2 / 2 <= ratio * rho < (eps1.epsilon + Fraction(1, 2 ** 40)) ** 2 / 2
    assert eps1.charged_as("zcdp") + rel.strategy_loss == ZCDP(rho)
    assert sum(rel.answers.level_losses, ZCDP(Fraction(0))) == rel.strategy_loss
    assert sum(rel.strategy.shares) == 1
    assert rel.plan.bucket_cost == pytest.approx(np.sqrt(2 / np.pi / (2 * float(rel.strategy_loss.rho))), rel=1e-3)
    assert np.all(np.isfinite(rel.estimates))
    assert partition_epsilon(ZCDP(Fraction(1, 2)), Fraction(1, 4)) == PureDP(Fraction(1, 2))   # exact when rational


def test_zcdp_strategy_is_chosen_at_unit_l2_sensitivity():
    # Weights w at unit L2 norm and rho shares w**2: level l's noise variance is 1 / (2 rho w_l**2), the
    # weighted strategy's noise with column norm sqrt(sum w**2) = 1. Its workload error must not exceed
    # that of the pure shares (w / sum w) used under rho, which are tuned for the wrong sensitivity.
    query, lo, hi, m = workload_runs("prefix", (256,))
    br = dr.bucket_runs(query, lo, hi, np.arange(0, 257, 4), m)
    gauss, lap = ds.choose_strategy(br, measure="zcdp"), ds.choose_strategy(br)
    sub = dr.variance_plan(gauss.layout, dr.subsample_runs(br, ds.EVAL_QUERIES))

    def zcdp_error(shares):
        return ds.workload_error(gauss.layout, sub, np.sqrt(np.array([float(s) for s in shares])))
    assert zcdp_error(gauss.shares) <= zcdp_error(lap.shares) * (1 + 1e-9)
    assert gauss.errors["chosen"] == pytest.approx(zcdp_error(gauss.shares))
    assert gauss.shares != lap.shares


# ----------------------------------------------------------------------------- public inputs

@pytest.mark.parametrize("kwargs,match", [
    ({"ratio": 0.0}, "ratio"), ({"ratio": 1.0}, "ratio"), ({"ratio": float("nan")}, "ratio"),
    ({"workload": "ranges"}, "workload"), ({"workload": np.array([[0, 5], [3, 3]])}, "Query 1"),
    ({"workload": np.array([[0, 65]])}, "inside the domain"), ({"workload": np.zeros((2, 3), int)}, "shape"),
])
def test_bad_public_inputs_raise_parameter_error(kwargs, match):
    with pytest.raises(ParameterError, match=match):
        dawa(np.zeros(64, dtype=np.int64), loss=EPS1, **kwargs)


def test_a_plan_is_public_and_gives_the_same_release():
    x = np.random.default_rng(13).integers(0, 30, (8, 12))
    plan = plan_dawa(x.shape, loss=EPS1, workload=np.array([[0, 8, 0, 12], [2, 5, 3, 9]]))
    assert plan.ratio == DEFAULT_RATIO_2D and plan.n_queries == 2 and plan.size == 96
    a = dawa(x, plan, rng=np.random.default_rng(4))
    b = dawa(x, loss=EPS1, workload=np.array([[0, 8, 0, 12], [2, 5, 3, 9]]), rng=np.random.default_rng(4))
    np.testing.assert_array_equal(a.estimates, b.estimates)
    assert a.plan is plan and a.loss == EPS1
    with pytest.raises(ParameterError, match="plan was made for"):
        dawa(x.T, plan)
    with pytest.raises(TypeError, match="plan or a loss"):
        dawa(x)


def test_bad_shapes_and_too_small_loss_raise_before_reading_data():
    with pytest.raises(ParameterError, match="1-D or 2-D"):
        dawa(np.zeros((2, 2, 2), dtype=np.int64), loss=EPS1)
    with pytest.raises(ParameterError, match="too small"):
        dawa(np.zeros(16, dtype=np.int64), loss=PureDP(Fraction(1, 2 ** 45)))


# ----------------------------------------------------------------------------- privacy (assert_dp)

D1 = np.array([6, 6, 5, 7, 0, 0, 1, 0])
D1_NEIGHBOUR = D1 + np.eye(8, dtype=np.int64)[3]


@pytest.mark.slow  # long statistical check (default-run time, issue 29 item 10); runs in CI's slow step (tests/test_privacy_mechanisms.py keeps dawa by default)
def test_dawa_1d_passes_assert_dp():
    report = assert_dp(lambda c, rng: dawa(c, loss=EPS1, rng=rng).estimates, D1, D1_NEIGHBOUR,
                       epsilon=1.0, trials=QUICK_TRIALS * 3, rng=1)
    assert report.passed


@pytest.mark.slow  # long statistical check (default-run time, issue 29 item 10); runs in CI's slow step (tests/test_privacy_mechanisms.py keeps dawa by default)
def test_dawa_2d_passes_assert_dp():
    d2 = np.array([[4, 5, 0, 0], [4, 4, 0, 1]])
    neighbour = d2.copy()
    neighbour[1, 1] += 1
    report = assert_dp(lambda c, rng: dawa(c, loss=EPS1, workload="identity", rng=rng).estimates.ravel(),
                       d2, neighbour, epsilon=1.0, trials=QUICK_TRIALS * 3, rng=2)
    assert report.passed


def _dawa_partition_on_true_costs(counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Broken DAWA: buckets chosen from the TRUE deviations (the structure leaks the data)."""
    x = np.asarray(counts, dtype=np.int64)
    edges = exact_partition(x, 2.0)
    sizes = np.diff(edges)
    noisy = np.add.reduceat(x, edges[:-1]) + rng.laplace(0, 2.0, sizes.size)
    return np.repeat(noisy / sizes, sizes)


def test_partition_on_true_costs_is_caught():
    x = np.array([3, 3, 3, 3])
    y = np.array([3, 3, 3, 6])
    report = assert_dp(_dawa_partition_on_true_costs, x, y, epsilon=1.0, trials=1000, rng=3, raises=False)
    assert not report.passed


@pytest.mark.slow
@pytest.mark.parametrize("ratio", [0.25, 0.5] if SLOW_FULL else [0.25])   # 0.25: the paper's split
@pytest.mark.parametrize("pair", ["step", "spike", "2d"])
def test_dawa_passes_assert_dp_more_cases(ratio, pair):
    if pair == "step":
        a = np.r_[np.full(8, 4), np.zeros(8, dtype=np.int64)]
        b = a + np.eye(16, dtype=np.int64)[8]
        mech = lambda c, rng: dawa(c, loss=EPS1, ratio=ratio, rng=rng).estimates  # noqa: E731
    elif pair == "spike":
        a = np.r_[np.zeros(7, dtype=np.int64), 9]
        b = a - np.eye(8, dtype=np.int64)[7]
        mech = lambda c, rng: dawa(c, loss=PureDP(Fraction(1, 2)), ratio=ratio, rng=rng).estimates  # noqa: E731
    else:
        a = np.zeros((4, 4), dtype=np.int64)
        a[:2, :2] = 6
        b = a.copy()
        b[2, 1] += 1
        mech = lambda c, rng: dawa(c, loss=EPS1, ratio=ratio, rng=rng).estimates.ravel()  # noqa: E731
    eps = 0.5 if pair == "spike" else 1.0
    assert assert_dp(mech, a, b, epsilon=eps, trials=6000 if SLOW_FULL else 1000, rng=11).passed


def _per_interval_calibration(counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Broken stage 1 (the research code's calibration, epsilon_1 = 1, b2 = 1): power-of-two intervals at
    EVERY start, each with Laplace noise for one interval's sensitivity; returns the bucket starts as 0/1."""
    x = np.asarray(counts, dtype=float)
    n = x.size
    best, step = np.zeros(n + 1), np.zeros(n + 1, dtype=np.int64)
    cost = {}
    for length in (1 << k for k in range(n.bit_length()) if (1 << k) <= n):
        for start in range(n - length + 1):
            seg = x[start:start + length]
            noise = rng.laplace(0.0, (2 - 1 / length - 1 / n)) if length > 1 else 0.0
            cost[(start, length)] = max(np.abs(seg - seg.mean()).sum() + noise, 0.0) + 1.0
    for e in range(1, n + 1):
        options = [(best[e - length] + cost[(e - length, length)], -length) for (s, length) in cost if s + length == e]
        best[e], neg = min(options)
        step[e] = -neg
    starts, e = np.zeros(n), n
    while e > 0:
        e -= step[e]
        starts[e] = 1
    return starts


@pytest.mark.slow
@pytest.mark.skipif(not SLOW_FULL, reason="an audit of the research code's calibration (20,000 looped runs a "
                                         "side, minutes): PANDAS_DP_SLOW_DEPTH=full")
def test_per_interval_calibration_is_caught_and_ours_passes():
    """Why candidates are dyadic-aligned and noised jointly: the research calibration leaks.

    assert_dp certifies (99.9% confidence) a privacy loss above 1 for a claimed epsilon_1 = 1;
    our stage 1 with the same epsilon_1 and bucket cost passes on the same pair.
    """
    x = np.r_[np.zeros(8, dtype=np.int64), np.full(8, 2)]
    y = x + np.eye(16, dtype=np.int64)[8]
    report = assert_dp(_per_interval_calibration, x, y, epsilon=1.0, trials=20_000, rng=5, raises=False)
    assert not report.passed and report.epsilon_lower_bound > 1.0

    def ours(c, rng):
        v = np.zeros(16)
        v[private_partition(c, loss=EPS1, bucket_cost=1.0, rng=rng).edges[:-1]] = 1
        return v
    assert assert_dp(ours, x, y, epsilon=1.0, trials=20_000, rng=5).passed


def test_inner_outer_on_rectangles_are_the_whole_buckets_inside_and_touching():
    rng = np.random.default_rng(12)
    x = rng.poisson(1, (16, 16))
    x[4:12, 2:9] += 20
    rects = np.array([[0, 16, 0, 16], [3, 11, 1, 10], [7, 8, 7, 8], [0, 5, 8, 16]])
    rel = dawa(x, loss=EPS1, workload=rects, rng=rng)
    io = rel.inner_outer(rects)
    order = rel.order
    pos = np.empty(order.size, dtype=np.int64)
    pos[order] = np.arange(order.size)
    bucket = np.searchsorted(rel.edges, np.arange(order.size), side="right") - 1
    line_true = x.ravel()[order]
    line_est = rel.estimates.ravel()[order]
    for q, (r0, r1, c0, c1) in enumerate(rects):
        inside = np.zeros(x.shape, dtype=bool)
        inside[r0:r1, c0:c1] = True
        on_line = inside.ravel()[order]
        touched = np.unique(bucket[on_line])
        whole = [b for b in touched if on_line[rel.edges[b]:rel.edges[b + 1]].all()]
        sel_in, sel_out = np.isin(bucket, whole), np.isin(bucket, touched)
        assert io["inner_estimate"][q] == pytest.approx(line_est[sel_in].sum())
        assert io["outer_estimate"][q] == pytest.approx(line_est[sel_out].sum())
        assert line_true[sel_in].sum() <= x[r0:r1, c0:c1].sum() <= line_true[sel_out].sum()
        assert rel.aligned(rects)[q] == (len(whole) == len(touched))
