"""Every error a new user meets says what was wrong, what was given and what to do (and charges nothing)."""

from __future__ import annotations

import numpy as np
import pytest

import pandas_dp as pdp
from pandas_dp.data import load_households, load_persons
from pandas_dp.errors import (
    BudgetExceededError,
    DomainError,
    NoActiveBudgetError,
    ParameterError,
    SchemaError,
)

AGES = range(0, 101, 10)


@pytest.fixture(scope="module")
def persons():
    return load_persons()


@pytest.fixture(scope="module")
def households():
    return load_households()


def _fails(call, error, *phrases):
    """Run ``call`` in a fresh budget; it must raise ``error`` naming every phrase, and charge nothing."""
    with pdp.budget(epsilon=1.0) as b:
        with pytest.raises(error) as info:
            call()
    message = str(info.value)
    for phrase in phrases:
        assert phrase in message, f"{phrase!r} not in: {message}"
    assert b.spent == 0
    return message


def test_no_budget_shows_the_idiom(persons):
    with pytest.raises(NoActiveBudgetError) as info:
        persons.dp.histogram("age", bins=AGES, epsilon=0.5)
    assert "No privacy budget is active" in str(info.value)
    assert "with pandas_dp.budget(epsilon=" in str(info.value)


def test_overspend_gives_requested_remaining_and_fix(persons):
    with pdp.budget(epsilon=1.0) as b:
        persons.dp.histogram("age", bins=AGES, epsilon=0.7)
        with pytest.raises(BudgetExceededError) as info:
            persons.dp.histogram("age", bins=AGES, epsilon=0.7)
    message = str(info.value)
    for phrase in ("Requested epsilon=0.7", "remaining=0.3", "Nothing was charged", "Lower epsilon"):
        assert phrase in message
    assert b.spent == pytest.approx(0.7)


def test_wrong_column_lists_the_columns(persons):
    _fails(lambda: persons.dp.histogram("agee", bins=AGES, epsilon=0.5), ParameterError,
           "['agee']", "check spelling", "'age'")
    _fails(lambda: persons.dp.unattributed_histogram("hh", epsilon=0.5), ParameterError, "['hh']",
           "'household_id'")


def test_wrong_dtype_and_missing_domains(persons):
    # Numeric bins on a text column: the domain comes from the arguments, never from the dtype (one
    # stray token makes a numeric column text), so nothing raises: every label is out of domain.
    with pdp.budget(epsilon=1.0) as b:
        h = persons.dp.histogram("sex", bins=AGES, epsilon=0.5, rng=np.random.default_rng(0))
    assert len(h.counts) == 10 and b.spent == 0.5
    _fails(lambda: persons.dp.histogram("sex", epsilon=0.5), DomainError, "'sex'", "categories=[...]",
           "never derives the domain from the data")
    _fails(lambda: persons.dp.histogram("age", epsilon=0.5), DomainError, "'age'", "bins=", "range=(low, high)")
    _fails(lambda: persons.dp.histogram("age", bins=10, epsilon=0.5), DomainError, "bins=10", "without range",
           "range=(low, high)")
    _fails(lambda: persons.dp.histogram("state", bins=10, range=(0, 1), epsilon=0.5), ParameterError,
           "'state' is Categorical", "Drop bins=/range=")
    _fails(lambda: persons.dp.histogram("age", bins=[0, 10, 5], epsilon=0.5), DomainError,
           "strictly increasing", "[0, 10, 5]")


def test_bad_epsilon_and_rng(persons):
    _fails(lambda: persons.dp.histogram("age", bins=AGES, epsilon=-1), ParameterError,
           "'epsilon'", "Got -1", "epsilon=0.5")
    _fails(lambda: persons.dp.histogram("age", bins=AGES, epsilon=0.5, rng=3), ParameterError,
           "'rng'", "Got 3", "np.random.default_rng(seed)")
    with pytest.raises(ParameterError, match="Got 0"):
        pdp.budget(epsilon=0)


def test_unaligned_range_names_the_nearest_edges(persons):
    with pdp.budget(epsilon=1.0):
        ages = persons.dp.histogram("age", bins=AGES, epsilon=0.5, rng=np.random.default_rng(0))
        states = persons.dp.histogram("state", categories="dtype", epsilon=0.5, rng=np.random.default_rng(0))
    with pytest.raises(DomainError) as info:
        ages.range_query(15, 70)
    for phrase in ("low=15.0", "'age'", "nearest edges are 10.0 and 20.0", "half-open"):
        assert phrase in str(info.value)
    with pytest.raises(DomainError, match="Sum the categories you need"):
        states.range_query(1, 3)


def test_broken_hierarchy_lists_failure_cases(persons, households):
    bad = households.copy()
    bad.loc[0, "state"] = "Borealis"  # county DUN-02 now has two parent states
    message = _fails(lambda: persons.dp.count_of_counts("household_id", ["state", "county"], groups=bad,
                                                        epsilon=0.5),
                     SchemaError, "exactly one parent 'state'", "DUN-02", "nothing was charged", "Fix the tables")
    assert "Borealis" in message
    _fails(lambda: persons.dp.count_of_counts("household_id", ["state", "county"],
                                              groups=households.drop(columns="county"), epsilon=0.5),
           ParameterError, "lacks column(s) ['county']", "'household_id', 'state', 'county'")
    _fails(lambda: persons.dp.count_of_counts("household_id", ["state", "county"], epsilon=0.5), DomainError,
           "groups=", "hierarchy=", "would reveal where people live")


