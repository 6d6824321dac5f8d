"""``df.dp.marginals``'s default plan: no table worse than its own ``histogram`` with an even split (issue 44).

The issue's shape (survey respondents by region > state; age x sex, race x college, age x race, sex x college;
rho 0.5; level weights 1:1:2): the 4-cell sex x college table got more noise from the table set than from
``histogram(["sex", "college"], by=..., rho=0.5 / 4)`` at every level (1.29x without public totals, 1.49x
with them). Here the exact variances the two releases report are compared region by region.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from _slow import QUICK_TRIALS
from pandas_dp.testing import assert_dp

CATEGORIES = {"age": list(range(6)), "sex": ["F", "M"], "race": list("abcde"), "college": [False, True]}
WORKLOAD = [("age", "sex"), ("race", "college"), ("age", "race"), ("sex", "college")]
STATES = [f"s{k}" for k in range(9)]
HIER = pd.DataFrame({"state": STATES, "region": ["N"] * 2 + ["S"] * 3 + ["W"] * 4})


def _frame(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    state = rng.choice(STATES, n)
    region = HIER.set_index("state")["region"]
    return pd.DataFrame({"region": region[state].to_numpy(), "state": state, "age": rng.integers(0, 6, n),
                         "sex": rng.choice(["F", "M"], n), "race": rng.choice(list("abcde"), n),
                         "college": rng.random(n) < 0.3})


D = _frame()


def _cell_variance(frame: pd.DataFrame) -> pd.Series:
    """The (equal) cell variance of one table at every (level, region)."""
    return frame.groupby(["level", "region"])["variance"].max()


@pytest.mark.parametrize("totals", [False, True], ids=["no totals", "state totals"])
def test_the_small_table_is_no_worse_than_its_own_histogram_at_every_region(totals):
    geo = dict(by=["region", "state"], hierarchy=HIER, level_weights=[1, 1, 2])
    if totals:
        geo["public_totals"] = {"state": D.groupby("state").size().astype(float)}
    with pdp.budget(rho=10):
        tables = D.dp.marginals(WORKLOAD, categories=CATEGORIES, rho=0.5, rng=np.random.default_rng(1), **geo)
        alone = D.dp.histogram(["sex", "college"], categories={c: CATEGORIES[c] for c in ("sex", "college")},
                               rho=0.125, rng=np.random.default_rng(2), **geo)
    frame = tables.to_frame()
    small = frame[frame["table"] == ("sex", "college")]
    ratio = _cell_variance(small) / _cell_variance(alone.to_frame())
    assert len(ratio) == 1 + 3 + 9 and ratio.notna().all()
    assert ratio.max() <= 1.0 + 1e-9, ratio.max()      # main: 1.29 (1.49 with the state totals)
    plan = tables.plan
    reported = plan[plan["marginal"] == ("sex", "college")]["alone_ratio"]
    assert len(reported) == 3 and (reported <= 1.0 + 1e-9).all()


def test_flat_every_table_no_worse_than_its_own_histogram():
    with pdp.budget(rho=10):
        tables = D.dp.marginals(WORKLOAD, categories=CATEGORIES, rho=0.5, rng=np.random.default_rng(1))
        for cols in WORKLOAD:
            alone = D.dp.histogram(list(cols), categories={c: CATEGORIES[c] for c in cols}, rho=0.125,
                                   rng=np.random.default_rng(2))
            ours = float(tables.table(cols).variance.max())
            assert ours <= float(alone.variance.max()) * (1.0 + 1e-9), (cols, ours / float(alone.variance.max()))
    plan = tables.plan
    ratios = plan.dropna(subset=["alone_ratio"])
    assert sorted(ratios["marginal"]) == sorted(WORKLOAD) and (ratios["alone_ratio"] <= 1.0 + 1e-9).all()
    assert ratios["alone_ratio"].min() < 0.6         # the 30-cell table keeps most of its advantage


def test_weights_still_give_the_weighted_optimum():
    # explicit weights ask for the weighted "sum" optimum, bounds or not: the ratios are reported as they are
    with pdp.budget(rho=10):
        tables = D.dp.marginals(WORKLOAD, categories=CATEGORIES, rho=0.5, weights=[1, 1, 1, 1],
                                rng=np.random.default_rng(1))
    ratios = tables.plan.dropna(subset=["alone_ratio"]).set_index("marginal")["alone_ratio"]
    assert ratios[("sex", "college")] > 1.25


# ----------------------------------------------------------------------------------------------- privacy
SMALL = pd.DataFrame({"a": ["x", "y", "x"], "b": [0, 1, 3], "c": [1, 2, 0]})
SMALL_ROW = pd.concat([SMALL, pd.DataFrame({"a": ["y"], "b": [3], "c": [3]})], ignore_index=True)


def _small(**loss):
    # tables of 2 and 16 cells (sharing only the total): the "sum" optimum gives the 2-cell table 1.8x its
    # alone variance, the default plan puts it at its bound
    def mech(frame, rng):
        return frame.dp.marginals([("a",), ("b", "c")], categories={"a": ["x", "y"], "b": range(4), "c": range(4)},
                                  rng=rng, **loss)
    return mech


def _estimates(result):
    detail = result.detail
    return np.concatenate([detail.marginal((0,)), detail.marginal((1, 2)).ravel()])


def test_the_bounded_plan_spends_the_loss_asked_for():
    with pdp.budget(rho=10):
        tables = _small(rho=0.5)(SMALL, np.random.default_rng(0))
    plan = tables.plan
    assert plan["rho"].sum() == pytest.approx(0.5, rel=1e-9)
    assert (plan.dropna(subset=["alone_ratio"])["alone_ratio"] <= 1.0 + 1e-9).all()
    assert plan.set_index("marginal")["alone_ratio"][("a",)] > 0.999    # its bound holds the plan


def test_assert_dp_on_a_bounded_plan():
    delta = 1e-3
    epsilon = pdp.budget(rho=0.5).epsilon_delta(delta)
    assert_dp(_small(rho=0.5), SMALL, SMALL_ROW, epsilon=epsilon, delta=delta, trials=QUICK_TRIALS, rng=4,
              statistic=_estimates, budget={"rho": 10**6})
