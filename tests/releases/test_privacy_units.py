"""Privacy units (issue 14): the guarantee protects a unit (a rider, a customer), whatever its number of rows.

Neighbouring frames differ by all the rows of one unit. The tests check the public checks (before any
charge), the bounding itself (at most k rows per unit, random, never by row order, independently per
unit), the sensitivity each method is calibrated to, DP with whole-unit neighbours (assert_dp), and
that the Dask engine gives the pandas engine's release for the same rng.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pandas_dp as pdp
from pandas_dp.engines.pandas import PANDAS_ENGINE
from pandas_dp.engines.pandas.bounding import bound_codes, unit_codes, unit_hashes
from pandas_dp.noise.words import release_key
from pandas_dp.domain.grid import make_grid
from pandas_dp.releases.methods import METHODS
from pandas_dp.releases.registry import histogram_methods
from pandas_dp.testing import assert_dp, assert_same_outcome, with_row
from pandas_dp.privacy.units import AUTO_STEPS, unit_bounds

from _slow import FULL, QUICK_TRIALS, SLOW_TRIALS

RNG = np.random.default_rng(7)
RIDES = pd.DataFrame({"rider": RNG.integers(0, 60, 600), "hour": RNG.integers(0, 24, 600),
                      "fare": RNG.gamma(2.0, 8.0, 600)})


def release(frame, **kw):
    kw.setdefault("epsilon", 1.0)
    return frame.dp.histogram("hour", bins=24, range=(0, 24), privacy_unit="rider", **kw)


# ------------------------------------------------------------------ public checks, before any charge

@pytest.mark.parametrize("kwargs,match", [
    (dict(privacy_unit="nope", max_rows=3), "privacy_unit"),
    (dict(privacy_unit="rider"), "needs a public bound"),
    (dict(max_rows=3), "pass privacy_unit="),
    (dict(privacy_unit="rider", max_rows=3, max_cells=2, max_rows_per_cell=1), "not both"),
    (dict(privacy_unit="rider", max_cells=2), "go together"),
    (dict(privacy_unit="rider", max_rows=0), "'max_rows'"),
    (dict(privacy_unit="rider", max_rows=2.5), "'max_rows'"),
    (dict(privacy_unit="rider", max_rows="many"), "'max_rows'"),
    (dict(privacy_unit="rider", max_rows=True), "'max_rows'"),
    (dict(privacy_unit=["rider"], max_rows=3), "privacy_unit"),
    (dict(privacy_unit="hour", max_rows=3), "also a released column"),
])
def test_bounds_are_checked_before_any_charge(kwargs, match):
    with pdp.budget(epsilon=1.0) as b:
        with pytest.raises(pdp.ParameterError, match=match):
            RIDES.dp.histogram("hour", bins=24, range=(0, 24), epsilon=0.5, **kwargs)
    assert b.spent == 0 and len(b.ledger) == 0


# ------------------------------------------------------------------ the bounding itself

@settings(max_examples=40, deadline=None)
@given(n_units=st.integers(1, 20), rows=st.integers(0, 200), k=st.integers(1, 6), seed=st.integers(0, 2**31),
       cells=st.integers(1, 8))
def test_every_unit_keeps_at_most_its_bound(n_units, rows, k, seed, cells):
    rng = np.random.default_rng(seed)
    units = rng.integers(-1, n_units, rows)          # -1: a row without a valid unit
    codes = rng.integers(-1, cells, rows)            # -1: out of domain
    key = release_key(rng)
    kept = bound_codes(codes, units, unit_bounds(["u"], "u", max_rows=k), key)
    assert np.all((kept == -1) | (kept == codes)) and np.all(kept[units < 0] == -1)
    live = (codes >= 0) & (units >= 0)
    per_unit = np.bincount(units[kept >= 0], minlength=n_units)
    available = np.bincount(units[live], minlength=n_units)
    np.testing.assert_array_equal(per_unit, np.minimum(available, k))  # keeps min(k, its rows in domain)
    c, r = max(1, k // 2), 2
    kept = bound_codes(codes, units, unit_bounds(["u"], "u", max_cells=c, max_rows_per_cell=r), key,
                       unit_hashes=unit_hashes(pd.Series(units)).astype(np.uint64) + 1)
    frame = pd.DataFrame({"u": units, "c": kept})[kept >= 0]
    assert (frame.groupby("u")["c"].nunique() <= c).all()
    assert (frame.groupby(["u", "c"]).size() <= r).all()


def test_truncation_is_uniform_and_never_by_row_order():
    # One unit with 10 rows, bound 3: over many release keys each row is kept with probability 3/10.
    units = np.zeros(10, dtype=np.int64)
    codes = np.arange(10, dtype=np.int64)
    bounds = unit_bounds(["u"], "u", max_rows=3)
    kept = np.zeros(10)
    n = 4000
    rng = np.random.default_rng(1)
    for _ in range(n):
        kept += bound_codes(codes, units, bounds, release_key(rng)) >= 0
    # Each row: Binomial(4000, 0.3); 4.5 sd is 130: no row (in particular not the first ones) is favoured.
    assert np.all(np.abs(kept - 0.3 * n) < 4.5 * math.sqrt(n * 0.3 * 0.7)), kept


def test_units_are_truncated_independently():
    # Adding rows to another unit does not change which rows of unit 0 are kept (same key, same positions).
    key = release_key(np.random.default_rng(3))
    units = np.array([0] * 8 + [1] * 2)
    codes = np.arange(10)
    a = bound_codes(codes, units, unit_bounds(["u"], "u", max_rows=3), key)
    units2 = np.array([0] * 8 + [1] * 2)
    codes2 = np.array(list(range(8)) + [5, 6])
    b = bound_codes(codes2, units2, unit_bounds(["u"], "u", max_rows=3), key)
    np.testing.assert_array_equal(a[:8], b[:8])


def test_a_unit_with_1000_rows_in_one_cell_moves_it_by_at_most_the_bound():
    big = pd.concat([RIDES, pd.DataFrame({"rider": 999, "hour": 5, "fare": 1.0}, index=range(1000))],
                    ignore_index=True)
    grid = make_grid(RIDES, ["hour"], bins=24, range=(0, 24))
    key = release_key(np.random.default_rng(0))
    for kwargs, bound in ((dict(max_rows=4), 4), (dict(max_cells=3, max_rows_per_cell=2), 2)):
        b = unit_bounds(big.columns, "rider", **kwargs)
        without = PANDAS_ENGINE.coded_rows(RIDES, grid, b).counts(b, key)
        with_ = PANDAS_ENGINE.coded_rows(big, grid, b).counts(b, key)
        diff = with_ - without
        assert diff[5] == bound and np.abs(diff).sum() == bound   # one cell, by at most the bound
        assert np.all(diff[np.arange(24) != 5] == 0)


# ------------------------------------------------------------------ sensitivities and what is recorded

def test_noise_is_calibrated_to_the_unit_sensitivity():
    with pdp.budget(epsilon=10.0, ) as b:
        flat = release(RIDES, max_rows=5, rng=np.random.default_rng(0))
        cells = release(RIDES, max_cells=3, max_rows_per_cell=2, rng=np.random.default_rng(0))
        tree = release(RIDES, max_cells=3, max_rows_per_cell=2, method="hierarchical", branching=2,
                       rng=np.random.default_rng(0))
    assert flat.params["noise_scale"] == 5 and flat.params["max_rows"] == 5      # L1 = k
    assert cells.params["noise_scale"] == 6                                       # L1 = c r
    assert flat.params["privacy_unit"] == "rider" and flat.epsilon == 1.0
    assert "privacy_unit" in b.ledger.loc[0, "params"] and '"max_rows": 5' in b.ledger.loc[0, "params"]
    # Pure trees: every level has L1 = c r (one level per 1/height of epsilon).
    assert set(tree.params["level_noise_scales"][:-1]) == {6 * tree.height}


@pytest.mark.parametrize("method", sorted(histogram_methods()))
def test_unit_releases_record_the_sensitivity_their_noise_uses(method):
    # Issue 24, item 5: unit releases recorded "sensitivity": 1 next to the unit sensitivity.
    kw = dict(branching=2) if method == "hierarchical" else {}
    with pdp.budget(epsilon=10.0):
        if method in ("agrid", "ugrid"):   # 2-D grids
            h = RIDES.dp.histogram(["hour", "fare"], bins=[24, 8], range=[(0, 24), (0, 80)], epsilon=1.0,
                                   method=method, privacy_unit="rider", max_cells=3, max_rows_per_cell=2,
                                   rng=np.random.default_rng(0))
        else:
            h = release(RIDES, max_cells=3, max_rows_per_cell=2, method=method, rng=np.random.default_rng(0), **kw)
        u = RIDES.dp.unattributed_histogram("hour", epsilon=1.0, privacy_unit="rider", max_rows=4,
                                            rng=np.random.default_rng(0))
    flat = {"l1": "6", "l2_squared": "12"}
    group = {"l1": "6", "l2_squared": "36"}     # methods run at the group-privacy loss: k = c r = 6 rows
    assert h.params["unit_sensitivity"] == flat
    assert 1 not in (h.params.get("sensitivity"), h.params.get("sensitivity_per_level"))
    if "sensitivity" in h.params:
        assert h.params["sensitivity"] == (flat if METHODS[method].unit_aware else group)
    if method in ("agrid", "ugrid"):
        assert h.params["sensitivity_per_level"] == group
    if method == "identity":
        assert h.params["noise_scale"] == 6                                   # L1 / epsilon = 6 / 1
    if method == "hierarchical":
        levels = h.params["sensitivity_per_level"]
        assert len(levels) == h.height + 1 and levels[0] == {"l1": "6", "l2_squared": "12"}
        scales = h.params["level_noise_scales"]
        for lv, eps, scale in zip(levels, h.params["level_epsilons"], scales):
            if scale is not None:                                               # scale = L1 / epsilon_k
                assert Fraction(scale) == Fraction(lv["l1"]) / Fraction(eps)
    assert u.params["sensitivity"] == {"l1": "4", "l2_squared": "16"} and u.params["noise_scale"] == Fraction(40, 9)


def test_zcdp_cells_scheme_uses_the_l2_sensitivity_per_level():
    from pandas_dp.privacy.units import UnitBounds

    b = UnitBounds("u", max_cells=4, max_rows_per_cell=3)
    assert b.histogram_sensitivity().l2_squared == 4 * 9            # sqrt(c) r
    assert b.level_sensitivity(2).l2_squared == 9 * (2 * 4)         # two nodes of two cells
    assert b.level_sensitivity(4).l2_squared == (4 * 3) ** 2        # a node holds all four cells
    assert b.level_sensitivity(16).l1 == 12


def test_auto_bound_is_chosen_privately_and_recorded():
    df = pd.DataFrame({"rider": np.repeat(np.arange(2000), 6), "hour": np.tile(np.arange(6), 2000)})
    with pdp.budget(epsilon=1.0) as b:
        h = df.dp.histogram("hour", bins=24, range=(0, 24), epsilon=1.0, privacy_unit="rider", max_rows="auto",
                            rng=np.random.default_rng(2))
    assert h.params["max_rows"] in AUTO_STEPS and h.params["max_rows"] == 6   # every rider has 6 rows
    assert h.params["max_rows_auto_share"] == "1/20" and '"max_rows": "auto"' in b.ledger.loc[0, "params"]
    assert b.spent == 1.0 and list(b.ledger["status"]) == ["ok"]


def test_a_public_share_buys_the_automatic_bound():
    # AutoMaxRows(share=s) spends s of the loss on the bound and the rest on the histogram: one charge,
    # the share in params and the ledger; the default AutoMaxRows() is "auto" itself, seed for seed.
    df = pd.DataFrame({"rider": np.repeat(np.arange(300), 6), "hour": np.tile(np.arange(6), 300)})
    call = lambda max_rows, seed=2: df.dp.histogram("hour", bins=24, range=(0, 24), epsilon=1.0,  # noqa: E731
                                                    privacy_unit="rider", max_rows=max_rows,
                                                    rng=np.random.default_rng(seed))
    with pdp.budget(epsilon=3.0) as b:
        quarter, auto, default = call(pdp.AutoMaxRows(share=0.25)), call("auto"), call(pdp.AutoMaxRows())
    assert b.spent == 3.0 and list(b.ledger["status"]) == ["ok"] * 3
    assert quarter.params["max_rows_auto_share"] == "1/4" and '"max_rows_auto_share": "1/4"' in b.ledger.loc[0, "params"]
    pd.testing.assert_series_equal(auto.counts, default.counts)
    assert dict(auto.params) == dict(default.params)
    # The histogram runs at 3/4 of epsilon with the chosen bound k: discrete Laplace of scale t = k / (3/4),
    # variance 2 e^(-1/t) / (1 - e^(-1/t))^2.
    t = quarter.params["max_rows"] / 0.75
    assert np.allclose(quarter.to_frame()["variance"], 2 * np.exp(-1 / t) / (1 - np.exp(-1 / t)) ** 2)
    # 300 units whose 10% tail is 30: 1/20 of epsilon 1 is too little to be stable (see AutoMaxRows),
    # a quarter of it finds the 6 rows in nearly every seed.
    with pdp.budget(epsilon=200.0):
        found = [call(pdp.AutoMaxRows(share=0.25), seed).params["max_rows"] for seed in range(40)]
    assert np.mean(np.isin(found, [4, 6, 8])) >= 0.9


@settings(max_examples=25, deadline=None)
@given(share=st.one_of(st.floats(allow_nan=True), st.integers(-3, 3), st.just("1/4"), st.just(None),
                       st.fractions(min_value=-1, max_value=2)),
       quantile=st.one_of(st.floats(-1, 2), st.just(True), st.just("0.9")))
def test_automaxrows_takes_a_share_in_0_half_and_a_quantile_in_0_1(share, quantile):
    from fractions import Fraction
    try:
        valid_share = not isinstance(share, (str, type(None))) and 0 < Fraction(share) <= Fraction(1, 2)
    except (ValueError, OverflowError):
        valid_share = False
    valid_quantile = isinstance(quantile, float) and 0 < quantile <= 1
    if valid_share and valid_quantile:
        auto = pdp.AutoMaxRows(share=share, quantile=quantile)
        assert 0 < auto.share <= Fraction(1, 2) and isinstance(auto.share, Fraction)
    else:
        with pytest.raises(pdp.ParameterError, match="AutoMaxRows"):
            pdp.AutoMaxRows(share=share, quantile=quantile)


def test_automaxrows_takes_numpy_and_decimal_shares_exactly():
    from decimal import Decimal
    from fractions import Fraction
    assert pdp.AutoMaxRows(share=np.float64(0.2)).share == Fraction(1, 5)
    assert pdp.AutoMaxRows(share=Decimal("0.25")).share == Fraction(1, 4)


def test_a_bad_max_rows_names_the_automatic_choice_before_any_charge():
    with pdp.budget(epsilon=1.0) as b:
        with pytest.raises(pdp.ParameterError, match="max_rows.*'auto'.*AutoMaxRows"):
            RIDES.dp.histogram("hour", bins=24, range=(0, 24), epsilon=1.0, privacy_unit="rider", max_rows="automatic")
    assert b.spent == 0


# ------------------------------------------------------------------ DP with whole-unit neighbours

def _unit_neighbours():
    base = RIDES[RIDES["rider"] < 6].reset_index(drop=True)
    heavy_one_cell = pd.concat([base, pd.DataFrame({"rider": 77, "hour": 3, "fare": 1.0}, index=range(40))],
                               ignore_index=True)
    heavy_spread = pd.concat([base, pd.DataFrame({"rider": 77, "hour": np.arange(40) % 24, "fare": 1.0})],
                             ignore_index=True)
    without_one = base[base["rider"] != 2].reset_index(drop=True)
    return base, {"unit with 40 rows in one cell": heavy_one_cell, "unit with 40 rows spread": heavy_spread,
                  "a unit removed": without_one}


BASE, NEIGHBOURS = _unit_neighbours()


#: Methods that release 2-D grids only: tested on (hour, fare) instead of hour.
TWO_D_ONLY = {"ugrid", "agrid"}


def method_release(frame, method, **kw):
    """``release`` with ``method``; a 2-D-only method counts (hour, fare in 4 public bins)."""
    if method not in TWO_D_ONLY:
        return release(frame, method=method, **kw)
    kw.setdefault("epsilon", 1.0)
    return frame.dp.histogram(["hour", "fare"], bins=[24, 4], range=[(0, 24), (0, 40)], privacy_unit="rider",
                              method=method, **kw)


@pytest.mark.parametrize("method", sorted(histogram_methods()))
def test_every_method_is_dp_for_whole_units(method):
    mech = lambda df, rng: method_release(df, method, max_rows=3, rng=rng)   # noqa: E731
    report = assert_dp(mech, BASE, NEIGHBOURS["unit with 40 rows in one cell"], epsilon=1.0, trials=QUICK_TRIALS,
                       rng=5)
    assert report.passed and report.charged_per_run == 1.0


SCHEMES = {"max_rows=3": dict(max_rows=3), "max_cells=2, max_rows_per_cell=2": dict(max_cells=2, max_rows_per_cell=2),
           "max_rows=auto": dict(max_rows="auto"), "AutoMaxRows(share=1/4)": dict(max_rows=pdp.AutoMaxRows(share=0.25))}
QUICK_CASE, QUICK_SCHEME = "unit with 40 rows in one cell", "max_rows=3"
#: The slow matrix: every scheme on the quick neighbour and every neighbour with the quick scheme (the quick
#: run tests their crossing); PANDAS_DP_SLOW_DEPTH=full crosses them all (tests/_slow.py).
SLOW_PAIRS = [(scheme, case) for scheme in SCHEMES for case in sorted(NEIGHBOURS)
              if FULL or (scheme == QUICK_SCHEME) != (case == QUICK_CASE)]


#: (method, scheme, neighbour) of the slow run: the pairs above taken in turn by the methods at CI depth (every
#: pair is tested on some methods), every method with every pair at full depth.
SLOW_TRIPLES = ([(m, *pair) for m in sorted(histogram_methods()) for pair in SLOW_PAIRS] if FULL else
                [(m, *SLOW_PAIRS[k % len(SLOW_PAIRS)]) for k, m in enumerate(sorted(histogram_methods()))])
assert FULL or len(histogram_methods()) >= len(SLOW_PAIRS)  # so every pair is tested


@pytest.mark.slow
@pytest.mark.parametrize("method,scheme,case", SLOW_TRIPLES)
def test_every_method_is_dp_for_whole_units_on_every_neighbour(method, scheme, case):
    mech = lambda df, rng: method_release(df, method, rng=rng, **SCHEMES[scheme])   # noqa: E731
    report = assert_dp(mech, BASE, NEIGHBOURS[case], epsilon=1.0, trials=SLOW_TRIALS, rng=6)
    assert report.passed


def test_the_truncation_is_what_makes_it_dp():
    # Without the bound (a row-level release), the 40-row unit is plainly visible: the tester catches it.
    mech = lambda df, rng: df.dp.histogram("hour", bins=24, range=(0, 24), epsilon=1.0, rng=rng)   # noqa: E731
    report = assert_dp(mech, BASE, NEIGHBOURS["unit with 40 rows in one cell"], epsilon=1.0, trials=300, rng=5,
                       raises=False)
    assert not report.passed and report.epsilon_lower_bound > 2   # claimed 1; 300 runs bound the estimate


# ------------------------------------------------------------------ engines and the boundary rule

@pytest.mark.parametrize("scheme", [dict(max_rows=4), dict(max_cells=3, max_rows_per_cell=2), dict(max_rows="auto")])
@pytest.mark.parametrize("method", ["identity", "hierarchical"])
def test_dask_gives_the_pandas_release(scheme, method):
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    with dask.config.set(scheduler="sync"), pdp.budget(epsilon=10.0):
        a = release(RIDES, method=method, rng=np.random.default_rng(4), **scheme)
        c = release(dd.from_pandas(RIDES, npartitions=4), method=method, rng=np.random.default_rng(4), **scheme)
    pd.testing.assert_series_equal(a.counts, c.counts)
    assert dict(a.params) == dict(c.params)


@settings(max_examples=12, deadline=None)
@given(value=st.sampled_from([np.nan, None, [1, 2], {"a": 1}, float("inf"), "", b"\x00", pd.NaT]))
def test_an_odd_unit_value_never_changes_the_outcome(value):
    d_prime = with_row(RIDES, {"rider": value})
    call = lambda f: release(f, max_rows=3, rng=np.random.default_rng(0))   # noqa: E731
    assert_same_outcome(call, RIDES, d_prime)
    if value is None or isinstance(value, (list, dict)) or value is pd.NaT or (
            isinstance(value, float) and math.isnan(value)):
        # No unit: the row is out of domain, so the seeded release is byte-identical. (inf, "" and
        # bytes are plain values: a real, if odd, extra unit with one row.)
        with pdp.budget(epsilon=10.0):
            pd.testing.assert_series_equal(call(RIDES).counts, call(d_prime).counts)


def test_unit_hashes_identify_units_whatever_the_column_dtype():
    ints = unit_hashes(pd.Series([1, 2, 2, 3]))
    assert unit_codes(ints).tolist() == [0, 1, 1, 2]
    text = unit_hashes(pd.Series(["a", None, "a", [1]], dtype=object))
    assert text[1] == 0 and text[3] == 0 and text[0] == text[2] != 0


# ------------------------------------------------------------------ unattributed histograms and count-of-counts

EDGES = pd.DataFrame({"user": RNG.integers(0, 30, 300), "page": RNG.integers(0, 20, 300)})


@pytest.mark.parametrize("groups", [None, list(range(20))], ids=["estimated groups", "public groups"])
@pytest.mark.parametrize("scheme", [dict(max_rows=4), dict(max_cells=2, max_rows_per_cell=2)])
def test_unattributed_histograms_bound_units(groups, scheme):
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    call = lambda f, rng: f.dp.unattributed_histogram("page", epsilon=1.0, groups=groups,   # noqa: E731
                                                      privacy_unit="user", rng=rng, **scheme)
    with pdp.budget(epsilon=10.0), dask.config.set(scheduler="sync"):
        a = call(EDGES, np.random.default_rng(2))
        c = call(dd.from_pandas(EDGES, npartitions=3), np.random.default_rng(2))
    np.testing.assert_array_equal(a.counts.to_numpy(), c.counts.to_numpy())
    bound = scheme.get("max_rows") or scheme["max_cells"] * scheme["max_rows_per_cell"]
    assert a.params["noise_scale"] == Fraction(bound) / (Fraction(9, 10) if groups is None else 1)
    heavy = pd.concat([EDGES, pd.DataFrame({"user": 99, "page": np.arange(30) % 20})], ignore_index=True)
    report = assert_dp(call, EDGES, heavy, epsilon=1.0, trials=QUICK_TRIALS, rng=8,
                       statistic=lambda r: np.concatenate([np.zeros(40), r.counts.to_numpy(float)])[-40:])
    assert report.passed


HOUSEHOLDS = pd.DataFrame({"hh": range(12), "state": list("ababababaabb")})
PERSONS = pd.DataFrame({"hh": [0, 0, 0, 1, 2, 2, 3, 4, 4, 4, 4, 5, 6, 7, 7, 8, 9, 9, 10, 11, 11, 11]}).merge(
    HOUSEHOLDS, on="hh")


@pytest.mark.slow  # assert_dp on whole groups: long statistical check, in CI's slow step (default-run time)
@pytest.mark.parametrize("method", ["hc", "hg", "naive"])
def test_count_of_counts_with_the_group_as_the_unit(method):
    from pandas_dp.releases.count_of_counts import group_unit_sensitivity

    assert group_unit_sensitivity("hc", 5, 0).l1 == 5 and group_unit_sensitivity("naive", 5, 0).l1 == 2
    assert group_unit_sensitivity("hg", 5, 1).l2_squared == 16
    with pdp.budget(epsilon=1.0) as b:
        with pytest.raises(pdp.ParameterError, match="max_size"):
            PERSONS.dp.count_of_counts("hh", "state", groups=HOUSEHOLDS, epsilon=0.5, privacy_unit="group")
        with pytest.raises(pdp.ParameterError, match="privacy_unit"):
            PERSONS.dp.count_of_counts("hh", "state", groups=HOUSEHOLDS, epsilon=0.5, privacy_unit="hh_size")
    assert b.spent == 0
    # Neighbour: household 4 (4 persons) replaced by an empty one: a whole group changes.
    emptied = PERSONS[PERSONS["hh"] != 4].reset_index(drop=True)
    call = lambda f, rng: f.dp.count_of_counts("hh", "state", groups=HOUSEHOLDS, epsilon=1.0, max_size=4,  # noqa: E731
                                               method=method, privacy_unit="group", rng=rng)

    def sizes(r):
        return np.concatenate([np.bincount(np.minimum(r.at(level, region).index.to_numpy(int).repeat(
            r.at(level, region).to_numpy(int)), 6), minlength=7) for level, region in
            (("national", None), ("state", "a"), ("state", "b"))])

    # about 40 ms a release: 100 runs a side here; tests/test_privacy_mechanisms.py runs every neighbour (slow)
    report = assert_dp(call, PERSONS, emptied, epsilon=1.0, trials=100, statistic=sizes, rng=9)
    assert report.passed and report.charged_per_run == 1.0


# ------------------------------------------------------------------ tables by geography

GEO = pd.DataFrame({"state": ["A", "A", "B"], "county": ["a1", "a2", "b1"]})
PEOPLE = RIDES.assign(county=np.array(["a1", "a2", "b1"])[RIDES["rider"] % 3],
                      state=np.array(["A", "A", "B"])[RIDES["rider"] % 3])


def by_region(frame, **kw):
    kw.setdefault("epsilon", 1.0)
    return frame.dp.histogram("hour", bins=6, range=(0, 24), by=["state", "county"], hierarchy=GEO,
                              privacy_unit="rider", **kw)


@pytest.mark.parametrize("scheme,k", [(dict(max_rows=3), 3), (dict(max_cells=2, max_rows_per_cell=2), 4)])
def test_geography_noises_every_level_for_the_unit_row_bound(scheme, k):
    # Coarser levels sum the leaf table: a unit's k kept rows may meet in one cell there, so every
    # level is noised at sensitivity k (group privacy), in L1 and in L2.
    with pdp.budget(epsilon=10.0):
        plain = PEOPLE.dp.histogram("hour", bins=6, range=(0, 24), by=["state", "county"], hierarchy=GEO,
                                    epsilon=1.0)
        unit = by_region(PEOPLE, **scheme)
    with pdp.budget(rho=10.0):
        zplain = PEOPLE.dp.histogram("hour", bins=6, range=(0, 24), by=["state", "county"], hierarchy=GEO,
                                     rho=0.5)
        zunit = by_region(PEOPLE, epsilon=None, rho=0.5, **scheme)
    assert unit.params["unit_sensitivity"] == str(k)
    for a, b in zip(plain.noises, unit.noises):
        assert b.scale == a.scale * k            # Laplace scale k / epsilon_level
    for a, b in zip(zplain.noises, zunit.noises):
        assert b.sigma2 == a.sigma2 * k * k      # Gaussian sigma**2 = k**2 / (2 rho_level)
    assert unit.loss == plain.loss


def test_geography_bounds_every_unit_on_the_leaf_table():
    heavy = pd.concat([PEOPLE, pd.DataFrame({"rider": 999, "hour": 3, "fare": 1.0, "state": "A", "county": "a1"},
                                            index=range(500))], ignore_index=True)
    from pandas_dp.algorithms.geography.layout import level_tables
    from pandas_dp.domain.geography import region_tree

    tree = region_tree(heavy.columns, None, ["state", "county"], hierarchy=GEO)
    grid = make_grid(heavy, ["hour"], bins=6, range=(0, 24))
    bounds = unit_bounds(heavy.columns, "rider", max_rows=3)
    key = release_key(np.random.default_rng(0))
    before = PANDAS_ENGINE.coded_region_rows(PEOPLE, tree, grid, bounds).counts(bounds, key)
    after = PANDAS_ENGINE.coded_region_rows(heavy, tree, grid, bounds).counts(bounds, key)
    for lo, hi in zip(level_tables(before.reshape(3, 6), tree), level_tables(after.reshape(3, 6), tree)):
        assert 0 <= np.abs(hi - lo).sum() <= 3


@pytest.mark.slow  # long statistical check (default-run time, issue 29 item 10); runs in CI's slow step
def test_geography_with_units_is_dp_for_whole_units():
    base = PEOPLE[PEOPLE["rider"] < 6].reset_index(drop=True)
    heavy = pd.concat([base, pd.DataFrame({"rider": 77, "hour": 3, "fare": 1.0, "state": "A", "county": "a1"},
                                          index=range(40))], ignore_index=True)
    mech = lambda df, rng: by_region(df, max_rows=3, rng=rng)   # noqa: E731
    report = assert_dp(mech, base, heavy, epsilon=1.0, trials=QUICK_TRIALS, rng=5)
    assert report.passed and report.charged_per_run == 1.0


@pytest.mark.parametrize("scheme", [dict(max_rows=4), dict(max_cells=3, max_rows_per_cell=2), dict(max_rows="auto")])
def test_geography_with_units_on_dask_gives_the_pandas_release(scheme):
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    with dask.config.set(scheduler="sync"), pdp.budget(epsilon=10.0):
        a = by_region(PEOPLE, rng=np.random.default_rng(4), **scheme)
        c = by_region(dd.from_pandas(PEOPLE, npartitions=4), rng=np.random.default_rng(4), **scheme)
    pd.testing.assert_series_equal(a.counts, c.counts)
    assert dict(a.params) == dict(c.params)


@pytest.mark.parametrize("unit", ["county", "state"])
def test_geography_unit_cannot_be_a_region_column(unit):
    with pdp.budget(epsilon=1.0) as b:
        with pytest.raises(pdp.ParameterError, match="privacy_unit"):
            PEOPLE.dp.histogram("hour", bins=6, range=(0, 24), by=["state", "county"], hierarchy=GEO,
                                privacy_unit=unit, max_rows=2, epsilon=1.0)
        assert b.spent == 0


@settings(max_examples=8, deadline=None)
@given(value=st.sampled_from([np.nan, None, [1, 2], {"a": 1}, pd.NaT]))
def test_geography_odd_unit_value_is_out_of_domain(value):
    d_prime = with_row(PEOPLE, {"rider": value, "state": "A", "county": "a1", "hour": 3})
    call = lambda f: by_region(f, max_rows=3, rng=np.random.default_rng(0))   # noqa: E731
    assert_same_outcome(call, PEOPLE, d_prime)
    with pdp.budget(epsilon=10.0):
        pd.testing.assert_series_equal(call(PEOPLE).counts, call(d_prime).counts)


# ------------------------------------------------------------------ issue 29, item 3: the bias is said

def test_a_bounded_unit_says_where_the_numbers_are_that_intervals_cover_noise_only():
    """repr, notebook view, to_frame().attrs and the plot say the intervals leave out the bias of bounding;
    the note is public (it names the bound), the same on neighbouring frames, absent without a unit."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with pdp.budget(epsilon=10.0):
        r = release(RIDES, max_rows=5, rng=np.random.default_rng(0))
        auto = release(RIDES, max_rows="auto", rng=np.random.default_rng(0))
        cells = release(RIDES, max_cells=3, max_rows_per_cell=2, rng=np.random.default_rng(0))
        plain = RIDES.dp.histogram("hour", bins=24, range=(0, 24), epsilon=1.0, rng=np.random.default_rng(0))
        other = release(with_row(RIDES, {"rider": 999, "hour": 3, "fare": 1.0}), max_rows=5,
                        rng=np.random.default_rng(0))
    note = "intervals cover the noise only: each rider kept at most 5 rows"
    assert note in repr(r) and note in r._repr_html_() and note in r.to_frame().attrs["note"]
    assert r.to_frame().attrs == other.to_frame().attrs  # public: the bound, not the data
    assert "(max_rows='auto')" in auto.to_frame().attrs["note"]
    assert "at most 2 rows in each of at most 3 cells" in repr(cells)
    assert "note" not in plain.to_frame().attrs and "note:" not in repr(plain)
    ax = r.plot()
    assert any(note in " ".join(t.get_text().split()) for t in ax.texts)   # wrapped to the Axes' width
    plt.close(ax.figure)
