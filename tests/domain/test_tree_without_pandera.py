"""Building a region tree from valid public tables does not load pandera (issue 44, item 7e).

The first ``marginals(by=...)`` of a process took about 2 s, later ones 0.1 s: building the first region
tree imported pandera and registered its backends. Valid tables are now told apart in plain pandas; only
tables that fail a check go to the pandera schemas, which list every failure case as before.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.domain.geography import region_tree
from pandas_dp.domain.table_checks import valid_hierarchy

ROOT = Path(__file__).resolve().parents[2]

FIRST_RELEASE = """
import sys
import numpy as np
import pandas_dp as pdp
from pandas_dp.data import load_households, load_persons
persons, households = load_persons(), load_households()
with pdp.budget(rho=1.0):
    persons.dp.marginals([("age", "sex")], bins={"age": [0, 18, 65, 95]}, categories={"sex": ["F", "M"]},
                         by=["state", "county"], hierarchy=households[["state", "county"]].drop_duplicates(),
                         rho=0.5, rng=np.random.default_rng(0))
    persons.dp.count_of_counts("household_id", ["state", "county"], groups=households, epsilon=0.5,
                               rng=np.random.default_rng(0))
print("pandera" in sys.modules)
"""


def test_releases_by_geography_on_valid_tables_never_load_pandera():
    out = subprocess.run([sys.executable, "-c", FIRST_RELEASE], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


GROUPS = pd.DataFrame({"hh": [1, 2, 3, 4], "state": ["A", "A", "B", "B"], "county": ["a1", "a2", "b1", "b1"]})
HIERARCHY = pd.DataFrame({"state": ["A", "A", "B"], "county": ["a1", "a2", "b1"]})


@pytest.mark.parametrize("groups, hierarchy", [
    (GROUPS.assign(hh=[1, 1, 3, 4]), None),                              # a group id twice
    (GROUPS.assign(state=["A", None, "B", "B"]), None),                  # a missing region
    (None, HIERARCHY.assign(county=["a1", "a1", "b1"])),                  # a county with two states (and twice)
    (None, pd.concat([HIERARCHY, HIERARCHY.tail(1)])),                   # a leaf twice
    (GROUPS, HIERARCHY.assign(state=["A", "A", "C"])),                   # groups disagree with the hierarchy
    (GROUPS.assign(hh=[1, 2, 3, [4]]), None),                            # a label that is not a scalar
    (GROUPS.assign(county=["a1", "a2", "b1", 7]), None),                 # two kinds of label
])
def test_failing_tables_go_to_the_schemas(groups, hierarchy):
    assert valid_hierarchy("hh", ["state", "county"], groups=groups, hierarchy=hierarchy) is None
    with pytest.raises(pdp.SchemaError, match="The public tables failed validation"):
        region_tree(GROUPS.columns, "hh", ["state", "county"], groups=groups, hierarchy=hierarchy)


def test_valid_tables_give_the_schemas_hierarchy():
    from pandas_dp.domain.schema import validate_public_tables

    for groups, hierarchy in ((GROUPS, None), (None, HIERARCHY), (GROUPS, HIERARCHY)):
        fast = valid_hierarchy("hh", ["state", "county"], groups=groups, hierarchy=hierarchy)
        full = validate_public_tables("hh", ["state", "county"], groups=groups, hierarchy=hierarchy)
        pd.testing.assert_frame_equal(fast, full)
