"""The Gaussian sides of AGrid and DAWA (issue 28, item 3) meet their zCDP claim, and a sigma-too-small twin is caught.

As ``tests/releases/test_zcdp_releases.py`` does for the identity and tree releases:
batched twins (10^5 runs a second) that equal the library for the same seed,
checked with ``assert_dp`` at the (epsilon, delta) their rho converts to, and
the same twins calibrated with a rho 1.69x too large (sigma 30% too small)
must fail.

* AGrid (the algorithm, as ``histogram(method="agrid", rho=...)`` runs it) on a
  4 x 4 domain with a public total: both levels are capped at one
  atom per (sub-)cell, so the release is two discrete Gaussian measurements of
  the 16 atoms at rho / 2 each (L2 sensitivity 1 per level).
* DAWA's stage 2 given a partition (stage 1 is the pure partition, unchanged
  and tested by the pure suite): the weighted bucket hierarchy chosen at unit
  L2 sensitivity, each level at its rho share ``w_l**2 / sum w**2``.

End to end, ``histogram(method="dawa" | "ugrid" | "agrid", rho=...)`` is run by the privacy suite
(``tests/test_privacy_mechanisms.py`` takes every method the registry marks ``zcdp``).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from pandas_dp.algorithms.dawa import runs as dr
from pandas_dp.algorithms.dawa.strategy import answer_hierarchy, choose_strategy
from pandas_dp.algorithms.grids import agrid, plan_agrid
from pandas_dp.domain.grid import make_grid
from pandas_dp.engines.pandas.counts import bin_counts
from pandas_dp.privacy.loss import ZCDP, zcdp
from pandas_dp.testing import assert_dp, neighbours

D = pd.DataFrame({"x": [0, 1, 1, 2, 3, 3, 3, 0], "y": [0, 0, 1, 3, 3, 3, 2, 0]})
BINS2 = [[0, 1, 2, 3, 4], [0, 1, 2, 3, 4]]
GRID2 = make_grid(D, ["x", "y"], bins=BINS2)
NEIGHBOUR2 = {n.name: n for n in neighbours(D, ["x", "y"], bins=BINS2)}["add to largest cell"]
EDGES1 = list(range(9))
D1 = pd.DataFrame({"x": [0, 1, 1, 2, 3, 3, 3, 5]})
GRID1 = make_grid(D1, ["x"], bins=EDGES1)
NEIGHBOUR1 = {n.name: n for n in neighbours(D1, "x", bins=EDGES1)}["add to largest cell"]
BUCKETS = np.array([0, 2, 3, 5, 8])           # a fixed partition of the 8 bins into 4 buckets

RHO = Fraction(1, 4)
DELTA = 1e-2
BROKEN = Fraction(169, 100)                   # rho 1.69x too large: sigma / 1.3
POWER_TRIALS = 200_000


def agrid_twin(rho: Fraction):
    """The two noisy levels of ``histogram(["x", "y"], method="agrid", expected_total=8, rho=rho)``."""
    plan = plan_agrid((4, 4), loss=ZCDP(rho), expected_total=8)
    noise1, noise2 = plan.level_noise

    def mech(df: pd.DataFrame, rng: np.random.Generator, n: int) -> np.ndarray:
        x = bin_counts(df, GRID2).reshape(-1)
        return np.hstack([x + noise1.sample((n, 16), rng), x + noise2.sample((n, 16), rng)])
    return mech


def public_agrid(rho: Fraction, seed: int) -> np.ndarray:
    """:func:`agrid` on the exact counts (``histogram(method="agrid", rho=...)`` runs it so)."""
    plan = plan_agrid((4, 4), loss=ZCDP(rho), expected_total=8)
    d = agrid(bin_counts(D, GRID2).reshape(4, 4), plan, rng=np.random.default_rng(seed))
    assert d.grid_shape == (4, 4) and int(d.sub_shape.max()) == 1
    return np.concatenate([d.cell_counts.ravel(), d.sub_counts])


def _strategy():
    query, lo, hi, m = dr.workload_runs("prefix", (8,))
    return choose_strategy(dr.bucket_runs(query, lo, hi, BUCKETS, m), measure="zcdp")


def dawa_stage2_twin(rho: Fraction):
    """DAWA's stage 2 on the fixed partition ``BUCKETS`` at ``rho``: every asked level's noisy node sums."""
    strategy = _strategy()
    losses = ZCDP(rho).split(list(strategy.shares))
    layout = strategy.layout
    noises = [losses[k].noise() if strategy.shares[k] else None for k in range(layout.n_levels)]

    def mech(df: pd.DataFrame, rng: np.random.Generator, n: int) -> np.ndarray:
        level = np.add.reduceat(bin_counts(df, GRID1).reshape(-1), BUCKETS[:-1])
        out = []
        for k, noise in enumerate(noises):
            if k > 0:
                level = layout.aggregate(level, k - 1)
            if noise is not None:
                out.append(level + noise.sample((n, level.size), rng))
        return np.hstack(out)
    return mech


def library_stage2(rho: Fraction, seed: int) -> np.ndarray:
    buckets = np.add.reduceat(bin_counts(D1, GRID1).reshape(-1), BUCKETS[:-1])
    a = answer_hierarchy(buckets, _strategy(), loss=ZCDP(rho), rng=np.random.default_rng(seed))
    return np.concatenate([v for v in a.noisy if v is not None])


TWINS = {"agrid": (agrid_twin, public_agrid, D, NEIGHBOUR2), "dawa stage 2": (dawa_stage2_twin, library_stage2, D1,
                                                                              NEIGHBOUR1)}


@pytest.mark.parametrize("name", list(TWINS))
@pytest.mark.parametrize("rho", [RHO, RHO * BROKEN], ids=["correct", "broken"])
def test_the_twins_are_the_library(name, rho):
    twin, library, frame, _ = TWINS[name]
    for seed in (3, 4):
        np.testing.assert_array_equal(twin(rho)(frame, np.random.default_rng(seed), 1)[0], library(rho, seed))


def test_the_dawa_twin_asks_several_levels():
    # Columns with several non-zeros: the L2 calibration is exercised, not a flat identity.
    shares = _strategy().shares
    assert sum(1 for s in shares if s) >= 2 and sum(shares) == 1


@pytest.mark.slow
@pytest.mark.parametrize("name", list(TWINS))
def test_correct_twin_passes_and_sigma_30_percent_too_small_is_caught(name):
    twin, _, frame, neighbour = TWINS[name]
    epsilon = zcdp(RHO).epsilon_delta(DELTA)
    ok = assert_dp(twin(RHO), frame, neighbour, epsilon=epsilon, delta=DELTA, trials=POWER_TRIALS, vectorized=True,
                   rng=0)
    assert ok.passed and ok.epsilon_lower_bound < epsilon
    bad = assert_dp(twin(RHO * BROKEN), frame, neighbour, epsilon=epsilon, delta=DELTA, trials=POWER_TRIALS,
                    vectorized=True, rng=0, raises=False)
    assert not bad.passed and bad.epsilon_lower_bound > epsilon
