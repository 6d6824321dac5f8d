"""``df.dp.marginals(..., by=[...], hierarchy=...)``: the workload for every region of a geography.

The estimate is checked against a brute-force dense GLS over the whole model (every finest region's
full-domain data vector, every measured marginal of every region of every level), with and without
public totals; the release layer against the boundary rule (public inputs loud and before any charge,
private rows never), on neighbouring frames; the engines against a pandas groupby.
"""

from __future__ import annotations

import itertools
import pickle

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.algorithms.marginals.geography import (geography_gls, measure_levels, region_sum_down,
                                                      region_workload)
from pandas_dp.algorithms.marginals.plan import plan_residuals
from pandas_dp.algorithms.marginals.workload import make_workload
from pandas_dp.algorithms.geography.layout import region_layout
from pandas_dp.domain.grid import make_grid
from pandas_dp.domain.geography import region_tree
from pandas_dp.engines.pandas.geography_marginals import region_marginal_counts
from pandas_dp.privacy.loss import zcdp
from pandas_dp.testing import assert_same_outcome

HIER = pd.DataFrame({"state": ["A", "A", "B"], "county": ["a1", "a2", "b1"]})
DOMAIN = dict(bins={"age": [0, 18, 65, 100]}, categories={"sex": ["F", "M"], "race": ["x", "y", "z"]})
WORKLOAD = [("age", "sex"), ("sex", "race")]
COUNTIES = {"a1": "A", "a2": "A", "b1": "B"}


