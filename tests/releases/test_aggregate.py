"""``df.dp.aggregate`` (issue 42): sums and means beside counts, in one release and one charge.

Reference values are computed here independently: pandas' own ``groupby(...).agg`` on the values
clipped to the bounds and rounded to the grid (what the release measures), and the noise scales
from the textbook formulas (discrete Laplace scale ``Delta / e``, discrete Gaussian
``sigma**2 = Delta**2 / (2 rho)``) with the loss split equally across the measured vectors.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pandas_dp as pdp
from pandas_dp.privacy.loss import zcdp
from pandas_dp.testing import assert_dp
from _slow import QUICK_TRIALS, SLOW_TRIALS

RNG = np.random.default_rng(11)
N = 600
FRAME = pd.DataFrame({"sex": RNG.choice(["F", "M"], N), "region": RNG.choice(["N", "S", "E"], N),
                      "income": RNG.gamma(2.0, 30_000.0, N).round(2), "hours": RNG.integers(0, 80, N).astype(float),
                      "pid": np.repeat(np.arange(N // 3), 3)})
BOUNDS = {"income": (0, 250_000), "hours": (0, 60)}
AGGS = {"income": ["count", "sum", "mean"], "hours": "mean"}


def release(frame, *, aggs=AGGS, epsilon=1.0, seed=0, **kw):
    kw.setdefault("bounds", BOUNDS)
    with pdp.budget(epsilon=10**9):
        return frame.dp.aggregate(kw.pop("columns", "sex"), aggs, categories=kw.pop("categories", ["F", "M"]),
                                  epsilon=epsilon, rng=np.random.default_rng(seed), **kw)


def brute_force(frame, by, aggs, bounds, resolution=1.0):
    """pandas on the clipped, rounded values (the statistic the release estimates)."""
    clipped = frame.copy()
    for col, (lo, hi) in bounds.items():
        values = pd.to_numeric(clipped[col], errors="coerce")
        clipped[col] = np.rint(values.clip(lo, hi) / resolution) * resolution
    return clipped.groupby(by).agg(aggs) if by else clipped.agg(aggs)


def test_equals_pandas_at_huge_epsilon():
    got = release(FRAME, epsilon=1e9).to_frame()
    want = brute_force(FRAME, "sex", AGGS, BOUNDS)
    assert list(got.columns) == list(want.columns) == [("income", "count"), ("income", "sum"), ("income", "mean"),
                                                       ("hours", "mean")]
    np.testing.assert_array_equal(got["income", "count"], want["income", "count"])
    np.testing.assert_array_equal(got["income", "sum"], want["income", "sum"])
    np.testing.assert_allclose(got[[("income", "mean"), ("hours", "mean")]], want[[("income", "mean"), ("hours", "mean")]],
                               rtol=1e-12)


def test_no_cells_is_one_row_and_resolution_rounds_to_the_grid():
    got = release(FRAME, columns=[], categories=None, epsilon=1e9, resolution={"income": 1000}).to_frame()
    want = brute_force(FRAME, None, {"income": ["count", "sum", "mean"]}, {"income": BOUNDS["income"]}, 1000)
    assert len(got) == 1 and list(got.index) == ["national"]
    assert got["income", "sum"].iloc[0] == want.loc["sum", "income"]
    assert got["income", "sum"].iloc[0] % 1000 == 0


def test_sensitivities_and_noise_scales_are_exact():
    r = release(FRAME, epsilon=1.5, resolution={"income": 100})
    m = r.params["measurements"]
    # income: count, centred sum (sum derived from them); hours: count, centred sum -> 4 parts of 1.5
    assert [(x["column"], x["kind"]) for x in m] == [("income", "count"), ("income", "centred"),
                                                     ("hours", "count"), ("hours", "centred")]
    assert r.params["share"] == "1/4"
    steps = {"income": 2500, "hours": 60}           # b - a in grid steps (a = 0)
    for x in m:
        delta = 1 if x["kind"] == "count" else steps[x["column"]]
        assert x["sensitivity"] == {"l1": str(delta), "l2_squared": str(delta * delta)}
        assert Fraction(x["noise_scale"]) == Fraction(delta) / (Fraction(3, 2) / 4)
    plain = release(FRAME, aggs={"income": "sum"}, bounds={"income": (-50, 200)}, epsilon=1.0)
    (only,) = plain.params["measurements"]
    assert only["kind"] == "sum" and only["sensitivity"]["l1"] == "200" and only["noise_scale"] == Fraction(200)


def test_privacy_unit_multiplies_every_sensitivity_and_zcdp_calibrates_sigma():
    with pdp.budget(rho=10):
        r = FRAME.dp.aggregate("sex", {"hours": ["sum"]}, categories=["F", "M"], bounds={"hours": (0, 60)}, rho=0.5,
                               privacy_unit="pid", max_rows=3, rng=np.random.default_rng(0))
    (only,) = r.params["measurements"]
    assert only["sensitivity"] == {"l1": "180", "l2_squared": str(180**2)}
    assert Fraction(only["sigma2"]) == Fraction(180**2) / (2 * Fraction(1, 2))
    assert r.params["max_rows"] == 3 and r.epsilon is None and r.rho == 0.5


def test_one_charge_with_the_public_record():
    with pdp.budget(epsilon=1.0) as b:
        FRAME.dp.aggregate(["sex", "region"], AGGS, categories={"sex": ["F", "M"], "region": ["N", "S", "E"]},
                           bounds=BOUNDS, epsilon=0.4, rng=np.random.default_rng(1))
    ledger = b.ledger
    assert len(ledger) == 1 and ledger.loc[0, "status"] == "ok" and ledger.loc[0, "method"] == "aggregate"
    assert b.spent == 0.4
    params = ledger.loc[0, "params"]
    for word in ("bounds", "resolution", "split", "sensitivity", "measurements"):
        assert word in params


@pytest.mark.parametrize("kwargs, match", [
    (dict(aggs={"income": ("quantile", 1.0)}), "strictly between 0 and 1"),
    (dict(aggs={"income": [("quantile", [0.1, 0.9])]}), "strictly between 0 and 1"),
    (dict(aggs={"income": ("quantile", "0.9")}), "strictly between 0 and 1"),
    (dict(aggs={"income": "quantile"}), "unknown statistic"),
    (dict(aggs={"income": "std"}), "unknown statistic"),
    (dict(aggs={"nope": "sum"}), "not in the frame"),
    (dict(aggs={"sex": "sum"}), "both a cell column"),
    (dict(bounds={"income": (0, 10)}), "no bounds for the value column 'hours'"),
    (dict(bounds={"income": (10, 0), "hours": (0, 1)}), "low < high"),
    (dict(resolution={"income": 10**6}), "coarser"),
    (dict(resolution=1e-9), "steps"),
    (dict(level_weights=[1, 1]), "pass by= too"),
    (dict(privacy_unit="pid", max_rows="auto"), "auto"),
    (dict(privacy_unit="pid"), "max_rows"),
    (dict(epsilon=-1), "epsilon"),
])
def test_bad_public_input_raises_before_any_charge(kwargs, match):
    kw = dict(aggs=AGGS, bounds=BOUNDS, epsilon=0.5)
    kw.update(kwargs)
    with pdp.budget(epsilon=1.0) as b:
        with pytest.raises(pdp.ParameterError, match=match):
            FRAME.dp.aggregate("sex", kw.pop("aggs"), categories=["F", "M"], **kw)
    assert b.spent == 0 and len(b.ledger) == 0


_STATS = st.sampled_from(["count", "sum", "mean", "median", "max", ("quantile", 0.5), 3, None])
_NUMBER = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**20, 10**20), st.none(),
                    st.text(max_size=2))


@settings(max_examples=80, deadline=None, derandomize=True)
@given(stats=st.one_of(_STATS, st.lists(_STATS, max_size=4)), pair=st.lists(_NUMBER, max_size=3),
       step=st.one_of(st.none(), _NUMBER))
def test_aggs_bounds_and_resolution_either_release_or_refuse_before_any_charge(stats, pair, step):
    with pdp.budget(epsilon=1.0) as b:
        try:
            FRAME.dp.aggregate("sex", {"hours": stats}, categories=["F", "M"], bounds={"hours": tuple(pair)},
                               resolution=step, epsilon=0.5, rng=np.random.default_rng(0))
        except pdp.ParameterError:
            assert b.spent == 0 and len(b.ledger) == 0
            return
    assert len(b.ledger) == 1 and b.spent == 0.5
    assert len(pair) == 2 and pair[0] < pair[1]


def test_missing_and_odd_values_are_dropped_from_their_column_only():
    odd = pd.DataFrame({"sex": ["F"] * 4, "region": "N", "income": [np.nan, None, np.inf, -np.inf],
                        "hours": [10.0, 20.0, 30.0, 40.0], "pid": -1})
    both = pd.concat([FRAME, odd], ignore_index=True)
    got = release(both, epsilon=1e9).to_frame()
    clean = release(FRAME, epsilon=1e9).to_frame()
    assert got["income", "count"]["F"] == clean["income", "count"]["F"]     # dropped from income
    assert got["income", "sum"]["F"] == clean["income", "sum"]["F"]
    want_hours = brute_force(both, "sex", {"hours": ["mean"]}, BOUNDS)
    np.testing.assert_allclose(got["hours", "mean"], want_hours["hours", "mean"], rtol=1e-12)  # counted in hours
    text = both.astype({"income": object})
    text.loc[len(FRAME), "income"] = "n/a"
    pd.testing.assert_frame_equal(release(text, epsilon=1e9).to_frame(), got)


def test_rows_out_of_the_cells_change_nothing_byte_for_byte():
    outside = pd.DataFrame({"sex": ["X", None, 3], "region": "N", "income": [1e12, 5.0, "a"],
                            "hours": [1.0, 2.0, 3.0], "pid": [0, 1, 2]})
    both = pd.concat([FRAME.astype(object), outside], ignore_index=True)
    a, c = release(FRAME, seed=3), release(both, seed=3)
    pd.testing.assert_frame_equal(a.to_frame(), c.to_frame(), check_exact=True)
    pd.testing.assert_frame_equal(a.std_error(), c.std_error(), check_exact=True)


def test_max_rows_keeps_at_most_k_rows_per_unit_in_all_cells_together():
    heavy = pd.DataFrame({"sex": ["F", "M"] * 10, "hours": 50.0, "pid": 7})   # one unit, 20 rows in two cells
    frame = pd.concat([FRAME[FRAME.pid != 7], heavy], ignore_index=True)
    got = release(frame, aggs={"hours": ["count", "sum"]}, epsilon=1e9, privacy_unit="pid", max_rows=3)
    base = release(FRAME[FRAME.pid != 7], aggs={"hours": ["count", "sum"]}, epsilon=1e9, privacy_unit="pid",
                   max_rows=3)
    extra = got.to_frame() - base.to_frame()
    assert extra["hours", "count"].sum() == 3 and extra["hours", "sum"].sum() == 150


def test_dask_release_equals_pandas_with_and_without_a_unit():
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    odd = FRAME.astype({"income": object})
    odd.loc[5, "income"] = "n/a"
    with dask.config.set(scheduler="synchronous"):
        for kw in ({}, dict(privacy_unit="pid", max_rows=2)):
            a = release(odd, seed=5, **kw)
            c = release(dd.from_pandas(odd, npartitions=3), seed=5, **kw)
            assert a == c
            pd.testing.assert_frame_equal(a.to_frame(), c.to_frame(), check_exact=True)


def test_mean_is_inside_the_bounds_and_small_cells_are_flagged():
    tiny = pd.DataFrame({"sex": ["F"] * 200 + ["M"] * 2, "hours": [30.0] * 202})
    r = release(tiny, aggs={"hours": ["count", "mean"]}, epsilon=0.5, seed=2)
    frame = r.to_frame()
    assert 0 <= frame["hours", "mean"]["F"] <= 60
    assert math.isnan(frame["hours", "mean"]["M"]) and math.isnan(r.std_error()["hours", "mean"]["M"])
    assert not math.isnan(frame["hours", "count"]["M"])


# ------------------------------------------------------------------------ privacy on neighbouring frames

D = pd.DataFrame({"c": ["a", "a", "b", "a", "b"], "x": [1.0, 4.0, 2.0, 0.0, 3.0], "y": [2.0, 1.0, 0.0, 3.0, 1.0],
                  "u": [1, 1, 2, 3, 3]})
#: One more row at a bound in the largest cell: the worst case for a sum and a centred sum.
D_ROW = pd.concat([D, pd.DataFrame({"c": ["a"], "x": [4.0], "y": [0.0], "u": [9]})], ignore_index=True)
#: One more unit with three rows (two kept with max_rows=2) at the bounds.
D_UNIT = pd.concat([D, pd.DataFrame({"c": ["a", "a", "b"], "x": [4.0] * 3, "y": [4.0] * 3, "u": [9] * 3})],
                   ignore_index=True)
STATISTICS = {"x": ["count", "sum", "mean", "median"], "y": ["sum", ("quantile", 0.9)]}


def _aggregate(privacy, **kw):
    return lambda df, rng: df.dp.aggregate("c", STATISTICS, categories=["a", "b"], bounds={"x": (0, 4), "y": (0, 4)},
                                           rng=rng, **privacy, **kw)


def _vector(r):
    return np.nan_to_num(r.to_frame().to_numpy(dtype=float).ravel(), nan=-1.0)


def test_every_statistic_is_dp_for_whole_units():
    """The default run's check (QUICK_TRIALS runs); the slow run adds one more row and the zCDP claim."""
    report = assert_dp(_aggregate({"epsilon": 1.0}, privacy_unit="u", max_rows=2), D, D_UNIT, epsilon=1.0,
                       trials=QUICK_TRIALS, statistic=_vector, rng=42)
    assert report.charged_per_run == 1.0


