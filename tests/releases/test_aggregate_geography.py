"""``df.dp.aggregate(..., by=...)``: counts, sums and means for every region of a public geography, consistent.

References computed here: pandas' ``groupby(...).agg`` per level on the values clipped and rounded to the grid
(what the release estimates), ``histogram(by=...)`` for a count alone (the same measurement, so the same noise for
a seed), and the module's identities (children sum to parents; a mean is its consistent sum over its consistent
count).
"""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.errors import ParameterError
from pandas_dp.testing import assert_dp
from _slow import QUICK_TRIALS, SLOW_TRIALS

RNG = np.random.default_rng(5)
N = 900
HIER = pd.DataFrame({"state": ["A", "A", "B", "B", "B"], "county": ["a1", "a2", "b1", "b2", "b3"]})
_COUNTY = RNG.choice(HIER.county.to_numpy(), N)
FRAME = pd.DataFrame({"state": HIER.set_index("county").state.loc[_COUNTY].to_numpy(), "county": _COUNTY,
                      "sex": RNG.choice(["F", "M"], N), "income": RNG.gamma(2.0, 30_000.0, N).round(2),
                      "hours": RNG.integers(0, 80, N).astype(float), "pid": np.repeat(np.arange(N // 3), 3)})
BOUNDS = {"income": (0, 250_000), "hours": (0, 60)}
AGGS = {"income": ["count", "sum", "mean"], "hours": ["sum", "mean"]}
LEVELS = ["national", "state", "county"]


def release(frame, *, aggs=AGGS, epsilon=1.0, seed=0, **kw):
    kw.setdefault("bounds", BOUNDS)
    kw.setdefault("hierarchy", HIER)
    with pdp.budget(epsilon=10**12):
        return frame.dp.aggregate(kw.pop("columns", "sex"), aggs, categories=kw.pop("categories", ["F", "M"]),
                                  by=kw.pop("by", ["state", "county"]), epsilon=epsilon,
                                  rng=np.random.default_rng(seed), **kw)


def clipped(frame):
    out = frame.copy()
    for col, (lo, hi) in BOUNDS.items():
        out[col] = np.rint(pd.to_numeric(out[col], errors="coerce").clip(lo, hi))
    return out


def test_every_level_equals_pandas_at_huge_epsilon_and_is_tidy():
    got = release(FRAME, epsilon=1e11)
    frame = got.to_frame()
    assert list(frame.columns[:3]) == [("level", ""), ("region", ""), ("sex", "")]
    assert list(frame["level"].unique()) == LEVELS
    data = clipped(FRAME).assign(national="national")
    for level in LEVELS:
        want = data.groupby([level, "sex"]).agg(AGGS)
        rows = frame[frame["level"] == level]
        have = rows.set_axis(pd.MultiIndex.from_arrays([rows["region"], rows["sex"]], names=[level, "sex"]))
        np.testing.assert_allclose(have["income", "count"], want["income", "count"], atol=1e-6)
        np.testing.assert_allclose(have[list(want.columns)], want, rtol=1e-9, atol=1e-3)
    assert got.std_error().shape == frame.shape
    low, high = got.confidence_interval(0.9)
    assert low.shape == high.shape == frame.shape
    assert (low["income", "mean"] <= frame["income", "mean"]).all()


def test_counts_and_sums_add_up_across_levels_and_means_are_their_ratio():
    est = release(FRAME, epsilon=2.0, seed=3).estimates
    for key in [("income", "count"), ("income", "sum"), ("hours", "sum")]:
        by_level = {lvl: est.xs(lvl, level="level")[key] for lvl in LEVELS}
        states = by_level["county"].groupby([HIER.set_index("county").state.loc[
            by_level["county"].index.get_level_values("region")].to_numpy(),
            by_level["county"].index.get_level_values("sex")]).sum()
        np.testing.assert_allclose(states.to_numpy(), by_level["state"].to_numpy(), rtol=1e-12, atol=1e-6)
        national = by_level["state"].groupby(level="sex").sum()
        np.testing.assert_allclose(national.to_numpy(), by_level["national"].to_numpy(), rtol=1e-12, atol=1e-6)
    mean, total, count = est["income", "mean"], est["income", "sum"], est["income", "count"]
    shown = mean.notna() & (mean > 0) & (mean < 250_000)
    assert shown.sum() > 10
    np.testing.assert_allclose((mean * count)[shown], total[shown], rtol=1e-9)


def test_a_count_alone_is_the_histogram_by_geography_of_the_same_seed():
    """One measured vector with the whole loss is exactly ``histogram(by=...)`` (same noise, same GLS)."""
    got = release(FRAME, aggs={"hours": "count"}, epsilon=0.7, seed=9, level_weights=[1, 2, 3])
    with pdp.budget(epsilon=1.0):
        hist = FRAME.dp.histogram("sex", categories=["F", "M"], by=["state", "county"], hierarchy=HIER,
                                  level_weights=[1, 2, 3], epsilon=0.7, rng=np.random.default_rng(9))
    np.testing.assert_array_equal(got.estimates["hours", "count"].to_numpy(), hist.counts.to_numpy())
    np.testing.assert_allclose(got.std_errors["hours", "count"].to_numpy() ** 2, hist.variance.to_numpy(),
                               rtol=1e-12)


def test_one_charge_and_the_record_of_every_level():
    with pdp.budget(epsilon=3.0) as budget:
        got = FRAME.dp.aggregate("sex", AGGS, categories=["F", "M"], bounds=BOUNDS, by=["state", "county"],
                                 hierarchy=HIER, level_weights=[0, 1, 1], epsilon=2.0, rng=np.random.default_rng(1))
    assert len(budget.ledger) == 1 and budget.spent == pytest.approx(2.0)
    assert got.params["levels"] == LEVELS and got.params["regions_per_level"] == [1, 2, 5]
    first = got.params["measurements"][0]
    assert first["levels"][0] is None and first["levels"][1]["loss"] == "1/4"   # 2 / 4 vectors / 2 levels
    assert got == pickle.loads(pickle.dumps(got))
    assert "national" in repr(got) and "<strong>Aggregate</strong>" in got._repr_html_()


def test_no_cells_and_one_level_of_groups():
    got = release(FRAME, columns=[], categories=None, by="county", hierarchy=None,
                  by_categories=list(HIER.county), aggs={"hours": "mean"}, epsilon=1e11)
    frame = got.to_frame()
    assert list(frame["region"]) == ["national", *HIER.county]
    want = clipped(FRAME).groupby("county")["hours"].mean().reindex(HIER.county)
    np.testing.assert_allclose(frame["hours", "mean"].to_numpy()[1:], want.to_numpy(), rtol=1e-9)


@pytest.mark.parametrize("kwargs, match", [
    (dict(public_totals={"national": 900}), "public_totals"),
    (dict(aggs={"county": "count"}), "geography column"),
    (dict(hierarchy=None), "hierarchy"),
    (dict(by=None), "by="),
])
def test_bad_geography_input_raises_before_any_charge(kwargs, match):
    with pdp.budget(epsilon=1.0) as budget:
        with pytest.raises(pdp.PandasDPError, match=match):
            FRAME.dp.aggregate("sex", kwargs.pop("aggs", AGGS), categories=["F", "M"], bounds={**BOUNDS, "county": (0, 1)},
                               epsilon=1.0, **{"by": ["state", "county"], "hierarchy": HIER, **kwargs})
    assert budget.spent == 0 and len(budget.ledger) == 0


def test_rows_out_of_the_geography_change_nothing_byte_for_byte():
    odd = pd.concat([FRAME, pd.DataFrame({"state": ["A", "Z", None], "county": ["b1", "z9", "a1"], "sex": "F",
                                          "income": 5.0, "hours": 3.0, "pid": -1})], ignore_index=True)
    a, b = release(FRAME, seed=4), release(odd, seed=4)
    pd.testing.assert_frame_equal(a.to_frame(), b.to_frame(), check_exact=True)


def test_dask_equals_pandas_with_and_without_a_unit():
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    odd = FRAME.astype({"income": object, "county": object})
    odd.loc[7, "income"] = "n/a"
    odd.loc[8, "county"] = 3.5
    with dask.config.set(scheduler="synchronous"):
        for kw in ({}, dict(privacy_unit="pid", max_rows=2)):
            a = release(odd, seed=6, **kw)
            c = release(dd.from_pandas(odd, npartitions=3), seed=6, **kw)
            pd.testing.assert_frame_equal(a.to_frame(), c.to_frame(), check_exact=True)


# ------------------------------------------------------------------------ privacy on neighbouring frames

D = pd.DataFrame({"r": ["a", "a", "b", "b", "a"], "c": ["x", "y", "x", "x", "y"], "v": [1.0, 4.0, 2.0, 0.0, 3.0],
                  "u": [1, 1, 2, 3, 3]})
#: One more row at a bound: it moves one cell of one region on every level.
D_ROW = pd.concat([D, pd.DataFrame({"r": ["a"], "c": ["x"], "v": [4.0], "u": [9]})], ignore_index=True)
#: One more unit of three rows at the bounds, two kept (max_rows=2), both in one cell of one region.
D_UNIT = pd.concat([D, pd.DataFrame({"r": ["b"] * 3, "c": ["y"] * 3, "v": [4.0] * 3, "u": [9] * 3})],
                   ignore_index=True)


def _by_region(privacy, **kw):
    return lambda df, rng: df.dp.aggregate("c", {"v": ["count", "sum", "mean"]}, categories=["x", "y"],
                                           bounds={"v": (0, 4)}, by="r", by_categories=["a", "b"],
                                           level_weights=[1, 1], rng=rng, **privacy, **kw)


def _vector(r):
    return np.nan_to_num(r.estimates.to_numpy(dtype=float).ravel(), nan=-1.0)


def test_every_statistic_by_geography_is_dp_for_whole_units():
    """The default run's check (QUICK_TRIALS runs); the slow run adds one more row."""
    report = assert_dp(_by_region({"epsilon": 1.0}, privacy_unit="u", max_rows=2), D, D_UNIT, epsilon=1.0,
                       trials=QUICK_TRIALS, statistic=_vector, rng=44)
    assert report.charged_per_run == 1.0


@pytest.mark.slow
def test_every_statistic_by_geography_is_dp_for_one_more_row():
    report = assert_dp(_by_region({"epsilon": 1.0}), D, D_ROW, epsilon=1.0, trials=SLOW_TRIALS, statistic=_vector,
                       rng=44)
    assert report.charged_per_run == 1.0
