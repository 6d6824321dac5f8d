"""``python -m pandas_dp release`` with key discovery: ``[budget] delta`` and ``categories = "discover"``.

The spec's deltas are checked before any charge (a budget without delta, or too small, is refused
with exit status 2); the run reserves the epsilon and the delta of the whole spec, writes the
released labels, and the ledger records the delta exactly.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd

import pandas_dp as pdp
from _cli import run

SPEC = """
seed = 3
[budget]
epsilon = 2.0
{budget_delta}
ledger = "ledger.sqlite"
[input]
path = "visits.csv"
[output]
dir = "released"
format = "csv"
[[release]]
name = "pages"
method = "identity"
columns = "page"
categories = "discover"
privacy_unit = "user"
max_cells = 2
max_rows_per_cell = 1
epsilon = 1.0
delta = 1e-6
"""


def _workdir(tmp_path: Path, budget_delta: str) -> Path:
    rng = np.random.default_rng(0)
    pd.DataFrame({"page": np.repeat(["home", "news", "shop", "rare"], [400, 300, 120, 1]),
                  "user": rng.permutation(821)}).to_csv(tmp_path / "visits.csv", index=False)
    (tmp_path / "spec.toml").write_text(SPEC.format(budget_delta=budget_delta))
    pdp.Ledger.create(tmp_path / "ledger.sqlite")
    return tmp_path


def test_a_discovery_spec_reserves_and_records_its_delta(tmp_path):
    d = _workdir(tmp_path, "delta = 1e-5")
    done = run("release", str(d / "spec.toml"), cwd=d)
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(d / "released" / "pages.csv")
    assert list(table["page"]) == ["home", "news", "shop"]  # sorted; the one-row label is below the threshold
    manifest = json.loads((d / "released" / "manifest.json").read_text())
    assert manifest["releases"][0]["loss"]["delta"] == "1/1000000"
    assert manifest["budget"]["delta"] == 1e-5 and manifest["budget"]["delta_spent"] == 1e-6
    b = pdp.budget(epsilon=2.0, delta=1e-5, ledger=d / "ledger.sqlite", name="default")
    assert b.spent_exact == 1 and b.delta_spent_exact == Fraction(1, 10**6)
    pdp.Ledger.open(d / "ledger.sqlite").verify()


def test_a_discovery_spec_without_enough_budget_delta_is_refused_before_any_charge(tmp_path):
    d = _workdir(tmp_path, "")
    done = run("release", str(d / "spec.toml"), cwd=d)
    assert done.returncode == 2 and "Give [budget] delta" in done.stderr, done.stderr
    assert pdp.Ledger.open(d / "ledger.sqlite").verify().entries == 0
