"""``outcome`` and ``assert_same_outcome``: every kind of observable difference is detected, sameness passes."""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.accounting.budget import active_budget
from pandas_dp.testing import Outcome, SameOutcomeFailure, assert_same_outcome, outcome, with_row

D = pd.DataFrame({"x": [0.5, 1.5, 1.5, 2.5], "g": ["a", "b", "b", "a"]})
D2 = with_row(D, {"x": 3.5})
EDGES = [0, 1, 2, 3, 4]


def histogram(df: pd.DataFrame) -> pdp.Histogram:
    return df.dp.histogram("x", bins=EDGES, epsilon=0.5, rng=np.random.default_rng(0))


def _differs(call, *, budget=10**9, match: str) -> SameOutcomeFailure:
    with pytest.raises(SameOutcomeFailure, match=match) as info:
        assert_same_outcome(call, D, D2, budget=budget)
    return info.value


def test_same_behaviour_passes_and_returns_both_outcomes():
    a, b = assert_same_outcome(histogram, D, D2)
    assert a == b and a.kind == "returned" and a.result_type == "pandas_dp.results.histogram.Histogram"
    assert a.charged == Fraction(1, 2) and not a.warnings
    parts = dict(a.structure)
    assert parts["counts.index"].index.equals(pd.IntervalIndex.from_breaks(EDGES, closed="left"))
    assert [row for row in a.ledger][0][0] == ("id", "1")  # ledger row without its time stamp
    assert not any(k == "time" for k, _ in a.ledger[0])


def test_outcome_class_difference():
    def call(df):
        if len(df) > len(D):
            raise pdp.SchemaError("group 9 is not in the Groups table")
        return histogram(df)

    err = _differs(call, match="outcome: returns a Histogram vs raises SchemaError")
    a, b = err.outcomes
    assert a.kind == "returned" and b.raised
    text = str(err)
    assert "D: returns a Histogram" in text and "D': raises SchemaError('group 9 is not in the Groups table')" in text
    assert "charging 1/2" in text  # D charged, D' did not


def test_exception_type_and_message_differences():
    _differs(lambda df: (_ for _ in ()).throw((pdp.DomainError if len(df) > 4 else pdp.ParameterError)("no")),
             match="outcome: raises ParameterError\\('no'\\) vs raises DomainError\\('no'\\)")

    def message(df):
        raise pdp.DomainError(f"value {float(df['x'].max())!r} is outside the bins")
    _differs(message, match="exception message: 'value 2.5 is outside the bins' vs 'value 3.5 is outside the bins'")


def test_chained_exception_and_attributes_are_compared():
    def chained(df):
        try:
            raise KeyError(f"row {len(df) - 1}")
        except KeyError as err:
            raise pdp.SchemaError("bad row") from err
    _differs(chained, match="chained exceptions")

    def attribute(df):
        raise pdp.SchemaError("bad rows", failure_cases=df.tail(1))
    _differs(attribute, match="failure_cases")


def test_result_type_and_structure_differences():
    _differs(lambda df: histogram(df) if len(df) == 4 else histogram(df).counts,
             match="outcome: returns a Histogram vs returns a Series")
    _differs(lambda df: np.zeros(len(df)), match=r"shape: \(4,\) vs \(5,\)")
    _differs(lambda df: df["x"].value_counts(), match="index: 3 labels")
    _differs(lambda df: pd.Series([1.0], index=[float(df["x"].iloc[-1])]),
             match=r"index: 1 label \[2.5\].* vs 1 label \[3.5\]")
    _differs(lambda df: np.zeros(2, dtype=df["x"].dtype if len(df) == 4 else np.int64), match="dtype: float64 vs int64")


def test_warnings_are_compared_and_never_escape():
    def call(df):
        if len(df) > 4:
            warnings.warn(f"value {df['x'].iloc[-1]} is odd", UserWarning, stacklevel=1)
        return histogram(df)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning that escaped the capture would raise here
        err = _differs(call, match="warnings: \\[\\] vs \\[\\('UserWarning', 'value 3.5 is odd'\\)\\]")
    assert "with warnings UserWarning('value 3.5 is odd')" in str(err)


def test_charge_and_ledger_differences():
    def twice(df):
        out = histogram(df)
        if len(df) > 4:
            histogram(df)
        return out
    _differs(twice, match="budget charged: 1/2 .* vs 1")

    def params(df):
        active_budget().spend(Fraction(1, 4), method="custom", params={"rows": len(df)})
        return 0
    err = _differs(params, match="ledger rows")
    a, b = err.outcomes
    assert a.charged == b.charged == Fraction(1, 4)


def test_without_a_budget_both_sides_raise_the_same():
    a, b = assert_same_outcome(histogram, D, D2, budget=None)
    assert a.raised and a.error_type == "pandas_dp.errors.NoActiveBudgetError" and a.charged is None


def test_budget_specs():
    assert outcome(histogram, D, budget=0.5).charged == Fraction(1, 2)
    assert outcome(histogram, D, budget={"epsilon": 1}).charged == Fraction(1, 2)
    exceeded = outcome(histogram, D, budget=lambda: pdp.budget(epsilon=0.25))
    assert exceeded.raised and exceeded.error_type.endswith("BudgetExceededError") and exceeded.charged == 0
    with pytest.raises(pdp.ParameterError, match="does not accept"):
        outcome(histogram, D, budget={"not_an_argument": 1})
    with pytest.raises(pdp.ParameterError, match="returned a int"):
        outcome(histogram, D, budget=lambda: 3)
    with pytest.raises(pdp.ParameterError, match="'budget' parameter of outcome"):
        outcome(histogram, D, budget="lots")


def test_outcome_runs_in_its_own_context():
    with pdp.budget(epsilon=1.0) as outer:
        made = outcome(histogram, D)
    assert made.charged == Fraction(1, 2) and outer.spent == 0.0


def test_outcome_is_hashable_and_describes_itself():
    a = outcome(histogram, D)
    assert hash(a) == hash(outcome(histogram, D)) and isinstance(a, Outcome)
    assert a.describe() == "returns a Histogram, charging 1/2 (= 0.5)"
    assert "counts.index: 4 labels [Interval(0, 1, closed='left')" in a.describe(full=True)
    assert a.differences(a) == []


def test_neighbour_names_appear_in_the_message():
    from pandas_dp.testing import Neighbour

    with pytest.raises(SameOutcomeFailure, match="on D and add a stray value"):
        assert_same_outcome(lambda df: np.zeros(len(df)), D, Neighbour("add a stray value", D2, "one row"))
