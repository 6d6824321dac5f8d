"""The command line, run as a subprocess the way users run it."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pandas_dp", *args], capture_output=True, text=True, timeout=300)


def test_demo_prints_every_release_and_spends_the_whole_budget():
    done = run("demo", "--seed", "1")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for title in ("Persons by age", "Persons by state", "Adults by income band", "Households by size",
                  "Budget ledger"):
        assert title in out
    assert "± 95%" in out and "Spent ε = 1 of 1; remaining 0." in out


def test_demo_is_reproducible_with_a_seed_and_secure_without():
    assert run("demo", "--seed", "5").stdout == run("demo", "--seed", "5").stdout
    assert "secure noise" in run("demo").stdout


def test_help_and_bad_command():
    assert "demo" in run("--help").stdout
    bad = run("nope")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


# -- python -m pandas_dp release SPEC.toml ------------------------------------------------------------

SPEC = """
seed = 3
[budget]
epsilon = 2.0
ledger = "ledger.sqlite"
[input]
path = "persons.csv"
[output]
dir = "released"
format = "{fmt}"
[[release]]
name = "ages"
method = "identity"
columns = "age"
bins = [0, 18, 30, 50, 65, 120]
epsilon = 0.5
[[release]]
name = "state_age"
method = "dpcube"
columns = ["state", "age"]
categories = {{state = ["Avalon", "Borealis", "Cascadia", "Dunmore", "Estoria"]}}
bins = {{age = [0, 25, 50, 75, 100]}}
epsilon = 0.3
[[release]]
name = "income"
method = "hierarchical"
columns = "income"
bins = 64
range = [0, 512000]
branching = 4
epsilon = 0.4
[[release]]
name = "households"
method = "count_of_counts"
group = "household_id"
location = ["state", "county"]
groups = "households.csv"
max_size = 16
epsilon = 0.5
[[release]]
name = "sizes"
method = "unattributed"
group = "household_id"
epsilon = 0.3
"""


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    from pandas_dp.data import load_households, load_persons

    d = tmp_path_factory.mktemp("etl")
    load_persons().to_csv(d / "persons.csv", index=False)
    load_households().to_csv(d / "households.csv", index=False)
    return d


def _ledger_rows(path: Path) -> int:
    if not path.exists():
        return 0
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT COUNT(*) FROM charges").fetchone()[0]


def _spec(workdir: Path, name: str, text: str) -> Path:
    sub = workdir / name
    sub.mkdir()
    for f in ("persons.csv", "households.csv"):
        (sub / f).symlink_to(workdir / f)
    (sub / "spec.toml").write_text(text)
    return sub


def test_release_writes_tables_manifest_and_ledger(workdir):
    d = _spec(workdir, "ok", SPEC.format(fmt="csv"))
    done = run("release", str(d / "spec.toml"))
    assert done.returncode == 0, done.stderr
    manifest = json.loads((d / "released" / "manifest.json").read_text())
    import pandas_dp

    assert manifest["version"] == pandas_dp.__version__ and manifest["budget"]["spent"] == 2.0
    assert manifest["complete"] is True and manifest["seeded"] is True
    assert [r["name"] for r in manifest["releases"]] == ["ages", "state_age", "income", "households", "sizes"]
    assert [r["method"] for r in manifest["releases"]] == ["identity", "dpcube", "hierarchical", "hc", "sbar"]
    assert [r["ledger_id"] for r in manifest["releases"]] == [1, 2, 3, 4, 5]
    assert [r["epsilon"] for r in manifest["releases"]] == [0.5, 0.3, 0.4, 0.5, 0.3]
    assert manifest["releases"][2]["parameters"]["branching"] == 4
    ages = pd.read_csv(d / "released" / "ages.csv")
    assert list(ages.columns) == ["age_low", "age_high", "estimate", "variance", "std_error"]
    assert ages["age_low"].tolist() == [0, 18, 30, 50, 65]
    grid = pd.read_csv(d / "released" / "state_age.csv")
    assert len(grid) == 5 * 4 and list(grid.columns[:3]) == ["state", "age_low", "age_high"]
    coc = pd.read_csv(d / "released" / "households.csv")
    households = pd.read_csv(d / "households.csv")
    assert coc.loc[coc["level"] == "national", "groups"].sum() == len(households)  # public totals matched
    assert _ledger_rows(d / "ledger.sqlite") == 5
    # The ledger is spent: a second run is refused before reading anything, and charges nothing.
    again = run("release", str(d / "spec.toml"))
    assert again.returncode == 2 and "left" in again.stderr and _ledger_rows(d / "ledger.sqlite") == 5


def test_release_parquet_output(workdir):
    pytest.importorskip("pyarrow")
    d = _spec(workdir, "pq", SPEC.format(fmt="parquet"))
    done = run("release", str(d / "spec.toml"))
    assert done.returncode == 0, done.stderr
    ages = pd.read_parquet(d / "released" / "ages.parquet")
    assert len(ages) == 5


BAD = """
colour = "red"
[budget]
epsilon = 0.5
[input]
path = "persons.csv"
[[release]]
method = "identty"
columns = "age"
epsilon = 0.2
[[release]]
name = "b"
method = "ahp"
columns = "age"
bins = 10
range = [0, 100]
wat = 1
[[release]]
name = "c"
method = "identity"
columns = "age"
epsilon = 0.6
"""


def test_invalid_spec_lists_every_problem_and_touches_nothing(workdir):
    d = _spec(workdir, "bad", BAD)
    (d / "persons.csv").unlink()  # proof that nothing is read: the input does not even exist
    done = run("release", str(d / "spec.toml"))
    assert done.returncode == 2
    err = done.stderr
    for phrase in ("Unknown top-level key 'colour'", "unknown method 'identty'", "unknown key 'wat'",
                   "missing 'epsilon'", "above the budget"):
        assert phrase in err, err
    assert not (d / "released").exists() and not (d / "ledger.sqlite").exists()


def test_bad_domains_and_knobs_are_caught_before_reading(workdir):
    spec = """