@pytest.mark.slow
def test_every_statistic_is_dp_for_one_more_row():
    report = assert_dp(_aggregate({"epsilon": 1.0}), D, D_ROW, epsilon=1.0, trials=SLOW_TRIALS, statistic=_vector,
                       rng=42)
    assert report.charged_per_run == 1.0


@pytest.mark.slow
def test_every_statistic_meets_its_zcdp_claim():
    delta = 1e-2
    report = assert_dp(_aggregate({"rho": 0.5}, privacy_unit="u", max_rows=2), D, D_UNIT,
                       epsilon=zcdp(0.5).epsilon_delta(delta), delta=delta, trials=SLOW_TRIALS, statistic=_vector,
                       budget={"rho": 10**6}, rng=43)
    assert report.charged_per_run == 0.5


# ------------------------------------------------------------------------ the intervals' coverage

@pytest.mark.slow
def test_mean_intervals_cover_at_the_nominal_level():
    """Coverage of the 95% intervals of means on cells of 100-400 rows, pure and zCDP.

    2 x 100 releases x 16 cells = 3200 intervals, independent (fresh noise per cell and release; fixed
    seeds, so the test is deterministic): the standard error of a coverage of 0.95 is
    sqrt(0.95 * 0.05 / 3200) = 0.004, so [0.93, 0.97] is 5 standard errors on each side of 0.95 (a
    correct coverage fails with probability below 1e-6 over seeds; one off by 0.03 is caught).
    """
    rng = np.random.default_rng(7)
    sizes = {f"cell{i}": 100 + 20 * i for i in range(16)}
    frame = pd.DataFrame({"c": np.repeat(list(sizes), list(sizes.values()))})
    frame["x"] = np.clip(rng.normal(30, 15, len(frame)), 0, 100).round()
    truth = frame.groupby("c")["x"].mean().reindex(list(sizes)).to_numpy()
    hits = []
    with pdp.budget(epsilon=10**6):
        for i in range(100):
            r = frame.dp.aggregate("c", {"x": "mean"}, categories=list(sizes), bounds={"x": (0, 100)}, epsilon=1.0,
                                   rng=np.random.default_rng(i))
            low, high = r.confidence_interval(0.95)
            hits.append((low["x", "mean"].to_numpy() <= truth) & (truth <= high["x", "mean"].to_numpy()))
    with pdp.budget(rho=10**6):
        for i in range(100):
            r = frame.dp.aggregate("c", {"x": "mean"}, categories=list(sizes), bounds={"x": (0, 100)}, rho=0.5,
                                   rng=np.random.default_rng(1000 + i))
            low, high = r.confidence_interval(0.95)
            hits.append((low["x", "mean"].to_numpy() <= truth) & (truth <= high["x", "mean"].to_numpy()))
    coverage = float(np.mean(hits))
    assert 0.93 <= coverage <= 0.97, coverage


