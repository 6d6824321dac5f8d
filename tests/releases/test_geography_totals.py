"""``histogram(..., by=[...], public_totals={level: Series})``: public facts matched exactly.

The estimate and its variances are checked against a dense GLS with the totals as equality
constraints (brute force over every finest region's cells); the release against the boundary
rule (bad totals loud and before any charge, neighbouring frames the same outcome); Dask and the
CLI spec against the pandas release.
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pandas_dp as pdp
from pandas_dp.algorithms.geography.release import release_geography
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import ZCDP, PureDP, Sensitivity
from pandas_dp.testing import assert_same_outcome, with_row

HIER = pd.DataFrame({"state": ["B", "A", "A", "C", "B", "C", "C"],
                     "county": ["b1", "a2", "a1", "c3", "b2", "c1", "c2"]})
AGE_EDGES = [0, 3, 6, 10]
SEXES = ["F", "M"]
STATE_TOTALS = pd.Series({"C": 41.0, "A": 30.5, "B": 52.0})     # public facts (any order, not integers)


def population(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = HIER.iloc[rng.integers(0, len(HIER), n)].reset_index(drop=True)
    return rows.assign(age=rng.integers(0, 10, n), sex=rng.choice(SEXES, n))


BASE = population(120, 0)


def release(frame, **kw):
    args = dict(bins={"age": AGE_EDGES}, categories={"sex": SEXES}, by=["state", "county"], hierarchy=HIER,
                epsilon=1.0, rng=np.random.default_rng(3), public_totals={"state": STATE_TOTALS})
    args.update(kw)
    return frame.dp.histogram(["age", "sex"], **args)


def indicators(res: pdp.GeographyHistogram) -> list[np.ndarray]:
    """``A[l][r, j] = 1`` when finest region ``j`` lies in region ``r`` of level ``l``."""
    n_leaf = len(res.regions[-1])
    out, anc = [np.eye(n_leaf)], np.arange(n_leaf)
    for lvl in range(len(res.levels) - 1, 0, -1):
        anc = np.asarray(res.parents[lvl])[anc]
        a = np.zeros((len(res.regions[lvl - 1]), n_leaf))
        a[anc, np.arange(n_leaf)] = 1.0
        out.append(a)
    return out[::-1]


def dense_gls(res: pdp.GeographyHistogram, totals: dict[int, np.ndarray]):
    """Constrained GLS over the finest regions' cells (unknowns ``x``, leaf-major): estimate and covariance."""
    a = indicators(res)
    cells = res.domain.size
    rows, ys, weights = [], [], []
    for lvl, noise in enumerate(res.noises):
        if noise is not None:
            rows.append(np.kron(a[lvl], np.eye(cells)))
            ys.append(np.asarray(res.detail.noisy[lvl], dtype=float).ravel())
            weights.append(np.full(rows[-1].shape[0], 1.0 / noise.variance()))
    x_mat, y, w = np.vstack(rows), np.concatenate(ys), np.concatenate(weights)
    c = np.vstack([np.kron(a[lvl], np.ones((1, cells))) for lvl in totals])
    t = np.concatenate([totals[lvl] for lvl in totals])
    x0 = np.linalg.lstsq(c, t, rcond=None)[0]
    _, sv, vt = np.linalg.svd(c)
    basis = vt[int(np.sum(sv > 1e-9)):].T                  # the null space of the constraints
    inner = np.linalg.inv(basis.T @ x_mat.T @ (w[:, None] * x_mat) @ basis)
    x_hat = x0 + basis @ inner @ (basis.T @ x_mat.T @ (w * (y - x_mat @ x0)))
    return a, x_hat, basis @ inner @ basis.T


