"""``rho=`` for DAWA, UGrid and AGrid (issue 28, item 3): exact charges, Dask, neighbours, the command line.

The algorithms' zCDP sides (discrete Gaussian on DAWA's bucket hierarchy and
on the grids' disjoint cells; DAWA's partition pure at ``epsilon_1`` charged
``epsilon_1**2 / 2``) are tested in ``tests/algorithms/test_dawa.py`` and
``tests/algorithms/test_grids.py``; their privacy with ``assert_dp`` (and a
sigma-too-small twin caught) in ``tests/algorithms/test_adaptive_zcdp_privacy.py``
(slow), and end to end in ``tests/test_privacy_mechanisms.py`` (the registry's
``zcdp`` methods: DAWA in 1-D, the grids in 2-D). Here: through
``histogram(method=..., rho=...)``: the charge, the loss names, the grids'
variances and sizes against the formulas of :mod:`pandas_dp.algorithms.grids`.
"""

from __future__ import annotations

import json
import math
import sqlite3
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.algorithms import grids
from pandas_dp.domain.grid import make_grid
from pandas_dp.engines.pandas.counts import bin_counts
from pandas_dp.noise.discrete_gaussian import discrete_gaussian_variance
from pandas_dp.privacy.loss import ZCDP
from pandas_dp.releases.methods import METHODS

from _cli import run

RNG = np.random.default_rng(28)
FRAME = pd.DataFrame({"x": np.r_[RNG.integers(0, 8, 150), RNG.integers(20, 24, 250)],
                      "y": np.r_[RNG.integers(0, 4, 150), RNG.integers(10, 16, 250)]})
ONE = dict(bins=32, range=(0, 32))
TWO = dict(bins=[32, 16], range=[(0, 32), (0, 16)])
CASES = {"dawa-1d": ("dawa", "x", ONE), "dawa-2d": ("dawa", ["x", "y"], TWO), "ugrid": ("ugrid", ["x", "y"], TWO),
         "agrid": ("agrid", ["x", "y"], TWO)}


def _release(frame, case, rho=Fraction(1, 4), seed=5, **kw):
    method, cols, domain = CASES[case]
    return frame.dp.histogram(cols, **domain, method=method, rho=rho, rng=np.random.default_rng(seed), **kw)


def test_the_registry_says_dawa_and_the_grids_take_rho():
    takes = {name for name, spec in METHODS.items() if "zcdp" in spec.measures}
    assert {"dawa", "ugrid", "agrid"} <= takes and not {"ahp", "dpcube"} & takes


@pytest.mark.parametrize("case", ["dawa-1d", "dawa-2d"])
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


@pytest.mark.parametrize("case", ["dawa-2d", "agrid"])
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


@pytest.mark.parametrize("case", ["dawa-1d", "ugrid", "agrid"])
def test_neighbouring_frames_see_the_same_outcome_charge_and_warnings(case):
    base = _outcome(FRAME, case)
    kind = "DAWAHistogram" if case.startswith("dawa") else "GridHistogram"
    assert base[0][0] == kind and base[1] == Fraction(1, 4) and base[2] == []
    for name, frame in NEIGHBOURS.items():
        assert _outcome(frame, case) == base, name