def _frame(n: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    county = rng.choice(list(COUNTIES), n)
    return pd.DataFrame({"pid": np.arange(n) // 2, "state": [COUNTIES[c] for c in county], "county": county,
                         "age": rng.integers(0, 100, n), "sex": rng.choice(["F", "M"], n),
                         "race": rng.choice(["x", "y", "z"], n)})


D = _frame()


def _release(frame: pd.DataFrame, seed: int = 1, **kw):
    loss = {"rho": 0.5} if "epsilon" not in kw else {}
    args = {**DOMAIN, **loss, "by": ["state", "county"], "hierarchy": HIER, **kw}
    return frame.dp.marginals(kw.pop("workload", WORKLOAD), **{k: v for k, v in args.items() if k != "workload"},
                              rng=np.random.default_rng(seed))


# ------------------------------------------------------------------------------------------- the estimate
def _brute_force(sizes, tables, parents, n_regions, plans, noisy, totals=None):
    """Dense GLS over the full model: unknowns are every leaf's full-domain counts."""
    cells = int(np.prod(sizes))
    leaves = n_regions[-1]
    member = [np.eye(leaves)]                      # member[l][r, leaf]: leaf lies in region r of level l
    for lvl in range(len(n_regions) - 1, 0, -1):
        up = np.zeros((n_regions[lvl - 1], n_regions[lvl]))
        up[parents[lvl], np.arange(n_regions[lvl])] = 1
        member.insert(0, up @ member[0])

    def marginal_matrix(attrs):
        grid = np.indices(sizes).reshape(len(sizes), -1)
        code = np.ravel_multi_index(tuple(grid[list(attrs)]), tuple(sizes[i] for i in attrs)) if attrs else \
            np.zeros(cells, dtype=int)
        m = np.zeros((int(np.prod([sizes[i] for i in attrs])) if attrs else 1, cells))
        m[code, np.arange(cells)] = 1
        return m

    rows, ys, precisions = [], [], []
    for lvl, (plan, y) in enumerate(zip(plans, noisy)):
        if plan is None:
            continue
        for a, v in zip(plan.residuals, plan.noise_variances()):
            if a not in y:
                continue
            block = np.kron(member[lvl], marginal_matrix(a))
            rows.append(block)
            ys.append(y[a].reshape(-1).astype(float))
            precisions.append(np.full(block.shape[0], 1.0 / v))
    x_mat, y_vec, w = np.vstack(rows), np.concatenate(ys), np.concatenate(precisions)
    x0, basis = np.zeros(x_mat.shape[1]), np.eye(x_mat.shape[1])
    for lvl, t in (totals or {}).items():          # public totals: x = x0 + basis z with C x0 = t, C basis = 0
        c = np.kron(member[lvl], np.ones((1, cells)))
        x0 = np.linalg.lstsq(c, np.asarray(t, dtype=float), rcond=None)[0]
        _, sv, vt = np.linalg.svd(c)
        basis = vt[int(np.sum(sv > 1e-9)):].T
    info = basis.T @ x_mat.T @ (w[:, None] * x_mat) @ basis
    inner = np.linalg.pinv(info, rcond=1e-12, hermitian=True)
    cov = basis @ inner @ basis.T
    x_hat = x0 + basis @ inner @ (basis.T @ x_mat.T @ (w * (y_vec - x_mat @ x0)))

    def answer(lvl, attrs):
        q = np.kron(member[lvl], marginal_matrix(attrs))
        return (q @ x_hat).reshape(n_regions[lvl], -1), np.einsum("ij,jk,ik->i", q, cov, q).reshape(
            n_regions[lvl], -1)
    return answer


@pytest.mark.parametrize("with_totals", [False, True], ids=["gls", "public totals"])
def test_the_estimate_is_the_dense_gls_of_the_whole_model(with_totals):
    sizes, tables = [2, 3], [(0, 1), (1,)]
    work = make_workload(sizes, tables)
    parents = [None, np.array([0, 0]), np.array([0, 0, 1])]
    n_regions = [1, 2, 3]
    layout = region_layout(parents, n_regions)
    rng = np.random.default_rng(7)
    leaf = {(0, 1): rng.integers(0, 20, (3, 2, 3))}
    levels = [leaf[(0, 1)].sum(axis=0, keepdims=True), np.stack([leaf[(0, 1)][:2].sum(0), leaf[(0, 1)][2]]),
              leaf[(0, 1)]]
    plans = [plan_residuals(work, loss=zcdp(r)) for r in (0.2, 0.5, 1.0)]
    counts = [region_sum_down({(0, 1): t}, work) for t in levels]
    noisy = measure_levels(counts, plans, rng=np.random.default_rng(3))
    totals = {1: levels[1].sum(axis=(1, 2)).astype(float) + np.array([2.0, -1.0])} if with_totals else None
    est = geography_gls(noisy, plans, layout, public_totals=totals)
    answer = _brute_force(sizes, tables, parents, n_regions, plans, noisy, totals)
    for lvl in range(3):
        for attrs in [(0, 1), (1,), (0,), ()]:
            want, var = answer(lvl, attrs)
            got = est.marginal(lvl, attrs).reshape(n_regions[lvl], -1)
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(np.repeat(est.variance(lvl, attrs)[:, None], got.shape[1], axis=1), var,
                                       rtol=1e-5, atol=1e-6)
    if with_totals:
        np.testing.assert_allclose(est.marginal(1, ()).ravel(), totals[1], rtol=0, atol=1e-9)
        np.testing.assert_allclose(est.variance(1, ()), 0.0, atol=1e-12)


def test_counting_is_a_groupby_of_every_region_and_table():
    frame = _frame(500, seed=4)
    tree = region_tree(frame.columns, None, ["state", "county"], hierarchy=HIER)
    dims = [make_grid(frame, ["age"], bins={"age": [0, 18, 65, 100]}),
            make_grid(frame, ["sex"], categories={"sex": ["F", "M"]})]
    work = make_workload([3, 2], [(0, 1)])
    got = region_marginal_counts(frame, tree, dims, region_workload(work, 3), block_rows=128)
    age = pd.cut(frame["age"], [0, 18, 65, 100], right=False)
    want = frame.groupby([frame["county"], age, frame["sex"]], observed=False).size()
    np.testing.assert_array_equal(got[(0, 1, 2)].ravel(), want.to_numpy())


# ------------------------------------------------------------------------------------------- the release
def test_every_region_agrees_with_its_parent_and_every_table_with_every_other():
    with pdp.budget(rho=1.0) as b:
        t = _release(D)
    assert isinstance(t, pdp.MarginalTables) and b.spent == 0.5 and len(b.ledger) == 1
    assert t.levels == ("national", "state", "county") and t.n_regions == (1, 2, 3)
    for cols in [("age", "sex"), ("sex", "race"), ("sex",), ()][:3]:
        parent = {s: t.table(cols, level="state", region=s).counts for s in ("A", "B")}
        kids = {s: sum(t.table(cols, level="county", region=c).counts for c in COUNTIES if COUNTIES[c] == s)
                for s in ("A", "B")}
        for s in ("A", "B"):
            np.testing.assert_allclose(kids[s].to_numpy(), parent[s].to_numpy(), rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose((parent["A"] + parent["B"]).to_numpy(), t.table(cols).counts.to_numpy(),
                                   rtol=1e-12, atol=1e-9)
    for c in COUNTIES:   # within a region, the tables agree
        ab = t.table(("age", "sex"), level="county", region=c).counts.groupby(level="sex").sum()
        sr = t.table(("sex", "race"), level="county", region=c).counts.groupby(level="sex").sum()
        np.testing.assert_allclose(ab.to_numpy(), sr.to_numpy(), rtol=1e-12, atol=1e-9)
    frame = t.to_frame()
    assert list(frame.columns) == ["level", "region", "table", "age", "sex", "race", "estimate", "variance",
                                   "std_error"]
    assert len(frame) == 6 * (6 + 6)
    one = frame[(frame.region == "a2") & (frame.table == ("age", "sex"))]
    tbl = t.table(("age", "sex"), level="county", region="a2")
    np.testing.assert_allclose(one["estimate"].to_numpy(), tbl.counts.to_numpy())
    np.testing.assert_allclose(one["variance"].to_numpy(), tbl.variance.to_numpy())
    assert pickle.loads(pickle.dumps(t)) == t
    with pytest.raises(pdp.ParameterError, match="region="):
        t.table("sex", level="county")
    with pytest.raises(pdp.ParameterError, match="Unknown region"):
        t.table("sex", level="county", region="zz")
    with pdp.budget(rho=1.0):
        flat = D.dp.marginals(WORKLOAD, **DOMAIN, rho=0.5, rng=np.random.default_rng(0))
    with pytest.raises(pdp.ParameterError, match="without by="):
        flat.table("sex", level="state", region="A")
    assert "levels=['national', 'state', 'county']" in repr(t) and set(t.plan["level"]) == set(t.levels)
    # the GLS borrows strength: a county's table is more precise than its own measurement alone
    own = t.plan[(t.plan.level == "county") & (t.plan.marginal == ("age", "sex"))]
    assert tbl.variance.iloc[0] < own["noise_variance"].iloc[0]


def test_public_totals_are_matched_exactly_at_their_level_and_above():
    totals = D.groupby("state").size().astype(float) + pd.Series({"A": 3.0, "B": -2.0})
    with pdp.budget(rho=1.0):
        t = _release(D, public_totals={"state": totals})
    for s in ("A", "B"):
        for cols in WORKLOAD:
            assert t.table(cols, level="state", region=s).counts.sum() == pytest.approx(totals[s], abs=1e-9)
    assert t.table("sex").counts.sum() == pytest.approx(totals.sum(), abs=1e-9)
    county_total = sum(t.table("sex", level="county", region=c).counts.sum() for c in ("a1", "a2"))
    assert county_total == pytest.approx(totals["A"], abs=1e-9)
    assert "public_totals" in t.params and list(t.params["public_totals"]) == ["state"]


def test_the_flat_case_by_categories():
    with pdp.budget(rho=1.0):
        t = _release(D, by="county", hierarchy=None, by_categories=["a1", "a2", "b1"])
    assert t.levels == ("national", "county") and t.params["level_shares"] == ["0", "1"]
    total = sum(t.table(("age", "sex"), level="county", region=c).counts for c in COUNTIES)
    np.testing.assert_allclose(total.to_numpy(), t.table(("age", "sex")).counts.to_numpy(), rtol=1e-12)


def _bad_calls():
    ok = dict(workload=WORKLOAD, **DOMAIN, rho=0.5, by=["state", "county"], hierarchy=HIER)
    good = pd.Series({"A": 150.0, "B": 150.0})
    yield "hierarchy without by", {**ok, "by": None}
    yield "no regions", {**ok, "hierarchy": None}
    yield "both tables", {**ok, "by": "county", "hierarchy": HIER, "by_categories": ["a1"]}
    yield "a level weight short", {**ok, "level_weights": [1, 1]}
    yield "finest level unmeasured", {**ok, "level_weights": [1, 1, 0]}
    yield "a by column in the workload", {**ok, "workload": [("state", "sex")],
                                          "categories": {"sex": ["F", "M"], "state": ["A", "B"]}}
    yield "totals not a dict", {**ok, "public_totals": good}
    yield "totals of an unknown level", {**ok, "public_totals": {"city": good}}
    yield "totals not a Series", {**ok, "public_totals": {"state": [150, 150]}}
    yield "totals missing a region", {**ok, "public_totals": {"state": good[["A"]]}}
    yield "totals of an extra region", {**ok, "public_totals": {"state": pd.Series({"A": 1.0, "B": 1, "C": 1})}}
    yield "a negative total", {**ok, "public_totals": {"state": pd.Series({"A": -1.0, "B": 1.0})}}
    yield "a missing total", {**ok, "public_totals": {"state": pd.Series({"A": np.nan, "B": 1.0})}}
    yield "totals as text", {**ok, "public_totals": {"state": pd.Series({"A": "1", "B": "2"})}}
    yield "totals that disagree", {**ok, "public_totals": {"state": good, "national": pd.Series({"national": 1.0})}}
    yield "a unit without bound", {**ok, "privacy_unit": "pid"}
    yield "a loss too small", {**ok, "rho": 1e-30}
    yield "over the budget", {**ok, "rho": 2.0}


@pytest.mark.parametrize("name, kwargs", list(_bad_calls()), ids=[n for n, _ in _bad_calls()])
def test_public_argument_errors_are_raised_before_any_charge(name, kwargs):
    with pdp.budget(rho=1.0) as b:
        with pytest.raises(pdp.PandasDPError):
            D.dp.marginals(**kwargs)
    assert b.spent == 0 and len(b.ledger) == 0


@pytest.mark.parametrize("row", [{"pid": 999, "state": "A", "county": "zz", "age": 30, "sex": "F", "race": "x"},
                                 {"pid": 999, "state": "B", "county": "a1", "age": 30, "sex": "F", "race": "x"},
                                 ],
                         ids=["region not in the hierarchy", "county under the wrong state"])
def test_a_row_outside_the_domain_changes_nothing(row):
    neighbour = pd.concat([D.astype(object), pd.DataFrame([row]).astype(object)], ignore_index=True).infer_objects()
    with pdp.budget(rho=2.0) as b:
        a = _release(D)
        c = _release(neighbour)
    pd.testing.assert_frame_equal(a.to_frame(), c.to_frame(), check_exact=True)
    assert list(b.ledger["rho"]) == [0.5, 0.5]


def test_odd_region_values_leave_a_seeded_release_byte_identical():
    from pandas_dp.testing import with_row

    with pdp.budget(rho=10.0):
        ref = _release(D).to_frame()
        for value in (["a1"], np.nan, b"a1", "A1"):  # a list, missing, bytes, a near miss
            got = _release(with_row(D, {"pid": 999, "state": "A", "county": value, "age": 30, "sex": "F",
                                        "race": "x"})).to_frame()
            pd.testing.assert_frame_equal(ref, got, check_exact=True)


def test_a_row_moved_across_regions_gives_the_same_outcome():
    moved = D.copy()
    moved.loc[0, ["state", "county"]] = ["B", "b1"] if D.loc[0, "state"] == "A" else ["A", "a1"]
    assert_same_outcome(lambda f: _release(f), D, moved, budget={"rho": 10.0})


def test_a_privacy_unit_bounds_the_rows_and_scales_the_noise():
    frame = pd.DataFrame({"pid": np.repeat(np.arange(30), 4), "state": "A", "county": np.repeat(["a1", "a2"], 60),
                          "age": 30, "sex": np.tile(["F", "M"], 60), "race": "x"})
    with pdp.budget(rho=10**6):
        t = _release(frame, rho=10**5, privacy_unit="pid", max_rows=2)
        flat = _release(frame, rho=10**5)
    assert t.table("sex").counts.sum() == pytest.approx(60, abs=0.5)
    plans = t.geography.plans
    for bounded, rows in zip(plans, flat.geography.plans):
        for u, r in zip(bounded.noises, rows.noises):
            assert (u is None) == (r is None) and (u is None or u.sigma2 == 4 * r.sigma2)
    unit = pd.DataFrame({"pid": [10_000] * 3, "state": ["A", "B", "A"], "county": ["a1", "b1", "a2"],
                         "age": [5, 30, 50], "sex": ["F", "M", "F"], "race": ["x", "y", "z"]})
    assert_same_outcome(lambda f: _release(f, privacy_unit="pid", max_rows=2), D,
                        pd.concat([D, unit], ignore_index=True), budget={"rho": 10.0})


def test_dask_gives_the_pandas_release_on_mixed_dtype_partitions():
    dd = pytest.importorskip("dask.dataframe")
    mixed = pd.concat([D.iloc[:150], D.iloc[150:].astype({"age": float})], ignore_index=True)
    parts = dd.from_pandas(D.iloc[:150], npartitions=1), dd.from_pandas(D.iloc[150:].astype({"age": float}),
                                                                         npartitions=2)
    frame = dd.concat(list(parts))
    with pdp.budget(rho=10.0):
        a = _release(mixed)
        b = _release(frame)
        c = _release(mixed, privacy_unit="pid", max_rows=1)
        d = _release(frame, privacy_unit="pid", max_rows=1)
    pd.testing.assert_frame_equal(a.to_frame(), b.to_frame(), check_exact=True)
    pd.testing.assert_frame_equal(c.to_frame(), d.to_frame(), check_exact=True)


# ---------------------------------------------------------------------------------------------- assert_dp
TINY = pd.DataFrame({"u": [0, 0, 1, 2], "state": ["A", "B", "A", "B"], "a": ["x", "y", "x", "y"]})
TINY_HIER = pd.DataFrame({"state": ["A", "B"]})


def _tiny_estimates(result):
    est = result.geography   # every region's table, from the core (to_frame builds labels: slower)
    return np.concatenate([est.marginal(level, (0,)).ravel() for level in (0, 1)])


@pytest.mark.slow
@pytest.mark.parametrize("loss", [dict(epsilon=1.0), dict(rho=0.5)], ids=["epsilon, a unit", "rho, a row"])
def test_assert_dp_on_a_tiny_geography(loss):
    # 2 levels (national, 2 states), one table. Under epsilon the neighbour adds a unit of two rows, one in
    # each state, bounded by max_rows=2; under rho it adds one row in state B.
    from pandas_dp.testing import assert_dp

    if "rho" in loss:
        neighbour, kw = pd.concat([TINY, pd.DataFrame({"u": [9], "state": ["B"], "a": ["x"]})], ignore_index=True), {}
    else:
        neighbour = pd.concat([TINY, pd.DataFrame({"u": [9, 9], "state": ["A", "B"], "a": ["y", "y"]})],
                              ignore_index=True)
        kw = dict(privacy_unit="u", max_rows=2)

    def mech(frame, rng):
        return frame.dp.marginals([("a",)], categories={"a": ["x", "y"]}, by="state", hierarchy=TINY_HIER, rng=rng,
                                  **kw, **loss)

    if "rho" in loss:
        delta = 1e-3
        assert_dp(mech, TINY, neighbour, epsilon=pdp.budget(**loss).epsilon_delta(delta), delta=delta,
                  trials=200, rng=5, statistic=_tiny_estimates, budget={"rho": 10**6})
    else:
        assert_dp(mech, TINY, neighbour, epsilon=1.0, trials=200, rng=5, statistic=_tiny_estimates)
