"""Top-down non-negative and integer joints of a table set by geography
(:mod:`pandas_dp.algorithms.marginals.topdown`): exact consistency, non-negativity, public totals, and
the level fits against a brute-force bounded least squares on tiny geographies."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.optimize import lsq_linear

from pandas_dp.algorithms.marginals.publish import publish_tables
from pandas_dp.algorithms.marginals.topdown import (grid_round, level_weights, project_level, region_tables,
                                                    simplex_groups, topdown_integer, topdown_nonnegative)
from pandas_dp.algorithms.geography.layout import region_layout
from pandas_dp.algorithms.geography.nonnegative import project_groups

SHAPE = (3, 2, 4)
TABLES = [(0, 1), (1, 2), (0, 2)]
LAYOUT = region_layout([None, np.array([0, 0]), np.array([0, 0, 1, 1, 1])], [1, 2, 5])


def _noisy(seed: int, sd: float = 2.0, mean: float = 2.0):
    """True joints of every region, and noisy consistent-free table estimates of every level."""
    rng = np.random.default_rng(seed)
    leaf = rng.poisson(mean, size=(5, *SHAPE)).astype(np.float64)
    true = [None, None, leaf]
    true[1] = LAYOUT.aggregate(leaf, 2)
    true[0] = LAYOUT.aggregate(true[1], 1)
    est = [[region_tables(j, t) + rng.normal(0, sd, size=region_tables(j, t).shape) for t in TABLES] for j in true]
    var = [np.tile([sd * sd, 1.5 * sd * sd, 2 * sd * sd], (j.shape[0], 1)) for j in true]
    return true, est, var


def _matrix(shape, axes):
    """``M_t``: the table on ``axes`` of a joint, as a matrix over the joint's cells (brute force)."""
    cells = list(itertools.product(*(range(s) for s in shape)))
    rows = list(itertools.product(*(range(shape[a]) for a in axes)))
    index = {r: k for k, r in enumerate(rows)}
    m = np.zeros((len(rows), len(cells)))
    for j, c in enumerate(cells):
        m[index[tuple(c[a] for a in axes)], j] = 1.0
    return m


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow), pytest.param(2, marks=pytest.mark.slow)])
def test_the_children_of_a_fixed_parent_are_the_bounded_least_squares_solution(seed):
    """Two children of one parent: x2 = X - x1, so the level's problem is least squares in x1 with
    0 <= x1 <= X, which scipy's lsq_linear solves independently; the tables must agree."""
    _, est, var = _noisy(seed, sd=3.0, mean=1.0)
    parent = np.abs(np.random.default_rng(seed + 10).normal(2.0, 1.5, size=(1, *SHAPE)))
    targets = [e[:2] for e in est[2]]                    # two children of the first state
    variances = var[2][:2] * np.array([[1.0], [2.0]])
    w = level_weights(variances)
    x, _, _ = project_level(SHAPE, TABLES, targets, w, parents=np.array([0, 0]), parent_joints=parent,
                            tol=1e-13)
    big_x = parent.ravel()
    blocks, rhs = [], []
    for k, t in enumerate(TABLES):
        m = _matrix(SHAPE, t)
        blocks += [math.sqrt(w[0, k]) * m, -math.sqrt(w[1, k]) * m]
        rhs += [math.sqrt(w[0, k]) * targets[k][0].ravel(), math.sqrt(w[1, k]) * (targets[k][1].ravel() - m @ big_x)]
    ref = lsq_linear(np.vstack(blocks), np.concatenate(rhs), bounds=(np.zeros_like(big_x), big_x), tol=1e-14,
                     method="bvls").x
    assert np.allclose(x.sum(axis=0), parent[0], atol=1e-9) and (x >= 0).all()
    for t in TABLES:
        m = _matrix(SHAPE, t)
        np.testing.assert_allclose(region_tables(x, t)[0].ravel(), m @ ref, atol=1e-6)
        np.testing.assert_allclose(region_tables(x, t)[1].ravel(), m @ (big_x - ref), atol=1e-6)


def test_the_root_is_the_flat_projection_of_the_national_tables():
    _, est, var = _noisy(3)
    fit = topdown_nonnegative(SHAPE, TABLES, est, var, LAYOUT, tol=1e-12)     # both solved tightly
    flat = publish_tables(SHAPE, TABLES, [e[0] for e in est[0]], list(var[0][0]))
    for t in TABLES:
        np.testing.assert_allclose(region_tables(fit.joints[0], t)[0],
                                   np.add.reduce(flat.joint, axis=tuple(k for k in range(3) if k not in t)),
                                   atol=1e-6)