# ------------------------------------------------------------------------ dates and durations as values

_DAYS = pd.to_timedelta(RNG.integers(-30, 800, N), unit="D")
TIMES = FRAME.assign(when=pd.Timestamp("2021-01-01") + _DAYS,
                     took=pd.to_timedelta(RNG.gamma(2.0, 900.0, N).round(), unit="s"))
TIME_BOUNDS = {"when": (pd.Timestamp("2021-01-01"), pd.Timestamp("2022-12-31")),
               "took": (pd.Timedelta(0), pd.Timedelta(hours=1))}


def test_dates_and_durations_equal_pandas_on_the_clipped_grid_at_huge_epsilon():
    aggs = {"when": ["count", "mean"], "took": ["count", "sum", "mean"]}
    got = release(TIMES, aggs=aggs, bounds=TIME_BOUNDS, resolution={"took": "1min"}, epsilon=1e9)
    frame = got.to_frame()
    clipped = TIMES.assign(when=TIMES.when.clip(*TIME_BOUNDS["when"]),
                           took=TIMES.took.clip(*TIME_BOUNDS["took"]).dt.round("1min"))
    want = clipped.groupby("sex").agg(aggs)
    assert frame["when", "mean"].dtype == "datetime64[ns]" and frame["took", "sum"].dtype == "timedelta64[ns]"
    assert (frame["when", "mean"] - want["when", "mean"]).abs().max() < pd.Timedelta(seconds=1)
    assert (frame["took", "mean"] - want["took", "mean"]).abs().max() < pd.Timedelta(milliseconds=1)
    assert (frame["took", "sum"] == want["took", "sum"]).all()
    np.testing.assert_array_equal(frame["when", "count"], want["when", "count"])
    assert got.std_error()["when", "mean"].dtype == "timedelta64[ns]"
    low, high = got.confidence_interval()
    assert (low["when", "mean"] <= frame["when", "mean"]).all() and (frame["when", "mean"] <= high["when", "mean"]).all()
    assert got.params["values"]["when"]["bounds"] == ["2021-01-01T00:00:00", "2022-12-31T00:00:00"]
    assert re.search(r"20[0-9][0-9]-[0-9][0-9]-[0-9][0-9] ", repr(got)) and "days" in repr(got)


