"""``method = "quantiles"`` in a release spec: one column's quantiles (issue 43 item 4).

A spec's quantiles release is parsed (``q`` a number or a list, ``bounds`` a pair of numbers or of dates),
checked before any charge (the rehearsal on an empty table names a bad public input and its argument), run
with the same noise as the Python release for the same seed, and written as one row per ``q`` (``q,
estimate, lower, upper`` at the spec's confidence), next to its ledger charge and manifest entry.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.data import load_persons
from _cli import ledger_entries, run, spec_folder

HEAD = """seed = 5
[budget]
epsilon = 1.0
ledger = "ledger.sqlite"
[input]
path = "persons.csv"
[output]
dir = "released"
confidence = 0.9
"""
#: Twenty q's: more than the exponential mechanisms take (the tree runs, with intervals).
VENTILES = [round(0.05 * i, 2) for i in range(20)]
DECILES = f"""[[release]]
name = "deciles"
method = "quantiles"
column = "income"
q = {VENTILES}
bounds = [0, 250000]
epsilon = 0.5
"""
MEDIAN_DATE = """[[release]]
name = "median_date"
method = "quantiles"
column = "day"
q = 0.5
bounds = [2020-01-01, 2020-12-31]       # TOML dates: a date column, read as text
epsilon = 0.5
"""


@pytest.fixture(scope="module")
def persons(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("data") / "persons.csv"
    frame = load_persons()
    days = np.random.default_rng(0).integers(0, 366, len(frame))
    frame["day"] = (pd.Timestamp("2020-01-01") + pd.to_timedelta(days, unit="D")).strftime("%Y-%m-%d")
    frame.to_csv(path, index=False)
    return path


def _folder(tmp_path: Path, persons: Path, releases: str) -> Path:
    return spec_folder(tmp_path, persons, HEAD + releases)


def test_a_quantiles_spec_writes_one_row_per_q_as_the_python_release(tmp_path, persons):
    d = _folder(tmp_path, persons, DECILES + MEDIAN_DATE)
    done = run("release", str(d / "spec.toml"))
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(d / "released" / "deciles.csv")
    assert list(table.columns) == ["q", "estimate", "lower", "upper"]
    assert table["q"].tolist() == VENTILES
    dates = pd.read_csv(d / "released" / "median_date.csv")
    assert list(dates.columns) == ["q", "estimate", "lower", "upper"] and len(dates) == 1
    # The same numbers as the Python release of the same rows with the spec's seed, at the spec's confidence.
    rows = pd.read_csv(d / "persons.csv")
    rng = np.random.default_rng(5)
    with pdp.budget(epsilon=1.0):
        deciles = rows.dp.quantiles("income", VENTILES, bounds=(0, 250000), epsilon=0.5, rng=rng)
        median = rows.dp.quantiles("day", 0.5, bounds=(pd.Timestamp("2020-01-01"), pd.Timestamp("2020-12-31")), epsilon=0.5, rng=rng)
    assert deciles.params["mechanism"].startswith("hierarchical")
    expected = deciles.quantile(VENTILES, confidence_level=0.9)
    np.testing.assert_allclose(table["estimate"], expected["estimate"], rtol=1e-12)
    np.testing.assert_allclose(table["lower"], expected["ci_low"], rtol=1e-12)
    np.testing.assert_allclose(table["upper"], expected["ci_high"], rtol=1e-12)
    assert (table["lower"] <= table["estimate"]).all() and (table["estimate"] <= table["upper"]).all()
    # One q: the exponential mechanism, whose estimate has no interval (empty lower and upper).
    day = median.to_frame()
    assert "exponential" in median.params["mechanism"]
    assert pd.Timestamp(dates["estimate"].iloc[0]) == day["estimate"].iloc[0]
    assert dates[["lower", "upper"]].isna().all().all()
    # One charge per release, each 'ok', named in the manifest.
    manifest = json.loads((d / "released" / "manifest.json").read_text())
    assert [(r["name"], r["method"], r["epsilon"]) for r in manifest["releases"]] == [
        ("deciles", "quantiles", 0.5), ("median_date", "quantiles", 0.5)]
    charges = [e for e in ledger_entries(d / "ledger.sqlite") if e[1] == "charge"]
    assert [(e[0], e[3]) for e in charges] == [(r["ledger_id"], "ok") for r in manifest["releases"]]


def test_bad_public_inputs_of_a_quantiles_spec_are_refused_before_any_charge_naming_the_argument(tmp_path, persons):
    releases = (DECILES.replace(f"q = {VENTILES}", "q = [0.1, 1.5]")
                + DECILES.replace('name = "deciles"', 'name = "reversed"').replace("bounds = [0, 250000]",
                                                                                    "bounds = [250000, 0]")
                + DECILES.replace('name = "deciles"', 'name = "unbounded"').replace("bounds = [0, 250000]\n", "")
                + DECILES.replace('name = "deciles"', 'name = "typo"').replace('column = "income"',
                                                                                'column = "incme"'))
    d = _folder(tmp_path, persons, releases.replace("epsilon = 0.5", "epsilon = 0.25"))
    for args in (("release", "--check"), ("release",)):
        done = run(*args, str(d / "spec.toml"))
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        err = done.stderr
        assert "nothing was charged" in err
        assert "[[release]] 'deciles': ParameterError: q" in err, err
        assert "[[release]] 'reversed': ParameterError: bounds" in err
        assert "[[release]] 'unbounded': missing 'bounds' for method 'quantiles'" in err
        assert "'incme'" in err
    assert ledger_entries(d / "ledger.sqlite") == [] and not (d / "released").exists()


def test_a_quantiles_spec_by_geography_writes_one_row_per_region_and_q(tmp_path, persons):
    hierarchy = pd.read_csv(persons)[["state", "county"]].drop_duplicates()
    hierarchy.to_csv(tmp_path / "regions.csv", index=False)
    spec = DECILES.replace('column = "income"', 'column = "income"\nby = ["state", "county"]\nhierarchy = "regions.csv"')
    d = _folder(tmp_path, persons, spec.replace(f"q = {VENTILES}", f"q = {VENTILES[1:]}"))
    done = run("release", str(d / "spec.toml"))
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(d / "released" / "deciles.csv")
    assert list(table.columns) == ["level", "region", "q", "estimate", "lower", "upper"]
    assert len(table) == 19 * (1 + hierarchy.state.nunique() + len(hierarchy))
    rows = pd.read_csv(d / "persons.csv")
    with pdp.budget(epsilon=1.0):
        same = rows.dp.quantiles("income", VENTILES[1:], bounds=(0, 250000), by=["state", "county"],
                                 hierarchy=hierarchy, epsilon=0.5, rng=np.random.default_rng(5))
    expected = same.quantile(VENTILES[1:], confidence_level=0.9)
    np.testing.assert_allclose(table["estimate"], expected["estimate"], rtol=1e-12)
    np.testing.assert_allclose(table["lower"], expected["ci_low"], rtol=1e-12)