@pytest.mark.parametrize("seed", [4, pytest.param(5, marks=pytest.mark.slow)])
def test_joints_are_nonnegative_and_children_sum_to_parents_exactly(seed):
    _, est, var = _noisy(seed, sd=3.0, mean=0.5)         # many true zeros: the projection is active
    fit = topdown_nonnegative(SHAPE, TABLES, est, var, LAYOUT)
    for lvl in (1, 2):
        assert np.array_equal(LAYOUT.aggregate(fit.joints[lvl], lvl), fit.joints[lvl - 1])   # exact
        assert (fit.joints[lvl] >= 0).all() and np.array_equal(np.round(fit.joints[lvl] / fit.grid) * fit.grid,
                                                               fit.joints[lvl])
    assert (region_tables(fit.joints[2], (1, 2)) == 0).any()
    ints = topdown_integer(fit, SHAPE, TABLES, LAYOUT)
    for lvl in (1, 2):
        assert ints[lvl].dtype == np.int64 and (ints[lvl] >= 0).all()
        assert np.array_equal(LAYOUT.aggregate(ints[lvl], lvl), ints[lvl - 1])
    assert int(ints[0].sum()) == round(float(fit.joints[0].sum()))
    # below the root every integer is the floor or ceiling of its scaled non-negative value
    for lvl in (1, 2):
        parent = fit.joints[lvl - 1].reshape(-1, 24)
        factor = np.divide(ints[lvl - 1].reshape(-1, 24), parent, out=np.zeros_like(parent), where=parent > 0)
        scaled = fit.joints[lvl].reshape(-1, 24) * factor[LAYOUT.parent_codes(lvl)]
        assert np.all(np.abs(ints[lvl].reshape(-1, 24) - scaled) < 1 + 1e-9)


@pytest.mark.parametrize("level", [pytest.param(0, marks=pytest.mark.slow), 1, 2])
def test_public_totals_are_matched_exactly_at_their_level_and_above(level):
    true, est, var = _noisy(6, sd=3.0, mean=0.7)
    totals = {level: true[level].reshape(true[level].shape[0], -1).sum(axis=1)}
    fit = topdown_nonnegative(SHAPE, TABLES, est, var, LAYOUT, totals)
    assert fit.anchor == level
    for lvl in range(level + 1):
        expected = true[lvl].reshape(true[lvl].shape[0], -1).sum(axis=1)
        assert np.array_equal(fit.joints[lvl].reshape(len(expected), -1).sum(axis=1), expected)
    ints = topdown_integer(fit, SHAPE, TABLES, LAYOUT, totals)
    for lvl in range(3):
        if lvl <= level:
            assert np.array_equal(ints[lvl].reshape(ints[lvl].shape[0], -1).sum(axis=1),
                                  true[lvl].reshape(true[lvl].shape[0], -1).sum(axis=1))
        if lvl:
            assert np.array_equal(LAYOUT.aggregate(ints[lvl], lvl), ints[lvl - 1])


def test_grid_round_hits_every_group_total_with_floors_and_ceilings():
    values = np.array([0.5, 1.25, 2.25, 0.0, 3.6, 0.4])
    group = np.array([0, 0, 0, 1, 1, 1])
    out = grid_round(values, group, np.array([4, 4]))
    assert out.tolist() == [1.0, 1.0, 2.0, 0.0, 4.0, 0.0]


def test_simplex_groups_is_project_groups():
    rng = np.random.default_rng(7)
    t = rng.normal(0.5, 2.0, 600)
    v = rng.uniform(0.5, 2.0, 600)
    group = rng.integers(0, 40, 600)
    total = np.abs(rng.normal(3.0, 3.0, 40))
    total[:3] = 0.0
    np.testing.assert_allclose(simplex_groups(t, v, group, total), project_groups(t, v, group, total),
                               rtol=0, atol=1e-12)


def test_with_public_totals_the_roots_are_fitted_on_their_own_tables_and_total():
    """Top-down with totals: the root is its own tables' projection onto the simplex of the summed public
    totals (not the sum of the leaves fitted first, which carries every leaf's clipping upwards)."""
    true, est, var = _noisy(7, sd=3.0, mean=0.5)
    totals = {2: true[2].reshape(5, -1).sum(axis=1)}
    fit = topdown_nonnegative(SHAPE, TABLES, est, var, LAYOUT, totals, tol=1e-12)
    alone, _, _ = project_level(SHAPE, TABLES, est[0], level_weights(var[0]), totals=np.array([totals[2].sum()]),
                                tol=1e-12)
    for t in TABLES:
        np.testing.assert_allclose(region_tables(fit.joints[0], t), region_tables(alone, t), atol=1e-6)