@pytest.mark.parametrize("level, weights", [("state", [1, 1, 2]), ("county", [0, 1, 1]), ("national", [1, 0, 1])])
def test_estimates_and_variances_are_the_dense_constrained_gls(level, weights):
    rng = np.random.default_rng(7)
    totals = {"state": STATE_TOTALS, "national": pd.Series({"national": 123.5}),
              "county": pd.Series(rng.uniform(0, 30, len(HIER)).round(1), index=HIER["county"])}[level]
    with pdp.budget(epsilon=1.0) as b:
        res = release(BASE, level_weights=weights, public_totals={level: totals})
    assert b.spent == 1.0 and len(b.ledger) == 1 and res.params["public_totals"] == [level]
    lvl = res.levels.index(level)
    a, x_hat, cov = dense_gls(res, {lvl: totals.reindex(res.regions[lvl]).to_numpy()})
    cells = res.domain.size
    for k, name in enumerate(res.levels):
        q = np.kron(a[k], np.eye(cells))
        np.testing.assert_allclose(res.table(name).to_numpy().ravel(), q @ x_hat, rtol=1e-9, atol=1e-8)
        variance = np.einsum("ij,jk,ik->i", q, cov, q)
        np.testing.assert_allclose(res.variance.loc[name].to_numpy(), variance, rtol=1e-8, atol=1e-9)
        region_w, cell_w = np.arange(len(res.regions[k])) + 1.0, np.linspace(-1, 2, cells)
        combo = np.kron(region_w @ a[k], cell_w)
        assert res.detail.sum_variance(k, region_w, cell_w) == pytest.approx(combo @ cov @ combo, rel=1e-8)


def test_totals_are_matched_exactly_at_their_level_and_summed_above():
    with pdp.budget(epsilon=1.0):
        res = release(BASE)
    by_state = res.table("state").sum(axis=1)
    np.testing.assert_allclose(by_state.loc[STATE_TOTALS.index].to_numpy(), STATE_TOTALS.to_numpy(), rtol=0,
                               atol=1e-9)
    assert res.table("national").to_numpy().sum() == pytest.approx(STATE_TOTALS.sum(), abs=1e-9)
    counties = res.table("county").sum(axis=1).groupby(HIER.set_index("county")["state"]).sum()
    np.testing.assert_allclose(counties.loc[STATE_TOTALS.index].to_numpy(), STATE_TOTALS.to_numpy(), atol=1e-9)
    # a state's cells are uncertain, their sum is exact (a public fact); a county's sum is not
    assert (res.variance.loc["state"] > 0).all()
    assert res.detail.sum_variance(1, np.ones(3), np.ones(6)) == pytest.approx(0, abs=1e-9)
    assert res.detail.sum_variance(2, np.eye(7)[0], np.ones(6)) > 0.1
    assert "public totals matched exactly (conditioned GLS)" in res.post_processing
    assert not res._single_draws()          # intervals from the GLS variances, not one draw per cell


def test_a_national_total_is_kept_by_integer_and_nonnegative_tables():
    with pdp.budget(epsilon=2.0):
        whole = release(BASE, integer=True, public_totals={"national": pd.Series({"national": 130})})
        positive = release(BASE, nonnegative=True, public_totals={"national": pd.Series({"national": 99.5})})
    assert whole.counts.dtype == np.int64 and whole.table("national").to_numpy().sum() == 130
    assert whole.table("county").to_numpy().sum() == 130 and (whole.counts >= 0).all()
    assert positive.table("county").to_numpy().sum() == pytest.approx(99.5, abs=1e-9)
    assert (positive.counts >= 0).all()


BAD_TOTALS = {
    "not a dict": dict(public_totals=STATE_TOTALS),
    "unknown level": dict(public_totals={"city": STATE_TOTALS}),
    "not a Series": dict(public_totals={"state": [1.0, 2.0, 3.0]}),
    "missing region": dict(public_totals={"state": STATE_TOTALS[["A", "B"]]}),
    "negative": dict(public_totals={"state": STATE_TOTALS.replace(30.5, -1.0)}),
    "levels disagree": dict(public_totals={"state": STATE_TOTALS, "national": pd.Series({"national": 1.0})}),
    "state totals with integer": dict(integer=True),
    "state totals with nonnegative": dict(nonnegative=True),
    "fractional national total with integer": dict(integer=True,
                                                   public_totals={"national": pd.Series({"national": 9.5})}),
    "totals without by": dict(by=None, hierarchy=None),
}


@pytest.mark.parametrize("name", list(BAD_TOTALS))
def test_bad_totals_are_refused_before_any_charge(name):
    with pdp.budget(epsilon=1.0) as b:
        with pytest.raises(ParameterError) as info:
            release(BASE, **BAD_TOTALS[name])
    assert b.spent == 0 and len(b.ledger) == 0 and len(str(info.value)) > 40


def call(frame):
    return release(frame, rng=np.random.default_rng(9))


@pytest.mark.parametrize("row", [{"state": "C", "county": "c2", "age": 1, "sex": "M"},   # a valid neighbour
                                 {"state": "C", "county": "a1"}],                          # out of domain
                         ids=["valid", "county under the wrong state"])
