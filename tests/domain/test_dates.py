"""Dates and durations as bins (issue 13 item 4): counts against a brute-force reference, pandas and Dask,
the boundary rule for odd private values, range queries, sampling, errors on public inputs, the CLI."""

from __future__ import annotations

import datetime as dt
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pandas_dp as pdp
from pandas_dp.domain.grid import make_grid
from pandas_dp.engines.pandas.counts import bin_counts, cell_codes
from pandas_dp.testing import adversarial_values, assert_same_outcome, with_row

RNG = np.random.default_rng(2024)
N = 4000
START = pd.Timestamp("2020-01-01")
STAMPS = START + pd.to_timedelta(RNG.integers(-20 * 86400, 400 * 86400, N), unit="s")
WAITS = pd.to_timedelta(RNG.integers(-600, 7 * 3600, N), unit="s")
FRAME = pd.DataFrame({
    "t": STAMPS,
    "t_ns": STAMPS.as_unit("ns") + pd.to_timedelta(RNG.integers(0, 1000, N), unit="ns"),
    "t_s": STAMPS.as_unit("s"),
    "tz": STAMPS.tz_localize("UTC").tz_convert("Europe/Paris"),
    "text": pd.Series(STAMPS.strftime("%Y-%m-%dT%H:%M:%S"), dtype=object),
    "wait": WAITS,
})
MONTHS = pd.date_range("2020-01-01", "2021-01-01", freq="MS")


def reference(values: pd.Series, edges) -> np.ndarray:
    """Brute force with pandas: pd.cut on [edges[i], edges[i+1]) and value_counts in bin order (in ns)."""
    edges = pd.Index(edges)
    values = pd.Series(values)
    if values.dtype.kind in "mM" or isinstance(values.dtype, pd.DatetimeTZDtype):
        values, edges = values.dt.as_unit("ns"), edges.as_unit("ns")
    cut = pd.cut(values, edges, right=False)
    return cut.value_counts(sort=False).to_numpy()


def counts(frame, column, **domain) -> np.ndarray:
    return bin_counts(frame, make_grid(frame, [column], **domain))


@pytest.mark.parametrize("column", ["t", "t_ns", "t_s"])
@pytest.mark.parametrize("domain,edges", [
    (dict(bins=MONTHS), MONTHS),
    (dict(bins=list(MONTHS)), MONTHS),
    (dict(bins="M", range=("2020-01-01", "2021-01-01")), MONTHS),
    (dict(bins="W", range=("2019-12-30", "2021-01-04")), pd.date_range("2019-12-30", "2021-01-04", freq="W-MON")),
    (dict(bins="D", range=(START, START + pd.Timedelta(days=100))), pd.date_range(START, periods=101, freq="D")),
    (dict(bins="6h", range=(START, START + pd.Timedelta(days=10))), pd.date_range(START, periods=41, freq="6h")),
    (dict(bins=12, range=(START, pd.Timestamp("2021-01-01"))), pd.date_range(START, "2021-01-01", periods=13)),
    (dict(bins=pd.IntervalIndex.from_breaks(MONTHS, closed="left")), MONTHS),
])
def test_naive_datetime_bins_count_like_pd_cut(column, domain, edges):
    np.testing.assert_array_equal(counts(FRAME, column, **domain), reference(FRAME[column], edges))


def test_iso_strings_count_where_they_parse_and_nothing_else_does(monkeypatch):
    import pandas_dp.domain.timevalues as tv

    def per_element(*args):
        raise AssertionError("the vectorized parse fell back to one value at a time")

    monkeypatch.setattr(tv, "_one_string", per_element)
    monkeypatch.setattr(tv, "_one_datetime", per_element)
    frame = FRAME[["text"]].copy()
    odd = ["n/a", "31/01/2020", "2020-02-30", "", "2020-03-01T10:00:00+01:00", "2020-03-01T10:00Z"]
    frame.loc[: len(odd) - 1, "text"] = odd
    parsed = pd.to_datetime(frame["text"].where(~frame.index.isin(range(len(odd)))), format="ISO8601")
    parsed[4:6] = pd.Timestamp("2020-03-01T10:00")  # text with an offset counts at its wall-clock time
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = counts(frame, "text", bins="M", range=("2020-01-01", "2021-01-01"))
    np.testing.assert_array_equal(got, reference(parsed, MONTHS))


