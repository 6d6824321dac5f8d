"""Tests of UGrid and AGrid (Qardaji, Yang, Li, ICDE 2013)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pandas_dp.algorithms.grids import (DEFAULT_ALPHA, DEFAULT_C, DEFAULT_TOTAL_SHARE, agrid, agrid_first_size,
                                        agrid_second_size, axis_edges, equivalent_epsilon, plan_agrid, plan_ugrid,
                                        size_epsilon, ugrid, ugrid_size)
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import ZCDP, PureDP
from pandas_dp.testing import assert_dp

EPS1 = PureDP(Fraction(1))


# ----------------------------------------------------------------------------- sizes (the paper's formulas)

def test_paper_constants():
    assert DEFAULT_C == 10 and DEFAULT_ALPHA == Fraction(1, 2) and DEFAULT_TOTAL_SHARE == Fraction(1, 20)


@pytest.mark.parametrize("total,eps,want", [
    (1_000_000, 1.0, 317),     # sqrt(1e6 * 1 / 10) = 316.23 -> 317
    (19_435, 0.1, 14),         # sqrt(194.35) = 13.94 -> 14
    (6_442_863, 0.1, 254),     # sqrt(64428.63) = 253.83 -> 254
    (0, 1.0, 1), (-25, 1.0, 1),
])
def test_ugrid_size_is_sqrt_n_eps_over_c(total, eps, want):
    assert ugrid_size(total, eps) == want
    assert ugrid_size(total, eps) == max(1, math.ceil(math.sqrt(max(total, 0) * eps / 10)))


@pytest.mark.parametrize("total,eps,want", [
    (1_000_000, 1.0, 80),      # sqrt(1e5) / 4 = 79.06 -> 80
    (6_442_863, 1.0, 201),     # sqrt(644286.3) / 4 = 200.67 -> 201
    (32_561, 0.1, 10),         # sqrt(325.6) / 4 = 4.51 -> 5 -> at least 10
    (464_041, 0.1, 18),        # sqrt(4640.41) / 4 = 17.03 -> 18
])
def test_agrid_first_size(total, eps, want):
    assert agrid_first_size(total, eps) == want


def test_agrid_second_size_uses_half_c_and_the_noisy_count():
    # m2 = ceil(sqrt(N' (1 - alpha) eps / (c / 2))): N' = 1000, (1 - 1/2) * 1 = 0.5, c2 = 5 -> 10
    got = agrid_second_size(np.array([1000, 1001, 400, 9, 0, -7]), 0.5, 5.0)
    assert got.tolist() == [10, 11, 7, 1, 1, 1]


def test_equivalent_epsilon_recovers_pure_epsilon():
    for e in (Fraction(1, 100), Fraction(1, 10), Fraction(1), Fraction(5, 2)):
        assert equivalent_epsilon(PureDP(e).noise().variance()) == pytest.approx(float(e), rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 300), st.integers(1, 400))
def test_axis_edges_cut_atoms_into_near_equal_parts(n, parts):
    e = axis_edges(n, parts)
    sizes = np.diff(e)
    assert e[0] == 0 and e[-1] == n and sizes.size == min(parts, n)
    assert sizes.min() >= 1 and sizes.max() - sizes.min() <= 1


@pytest.mark.parametrize("eps", [Fraction(1, 10), Fraction(1)])
def test_grid_sizes_follow_the_formulas_with_a_public_total(eps):
    x = np.random.default_rng(0).poisson(1, (256, 256))
    total = 400_000
    u = ugrid(x, loss=PureDP(eps), expected_total=total, rng=np.random.default_rng(1))
    assert u.grid_shape == (min(256, ugrid_size(total, float(eps))),) * 2
    a = agrid(x, loss=PureDP(eps), expected_total=total, rng=np.random.default_rng(1))
    m1 = agrid_first_size(total, float(eps))
    assert a.grid_shape == (m1, m1)
    m2 = agrid_second_size(a.cell_counts, float(eps) / 2, 5.0)
    heights, widths = np.diff(a.row_edges), np.diff(a.col_edges)
    np.testing.assert_array_equal(a.sub_shape[..., 0], np.minimum(m2, heights[:, None]))
    np.testing.assert_array_equal(a.sub_shape[..., 1], np.minimum(m2, widths[None, :]))
    assert not u.total_is_noisy and u.total_loss is None and u.total == total


# ----------------------------------------------------------------------------- inference and variances

def agrid_design(rel) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Dense two-level design over the sub-cells: cell sums (variance s1) stacked on the identity (s2)."""
    n_sub = (rel.sub_shape[..., 0] * rel.sub_shape[..., 1]).ravel()
    cell_of = np.repeat(np.arange(n_sub.size), n_sub)
    top = (cell_of[None, :] == np.arange(n_sub.size)[:, None]).astype(float)
    a = np.vstack([top, np.eye(cell_of.size)])
    y = np.r_[rel.cell_counts.ravel(), rel.sub_counts].astype(float)
    s1, s2 = rel.noise_variances
    var = np.r_[np.full(n_sub.size, s1), np.full(cell_of.size, s2)]
    return a, y, var, cell_of


