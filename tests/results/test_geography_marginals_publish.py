"""``df.dp.marginals(..., by=[...], nonnegative=True | integer=True)`` and ``sample()`` by geography:
non-negative (integer) tables consistent across tables and regions, public totals matched exactly, the
boundary rule on neighbouring frames (the algorithm is tested in tests/algorithms/test_marginals_topdown.py)."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.cli.spec import release_table
from pandas_dp.results import GeographyPublishedTables
from pandas_dp.testing import assert_same_outcome

HIER = pd.DataFrame({"state": ["A", "A", "B", "B"], "county": ["a1", "a2", "b1", "b2"]})
COUNTIES = {"a1": "A", "a2": "A", "b1": "B", "b2": "B"}
DOMAIN = dict(bins={"age": [0, 18, 65, 100]}, categories={"sex": ["F", "M"], "race": ["x", "y", "z"]})
WORKLOAD = [("age", "sex"), ("sex", "race"), ("age", "race")]
LEVELS = {"national": ["national"], "state": ["A", "B"], "county": list(COUNTIES)}


def _frame(n: int = 80, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    county = rng.choice(list(COUNTIES), n)
    return pd.DataFrame({"pid": np.arange(n) // 2, "state": [COUNTIES[c] for c in county], "county": county,
                         "age": rng.integers(0, 100, n), "sex": rng.choice(["F", "M"], n),
                         "race": rng.choice(["x", "y", "z"], n)})


D = _frame()
TOTALS = {"state": D.groupby("state").size().astype(float) + pd.Series({"A": 3.0, "B": -2.0})}


def _release(frame: pd.DataFrame = D, seed: int = 1, **kw):
    args = {**DOMAIN, "rho": 0.05, "by": ["state", "county"], "hierarchy": HIER, **kw}
    return frame.dp.marginals(WORKLOAD, rng=np.random.default_rng(seed), **args)


def _assert_consistent(p):
    """Every joint >= 0 and every child's joint sums to its parent's exactly (so every table does); the
    tables of a region are read from its joint: sub-tables are sums, children's tables sum to the parent's."""
    joints = [np.asarray(j) for j in p.joints]
    for lvl in (1, 2):
        assert (joints[lvl] >= 0).all()
        parents = np.asarray(p.parents[lvl])
        summed = np.zeros_like(joints[lvl - 1])
        np.add.at(summed, parents, joints[lvl])
        assert np.array_equal(summed, joints[lvl - 1])                    # exact, not close
    for cols in WORKLOAD:
        values = p.table(cols, level="county", region="b2").counts
        assert np.array_equal(values.groupby(level=cols[0], observed=True).sum().to_numpy(),
                              p.table(cols[0], level="county", region="b2").counts.to_numpy())
        state = sum(p.table(cols, level="county", region=c).counts.to_numpy() for c in ("b1", "b2"))
        assert np.array_equal(state, p.table(cols, level="state", region="B").counts.to_numpy())


@pytest.fixture(scope="module")
def released():
    """One release with public state totals, and the same release asked for nonnegative=True."""
    with pdp.budget(rho=1.0) as b:
        t = _release(public_totals=TOTALS)
        p = _release(public_totals=TOTALS, nonnegative=True)
    assert len(b.ledger) == 2 and b.spent == pytest.approx(0.1)            # one charge each, nothing more
    return t, p


def test_nonnegative_tables_by_geography_are_consistent_and_match_public_totals(released):
    t, p = released
    assert (t.to_frame()["estimate"] < 0).any()                            # the case that needs it
    assert isinstance(p, GeographyPublishedTables) and isinstance(p, pdp.MarginalTables) and p.kind == "nonnegative"
    _assert_consistent(p)                                                  # dyadic grid: exact, not close
    for s in ("A", "B"):
        assert p.table("sex", level="state", region=s).counts.sum() == TOTALS["state"][s]
    assert p.total == TOTALS["state"].sum()
    assert all(np.array_equal(a, b) for a, b in zip(p.joints, t.nonnegative().joints))
    frame = p.to_frame()
    assert list(frame.columns) == ["level", "region", "table", "age", "sex", "race", "estimate", "variance",
                                   "std_error", "unconstrained_estimate"] and frame.attrs["note"].startswith("biased")
    table = p.table(("age", "sex"), level="county", region="b2")
    gls = t.table(("age", "sex"), level="county", region="b2")
    rows = frame[(frame["region"] == "b2") & (frame["table"] == ("age", "sex"))]
    np.testing.assert_array_equal(rows["estimate"], table.counts)
    np.testing.assert_array_equal(rows["variance"], gls.variance)
    np.testing.assert_array_equal(rows["unconstrained_estimate"], gls.counts)
    assert isinstance(table, pdp.Histogram) and not table.variance_exact
    np.testing.assert_array_equal(table.variance, gls.variance)
    err = p.error()
    assert list(err["level"].unique()) == ["national", "state", "county"] and (err["rmse_vs_unconstrained"] >= 0).all()


def test_integer_tables_by_geography_are_consistent_integers_with_the_rounding_error_per_level(released):
    t, _ = released
    p = t.integer()
    assert p.kind == "integer" and p.table("age", level="county", region="a1").counts.dtype == np.int64
    _assert_consistent(p)
    for s in ("A", "B"):
        assert p.table(("sex", "race"), level="state", region=s).counts.sum() == TOTALS["state"][s]
    err = p.error()
    assert {"rmse_vs_nonnegative", "max_abs_vs_nonnegative"} <= set(err.columns)
    assert all(np.array_equal(a, b) for a, b in zip(p.nonnegative_joints, t.nonnegative().joints))
    row = err[(err["level"] == "county") & (err["table"] == ("age", "sex"))].iloc[0]
    diff = (np.asarray(p.joints[2]) - np.asarray(p.nonnegative_joints[2])).sum(axis=3)   # (county, age, sex)
    assert row.cells == 4 * 3 * 2 and row.rmse_vs_nonnegative > 0
    assert row.rmse_vs_nonnegative == pytest.approx(float(np.sqrt(np.mean(diff ** 2))))
    assert p.integer() is p and p.nonnegative().kind == "nonnegative"
    again = t.nonnegative().integer()                    # rounded from the fitted joints, not fitted again
    assert all(np.array_equal(a, b) for a, b in zip(again.joints, p.joints))


def test_sample_by_geography_reproduces_the_integer_tables_of_every_county(released):
    p = released[0].integer()
    records = p.sample(rng=np.random.default_rng(0))
    assert list(records.columns) == ["state", "county", "age", "sex", "race"] and len(records) == p.total
    assert (records["county"].astype(str).map(COUNTIES) == records["state"].astype(str)).all()
    for county in COUNTIES:
        mine = records[records["county"] == county]
        for cols in WORKLOAD:
            counts = mine.groupby(list(cols), observed=False).size().to_numpy()
            assert np.array_equal(counts, p.table(cols, level="county", region=county).counts.to_numpy())
    few = p.unconstrained.sample(n=40, rng=np.random.default_rng(2))     # from the non-negative tables
    assert len(few) == 40 and list(few.columns) == ["state", "county", "age", "sex", "race"]
    pd.testing.assert_frame_equal(few, p.unconstrained.sample(n=40, rng=np.random.default_rng(2)))
    with pytest.raises(pdp.ParameterError, match="sample"):
        p.sample(n=-1)


def test_the_result_pickles_is_read_only_and_writes_a_cli_table(released):
    p = released[0].integer()
    back = pickle.loads(pickle.dumps(p))
    assert back == p and all(np.array_equal(a, b) for a, b in zip(back.joints, p.joints))
    with pytest.raises(ValueError):
        p.joints[-1][...] = 0
    with pytest.raises(AttributeError):
        p.kind = "nonnegative"
    assert "PublishedTables(kind='integer'" in repr(p) and "rmse_vs_nonnegative" in p._repr_html_()


@pytest.mark.slow
def test_the_cli_table_of_a_publication_by_geography(released):
    p = released[0].integer()
    table = release_table(p)
    assert {"level", "region", "estimate", "unconstrained_estimate", "unconstrained_std_error"} <= set(table.columns)
    assert (table["estimate"].to_numpy() == p.to_frame()["estimate"].to_numpy()).all()


@pytest.mark.parametrize("kwargs", [
    {"integer": True, "public_totals": {"state": TOTALS["state"] + 0.5}},
    {"nonnegative": "yes"},
    {"integer": True, "categories": {"sex": list(range(800)), "race": list(range(1000))}},
], ids=["integer with fractional public totals", "a bad flag", "joints of every region too big"])
def test_the_options_by_geography_are_checked_before_any_charge(kwargs):
    with pdp.budget(rho=1.0) as b:
        with pytest.raises(pdp.PandasDPError, match="whole numbers|nonnegative|2\\*\\*24"):
            _release(**kwargs)
    assert b.spent == 0 and len(b.ledger) == 0


@pytest.mark.parametrize("row", [{"pid": 99, "state": "A", "county": "a2", "age": 5, "sex": "F", "race": "z"},
                                 {"pid": 99, "state": "A", "county": "zz", "age": 5, "sex": "F", "race": "z"}],
                         ids=["in domain", "unknown county: dropped"])
def test_neighbouring_frames_give_the_same_outcome(row):
    neighbour = pd.concat([D, pd.DataFrame([row])], ignore_index=True)
    assert_same_outcome(lambda f: _release(f, integer=True, public_totals=TOTALS), D, neighbour,
                        budget={"rho": 1.0})


@pytest.mark.slow
def test_a_privacy_unit_runs_the_option():
    unit = pd.DataFrame({"pid": [500] * 3, "state": "B", "county": "b1", "age": [1, 30, 70], "sex": "M",
                         "race": ["x", "y", "z"]})
    assert_same_outcome(lambda f: _release(f, nonnegative=True, privacy_unit="pid", max_rows=2), D,
                        pd.concat([D, unit], ignore_index=True), budget={"rho": 1.0})


@pytest.mark.slow
def test_the_dask_accessor_takes_the_options_by_geography():
    dd = pytest.importorskip("dask.dataframe")
    with pdp.budget(rho=1.0):
        local = _release(integer=True)
        dask = _release(dd.from_pandas(D, npartitions=3), integer=True)
    pd.testing.assert_frame_equal(local.to_frame(), dask.to_frame(), check_exact=True)