def test_a_tz_aware_domain_compares_instants_and_drops_naive_values():
    paris = pd.date_range("2020-01-01", "2021-01-01", freq="MS", tz="Europe/Paris")
    # Any time zone compares as an instant (UTC), including offsets in text.
    tokyo = FRAME["tz"].dt.tz_convert("Asia/Tokyo")
    for column in (FRAME["tz"], tokyo, pd.Series(FRAME["tz"].map(lambda t: t.isoformat()), dtype=object)):
        frame = pd.DataFrame({"x": column})
        np.testing.assert_array_equal(counts(frame, "x", bins=paris), reference(FRAME["tz"], paris))
    # Months in Paris are not months in UTC: the calendar is the domain's.
    utc = pd.date_range("2020-01-01", "2021-01-01", freq="MS", tz="UTC")
    assert not np.array_equal(counts(FRAME, "tz", bins=paris), counts(FRAME, "tz", bins=utc))
    # Naive values have no instant: out of an aware domain. Aware values in a naive one count at their
    # wall-clock time (issue 29, item 1: a naive range on a tz-aware column released pure noise).
    assert counts(FRAME, "t", bins=paris).sum() == 0
    np.testing.assert_array_equal(counts(FRAME, "tz", bins=MONTHS), reference(FRAME["tz"].dt.tz_localize(None), MONTHS))
    naive_text = pd.DataFrame({"x": pd.Series(["2020-05-01T10:00:00", "2020-05-01T10:00:00+02:00"], dtype=object)})
    assert counts(naive_text, "x", bins=paris).tolist()[4] == 1
    assert counts(naive_text, "x", bins=MONTHS).tolist()[4] == 2


