"""histogram(method="auto"): the rule, its evidence, and the release around it (issue 17 item 3).

* The rule table is the fit of the committed evidence (benchmarks/results/auto_evidence.csv.gz)
  by benchmarks/bench_auto.py, and is well formed.
* The choice depends only on public inputs and the noisy total: the same with other data of the
  same total (seeded), and recomputable from the released noisy total alone.
* The noisy total's share is charged inside the one ledger row, and recorded there and on the
  result; a public expected_total buys nothing and lets the ledger name the chosen method.
* Refusals happen before any charge; under zCDP only identity and the tree are candidates.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.releases.methods.auto_rule import (AUTO_CONFIGS, AUTO_FEATURE_RULE, AUTO_RULE, AUTO_RULE_ZCDP, AUTO_WORKLOADS,
                                          auto_candidates, choose_method)
from pandas_dp.releases.methods.auto import AUTO_TOTAL_SHARE, CANDIDATES, AutoPlan
from pandas_dp.releases.methods import METHODS

EVIDENCE = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "auto_evidence.csv.gz"
RNG = np.random.default_rng(17)
FRAME = pd.DataFrame({"x": RNG.integers(0, 64, 4000), "y": RNG.integers(0, 32, 4000)})
ONE = dict(bins=64, range=(0, 64))
TWO = dict(bins=[64, 32], range=[(0, 64), (0, 32)])


# ------------------------------------------------------------------------------ the rule

def test_the_rule_is_the_fit_of_the_evidence():
    pytest.importorskip("benchmarks.bench_auto")
    from benchmarks.bench_auto import fitted_rules

    rules, zcdp, _ = fitted_rules(pd.read_csv(EVIDENCE))
    assert {k: tuple((float(b), c) for b, c in v) for k, v in rules.items()} == \
        {k: tuple((float(b), c) for b, c in v) for k, v in AUTO_RULE.items()}
    assert zcdp == AUTO_RULE_ZCDP


def test_the_evidence_harness_never_changes_the_exact_counts():
    # The releases own the counts they are given (identity and the trees add noise in place): the harness
    # must hand each trial a copy, or later trials and configurations run on noised counts.
    pytest.importorskip("benchmarks.auto_evidence")
    from benchmarks.auto_evidence import measure, release_estimates

    for x in (np.arange(32, dtype=np.int64) * 3, np.arange(64, dtype=np.int64).reshape(8, 8)):
        before = x.copy()
        for method in ("identity", "hierarchical"):
            release_estimates(x, method, {}, 1.0, False, np.random.default_rng(0))
            np.testing.assert_array_equal(x, before)
        rows = measure({"dataset": "T", "domain": "fine", "scale": "natural", "x": x}, 1.0, 2)
        np.testing.assert_array_equal(x, before)
        assert {r["config"] for r in rows} >= {"identity", "hierarchical", "dawa", "dawa+nn"}


def test_the_confirmation_measures_a_configuration_as_the_evidence_does():
    # bench_auto --confirm re-measures one configuration on one workload (errors_of); with the evidence's seed
    # it gives the evidence's trials exactly, clipped variants and DAWA's per-workload runs included.
    pytest.importorskip("benchmarks.auto_evidence")
    from benchmarks.auto_evidence import errors_of, measure, seed_of

    x = (np.arange(64, dtype=np.int64) % 7) * 5
    case = {"dataset": "T", "domain": "fine", "scale": "natural", "x": x}
    rows = {(r["config"], r["workload"]): r["error"] for r in measure(case, 0.5, 3)}
    for config, wl, only, base in (("identity+clip", "prefix", None, "identity"),
                                   ("hierarchical+nn", "ranges", None, "hierarchical+nn"),
                                   ("dawa", "ranges", "ranges", "dawa"), ("dawa+nn", "prefix", "prefix", "dawa")):
        rng = np.random.default_rng(seed_of("T", "fine", "natural", 0.5, base, only))
        assert errors_of(x, config, wl, 0.5, 3, rng).mean() == pytest.approx(rows[config, wl], rel=1e-12)


def test_the_held_out_target_runs_auto_with_the_fold_rule_and_puts_the_tables_back():
    # bench_auto --target --held-out installs the rule fit without a data set for auto(LODO), and must leave the
    # shipped tables as they were, even when a release fails inside.
    pytest.importorskip("benchmarks.bench_auto")
    from benchmarks.bench_auto import rules_installed

    shipped, shipped_features = dict(AUTO_RULE), dict(AUTO_FEATURE_RULE)
    fold = {(1, "ranges"): ((2.0, "dawa"), (math.inf, "hierarchical+nn"))}
    with rules_installed(fold, {}):
        assert AUTO_RULE[(1, "ranges")] == fold[(1, "ranges")] and not AUTO_FEATURE_RULE
        assert choose_method((64,), epsilon=0.01, expected_total=1_000, workload="ranges").config == "dawa"
    with pytest.raises(RuntimeError), rules_installed(fold, {}):
        raise RuntimeError
    assert AUTO_RULE == shipped and AUTO_FEATURE_RULE == shipped_features


def test_the_rule_is_well_formed():
    for dims in (1, 2, 3):
        for workload in AUTO_WORKLOADS:
            pieces = AUTO_RULE[(dims, workload)]
            bounds = [b for b, _ in pieces]
            assert bounds == sorted(bounds) and bounds[-1] == math.inf and len(set(bounds)) == len(bounds)
            for _, config in pieces:
                allowed = AUTO_CONFIGS[config][3]
                assert allowed is None or dims in allowed, (dims, workload, config)
            assert METHODS[AUTO_CONFIGS[AUTO_RULE_ZCDP[(dims, workload)]][0]].measures >= {"zcdp"}


def test_auto_runs_every_configured_method_as_the_table_has_it():
    """Every method a configuration names is one of auto's candidates, the very object of METHODS."""
    for method, *_ in AUTO_CONFIGS.values():
        assert CANDIDATES[method] is METHODS[method]