[budget]
epsilon = 1.0
[input]
path = "missing.csv"
[[release]]
name = "a"
method = "identity"
columns = "age"
bins = [0, 10, 5]
epsilon = 0.2
[[release]]
name = "b"
method = "ahp"
columns = "age"
bins = 10
range = [0, 100]
eta = -1
epsilon = 0.2
[[release]]
name = "c"
method = "identity"
columns = "income"
bins = 10
epsilon = 0.2
"""
    d = _spec(workdir, "domains", spec)
    done = run("release", str(d / "spec.toml"))
    assert done.returncode == 2
    assert "strictly increasing" in done.stderr and "'eta'" in done.stderr and "range=" in done.stderr
    assert "missing.csv" not in done.stderr  # validation came first
    check = run("release", "--check", str(d / "spec.toml"))
    assert check.returncode == 2


def test_missing_column_stops_before_any_charge(workdir):
    spec = SPEC.format(fmt="csv").replace('columns = "income"', 'columns = "salary"')
    d = _spec(workdir, "column", spec)
    done = run("release", str(d / "spec.toml"))
    assert done.returncode == 2 and "'salary'" in done.stderr and "not in the input" in done.stderr
    assert _ledger_rows(d / "ledger.sqlite") == 0 and not (d / "released" / "ages.csv").exists()


def test_check_mode_and_help(workdir):
    d = _spec(workdir, "check", SPEC.format(fmt="csv"))
    done = run("release", "--check", str(d / "spec.toml"))
    assert done.returncode == 0 and "is valid" in done.stdout
    assert not (d / "released").exists() and not (d / "ledger.sqlite").exists()
    assert "TOML spec" in run("release", "--help").stdout
    assert "--seed" in run("demo", "--help").stdout
    assert "release" in run("--help").stdout
