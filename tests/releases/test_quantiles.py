"""Quantiles (issue 43): ``quantile(q)`` on every 1-D release and the ``quantiles`` release.

References computed here: the exact CDF of the counts the release measured, inverted with values spread
evenly in a bin (what the post-processing estimates at a huge epsilon), ``np.quantile`` of the clipped
values (within one grid step), and the release's own pieces (the ``quantile`` of its histogram).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pandas_dp as pdp
from pandas_dp.errors import DomainError, ParameterError
from pandas_dp.privacy.loss import zcdp
from pandas_dp.releases.quantile_mechanisms import MAX_RECURSIVE_Q
from pandas_dp.results.quantiles import cdf_quantiles, check_q
from pandas_dp.testing import assert_dp
from _slow import QUICK_TRIALS, SLOW_TRIALS

RNG = np.random.default_rng(2)
N = 4000
FRAME = pd.DataFrame({"income": RNG.lognormal(10.0, 0.7, N), "age": RNG.integers(0, 100, N),
                      "pid": np.repeat(np.arange(N // 4), 4)})
QS = [0.1, 0.25, 0.5, 0.75, 0.9]
#: QS among more q's than the exponential mechanisms take: the tree and its intervals.
TREE_QS = sorted(set(QS) | set(np.round(np.linspace(0.01, 0.99, MAX_RECURSIVE_Q + 1), 6).tolist()))


def interpolated(counts, edges, q):
    """The q-quantile of counts spread evenly in their bins (the exact CDF, inverted linearly)."""
    cdf = np.concatenate([[0.0], np.cumsum(counts)])
    target = np.asarray(q) * cdf[-1]
    return np.interp(target, cdf, edges)


# ------------------------------------------------------------------------ quantile(q) on every 1-D release

@pytest.mark.parametrize("method", ["identity", "hierarchical", "dawa", "ahp", "auto"])
def test_quantile_of_a_release_at_huge_epsilon_inverts_the_exact_cdf(method):
    edges = np.linspace(0, 200_000, 129)
    with pdp.budget(epsilon=1e10):
        h = FRAME.dp.histogram("income", bins=edges, epsilon=1e9, method=method, rng=np.random.default_rng(0))
    exact = np.histogram(FRAME.income, bins=edges)[0]
    np.testing.assert_allclose(h.quantile(QS).to_numpy(), interpolated(exact, edges, QS), rtol=1e-6)
    assert h.quantile(0.5) == pytest.approx(float(interpolated(exact, edges, 0.5)), rel=1e-6)


def test_quantiles_are_monotone_and_the_frame_has_intervals_around_them():
    with pdp.budget(epsilon=1.0):
        h = FRAME.dp.hierarchical_histogram("age", bins=100, range=(0, 100), epsilon=0.1,
                                            rng=np.random.default_rng(1))
    frame = h.quantile(np.linspace(0, 1, 21), confidence_level=0.9)
    assert list(frame.columns) == ["estimate", "ci_low", "ci_high", "confidence_level"]
    assert frame.index.name == "q" and (frame["confidence_level"] == 0.9).all()
    assert frame["estimate"].is_monotonic_increasing
    assert (frame.ci_low <= frame.estimate).all() and (frame.estimate <= frame.ci_high).all()
    assert ((frame.ci_low >= 0) & (frame.ci_high <= 100)).all()


def test_dates_and_durations_give_dates_and_durations():
    days = pd.Timestamp("2024-01-01") + pd.to_timedelta(FRAME.age * 3, unit="D")
    frame = pd.DataFrame({"day": days, "wait": pd.to_timedelta(FRAME.age, unit="min")})
    with pdp.budget(epsilon=1e10):
        d = frame.dp.histogram("day", bins=pd.date_range("2024-01-01", "2024-12-31", freq="3D"), epsilon=1e9,
                               rng=np.random.default_rng(0))
        w = frame.dp.histogram("wait", bins=pd.timedelta_range(0, periods=101, freq="1min"), epsilon=1e9,
                               rng=np.random.default_rng(0))
    assert isinstance(d.quantile(0.5), pd.Timestamp)
    assert abs(d.quantile(0.5) - days.quantile(0.5)) <= pd.Timedelta(days=3)
    assert abs(w.quantile(0.5) - frame.wait.quantile(0.5)) <= pd.Timedelta(minutes=1)


def test_releases_without_an_order_refuse_quantiles_clearly():
    with pdp.budget(epsilon=2.0):
        cats = FRAME.assign(s=np.where(FRAME.age < 50, "a", "b")).dp.histogram("s", categories=["a", "b"],
                                                                              epsilon=1.0)
        grid = FRAME.dp.histogram(["age", "income"], bins=[4, 4], range=[(0, 100), (0, 1e6)], epsilon=1.0)
    with pytest.raises(DomainError):
        cats.quantile(0.5)
    with pytest.raises(DomainError, match="1-D"):
        grid.quantile(0.5)


@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.lists(st.floats(-1, 2), max_size=4),
                 st.text(max_size=2), st.none(), st.booleans()))
@settings(max_examples=80, deadline=None)
def test_q_is_a_probability_or_a_list_of_them(q):
    try:
        probs, _ = check_q(q)
    except ParameterError:
        return
    assert probs.size >= 1 and ((probs >= 0) & (probs <= 1)).all()


@given(st.lists(st.integers(-50, 400), min_size=2, max_size=30),
       st.lists(st.floats(0, 1), min_size=1, max_size=6))
@settings(max_examples=120, deadline=None)
def test_post_processing_is_monotone_in_q_and_inside_the_domain(noisy, q):
    """Whatever the noisy prefixes, the quantiles never decrease in q and stay within the edges."""
    prefix = np.concatenate([[0.0], np.cumsum(noisy)])
    keys = np.linspace(10.0, 20.0, prefix.size)
    var = np.arange(prefix.size, dtype=float)
    probs = np.sort(np.asarray(q))
    est, low, high = cdf_quantiles(prefix, var, var[::-1].copy(), keys, probs, 1.96)
    if np.isnan(est).all():
        return
    assert (np.diff(est) >= -1e-9).all()
    assert ((est >= 10.0 - 1e-9) & (est <= 20.0 + 1e-9)).all()
    assert (low <= est + 1e-9).all() and (est <= high + 1e-9).all()


# ------------------------------------------------------------------------ the quantiles release

def release(frame=FRAME, q=QS, *, bounds=(0, 200_000), seed=0, **kw):
    kw.setdefault("epsilon", 1.0)
    with pdp.budget(epsilon=10**12, delta=None) if "epsilon" in kw else pdp.budget(rho=10**12):
        return frame.dp.quantiles(kw.pop("column", "income"), q, bounds=bounds, rng=np.random.default_rng(seed),
                                  **kw)


def test_release_at_huge_epsilon_is_within_one_grid_step_of_the_clipped_quantiles():
    got = release(epsilon=1e10).to_frame()
    want = np.quantile(np.clip(FRAME.income, 0, 200_000), QS)
    step = 200_000 / 4096
    assert (np.abs(got["estimate"].to_numpy() - want) <= step).all()


def test_values_beyond_the_bounds_count_at_the_bounds():
    wide = pd.concat([FRAME, pd.DataFrame({"income": [1e12] * 1000})], ignore_index=True)
    got = release(wide, q=[0.5, 0.9], epsilon=1e10).to_frame()["estimate"].to_numpy()
    want = np.quantile(np.clip(wide.income, 0, 200_000), [0.5, 0.9])
    assert (np.abs(got - want) <= 200_000 / 4096).all()


def test_one_charge_one_ledger_row_and_every_q_from_the_one_release():
    with pdp.budget(epsilon=1.0) as budget:
        got = FRAME.dp.quantiles("income", QS, bounds=(0, 200_000), epsilon=0.5, rng=np.random.default_rng(3))
    assert len(budget.ledger) == 1 and budget.ledger.loc[0, "method"] == "quantiles"
    assert budget.spent == pytest.approx(0.5)
    again = got.quantile(QS, confidence_level=0.95)
    pd.testing.assert_frame_equal(again, got.to_frame())
    assert "Quantiles" in repr(got) and "<strong>Quantiles</strong>" in got._repr_html_()


def test_dates_clip_to_their_bounds():
    days = pd.DataFrame({"day": pd.Timestamp("2024-01-01") + pd.to_timedelta(FRAME.age * 3, unit="D")})
    got = release(days, q=[0.5], column="day", bounds=(pd.Timestamp("2024-01-01"), pd.Timestamp("2025-01-01")),
                  epsilon=1e10).to_frame()
    want = days.day.clip(upper=pd.Timestamp("2025-01-01")).quantile(0.5)
    assert abs(got["estimate"].iloc[0] - want) <= pd.Timedelta(hours=3)


@pytest.mark.parametrize("kwargs, match", [
    (dict(bounds=(10, 0)), "low < high"),
    (dict(bounds={"income": (0, 1)}), "bounds"),
    (dict(q=1.5), "probability"),
    (dict(q="median"), "probability"),
    (dict(column=["income", "age"]), "one column"),
    (dict(by="age", by_categories=list(range(100)), q=[0.0, 0.5]), "strictly between 0 and 1"),
    (dict(by="age", by_categories=list(range(100)), bounds=(10, 0)), "low < high"),
    (dict(privacy_unit="pid"), "max_rows"),
    (dict(privacy_unit="pid", max_rows="auto"), "auto"),
    (dict(epsilon=-1.0), "epsilon"),
])
def test_bad_public_input_raises_before_any_charge(kwargs, match):
    kw = {"q": QS, "bounds": (0, 200_000), "epsilon": 0.5, **kwargs}
    with pdp.budget(epsilon=1.0) as budget:
        with pytest.raises(pdp.ParameterError, match=match):
            FRAME.dp.quantiles(kw.pop("column", "income"), kw.pop("q"), **kw)
    assert budget.spent == 0 and len(budget.ledger) == 0


def test_odd_values_are_dropped_and_dask_equals_pandas():
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    odd = FRAME.astype({"income": object})
    odd.loc[[3, 2000], "income"] = ["n/a", None]
    with dask.config.set(scheduler="synchronous"):
        for kw in ({}, dict(privacy_unit="pid", max_rows=2)):
            a = release(odd, seed=5, **kw)
            c = release(dd.from_pandas(odd, npartitions=3), seed=5, **kw)
            pd.testing.assert_frame_equal(a.to_frame(), c.to_frame(), check_exact=True)


# ------------------------------------------------------------------------ privacy on neighbouring frames

D = pd.DataFrame({"x": [1.0, 2.0, 2.0, 3.0, 7.0, 8.0], "u": [1, 1, 2, 3, 3, 4]})
#: One more row at a grid boundary between two candidates (the worst place for a CDF's prefix).
D_ROW = pd.concat([D, pd.DataFrame({"x": [5.0 + 10 / 4096 / 2], "u": [9]})], ignore_index=True)
#: One more unit with three rows beyond the bound (two kept with max_rows=2, both at the top).
D_UNIT = pd.concat([D, pd.DataFrame({"x": [50.0] * 3, "u": [9] * 3})], ignore_index=True)


def _quantiles(privacy, **kw):
    return lambda df, rng: df.dp.quantiles("x", [0.25, 0.5, 0.75], bounds=(0, 10), rng=rng, **privacy, **kw)


def _vector(r):
    return np.round(r.to_frame()[["estimate", "ci_low", "ci_high"]].to_numpy(dtype=float).ravel(), 6)


def test_quantiles_are_dp_for_one_more_row_at_a_grid_boundary():
    """The default run's check (QUICK_TRIALS runs); the slow run adds a unit of many rows and the zCDP claim."""
    report = assert_dp(_quantiles({"epsilon": 1.0}), D, D_ROW, epsilon=1.0, trials=QUICK_TRIALS, statistic=_vector,
                       rng=45)
    assert report.charged_per_run == 1.0