def sub_cell_boxes(rel) -> list[tuple[int, int, int, int]]:
    """Atom boxes of the sub-cells, in the release's order."""
    boxes = []
    for i in range(rel.grid_shape[0]):
        for j in range(rel.grid_shape[1]):
            r0, r1, c0, c1 = rel.row_edges[i], rel.row_edges[i + 1], rel.col_edges[j], rel.col_edges[j + 1]
            er = axis_edges(r1 - r0, rel.sub_shape[i, j, 0]) + r0
            ec = axis_edges(c1 - c0, rel.sub_shape[i, j, 1]) + c0
            boxes += [(er[a], er[a + 1], ec[b], ec[b + 1]) for a in range(er.size - 1) for b in range(ec.size - 1)]
    return boxes


def fraction_rows(rel, rects) -> np.ndarray:
    boxes = np.array(sub_cell_boxes(rel))
    out = np.zeros((len(rects), len(boxes)))
    for q, (r0, r1, c0, c1) in enumerate(rects):
        ov_r = np.clip(np.minimum(r1, boxes[:, 1]) - np.maximum(r0, boxes[:, 0]), 0, None)
        ov_c = np.clip(np.minimum(c1, boxes[:, 3]) - np.maximum(c0, boxes[:, 2]), 0, None)
        out[q] = ov_r * ov_c / ((boxes[:, 1] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 2]))
    return out


RECTS = np.array([[0, 30, 0, 30], [3, 17, 2, 29], [5, 6, 5, 6], [0, 1, 0, 30], [12, 30, 7, 8], [8, 22, 9, 21]])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agrid_inference_equals_dense_weighted_least_squares(seed):
    rng = np.random.default_rng(seed)
    x = rng.poisson(1, (30, 30))
    x[4:14, 6:20] += rng.poisson(25, (10, 14))
    rel = agrid(x, loss=EPS1, expected_total=5_000, rng=rng)
    assert rel.sub_shape.max() > 1                     # a real second level
    a, y, var, cell_of = agrid_design(rel)
    w = 1 / np.sqrt(var)
    xhat, *_ = np.linalg.lstsq(a * w[:, None], y * w, rcond=None)
    np.testing.assert_allclose(rel.sub_estimates, xhat, atol=1e-8)
    cov = np.linalg.inv(a.T @ (a / var[:, None]))
    np.testing.assert_allclose(rel.sub_variances, np.diag(cov), rtol=1e-9)
    np.testing.assert_allclose(rel.cell_estimates.ravel(), np.bincount(cell_of, weights=xhat), atol=1e-8)
    f = fraction_rows(rel, RECTS)
    np.testing.assert_allclose(rel.rectangle_variance(RECTS), np.einsum("qi,ij,qj->q", f, cov, f), rtol=1e-9)
    direct = [rel.estimates[r0:r1, c0:c1].sum() for r0, r1, c0, c1 in RECTS]
    np.testing.assert_allclose(rel.rectangle_estimate(RECTS), direct, atol=1e-8)
    np.testing.assert_allclose(rel.rectangle_estimate(RECTS), f @ xhat, atol=1e-8)
    # every cell equals the sum of its sub-cells after inference, and the atoms add up to the cells
    np.testing.assert_allclose(np.add.reduceat(np.add.reduceat(rel.estimates, rel.row_edges[:-1], axis=0),
                                               rel.col_edges[:-1], axis=1), rel.cell_estimates, atol=1e-8)