@pytest.mark.parametrize("key", sorted(AUTO_RULE))
def test_choose_method_follows_the_pieces(key):
    dims, workload = key
    shape = (4096,) if dims == 1 else (256, 256) if dims == 2 else (16, 16, 16)
    low = 0.0
    for bound, config in AUTO_RULE[key]:
        s = low + 0.25 if math.isfinite(bound) else low + 1.0    # log10(N epsilon) inside the piece
        choice = choose_method(shape, epsilon=0.5, expected_total=10 ** s / 0.5, workload=workload)
        assert choice.config == config and choice.method == AUTO_CONFIGS[config][0]
        assert choice.nonnegative == AUTO_CONFIGS[config][2] and config in choice.reason
        low = bound if math.isfinite(bound) else low
    if len(AUTO_RULE[key]) > 1:
        with pytest.raises(pdp.ParameterError, match="expected_total"):
            choose_method(shape, epsilon=0.5, workload=workload)
    else:
        assert choose_method(shape, epsilon=0.5, workload=workload).config == AUTO_RULE[key][0][1]


def test_dawa_gets_the_workload_it_is_chosen_for():
    choice = choose_method((4096,), epsilon=0.1, expected_total=5000, workload="prefix")
    assert choice.method == "dawa" and choice.params == {"workload": "prefix"}
    assert choose_method((1,), epsilon=0.1, workload="prefix").config == "identity"


# ------------------------------------------------------------------------------ the release

