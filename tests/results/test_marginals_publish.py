"""Publishable table sets: ``df.dp.marginals(..., nonnegative=True | integer=True)``, ``.nonnegative()``,
``.integer()``, ``.sample()`` (post-processing of the release; the algorithms are tested in
tests/algorithms/test_marginals_publish.py)."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.cli.spec import release_table
from pandas_dp.testing import assert_same_outcome

CATS = {"a": ["x", "y", "z"], "b": [0, 1, 2, 3], "c": ["p", "q", "r"]}
CYCLE = [("a", "b"), ("b", "c"), ("a", "c")]


def _frame(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"pid": np.arange(n) // 2, "a": rng.choice(CATS["a"], n), "b": rng.integers(0, 4, n),
                         "c": rng.choice(CATS["c"], n)})


D = _frame()


def _release(frame: pd.DataFrame = D, workload=CYCLE, seed: int = 1, **kw):
    cats = {c: CATS[c] for c in CATS if any(c in t for t in workload)}
    return frame.dp.marginals(workload, categories=cats, rho=kw.pop("rho", 0.02), rng=np.random.default_rng(seed),
                              **kw)


def _assert_consistent(p, workload):
    """Every sub-table of a workload table is that table summed, exactly; one total; every cell >= 0."""
    totals = set()
    for table in workload:
        values = p.table(table).counts
        assert (values >= 0).all()
        totals.add(float(values.sum()))
        for col in table:
            summed = values.groupby(level=col, observed=True).sum() if len(table) > 1 else values
            assert np.array_equal(summed.to_numpy(), p.table(col).counts.to_numpy())   # exact, not close
    assert len(totals) == 1


def test_nonnegative_tables_are_consistent_exactly_and_close_to_the_unconstrained_ones():
    with pdp.budget(rho=1.0) as b:
        t = _release()
        p = _release(nonnegative=True)
    assert b.spent == pytest.approx(0.04) and len(b.ledger) == 2         # the same one charge each
    assert (t.to_frame()["estimate"] < 0).any()                          # the case that needs it
    assert isinstance(p, pdp.PublishedTables) and isinstance(p, pdp.MarginalTables) and p.kind == "nonnegative"
    _assert_consistent(p, CYCLE)
    pd.testing.assert_frame_equal(p.to_frame(), t.nonnegative().to_frame(), check_exact=True)
    frame = p.to_frame()
    assert list(frame.columns) == ["table", "a", "b", "c", "estimate", "variance", "std_error",
                                   "unconstrained_estimate"]
    assert frame.attrs["note"].startswith("biased")
    pd.testing.assert_series_equal(frame["variance"], t.to_frame()["variance"], check_names=False)
    pd.testing.assert_series_equal(frame["unconstrained_estimate"], t.to_frame()["estimate"], check_names=False)
    err = p.error()
    assert list(err["table"]) == CYCLE and (err["rmse_vs_unconstrained"] > 0).all()
    assert "non-negative" in p.post_processing[-1] and p.params["publish"]["kind"] == "nonnegative"


def test_a_nonnegative_unconstrained_release_is_kept():
    big = _frame(3000, seed=2)
    with pdp.budget(rho=100.0):
        t = _release(big, rho=100.0)   # cell variances near 1e-15: every table weighed at the floor
    assert (t.to_frame()["estimate"] > 5).all()
    p = t.nonnegative()
    assert p.error()["max_abs_vs_unconstrained"].max() < 1e-6


def test_integer_tables_are_consistent_nonnegative_integers_from_one_joint():
    with pdp.budget(rho=1.0):
        t = _release()
        p = _release(integer=True)
    assert p.kind == "integer" and p.table(("a", "b")).counts.dtype == np.int64
    _assert_consistent(p, CYCLE)
    assert p.total == round(t.nonnegative().total)
    err = p.error()
    assert {"rmse_vs_nonnegative", "max_abs_vs_nonnegative"} <= set(err.columns)
    frame = p.to_frame()
    np.testing.assert_allclose(frame["nonnegative_estimate"], t.nonnegative().to_frame()["estimate"], atol=1e-9)
    diff = frame["estimate"] - frame["nonnegative_estimate"]
    for table, row in zip(CYCLE, err.itertuples()):
        part = diff[frame["table"].map(lambda x, c=table: x == c)]
        assert row.rmse_vs_nonnegative == pytest.approx(float(np.sqrt((part ** 2).mean())))


def test_one_table_holding_every_column_is_rounded_cell_by_cell_within_one():
    nested = [("a", "b"), ("a",), ("b",)]
    with pdp.budget(rho=1.0):
        p = _release(workload=nested, integer=True)
    frame = p.to_frame()
    assert (np.abs(frame["estimate"] - frame["nonnegative_estimate"])[frame["table"] == ("a", "b")] < 1).all()
    _assert_consistent(p, nested)


def test_the_same_noisy_release_gives_byte_identical_publications():
    with pdp.budget(rho=1.0):
        t = _release()
        again = _release(integer=True)
    first, second = t.integer(), again
    assert first.joint.tobytes() == second.joint.tobytes()
    assert t.nonnegative().joint.tobytes() == t.nonnegative().joint.tobytes()


def test_sample_gives_labelled_records_whose_tables_are_the_published_ones():
    with pdp.budget(rho=1.0):
        t = _release()
    ints = t.integer()
    records = ints.sample(rng=np.random.default_rng(0))
    assert list(records.columns) == ["a", "b", "c"] and len(records) == ints.total
    for col in "abc":
        assert list(records[col].cat.categories) == list(ints.table(col).counts.index)
    for table in CYCLE:  # an integer joint is reproduced exactly by its systematic sample
        counts = records.groupby(list(table), observed=False).size()
        assert np.array_equal(counts.to_numpy(), ints.table(table).counts.to_numpy())
    records = t.sample(n=500, rng=np.random.default_rng(1))
    expected = t.nonnegative().table(("a", "b")).counts * 500 / t.nonnegative().total
    got = records.groupby(["a", "b"], observed=False).size().to_numpy()
    assert len(records) == 500 and np.abs(got - expected.to_numpy()).max() < 3
    first = t.sample(n=50, rng=np.random.default_rng(4))
    pd.testing.assert_frame_equal(first, t.sample(n=50, rng=np.random.default_rng(4)))
    for bad in (-1, 2.5, True, "10"):
        with pytest.raises(pdp.ParameterError, match="sample"):
            t.sample(n=bad)
    with pytest.raises(pdp.ParameterError, match="Generator"):
        t.sample(rng=3)


def test_the_result_reads_pickles_and_compares():
    with pdp.budget(rho=1.0):
        p = _release(integer=True)
    back = pickle.loads(pickle.dumps(p))
    assert back == p
    with pytest.raises(ValueError):            # the published joint is read-only and stays so
        p.joint[...] = 0
    with pytest.raises(ValueError):
        p.joint.flags.writeable = True
    with pytest.raises(TypeError, match="read-only"):
        p.params["publish"] = None
    with pytest.raises(AttributeError):
        p.kind = "nonnegative"
    counts = p.counts
    counts[:] = -1
    assert (p.counts >= 0).all()
    pd.testing.assert_frame_equal(back.to_frame(), p.to_frame())
    assert "PublishedTables(kind='integer'" in repr(p) and "rmse_vs_nonnegative" in p._repr_html_()
    with pytest.raises(pdp.ParameterError, match="not in the workload"):
        p.table(("a", "b", "c"))
    table = release_table(p)
    assert list(table.columns) == ["table", "a", "b", "c", "estimate", "unconstrained_estimate",
                                   "unconstrained_variance", "unconstrained_std_error"]
    assert (table["estimate"] == p.to_frame()["estimate"]).all()


def test_a_published_table_is_a_histogram_with_the_unconstrained_variances_marked_not_exact():
    with pdp.budget(rho=1.0):
        t = _release()
    for p in (t.nonnegative(), t.integer()):
        ab, gls = p.table(("b", "a")), t.table(("b", "a"))
        assert isinstance(ab, pdp.Histogram) and not ab.variance_exact
        assert ab.counts.index.equals(gls.counts.index)             # the table's own column order
        assert np.array_equal(ab.counts.to_numpy(), p.table(("a", "b")).counts.to_numpy().reshape(3, 4).T.ravel())
        frame = ab.to_frame()
        assert list(frame.columns) == ["estimate", "variance", "std_error"]
        np.testing.assert_array_equal(frame["variance"], gls.to_frame()["variance"])
        assert frame.attrs["note"].startswith("biased") and "biased" in repr(ab)
        marg = ab.marginal("a")                              # sums of published cells, still marked
        assert not marg.variance_exact and np.array_equal(marg.counts.to_numpy(), p.table("a").counts.to_numpy())
        np.testing.assert_allclose(marg.variance.to_numpy(), gls.marginal("a").variance.to_numpy())
    assert t.integer().integer() is not None and t.nonnegative().nonnegative().kind == "nonnegative"
    assert t.integer().nonnegative().kind == "nonnegative"


@pytest.mark.parametrize("kwargs", [{"nonnegative": "yes"}, {"integer": 1}, {"nonnegative": None},
                                    {"integer": True, "nonnegative": "no"},
                                    {"integer": True, "categories": {c: list(range(200)) for c in "abc"}}],
                         ids=["nonnegative a string", "integer a number", "nonnegative None",
                              "integer with a bad nonnegative", "joint too big"])
def test_the_options_are_public_inputs_checked_before_any_charge(kwargs):
    with pdp.budget(rho=1.0) as b:
        with pytest.raises(pdp.PandasDPError):
            D.dp.marginals(CYCLE, **{"categories": CATS, "rho": 0.5, **kwargs})
    assert b.spent == 0 and len(b.ledger) == 0


@pytest.mark.parametrize("option", ["nonnegative", "integer"])
@pytest.mark.parametrize("row", [{"pid": 99, "a": "x", "b": 3, "c": "p"},       # one more row in the domain
                                 {"pid": 99, "a": "w", "b": 3, "c": "p"}],      # out of the domain: dropped
                         ids=["in domain", "out of domain"])
def test_neighbouring_frames_give_the_same_outcome(option, row):
    neighbour = pd.concat([D, pd.DataFrame([row])], ignore_index=True)
    assert_same_outcome(lambda f: _release(f, **{option: True}), D, neighbour, budget={"rho": 1.0})


def test_a_whole_privacy_unit_more_gives_the_same_outcome():
    unit = pd.DataFrame({"pid": [500] * 3, "a": ["x", "y", "z"], "b": [0, 1, 2], "c": ["p", "q", "r"]})
    assert_same_outcome(lambda f: _release(f, integer=True, privacy_unit="pid", max_rows=2), D,
                        pd.concat([D, unit], ignore_index=True), budget={"rho": 1.0})


@pytest.mark.slow
def test_the_dask_accessor_takes_the_options():
    dd = pytest.importorskip("dask.dataframe")
    with pdp.budget(rho=1.0):
        local = _release(integer=True)
        dask = _release(dd.from_pandas(D, npartitions=3), integer=True)
    pd.testing.assert_frame_equal(local.to_frame(), dask.to_frame(), check_exact=True)
