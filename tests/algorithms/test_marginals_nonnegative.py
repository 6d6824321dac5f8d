"""The publishing algorithms of table sets: the non-negative projection, the IPF record model, the
integer rounding and the systematic sample (pandas_dp/algorithms/marginals/{nonnegative,sample}.py)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import lsq_linear

from pandas_dp.algorithms.marginals.nonnegative import MAX_JOINT, check_joint, project_nonnegative, table_of
from pandas_dp.algorithms.marginals.sample import fit_model, integer_joint, sample_joint
from pandas_dp.errors import DomainError

CYCLE = ((3, 2, 3), [(0, 1), (1, 2), (0, 2)])   # a cycle: the tables are not a junction tree


def _matrix(shape, axes):
    """M_t as a dense matrix (brute force: one column per joint cell)."""
    n = int(np.prod(shape))
    eye = np.eye(n)
    return np.stack([table_of(eye[j].reshape(shape), axes).ravel() for j in range(n)], axis=1)


def _brute_force(shape, tables, targets, weights):
    """The constrained least-squares tables by scipy's bounded-variable least squares."""
    a = np.vstack([np.sqrt(w) * _matrix(shape, t) for w, t in zip(weights, tables)])
    b = np.concatenate([np.sqrt(w) * y.ravel() for w, y in zip(weights, targets)])
    x = lsq_linear(a, b, bounds=(0, np.inf), method="bvls", tol=1e-14).x.reshape(shape)
    return [table_of(x, t) for t in tables]


@pytest.mark.parametrize("shape,tables", [CYCLE, ((2, 3), [(0, 1), (0,)]),
                                          ((2, 2, 2, 2), [(0, 1), (1, 2), (2, 3), (0, 3)])])
def test_projection_equals_brute_force_constrained_least_squares(shape, tables):
    rng = np.random.default_rng(11)
    for _ in range(4):
        targets = [rng.normal(1.0, 2.5, size=[shape[a] for a in t]) for t in tables]
        weights = 10.0 ** rng.uniform(-3.0, 0.0, size=len(tables))   # the spread publish() allows
        fit = project_nonnegative(shape, tables, targets, weights)
        reference = _brute_force(shape, tables, targets, weights)
        for t, ref in zip(tables, reference):
            # The optimal tables are unique; FISTA stops at a gradient-mapping step of 1e-12 x total.
            np.testing.assert_allclose(table_of(fit.joint, t), ref, atol=1e-7)


def test_tables_of_a_nonnegative_joint_come_back_unchanged():
    rng = np.random.default_rng(2)
    shape, tables = CYCLE
    truth = rng.uniform(0.5, 20.0, size=shape)
    targets = [table_of(truth, t) for t in tables]
    fit = project_nonnegative(shape, tables, targets, [1.0, 2.0, 0.5])
    for t, y in zip(tables, targets):
        np.testing.assert_allclose(table_of(fit.joint, t), y, atol=1e-8)


def test_the_joint_is_on_a_dyadic_grid_so_every_table_sum_is_exact():
    rng = np.random.default_rng(3)
    shape, tables = CYCLE
    fit = project_nonnegative(shape, tables, [rng.normal(50, 30, size=[shape[a] for a in t]) for t in tables],
                              [1.0] * 3)
    steps = fit.joint / fit.grid
    assert np.array_equal(steps, np.round(steps)) and fit.joint.min() >= 0
    # Summed in any order the totals agree bit for bit (each sum is exact).
    totals = {float(table_of(fit.joint, t).sum()) for t in tables}
    totals |= {float(sum(fit.joint.ravel()[::-1].tolist())), float(fit.joint.sum())}
    assert len(totals) == 1


def test_the_projection_is_deterministic_byte_for_byte():
    rng = np.random.default_rng(4)
    shape, tables = (4, 3, 5), [(0, 1), (1, 2), (0, 2)]
    targets = [rng.normal(3, 6, size=[shape[a] for a in t]) for t in tables]
    first = project_nonnegative(shape, tables, targets, [1.0, 1.0, 1.0]).joint
    again = project_nonnegative(shape, tables, [np.asfortranarray(y) for y in targets], [2.0, 2.0, 2.0]).joint
    assert first.tobytes() == again.tobytes()   # the weights' scale and the targets' memory layout do not matter


def test_the_union_domain_is_capped():
    check_joint((1 << 11, 1 << 11))
    with pytest.raises(DomainError, match="coarser bins"):
        check_joint((1 << 11, 1 << 11, 2))
    assert MAX_JOINT == 1 << 22


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sizes=st.lists(st.integers(1, 3), min_size=2, max_size=3), seed=st.integers(0, 2**32 - 1),
       scale=st.floats(0.1, 100.0))
def test_projection_invariants(sizes, seed, scale):
    rng = np.random.default_rng(seed)
    shape = tuple(sizes)
    tables = [t for t in itertools.combinations(range(len(shape)), len(shape) - 1)]
    targets = [rng.normal(0.0, scale, size=[shape[a] for a in t]) for t in tables]
    fit = project_nonnegative(shape, tables, targets, rng.uniform(0.5, 2.0, size=len(tables)))
    assert fit.joint.min() >= 0
    out = [table_of(fit.joint, t) for t in tables]
    assert len({float(o.sum()) for o in out}) == 1           # one total, exactly
    # Projecting the published tables again leaves them where they are (a projection is idempotent).
    again = project_nonnegative(shape, tables, out, [1.0] * len(tables))
    for o, t in zip(out, tables):
        np.testing.assert_allclose(table_of(again.joint, t), o, atol=1e-7 * max(1.0, float(o.sum())))


