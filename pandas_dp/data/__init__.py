"""Small bundled datasets for the demo and the documentation."""

from __future__ import annotations

from importlib.resources import files

import pandas as pd

__all__ = ["load_persons", "load_households"]

STATES = ["Avalon", "Borealis", "Cascadia", "Dunmore", "Estoria"]
RACES = ["White", "Black", "Asian", "AIAN", "NHPI", "Two or more"]
HISPANIC = ["Hispanic", "Not Hispanic"]


def load_persons() -> pd.DataFrame:
    """A synthetic census-like persons table (one row per person).

    Columns: ``person_id``, ``household_id``, ``state``, ``county``, ``age``
    (0-99), ``income`` (dollars, missing for children), ``sex`` (``F``, ``M``),
    ``race`` (one of ``RACES``: ``White``, ``Black``, ``Asian``, ``AIAN``
    (American Indian and Alaska Native), ``NHPI`` (Native Hawaiian and Other
    Pacific Islander), ``Two or more``; in the style of the census's race
    categories, with shares that differ by state and a little by county) and
    ``hispanic`` (one of ``HISPANIC``: ``Hispanic``, ``Not Hispanic``). Generated
    by ``pandas_dp/data/_generate.py`` with fixed seeds; no real person is in it.
    """
    frame = pd.read_csv(files(__package__).joinpath("persons.csv"))
    frame["state"] = pd.Categorical(frame["state"], categories=STATES)
    return frame


def load_households() -> pd.DataFrame:
    """The public Groups table of the demo: one row per household (``household_id, state, county``),
    including households with no person in the persons table."""
    frame = pd.read_csv(files(__package__).joinpath("households.csv"))
    frame["state"] = pd.Categorical(frame["state"], categories=STATES)
    return frame
