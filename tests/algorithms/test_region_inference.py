"""GLS across a region tree: equal to a dense weighted least-squares solve, exact variances."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import null_space

from pandas_dp.algorithms.controlled_rounding import tree_parents
from pandas_dp.algorithms.geography.inference import region_inference
from pandas_dp.algorithms.geography.variance import region_variances
from pandas_dp.algorithms.geography.layout import region_layout
from pandas_dp.algorithms.geography.nonnegative import nonnegative_regions, project_groups
from pandas_dp.algorithms.tree.inference import constrained_inference
from pandas_dp.algorithms.tree.layout import tree_layout
from pandas_dp.errors import ParameterError


def incidence(parents: list, n_regions: list) -> list[np.ndarray]:
    """Per level, the (regions x leaves) 0/1 matrix, built by brute force from the parent codes."""
    top = len(n_regions) - 1
    mats = [np.eye(n_regions[top])]
    for lvl in range(top, 0, -1):
        up = np.zeros((n_regions[lvl - 1], n_regions[lvl]))
        up[parents[lvl], np.arange(n_regions[lvl])] = 1.0
        mats.append(up @ mats[-1])
    return mats[::-1]


def dense_gls(mats: list, y: list, sigma2: list) -> tuple[np.ndarray, np.ndarray]:
    """Leaf GLS estimate and covariance for one cell: weighted LS on the measured levels,
    exact levels as equality constraints (solved in the null space of the constraints)."""
    n = mats[-1].shape[1]
    noisy = [k for k, s in enumerate(sigma2) if np.isfinite(s) and s > 0]
    exact = [k for k, s in enumerate(sigma2) if s == 0]
    if exact:
        c = np.vstack([mats[k] for k in exact])
        d = np.concatenate([y[k] for k in exact])
        x_p = np.linalg.lstsq(c, d, rcond=None)[0]
        basis = null_space(c)
    else:
        x_p, basis = np.zeros(n), np.eye(n)
    if basis.shape[1] == 0:
        return x_p, np.zeros((n, n))
    a = np.vstack([mats[k] for k in noisy]) @ basis
    w = np.concatenate([np.full(mats[k].shape[0], 1.0 / sigma2[k]) for k in noisy])
    r = np.concatenate([y[k] - mats[k] @ x_p for k in noisy])
    h = a.T @ (w[:, None] * a)
    u = np.linalg.solve(h, a.T @ (w * r))
    return x_p + basis @ u, basis @ np.linalg.inv(h) @ basis.T


@st.composite
def region_cases(draw, allow_exact: bool = True):
    """A random tree (any fan-out, shuffled codes, sometimes a forest), cells, level variances
    (some levels unmeasured or exact, the finest always measured or exact) and noisy tables."""
    levels = draw(st.integers(1, 4))
    sizes = [draw(st.integers(1, 2))]
    parents: list = [None]
    for _ in range(1, levels):
        fan = draw(st.lists(st.integers(1, 4), min_size=sizes[-1], max_size=sizes[-1]))
        par = np.repeat(np.arange(sizes[-1]), fan)
        perm = np.random.default_rng(draw(st.integers(0, 2**31))).permutation(par.size)
        parents.append(par[perm])
        sizes.append(par.size)
    cells = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    kinds = ["noisy", "unmeasured"] + (["exact"] if allow_exact else [])
    sigma2 = []
    for lvl in range(levels):
        kind = draw(st.sampled_from(kinds if lvl < levels - 1 else ["noisy"] + kinds[2:]))
        sigma2.append({"noisy": float(rng.uniform(0.3, 5.0)), "unmeasured": np.inf, "exact": 0.0}[kind])
    mats = incidence(parents, sizes)
    truth_leaf = rng.integers(0, 20, size=(sizes[-1], cells)).astype(float)
    noisy = []
    for lvl, s2 in enumerate(sigma2):
        truth = mats[lvl] @ truth_leaf
        noisy.append(None if np.isinf(s2) else truth + rng.normal(0.0, np.sqrt(s2), truth.shape))
    return parents, sizes, noisy, sigma2


@settings(max_examples=120, deadline=None)
@given(region_cases())
def test_gls_equals_dense_least_squares(case) -> None:
    parents, sizes, noisy, sigma2 = case
    inf = region_inference(noisy, parents, sigma2)
    mats = incidence(parents, sizes)
    cells = noisy[-1].shape[1]
    for j in range(cells):
        y = [None if t is None else t[:, j] for t in noisy]
        x, cov = dense_gls(mats, y, sigma2)
        for lvl in range(len(sizes)):
            np.testing.assert_allclose(inf.estimates[lvl][:, j], mats[lvl] @ x, rtol=1e-8, atol=1e-8)
    for lvl in range(len(sizes)):
        # The variances do not depend on the cell: diag(M (A'WA)^-1 M') per level.
        node_var = np.einsum("ij,jk,ik->i", mats[lvl], cov, mats[lvl])
        np.testing.assert_allclose(inf.variances[lvl], node_var, rtol=1e-8, atol=1e-10)
        if lvl > 0:   # consistency in every cell
            np.testing.assert_allclose(inf.layout.aggregate(inf.estimates[lvl], lvl),
                                       inf.estimates[lvl - 1], rtol=1e-9, atol=1e-8)


@settings(max_examples=80, deadline=None)
@given(region_cases(), st.integers(0, 2**31))
def test_sum_variance_equals_dense_quadratic_form(case, seed) -> None:
    parents, sizes, noisy, sigma2 = case
    rv = region_variances(parents, sigma2, n_regions=sizes)
    mats = incidence(parents, sizes)
    _, cov = dense_gls(mats, [None if t is None else t[:, 0] for t in noisy], sigma2)
    rng = np.random.default_rng(seed)
    lvl = int(rng.integers(0, len(sizes)))
    # Arbitrary weights and 0/1 selections (sums of sibling or unrelated regions), several at once.
    w = np.column_stack([rng.normal(size=sizes[lvl]), rng.integers(0, 2, size=sizes[lvl])])
    cov_l = mats[lvl] @ cov @ mats[lvl].T
    expect = np.einsum("iq,ij,jq->q", w, cov_l, w)
    np.testing.assert_allclose(rv.sum_variance(lvl, w), expect, rtol=1e-8, atol=1e-10)
    assert rv.sum_variance(lvl, w[:, 0]) == pytest.approx(expect[0], rel=1e-8, abs=1e-10)
    # Cells are independent with equal variances: a sum over cells adds their variances.
    u = np.array([1.0, -2.0, 0.5])
    assert rv.sum_variance(lvl, w[:, 0], u) == pytest.approx(expect[0] * 5.25, rel=1e-8, abs=1e-10)


def test_sibling_sum_closed_form() -> None:
    # Three siblings under an unmeasured root: for the set S = {0, 1},
    # A = (V_0 + V_1) / VS and Var = A^2 P_root + VS A (1 - A).
    rv = region_variances([None, np.array([0, 0, 0])], [np.inf, 2.0])
    vs, p_root = 6.0, 6.0
    a = 4.0 / vs
    assert rv.sum_variance(1, np.array([1.0, 1.0, 0.0])) == pytest.approx(a * a * p_root + vs * a * (1 - a))
    # The whole family sums to the root, whose variance is the sum of the children's noise.
    assert rv.sum_variance(1, np.ones(3)) == pytest.approx(6.0)


@pytest.mark.parametrize("shape,b", [((10,), 3), ((16,), 2), ((7,), 7), ((5, 6), 2)])
@pytest.mark.parametrize("include_root", [False, True])
def test_regular_tree_matches_tree_inference(shape, b, include_root) -> None:
    # On a regular b-ary tree the region passes must give the tree_inference result.
    layout = tree_layout(shape, b)
    rng = np.random.default_rng(3)
    sigma2 = list(rng.uniform(0.5, 3.0, size=layout.n_levels))
    if not include_root:
        sigma2[-1] = np.inf
    noisy = [rng.normal(0, 5, size=s) if np.isfinite(v) else None
             for s, v in zip(layout.level_shapes, sigma2)]
    ref = constrained_inference(layout, noisy, sigma2)
    parents = tree_parents(layout)
    reg = region_inference([None if y is None else y.reshape(-1) for y in noisy[::-1]], parents,
                           sigma2[::-1])
    for k in range(layout.n_levels):
        np.testing.assert_allclose(reg.estimates[layout.height - k], ref.estimates[k].ravel(),
                                   rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(reg.variances[layout.height - k], ref.variances[k].ravel(), rtol=1e-10)


def test_trailing_cell_axes_are_independent_problems() -> None:
    parents = [None, np.array([1, 0, 1, 1, 0])]
    rng = np.random.default_rng(0)
    noisy = [rng.normal(size=(2, 3, 4)), rng.normal(size=(5, 3, 4))]
    both = region_inference(noisy, parents, [1.0, 2.0])
    for j in np.ndindex(3, 4):
        one = region_inference([noisy[0][(slice(None),) + j], noisy[1][(slice(None),) + j]],
                               parents, [1.0, 2.0])
        for lvl in range(2):
            np.testing.assert_allclose(both.estimates[lvl][(slice(None),) + j], one.estimates[lvl],
                                       rtol=1e-12)


def test_exact_root_is_matched_and_has_no_variance() -> None:
    parents = [None, np.array([0, 0, 0])]
    noisy = [np.array([[12.0]]), np.array([[3.0], [5.0], [1.0]])]
    inf = region_inference(noisy, parents, [0.0, 1.0])
    assert inf.estimates[0][0, 0] == 12.0
    np.testing.assert_allclose(inf.estimates[1].ravel(), [4.0, 6.0, 2.0])
    assert inf.variances[0][0] == 0.0
    # Conditioning three unit-variance values on their sum: 1 - 1/3 each.
    np.testing.assert_allclose(inf.variances[1], [2 / 3] * 3)


@pytest.mark.parametrize("parents,sigma2,match", [
    ([None, np.array([0, 2])], [1.0, 1.0], "no child"),
    ([None, np.array([0, -1])], [1.0, 1.0], "0 <= parent"),
    ([None, np.array([0.0, 1.0])], [1.0, 1.0], "integer"),
    ([None, np.array([0, 0])], [1.0, np.inf], "finest level must be measured"),
    ([None, np.array([0, 0])], [1.0], "one variance per level"),
    ([None, np.array([0, 0])], [-1.0, 1.0], ">= 0"),
])
def test_public_tree_errors_are_loud(parents, sigma2, match) -> None:
    noisy = [np.zeros((1, 1)), np.zeros((2, 1))]
    with pytest.raises(ParameterError, match=match):
        if match == "no child":
            region_layout(parents, [3, 2])
        else:
            region_inference(noisy[-len(parents):], parents, sigma2)


def test_table_shapes_are_checked() -> None:
    with pytest.raises(ParameterError, match="shape"):
        region_inference([np.zeros((1, 2)), np.zeros((2, 3))], [None, np.array([0, 0])], [1.0, 1.0])


def test_layout_does_not_freeze_the_callers_array() -> None:
    par = np.array([0, 0, 1])
    region_layout([None, par])
    par[0] = 1   # still writable


@settings(max_examples=120, deadline=None)
@given(region_cases(allow_exact=False), st.sampled_from([0.5, 5.0, 50.0]))
def test_nonnegative_is_nonnegative_consistent_and_idempotent(case, shift) -> None:
    parents, sizes, noisy, sigma2 = case
    noisy = [None if t is None else t - shift for t in noisy]   # push some estimates below 0
    inf = region_inference(noisy, parents, sigma2)
    nn = nonnegative_regions(inf)
    for lvl in range(len(sizes)):
        assert np.all(nn[lvl] >= 0)
        if lvl > 0:
            np.testing.assert_allclose(inf.layout.aggregate(nn[lvl], lvl), nn[lvl - 1],
                                       rtol=1e-9, atol=1e-8)
    np.testing.assert_allclose(nn[0], np.maximum(inf.estimates[0], 0.0), atol=1e-12)
    if all(np.all(e >= 0) for e in inf.estimates):
        for lvl in range(len(sizes)):
            np.testing.assert_array_equal(nn[lvl], inf.estimates[lvl])


def test_group_projection_is_weighted_least_squares() -> None:
    # min sum (x - t)^2 / v over {x >= 0, sum x = T}: compare with scipy's SLSQP per group.
    from scipy.optimize import minimize

    t = np.array([4.0, -3.0, 1.0, -0.5, 2.0, 1.0, -2.0, 0.5])
    v = np.array([1.0, 2.0, 0.5, 1.0, 3.0, 1.0, 1.0, 2.0])
    group = np.array([0, 0, 0, 0, 0, 1, 1, 1])
    total = np.array([2.0, 0.7])
    got = project_groups(t, v, group, total)
    for g in (0, 1):
        m = group == g
        res = minimize(lambda x: np.sum((x - t[m]) ** 2 / v[m]), np.full(m.sum(), total[g] / m.sum()),
                       method="SLSQP", bounds=[(0, None)] * int(m.sum()),
                       constraints=[{"type": "eq", "fun": lambda x: x.sum() - total[g]}],
                       options={"ftol": 1e-14})
        np.testing.assert_allclose(got[m], res.x, atol=1e-6)


@pytest.mark.parametrize("shape,b", [((40,), 3), ((64,), 4), ((9, 7), 2)])
def test_regular_tree_projection_matches_nonnegative_tree(shape, b) -> None:
    # The region projection is the same top-down algorithm as tree_inference.nonnegative_tree.
    from pandas_dp.algorithms.tree.inference import nonnegative_tree

    layout = tree_layout(shape, b)
    rng = np.random.default_rng(8)
    sigma2 = list(rng.uniform(0.5, 3.0, size=layout.n_levels))
    sigma2[-1] = np.inf
    noisy = [rng.normal(0.5, 3, size=s) if np.isfinite(v) else None
             for s, v in zip(layout.level_shapes, sigma2)]
    ref = nonnegative_tree(layout, constrained_inference(layout, noisy, sigma2))
    reg = nonnegative_regions(region_inference(
        [None if y is None else y.reshape(-1) for y in noisy[::-1]], tree_parents(layout), sigma2[::-1]))
    assert any(np.any(r == 0) for r in ref)   # the projection was active
    for k in range(layout.n_levels):
        np.testing.assert_allclose(reg[layout.height - k], ref[k].ravel(), rtol=1e-9, atol=1e-9)


def dense_gls_cells(mats: list, noisy: list, sigma2: list, root_totals: np.ndarray):
    """GLS of the whole (leaves x cells) table with every root's total over the cells as an
    exact constraint (and exact levels as constraints), by the null-space solve above."""
    cells = noisy[-1].shape[1]
    big = [np.kron(m, np.eye(cells)) for m in mats]
    y = [None if t is None else t.ravel() for t in noisy]
    mats_c = big + [np.kron(mats[0], np.ones((1, cells)))]
    return dense_gls(mats_c, y + [root_totals], list(sigma2) + [0.0]), big


@settings(max_examples=80, deadline=None)
@given(region_cases(), st.integers(0, 2**31))
def test_root_totals_equal_dense_constrained_least_squares(case, seed) -> None:
    parents, sizes, noisy, sigma2 = case
    if sigma2[0] == 0:   # a root known cell by cell already fixes its total: measure it instead
        sigma2 = [1.0] + list(sigma2[1:])
    rng = np.random.default_rng(seed)
    mats = incidence(parents, sizes)
    cells = noisy[-1].shape[1]
    truth_roots = (mats[0] @ np.ones((sizes[-1], cells))).sum(axis=1) * 7.0
    totals = truth_roots + rng.normal(0, 3, size=sizes[0])
    if any(s == 0 for s in sigma2):   # exact levels fix the roots' totals: use theirs
        k = next(i for i, s in enumerate(sigma2) if s == 0)
        totals = (mats[0] @ np.linalg.pinv(mats[k]) @ noisy[k]).sum(axis=1)
    inf = region_inference(noisy, parents, sigma2, root_totals=totals)
    (x, cov), big = dense_gls_cells(mats, noisy, sigma2, totals)
    for lvl in range(len(sizes)):
        np.testing.assert_allclose(inf.estimates[lvl].ravel(), big[lvl] @ x, rtol=1e-7, atol=1e-7)
        node_var = np.einsum("ij,jk,ik->i", big[lvl], cov, big[lvl]).reshape(sizes[lvl], cells)
        np.testing.assert_allclose(inf.variances[lvl][:, None] + 0 * node_var, node_var,
                                   rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(inf.estimates[0].sum(axis=1), totals, rtol=1e-9, atol=1e-8)
    # Sums of regions and cells: w' (x) u' against the dense covariance.
    lvl = int(rng.integers(0, len(sizes)))
    w = rng.normal(size=sizes[lvl])
    u = rng.normal(size=cells)
    vec = np.kron(w, u) @ big[lvl]
    assert inf.structure.sum_variance(lvl, w, u) == pytest.approx(vec @ cov @ vec, rel=1e-7, abs=1e-9)
    one_cell = np.kron(w, np.eye(cells)[0]) @ big[lvl]
    assert inf.structure.sum_variance(lvl, w) == pytest.approx(one_cell @ cov @ one_cell,
                                                               rel=1e-7, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(region_cases(allow_exact=False), st.sampled_from([0.5, 5.0]))
def test_nonnegative_with_root_totals(case, shift) -> None:
    parents, sizes, noisy, sigma2 = case
    noisy = [None if t is None else t - shift for t in noisy]
    totals = np.full(sizes[0], 3.0)
    inf = region_inference(noisy, parents, sigma2, root_totals=totals)
    nn = nonnegative_regions(inf)
    np.testing.assert_allclose(nn[0].sum(axis=1), totals, rtol=1e-9)
    for lvl in range(len(sizes)):
        assert np.all(nn[lvl] >= 0)
        if lvl > 0:
            np.testing.assert_allclose(inf.layout.aggregate(nn[lvl], lvl), nn[lvl - 1], rtol=1e-9, atol=1e-8)