def test_bad_method_and_knobs(persons, households):
    _fails(lambda: persons.dp.histogram("age", bins=AGES, method="ahpp", epsilon=0.5), ParameterError,
           "'method'", "'ahpp'", "'dpcube'")
    _fails(lambda: persons.dp.histogram("age", bins=AGES, method="ahp", etaa=1, epsilon=0.5), ParameterError,
           "does not take ['etaa']", "remove them", "'eta'")
    _fails(lambda: persons.dp.histogram("age", bins=AGES, method="dpcube", estimate="lsq", epsilon=0.5),
           ParameterError, "'estimate'", "'lsq'", "'least_squares'")
    _fails(lambda: persons.dp.histogram("age", bins=AGES, method="identity", eta=1, epsilon=0.5),
           ParameterError, "takes no parameters ['eta']", "Remove them")
    _fails(lambda: persons.dp.hierarchical_histogram("age", bins=AGES, branching=1, epsilon=0.5),
           ParameterError, "'branching'", "Got 1", "'auto'")
    _fails(lambda: persons.dp.hierarchical_histogram("age", bins=AGES, budget_split="geo", epsilon=0.5),
           ParameterError, "'budget_split'", "'geo'", "'geometric'")
    _fails(lambda: persons.dp.count_of_counts("household_id", ["state", "county"], groups=households,
                                              method="hx", epsilon=0.5),
           ParameterError, "'method'", "'hx'", "'hc'")
    _fails(lambda: persons.dp.count_of_counts("household_id", ["state", "county"], groups=households,
                                              max_size=0, epsilon=0.5),
           ParameterError, "'max_size'", "Got 0", "public upper bound")


def test_ledger_reopened_with_another_total(tmp_path):
    path = tmp_path / "l.sqlite"
    pdp.Ledger.create(path)
    pdp.budget(epsilon=1, ledger=path, name="x")
    with pytest.raises(ParameterError) as info:
        pdp.budget(epsilon=2, ledger=path, name="x")
    for phrase in ("already holds a budget named 'x'", "epsilon=1.0", "got epsilon=2.0", "new name="):
        assert phrase in str(info.value)


def test_post_processing_messages(persons):
    with pdp.budget(epsilon=1.0):
        ages = persons.dp.histogram("age", bins=AGES, epsilon=0.5, rng=np.random.default_rng(0))
    with pytest.raises(ParameterError, match=r"'n' parameter of sample\(\).*Got -2"):
        ages.sample(n=-2)
    with pytest.raises(ParameterError, match="'confidence_level'.*Got 95.*0.95"):
        ages.confidence_interval(95)


@pytest.mark.parametrize("bins, said", [(2**20, "a number of bins"), (np.int64(12), "a number of bins"),
                                        ("M", "a frequency")])
def test_marginals_bins_as_a_count_speaks_of_edges_not_of_range(persons, bins, said):
    """Issue 41.12: ``marginals(bins={"c0": 2**20})`` told the user to pass ``range=``, which marginals does not
    take; it now asks for the edges, in marginals' dict form, and names no argument it lacks."""
    for by in ({}, {"by": "state", "by_categories": ["Avalon", "Borealis"]}):
        message = _fails(lambda: persons.dp.marginals([("age",)], bins={"age": bins}, epsilon=0.5, **by), DomainError,
                         "bins of column 'age' must be its bin edges", "bins={'age': [0, 18, 65, 120]}", said)
        assert "range=" not in message and "range" not in message.replace("date_range", "")
    message = _fails(lambda: persons.dp.marginals([("age", "sex")], bins={"age": AGES}, epsilon=0.5), DomainError,
                     "Column 'sex' needs a public domain", "categories={'sex': [...]}", "bins={'sex': [edges]}")
    assert "range" not in message
    # histogram, which takes range=, keeps its advice
    _fails(lambda: persons.dp.histogram("age", bins=2**20, epsilon=0.5), DomainError, "pass range=(low, high)")


@pytest.mark.parametrize("dropna", [False, True])
def test_dropna_says_missing_values_are_dropped_and_how_to_count_them(persons, dropna):
    """Issue 41.12: ``histogram(..., other=..., dropna=False)`` answered "takes no parameters ['dropna']"."""
    message = _fails(lambda: persons.dp.histogram("state", categories=["Avalon"], other="Other", dropna=dropna,
                                                  epsilon=0.5),
                     ParameterError, "histogram takes no dropna=", "missing values", "never counted",
                     "value_counts(dropna=True)", "df.assign(state=df['state'].fillna('missing'))",
                     "categories=[..., 'missing']")
    assert "takes no parameters" not in message
    _fails(lambda: persons["state"].dp.histogram(categories=["Avalon"], dropna=dropna, method="ahp", epsilon=0.5),
           ParameterError, "histogram takes no dropna=")