@pytest.mark.slow
def test_quantiles_are_dp_for_whole_units():
    report = assert_dp(_quantiles({"epsilon": 1.0}, privacy_unit="u", max_rows=2), D, D_UNIT, epsilon=1.0,
                       trials=SLOW_TRIALS, statistic=_vector, rng=45)
    assert report.charged_per_run == 1.0


@pytest.mark.slow
def test_quantiles_meet_their_zcdp_claim():
    delta = 1e-2
    report = assert_dp(_quantiles({"rho": 0.5}, privacy_unit="u", max_rows=2), D, D_UNIT,
                       epsilon=zcdp(0.5).epsilon_delta(delta), delta=delta, trials=SLOW_TRIALS, statistic=_vector,
                       budget={"rho": 10**6}, rng=46)
    assert report.charged_per_run == 0.5


# ------------------------------------------------------------------------ the intervals' coverage

@pytest.mark.slow
@pytest.mark.parametrize("privacy", [{"epsilon": 0.5}, {"rho": 0.1}], ids=["epsilon", "rho"])
def test_quantile_intervals_cover_at_the_nominal_level(privacy):
    """The tree's intervals (asked with more q's than the exponential mechanisms take, read at QS).
    300 releases x 5 quantiles = 1,500 intervals of fresh data and noise (fixed seeds): the standard error
    of a coverage of 0.95 is sqrt(0.95 * 0.05 / 1500) = 0.0056, so [0.93, 0.975] is 3.5 to 4.5 of them."""
    rng = np.random.default_rng(11)
    hits = []
    for seed in range(300):
        x = rng.lognormal(10.5, 0.8, 5000)
        truth = np.quantile(np.clip(x, 0, 500_000), QS)
        with pdp.budget(**{k: 10.0 for k in privacy}):
            got = pd.DataFrame({"x": x}).dp.quantiles("x", TREE_QS, bounds=(0, 500_000),
                                                      rng=np.random.default_rng(seed), **privacy).to_frame().loc[QS]
        hits.append((got.ci_low.to_numpy() <= truth) & (truth <= got.ci_high.to_numpy()))
    coverage = float(np.mean(hits))
    assert 0.93 <= coverage <= 0.975, coverage
    assert not math.isnan(coverage)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(raw=st.floats(min_value=1e-9, max_value=1e12, allow_nan=False, allow_infinity=False))
