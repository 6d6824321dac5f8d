"""The command line, run as a subprocess the way users run it."""

from __future__ import annotations

import subprocess
import sys


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