def test_a_public_total_decides_before_the_charge_and_the_ledger_names_the_method():
    with pdp.budget(1.0) as b:
        h = FRAME.dp.histogram("x", **ONE, epsilon=0.5, method="auto", workload="prefix", expected_total=4000,
                               rng=np.random.default_rng(1))
    want = choose_method((64,), epsilon=0.5, expected_total=4000, workload="prefix")
    assert h.method == want.method == "dawa" and h.params["chosen_by"] == "auto"
    assert h.params["auto_reason"] == want.reason and "public total" in want.reason
    assert h.params["auto_total_is_noisy"] is False and h.params["auto_total_share"] is None
    assert b.spent == 0.5 and list(b.ledger["method"]) == ["histogram:dawa"]
    assert want.reason in b.ledger.loc[0, "params"]


def test_the_noisy_total_is_charged_inside_the_one_ledger_row():
    with pdp.budget(1.0) as b:
        h = FRAME.dp.histogram("x", **ONE, epsilon=0.5, method="auto", workload="prefix",
                               rng=np.random.default_rng(2))
    assert b.spent == 0.5 and len(b.ledger) == 1 and b.ledger.loc[0, "epsilon"] == 0.5
    row = json.loads(b.ledger.loc[0, "params"])
    assert b.ledger.loc[0, "method"] == "histogram:auto" and b.ledger.loc[0, "status"] == "ok"
    assert row["auto_total_share"] == str(AUTO_TOTAL_SHARE) == "1/50"
    assert row["auto_total_epsilon"] == "1/100" and row["auto_candidates"] == ["dawa+nn", "hierarchical+nn"]
    p = h.params
    assert p["auto_total_is_noisy"] and p["auto_total_epsilon"] == "1/100" and h.epsilon == 0.5
    assert p["auto_config"] in row["auto_candidates"] and "noisy total" in p["auto_reason"]
    # The chosen method spent the rest, exactly: 1/100 + 49/100 = 1/2.
    assert Fraction(p["partition_epsilon"]) + Fraction(p["strategy_epsilon"]) + Fraction("1/100") == Fraction(1, 2)


def test_the_choice_depends_on_the_noisy_total_only():
    """Other data with the same total give the same noisy total (same seed) and the same choice."""
    other = FRAME.assign(x=np.where(np.arange(len(FRAME)) % 2 == 0, 3, 60))        # same 4000 rows, other shape
    with pdp.budget(2.0):
        a = FRAME.dp.histogram("x", **ONE, epsilon=0.5, method="auto", workload="bins",
                               rng=np.random.default_rng(3))
        c = other.dp.histogram("x", **ONE, epsilon=0.5, method="auto", workload="bins",
                               rng=np.random.default_rng(3))
    assert a.params["auto_total"] == c.params["auto_total"] and a.params["auto_config"] == c.params["auto_config"]
    assert a.method == c.method and type(a) is type(c)
    # ... and it is the rule applied to the released noisy total and public inputs:
    again = choose_method((64,), epsilon=0.5, expected_total=max(a.params["auto_total"], 0), workload="bins",
                          total_is_noisy=True)
    assert again.config == a.params["auto_config"] and again.reason == a.params["auto_reason"]


def test_the_scale_changes_the_choice():
    small = FRAME.iloc[:300]
    with pdp.budget(2.0):
        lo = small.dp.histogram("x", **ONE, epsilon=0.1, method="auto", workload="bins", rng=np.random.default_rng(4))
        hi = pd.concat([FRAME] * 25).dp.histogram("x", **ONE, epsilon=1.0, method="auto", workload="bins",
                                                  rng=np.random.default_rng(4))
    assert lo.params["auto_config"] == "ahp+clip" and hi.params["auto_config"] == "identity+clip"


def test_auto_sets_the_post_processing_through_its_own_plan():
    with pdp.budget(1.0) as b:
        h = FRAME.dp.histogram("x", **ONE, epsilon=0.5, method="auto", rng=np.random.default_rng(5))
    assert h.params["auto_config"] == "hierarchical+nn" and h.params["auto_nonnegative"]
    assert "non-negative consistent projection" in h.post_processing and (h.counts >= 0).all()
    assert json.loads(b.ledger.loc[0, "params"])["nonnegative"] is False      # the caller asked nothing