def test_neighbouring_frames_have_the_same_outcome(row):
    odd = with_row(BASE, row)
    returned, _ = assert_same_outcome(call, BASE, odd)
    assert returned.kind == "returned" and returned.warnings == frozenset() and returned.charged == 1


def test_dask_gives_the_pandas_release():
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    frame = with_row(population(300, 4), {"county": ["x"]})
    with pdp.budget(epsilon=10.0):
        expected = release(frame)
        with dask.config.set(scheduler="sync"):
            got = release(dd.from_pandas(frame, npartitions=2))
    assert got == expected
    pd.testing.assert_series_equal(got.counts, expected.counts)


def test_the_cli_spec_takes_totals_by_level_and_region():
    from pandas_dp.cli.preflight import call_release
    from pandas_dp.cli.spec import Release
    from pandas_dp.privacy.loss import loss_from

    args = dict(columns="age", bins=AGE_EDGES, by=["state", "county"], hierarchy=HIER,
                public_totals={"state": STATE_TOTALS.to_dict()})
    with pdp.budget(epsilon=1.0):
        res = call_release(BASE, Release("h", "identity", loss_from(epsilon=1), args), np.random.default_rng(4))
    np.testing.assert_allclose(res.table("state").sum(axis=1).loc[STATE_TOTALS.index].to_numpy(),
                               STATE_TOTALS.to_numpy(), atol=1e-9)


def test_the_solver_takes_totals_of_any_level_and_checks_them():
    leaf = np.arange(15).reshape(5, 3)
    parents = [None, np.array([0, 0]), np.array([0, 0, 1, 1, 1])]
    losses = PureDP(1).split([0.25, 0.25, 0.5])
    rel = release_geography([None, None, leaf], parents, level_losses=losses, level_totals={2: np.full(5, 4.0)},
                            rng=np.random.default_rng(0))
    np.testing.assert_allclose(rel.estimates[2].sum(axis=1), 4.0)
    np.testing.assert_allclose(rel.estimates[0].sum(), 20.0)
    assert rel.level_totals == (2,) and rel.sum_variance(0, np.ones(1), np.ones(3)) == pytest.approx(0, abs=1e-9)
    for bad in ({3: np.ones(5)}, {1: np.ones(3)}, {1: np.array([1.0, -1.0])}, {1: np.ones(2), 0: np.ones(1)}):
        with pytest.raises(ParameterError):
            release_geography([None, None, leaf], parents, level_losses=losses, level_totals=bad)


@st.composite
def trees_with_totals(draw):
    """A random region tree (1-3 levels below the root, fan-outs 1-3), its leaf tables, and totals of one level."""
    depth = draw(st.integers(1, 3))
    parents, sizes = [None], [1]
    for _ in range(depth):
        fan = [draw(st.integers(1, 3)) for _ in range(sizes[-1])]
        parents.append(np.repeat(np.arange(sizes[-1]), fan))
        sizes.append(sum(fan))
    cells = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**16))
    level = draw(st.integers(0, depth))
    leaf_totals = np.random.default_rng(seed).uniform(0, 50, sizes[-1])
    totals = leaf_totals
    for lvl in range(depth, level, -1):
        totals = np.bincount(parents[lvl], weights=totals, minlength=sizes[lvl - 1])
    leaf = np.random.default_rng(seed + 1).integers(0, 20, (sizes[-1], cells))
    return parents, leaf, level, totals, seed


@settings(max_examples=15, deadline=None, database=None)
@given(case=trees_with_totals())
def test_any_level_totals_are_matched_and_every_parent_is_the_sum_of_its_children(case):
    parents, leaf, level, totals, seed = case
    losses = PureDP(1).split([Fraction(1, len(parents))] * len(parents))
    rel = release_geography([None] * (len(parents) - 1) + [leaf], parents, level_losses=losses,
                            level_totals={level: totals}, rng=np.random.default_rng(seed))
    np.testing.assert_allclose(rel.estimates[level].sum(axis=1), totals, rtol=1e-9, atol=1e-8)
    for lvl in range(1, len(parents)):
        summed = np.zeros_like(rel.estimates[lvl - 1])
        np.add.at(summed, parents[lvl], rel.estimates[lvl])
        np.testing.assert_allclose(summed, rel.estimates[lvl - 1], rtol=1e-9, atol=1e-8)
    assert all(np.all(v >= -1e-9) for v in rel.variances)