def test_a_level_with_totals_is_the_bounded_least_squares_solution_on_its_polytope():
    """Two children of a fixed parent with totals: x2 = X - x1, so the level is least squares in x1 over
    ``0 <= x1 <= X`` with ``sum x1 = T1``: SLSQP on the dense problem agrees."""
    from scipy.optimize import minimize

    rng = np.random.default_rng(11)
    shape, tables = (2, 3), [(0,), (1,), (0, 1)]
    parent = rng.uniform(0.0, 4.0, size=(1, *shape))
    t1 = float(parent.sum()) * 0.3
    targets = [np.stack([region_tables(parent * f, t)[0] + rng.normal(0, 1.5, size=region_tables(parent, t).shape[1:])
                         for f in (0.3, 0.7)]) for t in tables]
    w = np.array([[1.0, 0.5, 0.25], [0.5, 1.0, 2.0]])
    x, _, _ = project_level(shape, tables, targets, w, parents=np.array([0, 0]), parent_joints=parent,
                            totals=np.array([t1, float(parent.sum()) - t1]), tol=1e-13, max_iter=100_000)
    mats = [_matrix(shape, t) for t in tables]
    big = parent.ravel()

    def objective(x1):
        return sum(w[0, k] * np.sum((m @ x1 - y[0].ravel()) ** 2) + w[1, k] * np.sum((m @ (big - x1) - y[1].ravel()) ** 2)
                   for k, (m, y) in enumerate(zip(mats, targets)))

    ref = minimize(objective, big * 0.3, method="SLSQP", bounds=list(zip(np.zeros(6), big)),
                   constraints=[{"type": "eq", "fun": lambda v: v.sum() - t1}], options={"ftol": 1e-14, "maxiter": 500})
    assert ref.success
    assert objective(x[0].ravel()) <= ref.fun + 1e-6
    np.testing.assert_allclose(x[0].ravel(), ref.x, atol=1e-4)
    assert x.reshape(2, -1).sum(axis=1) == pytest.approx([t1, float(parent.sum()) - t1], abs=1e-9)


@pytest.mark.slow
def test_integer_tables_with_public_state_totals_keep_every_levels_accuracy():
    """Issue 44, item 1, on its shape: 4 regions > 51 states of unequal size, 4 tables, rho = 0.5, public
    state totals. Every level's non-negative and integer tables are within 1.15x of that level's
    unconstrained RMSE (it was 5.8x nationally and 2x for the regions when the states were fitted first)."""
    import pandas_dp as pdp
    from benchmarks.bench_census_integer import CATEGORIES as cats, WORKLOAD as workload, survey

    df, hierarchy = survey()
    truth = {lvl: [df.groupby(([lvl] if lvl != "national" else []) + list(t)).size() for t in workload]
             for lvl in ("national", "region", "state")}
    errors: dict[tuple[str, str], list[float]] = {}
    for seed in range(6):
        with pdp.budget(rho=0.5):
            r = df.dp.marginals(workload, categories=cats, by=["region", "state"], hierarchy=hierarchy, rho=0.5,
                                public_totals={"state": df.groupby("state").size().astype(float)},
                                rng=np.random.default_rng(seed))
        for name, res in (("unconstrained", r), ("nonnegative", r.nonnegative()), ("integer", r.integer())):
            for lvl, regions in (("national", [None]), ("region", range(4)), ("state", range(51))):
                for t, true in zip(workload, truth[lvl]):
                    for reg in regions:
                        got = res.table(t, level=None if reg is None else lvl, region=reg).counts
                        want = (true if reg is None else true.xs(reg, level=0)).reindex(got.index, fill_value=0)
                        errors.setdefault((name, lvl), []).extend(((got.to_numpy(float) - want.to_numpy(float)) ** 2))
    for lvl in ("national", "region", "state"):
        base = np.sqrt(np.mean(errors[("unconstrained", lvl)]))
        for name in ("nonnegative", "integer"):
            assert np.sqrt(np.mean(errors[(name, lvl)])) <= 1.15 * base, (name, lvl)