def test_odd_dates_are_dropped_from_their_column_only_and_aware_bounds_compare_instants():
    odd = TIMES.astype({"when": object})
    odd.loc[[1, 2, 3], "when"] = ["garbage", 3.5, None]
    got = release(odd, aggs={"when": "count", "hours": "count"}, bounds={**TIME_BOUNDS, **BOUNDS}, epsilon=1e9)
    base = release(TIMES, aggs={"when": "count", "hours": "count"}, bounds={**TIME_BOUNDS, **BOUNDS}, epsilon=1e9)
    assert (base.to_frame()["when", "count"] - got.to_frame()["when", "count"]).sum() == 3
    assert (base.to_frame()["hours", "count"] == got.to_frame()["hours", "count"]).all()
    aware = {"when": tuple(t.tz_localize("Europe/Paris") for t in TIME_BOUNDS["when"])}
    local = TIMES.assign(when=TIMES.when.dt.tz_localize("Europe/Paris"))
    frame = release(local, aggs={"when": "mean"}, bounds=aware, epsilon=1e9).to_frame()
    assert str(frame["when", "mean"].dt.tz) == "Europe/Paris"
    naive = release(TIMES, aggs={"when": "mean"}, bounds=TIME_BOUNDS, epsilon=1e9).to_frame()
    assert (frame["when", "mean"].dt.tz_localize(None) - naive["when", "mean"]).abs().max() < pd.Timedelta(hours=2)


