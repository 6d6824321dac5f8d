"""``rho=`` for DAWA (issue 28, item 3): exact charges, Dask, neighbours, the command line.

The algorithms' zCDP sides (discrete Gaussian on DAWA's bucket hierarchy and
on the grids' disjoint cells; DAWA's partition pure at ``epsilon_1`` charged
``epsilon_1**2 / 2``) are tested in ``tests/algorithms/test_dawa.py`` and
``tests/algorithms/test_grids.py``; their privacy with ``assert_dp`` (and a
sigma-too-small twin caught) in ``tests/algorithms/test_adaptive_zcdp_privacy.py``
(slow). Here: through ``histogram(method="dawa", rho=...)``; UGrid and AGrid
are registered for ``rho=`` once the privacy suite has their 2-D rho cases,
until then they refuse it.
"""

from __future__ import annotations

import json
import sqlite3
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.releases.histogram import METHODS

from _cli import run

RNG = np.random.default_rng(28)
FRAME = pd.DataFrame({"x": np.r_[RNG.integers(0, 8, 150), RNG.integers(20, 24, 250)],
                      "y": np.r_[RNG.integers(0, 4, 150), RNG.integers(10, 16, 250)]})
ONE = dict(bins=32, range=(0, 32))
TWO = dict(bins=[32, 16], range=[(0, 32), (0, 16)])
CASES = {"dawa-1d": ("dawa", "x", ONE), "dawa-2d": ("dawa", ["x", "y"], TWO)}


def _release(frame, case, rho=Fraction(1, 4), seed=5):
    method, cols, domain = CASES[case]
    return frame.dp.histogram(cols, **domain, method=method, rho=rho, rng=np.random.default_rng(seed))


def test_the_registry_says_dawa_takes_rho_and_the_grids_not_yet():
    takes = {name for name, spec in METHODS.items() if "zcdp" in spec.measures}
    assert "dawa" in takes and not {"ugrid", "agrid"} & takes
    with pdp.budget(rho=1) as b:
        with pytest.raises(pdp.ParameterError, match="method='agrid' supports the 'pure' measure only"):
            FRAME.dp.histogram(["x", "y"], **TWO, method="agrid", rho=0.25)
    assert b.spent_exact == 0


@pytest.mark.parametrize("case", list(CASES))
def test_rho_release_charges_exactly_rho_and_names_its_losses(case):
    with pdp.budget(rho=1) as b:
        h = _release(FRAME, case)
    assert b.spent_exact == Fraction(1, 4) and h.measure == "zcdp" and h.rho == 0.25 and h.epsilon is None
    assert h.params["noise"] == "discrete Gaussian" and "rho=0.25 (zCDP)" in repr(h).splitlines()[0]
    assert "ρ = 0.25 (zCDP)" in h._repr_html_()
    p = h.params
    eps1 = Fraction(p["partition_epsilon"])
    assert Fraction(p["partition_rho"]) == eps1 ** 2 / 2 and "strategy_epsilon" not in p
    assert Fraction(p["partition_rho"]) + Fraction(p["strategy_rho"]) == Fraction(1, 4)
    ratio = Fraction(1, 4) if case == "dawa-1d" else Fraction(1, 2)
    assert eps1 ** 2 / 2 <= ratio * Fraction(1, 4) < (eps1 + Fraction(1, 2 ** 40)) ** 2 / 2


def test_pure_releases_keep_their_epsilon_names():
    with pdp.budget(epsilon=1):
        d = FRAME.dp.histogram("x", **ONE, method="dawa", epsilon=0.5, rng=np.random.default_rng(1))
    assert "strategy_epsilon" in d.params and "partition_rho" not in d.params and "strategy_rho" not in d.params


@pytest.mark.parametrize("case", ["dawa-2d"])
def test_dask_gives_the_same_release(case):
    dd = pytest.importorskip("dask.dataframe")
    import dask

    with pdp.budget(rho=1), dask.config.set(scheduler="synchronous"):
        a = _release(FRAME, case)
        b = _release(dd.from_pandas(FRAME, npartitions=2), case)
    np.testing.assert_array_equal(a.counts.to_numpy(), b.counts.to_numpy())


NEIGHBOURS = {"added in domain": pd.concat([FRAME, pd.DataFrame({"x": [3], "y": [2]})], ignore_index=True),
              "added out of domain": pd.concat([FRAME, pd.DataFrame({"x": [99], "y": [-7]})], ignore_index=True),
              "removed": FRAME.iloc[1:]}


def _outcome(frame, case):
    with warnings.catch_warnings(record=True) as caught, pdp.budget(rho=1) as b:
        warnings.simplefilter("always")
        try:
            h = _release(frame, case)
            result = (type(h).__name__, h.domain.shape, sorted(h.params))
        except Exception as e:                              # pragma: no cover - the test says which
            result = (type(e).__name__, str(e))
    return result, b.spent_exact, [str(w.message) for w in caught]


@pytest.mark.parametrize("case", ["dawa-1d"])
def test_neighbouring_frames_see_the_same_outcome_charge_and_warnings(case):
    base = _outcome(FRAME, case)
    assert base[0][0] == "DAWAHistogram" and base[1] == Fraction(1, 4) and base[2] == []
    for name, frame in NEIGHBOURS.items():
        assert _outcome(frame, case) == base, name


@pytest.mark.parametrize("case", ["dawa-1d"])
def test_a_rho_too_small_is_refused_before_any_charge(case):
    with pdp.budget(rho=1) as b:
        with pytest.raises(pdp.ParameterError, match="rho"):
            _release(FRAME, case, rho=Fraction(1, 2 ** 100))
    assert b.spent_exact == 0 and b.ledger.empty


SPEC = """
seed = 3
[budget]
rho = 1.0
ledger = "ledger.sqlite"
[input]
path = "data.csv"
[output]
dir = "released"
format = "csv"
[[release]]
name = "line"
method = "dawa"
columns = "x"
bins = 32
range = [0, 32]
rho = 0.25
[[release]]
name = "map"
method = "dawa"
columns = ["x", "y"]
bins = [32, 16]
range = [[0, 32], [0, 16]]
ratio = 0.25
rho = 0.5
"""


def test_the_command_line_takes_rho_for_them(tmp_path):
    FRAME.to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "spec.toml").write_text(SPEC)
    pdp.Ledger.create(tmp_path / "ledger.sqlite")
    done = run("release", str(tmp_path / "spec.toml"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "released" / "manifest.json").read_text())
    assert [r["rho"] for r in manifest["releases"]] == [0.25, 0.5]
    with sqlite3.connect(tmp_path / "ledger.sqlite") as conn:
        assert conn.execute("SELECT spent FROM pandas_dp_budgets WHERE name = 'default'").fetchone() == ("3/4",)