@pytest.mark.parametrize("case", ["dawa-1d", "agrid"])
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
[[release]]
name = "grid"
method = "agrid"
columns = ["x", "y"]
bins = [32, 16]
range = [[0, 32], [0, 16]]
expected_total = 400
rho = 0.125
"""


def test_the_command_line_takes_rho_for_them(tmp_path):
    FRAME.to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "spec.toml").write_text(SPEC)
    pdp.Ledger.create(tmp_path / "ledger.sqlite")
    done = run("release", str(tmp_path / "spec.toml"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "released" / "manifest.json").read_text())
    assert [r["rho"] for r in manifest["releases"]] == [0.25, 0.5, 0.125]
    with sqlite3.connect(tmp_path / "ledger.sqlite") as conn:
        assert conn.execute("SELECT spent FROM pandas_dp_budgets WHERE name = 'default'").fetchone() == ("7/8",)


# ----------------------------------------------------------------------------------------- the grids

def _dg(rho: Fraction) -> float:
    """The exact variance of the discrete Gaussian a disjoint-count level gets at ``rho``."""
    return discrete_gaussian_variance(1 / (2 * rho))


def _exact_counts() -> np.ndarray:
    return bin_counts(FRAME, make_grid(FRAME, ["x", "y"], **TWO)).reshape(32, 16)


@pytest.mark.parametrize("case", ["ugrid", "agrid"])
@pytest.mark.parametrize("expected_total", [None, 400])
def test_grid_rho_release_charges_rho_once_and_names_every_loss_by_rho(case, expected_total):
    kw = {} if expected_total is None else {"expected_total": expected_total}
    with pdp.budget(rho=1) as b:
        h = _release(FRAME, case, **kw)
    assert b.spent_exact == Fraction(1, 4) and len(b.ledger) == 1 and b.ledger.loc[0, "measure"] == "zcdp"
    assert h.rho == 0.25 and h.epsilon is None and h.params["noise"] == "discrete Gaussian"
    p = h.params
    assert not {"total_epsilon", "level_epsilons"} & set(p)
    counting = Fraction(1, 4) if expected_total else Fraction(19, 80)      # total_share 1/20 of rho, or nothing
    assert p["total_rho"] == (None if expected_total else "1/80") and p["total_is_noisy"] == (not expected_total)
    assert p["level_rhos"] == ([str(counting)] if case == "ugrid" else [str(counting / 2)] * 2)
    assert sum(map(Fraction, p["level_rhos"])) + Fraction(p["total_rho"] or 0) == Fraction(1, 4)
    if expected_total:
        assert p["total"] == 400


def test_ugrid_rho_sizes_and_variances_are_the_formulas():
    # Public total 400, rho 1/4: sigma**2 = 2, size epsilon sqrt(2 / Var) = 1 (to 1e-15), m = ceil(sqrt(40)) = 7;
    # every atom of a cell of a atoms has variance Var / a**2.
    with pdp.budget(rho=1):
        h = _release(FRAME, "ugrid", expected_total=400)
    var = _dg(Fraction(1, 4))
    assert var == pytest.approx(2.0, rel=1e-12) and h.params["size_epsilons"] == [math.sqrt(2 / var)]
    assert h.params["grid_shape"] == [7, 7] == [grids.ugrid_size(400, math.sqrt(2 / var))] * 2
    rows, cols = np.diff(grids.axis_edges(32, 7)), np.diff(grids.axis_edges(16, 7))
    want = var / np.outer(rows, cols) ** 2
    np.testing.assert_array_equal(h.variance.to_numpy().reshape(32, 16),
                                  np.repeat(np.repeat(want, rows, axis=0), cols, axis=1))
    assert h.variance.to_numpy()[0] == var / 64                                  # a 4 x 2 cell
    plan = grids.plan_ugrid((32, 16), loss=ZCDP(Fraction(1, 4)), expected_total=400)
    ref = grids.ugrid(_exact_counts(), plan, rng=np.random.default_rng(5))
    np.testing.assert_array_equal(h.counts.to_numpy(), ref.estimates.ravel())    # the algorithm, same draws


def test_agrid_rho_levels_and_inference_are_the_formulas():
    # Noisy total: rho 1/80; levels 19/160 each (sigma**2 = 80/19); first level sized with the whole counting
    # rho (sigma**2 = 40/19), the second with the level-2 noise; per cell, P = 1 / (1/s1 + 1/(J s2)).
    with pdp.budget(rho=1):
        h = _release(FRAME, "agrid")
    plan = grids.plan_agrid((32, 16), loss=ZCDP(Fraction(1, 4)))
    ref = grids.agrid(_exact_counts(), plan, rng=np.random.default_rng(5))
    np.testing.assert_array_equal(h.counts.to_numpy(), ref.estimates.ravel())
    s1 = s2 = _dg(Fraction(19, 160))
    assert h.detail.noise_variances == (s1, s2)
    assert h.params["size_epsilons"] == [math.sqrt(2 / _dg(Fraction(19, 80))), math.sqrt(2 / s2)]
    m1 = grids.agrid_first_size(h.params["total"], h.params["size_epsilons"][0])
    assert h.params["grid_shape"] == [m1, m1] == [10, 10]
    cells = h.grid
    j = (cells["sub_rows"] * cells["sub_cols"]).to_numpy(float)
    np.testing.assert_allclose(cells["variance"], 1 / (1 / s1 + 1 / (j * s2)), rtol=1e-14)
    want_m2 = grids.agrid_second_size(cells["noisy_count"].to_numpy(), math.sqrt(2 / s2))
    assert (cells["sub_rows"].to_numpy() == np.minimum(want_m2, cells["row_hi"] - cells["row_lo"])).all()


def test_intervals_read_the_level_noise_with_the_heaviest_tail():
    # alpha 9/10 at rho 1: level 1 gets sigma**2 = 5/9 (below 2: the sub-Gaussian radius), level 2 sigma**2 = 5;
    # the estimates mix both, so the radius must be level 1's (the larger).
    with pdp.budget(rho=1):
        h = _release(FRAME, "agrid", rho=1, alpha=0.9, expected_total=400)
    n1, n2 = h.detail.plan.level_noise
    assert (n1.sigma2, n2.sigma2) == (Fraction(5, 9), Fraction(5)) and h.noise == n1
    assert n1.tail_factor(0.95) > n2.tail_factor(0.95)
    ci = h.confidence_interval()
    assert np.isfinite(ci.to_numpy()).all() and (ci["lower"] <= h.counts.clip(lower=0) + 1e-9).all()


@pytest.mark.parametrize("case", ["ugrid", "agrid"])
def test_privacy_units_run_each_level_at_rho_over_k_squared(case):
    # Group privacy: with max_rows = 3 every level is calibrated to L2 = 3 (a cell can hold all three rows),
    # sigma**2 = 9 / (2 rho_level); the whole rho is charged once.
    frame = FRAME.assign(u=np.arange(len(FRAME)) // 2)
    with pdp.budget(rho=1) as b:
        h = _release(frame, case, expected_total=400, privacy_unit="u", max_rows=3)
    assert b.spent_exact == Fraction(1, 4) and len(b.ledger) == 1
    parts = [Fraction(1, 4)] if case == "ugrid" else [Fraction(1, 8)] * 2
    assert [n.sigma2 for n in h.detail.plan.level_noise] == [9 / (2 * r) for r in parts]
    assert h.params["sensitivity_per_level"] == {"l1": "3", "l2_squared": "9"} and h.params["max_rows"] == 3
