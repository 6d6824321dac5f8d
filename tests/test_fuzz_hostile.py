"""Hostile values for every argument of every public release and result method (issue 12 item 7).

The entries, their arguments and every histogram method's knobs are read from
the release registry (:data:`pandas_dp.releases.registry.ENTRIES`,
:func:`~pandas_dp.releases.registry.histogram_methods`), so a new argument or
knob must be given a kind of hostile value here (``test_every_argument_is_fuzzed``).

Contract of every call: it releases, with exactly one ``ok`` ledger row charging
exactly the loss asked for, or it raises a documented
:class:`pandas_dp.PandasDPError` subclass with nothing charged and no ledger row.
Nothing else escapes: not the exception a hostile object raises from its own
``__float__``/``__eq__``/``__hash__``/``__repr__``/``__iter__``, not a numpy
warning (``filterwarnings = error``). Result methods (``range_query``,
``confidence_interval``, ``sample``, ``plot``...) answer or raise
``PandasDPError`` (``ParameterError`` for their own arguments); the ``**kwargs``
that ``plot`` hands to matplotlib are matplotlib's to check and are not fuzzed.

The default run keeps a few hundred examples (seconds); ``--runslow`` runs many more.
"""

from __future__ import annotations

import functools
import inspect
import math
from decimal import Decimal
from fractions import Fraction
from typing import Any, Callable

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import pandas_dp as pdp
from pandas_dp.privacy.loss import loss_from
from pandas_dp.releases.registry import ENTRIES, histogram_methods

from _slow import FULL as SLOW_FULL

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

TOTAL = 100  # budget of every example (epsilon, or rho for a zCDP example)


def _fuzz(examples: int) -> settings:
    return settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])


SPEEDS = [pytest.param(60, id="fast"), pytest.param(600 if SLOW_FULL else 300, id="many", marks=pytest.mark.slow)]


# ------------------------------------------------------------------------------------- hostile values

class Boom(Exception):
    """Raised by the hostile objects below; it must never reach the caller."""


def _boom(*args: Any, **kwargs: Any) -> Any:
    raise Boom("hostile")


class Hostile:
    """Every conversion, comparison, iteration and display raises."""

    __float__ = __int__ = __index__ = __complex__ = __bool__ = __len__ = __iter__ = _boom
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __hash__ = __repr__ = __str__ = _boom  # type: ignore


class HostileFloat(float):
    """A real number whose display raises."""

    __repr__ = __str__ = __format__ = _boom  # type: ignore[assignment]


class HostileStr(str):
    """A string whose comparisons, hash and display raise."""

    __eq__ = __ne__ = __hash__ = __repr__ = __str__ = _boom  # type: ignore[assignment]


class HostileIterable:
    """Looks like a sequence; iterating raises."""

    __iter__ = __len__ = _boom  # type: ignore[assignment]


class Unhashable:
    """A number without a hash."""

    __hash__ = None  # type: ignore[assignment]

    def __float__(self) -> float:
        return 1.0


def _generator() -> Any:
    return (x for x in [0, 5, 10])


EVERYWHERE = [Hostile(), HostileFloat(0.5), HostileStr("v"), HostileIterable(), Unhashable(), None, True,
              np.bool_(False), 0, -1, 2**63, 10**400, math.nan, math.inf, 1j, "", "x", b"v", [], [[]], {}, set(),
              Decimal("sNaN"), Decimal("NaN"), np.timedelta64(1), np.datetime64("2020-01-01"), pd.NA, pd.NaT,
              object(), np.array([[1, 2]]), pd.DataFrame({"a": [1]}), type, Ellipsis]
LONG_DOUBLES = [np.longdouble("1e400"), np.longdouble("nan"), np.longdouble("0.5")] \
    if np.finfo(np.longdouble).max > np.finfo(np.float64).max else []

AMOUNTS = [Decimal("sNaN"), Decimal("NaN"), Decimal("-Infinity"), Decimal("1e-999999"), Decimal("1e999999"),
           10**400, -(10**400), Fraction(1, 10**400), np.timedelta64(1), np.timedelta64(1, "s"),
           np.datetime64("2020-01-01"), pd.Timedelta(1), 1j, complex(1, 0), "1", "0.5", b"1", True, np.bool_(True),
           None, [1], [0.5], (0.5,), {"epsilon": 1}, Hostile(), HostileFloat(0.5), pd.NA, math.nan, math.inf, 0, -1,
           5e-324, 2**-40, 1e-300, 1e300, np.float32(np.nan), np.float16(np.inf), np.int8(-1), 0.5, Fraction(1, 3),
           np.float64(0.25), *LONG_DOUBLES]
LABELS = [["v"], [["v"]], {"v": 1}, {"v"}, ("v", ""), ("a", "x"), None, 0, 3, np.timedelta64(1), Hostile(),
          HostileFloat(0.5), HostileStr("v"), [], ["v", "v"], "missing", b"v", pd.Index(["v"]), np.array(["v"]),
          math.nan, ["v", Hostile()], ["v", ["w"]], "v", ["v", "w"], "s", "g"]
DOMAINS = ["10", "abc", [[0, 1], [2, 3]], 10**400, 2**63, -1, 0, 1, 2**26 + 1, math.nan, math.inf, [], [0], [0, math.nan],
           [0, math.inf], [0, 10**400], [0, 1j], [0, "a"], [Decimal("sNaN"), 1], range(0), range(11),
           np.array([[0, 1], [1, 2]]), {0: 1}, {0, 1}, [True, False], [Hostile(), 1], [1, HostileFloat(2)],
           HostileIterable(), Hostile(), (0,), (0, 1, 2), (1, 0), (0, 0), (-1e308, 1e308), (0, 1e-320), [(0, 1)] * 3,
           pd.DataFrame({"a": [1]}), [{1}], [[1], [2]], [(1, 2), (3,)], [np.timedelta64(1)], [Unhashable()],
           [None, "a"], ["a", "a"], (np.datetime64("2020"), np.datetime64("2021")), (0, 2**64), [0, 5, 10],
           (0, 10), ["a", "b"], [(0, 5)], [(0, 5), (5, 10)], [(0, 3)], (0, 5), [(math.nan, 1)], [[0, 1, 2]],
           [(0, 10**400)], "dtype", *LONG_DOUBLES, *[[v] for v in LONG_DOUBLES]]