def test_every_candidate_is_planned_before_the_charge():
    from pandas_dp.domain.grid import make_grid
    from pandas_dp.privacy.loss import pure
    from pandas_dp.releases.methods import plan_method

    grid = make_grid(FRAME, ["x", "y"], **TWO)
    planned = plan_method("auto", grid, pure(0.5), {"workload": "ranges"})
    plan: AutoPlan = planned.plan
    assert planned.label == "auto" and plan.choice is None
    assert set(auto_candidates((64, 32), workload="ranges")) == {"agrid", "hierarchical-geo+nn"}
    # 2-D: noisy features could choose another configuration of a piece where AUTO_FEATURE_RULE has a threshold
    # (tests/releases/test_auto_features.py): the shipped rule sends one dense cell at large scale to DPCube-uniform.
    assert set(plan.plans) == set(auto_candidates((64, 32), workload="ranges", features=True)) == \
        {"agrid", "hierarchical-geo+nn", "dpcube-uniform"}
    assert plan.total_loss + plan.rest == pure(0.5) and plan.total_loss == pure(0.5).part(AUTO_TOTAL_SHARE)


def test_a_grid_chosen_from_the_noisy_total_is_sized_by_it():
    # 4,000 spread rows at epsilon 0.4: log10(N epsilon) = 3.2 below 3.25 and a small noisy top_share: AGrid
    with pdp.budget(1.0):
        h = FRAME.dp.histogram(["x", "y"], **TWO, epsilon=0.4, method="auto", rng=np.random.default_rng(6))
    assert h.method == "agrid" and h.params["total"] == h.params["auto_total"] and h.params["total_is_noisy"]
    assert h.params["total_epsilon"] == "1/125" and h.params["expected_total"] is None
    spent = Fraction(h.params["total_epsilon"]) + sum(Fraction(e) for e in h.params["level_epsilons"])
    assert spent == Fraction(2, 5)


def test_zcdp_uses_identity_or_the_tree_and_buys_nothing():
    with pdp.budget(rho=1.0) as b:
        for workload in AUTO_WORKLOADS:
            h = FRAME.dp.histogram("x", **ONE, rho=0.1, method="auto", workload=workload,
                                   rng=np.random.default_rng(7))
            assert h.method in ("identity", "hierarchical") and h.params["auto_total_share"] is None
            assert h.params["auto_config"] == AUTO_RULE_ZCDP[(1, workload)]
    assert b.spent == pytest.approx(0.3) and len(b.ledger) == 3


@pytest.mark.parametrize("cols,domain,kwargs,match", [
    ("x", ONE, {"workload": "points"}, "workload"),
    ("x", ONE, {"expected_total": -5}, "expected_total"),
    ("x", ONE, {"total_share": 0}, "total_share"),
    ("x", ONE, {"total_share": 1.5}, "total_share"),
    ("x", ONE, {"eta": 0.3}, "eta"),
    ("x", ONE, {"workload": "prefix", "epsilon": 1e-300}, "too small|noise"),
])
def test_refusals_happen_before_any_charge(cols, domain, kwargs, match):
    kw = {"epsilon": 0.5, **kwargs}
    with pdp.budget(1.0) as b:
        with pytest.raises(pdp.ParameterError, match=match):
            FRAME.dp.histogram(cols, **domain, method="auto", **kw)
    assert b.spent == 0 and len(b.ledger) == 0


def test_three_dimensions_use_the_tree():
    frame = FRAME.assign(z=np.arange(len(FRAME)) % 4)
    with pdp.budget(1.0):
        h = frame.dp.histogram(["x", "y", "z"], bins=[8, 8, 4], range=[(0, 64), (0, 32), (0, 4)], epsilon=0.5,
                               method="auto", expected_total=4000, rng=np.random.default_rng(8))
    assert h.method == "hierarchical" and h.params["auto_config"].startswith("hierarchical")
