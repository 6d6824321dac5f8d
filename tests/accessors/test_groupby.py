"""Issue 13.7: a release inside a pandas groupby charges once per group; it warns once with the fix."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.releases import pipeline


@pytest.fixture(autouse=True)
def fresh_sites():
    pipeline._WARNED_SITES.clear()
    yield
    pipeline._WARNED_SITES.clear()

DF = pd.DataFrame({"g": list("aabbc"), "x": [1, 2, 3, 4, 5]})


def per_group(part):
    return part.dp.histogram("x", bins=5, range=(0, 5), epsilon=1.0, rng=np.random.default_rng(0)).counts


@pytest.mark.parametrize("how", ["apply", "agg"])
def test_a_release_inside_groupby_warns_with_the_fix(how):
    with pdp.budget(epsilon=10.0) as budget:
        with pytest.warns(pdp.GroupbyReleaseWarning, match="by_categories") as caught:
            if how == "apply":
                DF.groupby("g").apply(per_group, include_groups=False)
            else:
                DF.groupby("g")["x"].agg(lambda s: float(s.to_frame().dp.histogram(
                    "x", bins=5, range=(0, 5), epsilon=1.0).counts.sum()))
    assert budget.spent == 3        # what the warning is about: one charge per group
    assert all(w.filename == __file__ for w in caught)   # points at the caller's line, not at pandas_dp


def test_it_warns_once_per_call_site():
    with pdp.budget(epsilon=10.0), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DF.groupby("g").apply(per_group, include_groups=False)
        DF.groupby("g").apply(per_group, include_groups=False)
    assert sum(issubclass(w.category, pdp.GroupbyReleaseWarning) for w in caught) == 1


def test_no_warning_outside_a_groupby_and_the_fix_releases_every_group_once():
    with pdp.budget(epsilon=1.0) as budget, warnings.catch_warnings():
        warnings.simplefilter("error")
        fixed = DF.dp.histogram("x", bins=5, range=(0, 5), by="g", by_categories=["a", "b", "c"], epsilon=1.0)
        DF.groupby("g").size()       # plain pandas stays silent
    assert budget.spent == 1
    assert set(fixed.counts.index.get_level_values("region").dropna()) >= {"a", "b", "c"}


def test_groupby_dp_names_the_one_release_form():
    """Issue 29, item 8: df.groupby(key).dp raises with the fix (by=key, by_categories=...), not pandas'
    generic AttributeError; a column named "dp" keeps pandas' own behaviour."""
    frame = pd.DataFrame({"race": list("aabc"), "x": [1, 2, 3, 4]})
    for grouped, key in ((frame.groupby("race"), "'race'"), (frame.groupby(["race"]), "'race'"),
                         (frame.groupby("race")["x"], "'race'"), (frame.groupby(["race", "x"]), "['race', 'x']")):
        with pytest.raises(pdp.GroupbyAccessError, match=rf"by={re.escape(key)}, by_categories="):
            grouped.dp
    with_dp = pd.DataFrame({"g": list("aab"), "dp": [1, 2, 3]})
    assert with_dp.groupby("g").dp.sum().tolist() == [3, 3]
    with pdp.budget(epsilon=1.0) as budget:  # the form the message gives: one release, one charge
        table = frame.dp.histogram("x", bins=4, range=(1, 5), by="race", by_categories=["a", "b", "c", "d"],
                                   epsilon=0.5, rng=np.random.default_rng(0))
    assert budget.spent == 0.5 and len(budget.ledger) == 1 and "d" in set(table.to_frame()["region"])
