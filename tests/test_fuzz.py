"""Hypothesis fuzz of every public release method: arguments and frames.

Contract checked on every example: the call either returns a release or
raises a documented :class:`pandas_dp.PandasDPError` subclass (never another
exception, never a warning: ``filterwarnings = error``), and the budget is
charged exactly when a release was returned, by exactly ``epsilon``, in one
ledger row with status ``ok``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pandas_dp as pdp
from pandas_dp._utils.rational import to_fraction

from _slow import FULL as SLOW_FULL

CASES: Counter[str] = Counter()  # examples run per method (reported by test_report_case_counts)
FUZZ = settings(max_examples=250 if SLOW_FULL else 60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
TOTAL = 50  # budget of every example; epsilons above it must raise BudgetExceededError

VALID_EPSILONS = st.floats(min_value=0.01, max_value=5, allow_nan=False)
EPSILONS = st.one_of(
    VALID_EPSILONS, VALID_EPSILONS, st.sampled_from([0.1, 0.5, 1, Fraction(1, 3), np.float32(0.5), np.int64(1)]),
    st.sampled_from([0, -1, -0.0, math.nan, math.inf, -math.inf, 1e300, 1e-300, 5e-324, TOTAL, TOTAL + 1,
                     "1", None, True, [1.0]]),
)
VALUES = st.one_of(
    st.integers(-10, 300), st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from([0, 1, 99, 100, 1e18, -1e18, 2**62, math.nan, math.inf, -math.inf]),
)


@st.composite
def frames(draw: Any) -> pd.DataFrame:
    """A frame with a column ``v`` of a random dtype, a string column and a categorical column."""
    n = draw(st.integers(0, 25))
    kind = draw(st.sampled_from(["int", "float", "object", "bool", "nullable", "huge", "str"]))
    if kind == "int":
        v: Any = np.array(draw(st.lists(st.integers(-5, 150), min_size=n, max_size=n)), dtype=np.int64)
    elif kind == "huge":
        v = np.array(draw(st.lists(st.sampled_from([2**62, -2**62, 0, 7]), min_size=n, max_size=n)), dtype=np.int64)
    elif kind == "float":
        v = np.array(draw(st.lists(VALUES, min_size=n, max_size=n)), dtype=np.float64)
    elif kind == "bool":
        v = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    elif kind == "nullable":
        v = pd.array(draw(st.lists(st.one_of(st.none(), st.integers(0, 100)), min_size=n, max_size=n)),
                     dtype="Int64")
    elif kind == "str":
        v = draw(st.lists(st.sampled_from(["a", "b", "c", "zz"]), min_size=n, max_size=n))
    else:
        v = pd.Series(draw(st.lists(st.one_of(st.integers(0, 5), st.text(max_size=2), st.none()),
                                    min_size=n, max_size=n)), dtype=object)
    cats = pd.Categorical(draw(st.lists(st.sampled_from(["x", "y", None]), min_size=n, max_size=n)),
                          categories=["x", "y", "w"])
    ids = draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))
    return pd.DataFrame({"v": v, "c": cats, "g": ids, "s": [f"s{i % 3}" for i in range(n)]})


VALID_DOMAINS = st.sampled_from([
    (list(range(0, 101, 10)), None, None), (10, (0, 100), None), (7, (-5, 200), None), ([0, 1, 2, 50, 150], None, None),
    (16, (0, 160), None), (None, None, ["a", "b", "c", "zz"]), (None, None, ["x", "y", "w"]),
])
BINS = st.one_of(
    st.none(), st.integers(-2, 40), st.sampled_from([0, 1, 10, 10**5, True, 2.5, "10", math.nan]),
    st.lists(st.one_of(st.integers(-10, 200), st.floats(allow_nan=True)), max_size=8),
    st.just(list(range(0, 101, 10))), st.just([0, 0, 1]), st.just([5, 1]),
)
RANGES = st.one_of(
    st.none(), st.just((0, 100)), st.just((100, 0)), st.just((0, math.inf)), st.just((math.nan, 1)),
    st.just((0, 0)), st.just((-1e300, 1e300)), st.tuples(st.integers(-10, 10), st.integers(-10, 200)),
    st.just("0-100"), st.just((0, 1, 2)),
)
CATEGORIES = st.one_of(st.none(), st.just(["a", "b", "c"]), st.just([]), st.just(["a", "a"]), st.just("abc"),
                       st.just([None, "a"]), st.just(["x", "y"]))
DOMAINS = st.one_of(VALID_DOMAINS, VALID_DOMAINS, st.tuples(BINS, RANGES, CATEGORIES))
COLUMNS = st.sampled_from(["v", "v", "v", "c", "s", "g", "missing", ["v", "g"], ["v", "v"], [], None, 3])


def run_release(call: Callable[[], Any], epsilon: Any, method: str) -> None:
    """Run one fuzzed call in a fresh budget and check the charge contract."""
    CASES[method] += 1
    with pdp.budget(TOTAL) as b:
        try:
            result = call()
        except pdp.PandasDPError:
            assert b.spent_exact == 0, f"{method}: an error was raised after charging {b.spent}"
            assert len(b.ledger) == 0
            return
    assert result is not None
    ledger = b.ledger
    assert len(ledger) == 1 and ledger.loc[0, "status"] == "ok", ledger
    assert b.spent_exact == to_fraction(epsilon), (method, b.spent_exact, epsilon)
    CASES[method + " (released)"] += 1


@FUZZ
@given(df=frames(), columns=COLUMNS, domain=DOMAINS, epsilon=EPSILONS,
       method=st.sampled_from(["identity", "hierarchical", "ahp", "dpcube", "auto", "identity", "bogus", None]),
       nonnegative=st.sampled_from([False, True, False, 1, "yes"]),
       knobs=st.sampled_from([{}, {}, {}, {"branching": 2}, {"eta": -1}, {"epsilon_split": 1.5}, {"bogus": 1},
                              {"threshold": math.nan}, {"clustering": "optimal"}]),
       other=st.sampled_from([None, None, None, "Other", "a", "x", 5, {"c": "O"}, {"v": "O"}, {"nope": "O"}, ["O"],
                              math.nan]))
def test_fuzz_histogram(df, columns, domain, epsilon, method, nonnegative, knobs, other):
    bins, rng_, categories = domain
    run_release(lambda: df.dp.histogram(columns, bins=bins, range=rng_, categories=categories, other=other,
                                        epsilon=epsilon, method=method, nonnegative=nonnegative,
                                        rng=np.random.default_rng(0), **knobs), epsilon, "histogram")


@FUZZ
@given(df=frames(), domain=DOMAINS, epsilon=EPSILONS,
       branching=st.sampled_from(["auto", 2, 3, 16, "auto", 1, 0, -4, 2.0, True, "2", 2**40]),
       budget_split=st.sampled_from(["uniform", "geometric", "optimal", "uniform", "bogus", None]),
       flags=st.tuples(st.booleans(), st.booleans(), st.sampled_from([False, True, None])))
def test_fuzz_hierarchical_histogram(df, domain, epsilon, branching, budget_split, flags):
    bins, rng_, categories = domain
    include_root, consistent, nonnegative = flags
    run_release(lambda: df.dp.hierarchical_histogram("v", bins=bins, range=rng_, categories=categories,
                                                     epsilon=epsilon,
                                                     branching=branching, budget_split=budget_split,
                                                     include_root=include_root, consistent=consistent,
                                                     nonnegative=nonnegative, rng=np.random.default_rng(0)),
                epsilon, "hierarchical_histogram")


@FUZZ
@given(df=frames(), domain=DOMAINS, epsilon=EPSILONS,
       ranges=st.sampled_from([(0, 50), [(0, 10), (10, 100)], (0, 100), (50, 0), (0, 55), [], [(0,)], "x",
                               (math.nan, 10), [(0, 100)] * 3, (-10, 10)]),
       method=st.sampled_from(["auto", "identity", "hierarchical", "ahp", "auto", "bogus"]))
def test_fuzz_range_query(df, domain, epsilon, ranges, method):
    bins, rng_, _ = domain
    run_release(lambda: df.dp.range_query("v", ranges, bins=bins, range=rng_, epsilon=epsilon, method=method,
                                          rng=np.random.default_rng(0)), epsilon, "range_query")


@FUZZ
@given(df=frames(), epsilon=EPSILONS, group=st.sampled_from(["g", "v", "s", "c", "missing", ["g", "s"]]),
       groups=st.sampled_from([None, [0, 1, 2, 3, 4, 5, 6], [1, 1, 2], [], [None, 1], pd.DataFrame({"g": [1]}),
                               np.arange(100), "abc"]))
def test_fuzz_unattributed_histogram(df, epsilon, group, groups):
    run_release(lambda: df.dp.unattributed_histogram(group, epsilon=epsilon, groups=groups,
                                                     rng=np.random.default_rng(0)), epsilon, "unattributed_histogram")


@st.composite
def entity_tables(draw: Any) -> tuple[pd.DataFrame, pd.DataFrame | None, pd.DataFrame | None]:
    """Persons, Groups and Hierarchy tables with optional breakage (duplicates, nulls, broken trees)."""
    n_groups = draw(st.integers(0, 6))
    states = draw(st.lists(st.sampled_from(["A", "B"]), min_size=n_groups, max_size=n_groups))
    counties = [f"{s}{i % 2}" for i, s in enumerate(states)]
    groups = pd.DataFrame({"hh": list(range(n_groups)), "state": states, "county": counties})
    sizes = draw(st.lists(st.integers(0, 5), min_size=n_groups, max_size=n_groups))
    hh = np.repeat(np.arange(n_groups), sizes) if n_groups else np.zeros(0, dtype=np.int64)
    persons = pd.DataFrame({"pid": np.arange(hh.size), "hh": hh,
                            "state": groups["state"].to_numpy()[hh] if hh.size else [],
                            "county": groups["county"].to_numpy()[hh] if hh.size else []})
    breakage = draw(st.sampled_from(["none", "dup group", "null group", "person in unknown group",
                                     "county in two states", "null state", "wrong region", "float ids"]))
    if breakage == "dup group" and n_groups:
        groups = pd.concat([groups, groups.iloc[:1]], ignore_index=True)
    elif breakage == "null group" and len(persons):
        persons.loc[0, "hh"] = None
    elif breakage == "person in unknown group":
        persons = pd.concat([persons, pd.DataFrame({"pid": [999], "hh": [999], "state": ["A"], "county": ["A0"]})],
                            ignore_index=True)
    elif breakage == "county in two states" and n_groups >= 2:
        groups.loc[1, "county"] = groups.loc[0, "county"]
        groups.loc[1, "state"] = "B" if groups.loc[0, "state"] == "A" else "A"
    elif breakage == "null state" and n_groups:
        groups.loc[0, "state"] = None
    elif breakage == "wrong region" and len(persons):
        persons.loc[0, "county"] = "Z9"
    elif breakage == "float ids":
        persons["hh"] = persons["hh"].astype(float) + 0.5
    hierarchy = pd.DataFrame({"state": ["A", "A", "B", "B"], "county": ["A0", "A1", "B0", "B1"]})
    if draw(st.booleans()):
        hierarchy = pd.DataFrame({"state": ["A", "B"], "county": ["A0", "A0"]})  # county with two parents
    use_groups = draw(st.booleans())
    return persons, (groups if use_groups else None), (None if use_groups else hierarchy)


@settings(FUZZ, max_examples=250 if SLOW_FULL else 40)
@given(tables=entity_tables(), epsilon=EPSILONS,
       location=st.sampled_from([["state", "county"], "county", ["county", "state"], [], "missing"]),
       max_size=st.sampled_from([None, 1, 5, 0, -1, 2.5, True, 10**4]),
       method=st.sampled_from(["hc", "hg", "naive", "bogus"]), merge=st.sampled_from(["weighted", "average", 1]))
def test_fuzz_count_of_counts(tables, epsilon, location, max_size, method, merge):
    persons, groups, hierarchy = tables
    if hierarchy is not None and location == ["state", "county"]:
        location = "county"  # with hierarchy= the leaf column is given
    run_release(lambda: persons.dp.count_of_counts("hh", location, epsilon=epsilon, groups=groups,
                                                   hierarchy=hierarchy, max_size=max_size, method=method,
                                                   merge=merge, rng=np.random.default_rng(0), progress=False),
                epsilon, "count_of_counts")


@FUZZ
@given(df=frames(), domain=DOMAINS, epsilon=EPSILONS)
def test_fuzz_series_accessor(df, domain, epsilon):
    bins, rng_, categories = domain
    run_release(lambda: df["v"].dp.histogram(bins=bins, range=rng_, categories=categories, epsilon=epsilon,
                                             rng=np.random.default_rng(0)), epsilon, "Series.histogram")


@FUZZ
@given(epsilon=EPSILONS, name=st.sampled_from([None, "n", 3, ""]))
def test_fuzz_budget_constructor(epsilon, name):
    CASES["budget"] += 1
    try:
        b = pdp.budget(epsilon, name=name)
    except pdp.ParameterError:
        return
    assert b.remaining_exact > 0


# ------------------------------------------------ no release fails after its charge (issue 12 item 7)
#
# Extreme but valid public inputs: every release refuses them before the charge (nothing in the
# ledger) or releases finite, well-shaped results with one "ok" ledger row, never a "failed" one.

EXTREME_LOSSES = [pytest.param({"epsilon": 2**-40}, id="epsilon=2**-40"),
                  pytest.param({"epsilon": 1e300}, id="epsilon=1e300"),
                  pytest.param({"rho": 2**-80}, id="rho=2**-80"), pytest.param({"rho": 1e300}, id="rho=1e300")]
EXTREME_FRAMES = {
    "rows": pd.DataFrame({"x": np.arange(60) % 10, "y": np.arange(60) % 4, "g": np.arange(60) % 7,
                          "st": ["A", "B", "A"] * 20, "co": ["A0", "B0", "A1"] * 20}),
    "no rows": pd.DataFrame({"x": pd.Series([], dtype=float), "y": pd.Series([], dtype=float),
                             "g": pd.Series([], dtype=np.int64), "st": pd.Series([], dtype=object),
                             "co": pd.Series([], dtype=object)}),
}
GROUPS_TABLE = pd.DataFrame({"g": range(7), "st": ["A", "B", "A"] * 2 + ["A"], "co": ["A0", "B0", "A1"] * 2 + ["A0"]})
HIERARCHY_TABLE = pd.DataFrame({"st": ["A", "A", "B"], "co": ["A0", "A1", "B0"]})


def released_or_refused(call: Callable[[], Any], loss: dict[str, Any]) -> Any:
    """The result, or None when the call was refused before the charge; never a failure after it."""
    (measure, amount), = loss.items()
    with pdp.budget(**{measure: max(1.0, amount)}) as b:
        try:
            result = call()
        except pdp.PandasDPError:
            assert b.spent_exact == 0 and len(b.ledger) == 0, b.ledger
            return None
    assert list(b.ledger["status"]) == ["ok"], b.ledger
    return result


#: Methods that release 2-D grids only (Qardaji et al. 2013's uniform and adaptive grids): a 1-D call is refused.
TWO_D_ONLY = {"ugrid", "agrid"}


def _supports(method: str, loss: dict[str, Any], ndim: int = 1) -> bool:
    from pandas_dp.releases.methods import METHODS

    return ("pure" if "epsilon" in loss else "zcdp") in METHODS[method].measures \
        and (ndim == 2 or method not in TWO_D_ONLY)


def assert_finite_release(result: Any, cells: int) -> None:
    """Finite estimates, variances and intervals, one per cell."""
    counts, variance = result.counts.to_numpy(dtype=np.float64), result.variance.to_numpy(dtype=np.float64)
    assert counts.shape == variance.shape == (cells,)
    ci = result.confidence_interval().to_numpy(dtype=np.float64)
    assert np.isfinite(counts).all() and np.isfinite(variance).all() and np.isfinite(ci).all()


def assert_consistent_tree(result: Any) -> None:
    """Every parent equals the sum of its children (to float precision relative to the values)."""
    rel = result.detail
    for k in range(len(rel.estimates) - 1):
        children = rel.layout.aggregate(rel.estimates[k], k)
        scale = 1.0 + np.abs(rel.estimates[k + 1]).max()
        np.testing.assert_allclose(children, rel.estimates[k + 1], rtol=0, atol=1e-9 * scale)


def assert_consistent_count_of_counts(result: Any) -> None:
    """Integral, non-negative, and every region's number of groups is the sum of its children's."""
    frame = result.to_frame()
    groups = frame["groups"].to_numpy()
    assert (groups >= 0).all() and np.array_equal(groups, np.round(groups))
    for lvl in range(1, len(result.levels)):
        child = result.totals(result.levels[lvl]).to_numpy(dtype=np.int64)
        parent = result.totals(result.levels[lvl - 1]).to_numpy(dtype=np.int64)
        np.testing.assert_array_equal(np.bincount(result.parents[lvl], weights=child, minlength=parent.size),
                                      parent)


DOMAINS_1D = [pytest.param({"bins": 1, "range": (0, 10)}, id="1 cell"),
              pytest.param({"bins": 10, "range": (0, 10)}, id="10 cells"),
              pytest.param({"categories": [3]}, id="1 category", marks=pytest.mark.slow)]  # as "1 cell"


@pytest.mark.parametrize("frame", sorted(EXTREME_FRAMES))
@pytest.mark.parametrize("loss", EXTREME_LOSSES)
@pytest.mark.parametrize("domain", DOMAINS_1D)
@pytest.mark.parametrize("method", sorted(__import__("pandas_dp.releases.registry", fromlist=["x"]).histogram_methods()))
def test_no_histogram_method_fails_after_its_charge(method, domain, loss, frame):
    df = EXTREME_FRAMES[frame]
    result = released_or_refused(lambda: df.dp.histogram("x", method=method, rng=np.random.default_rng(0),
                                                         **domain, **loss), loss)
    assert (result is None) == (not _supports(method, loss))
    if result is not None:
        assert_finite_release(result, 10 if domain.get("bins") == 10 else 1)
    two_d = released_or_refused(lambda: df.dp.histogram(["x", "y"], bins=[10, 4], range=[(0, 10), (0, 4)],
                                                        method=method, rng=np.random.default_rng(0), **loss), loss)
    assert (two_d is None) == (not _supports(method, loss, 2))
    if two_d is not None:
        assert_finite_release(two_d, 40)


@pytest.mark.parametrize("loss", EXTREME_LOSSES)
@pytest.mark.parametrize("knobs", [{}, {"budget_split": "geometric"}, {"budget_split": "optimal"},
                                   {"include_root": True}, {"integer": True}, {"nonnegative": True},
                                   {"consistent": False, "nonnegative": True}, {"branching": 2**26}])
def test_no_tree_fails_after_its_charge(knobs, loss):
    # A huge noise made the non-negative projection inconsistent (leaves summing to 4.8e12 under a
    # root of 0) and integer=True raised after the charge.
    for frame in EXTREME_FRAMES.values():
        result = released_or_refused(lambda: frame.dp.hierarchical_histogram(
            "x", bins=16, range=(0, 16), rng=np.random.default_rng(0), **knobs, **loss), loss)
        assert result is not None
        assert_finite_release(result, 16)
        if knobs.get("consistent", True):
            assert_consistent_tree(result)
        assert np.isfinite(result.range_query(0, 16).std_error) and np.isfinite(result.average_range_variance())


@pytest.mark.parametrize("loss", EXTREME_LOSSES)
def test_no_range_query_or_unattributed_histogram_fails_after_its_charge(loss):
    for frame in EXTREME_FRAMES.values():
        answers = released_or_refused(lambda: frame.dp.range_query("x", [(0, 5), (0, 10)], bins=10, range=(0, 10),
                                                                   rng=np.random.default_rng(0), **loss), loss)
        assert answers is not None and np.isfinite(answers[["estimate", "std_error", "lower", "upper"]]).all().all()
        for groups in (GROUPS_TABLE["g"], GROUPS_TABLE["g"].iloc[:1]):
            u = released_or_refused(lambda: frame.dp.unattributed_histogram(
                "g", groups=groups, rng=np.random.default_rng(0), **loss), loss)
            assert u is not None and len(u.counts) == len(groups)
            assert np.isfinite(u.counts).all() and np.isfinite(u.variance).all()


def _count_of_counts_cases(slow: bool) -> list[Any]:
    cases = []
    for loss in EXTREME_LOSSES:
        tiny = next(iter(loss.values[0].values())) < 1
        for tables in ("groups", "one group", "hierarchy"):
            for method in ("hc", "hg", "naive"):
                for k in (None, 1, 2**20):
                    # hg with private group totals and a tiny loss runs the estimator on the capped
                    # number of groups (2**26 per level): tens of seconds; hc and naive draw noise for
                    # every size up to K, which a tiny loss estimates at the cap 2**20 (1-2 s each).
                    # Those run with --runslow; the default keeps one K = 2**20 case.
                    heavy = (tiny and tables == "hierarchy" and method == "hg") \
                        or (method != "hg" and (k == 2**20 or (tiny and k is None)))
                    if heavy and not tiny and tables == "groups" and method == "hc" and "epsilon" in loss.values[0]:
                        heavy = False
                    # K = 1 takes the same code paths as K = 2**20 with smaller arrays: a --runslow case,
                    # as is "one group" except with the default K (the public table's size is the point).
                    heavy = heavy or k == 1 or (tables == "one group" and k is not None)
                    if heavy != slow or (slow and k == 1 and not SLOW_FULL):  # K = 1: full depth only
                        continue
                    cases.append(pytest.param(loss.values[0], tables, method, k,
                                              id=f"{loss.id}-{tables}-{method}-K={k}",
                                              marks=[pytest.mark.slow] if heavy else []))
    return cases


def _run_count_of_counts(loss: dict[str, Any], tables: str, method: str, k: Any) -> None:
    table = {"groups": {"groups": GROUPS_TABLE}, "one group": {"groups": GROUPS_TABLE.iloc[:1]},
             "hierarchy": {"hierarchy": HIERARCHY_TABLE}}[tables]
    location = "co" if tables == "hierarchy" else ["st", "co"]
    for frame in EXTREME_FRAMES.values():
        result = released_or_refused(lambda: frame.dp.count_of_counts(
            "g", location, method=method, max_size=k, rng=np.random.default_rng(0), progress=False, **table,
            **loss), loss)
        assert result is not None
        assert_consistent_count_of_counts(result)
        if tables != "hierarchy":  # public Groups: the totals are the table's
            assert int(result.totals("national").iloc[0]) == len(table["groups"])


@pytest.mark.parametrize("loss, tables, method, k", _count_of_counts_cases(slow=False))
def test_no_count_of_counts_fails_after_its_charge(loss, tables, method, k):
    # Without a Groups table, epsilon 1e-9 made the noisy group totals ~1e12: ValueError after the
    # charge (hc, naive) or a 5 TiB allocation (hg). They are clamped to a public cap now.
    _run_count_of_counts(loss, tables, method, k)


@pytest.mark.parametrize("loss, tables, method, k", _count_of_counts_cases(slow=True))
def test_no_count_of_counts_fails_after_its_charge_heavy(loss, tables, method, k):
    _run_count_of_counts(loss, tables, method, k)


#: Releases by geography and under a privacy unit (main's by=, hierarchy=, by_categories=, level_weights=,
#: privacy_unit=, max_rows=, max_cells=, max_rows_per_cell=), each on frame ``f`` with loss ``loss``.
UNIT_AND_GEOGRAPHY_CALLS = {
    "by hierarchy": lambda f, loss: f.dp.histogram(
        "x", bins=10, range=(0, 10), by=["st", "co"], hierarchy=HIERARCHY_TABLE, level_weights=[0, 1, 2],
        rng=np.random.default_rng(0), **loss),
    "by categories, integer": lambda f, loss: f.dp.histogram(
        "x", bins=10, range=(0, 10), by="st", by_categories=["A", "B"], integer=True, rng=np.random.default_rng(0),
        **loss),
    "max_rows": lambda f, loss: f.dp.histogram("x", bins=10, range=(0, 10), privacy_unit="u", max_rows=3,
                                               rng=np.random.default_rng(0), **loss),
    "max_rows auto": lambda f, loss: f.dp.histogram("x", bins=10, range=(0, 10), privacy_unit="u", max_rows="auto",
                                                    rng=np.random.default_rng(0), **loss),
    "max_cells, auto method": lambda f, loss: f.dp.histogram(
        ["x", "y"], bins=[10, 4], range=[(0, 10), (0, 4)], method="auto", privacy_unit="u", max_cells=2,
        max_rows_per_cell=3, rng=np.random.default_rng(0), **loss),
    "tree, max_rows 2**20": lambda f, loss: f.dp.hierarchical_histogram(
        "x", bins=16, range=(0, 16), privacy_unit="u", max_rows=2**20, integer=True, rng=np.random.default_rng(0),
        **loss),
    "unattributed, groups, max_rows": lambda f, loss: f.dp.unattributed_histogram(
        "g", groups=list(range(7)), privacy_unit="u", max_rows=3, rng=np.random.default_rng(0), **loss),
    "count_of_counts, group unit": lambda f, loss: f.dp.count_of_counts(
        "g", "co", hierarchy=HIERARCHY_TABLE, privacy_unit="group", max_size=4, rng=np.random.default_rng(0),
        progress=False, **loss),
}


@pytest.mark.parametrize("loss", EXTREME_LOSSES)
@pytest.mark.parametrize("call", sorted(UNIT_AND_GEOGRAPHY_CALLS))
def test_no_release_by_geography_or_privacy_unit_fails_after_its_charge(call, loss):
    # (Without groups=, an unattributed histogram at a tiny loss is refused before its charge: its noise on the
    # number of groups would release up to 2**26 positions; tests/test_extreme_losses.py checks it.)
    for frame in EXTREME_FRAMES.values():
        frame = frame.assign(u=np.arange(len(frame)) % 5)
        result = released_or_refused(lambda: UNIT_AND_GEOGRAPHY_CALLS[call](frame, loss), loss)
        # Refused before the charge (nothing in the ledger) only at a tiny loss: max_rows="auto" spends a share
        # of it, and max_rows=2**20 divides it by 2**20 (group privacy), below the smallest loss accepted.
        assert result is not None or next(iter(loss.values())) < 1
        if result is not None:
            numbers = result.to_frame().select_dtypes("number").to_numpy(dtype=np.float64)
            assert np.isfinite(numbers).all()  # (no rows and no groups: an empty count-of-counts table)


#: Methods released on the largest domain: every one with PANDAS_DP_SLOW_DEPTH=full; at CI depth the flat and
#: the tree release (5-25 s and up to ~9 GB a release for the data-dependent ones: too much for CI's machine).
LARGEST_DOMAIN_METHODS = sorted(__import__("pandas_dp.releases.registry", fromlist=["x"]).histogram_methods()) \
    if SLOW_FULL else ["identity"]  # the tree's 2**26-cell run (37 s) at full depth, with every other method


@pytest.mark.slow
@pytest.mark.parametrize("method", LARGEST_DOMAIN_METHODS)
def test_a_domain_of_2_to_the_26_cells_releases_finite_numbers(method):
    """The largest domain accepted (2**26 cells) at extreme losses, hence --runslow only."""
    frame = pd.DataFrame({"x": np.arange(100) / 100.0})
    for loss in ({"epsilon": 1.0}, {"epsilon": 2**-40}, {"epsilon": 1e300}):
        result = released_or_refused(lambda: frame.dp.histogram("x", bins=2**26, range=(0, 1), method=method,
                                                                rng=np.random.default_rng(0), **loss), loss)
        assert result is not None
        counts = result.counts.to_numpy()
        assert counts.size == 2**26 and np.isfinite(counts).all() and np.isfinite(result.variance.to_numpy()).all()
        del result, counts


def test_outside_a_budget_nothing_is_released():
    df = pd.DataFrame({"v": [1, 2]})
    with pytest.raises(pdp.NoActiveBudgetError, match="with pandas_dp.budget"):
        df.dp.histogram("v", bins=[0, 1, 2, 3], epsilon=1.0)


def test_report_case_counts(capsys):
    """Print how many fuzz cases ran (when the fuzz tests ran in this session)."""
    with capsys.disabled():
        if CASES:
            print("\nfuzz cases:", dict(sorted(CASES.items())), "total", sum(v for k, v in CASES.items()
                                                                             if "released" not in k))
