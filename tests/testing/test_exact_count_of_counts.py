"""The exact count-of-counts a tutorial shows is public API (issue 44, item 5).

``pandas_dp.testing.exact_count_of_counts`` is the public path (the function lives in the engines, the only
code that reads rows); the tutorial imports it from there and the API reference renders it; the former path
``pandas_dp.engines.pandas_groups`` still imports.
"""

from __future__ import annotations

import importlib
import logging
import re
from pathlib import Path

import pytest

import pandas_dp.testing as testing
from pandas_dp.data import load_households, load_persons
from pandas_dp.engines.pandas import groups

ROOT = Path(__file__).resolve().parents[2]


def test_the_public_path_is_the_engines_function():
    assert testing.exact_count_of_counts is groups.exact_count_of_counts
    assert "exact_count_of_counts" in testing.__all__


def test_the_former_path_still_imports():
    old = importlib.import_module("pandas_dp.engines.pandas_groups")
    assert old.exact_count_of_counts is groups.exact_count_of_counts
    assert old.prepare_groups is groups.prepare_groups


def test_it_counts_every_group_once_per_level():
    truth = testing.exact_count_of_counts(load_persons(), "household_id", ["state", "county"],
                                          groups=load_households())
    assert list(truth.columns) == ["level", "region", "size", "groups"]
    per_level = truth.groupby("level", sort=False)["groups"].sum()
    assert set(per_level) == {len(load_households())}


def test_docs_show_the_public_path_only():
    shown = [p for p in (ROOT / "docs").rglob("*.md") if p.name != "architecture.md"
             and re.search(r"pandas_dp\.engines[.\w]*\s+import\s+exact_count_of_counts|engines\.pandas\.groups",
                           p.read_text("utf-8"))]
    assert not shown, shown
    assert "from pandas_dp.testing import exact_count_of_counts" in (ROOT / "docs/tutorials/flights.md").read_text()


def test_the_api_reference_renders_it():
    griffe = pytest.importorskip("griffe")
    assert "::: pandas_dp.testing.exact_count_of_counts" in (ROOT / "docs/reference/api.md").read_text()
    logging.getLogger("griffe").setLevel(logging.ERROR)
    package = griffe.load("pandas_dp", search_paths=[str(ROOT)], docstring_parser="numpy")
    docstring = package["testing.exact_count_of_counts"].docstring
    sections = {s.kind.value for s in docstring.parsed}
    assert {"parameters", "returns", "examples"} <= sections