def test_ipf_fits_the_tables_and_invents_no_interaction():
    a, b = np.array([3.0, 7.0]), np.array([1.0, 4.0, 5.0])
    model = fit_model((2, 3), [(0,), (1,)], [a, b])
    np.testing.assert_allclose(model.joint, np.outer(a, b) / 10.0, atol=1e-12)   # the independent joint
    rng = np.random.default_rng(5)
    truth = rng.uniform(0.0, 9.0, size=(3, 2, 3))
    targets = [table_of(truth, t) for t in CYCLE[1]]
    fitted = fit_model(CYCLE[0], CYCLE[1], targets)
    assert fitted.error <= 1e-9 * truth.sum()
    for t, y in zip(CYCLE[1], targets):
        np.testing.assert_allclose(table_of(fitted.joint, t), y, atol=1e-6)


def test_integer_joint_rounds_every_cell_down_or_up_and_keeps_the_total():
    rng = np.random.default_rng(6)
    joint = rng.uniform(0.0, 4.0, size=(4, 5))
    total = int(round(joint.sum()))
    out = integer_joint(joint, total)
    assert out.dtype == np.int64 and out.sum() == total
    scaled = joint * total / joint.sum()
    assert np.all((out == np.floor(scaled)) | (out == np.ceil(scaled)))
    ints = rng.integers(0, 5, size=(3, 3)).astype(float)
    assert np.array_equal(integer_joint(ints, int(ints.sum())), ints)       # integers come back unchanged


def test_integer_joint_keeps_the_leading_table_within_one():
    rng = np.random.default_rng(8)
    joint = rng.uniform(0.0, 3.0, size=(4, 3, 5))
    total = int(round(joint.sum()))
    out = integer_joint(joint, total, first=(2, 0))
    scaled = joint * total / joint.sum()
    assert out.sum() == total and np.all((out == np.floor(scaled)) | (out == np.ceil(scaled)))
    for axes in ((0, 2), (2,)):   # the leading table and its prefix
        assert np.abs(table_of(out, axes) - table_of(scaled, axes)).max() < 1


def test_systematic_sample_gives_floor_or_ceiling_of_the_expected_counts():
    rng = np.random.default_rng(7)
    joint = rng.uniform(0.0, 1.0, size=(5, 4))
    counts = sample_joint(joint, 137, np.random.default_rng(0))
    expected = 137 * joint / joint.sum()
    assert counts.sum() == 137 and np.all((counts == np.floor(expected)) | (counts == np.ceil(expected)))
    # A run of consecutive cells (a cell of the table on the first column) is within 1 of its expectation.
    assert np.all(np.abs(counts.sum(axis=1) - expected.sum(axis=1)) < 1)
    assert np.array_equal(counts, sample_joint(joint, 137, np.random.default_rng(0)))
    ints = np.array([[2.0, 0.0], [1.0, 5.0]])
    assert np.array_equal(sample_joint(ints, 8, np.random.default_rng(1)), ints)   # integers: exactly


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(1, 4), min_size=1, max_size=3), seed=st.integers(0, 2**32 - 1),
       scale=st.floats(0.01, 50.0), n=st.integers(0, 300))
def test_integer_and_sample_invariants(sizes, seed, scale, n):
    rng = np.random.default_rng(seed)
    joint = rng.exponential(scale, size=tuple(sizes)) * (rng.random(tuple(sizes)) < 0.7)
    total = int(round(joint.sum()))
    first = tuple(rng.permutation(len(sizes))[: rng.integers(1, len(sizes) + 1)])
    out = integer_joint(joint, total, first=first)
    assert out.dtype == np.int64 and out.min() >= 0 and out.sum() == total
    if joint.sum() > 0:
        scaled = joint * total / joint.sum()
        assert np.all((out == np.floor(scaled)) | (out == np.ceil(scaled)))
        lead = tuple(sorted(first))
        assert np.abs(table_of(out, lead) - table_of(scaled, lead)).max() < 1 + 1e-9
    counts = sample_joint(joint, n, rng)
    assert counts.min() >= 0 and counts.sum() == n
    if joint.sum() > 0:
        assert np.all(counts[joint == 0] == 0)        # no record in a cell the model rules out


def test_publish_tables_weighs_by_floored_variances_and_rounds_from_the_projection():
    from pandas_dp.algorithms.marginals.publish import MAX_WEIGHT_RATIO, publish_tables, table_weights

    assert table_weights([4.0, 1e-9, 2.0]) == [0.25, 1 / 1e-2, 0.5]           # floored at 0.01
    assert table_weights([1e4, 1.0])[1] == 1 / (1e4 / MAX_WEIGHT_RATIO)       # spread at most 1000 to 1
    rng = np.random.default_rng(9)
    shape, tables = CYCLE
    targets = [rng.normal(2.0, 3.0, size=[shape[a] for a in t]) for t in tables]
    variances = [9.0, 4.0, 1.0]
    flat = publish_tables(shape, tables, targets, variances)
    same = project_nonnegative(shape, tables, targets, table_weights(variances)).joint
    assert flat.joint.tobytes() == same.tobytes()
    whole = publish_tables(shape, tables, targets, variances, integer=True)
    assert whole.nonnegative_joint.tobytes() == same.tobytes() and whole.joint.dtype == np.int64
    assert whole.joint.sum() == round(float(same.sum())) and len(whole.steps) == 2