def test_ugrid_variance_is_sum_of_squared_cell_fractions():
    rng = np.random.default_rng(3)
    x = rng.poisson(4, (30, 30))
    rel = ugrid(x, loss=EPS1, expected_total=900, rng=rng)
    s = rel.noise_variances[0]
    f = fraction_rows(rel, RECTS)
    np.testing.assert_allclose(rel.rectangle_variance(RECTS), s * (f ** 2).sum(axis=1), rtol=1e-9)
    direct = [rel.estimates[r0:r1, c0:c1].sum() for r0, r1, c0, c1 in RECTS]
    np.testing.assert_allclose(rel.rectangle_estimate(RECTS), direct, atol=1e-8)
    np.testing.assert_allclose(rel.variances.sum(), s * np.sum(1.0 / np.outer(np.diff(rel.row_edges),
                                                                                np.diff(rel.col_edges))), rtol=1e-9)


@pytest.mark.parametrize("method", [ugrid, agrid])
def test_inner_and_outer_cells_bracket_the_rectangle(method):
    rng = np.random.default_rng(4)
    x = rng.poisson(2, (30, 30))
    x[10:20, 10:20] += 40
    rel = method(x, loss=EPS1, expected_total=8_000, rng=rng)
    io = rel.inner_outer(RECTS)
    aligned = rel.aligned(RECTS)
    boxes = np.array(sub_cell_boxes(rel)) if method is agrid else np.array(
        [(rel.row_edges[i], rel.row_edges[i + 1], rel.col_edges[j], rel.col_edges[j + 1])
         for i in range(rel.grid_shape[0]) for j in range(rel.grid_shape[1])])
    for q, (r0, r1, c0, c1) in enumerate(RECTS):
        inside = (boxes[:, 0] >= r0) & (boxes[:, 1] <= r1) & (boxes[:, 2] >= c0) & (boxes[:, 3] <= c1)
        touch = (boxes[:, 0] < r1) & (boxes[:, 1] > r0) & (boxes[:, 2] < c1) & (boxes[:, 3] > c0)
        est = lambda sel: sum(rel.estimates[a:b, c:d].sum() for a, b, c, d in boxes[sel])  # noqa: E731
        true = lambda sel: sum(x[a:b, c:d].sum() for a, b, c, d in boxes[sel])  # noqa: E731
        assert io["inner_estimate"][q] == pytest.approx(est(inside), abs=1e-8)
        assert io["outer_estimate"][q] == pytest.approx(est(touch), abs=1e-8)
        assert true(inside) <= x[r0:r1, c0:c1].sum() <= true(touch)
    aligned = rel.aligned(RECTS)
    whole = np.array([[rel.row_edges[1], rel.row_edges[3], 0, 30]])
    assert rel.aligned(whole)[0]
    assert rel.rectangle_variance(whole)[0] == pytest.approx(rel.inner_outer(whole)["inner_variance"][0])


