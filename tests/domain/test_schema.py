"""Tests for pandas_dp.domain.schema and domain.persons_check: public tables fail loudly before any charge; persons rows only in check_persons."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pandera.pandas as pa
import pytest

import pandas_dp as pdp
from pandas_dp.engines.pandas.groups import prepare_groups
from pandas_dp.domain.persons_check import check_persons
from pandas_dp.domain.schema import entities_schema, groups_schema, hierarchy_schema


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


def test_every_public_failure_reported_at_once_and_nothing_charged(tables) -> None:
    persons, households = tables
    households = households.copy()
    households.loc[3, "hh"] = 3                      # duplicate group id
    households["state"] = households["state"].astype(object)
    households.loc[1, "state"] = None                # missing location
    persons = persons.copy()
    persons["hh"] = persons["hh"].astype(object)
    persons.loc[0, "hh"] = None                      # missing group id (private: never reported)
    persons.loc[5, "hh"] = 99                        # group not in Groups (private: never reported)
    with pdp.budget(1.0) as b:
        with pytest.raises(pdp.SchemaError) as info:
            persons.dp.count_of_counts("hh", ["state", "county"], epsilon=0.5, groups=households)
    assert b.spent == 0 and len(b.ledger) == 0
    cases = info.value.failure_cases
    checks = set(zip(cases["table"], cases["check"].astype(str)))
    assert ("Groups", "field_uniqueness") in checks
    assert ("Groups", "not_nullable") in checks
    assert set(cases["table"]) <= {"Groups", "Hierarchy(from Groups)"}  # nothing about the persons frame
    msg = str(info.value)
    assert "Groups.hh" in msg and "Entities" not in msg and "nothing was charged" in msg
    # The public tables are checked before the budget: the same error with no budget open.
    with pytest.raises(pdp.SchemaError) as no_budget:
        persons.dp.count_of_counts("hh", ["state", "county"], epsilon=0.5, groups=households)
    assert str(no_budget.value) == str(info.value)


def test_check_persons_reports_private_failures_the_release_drops(tables) -> None:
    persons, households = tables
    persons = persons.copy()
    persons["hh"] = persons["hh"].astype(object)
    persons.loc[0, "hh"] = None                      # missing group id
    persons.loc[5, "hh"] = 99                        # group not in Groups
    cases = check_persons(persons, "hh", ["state", "county"], groups=households)
    assert list(cases.columns) == ["table", "column", "check", "failure_case", "index"]
    found = set(zip(cases["table"], cases["check"], cases["index"]))
    assert ("Entities", "not_nullable", 0) in found
    assert ("Entities", "group_in_Groups", 0) in found and ("Entities", "group_in_Groups", 5) in found
    with pytest.raises(pdp.SchemaError, match="custodian's eyes only") as info:
        check_persons(persons, "hh", ["state", "county"], groups=households, raise_on_failure=True)
    pd.testing.assert_frame_equal(info.value.failure_cases, cases)
    assert check_persons(persons.drop(index=[0, 5]), "hh", ["state", "county"], groups=households).empty


def test_join_failures_group_missing_and_location_disagreeing(tables) -> None:
    persons, households = tables
    persons = persons.copy()
    persons.loc[2, "county"] = "a1"                  # group 2 lives in a2 according to Groups
    persons.loc[5, "hh"] = 42                        # unknown group
    with pdp.budget(1.0) as b:                       # the release drops both rows, silently
        got = persons.dp.count_of_counts("hh", ["state", "county"], epsilon=0.5, groups=households,
                                         rng=np.random.default_rng(0))
        want = persons.drop(index=[2, 5]).dp.count_of_counts("hh", ["state", "county"], epsilon=0.5,
                                                             groups=households, rng=np.random.default_rng(0))
    pd.testing.assert_frame_equal(got.to_frame(), want.to_frame())
    assert b.spent == 1.0
    cases = check_persons(persons, "hh", ["state", "county"], groups=households)
    assert set(cases["check"]) == {"group_in_Groups", "hh->county matches Groups"}
    assert sorted(cases["index"]) == [2, 5]


def test_functional_dependency_without_groups_table(tables) -> None:
    persons, households = tables
    persons = persons.copy()
    persons.loc[1, "county"] = "a2"                  # household 1 split over two counties
    hierarchy = households[["state", "county"]].drop_duplicates()
    with pdp.budget(1.0) as b:                       # the release counts two groups (hh 1 in a1, hh 1 in a2)
        persons.dp.count_of_counts("hh", "county", epsilon=0.5, hierarchy=hierarchy, rng=np.random.default_rng(0))
    assert b.spent == 0.5
    exact = prepare_groups(persons, "hh", "county", hierarchy=hierarchy)
    renamed = prepare_groups(persons.assign(hh=persons["hh"].where(persons.index != 1, 1000)), "hh", "county",
                             hierarchy=hierarchy)
    for a, c in zip(exact.exact, renamed.exact):
        np.testing.assert_array_equal(a.dense(), c.dense())
    cases = check_persons(persons, "hh", "county", hierarchy=hierarchy)
    split = cases[cases["check"] == "functional dependency hh->county"]
    assert sorted(split["index"]) == [0, 1] and set(split["failure_case"]) == {1}


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
    with pdp.budget(1.0):                            # persons of b1 are out of domain: dropped
        coc = persons.dp.count_of_counts("hh", "county", epsilon=0.5, hierarchy=hierarchy,
                                         rng=np.random.default_rng(0))
    assert list(coc.regions[-1]) == ["a1", "a2"]
    cases = check_persons(persons, "hh", "county", hierarchy=hierarchy)
    assert (cases["failure_case"] == "b1").sum() == 3
    assert set(cases["check"]) == {"county_in_Hierarchy"}


def test_schema_error_is_value_error(tables) -> None:
    persons, households = tables
    with pytest.raises(ValueError), pdp.budget(1.0):
        persons.dp.count_of_counts("hh", ["state", "county"], epsilon=0.5,
                                   groups=households.assign(hh=[1, 1, 2, 3]), rng=np.random.default_rng(0))


def test_public_tables_with_unhashable_labels_fail_loudly(tables) -> None:
    persons, households = tables
    bad = households.astype({"hh": object, "county": object})
    bad.at[0, "hh"] = [1]                            # a list as a group id
    bad.at[2, "county"] = {"b": 1}                   # a dict as a region
    with pdp.budget(1.0) as b, pytest.raises(pdp.SchemaError) as info:
        persons.dp.count_of_counts("hh", ["state", "county"], epsilon=0.5, groups=bad)
    assert b.spent == 0
    cases = info.value.failure_cases
    assert set(zip(cases["column"], cases["check"], cases["index"])) == {("hh", "scalar_label", 0),
                                                                         ("county", "scalar_label", 2)}


def test_groups_table_must_agree_with_the_hierarchy(tables) -> None:
    persons, households = tables
    hierarchy = households[["state", "county"]].drop_duplicates()
    groups = households.assign(state=["A", "B", "B", "B"])  # group 2 in a2, whose state is A
    groups.loc[3, "county"] = "zz"                           # a county the hierarchy lacks
    with pdp.budget(1.0) as b, pytest.raises(pdp.SchemaError) as info:
        persons.dp.count_of_counts("hh", ["state", "county"], epsilon=0.5, groups=groups, hierarchy=hierarchy)
    assert b.spent == 0
    cases = info.value.failure_cases
    assert set(zip(cases["check"], cases["index"])) == {("county->state matches Hierarchy", 1),
                                                        ("county_in_Hierarchy", 3)}
