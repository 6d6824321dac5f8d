"""Tests for pandas_dp.schema and the validation of count-of-counts inputs (before any charge)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pandera.pandas as pa
import pytest

import pandas_dp as pdp
from pandas_dp.schema import entities_schema, groups_schema, hierarchy_schema


@pytest.fixture
def tables():
    persons = pd.DataFrame({"hh": [1, 1, 2, 3, 3, 3], "state": ["A", "A", "A", "B", "B", "B"],
                            "county": ["a1", "a1", "a2", "b1", "b1", "b1"]})
    households = pd.DataFrame({"hh": [1, 2, 3, 4], "state": ["A", "A", "B", "B"],
                               "county": ["a1", "a2", "b1", "b1"]})
    return persons, households


def test_exported_schemas_validate_ahead_of_time(tables) -> None:
    persons, households = tables
    groups_schema("hh", ["state", "county"]).validate(households, lazy=True)
    entities_schema("hh").validate(persons, lazy=True)
    hierarchy_schema(["state", "county"]).validate(households[["state", "county"]].drop_duplicates())
    bad = pd.DataFrame({"state": ["A", "B"], "county": ["x", "x"]})
    with pytest.raises(pa.errors.SchemaErrors):
        hierarchy_schema(["state", "county"]).validate(bad, lazy=True)


def test_every_failure_reported_at_once_and_nothing_charged(tables) -> None:
    persons, households = tables
    households = households.copy()
    households.loc[3, "hh"] = 3                      # duplicate group id
    households["state"] = households["state"].astype(object)
    households.loc[1, "state"] = None                # missing location
    persons = persons.copy()
    persons["hh"] = persons["hh"].astype(object)
    persons.loc[0, "hh"] = None                      # missing group id
    persons.loc[5, "hh"] = 99                        # group not in Groups
    with pdp.budget(1.0) as b:
        with pytest.raises(pdp.SchemaError) as info:
            persons.dp.count_of_counts("hh", ["state", "county"], epsilon=0.5, groups=households)
    assert b.spent == 0 and len(b.ledger) == 0
    cases = info.value.failure_cases
    checks = set(zip(cases["table"], cases["check"].astype(str)))
    assert ("Groups", "field_uniqueness") in checks
    assert ("Groups", "not_nullable") in checks
    assert ("Entities", "not_nullable") in checks
    msg = str(info.value)
    assert "Groups.hh" in msg and "Entities.hh" in msg and "nothing was charged" in msg


def test_join_failures_group_missing_and_functional_dependency(tables) -> None:
    persons, households = tables
    persons = persons.copy()
    persons.loc[2, "county"] = "a1"                  # group 2 lives in a2 according to Groups
    persons.loc[5, "hh"] = 42                        # unknown group
    with pdp.budget(1.0) as b:
        with pytest.raises(pdp.SchemaError) as info:
            persons.dp.count_of_counts("hh", ["state", "county"], epsilon=0.5, groups=households)
    assert b.spent == 0
    cases = info.value.failure_cases
    assert set(cases["check"]) == {"group_in_Groups", "hh->county matches Groups"}
    assert sorted(cases["index"]) == [2, 5]


def test_functional_dependency_without_groups_table(tables) -> None:
    persons, households = tables
    persons = persons.copy()
    persons.loc[1, "county"] = "a2"                  # household 1 split over two counties
    hierarchy = households[["state", "county"]].drop_duplicates()
    with pdp.budget(1.0) as b:
        with pytest.raises(pdp.SchemaError) as info:
            persons.dp.count_of_counts("hh", "county", epsilon=0.5, hierarchy=hierarchy)
    assert b.spent == 0
    assert info.value.failure_cases["check"].str.contains("functional dependency").any()


def test_hierarchy_two_parents_nulls_duplicates(tables) -> None:
    persons, _ = tables
    hierarchy = pd.DataFrame({"state": ["A", "A", "B", "B", None], "county": ["a1", "a2", "b1", "a2", "c1"]})
    with pdp.budget(1.0) as b:
        with pytest.raises(pdp.SchemaError) as info:
            persons.dp.count_of_counts("hh", "county", epsilon=0.5, hierarchy=hierarchy)
    assert b.spent == 0
    checks = set(info.value.failure_cases["check"].astype(str))
    assert "not_nullable" in checks and "field_uniqueness" in checks
    assert any("exactly one parent" in c for c in checks)


def test_person_region_outside_hierarchy(tables) -> None:
    persons, households = tables
    hierarchy = households[["state", "county"]].drop_duplicates().iloc[:2]
    with pytest.raises(pdp.SchemaError) as info, pdp.budget(1.0):
        persons.dp.count_of_counts("hh", "county", epsilon=0.5, hierarchy=hierarchy)
    assert (info.value.failure_cases["failure_case"] == "b1").sum() == 3


def test_schema_error_is_value_error(tables) -> None:
    persons, households = tables
    with pytest.raises(ValueError), pdp.budget(1.0):
        persons.assign(hh=[None] * 6).dp.count_of_counts("hh", ["state", "county"], epsilon=0.5,
                                                         groups=households, rng=np.random.default_rng(0))
