"""``quantiles`` picks its mechanism from public inputs; the exponential mechanisms' releases are DP.

Neighbours that stress them: one more row on the edge between two grid steps (where it flips which
candidate it counts below), and one more unit of many rows (``max_rows`` of them kept, all at one end, so
every score moves by its full sensitivity). The default run checks each exponential mechanism on one
neighbour at QUICK_TRIALS runs; the slow run adds the units and the zCDP claim (``eps = sqrt(8 rho)``).
"""

from __future__ import annotations

import inspect
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
import pandas_dp.releases.quantile_mechanisms as rule
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import PureDP, zcdp
from pandas_dp.testing import assert_dp
from _slow import QUICK_TRIALS, SLOW_TRIALS

D = pd.DataFrame({"x": [1.0, 2.0, 2.0, 3.0, 7.0, 8.0], "u": [1, 1, 2, 3, 3, 4]})
#: One more row exactly between two grid values of (0, 10) (the edge of two candidates' steps).
D_ROW = pd.concat([D, pd.DataFrame({"x": [5.0 + 10 / 4096 / 2], "u": [9]})], ignore_index=True)
#: One more unit with three rows beyond the bound (two kept with max_rows=2, both at the top).
D_UNIT = pd.concat([D, pd.DataFrame({"x": [50.0] * 3, "u": [9] * 3})], ignore_index=True)
#: More distinct q's than the recursion takes: the tree.
MANY = list(np.round(np.linspace(0.01, 0.99, rule.MAX_RECURSIVE_Q + 1), 6))


def _release(q, privacy, **kw):
    return lambda df, rng: df.dp.quantiles("x", q, bounds=(0, 10), rng=rng, **privacy, **kw)


def _estimates(r):
    return np.round(r.to_frame()["estimate"].to_numpy(dtype=float), 6)


# ------------------------------------------------------------------------ the rule

def test_the_rule_reads_public_inputs_only():
    assert list(inspect.signature(rule.choose_mechanism).parameters) == ["n_q", "loss", "steps", "max_rows"]
    rng = np.random.default_rng(0)
    frames = [pd.DataFrame({"x": rng.normal(5, s, 500)}) for s in (0.1, 1.0, 30.0)]
    for q in ([0.5], [0.1, 0.5, 0.9], MANY):
        seen = set()
        for frame in frames:
            with pdp.budget(epsilon=1.0):
                seen.add(frame.dp.quantiles("x", q, bounds=(0, 10), epsilon=1.0).params["mechanism"])
        assert len(seen) == 1, q
    assert rule.choose_mechanism(1, PureDP(Fraction(1)), 4097, 1) == "recursive exponential"
    assert rule.choose_mechanism(len(MANY), PureDP(Fraction(1)), 4097, 1) == "tree"


def test_an_exponential_release_has_no_interval_and_only_its_q_s():
    with pdp.budget(epsilon=1.0):
        r = D.dp.quantiles("x", [0.75, 0.25], bounds=(0, 10), epsilon=1.0, rng=np.random.default_rng(1))
    frame = r.to_frame()
    assert list(frame.index) == [0.75, 0.25] and frame[["ci_low", "ci_high", "confidence_level"]].isna().all().all()
    assert r.histogram is None and r.params["depth"] == 2
    assert r.quantile(0.25) == frame.loc[0.25, "estimate"]
    pd.testing.assert_frame_equal(r.quantile([0.25, 0.75], confidence_level=0.9), frame.loc[[0.25, 0.75]])
    with pytest.raises(ParameterError, match="only"):
        r.quantile(0.5)
    assert frame.loc[0.25, "estimate"] <= frame.loc[0.75, "estimate"]


def test_many_q_s_keep_the_tree_and_its_seeded_output():
    with pdp.budget(epsilon=1.0):
        r = D.dp.quantiles("x", MANY, bounds=(0, 10), epsilon=1.0, rng=np.random.default_rng(1))
    assert r.params["mechanism"] == rule.MECHANISMS["tree"] and r.histogram is not None
    assert r.to_frame()[["ci_low", "ci_high"]].notna().all().all()


# ------------------------------------------------------------------------ privacy on neighbouring frames

@pytest.mark.parametrize("q", [[0.5], pytest.param([0.25, 0.5, 0.75], marks=pytest.mark.slow)],
                         ids=["one q", "recursive"])
def test_exponential_quantiles_are_dp_for_one_more_row_at_a_step_edge(q):
    """The recursive one's quick check is tests/releases/test_quantiles.py's (its three q's run it)."""
    report = assert_dp(_release(q, {"epsilon": 1.0}), D, D_ROW, epsilon=1.0, trials=QUICK_TRIALS,
                       statistic=_estimates, rng=47)
    assert report.charged_per_run == 1.0


@pytest.mark.slow
@pytest.mark.parametrize("q", [[0.5], [0.25, 0.5, 0.75]], ids=["one q", "recursive"])
def test_exponential_quantiles_are_dp_for_whole_units(q):
    report = assert_dp(_release(q, {"epsilon": 1.0}, privacy_unit="u", max_rows=2), D, D_UNIT, epsilon=1.0,
                       trials=SLOW_TRIALS, statistic=_estimates, rng=48)
    assert report.charged_per_run == 1.0


@pytest.mark.slow
@pytest.mark.parametrize("q", [[0.5], [0.25, 0.5, 0.75]], ids=["one q", "recursive"])
def test_exponential_quantiles_meet_their_zcdp_claim(q):
    delta = 1e-2
    report = assert_dp(_release(q, {"rho": 0.5}, privacy_unit="u", max_rows=2), D, D_UNIT,
                       epsilon=zcdp(0.5).epsilon_delta(delta), delta=delta, trials=SLOW_TRIALS,
                       statistic=_estimates, budget={"rho": 10**6}, rng=49)
    assert report.charged_per_run == 0.5


@pytest.mark.slow
def test_the_tree_is_dp_for_one_more_row_at_a_step_edge():
    report = assert_dp(_release(MANY, {"epsilon": 1.0}), D, D_ROW, epsilon=1.0, trials=SLOW_TRIALS,
                       statistic=lambda r: _estimates(r)[::8], rng=50)
    assert report.charged_per_run == 1.0