# -- the neighbours of a release with public totals: change one record, the totals held (issue 41, item 4) -------
MOVED = "change one record (public totals held)"


def _ledger_params(budget) -> dict:
    params = budget.ledger["params"].iloc[-1]
    return params if isinstance(params, dict) else json.loads(params)


@pytest.mark.parametrize("kw, part, noise", [
    ({"epsilon": 1.0}, "noise_scale", lambda loss: PureDP(loss).noise(Sensitivity(2, 2))),
    ({"rho": 0.5}, "sigma2", lambda loss: ZCDP(loss).noise(Sensitivity(2, 2)))])
@pytest.mark.parametrize("flags", [{}, {"nonnegative": True}, {"integer": True}])
def test_histogram_with_public_totals_is_calibrated_for_a_two_cell_move(kw, part, noise, flags):
    # One record changing cells moves each level's tables by L1 = 2, L2**2 = 2: the noise is that of
    # the level's loss at that sensitivity (twice the scale under pure DP, twice sigma**2 under zCDP);
    # the charge stays the loss asked for.
    totals = {"national": pd.Series({"national": 120.0})} if flags else {"state": STATE_TOTALS}
    measure = next(iter(kw))
    with pdp.budget(**{measure: 5}) as b:
        res = release(BASE, **{"epsilon": None, **kw}, level_weights=[1, 1, 2], public_totals=totals, **flags)
    per_level = [Fraction(1, 4), Fraction(1, 4), Fraction(1, 2)]
    amount = Fraction(kw[measure]).limit_denominator()
    assert [n.describe() for n in res.noises] == [noise(amount * s).describe() for s in per_level]
    assert b.spent == kw[measure] and res.params["neighbours"] == MOVED
    assert res.params["sensitivity"] == {"l1": "2", "l2_squared": "2"}
    assert _ledger_params(b)["neighbours"] == MOVED


def test_histogram_without_public_totals_keeps_add_remove_noise():
    with pdp.budget(epsilon=5) as b:
        res = release(BASE, public_totals=None, level_weights=[1, 1, 2])
    assert [n.describe()["noise_scale"] for n in res.noises] == [4, 4, 2]
    assert res.params["sensitivity"] == 1 and "neighbours" not in res.params
    assert "neighbours" not in _ledger_params(b)


@pytest.mark.parametrize("kw", [{"epsilon": 1.0}, {"rho": 0.5}])
@pytest.mark.parametrize("publish", [None, "nonnegative", "integer"])
def test_marginals_with_public_totals_are_planned_for_a_two_cell_move(kw, publish):
    # ResidualPlanner's plan noises whole marginals, each with its part of the loss: a record changing
    # moves each by two cells, so the plan is made for Sensitivity(2, 2) and every noise is its part's.
    measure = next(iter(kw))
    args = dict(bins={"age": AGE_EDGES}, categories={"sex": SEXES}, by=["state", "county"], hierarchy=HIER,
                rng=np.random.default_rng(3), **kw)
    totals = {"national": pd.Series({"national": 120.0})}
    flags = {} if publish is None else {publish: True}
    with pdp.budget(**{measure: 5}) as b:
        held = BASE.dp.marginals([("age", "sex")], public_totals=totals, **args, **flags)
    with pdp.budget(**{measure: 5}):
        free = BASE.dp.marginals([("age", "sex")], **args)
    assert held.params["neighbours"] == MOVED and _ledger_params(b)["neighbours"] == MOVED
    assert held.params["sensitivity"] == {"l1": "2", "l2_squared": "2"} == _ledger_params(b)["sensitivity"]
    assert "neighbours" not in free.params and free.params["sensitivity"] == {"l1": "1", "l2_squared": "1"}
    assert b.spent == kw[measure]
    for plan in held.geography.plans:
        for part, n in zip(plan.losses, plan.noises):
            if n is not None:   # every measured marginal: its part of the loss at sensitivity (2, 2)
                assert n.describe() == part.noise(Sensitivity(2, 2)).describe()
    # the widest noise is twice the add/remove scale (pure) or twice its variance (zCDP): same plan, same shares
    ratio = held.noise.variance() / free.noise.variance()
    assert ratio == pytest.approx(4.0 if measure == "epsilon" else 2.0, rel=0.05)
