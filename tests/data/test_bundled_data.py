"""The bundled synthetic persons and households: what the generator makes, and what the docs rely on."""

from __future__ import annotations

import hashlib
from importlib.resources import files

import pandas as pd

from pandas_dp.data import HISPANIC, RACES, STATES, load_persons
from pandas_dp.data._generate import generate

#: sha256 of persons.csv's first seven columns (person_id ... sex) as bundled before race and hispanic
#: were appended: pages, golden files and tests made on them stay valid only while these bytes hold.
OLDER_COLUMNS_SHA256 = "87a85cc6255a1a1a254725b2449abe644447b32b5d4e9534bd952c62b5fc2a67"


def _bundled(name: str) -> str:
    return files("pandas_dp.data").joinpath(name).read_text("utf-8")


def test_the_generator_makes_the_bundled_files_byte_for_byte():
    persons, households = generate()
    assert persons.to_csv(index=False) == _bundled("persons.csv")
    assert households.to_csv(index=False) == _bundled("households.csv")


def test_race_and_hispanic_were_appended_without_changing_an_older_byte():
    lines = _bundled("persons.csv").splitlines(keepends=True)
    assert lines[0] == "person_id,household_id,state,county,age,income,sex,race,hispanic\n"
    older = "".join(line.rsplit(",", 2)[0] + "\n" for line in lines)
    assert hashlib.sha256(older.encode()).hexdigest() == OLDER_COLUMNS_SHA256


def test_race_and_hispanic_take_only_their_listed_labels_and_differ_by_state():
    persons = load_persons()
    assert set(persons["race"]) == set(RACES) and set(persons["hispanic"]) == set(HISPANIC)
    shares = pd.crosstab(persons["state"], persons["race"], normalize="index").reindex(index=STATES, columns=RACES)
    # Each state leads on the group its shares favour (_generate.RACE_SHARES): Dunmore Black,
    # Cascadia Asian, Borealis AIAN, Estoria NHPI; with 700 to 4,000 persons a state, these gaps
    # (3 to 10 times) are far beyond sampling error.
    assert [shares[race].idxmax() for race in ["Black", "Asian", "AIAN", "NHPI"]] == \
        ["Dunmore", "Cascadia", "Borealis", "Estoria"]
    hispanic = (persons["hispanic"] == "Hispanic").groupby(persons["state"], observed=True).mean()
    assert hispanic.idxmax() == "Dunmore"