def test_structure_depends_only_on_noisy_first_level_values():
    """Moving rows inside a first-level cell keeps every noisy cell count, hence every sub-grid size."""
    rng = np.random.default_rng(5)
    x = rng.poisson(3, (40, 40))
    x[0:20, 0:20] += 10
    rel = agrid(x, loss=EPS1, expected_total=20_000, rng=np.random.default_rng(9))
    y = x.copy()
    r0, r1, c0, c1 = rel.row_edges[0], rel.row_edges[1], rel.col_edges[0], rel.col_edges[1]
    block = y[r0:r1, c0:c1].ravel()
    y[r0:r1, c0:c1] = block[::-1].reshape(r1 - r0, c1 - c0)      # same cell total, different atoms
    assert not np.array_equal(x, y)
    rel2 = agrid(y, loss=EPS1, expected_total=20_000, rng=np.random.default_rng(9))
    np.testing.assert_array_equal(rel.cell_counts, rel2.cell_counts)
    np.testing.assert_array_equal(rel.sub_shape, rel2.sub_shape)
    # with a noisy total, moving rows between cells keeps the total and hence the first-level grid
    z = np.roll(x, 7, axis=1)
    a = agrid(x, loss=EPS1, rng=np.random.default_rng(2))
    b = agrid(z, loss=EPS1, rng=np.random.default_rng(2))
    assert a.total == b.total and a.grid_shape == b.grid_shape


@pytest.mark.parametrize("method", [ugrid, agrid])
@pytest.mark.parametrize("expected_total", [None, 1_000])
def test_losses_add_up_to_the_whole_exactly(method, expected_total):
    loss = PureDP(Fraction(3, 10))
    rel = method(np.ones((20, 20), dtype=np.int64), loss=loss, expected_total=expected_total,
                 rng=np.random.default_rng(0))
    assert sum(rel.phase_losses, loss.zero()) == loss
    if expected_total is None:
        assert rel.total_loss == loss.part(DEFAULT_TOTAL_SHARE) and rel.total_is_noisy
    if method is agrid:
        assert rel.level_losses[0] == rel.level_losses[1]


@pytest.mark.parametrize("kwargs,match", [
    ({"total_share": 0}, "total_share"), ({"total_share": 1.5}, "total_share"),
    ({"expected_total": -1}, "expected_total"), ({"expected_total": float("inf")}, "expected_total"),
    ({"c": 0}, "'c'"),
])
@pytest.mark.parametrize("method", [ugrid, agrid])
def test_bad_public_inputs_raise(method, kwargs, match):
    with pytest.raises(ParameterError, match=match):
        method(np.ones((8, 8), dtype=np.int64), loss=EPS1, **kwargs)


@pytest.mark.parametrize("method,planner", [(ugrid, plan_ugrid), (agrid, plan_agrid)])
def test_a_plan_is_public_and_gives_the_same_release(method, planner):
    x = np.random.default_rng(14).poisson(3, (24, 20))
    plan = planner(x.shape, loss=EPS1)
    assert plan.total_loss == EPS1.part(DEFAULT_TOTAL_SHARE) and plan.shape == (24, 20)
    a = method(x, plan, rng=np.random.default_rng(5))
    b = method(x, loss=EPS1, rng=np.random.default_rng(5))
    np.testing.assert_array_equal(a.estimates, b.estimates)
    assert a.plan is plan
    with pytest.raises(ParameterError, match="plan was made for"):
        method(x.T, plan)
    with pytest.raises(TypeError, match="plan or a loss"):
        method(x)


def test_bad_alpha_shape_and_rectangles_raise():
    with pytest.raises(ParameterError, match="alpha"):
        agrid(np.ones((8, 8), dtype=np.int64), loss=EPS1, alpha=1.0)
    with pytest.raises(ParameterError, match="2-D grid"):
        ugrid(np.ones(8, dtype=np.int64), loss=EPS1)
    rel = ugrid(np.ones((8, 8), dtype=np.int64), loss=EPS1, expected_total=64, rng=np.random.default_rng(0))
    with pytest.raises(ParameterError, match="Rectangle 0"):
        rel.rectangle_variance(np.array([[0, 9, 0, 2]]))