FLAGS = [None, 1, 0, "yes", "True", np.bool_(True), Hostile(), [True], math.nan, pd.NA, np.array([True]), True, False]
RNGS = [0, 42, np.int64(3), np.random.RandomState(0), np.random.default_rng, "seed", Hostile(), [1],
        np.random.PCG64(0), True, 1.5, None, np.random.SeedSequence(0)]
CHOICES = ["bogus", None, 1, Hostile(), HostileStr("identity"), HostileStr("hc"), ["identity"], b"identity", "",
           "auto", "identity", "hc", "hg", "naive", "uniform", "geometric", "optimal", "weighted", "average",
           "greedy", "least_squares", "uniform", "ranges", "bins", "empirical"]
NUMBERS = [0, 1, 2, 3, 16, -1, 0.5, 1.5, 2.5, 2**20, 2**20 + 1, 2**26, 2**26 + 1, 2**40, 2**63, 2**64, 10**30,
           np.uint64(2**64 - 1), np.int64(4), 1e-300, 1e300, "auto", "2", 1.0, Fraction(1, 2), Decimal("0.5")]


def _table(columns: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame(columns)


GROUPS = pd.DataFrame({"g": range(7), "st": ["A", "B"] * 3 + ["A"], "co": ["A0", "B0"] * 3 + ["A0"]})
TABLES = [
    [[0, "A", "A0"]], {"g": [0]}, GROUPS["g"], "groups.csv", GROUPS.to_numpy(), Hostile(), GROUPS.iloc[:0],
    GROUPS.iloc[:1], GROUPS[["st", "co"]], GROUPS[["st", "co"]].drop_duplicates(),
    pd.DataFrame([[0, "A", "A0", "x"]], columns=["g", "st", "co", "co"]),
    pd.DataFrame([[0, "A", "A0", "x"]], columns=["g", "st", "co", "g"]),
    pd.DataFrame([[0, "A", "A0"]], columns=pd.MultiIndex.from_tuples([("g", ""), ("st", ""), ("co", "")])),
    _table({"g": [[0], [1]], "st": ["A", "B"], "co": ["A0", "B0"]}),
    _table({"g": [0, 1], "st": [["A"], ["B"]], "co": [{"A0"}, {"B0"}]}),
    _table({"g": [0, 1], "st": [{"a": 1}, "B"], "co": ["A0", "B0"]}),
    _table({"g": [0, "1"], "st": ["A", 1], "co": ["A0", 2.5]}),
    _table({"g": [0, np.nan], "st": ["A", None], "co": ["A0", "B0"]}),
    _table({"g": [0, 1], "st": ["A", Hostile()], "co": ["A0", "B0"]}),
    _table({"g": [0, 1], "st": ["A", HostileFloat(1)], "co": ["A0", "B0"]}),
    _table({"g": [(0, 1), (1, 2)], "st": ["A", "B"], "co": ["A0", "B0"]}),
    _table({"g": [2**64, 0], "st": ["A", "B"], "co": ["A0", "B0"]}),
    _table({"g": [Decimal("sNaN"), 0], "st": ["A", "B"], "co": ["A0", "B0"]}),
    _table({"g": [0, 1], "st": [np.timedelta64(1), "B"], "co": ["A0", "B0"]}),
    _table({"g": [0, 1], "st": ["A", "B"], "co": ["A0", "A0"]}),
    _table({"st": ["A", "B"], "co": ["A0", "A0"]}),
    GROUPS.astype("category"), pd.DataFrame({0: [0], 1: ["A"], 2: ["A0"]}), GROUPS,
]

WEIGHTS = [[1, 2], [1, 2, 3], [1], [0, 1], [-1, 2], [math.nan, 1], [math.inf, 1], [10**400, 1], [1, Hostile()],
           [1, HostileFloat(1)], [1, "2"], [1, 1j], {"national": 1, "co": 2}, {"national": 1}, {"x": 1, "y": 2},
           {"national": Hostile(), "co": 1}, {"national": HostileFloat(1), "co": 1}, (1, 2),
           np.array([1.0, 2.0]), pd.Series([1, 2]), [Fraction(1, 3), Decimal("0.5")], [Decimal("sNaN"), 1],
           [np.timedelta64(1), 1], [True, False], [[1], [2]]]
UNITS = ["g", "s", "v", "group", "person", "missing", ["g"], ("g", "s"), None]
WORKLOADS = [[("v", "w")], [("v",), ("w", "s")], [("v", "v")], [()], [], (), "v", ["v"], [["v", "w"]], [("missing",)],
             [("v", Hostile())], [(HostileStr("v"),)], [HostileIterable()], [("v",), None], {("v",): 1},
             [("v", "w", "s", "g", "st", "co")], [("v",)] * 3, np.array([["v", "w"]]), [Unhashable()]]

AGGS = [{"v": "mean"}, {"v": ["sum", "mean"]}, {"v": "median"}, {"v": ("quantile", 0.5)}, {"v": [("quantile", 0.5)]},
        {"missing": "sum"}, {"v": []}, {"v": ["sum", "sum"]}, {"v": Hostile()}, {"v": [HostileStr("sum")]},
        {"v": "mean", "w": "count"}, {}, ["v"], "v", {"v": ("sum", "mean")}, {"s": "mean"}, {"g": "sum"},
        {"v": HostileIterable()}, {"v": ["mean", Hostile()]}, {"v": ["Sum"]}, {"v": "std"}, {"v": b"sum"},
        {Unhashable.__name__: "sum"}, {"v": {"sum"}}, {"v": [["sum"]]}]
BOUNDS = [{"v": (0, 10)}, {"v": (10, 0)}, {"v": (0, math.inf)}, {"v": (0, 10**400)}, {"v": [Hostile(), 1]},
          {"v": "0,10"}, {"v": (0, 10), "w": (0, 4)}, {"w": (0, 4)}, {"v": (0, 10), "zz": (0, 1)}, {"v": (True, 2)},
          {"v": (0, 1e300)}, {"v": np.array([0, 10])}, {"v": (Decimal("sNaN"), 1)}, (0, 10), {"v": HostileIterable()},
          {"v": (0, HostileFloat(10))}, {"v": (0, 10, 20)}, {"v": (5, 5)}, {"v": (-1e15, 1e15)}, {"v": None},
          {"v": (0, 10), "w": (0, 4), "s": (0, 1)}, {"v": (np.datetime64("2020"), np.datetime64("2021"))},
          (10, 0), (0, math.inf), [Hostile(), 1], (np.datetime64("2020"), np.datetime64("2021")), (0, 10, 20),
          (pd.Timedelta(0), pd.Timedelta(hours=1)), (pd.Timestamp("2020-01-01"), 5), (1e300, -1e300)]
PROBABILITIES = [0.5, [0.1, 0.9], 0, 1, -0.1, 1.5, math.nan, [0.5, math.inf], [], [[0.5]], "0.5", True, Hostile(),
                 HostileFloat(0.5), [HostileFloat(0.5)], np.array([0.25, 0.75]), Decimal("0.5"), Fraction(1, 2),
                 HostileIterable(), None]
RESOLUTIONS = [1, 0.5, 1e-300, 1e300, 100, {"v": 0.5}, {"v": Hostile()}, {"zz": 1}, {"v": 0}, {"v": -1},
               {"v": 20}, {"v": math.nan}, 1e-12]

#: Hostile values for every kind of argument (each kind also gets the values every argument gets).
KINDS: dict[str, list[Any]] = {"amount": AMOUNTS, "label": LABELS, "domain": DOMAINS, "flag": FLAGS, "rng": RNGS,
                               "choice": CHOICES, "knob": NUMBERS + CHOICES + FLAGS, "table": TABLES,
                               "weights": WEIGHTS + NUMBERS, "unit": UNITS + LABELS,
                               "workload": WORKLOADS + LABELS, "aggs": AGGS + LABELS, "bounds": BOUNDS + DOMAINS,
                               "resolution": RESOLUTIONS + NUMBERS, "probabilities": PROBABILITIES + NUMBERS}
#: The kind of every argument of every entry and of every histogram method's knob.
ARGUMENT_KINDS = {
    "columns": "label", "column": "label", "group": "label", "location": "label",
    "bins": "domain", "range": "domain", "categories": "domain", "ranges": "domain",
    "epsilon": "amount", "rho": "amount", "rng": "rng", "nonnegative": "flag", "method": "choice",
    "groups": "table", "hierarchy": "table", "max_size": "knob", "merge": "choice", "progress": "flag",
    # privacy units (main: units.py) and tables by geography (main: releases/geography.py)
    "privacy_unit": "unit", "max_rows": "knob", "max_cells": "knob", "max_rows_per_cell": "knob",
    "by": "label", "by_categories": "domain", "level_weights": "weights", "integer": "flag",
    "report_dropped": "knob",
    # table sets (releases/marginals.py)
    "workload": "workload", "weights": "weights", "loss": "choice",
    # the other cell of label domains (domain/categories.py)
    "other": "label",
    # table sets by geography (releases/geography_marginals.py)
    "public_totals": "table",
    # approximate DP for key discovery (releases/discover.py)
    "delta": "amount",
    # statistics per cell (releases/aggregate.py)
    "aggs": "aggs", "bounds": "bounds", "resolution": "resolution",
    # ordered columns of table sets (releases/marginals.py: ordered_queries)
    "ordered": "domain",
    # quantiles (releases/quantiles.py)
    "q": "probabilities",
}


#: Every knob declared in a ParamTable of the registry (an entry's own knobs, every histogram method's).
KNOBS = {p.name for table in histogram_methods().values() for p in table} | {
    p.name for e in ENTRIES.values() if e.knobs is not None for p in e.knobs}


def _kind(name: str) -> str:
    return ARGUMENT_KINDS.get(name) or ("knob" if name in KNOBS else "unknown")


def _pick(values: list[Any]) -> st.SearchStrategy[Any]:
    """One of ``values`` (by position: ``sampled_from`` hashes its elements, and some of these cannot be)."""
    return st.integers(0, len(values) - 1).map(_Item(values))


class _Item:
    """``values[i]``; shown by Hypothesis as ``values[i]`` (a list holding a Hostile value cannot be shown)."""

    def __init__(self, values: list[Any]) -> None:
        self.values = values

    def __call__(self, i: int) -> Any:
        return self.values[i]

    def __repr__(self) -> str:
        return "values.__getitem__"


def _values(kind: str) -> st.SearchStrategy[Any]:
    fresh = st.builds(_generator)  # a generator is consumed once: a new one per example
    return st.one_of(_pick(KINDS[kind]), _pick(EVERYWHERE), fresh)


# ------------------------------------------------------------------------- the valid call of each entry

def _column_groups(base: pd.DataFrame) -> pd.DataFrame:
    """``base`` with every column twice, as ``(c, "x")`` and ``(c, "y")``: each plain label names a group."""
    both = pd.concat([base, base], axis=1)
    return both.set_axis(pd.MultiIndex.from_tuples([(c, "x") for c in base.columns] +
                                                   [(c, "y") for c in base.columns]), axis=1)


def _frames() -> dict[str, pd.DataFrame]:
    n = 40
    base = pd.DataFrame({"v": np.arange(n) % 10, "w": np.arange(n) % 4, "s": ["a", "b"] * (n // 2),
                         "g": np.arange(n) % 7, "st": ["A", "B"] * (n // 2), "co": ["A0", "B0"] * (n // 2)})
    dup = pd.concat([base, base[["v"]]], axis=1)
    multi = base.set_axis(pd.MultiIndex.from_tuples([(c, "") for c in base.columns]), axis=1)
    dup_public = pd.concat([base, base[["st", "co", "g", "s"]]], axis=1)  # by=, location, group, unit columns
    return {"plain": base, "duplicate columns": dup, "duplicate region and unit columns": dup_public,
            "MultiIndex columns": multi, "MultiIndex column groups": _column_groups(base), "no rows": base.iloc[:0],
            "int labels": base.set_axis(range(base.shape[1]), axis=1)}


FRAMES = _frames()

#: A valid call of every entry (keyword arguments of its accessor method).
BASE: dict[str, dict[str, Any]] = {
    "histogram": {"columns": "v", "bins": 10, "range": (0, 10), "epsilon": 0.5},
    "hierarchical_histogram": {"columns": "v", "bins": 10, "range": (0, 10), "epsilon": 0.5},
    "range_query": {"column": "v", "ranges": [(0, 5)], "bins": 10, "range": (0, 10), "epsilon": 0.5},
    "count_of_counts": {"group": "g", "location": ["st", "co"], "groups": GROUPS, "epsilon": 0.5,
                        "progress": False},
    "unattributed_histogram": {"group": "g", "epsilon": 0.5},
    "marginals": {"workload": [("v", "w"), ("w", "s")], "bins": {"v": [0, 5, 10]},
                  "categories": {"w": [0, 1, 2, 3], "s": ["a", "b"]}, "epsilon": 0.5},
    "aggregate": {"columns": "s", "aggs": {"v": ["count", "sum", "mean"], "w": "mean"}, "categories": ["a", "b"],
                  "bounds": {"v": (0, 10), "w": (0, 4)}, "epsilon": 0.5},
    "quantiles": {"column": "v", "q": [0.25, 0.5], "bounds": (0, 10), "epsilon": 0.5},
}


HIERARCHY = GROUPS[["st", "co"]].drop_duplicates()
#: More valid calls per entry, so that the arguments that only matter together (a privacy unit and its
#: bounds; by= with its hierarchy and level weights) are fuzzed one at a time from a call that releases.
VARIANTS: dict[str, list[dict[str, Any]]] = {
    "histogram": [{**BASE["histogram"], "by": ["st", "co"], "hierarchy": HIERARCHY, "level_weights": [1, 2, 3]},
                  {**BASE["histogram"], "by": "st", "by_categories": ["A", "B"], "integer": True},
                  {"columns": "s", "categories": ["a", "b"], "other": "Other", "epsilon": 0.5},
                  {**BASE["histogram"], "privacy_unit": "g", "max_rows": 3},
                  {**BASE["histogram"], "privacy_unit": "g", "max_rows": 3, "report_dropped": 0.1},
                  {**BASE["histogram"], "privacy_unit": "g", "max_cells": 2, "max_rows_per_cell": 3}],
    "hierarchical_histogram": [{**BASE["hierarchical_histogram"], "privacy_unit": "g", "max_rows": 3}],
    "range_query": [{**BASE["range_query"], "privacy_unit": "g", "max_cells": 2, "max_rows_per_cell": 3}],
    "unattributed_histogram": [{**BASE["unattributed_histogram"], "privacy_unit": "s", "max_rows": 30}],
    "count_of_counts": [{**BASE["count_of_counts"], "privacy_unit": "group", "max_size": 16}],
    "aggregate": [{**BASE["aggregate"], "privacy_unit": "g", "max_rows": 3},
                  {**BASE["aggregate"], "columns": [], "categories": None, "resolution": {"v": 0.5}}],
    "quantiles": [{**BASE["quantiles"], "privacy_unit": "g", "max_rows": 3}],
    "marginals": [{**BASE["marginals"], "privacy_unit": "g", "max_rows": 3},
                  {**BASE["marginals"], "weights": [1, 2], "loss": "max"},
                  {**BASE["marginals"], "integer": True},
                  {**BASE["marginals"], "by": ["st", "co"], "hierarchy": HIERARCHY, "level_weights": [1, 0, 2],
                   "public_totals": {"st": pd.Series({"A": 20, "B": 20})}}],
}


def _arguments(entry: str) -> list[str]:
    """Every named argument of an entry's release function (its column argument included)."""
    params = inspect.signature(ENTRIES[entry].function).parameters.values()
    return [p.name for p in params if p.name != "frame" and p.kind is not p.VAR_KEYWORD]


def check_release(call: Callable[[], Any], kwargs: dict[str, Any], measure: str = "epsilon") -> str:
    """Run ``call`` in a fresh budget and check the contract; return ``"released"`` or the error's class name."""
    with pdp.budget(**{measure: TOTAL}) as b:
        try:
            result = call()
        except pdp.PandasDPError as err:
            assert b.spent_exact == 0 and len(b.ledger) == 0, f"{type(err).__name__} after a charge: {b.ledger}"
            return type(err).__name__
    ledger = b.ledger
    assert result is not None
    assert len(ledger) == 1 and ledger.loc[0, "status"] == "ok", ledger
    asked = loss_from(epsilon=kwargs.get("epsilon"), rho=kwargs.get("rho")).charged_as(b.total.measure)
    assert b.spent_exact == asked.amount
    return "released"


def _call(frame: pd.DataFrame, entry: str, kwargs: dict[str, Any], series: bool = False) -> Callable[[], Any]:
    kwargs = {**kwargs, "rng": kwargs.get("rng", np.random.default_rng(0))} if "rng" not in kwargs else kwargs
    if series:
        column = ENTRIES[entry].column
        label = kwargs.pop(column)
        return lambda: getattr(frame[label].dp, entry)(**kwargs)
    return lambda: getattr(frame.dp, entry)(**kwargs)


def _hostile_kwargs(draw: Any, entry: str, names: list[str]) -> tuple[dict[str, Any], str]:
    kwargs = dict(draw(_pick([BASE[entry], *VARIANTS.get(entry, [])])))
    chosen = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
    for name in chosen:
        kwargs[name] = draw(_values(_kind(name)))
    measure = "epsilon"
    if "rho" in chosen:
        measure = "rho"
        if "epsilon" not in chosen:
            kwargs["epsilon"] = None
    return kwargs, measure


# ----------------------------------------------------------------------------------------------- tests

def test_every_argument_is_fuzzed():
    """Each entry has a valid base call, and every argument and knob has a kind of hostile value."""
    assert set(BASE) == set(ENTRIES)
    for name in ENTRIES:
        unknown = [a for a in _arguments(name) if _kind(a) == "unknown"]
        assert not unknown, f"{name}: give the arguments {unknown} a kind in ARGUMENT_KINDS"
        for base in (BASE[name], *VARIANTS.get(name, [])):
            with pdp.budget(epsilon=TOTAL) as b:
                getattr(FRAMES["plain"].dp, name)(**base, rng=np.random.default_rng(0))
            assert list(b.ledger["status"]) == ["ok"], (name, base)
    assert {"branching", "eta", "epsilon_split", "threshold", "max_size", "alpha", "ratio", "c"} <= KNOBS
    varied = {a for bases in VARIANTS.values() for base in bases for a in base}
    assert {"privacy_unit", "max_rows", "max_cells", "max_rows_per_cell", "by", "hierarchy", "by_categories",
            "level_weights"} <= varied


@pytest.mark.parametrize("examples", SPEEDS)
@pytest.mark.parametrize("entry", sorted(BASE))
def test_hostile_arguments_of_every_entry(entry, examples):
    names = _arguments(entry)

    @_fuzz(examples)
    @given(data=st.data(), frame=st.sampled_from(sorted(FRAMES)))
    def run(data, frame):
        kwargs, measure = _hostile_kwargs(data.draw, entry, names)
        check_release(_call(FRAMES[frame], entry, kwargs), kwargs, measure)

    run()


@pytest.mark.parametrize("examples", SPEEDS)
@pytest.mark.parametrize("method", sorted(histogram_methods()))
def test_hostile_knobs_of_every_histogram_method(method, examples):
    knobs = [p.name for p in histogram_methods()[method]]
    two_d = {"columns": ["v", "w"], "bins": [10, 4], "range": [(0, 10), (0, 4)], "epsilon": 0.5}

    @_fuzz(examples)
    @given(data=st.data())
    def run(data):
        kwargs = dict(two_d if data.draw(st.booleans()) else BASE["histogram"], method=method)
        for name in data.draw(st.lists(st.sampled_from(knobs), max_size=3, unique=True)) if knobs else []:
            kwargs[name] = data.draw(_values("knob"))
        if data.draw(st.booleans()):  # and one of the shared arguments
            name = data.draw(st.sampled_from(_arguments("histogram")))
            kwargs[name] = data.draw(_values(_kind(name)))
        check_release(_call(FRAMES["plain"], "histogram", kwargs), kwargs)

    run()


@pytest.mark.parametrize("examples", SPEEDS[:1] + [pytest.param(200, id="many", marks=pytest.mark.slow)])
def test_hostile_arguments_through_series_dp(examples):
    on_series = sorted(name for name, e in ENTRIES.items() if e.on_series)

    @_fuzz(examples)
    @given(data=st.data())
    def run(data):
        entry = data.draw(st.sampled_from(on_series))
        names = [n for n in _arguments(entry) if n != ENTRIES[entry].column]
        kwargs, measure = _hostile_kwargs(data.draw, entry, names)
        check_release(_call(FRAMES["plain"], entry, kwargs, series=True), kwargs, measure)

    run()


def test_a_cell_count_past_the_cap_is_a_domain_error():
    """3 columns of 2**22 bins: 2**66 cells (overflowing int64) is refused before anything is read."""
    frame = pd.DataFrame({"a": [0.5], "b": [0.5], "c": [0.5]})
    for method in histogram_methods():
        for bins in (2**22, [2**22] * 3, {"a": 2**22, "b": 2**22, "c": 2**22}):
            outcome = check_release(lambda: frame.dp.histogram(["a", "b", "c"], bins=bins, range=(0, 1), epsilon=1,
                                                               method=method), {"epsilon": 1})
            assert outcome == "DomainError", (method, bins, outcome)
        outcome = check_release(lambda: frame.dp.histogram("a", bins=2**26 + 1, range=(0, 1), epsilon=1,
                                                           method=method), {"epsilon": 1})
        assert outcome == "DomainError"
    outcome = check_release(lambda: frame.dp.histogram(["a", "b", "c"], categories=[list(range(2**9))] * 3,
                                                       epsilon=1), {"epsilon": 1})
    assert outcome == "DomainError"


# ------------------------------------------------------- every raw exception found, as a regression test

REGRESSIONS = [
    # (call on FRAMES["plain"], error raised now) -- what escaped before, in the comment
    (lambda f: f.dp.histogram(np.timedelta64(1), bins=10, range=(0, 10), epsilon=1), pdp.ParameterError),  # ValueError: hash
    (lambda f: f.dp.histogram(Hostile(), bins=10, range=(0, 10), epsilon=1), pdp.ParameterError),  # its __hash__
    (lambda f: f.dp.histogram(HostileFloat(0.5), bins=10, range=(0, 10), epsilon=1), pdp.ParameterError),  # __repr__
    (lambda f: f.dp.histogram("v", bins=HostileIterable(), epsilon=1), pdp.ParameterError),  # __iter__
    (lambda f: f.dp.histogram("v", bins=[0, 10**400], epsilon=1), pdp.ParameterError),  # OverflowError
    (lambda f: f.dp.histogram("v", bins=[0, Hostile()], epsilon=1), pdp.ParameterError),  # __float__
    (lambda f: f.dp.histogram("v", bins=10, range=(0, 10**400), epsilon=1), pdp.ParameterError),  # OverflowError
    (lambda f: f.dp.histogram("v", bins=10, range=(0, Hostile()), epsilon=1), pdp.ParameterError),  # __float__
    (lambda f: f.dp.histogram("v", bins=10, range=(-1e308, 1e308), epsilon=1), pdp.DomainError),  # overflow warning
    (lambda f: f.dp.hierarchical_histogram("v", bins=10, range=pd.DataFrame({"a": [1]}), epsilon=1),
     pdp.ParameterError),  # KeyError 0
    (lambda f: f.dp.histogram("v", bins=10, range=Hostile(), epsilon=1), pdp.ParameterError),  # __repr__
    (lambda f: f.dp.histogram("s", categories=[[1], [2]], epsilon=1), pdp.ParameterError),  # TypeError in the engine
    (lambda f: f.dp.histogram("s", categories=[{1}], epsilon=1), pdp.ParameterError),
    (lambda f: f.dp.histogram("s", categories=[Hostile()], epsilon=1), pdp.ParameterError),  # __eq__
    (lambda f: f.dp.histogram("s", categories=[Unhashable()], epsilon=1), pdp.ParameterError),
    (lambda f: f.dp.histogram("s", categories=[(1, 2), (3,)], epsilon=1), pdp.ParameterError),  # isna of a MultiIndex
    (lambda f: f.dp.histogram("s", categories=np.array([[1, 2]]), epsilon=1), pdp.ParameterError),
    (lambda f: f.dp.histogram("v", bins=10, range=(0, 10), method=Hostile(), epsilon=1), pdp.ParameterError),
    (lambda f: f.dp.histogram("v", bins=10, range=(0, 10), rng=Hostile(), epsilon=1), pdp.ParameterError),
    (lambda f: f.dp.histogram("v", bins=10, range=(0, 10), nonnegative=Hostile(), epsilon=1), pdp.ParameterError),
    (lambda f: f.dp.histogram("v", bins=10, range=(0, 10), method="ahp", eta=Hostile(), epsilon=1),
     pdp.ParameterError),
    (lambda f: f.dp.histogram("v", bins=10, range=(0, 10), method="auto", workload=HostileFloat(1), epsilon=1),
     pdp.ParameterError),
    (lambda f: f.dp.hierarchical_histogram("v", bins=10, range=(0, 10), branching=2**63, epsilon=1),
     pdp.ParameterError),  # TypeError in the tree layout *after the charge*
    (lambda f: f.dp.hierarchical_histogram("v", bins=10, range=(0, 10), branching=10**30, epsilon=1),
     pdp.ParameterError),
    (lambda f: f.dp.range_query("v", np.longdouble("1e400"), bins=10, range=(0, 10), epsilon=1),
     pdp.ParameterError),  # RuntimeWarning: overflow in cast (an error under filterwarnings=error)
    (lambda f: f.dp.range_query("v", Hostile(), bins=10, range=(0, 10), epsilon=1), pdp.ParameterError),
    (lambda f: f.dp.unattributed_histogram(np.timedelta64(1), epsilon=1), pdp.ParameterError),
    (lambda f: f.dp.unattributed_histogram("g", groups=HostileIterable(), epsilon=1), pdp.ParameterError),
    (lambda f: f.dp.unattributed_histogram("g", groups=[Decimal("sNaN"), 0], epsilon=1), pdp.ParameterError),
    (lambda f: f.dp.count_of_counts(Hostile(), ["st", "co"], groups=GROUPS, epsilon=1), pdp.ParameterError),
    (lambda f: f.dp.count_of_counts("g", Hostile(), groups=GROUPS, epsilon=1), pdp.ParameterError),
    (lambda f: f.dp.count_of_counts("g", ["st", "co"], groups=TABLES[12], epsilon=1), pdp.ParameterError),  # KeyError
    (lambda f: f.dp.count_of_counts("g", ["st", "co"], groups=GROUPS.iloc[:0], epsilon=1),
     pdp.ParameterError),  # IndexError in the engine
    (lambda f: f.dp.count_of_counts("g", "co", hierarchy=GROUPS[["st", "co"]].iloc[:0], epsilon=1),
     pdp.ParameterError),
    (lambda f: f.dp.count_of_counts("g", ["st", "co"], groups=TABLES[18], epsilon=1), pdp.SchemaError),  # __str__
    (lambda f: f.dp.count_of_counts("g", ["st", "co"], groups=TABLES[22], epsilon=1),
     pdp.SchemaError),  # decimal.InvalidOperation in pandera
    (lambda f: f.dp.count_of_counts("g", ["st", "co"], groups=TABLES[23], epsilon=1), pdp.SchemaError),  # hash
    # after merging main (units.py, releases/geography.py, _edges.py, count_of_counts privacy_unit=)
    (lambda f: f.dp.histogram("v", bins=10, range=(0, 10), privacy_unit=pd.NA, max_rows=2, epsilon=1),
     pdp.ParameterError),  # TypeError: boolean value of NA is ambiguous
    (lambda f: f.dp.histogram("v", bins=10, range=(0, 10), privacy_unit=np.timedelta64(1), max_rows=2, epsilon=1),
     pdp.ParameterError),  # ValueError: Can't hash generic timedelta64
    (lambda f: f.dp.histogram("v", bins=10, range=(0, 10), privacy_unit=HostileFloat(1), max_rows=2, epsilon=1),
     pdp.ParameterError),  # its __repr__
    (lambda f: pd.concat([f, f[["g"]]], axis=1).dp.unattributed_histogram("s", privacy_unit="g", max_rows=2,
                                                                          epsilon=1),
     pdp.ParameterError),  # ValueError in factorize *after the charge*: the unit column named two columns
    (lambda f: f.dp.histogram("v", bins=10, range=(0, 10), privacy_unit="g", max_rows=np.timedelta64(2), epsilon=1),
     pdp.ParameterError),
    (lambda f: f.dp.count_of_counts("g", ["st", "co"], groups=GROUPS, privacy_unit=Hostile(), epsilon=1),
     pdp.ParameterError),  # its __eq__
    (lambda f: f.dp.histogram("v", bins=10, range=(0, 10), by=Hostile(), epsilon=1), pdp.ParameterError),  # repr
    (lambda f: f.dp.histogram("v", bins=10, range=(0, 10), by=[HostileStr("st"), HostileStr("st")], epsilon=1),
     pdp.ParameterError),  # its __hash__ (now read as the plain column name 'st', repeated)
    (lambda f: f.dp.histogram("v", bins=10, range=(0, 10), by="st", by_categories=HostileIterable(), epsilon=1),
     pdp.DomainError),  # its __iter__
    (lambda f: f.dp.histogram("v", bins=10, range=(0, 10), by="st", by_categories=[Hostile(), "A"], epsilon=1),
     pdp.DomainError),  # its __hash__
    (lambda f: f.dp.histogram("v", bins=10, range=(0, 10), by="st", by_categories=["A", "B"],
                              level_weights=[HostileFloat(1)], epsilon=1), pdp.ParameterError),  # __repr__
    (lambda f: f.dp.histogram("v", bins=10, range=(0, 10), by="st", by_categories=["A", "B"],
                              level_weights=[np.timedelta64(1), 1], epsilon=1), pdp.ParameterError),
    (lambda f: f.dp.histogram("v", bins=HostileStr("bogus"), range=("2020-01-01", "2020-02-01"), epsilon=1),
     pdp.ParameterError),  # its __hash__ in the frequency lookup; now read as the plain text 'bogus'
]


@pytest.mark.parametrize("entry, base", [pytest.param(e, kwargs, id=f"{e}-{i}") for e in sorted(BASE)
                                         for i, kwargs in enumerate([BASE[e], *VARIANTS.get(e, [])])])
def test_a_label_naming_a_group_of_multiindex_columns_is_a_parameter_error(entry, base):
    """Issue 41.11: ``histogram("a", ...)`` on columns ``("a", "x"), ("a", "y")`` raised a raw AttributeError
    from domain/grid.py; every column argument of every entry now names one column or is refused first."""
    frame = FRAMES["MultiIndex column groups"]
    with pdp.budget(epsilon=TOTAL) as b:
        with pytest.raises(pdp.ParameterError) as caught:
            getattr(frame.dp, entry)(**base, rng=np.random.default_rng(0))
    assert b.spent_exact == 0 and len(b.ledger) == 0
    if "MultiIndex" in str(caught.value):
        assert "names a group of its columns" in str(caught.value) and "whole tuple" in str(caught.value)


def test_whole_tuples_name_multiindex_columns():
    frame = FRAMES["MultiIndex column groups"]
    with pdp.budget(epsilon=TOTAL):
        counts = frame.dp.histogram([("v", "x")], bins=10, range=(0, 10), epsilon=1, rng=np.random.default_rng(0))
        with pytest.raises(pdp.ParameterError, match=r"'v' of 'columns' names a group of its columns"):
            frame.dp.histogram("v", bins=10, range=(0, 10), epsilon=1)
    assert len(counts.counts) == 10


@pytest.mark.parametrize("case", range(len(REGRESSIONS)))
def test_raw_exceptions_found_by_the_fuzz_are_documented_errors(case):
    call, error = REGRESSIONS[case]
    with pdp.budget(epsilon=TOTAL) as b:
        with pytest.raises(error):
            call(FRAMES["plain"])
    assert b.spent_exact == 0 and len(b.ledger) == 0


def test_epsilon_2_to_the_minus_40_as_a_float_is_the_minimum_and_accepted():
    # The float 2**-40 reads as 9.094947017729282e-13 (its shortest repr), a hair below 2**-40.
    assert check_release(lambda: FRAMES["plain"].dp.histogram("v", bins=10, range=(0, 10), epsilon=2**-40,
                                                              rng=np.random.default_rng(0)),
                         {"epsilon": 2**-40}) == "released"
    with pytest.raises(pdp.ParameterError, match="too small"):
        loss_from(epsilon=2**-41)


#: Releases of private label columns, and the columns each reads (an odd value there drops its row).
PRIVATE_READS = {"count_of_counts": ("g", "st"), "count_of_counts (hierarchy)": ("g", "st"),
                 "unattributed_histogram": ("g",), "unattributed_histogram (ids)": ("g",),
                 "histogram (labels)": ("g", "st")}
PRIVATE_CALLS = {
    "count_of_counts": lambda f: f.dp.count_of_counts("g", ["st", "co"], groups=GROUPS, epsilon=1,
                                                      rng=np.random.default_rng(5), progress=False),
    "count_of_counts (hierarchy)": lambda f: f.dp.count_of_counts(
        "g", "co", hierarchy=GROUPS[["st", "co"]].drop_duplicates(), epsilon=1, rng=np.random.default_rng(5),
        progress=False),
    "unattributed_histogram": lambda f: f.dp.unattributed_histogram("g", epsilon=1, rng=np.random.default_rng(5)),
    "unattributed_histogram (ids)": lambda f: f.dp.unattributed_histogram("g", groups=list(range(7)), epsilon=1,
                                                                          rng=np.random.default_rng(5)),
    "histogram (labels)": lambda f: f.dp.histogram(["st", "g"], categories={"st": ["A", "B"], "g": list(range(7))},
                                                   epsilon=1, rng=np.random.default_rng(5)),
}


#: Private values whose own methods raise, and the plain values each may behave like (None: dropped). A str
#: subclass is matched by its text where pandas hashes strings in C (the label lookups of count_of_counts and
#: unattributed_histogram) and dropped where its own __hash__ is called (a CategoryDomain): by its value alone
#: either way, which is all the boundary rule asks.
ODD_PRIVATE_VALUES = [pytest.param(np.timedelta64(1), (None,), id="generic timedelta64"),  # np.integer, no hash
                      pytest.param(Hostile(), (None,), id="Hostile"),
                      pytest.param(HostileStr("A"), (None, "A"), id="HostileStr"),
                      pytest.param(Unhashable(), (None,), id="Unhashable"),
                      pytest.param(HostileFloat(1.0), (1.0,), id="HostileFloat")]  # a number equal to 1: its value


@pytest.mark.parametrize("odd, twins", ODD_PRIVATE_VALUES)
@pytest.mark.parametrize("release, column", [(r, c) for r in sorted(PRIVATE_CALLS) for c in PRIVATE_READS[r]])
def test_a_private_value_whose_methods_raise_counts_by_its_value_alone(release, column, odd, twins):
    """Boundary rule: such a private value made pandas' hashing raise (np.timedelta64(1) is an np.integer that
    cannot be hashed; a str subclass whose __hash__ raises; a float whose __str__ raises). Now the release
    is the same as with one of its plain twins in that cell: a value that cannot be hashed is dropped, a
    number counts by its value."""
    plain = FRAMES["plain"].astype({"g": object, "st": object})
    outcomes = []
    for value in (odd, *twins):
        row = plain.iloc[:1].copy()
        row[column] = pd.Series([value], index=row.index, dtype=object)  # the object itself, not a conversion
        neighbour = pd.concat([plain, row], ignore_index=True)
        assert neighbour[column].iloc[-1] is value
        with pdp.budget(epsilon=1) as b:
            outcomes.append(PRIVATE_CALLS[release](neighbour).to_frame())
        assert list(b.ledger["status"]) == ["ok"]
    assert any(outcomes[0].equals(twin) for twin in outcomes[1:]), outcomes


# ---------------------------------------------------------------------------------- result methods

@functools.lru_cache(maxsize=1)
def _zoo() -> dict[str, Any]:
    """Every result type of tests/results_zoo.py, and the results of tables by geography, of zCDP and of a
    privacy unit (main's by=, rho= and privacy_unit=)."""
    import results_zoo
    from pandas_dp.data import load_persons

    zoo = {k: v for k, v in results_zoo.every_result().items() if not isinstance(v, pd.DataFrame)}
    zoo["published"] = zoo["marginals"].integer()   # post-processing of a table set: no budget
    persons, rng = load_persons(), np.random.default_rng(1)
    hierarchy = persons[["state", "county"]].drop_duplicates()
    with pdp.budget(epsilon=10):
        zoo["geography"] = persons.dp.histogram("age", bins=10, range=(0, 100), by=["state", "county"],
                                                hierarchy=hierarchy, epsilon=1.0, rng=rng)
        zoo["geography_flat_integer"] = persons.dp.histogram(
            "age", bins=10, range=(0, 100), by="sex", by_categories=["F", "M"], integer=True, epsilon=1.0, rng=rng)
        zoo["privacy_unit"] = persons.dp.histogram("age", bins=10, range=(0, 100), privacy_unit="household_id",
                                                   max_rows=4, epsilon=1.0, rng=rng)
    with pdp.budget(rho=10):
        zoo["zcdp_tree"] = persons.dp.hierarchical_histogram("age", bins=16, range=(0, 96), rho=0.5, rng=rng)
    return zoo


def _method_cases() -> list[tuple[str, str, str]]:
    cases = []
    for name, result in _zoo().items():
        for attr in dir(result):
            member = getattr(type(result), attr, None)
            if attr.startswith("_") or isinstance(member, property) or not callable(member):
                continue
            params = list(inspect.signature(member).parameters.values())[1:]
            for p in params:
                if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                    cases.append((name, attr, p.name))
    return cases


def _valid_arguments(result: Any, method: str) -> dict[str, Any]:
    if method == "range_query":
        dim = getattr(result, "domain", None)
        edges = getattr(dim.dims[0], "edges", None) if dim is not None else None
        return {"low": 0.0, "high": 1.0} if edges is None else {"low": float(edges[0]), "high": float(edges[-1])}
    if method == "cell_box_query":
        return {"lower": [0] * result.domain.ndim, "upper": [1] * result.domain.ndim}
    if isinstance(result, (pdp.MarginalTables, pdp.PublishedTables)):
        return {"columns": ("age", "sex")} if method == "table" else {}
    if method in ("at", "unattributed", "totals", "table", "histogram"):
        return {"level": result.levels[-1]}
    if method == "emd":
        return {"truth": result}
    if method == "plot" and isinstance(result, pdp.CountOfCounts):
        return {"level": result.levels[-1]}
    return {}


RESULT_VALUES = st.one_of(*[_pick(v) for v in KINDS.values()], _pick(EVERYWHERE),
                          st.builds(_generator), st.builds(lambda: plt.figure()))


@pytest.mark.parametrize("examples", [pytest.param(30, id="fast"), pytest.param(1500 if SLOW_FULL else 300, id="many",
                                                                                 marks=pytest.mark.slow)])
def test_hostile_arguments_of_every_result_method(examples):
    zoo = _zoo()
    cases = _method_cases()
    assert {m for _, m, _ in cases} >= {"range_query", "confidence_interval", "sample", "plot", "at", "emd",
                                        "cell_box_query"}

    @_fuzz(examples * 4)
    @given(case=st.sampled_from(cases), value=RESULT_VALUES)
    def run(case, value):
        name, method, param = case
        # The default run leaves samples of millions of rows (n = 2**26: seconds each) to the many-examples run.
        assume(examples >= 300 or not (method == "sample" and isinstance(value, (int, np.integer))
                                     and not isinstance(value, bool) and value > 2**20))
        result = zoo[name]
        kwargs = {**_valid_arguments(result, method), param: value}
        try:
            getattr(result, method)(**kwargs)
        except pdp.PandasDPError:
            pass
        finally:
            plt.close("all")

    run()


def test_result_argument_errors_are_parameter_errors():
    zoo = _zoo()
    identity, coc, cube = zoo["identity"], zoo["count_of_counts"], zoo["dpcube_2d_uniform"]
    for call in (lambda: identity.range_query(Hostile(), 10), lambda: identity.range_query([[0]], [[10]]),
                 lambda: identity.range_query(()), lambda: identity.confidence_interval(Hostile()),
                 lambda: identity.sample(n=10**30), lambda: identity.sample(n=HostileFloat(1)),
                 lambda: identity.plot(ax="axes"), lambda: identity.plot(density=Hostile()),
                 lambda: coc.at(np.array([1, 2])), lambda: coc.at("county", region={"a": 1}),
                 lambda: coc.at("county", region=Decimal("sNaN")), lambda: coc.emd("truth"),
                 lambda: coc.plot(max_regions="8"), lambda: coc.plot(cumulative=pd.NA), lambda: coc.plot(ax=1),
                 lambda: coc.sample(hierarchy=[1]), lambda: cube.cell_box_query(1j, [1, 1]),
                 lambda: cube.cell_box_query([0], [1])):
        with pytest.raises(pdp.ParameterError):
            try:
                call()
            finally:
                plt.close("all")
    geography = zoo["geography"]
    for call in (lambda: geography.at(Hostile()), lambda: geography.at(HostileStr("nowhere")),
                 lambda: geography.at("county", region=HostileFloat(1)), lambda: geography.plot(max_regions=Hostile()),
                 lambda: geography.table(Hostile()), lambda: geography.range_query(Hostile()),
                 lambda: cube.cell_box_query(Hostile(), [1, 1])):
        with pytest.raises(pdp.ParameterError):
            try:
                call()
            finally:
                plt.close("all")
    with pytest.raises(pdp.DomainError):  # TypeError: only 0-dimensional arrays can be converted
        geography.range_query([[0, 1, 2]], 100)
    with pytest.raises(pdp.ParameterError):  # main's BracketedIntervals.cell_box_query: a box outside the grid
        cube.cell_box_query([0, 0], [10**6, 1])
