"""Constrained inference: exact GLS vs a dense least-squares solve, papers' closed forms."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pandas_dp.algorithms.tree.inference import (constrained_inference, nonnegative_tree,
                                                 tree_variances)
from pandas_dp.algorithms.tree.layout import TreeLayout, tree_layout


def incidence(layout: TreeLayout) -> list[np.ndarray]:
    """Per level, the (nodes x leaves) 0/1 matrix built by brute force from leaf indices."""
    leaves = np.indices(layout.shape).reshape(layout.ndim, -1).T
    out = []
    for k, shape in enumerate(layout.level_shapes):
        node = np.ravel_multi_index(tuple((leaves // layout.branching ** k).T), shape)
        a = np.zeros((int(np.prod(shape)), leaves.shape[0]))
        a[node, np.arange(leaves.shape[0])] = 1.0
        out.append(a)
    return out


def dense_gls(layout: TreeLayout, noisy: list, sigma2: list) -> tuple[np.ndarray, np.ndarray]:
    """Leaf GLS estimate (A'WA)^-1 A'W y and its covariance (A'WA)^-1 over the noised levels."""
    mats = incidence(layout)
    rows = [k for k in range(layout.n_levels) if np.isfinite(sigma2[k])]
    a = np.vstack([mats[k] for k in rows])
    w = np.concatenate([np.full(mats[k].shape[0], 1.0 / sigma2[k]) for k in rows])
    y = np.concatenate([np.asarray(noisy[k], dtype=float).ravel() for k in rows])
    cov = np.linalg.inv(a.T @ (w[:, None] * a))
    return cov @ (a.T @ (w * y)), cov


def random_case(rng: np.random.Generator, shape: tuple[int, ...], b: int, include_root: bool):
    layout = tree_layout(shape, b)
    sigma2 = list(rng.uniform(0.3, 5.0, size=layout.n_levels))
    if not include_root and layout.height > 0:
        sigma2[-1] = np.inf
    noisy = [rng.normal(0, 10, size=s) if np.isfinite(v) else None
             for s, v in zip(layout.level_shapes, sigma2)]
    return layout, noisy, sigma2


CASES = [((8,), 2), ((10,), 3), ((16,), 4), ((27,), 3), ((13,), 5), ((7,), 7), ((37,), 4),
         ((5, 9), 2), ((6, 6), 3), ((3, 4, 5), 2)]


@pytest.mark.parametrize("shape,b", CASES)
@pytest.mark.parametrize("include_root", [False, True])
def test_gls_equals_dense_least_squares(shape, b, include_root) -> None:
    rng = np.random.default_rng(hash((shape, b, include_root)) % 2**32)
    layout, noisy, sigma2 = random_case(rng, shape, b, include_root)
    inf = constrained_inference(layout, noisy, sigma2)
    x_ref, cov = dense_gls(layout, noisy, sigma2)
    np.testing.assert_allclose(inf.estimates[0].ravel(), x_ref, rtol=1e-9, atol=1e-9)
    mats = incidence(layout)
    for k in range(layout.n_levels):
        # Consistency and exact node variances a cov a'.
        np.testing.assert_allclose(inf.estimates[k].ravel(), mats[k] @ x_ref, rtol=1e-9, atol=1e-8)
        node_var = np.einsum("ij,jk,ik->i", mats[k], cov, mats[k])
        np.testing.assert_allclose(inf.variances[k].ravel(), node_var, rtol=1e-9)


def test_complete_tree_matches_hay_closed_form() -> None:
    # Complete tree, every level noised with equal variance (Hay's H-bar).  Qardaji
    # Sec. 3.3: the weight of n[v] at level i (leaves i = 1) is (b^i - b^{i-1}) / (b^i - 1).
    b, h = 3, 3
    layout = tree_layout(b ** h, b)
    rng = np.random.default_rng(0)
    noisy = [rng.normal(0, 5, size=s) for s in layout.level_shapes]
    inf = constrained_inference(layout, noisy, [1.0] * layout.n_levels)
    z = [noisy[0]]
    for i in range(2, layout.n_levels + 1):
        w = (b ** i - b ** (i - 1)) / (b ** i - 1)
        z.append(w * noisy[i - 1] + (1 - w) * layout.aggregate(z[-1], i - 2))
    for k in range(layout.n_levels):
        np.testing.assert_allclose(inf.z[k], z[k], rtol=1e-12)
    # Mean consistency: the residual is divided equally (1/b) among the children.
    est = [None] * layout.n_levels
    est[-1] = z[-1]
    for k in range(layout.n_levels - 2, -1, -1):
        resid = est[k + 1] - layout.aggregate(z[k], k)
        est[k] = z[k] + layout.expand(resid, k) / b
    for k in range(layout.n_levels):
        np.testing.assert_allclose(inf.estimates[k], est[k], rtol=1e-10, atol=1e-10)
    # Proposition 3: V_down at level l is b^{l-1} / sum_{i<l} b^i (V_O = 1).
    for k in range(layout.n_levels):
        assert inf.vdown[k].flat[0] == pytest.approx(b ** k / sum(b ** i for i in range(k + 1)))


def leaf_coefficients(layout: TreeLayout, sigma2: list) -> np.ndarray:
    """(leaves x noised nodes) coefficients of the GLS leaf estimates, by unit inputs."""
    sizes = layout.level_sizes
    total = sum(sizes[k] for k in range(layout.n_levels) if np.isfinite(sigma2[k]))
    coef = np.zeros((layout.n_leaves, total))
    col = 0
    for k in range(layout.n_levels):
        if not np.isfinite(sigma2[k]):
            continue
        for j in range(sizes[k]):
            noisy = [np.zeros(s) if np.isfinite(v) else None
                     for s, v in zip(layout.level_shapes, sigma2)]
            noisy[k].flat[j] = 1.0
            coef[:, col] = constrained_inference(layout, noisy, sigma2).estimates[0]
            col += 1
    return coef


def test_qardaji_figure_1_coefficients() -> None:
    # N = 8, b = 2, root not noised; nodes numbered breadth first from the root n_0:
    # n_1, n_2 (level 3), n_3..n_6 (level 2), n_7..n_14 (leaves).  Column order of
    # leaf_coefficients is leaves, level 2, level 3, i.e. n_7..n_14, n_3..n_6, n_1, n_2.
    layout = tree_layout(8, 2)
    sigma2 = [1.0, 1.0, 1.0, np.inf]
    coef = leaf_coefficients(layout, sigma2)
    number = list(range(7, 15)) + list(range(3, 7)) + [1, 2]
    c = {n: coef[0, i] for i, n in enumerate(number)}   # n'_7
    expect = {7: Fraction(13, 21), 3: Fraction(5, 21), 1: Fraction(1, 7), 4: Fraction(-2, 21),
              9: Fraction(-1, 21), 10: Fraction(-1, 21), 8: Fraction(-8, 21)}
    for n in number:
        assert c[n] == pytest.approx(float(expect.get(n, 0)), abs=1e-12), n
    q = coef[:3].sum(axis=0)   # q = n'_7 + n'_8 + n'_9
    qc = {n: q[i] for i, n in enumerate(number)}
    expect_q = {1: Fraction(3, 7), 3: Fraction(8, 21), 4: Fraction(1, 21), 7: Fraction(4, 21),
                8: Fraction(4, 21), 9: Fraction(11, 21), 10: Fraction(-10, 21)}
    for n in number:
        assert qc[n] == pytest.approx(float(expect_q.get(n, 0)), abs=1e-12), n
    # Var[q] = 399/441 V_O, the sum of squared coefficients.
    assert float(np.sum(q ** 2)) == pytest.approx(399 / 441, abs=1e-12)


def test_tree_variances_match_inference() -> None:
    rng = np.random.default_rng(5)
    layout, noisy, sigma2 = random_case(rng, (23,), 3, False)
    tv = tree_variances(layout, sigma2)
    inf = constrained_inference(layout, noisy, sigma2)
    for k in range(layout.n_levels):
        np.testing.assert_array_equal(tv.variances[k], inf.variances[k])


@st.composite
def trees(draw):
    n = draw(st.integers(1, 40))
    b = draw(st.integers(2, 6))
    layout = tree_layout(n, b)
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    sigma2 = list(rng.uniform(0.5, 4.0, size=layout.n_levels))
    if layout.height > 0 and draw(st.booleans()):
        sigma2[-1] = np.inf
    scale = draw(st.sampled_from([0.5, 5.0, 50.0]))
    noisy = [rng.normal(0, scale, size=s) + rng.integers(0, 3, size=s).astype(float)
             if np.isfinite(v) else None for s, v in zip(layout.level_shapes, sigma2)]
    return layout, noisy, sigma2


@settings(max_examples=150, deadline=None)
@given(trees())
def test_nonnegative_is_nonnegative_consistent_and_idempotent(case) -> None:
    layout, noisy, sigma2 = case
    inf = constrained_inference(layout, noisy, sigma2)
    nn = nonnegative_tree(layout, inf)
    for k in range(layout.n_levels):
        assert np.all(nn[k] >= 0)
        if k > 0:
            np.testing.assert_allclose(layout.aggregate(nn[k - 1], k - 1), nn[k],
                                       rtol=1e-9, atol=1e-9)
    assert nn[-1].ravel()[0] == pytest.approx(max(inf.estimates[-1].ravel()[0], 0.0), abs=1e-9)
    if all(np.all(e >= 0) for e in inf.estimates):
        for k in range(layout.n_levels):
            np.testing.assert_allclose(nn[k], inf.estimates[k], rtol=1e-12, atol=1e-12)


def test_nonnegative_projection_is_weighted_least_squares() -> None:
    # One parent, children targets t and weights V: the result must be the minimiser
    # of sum (c - t)^2 / V over {c >= 0, sum c = T}; check against scipy's SLSQP.
    from scipy.optimize import minimize

    layout = tree_layout(5, 5)
    noisy = [np.array([4.0, -3.0, 1.0, -0.5, 2.0]), np.array([2.0])]
    sigma2 = [1.0, 2.0]
    inf = constrained_inference(layout, noisy, sigma2)
    nn = nonnegative_tree(layout, inf)
    t = inf.estimates[0]
    total = max(inf.estimates[1][0], 0.0)
    res = minimize(lambda c: np.sum((c - t) ** 2), np.full(5, total / 5), method="SLSQP",
                   bounds=[(0, None)] * 5,
                   constraints=[{"type": "eq", "fun": lambda c: c.sum() - total}],
                   options={"ftol": 1e-14})
    np.testing.assert_allclose(nn[0], res.x, atol=1e-6)