@pytest.mark.parametrize("kwargs, match", [
    (dict(aggs={"when": "sum"}), "sum of dates"),
    (dict(resolution=5), "positive duration"),
    (dict(bounds={"when": (pd.Timestamp("2021-01-01"), 5)}), "two dates"),
    (dict(bounds={"when": (pd.Timestamp("2021-01-01"), pd.Timestamp("2021-01-01", tz="UTC"))}), "naive"),
    (dict(bounds={"when": (pd.Timestamp("2022-01-01"), pd.Timestamp("2021-01-01"))}), "low < high"),
    (dict(aggs={"took": "mean"}, resolution="1ns", bounds={"took": (pd.Timedelta(0), pd.Timedelta(days=3650))}),
     "steps"),
])
def test_bad_time_bounds_raise_before_any_charge(kwargs, match):
    with pdp.budget(epsilon=1.0) as b:
        with pytest.raises(pdp.ParameterError, match=match):
            TIMES.dp.aggregate("sex", kwargs.pop("aggs", {"when": "mean"}), categories=["F", "M"],
                               **{"bounds": TIME_BOUNDS, "epsilon": 0.5, **kwargs})
    assert b.spent == 0 and len(b.ledger) == 0


def test_dask_dates_with_partitions_of_mixed_dtypes_equal_pandas():
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    odd = TIMES.astype({"when": object})
    odd.loc[4, "when"] = "2021-06-01"          # an ISO string in one partition: read as the date it is
    odd.loc[500, "when"] = "n/a"
    aggs = {"when": ["count", "mean"], "took": "sum"}
    with dask.config.set(scheduler="synchronous"):
        a = release(odd, aggs=aggs, bounds=TIME_BOUNDS, seed=8)
        parts = dd.from_pandas(odd, npartitions=3)
        c = release(parts, aggs=aggs, bounds=TIME_BOUNDS, seed=8)
    pd.testing.assert_frame_equal(a.to_frame(), c.to_frame(), check_exact=True)