def test_frequency_bins_follow_the_calendar_in_the_domains_time_zone():
    # Daylight saving: the day of the spring change has 23 hours in Paris.
    days = make_grid(FRAME, ["tz"], bins="D", range=(pd.Timestamp("2020-03-28", tz="Europe/Paris"),
                                                     pd.Timestamp("2020-04-01", tz="Europe/Paris"))).dims[0]
    assert list(np.diff(days.keys) // (3600 * 10**6)) == [24, 23, 24, 24]
    months = make_grid(FRAME, ["t"], bins="M", range=("2020-01-01", "2021-01-01")).dims[0]
    assert list(np.diff(months.keys) // (86400 * 10**6))[:3] == [31, 29, 31]


@pytest.mark.parametrize("domain,edges", [
    (dict(bins=pd.timedelta_range("0h", "6h", freq="30min")), pd.timedelta_range("0h", "6h", freq="30min")),
    (dict(bins="15min", range=("0h", "6h")), pd.timedelta_range("0h", "6h", freq="15min")),
    (dict(bins=7, range=(pd.Timedelta(0), pd.Timedelta(hours=7))), pd.timedelta_range("0h", "7h", periods=8)),
    (dict(bins=[dt.timedelta(0), dt.timedelta(minutes=10), dt.timedelta(hours=2)]),
     pd.to_timedelta(["0s", "10min", "2h"])),
])
def test_timedelta_bins_count_like_pd_cut(domain, edges):
    np.testing.assert_array_equal(counts(FRAME, "wait", **domain), reference(FRAME["wait"], edges))
    text = pd.DataFrame({"wait": pd.Series(FRAME["wait"].astype(str), dtype=object)})
    np.testing.assert_array_equal(counts(text, "wait", **domain), reference(FRAME["wait"], edges))


def test_duration_text_needs_a_unit_and_numbers_are_not_durations():
    frame = pd.DataFrame({"w": pd.Series(["5", "5min", 300, 1.5, "PT5M", None, "x"], dtype=object)})
    assert counts(frame, "w", bins=["0s", "10min"]).tolist() == [2]
    assert counts(pd.DataFrame({"w": [1, 2, 3]}), "w", bins="h", range=("0h", "4h")).sum() == 0


def test_numbers_are_not_dates_and_dates_are_not_numbers():
    frame = pd.DataFrame({"x": pd.Series([5, 1.5e18, True, "2020-02-01", pd.Timestamp("2020-02-02")], dtype=object)})
    assert counts(frame, "x", bins=MONTHS).tolist()[1] == 2
    assert counts(frame, "x", bins=MONTHS).sum() == 2
    assert counts(FRAME, "t", bins=10, range=(0, 2e18)).sum() == 0


@pytest.mark.parametrize("column", ["t", "text", "tz", "wait"])
def test_pandas_and_dask_give_the_same_counts_and_release(column):
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    domain = {"wait": dict(bins="h", range=("0h", "7h")),
              "tz": dict(bins="W", range=(pd.Timestamp("2019-12-30", tz="Europe/Paris"),
                                          pd.Timestamp("2021-01-04", tz="Europe/Paris")))}.get(
        column, dict(bins="M", range=("2020-01-01", "2021-01-01")))
    lazy = dd.from_pandas(FRAME[[column]], npartitions=5)
    with dask.config.set(scheduler="sync"), pdp.budget(epsilon=4):
        a = FRAME.dp.hierarchical_histogram(column, **domain, epsilon=1, rng=np.random.default_rng(3))
        b = lazy.dp.hierarchical_histogram(column, **domain, epsilon=1, rng=np.random.default_rng(3))
        c = FRAME.dp.histogram(column, **domain, epsilon=1, rng=np.random.default_rng(4))
        d = lazy.dp.histogram(column, **domain, epsilon=1, rng=np.random.default_rng(4))
    pd.testing.assert_series_equal(a.counts, b.counts)
    pd.testing.assert_series_equal(c.counts, d.counts)
    grid = make_grid(FRAME, [column], **domain)
    from pandas_dp.engines.dask import DASK_ENGINE
    with dask.config.set(scheduler="sync"):
        np.testing.assert_array_equal(DASK_ENGINE.bin_counts(lazy, grid), bin_counts(FRAME, grid))


# ------------------------------------------------------------------------------------ the boundary rule

BASE = FRAME.head(60)[["t", "tz", "wait"]].reset_index(drop=True)
DATE_CALLS = {
    "months": lambda f: f.dp.histogram("t", bins="M", range=("2020-01-01", "2021-01-01"), epsilon=0.5,
                                       rng=np.random.default_rng(1)),
    "weeks tz tree": lambda f: f.dp.hierarchical_histogram(
        "tz", bins="W", range=(pd.Timestamp("2019-12-30", tz="Europe/Paris"), pd.Timestamp("2021-01-04", tz="Europe/Paris")),
        epsilon=0.5, rng=np.random.default_rng(1)),
    "waits range query": lambda f: f.dp.range_query("wait", [("0h", "1h"), ("1h", "7h")], bins="h",
                                                    range=("0h", "7h"), epsilon=0.5, rng=np.random.default_rng(1)),
}


@pytest.mark.parametrize("engine", ["pandas", "dask"])
@pytest.mark.parametrize("name", sorted(DATE_CALLS))
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=adversarial_values() | st.sampled_from([
    "2020-02-30", "2020-06-01T12:00+02:00", "2020-06-01", "not a date", pd.Timestamp("1600-01-01"),
    np.datetime64("2262-04-12T00:00:00"), pd.Timestamp("2020-06-01", tz="Asia/Tokyo"), dt.date(2020, 6, 1),
    dt.timedelta(hours=2), "2h", "P1D", 3600]),
    column=st.sampled_from(["t", "tz", "wait"]))
def test_an_odd_private_date_changes_nothing_observable(engine, name, value, column):
    if engine == "dask":
        dask = pytest.importorskip("dask")
        dd = pytest.importorskip("dask.dataframe")
        to_engine = lambda f: dd.from_pandas(f, npartitions=2)  # noqa: E731
        context = dask.config.set(scheduler="sync")
    else:
        to_engine = lambda f: f  # noqa: E731
        context = warnings.catch_warnings()
    d_prime = with_row(BASE, {column: value})
    with context:
        if engine == "dask":
            try:
                to_engine(d_prime).compute()
            except Exception:  # noqa: BLE001 - Dask itself cannot hold D' (refused as DataSourceError elsewhere)
                return
        a, _ = assert_same_outcome(DATE_CALLS[name], to_engine(BASE), to_engine(d_prime))
    assert a.kind == "returned" and not a.warnings, a.describe(full=True)


@pytest.mark.parametrize("value", ["n/a", [1, 2], 1e308, -np.inf, pd.NaT, "2031-06-01T12:00+02:00",
                                   pd.Timestamp("2030-06-01", tz="UTC"), 7, "7", pd.Timedelta("1D")])
def test_an_out_of_domain_date_leaves_a_seeded_release_byte_identical(value):
    call = DATE_CALLS["months"]
    with pdp.budget(epsilon=10):
        ref = call(BASE)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = call(with_row(BASE, {"t": value}))
    pd.testing.assert_frame_equal(ref.to_frame(), got.to_frame())


# ------------------------------------------------------------------------------------ results

def test_range_queries_take_and_return_timestamps():
    with pdp.budget(epsilon=2):
        h = FRAME.dp.hierarchical_histogram("t", bins="M", range=("2020-01-01", "2021-01-01"), epsilon=1,
                                            rng=np.random.default_rng(0))
        answers = FRAME.dp.range_query("t", [("2020-01-01", "2020-07-01"), (pd.Timestamp("2020-07-01"),
                                                                             dt.datetime(2021, 1, 1))],
                                       bins="M", range=("2020-01-01", "2021-01-01"), epsilon=1,
                                       rng=np.random.default_rng(0))
    one = h.range_query(pd.Timestamp("2020-03-01"), "2020-06-01")
    assert one.low == pd.Timestamp("2020-03-01") and one.high == pd.Timestamp("2020-06-01")
    assert one.estimate == pytest.approx(h.counts.iloc[2:5].sum())
    listed = h.range_query([("2020-03-01", "2020-06-01")])
    assert listed["low"].dtype.kind == "M" and listed["low"].iloc[0] == pd.Timestamp("2020-03-01")
    assert listed["estimate"].iloc[0] == pytest.approx(one.estimate)
    assert list(answers["high"]) == [pd.Timestamp("2020-07-01"), pd.Timestamp("2021-01-01")]
    with pytest.raises(pdp.DomainError, match="nearest edges are 2020-03-01 00:00:00 and 2020-04-01 00:00:00"):
        h.range_query("2020-03-15", "2020-06-01")
    with pytest.raises(pdp.DomainError, match="naive"):
        h.range_query(pd.Timestamp("2020-03-01", tz="UTC"), pd.Timestamp("2020-06-01", tz="UTC"))


def test_tz_aware_range_query_returns_timestamps_in_the_domains_zone():
    paris = pd.date_range("2020-01-01", "2021-01-01", freq="MS", tz="Europe/Paris")
    with pdp.budget(epsilon=1):
        h = FRAME.dp.histogram("tz", bins=paris, epsilon=1, rng=np.random.default_rng(0))
    out = h.range_query([(paris[1], paris[4])])
    assert str(out["low"].dt.tz) == "Europe/Paris" and out["low"].iloc[0] == paris[1]
    # The same instant written in another zone is the same edge.
    same = h.range_query(paris[1].tz_convert("Asia/Tokyo"), paris[4])
    assert same.estimate == pytest.approx(out["estimate"].iloc[0])


def test_samples_are_dates_inside_their_bins():
    with pdp.budget(epsilon=2):
        h = FRAME.dp.histogram("tz", bins="M", range=(pd.Timestamp("2020-01-01", tz="Europe/Paris"),
                                                      pd.Timestamp("2021-01-01", tz="Europe/Paris")),
                               epsilon=1, rng=np.random.default_rng(0))
        w = FRAME.dp.histogram("wait", bins="h", range=("0h", "7h"), epsilon=1, rng=np.random.default_rng(0))
    rows = h.sample(2000, rng=np.random.default_rng(1))
    assert str(rows["tz"].dt.tz) == "Europe/Paris"
    edges = h.domain.dims[0].edges
    assert rows["tz"].between(edges[0], edges[-1], inclusive="left").all()
    # Each synthetic date lies in a bin the release gave a positive count.
    cells = pd.cut(rows["tz"], edges, right=False).cat.codes
    assert (h.counts.to_numpy()[cells] > 0).all()
    table = h.sample(rng=np.random.default_rng(1))
    assert len(table) == int(np.clip(np.rint(h.counts.to_numpy()), 0, None).sum())
    waits = w.sample(500, rng=np.random.default_rng(2))["wait"]
    assert waits.dtype.kind == "m" and waits.between(pd.Timedelta(0), pd.Timedelta("7h"), inclusive="left").all()


def test_date_releases_pickle_and_plot(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    with pdp.budget(epsilon=1):
        h = FRAME.dp.histogram("t", bins="M", range=("2020-01-01", "2021-01-01"), epsilon=1,
                               rng=np.random.default_rng(0))
    back = pickle.loads(pickle.dumps(h))
    assert back == h and back.counts.index.equals(h.counts.index)
    assert isinstance(h.counts.index, pd.IntervalIndex) and h.counts.index.dtype.subtype.kind == "M"
    ax = h.plot()
    ax.figure.savefig(tmp_path / "months.png")
    assert (tmp_path / "months.png").stat().st_size > 5_000
    assert [p.get_width() for p in ax.patches][:3] == [31, 29, 31]  # months drawn at their true width
    assert "[2020-01-01, 2020-02-01)" in repr(h)


# ------------------------------------------------------------------------------------ public input errors

@pytest.mark.parametrize("kwargs,error,text", [
    (dict(bins="M"), pdp.DomainError, "needs range="),
    (dict(bins="M", range=("2020-01-15", "2021-01-01")), pdp.DomainError, "boundaries of its periods"),
    (dict(bins="M", range=(0, 10)), pdp.ParameterError, "range of dates or durations"),
    (dict(bins="fortnightly", range=("2020-01-01", "2021-01-01")), pdp.ParameterError, "pandas frequency"),
    (dict(bins="M", range=("0h", "6h")), pdp.DomainError, "fixed frequencies"),
    (dict(bins=3, range=(pd.Timestamp("2020-01-01", tz="UTC"), pd.Timestamp("2021-01-01"))), pdp.DomainError,
     "tz-aware and a naive"),
    (dict(bins=3, range=(pd.Timestamp("2020-01-01"), pd.Timedelta("1D"))), pdp.ParameterError, "mixes a date"),
    (dict(bins=3, range=("2020-01-01", "tomorrow")), pdp.ParameterError, "two dates or two durations"),
    (dict(bins=3, range=("2021-01-01", "2020-01-01")), pdp.DomainError, "low < high"),
    (dict(bins=[pd.Timestamp("2020-02-01"), pd.Timestamp("2020-01-01")]), pdp.DomainError, "strictly increasing"),
    (dict(bins=[pd.Timestamp("2020-01-01"), pd.NaT]), pdp.DomainError, "NaT"),
    (dict(bins=[pd.Timestamp("2020-01-01"), 5]), pdp.ParameterError, "all dates"),
    (dict(bins=pd.IntervalIndex.from_breaks(MONTHS, closed="right")), pdp.DomainError, "closed='left'"),
    (dict(bins=pd.IntervalIndex.from_arrays(MONTHS[[0, 2]], MONTHS[[1, 3]], closed="left")), pdp.DomainError,
     "gaps or overlaps"),
    (dict(bins=pd.IntervalIndex.from_breaks(MONTHS, closed="left"), range=("2020-01-01", "2021-01-01")),
     pdp.ParameterError, "not both"),
])
def test_public_date_inputs_raise_with_the_fix(kwargs, error, text):
    with pytest.raises(error, match=text):
        make_grid(FRAME, ["t"], **kwargs)


def test_numeric_interval_index_bins():
    frame = pd.DataFrame({"x": [0.5, 1.5, 2.5, 9.0, -1.0]})
    bins = pd.IntervalIndex.from_breaks([0, 1, 2, 5], closed="left")
    assert counts(frame, "x", bins=bins).tolist() == [1, 1, 1]
    assert make_grid(frame, ["x"], bins=bins).index.equals(bins.rename("x"))


def test_cell_codes_of_a_date_column_drop_with_minus_one():
    frame = pd.DataFrame({"t": pd.to_datetime(["2019-12-31", "2020-01-01", "2020-12-31 23:59:59", "2021-01-01"],
                                              format="ISO8601")})
    grid = make_grid(frame, ["t"], bins="M", range=("2020-01-01", "2021-01-01"))
    assert cell_codes(frame, grid).tolist() == [-1, 0, 11, -1]


def test_cli_spec_with_monthly_bins(tmp_path):
    from pandas_dp.__main__ import main

    rng = np.random.default_rng(0)
    stamps = START + pd.to_timedelta(rng.integers(0, 366 * 86400, 500), unit="s")
    pd.DataFrame({"when": stamps.strftime("%Y-%m-%d %H:%M:%S")}).to_csv(tmp_path / "events.csv", index=False)
    pdp.Ledger.create(tmp_path / "ledger.sqlite")
    (tmp_path / "spec.toml").write_text(f"""
seed = 1
[budget]
epsilon = 1.0
ledger = "{(tmp_path / 'ledger.sqlite').as_posix()}"
[input]
path = "{(tmp_path / 'events.csv').as_posix()}"
[output]
dir = "{(tmp_path / 'out').as_posix()}"
[[release]]
name = "monthly"
method = "identity"
columns = "when"
bins = "M"
range = ["2020-01-01", "2021-01-01"]
epsilon = 0.5
[[release]]
name = "weekly"
method = "hierarchical"
columns = "when"
bins = "W"
range = [2019-12-30, 2021-01-04]
epsilon = 0.5
""")
    assert main(["release", str(tmp_path / "spec.toml")]) == 0
    monthly = pd.read_csv(tmp_path / "out" / "monthly.csv")
    assert list(monthly["when_low"][:2]) == ["2020-01-01", "2020-02-01"] and len(monthly) == 12
    weekly = pd.read_csv(tmp_path / "out" / "weekly.csv")
    assert weekly["when_low"].iloc[0] == "2019-12-30" and len(weekly) == 53


def test_range_bounds_in_other_units_and_zones_are_exact():
    with pdp.budget(epsilon=1):
        h = FRAME.dp.histogram("t", bins="M", range=("2020-01-01", "2021-01-01"), epsilon=1,
                               rng=np.random.default_rng(0))
    same = h.range_query(pd.Timestamp("2020-02-01").as_unit("ns"), np.datetime64("2020-03-01", "s"))
    assert same.estimate == h.counts.iloc[1]
    with pytest.raises(pdp.DomainError, match="finer than the bins' unit"):
        h.range_query(pd.Timestamp("2020-02-01") - pd.Timedelta(1, unit="ns"), "2020-03-01")


# ------------------------------------------------------------------------------------ naive range, tz-aware column

NEW_YORK = pd.Series(pd.date_range("2024-01-01", "2024-12-31 23:00", freq="7h", tz="America/New_York"))


def _months_2024(frame):
    return frame.dp.histogram("t", bins="M", range=("2024-01-01", "2025-01-01"), epsilon=1.0,
                              rng=np.random.default_rng(5))


@pytest.mark.parametrize("odd", ["n/a", 17, pd.Timestamp("2024-06-01 12:00"), "2024-06-01T12:00-04:00"])
def test_a_naive_range_reads_a_tz_aware_column_on_the_wall_clock_whatever_its_dtype(odd):
    """Issue 29, item 1: a tz-aware column with a naive range counts every row at its local time (before:
    every row out of domain, pure noise). One odd row turns the column's dtype into object; the reading
    of the other rows, the outcome and the charge stay the same (no private row decides how others count)."""
    d = pd.DataFrame({"t": NEW_YORK})
    d_prime = with_row(d, {"t": odd})
    assert isinstance(d["t"].dtype, pd.DatetimeTZDtype) and d_prime["t"].dtype == object
    wall = reference(NEW_YORK.dt.tz_localize(None), pd.date_range("2024-01-01", "2025-01-01", freq="MS"))
    exact = counts(d, "t", bins="M", range=("2024-01-01", "2025-01-01"))
    np.testing.assert_array_equal(exact, wall)
    assert exact.sum() == len(NEW_YORK)
    other = counts(d_prime, "t", bins="M", range=("2024-01-01", "2025-01-01"))
    assert np.abs(other - exact).sum() <= 1 and other.sum() - exact.sum() in (0, 1)
    with pdp.budget(epsilon=10):
        a, b = assert_same_outcome(_months_2024, d, d_prime)
    assert a.kind == "returned" and not a.warnings


def test_iso_text_bounds_on_a_tz_aware_result_are_read_in_its_zone():
    """Issue 29, item 1: range-query bounds as ISO text on a tz-aware result, as the dates page documents."""
    zone = "America/New_York"
    with pdp.budget(epsilon=1.0):
        r = pd.DataFrame({"t": NEW_YORK}).dp.histogram(
            "t", bins="M", range=(pd.Timestamp("2024-01-01", tz=zone), pd.Timestamp("2025-01-01", tz=zone)),
            epsilon=1.0, rng=np.random.default_rng(0))
    by_stamp = r.range_query(pd.Timestamp("2024-01-01", tz=zone), pd.Timestamp("2024-03-01", tz=zone))
    assert r.range_query("2024-01-01", "2024-03-01") == by_stamp
    assert r.range_query("2024-01-01T05:00Z", "2024-03-01T00:00-05:00") == by_stamp  # instants, any offset
    table = r.range_query([("2024-01-01", "2024-07-01")])
    assert table["low"].iloc[0] == pd.Timestamp("2024-01-01", tz=zone)
    with pytest.raises(pdp.DomainError, match="tz-aware"):
        r.range_query(pd.Timestamp("2024-01-01"), pd.Timestamp("2024-03-01"))  # a naive Timestamp: refused