# ----------------------------------------------------------------------------- privacy

@pytest.mark.slow  # long statistical check (default-run time, issue 29 item 10); runs in CI's slow step (tests/test_privacy_mechanisms.py keeps agrid by default)
def test_agrid_passes_assert_dp():
    """12 x 12 atoms: 10 x 10 first-level cells of 1-2 atoms; a count near 10 toggles the second level."""
    x = np.zeros((12, 12), dtype=np.int64)
    x[0:2, 0:2] = [[3, 3], [3, 2]]
    y = x.copy()
    y[1, 1] += 1
    mech = lambda c, rng: agrid(c, loss=EPS1, expected_total=50, rng=rng).estimates.ravel()  # noqa: E731
    assert assert_dp(mech, x, y, epsilon=1.0, trials=1500, rng=4).passed


@pytest.mark.slow
@pytest.mark.parametrize("case", ["noisy-total", "second-level", "ugrid"])
def test_grids_pass_assert_dp_more_cases(case):
    x = np.zeros((12, 12), dtype=np.int64)
    x[0:2, 0:2] = 9
    y = x.copy()
    y[0, 0] -= 1
    if case == "noisy-total":
        mech = lambda c, rng: agrid(c, loss=EPS1, rng=rng).estimates.ravel()  # noqa: E731
    elif case == "second-level":
        mech = lambda c, rng: agrid(c, loss=PureDP(Fraction(1, 2)), expected_total=40,  # noqa: E731
                                    rng=rng).estimates.ravel()
    else:
        mech = lambda c, rng: ugrid(c, loss=EPS1, rng=rng).estimates.ravel()  # noqa: E731
    eps = 0.5 if case == "second-level" else 1.0
    assert assert_dp(mech, x, y, epsilon=eps, trials=8000, rng=5).passed


# ----------------------------------------------------------------------------- under zCDP

def test_zcdp_grids_use_gaussian_levels_and_sigma2_in_place_of_2_over_eps2():
    # Every level (and the noisy total) is discrete Gaussian at an exact part of rho, the parts add up
    # to rho, alpha = 1/2 gives both levels the same variance (as the paper's equal split of epsilon),
    # and the size rules read epsilon = sqrt(2) / sigma: m = ceil(sqrt(N sqrt(2) / (sigma c))).
    rho = ZCDP(Fraction(1, 8))
    up, ap = plan_ugrid((64, 64), loss=rho), plan_agrid((64, 64), loss=rho)
    for plan in (up, ap):
        assert sum(plan.level_losses, plan.total_loss) == rho and plan.total_loss == rho.part(DEFAULT_TOTAL_SHARE)
        assert {n.name for n in (plan.total_noise, *plan.level_noise)} == {"discrete Gaussian"}
    s1, s2 = (n.variance() for n in ap.level_noise)
    assert s1 == s2 == pytest.approx(1 / (2 * float(rho.amount) * 19 / 40), rel=1e-9)
    assert ap.epsilon_second == pytest.approx(math.sqrt(2 / s2)) and up.epsilon_used == pytest.approx(
        math.sqrt(2 / up.level_noise[0].variance()))
    sigma = math.sqrt(up.level_noise[0].variance())
    assert ugrid_size(1e6, up.epsilon_used) == math.ceil(math.sqrt(1e6 * math.sqrt(2) / (sigma * DEFAULT_C)))
    assert size_epsilon(PureDP(Fraction(1, 3)).noise()) == pytest.approx(1 / 3, rel=1e-12)   # pure: its own epsilon
    x = np.random.default_rng(0).poisson(3, (64, 64))
    rel = agrid(x, ap, rng=np.random.default_rng(1))
    assert rel.cell_variances.min() < s1 and np.all(np.isfinite(rel.estimates))       # GLS with Gaussian variances
