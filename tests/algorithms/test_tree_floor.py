"""The tree's release without leaf-sized copies gives the same bits as the plain formulas.

``tree_variances`` / ``constrained_inference`` compute the 1-D leaf step once per parent, keep
constant levels as broadcast views and spread parents with ``np.repeat``; ``release_tree`` sums every
level's exact counts first and adds each level's noise in place. None of this may change a value:
the references below are the formulas evaluated leaf by leaf with ``layout.expand`` (the code before
the change), compared bit for bit on complete and incomplete trees, several fan-outs, levels without
noise, and 2-D grids.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from pandas_dp.algorithms.tree.release import plan_tree, release_tree
from pandas_dp.algorithms.tree.inference import constrained_inference, tree_variances
from pandas_dp.algorithms.tree.layout import tree_layout
from pandas_dp.privacy.loss import PureDP, zcdp


def _reference_variances(layout, sigma2):
    sigma2 = [float(v) for v in sigma2]
    vdown = [np.full(layout.level_shapes[0], sigma2[0])]
    child_var = [None]
    for k in range(1, layout.n_levels):
        vs = layout.aggregate(vdown[k - 1], k - 1)
        child_var.append(vs)
        vdown.append(vs if not np.isfinite(sigma2[k]) else 1.0 / (1.0 / sigma2[k] + 1.0 / vs))
    top = layout.n_levels - 1
    var = [np.empty(0)] * layout.n_levels
    var[top] = vdown[top]
    for k in range(top - 1, -1, -1):
        a = vdown[k] / layout.expand(child_var[k + 1], k)
        var[k] = a * a * layout.expand(var[k + 1], k) + vdown[k] * (1.0 - a)
    return vdown, child_var, var


def _reference_inference(layout, noisy, sigma2):
    vdown, child_var, var = _reference_variances(layout, sigma2)
    sigma2 = [float(v) for v in sigma2]
    z = [np.asarray(noisy[0], dtype=np.float64)]
    child_sum = [None]
    for k in range(1, layout.n_levels):
        s = layout.aggregate(z[k - 1], k - 1)
        child_sum.append(s)
        if noisy[k] is None or not np.isfinite(sigma2[k]):
            z.append(s)
        else:
            z.append(vdown[k] * (np.asarray(noisy[k], dtype=np.float64) / sigma2[k] + s / child_var[k]))
    top = layout.n_levels - 1
    est = [np.empty(0)] * layout.n_levels
    est[top] = z[top]
    for k in range(top - 1, -1, -1):
        a = vdown[k] / layout.expand(child_var[k + 1], k)
        est[k] = z[k] + a * layout.expand(est[k + 1] - child_sum[k + 1], k)
    return z, child_sum, est, vdown, child_var, var


def _same_levels(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if w is None:
            assert g is None
            continue
        g = np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype
        assert np.array_equal(g, w)          # bit for bit (no NaN occurs)


SHAPES = [(1, 2), (2, 2), (7, 2), (16, 2), (100, 3), (100, 4), (257, 16), (4096, 16), (5000, 7), (1000, 10),
          ((16, 16), 2), ((9, 30), 4)]


@pytest.mark.parametrize("shape,b", SHAPES)
@pytest.mark.parametrize("unnoised", [(), (-1,), (1,)])
def test_gls_is_the_leaf_by_leaf_formulas_bit_for_bit(shape, b, unnoised):
    layout = tree_layout(shape, b)
    rng = np.random.default_rng([b, *np.atleast_1d(shape)])
    sigma2 = list(rng.uniform(1.0, 40.0, layout.n_levels))
    for k in unnoised:
        if 0 < k % layout.n_levels:          # the leaves stay noised
            sigma2[k] = np.inf
    noisy = [None if not np.isfinite(s) else rng.integers(-20, 200, layout.level_shapes[k])
             for k, s in enumerate(sigma2)]
    z, child_sum, est, vdown, child_var, var = _reference_inference(layout, noisy, sigma2)

    tv = tree_variances(layout, sigma2)
    _same_levels(tv.vdown, vdown)
    _same_levels(tv.child_var, child_var)
    _same_levels(tv.variances, var)
    kept = constrained_inference(layout, noisy, sigma2)
    _same_levels(kept.z, z)
    _same_levels(kept.child_sum, child_sum)
    _same_levels(kept.estimates, est)
    lean = constrained_inference(layout, noisy, sigma2, keep_bottom_up=False)
    assert lean.z == () and lean.child_sum == ()
    _same_levels(lean.estimates, est)
    _same_levels(lean.variances, var)


def test_inference_never_writes_into_the_noisy_counts():
    layout = tree_layout(64, 4)
    noisy = [np.arange(64, dtype=np.float64), None, None, np.array([5.0])]
    before = [None if a is None else a.copy() for a in noisy]
    constrained_inference(layout, noisy, [2.0, np.inf, np.inf, 3.0], keep_bottom_up=False)
    _same_levels(noisy, before)


def test_complete_tree_has_constant_views_for_constant_levels():
    tv = tree_variances(tree_layout(4096, 16), [3.0, 3.0, 3.0, np.inf])
    assert tv.vdown[0].strides == (0,) and tv.variances[0].strides == (0,)   # 8 bytes, not 32 KiB
    assert not tv.variances[0].flags.writeable


@pytest.mark.parametrize("n,b,knobs", [(256, 16, {}), (100, 3, dict(include_root=True, budget_split="optimal")),
                                       (100, 4, dict(consistent=False)), (1000, 10, dict(budget_split="geometric")),
                                       ((16, 12), 2, {})])
@pytest.mark.parametrize("nonnegative", [False, True])
def test_overwriting_the_counts_changes_nothing_but_their_memory(n, b, knobs, nonnegative):
    shape = (n,) if isinstance(n, int) else n
    counts = np.random.default_rng(0).integers(0, 30, shape)
    plan = plan_tree(n, loss=PureDP(Fraction(1, 2)), branching=b, **knobs)
    copy = counts.copy()
    kept = release_tree(counts, plan, nonnegative=nonnegative, rng=np.random.default_rng(5))
    np.testing.assert_array_equal(counts, copy)                     # not overwritten by default
    used = release_tree(counts, plan, nonnegative=nonnegative, rng=np.random.default_rng(5), overwrite_counts=True)
    assert np.shares_memory(used.noisy[0], counts)
    for name in ("noisy", "estimates", "variances"):
        _same_levels(getattr(used, name), [None if a is None else np.asarray(a) for a in getattr(kept, name)])


def test_noise_per_level_is_drawn_in_level_order_from_one_stream():
    # The draws of level k follow those of level k - 1: the same as adding noise.add per level in order.
    counts = np.random.default_rng(1).integers(0, 9, 300)
    plan = plan_tree(300, loss=zcdp(0.5), branching=4)
    rng = np.random.default_rng(2)
    true, expected = counts, []
    for k, noise in enumerate(plan.level_noise):
        if k:
            true = plan.layout.aggregate(true, k - 1)
        expected.append(None if noise is None else noise.sample(true.shape, rng) + true)
    rel = release_tree(counts, plan, rng=np.random.default_rng(2), overwrite_counts=True)
    _same_levels(rel.noisy, expected)