# ------------------------------------------------------------------------ medians and quantiles per cell

def test_medians_and_quantiles_per_cell_are_within_one_sub_bin_at_huge_epsilon():
    aggs = {"income": ["median", ("quantile", 0.1), ("quantile", 0.9)], "hours": "median"}
    frame = release(FRAME, aggs=aggs, epsilon=1e9).to_frame()
    assert list(frame.columns) == [("income", "median"), ("income", "quantile(0.1)"), ("income", "quantile(0.9)"),
                                   ("hours", "median")]
    clipped = FRAME.assign(income=np.rint(FRAME.income.clip(0, 250_000)), hours=FRAME.hours.clip(0, 60))
    for column, q, name, width in [("income", 0.5, "median", 250_000 / 64), ("income", 0.1, "quantile(0.1)", 250_000 / 64),
                                   ("income", 0.9, "quantile(0.9)", 250_000 / 64), ("hours", 0.5, "median", 60 / 64)]:
        want = clipped.groupby("sex")[column].quantile(q)
        assert (np.abs(frame[column, name] - want) <= width).all(), (column, q)


def test_quantile_intervals_hold_their_estimate_and_widen_with_the_level():
    got = release(FRAME, aggs={"income": ["median", ("quantile", 0.75)]}, epsilon=0.5, seed=4)
    frame = got.to_frame()
    low90, high90 = got.confidence_interval(0.9)
    low99, high99 = got.confidence_interval(0.99)
    for name in ("median", "quantile(0.75)"):
        assert (low90["income", name] <= frame["income", name]).all()
        assert (frame["income", name] <= high90["income", name]).all()
        assert (low99["income", name] <= low90["income", name]).all()
        assert (high90["income", name] <= high99["income", name]).all()
    assert (got.std_error()["income", "median"] > 0).all()


def test_quantiles_by_geography_and_on_dask_and_of_dates():
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    aggs = {"hours": ["count", "median"], "when": ("quantile", 0.25)}
    kw = dict(aggs=aggs, bounds={**BOUNDS, **TIME_BOUNDS}, epsilon=2.0, seed=6, by="region",
              by_categories=["N", "S", "E"])
    with dask.config.set(scheduler="synchronous"):
        a = release(TIMES, **kw)
        c = release(dd.from_pandas(TIMES, npartitions=3), **kw)
    pd.testing.assert_frame_equal(a.to_frame(), c.to_frame(), check_exact=True)
    frame = a.to_frame()
    assert frame["when", "quantile(0.25)"].dtype == "datetime64[ns]"
    assert sorted(frame["region"].unique()) == ["E", "N", "S", "national"]


@pytest.mark.slow
def test_median_intervals_per_cell_cover_at_least_the_nominal_level():
    """Their ends are sub-bin edges (nothing assumed about how values spread inside a sub-bin): conservative.
    200 releases x 8 cells = 1,600 intervals (fixed seeds); a coverage of 0.95 has a standard error of 0.0054."""
    rng = np.random.default_rng(8)
    sizes = {f"cell{i}": 200 + 100 * i for i in range(8)}
    hits = []
    for seed in range(200):
        frame = pd.DataFrame({"c": np.repeat(list(sizes), list(sizes.values()))})
        frame["x"] = rng.lognormal(3.0, 0.6, len(frame))
        truth = frame.assign(x=frame.x.clip(0, 100)).groupby("c")["x"].median().reindex(list(sizes)).to_numpy()
        with pdp.budget(epsilon=10.0):
            got = frame.dp.aggregate("c", {"x": "median"}, categories=list(sizes), bounds={"x": (0, 100)},
                                     resolution=0.01, epsilon=1.0, rng=np.random.default_rng(seed))
        low, high = (f["x", "median"].to_numpy() for f in got.confidence_interval(0.95))
        hits.append((low <= truth) & (truth <= high))
    coverage = float(np.mean(hits))
    assert coverage >= 0.93, coverage