def test_the_grid_step_is_the_largest_round_number_at_most_the_even_step(raw):
    from fractions import Fraction

    from pandas_dp.releases.value_bounds import round_step

    step = round_step(raw)
    exact = Fraction(repr(step))                        # a round decimal: m * 10**e, m in 1, 2, 5
    m, e = exact, 0
    while m >= 10:
        m, e = m / 10, e + 1
    while m < 1:
        m, e = m * 10, e - 1
    assert m in (1, 2, 5)
    assert exact <= Fraction(raw) < {1: 2, 2: 5, 5: 10}[int(m)] * Fraction(10) ** e


def test_a_quantile_inside_a_tie_of_round_values_is_the_tied_value():
    """Whole minutes on a grid of 0.1 minutes (bounds (-60, 360), 4,200 steps): at a huge epsilon the exponential
    mechanism's quartiles and median, one q a release, are values of the data with rank error 0 (the tied value's
    score is at most its neighbours'; 4,096 equal steps put the release beside it, a rank error of the tie)."""
    minutes = pd.DataFrame({"delay": np.random.default_rng(4).integers(-20, 40, 5000).astype(float)})
    values = np.sort(minutes["delay"].to_numpy())
    for q in (0.25, 0.5, 0.75):
        with pdp.budget(epsilon=10**9):
            got = minutes.dp.quantiles("delay", q, bounds=(-60, 360), epsilon=10**8,
                                       rng=np.random.default_rng(0)).to_frame()["estimate"].iloc[0]
        below = np.searchsorted(values, got, side="left") / values.size
        at_or_below = np.searchsorted(values, got, side="right") / values.size
        assert max(0.0, below - q, q - at_or_below) == 0.0 and got in values, (q, got)
