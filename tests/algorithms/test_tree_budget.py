"""Budget splits across tree levels: Cormode's geometric split, Qardaji's optimal split."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from pandas_dp.algorithms.tree.budget import (level_shares, noised_levels,
                                              predicted_average_variance, split_epsilon)
from pandas_dp.algorithms.tree.inference import tree_variances
from pandas_dp.algorithms.tree.layout import tree_layout
from pandas_dp.algorithms.tree.variance import average_range_variance, raw_level_usage


def v_avg(layout, shares, consistent=True):
    sigma2 = np.full(layout.n_levels, np.inf)
    on = shares > 0
    sigma2[on] = 2.0 / shares[on] ** 2           # epsilon = 1, continuous Laplace
    return predicted_average_variance(layout, sigma2, consistent=consistent)


@pytest.mark.parametrize("n,paper", [(16, 28.52), (32, 49.65), (64, 82.60), (128, 133.96),
                                     (256, 214.39), (512, 340.92)])
def test_geometric_split_reproduces_quadtree_column(n: int, paper: float) -> None:
    # Qardaji Table 3, "Quad = H^c_{2,g}": b = 2, each level b^(1/3) times its parent's budget.
    layout = tree_layout(n, 2)
    shares = level_shares(layout, budget_split="geometric")
    assert shares[0] / shares[1] == pytest.approx(2 ** (1 / 3))
    assert round(v_avg(layout, shares), 2) == pytest.approx(paper, abs=0.011)


def test_uniform_shares() -> None:
    layout = tree_layout(100, 3)
    np.testing.assert_allclose(level_shares(layout), [0.2] * 5 + [0.0])
    np.testing.assert_allclose(level_shares(layout, include_root=True), [1 / 6] * 6)
    assert list(noised_levels(tree_layout(1, 2), include_root=False)) == [True]


@pytest.mark.parametrize("n,b", [(256, 2), (256, 16), (1000, 4), (4096, 8), (300, 12)])
def test_optimal_split_beats_uniform_and_geometric(n: int, b: int) -> None:
    layout = tree_layout(n, b)
    opt = v_avg(layout, level_shares(layout, budget_split="optimal"))
    assert opt <= v_avg(layout, level_shares(layout)) * (1 + 1e-9)
    assert opt <= v_avg(layout, level_shares(layout, budget_split="geometric")) * (1 + 1e-9)


def test_optimal_split_is_stationary() -> None:
    # Lagrange condition of min sum a_k / eps_k^2 s.t. sum eps_k = 1: with
    # a_k = dV/d(sigma2_k) * 2 fixed, (dV/d sigma2_k) / s_k^3 is the same on every kept level.
    layout = tree_layout(1000, 6)
    s = level_shares(layout, budget_split="optimal", tol=1e-10, max_iter=500)
    on = np.flatnonzero(s > 0)
    sigma2 = np.full(layout.n_levels, np.inf)
    sigma2[on] = 2.0 / s[on] ** 2
    base = average_range_variance(layout, tree_variances(layout, sigma2))
    ratio = []
    for k in on:
        bumped = sigma2.copy()
        bumped[k] *= 1 + 1e-7
        g = (average_range_variance(layout, tree_variances(layout, bumped)) - base) / (1e-7 * sigma2[k])
        ratio.append(g / s[k] ** 3)
    assert np.ptp(ratio) / np.mean(ratio) < 1e-3


def test_optimal_split_without_inference_is_closed_form() -> None:
    # H_b: V = sum_k usage_k 2 / eps_k^2 / Q, so eps_k ∝ usage_k^(1/3) (Qardaji Sec. 3.5).
    layout = tree_layout(777, 5)
    s = level_shares(layout, budget_split="optimal", consistent=False, tol=1e-12, max_iter=200)
    usage = raw_level_usage(layout, noised_levels(layout, include_root=False))
    ref = np.cbrt(usage) / np.cbrt(usage).sum()
    np.testing.assert_allclose(s, ref, atol=1e-6)


def test_split_epsilon_exact_and_never_over() -> None:
    eps = Fraction(1, 3)
    assert split_epsilon(eps, np.array([0.25, 0.25, 0.25, 0.25, 0.0])) == \
        (Fraction(1, 12),) * 4 + (Fraction(0),)
    shares = np.array([0.3, 0.3 + 1e-17, 0.4 - 1e-17])
    parts = split_epsilon(eps, shares)
    assert sum(parts) <= eps
    assert eps - sum(parts) < Fraction(1, 2 ** 38)


@pytest.mark.parametrize("split", ["geometric", "optimal"])
@pytest.mark.parametrize("shape,b,root,p", [(100, 4, True, 2), (1000, 2, False, 2), (300, 3, False, 1),
                                            ((16, 16), 2, False, 2)])
def test_planning_uses_no_cpu_dependent_math(monkeypatch, split, shape, b, root, p) -> None:
    # A seed must give the same release on every machine: BLAS (np.dot, @) and vector math
    # (np.cbrt, np.power on arrays) round differently by CPU, and the finite differences of the
    # optimal split amplify a last bit into the shares. Planning may use only correctly rounded
    # elementwise arithmetic, fixed-order sums and exact integers.
    from pandas_dp.algorithms.tree import budget

    budget._level_shares.cache_clear()
    expected = level_shares(tree_layout(shape, b), budget_split=split, include_root=root, variance_exponent=p)
    budget._level_shares.cache_clear()

    def forbidden(*args, **kwargs):
        raise AssertionError("CPU-dependent math in planning")

    for name in ("dot", "cbrt", "power", "matmul", "vdot", "inner", "einsum", "exp", "log"):
        monkeypatch.setattr(np, name, forbidden)
    got = level_shares(tree_layout(shape, b), budget_split=split, include_root=root, variance_exponent=p)
    budget._level_shares.cache_clear()
    assert got.tobytes() == expected.tobytes()
    assert got.sum() == pytest.approx(1.0)


def test_optimal_split_is_recorded_exactly() -> None:
    # Deterministic by construction (see the test above), so the exact rational parts are fixed.
    shares = level_shares(tree_layout(100, 4), budget_split="optimal", include_root=True)
    assert split_epsilon(Fraction(1), shares) == (
        Fraction(124497553129, 274877906944), Fraction(202427987299, 1099511627776),
        Fraction(399093427959, 1099511627776), Fraction(0), Fraction(0))
