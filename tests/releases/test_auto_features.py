"""method="auto" reads private features of the shape (issue 28 item 1; Pythia, Kotsogiannis et al. SIGMOD 2017).

* AUTO_FEATURE_RULE is the fit of benchmarks/bench_auto.py to the committed evidence and the committed noisy
  draws of the features: the thresholds of benchmarks/auto_fit.py, kept only if they lower the held-out error
  leaving out data sets and shape families. On the current evidence they do, so the shipped rule is the fit
  (checked here, with neighbouring frames); the tests of the measurement and the choice install the fitted
  thresholds (FITTED) as the rule either way.
* In 2-D, without a public total, the share that bought a noisy total buys, half and half, the noisy total
  and a noisy histogram of public coarse blocks (recomputed here draw for draw), charged once inside the
  release's one ledger row.
* The choice is a deterministic function of the noisy features and public inputs; neighbouring frames
  give the same outcome class and the same charge; a public total still buys nothing.
"""

from __future__ import annotations

import json
import math
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.privacy.loss import pure
from pandas_dp.releases.methods.auto_rule import (AUTO_CONFIGS, AUTO_FEATURE_RULE, AUTO_RULE, FEATURE_BLOCKS, TOP_FLOOR_ALPHA,
                                          auto_candidates, top_floor,
                                          choose_method, coarse_counts, coarse_starts, shape_features)
from pandas_dp.releases.methods.auto import AUTO_TOTAL_SHARE

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
RNG = np.random.default_rng(28)
#: 3,000 rows on a 64 x 32 grid, 2,400 of them in one cell: a dense spike (top_share ~0.8; one cell per block).
SPIKE = pd.DataFrame({"x": np.r_[np.full(2400, 5), RNG.integers(0, 64, 600)],
                      "y": np.r_[np.full(2400, 7), RNG.integers(0, 32, 600)]})
TWO = dict(bins=[64, 32], range=[(0, 64), (0, 32)])


#: The rule as shipped (before the fixture below installs FITTED).
SHIPPED = dict(AUTO_FEATURE_RULE)
#: The thresholds fit_splits gives on the committed evidence (kept: they lower both held-out objectives).
FITTED = ((3.25, "agrid", math.inf, "agrid"), (math.inf, "hierarchical-geo+nn", 0.75, "dpcube-uniform"))


@pytest.fixture(autouse=True)
def fitted_thresholds(monkeypatch):
    """The measurement and choice with thresholds: install FITTED as the feature rule of 2-D ranges and prefix."""
    for key in ((2, "ranges"), (2, "prefix")):
        monkeypatch.setitem(AUTO_FEATURE_RULE, key, FITTED)


def _auto(frame, seed, **kwargs):
    kw = {"epsilon": 0.5, **kwargs}
    return frame.dp.histogram(["x", "y"], **TWO, method="auto", rng=np.random.default_rng(seed), **kw)


def test_the_fitted_thresholds_are_the_fit_of_the_evidence():
    pytest.importorskip("benchmarks.bench_auto")
    from benchmarks.auto_fit import fit_splits
    from benchmarks.bench_auto import feature_rows

    rows = feature_rows(pd.read_csv(RESULTS / "auto_evidence.csv.gz"), pd.read_csv(RESULTS / "auto_features.csv.gz"))
    assert fit_splits(rows, AUTO_RULE[(2, "ranges")]) == FITTED      # AUTO_RULE itself is checked in test_auto.py
    assert tuple((b, below) for b, below, _, _ in FITTED) == AUTO_RULE[(2, "ranges")]
    assert all(above in AUTO_CONFIGS and (t == math.inf or 0 < t < 1) for _, _, t, above in FITTED)
    assert SHIPPED in ({}, {(2, "ranges"): FITTED, (2, "prefix"): FITTED})


@pytest.mark.slow
def test_the_shipped_feature_rule_is_the_held_out_selection():
    # ~6 s: refits the pieces and thresholds leaving out each data set and each shape family.
    pytest.importorskip("benchmarks.bench_auto")
    from benchmarks.bench_auto import fitted_feature_rules

    fitted = fitted_feature_rules(pd.read_csv(RESULTS / "auto_evidence.csv.gz"),
                                  pd.read_csv(RESULTS / "auto_features.csv.gz"))
    assert SHIPPED == fitted


def test_as_shipped_2d_auto_and_neighbouring_frames_agree(monkeypatch):
    for key in list(AUTO_FEATURE_RULE):           # back to the shipped rule (the fixture installed FITTED)
        monkeypatch.delitem(AUTO_FEATURE_RULE, key)
    for key, splits in SHIPPED.items():
        monkeypatch.setitem(AUTO_FEATURE_RULE, key, splits)
    neighbours = [SPIKE, SPIKE.iloc[1:], pd.concat([SPIKE, pd.DataFrame({"x": [63], "y": [31]})]),
                  pd.concat([SPIKE, pd.DataFrame({"x": [500], "y": [-4]})])]
    seen = set()
    for frame in neighbours:
        with warnings.catch_warnings(record=True) as caught, pdp.budget(1.0) as b:
            warnings.simplefilter("always")
            h = _auto(frame, 9)
        row = json.loads(b.ledger.loc[0, "params"])
        seen.add((b.spent, len(b.ledger), b.ledger.loc[0, "method"], len(caught), tuple(row), row["auto_total_epsilon"]))
        assert h.params["auto_config"] in auto_candidates((64, 32), workload="ranges", features=True)
        assert ("auto_features" in h.params and "auto_feature_blocks" in row) == bool(SHIPPED)
    assert len(seen) == 1
    assert seen.pop()[-1] == "1/100"            # the 1/50 share of epsilon 0.5


def test_coarse_blocks_partition_the_grid():
    for size in (1, 3, 31, 32, 33, 64, 100, 256, 257, 1000):
        starts = coarse_starts(size)
        assert starts[0] == 0 and np.all(np.diff(starts) > 0) and starts.size == min(size, FEATURE_BLOCKS)
        widths = np.diff(np.r_[starts, size])
        assert widths.max() - widths.min() <= 1          # near-equal, public
    x = np.arange(512 * 257).reshape(512, 257)
    blocks = coarse_counts(x, x.shape)
    assert blocks.shape == (256, 256) and blocks.sum() == x.sum() and blocks[0, 0] == x[:2, :1].sum()     # 257 cells: the first block has one
    small = np.arange(64 * 33).reshape(64, 33)
    assert np.array_equal(coarse_counts(small, small.shape), small)        # up to 256 cells per axis: a block is a cell
    assert shape_features(np.array([[-5, 10], [0, 0]])) == {"total": 5.0, "top_share": 1.0}
    assert shape_features(np.array([-3, 1])) == {"total": -2.0, "top_share": 0.0}


def test_the_top_floor_is_the_exact_quantile_and_keeps_noise_from_claiming_a_dense_cell():
    """At N epsilon near 10^3.3 the largest of 65,536 empty noisy blocks can reach three quarters of the total (the
    held-out STROKE case, issue 28): below ``top_floor`` the densest block is not read as a dense cell."""
    noise = pure(Fraction(1, 1000)).noise()                  # a block's noise at epsilon 0.1 (1/100 of it)
    floor = top_floor(noise, 65_536)
    tail = TOP_FLOOR_ALPHA / 65_536
    assert noise.quantile(1 - tail) == floor and noise.quantile(1 - tail) > noise.quantile(1 - 2 * tail)
    # the union bound: 65,536 blocks each above the floor with probability <= alpha / 65,536
    p = math.exp(-1 / 1000)
    assert 65_536 * p ** (floor + 1) / (1 + p) <= float(TOP_FLOOR_ALPHA)
    rng = np.random.default_rng(11)
    total = 19_500.0                                         # STROKE: s = 3.29 at epsilon 0.1
    shares = [shape_features(noise.add(np.zeros(65_536, dtype=np.int64), rng), total, floor=floor)["top_share"]
              for _ in range(200)]
    unfloored = [shape_features(noise.add(np.zeros(65_536, dtype=np.int64), rng), total)["top_share"]
                 for _ in range(200)]
    assert max(shares) == 0.0 and min(unfloored) > 0.4       # noise alone: 0.5-0.9 of the total without the floor
    dense = np.zeros(65_536, dtype=np.int64)
    dense[7] = 0.87 * 32_400                                 # ADULT-2D at epsilon 0.1: s = 3.51, 87% in one cell
    kept = shape_features(noise.add(dense, rng), 32_400.0, floor=floor)["top_share"]
    assert 0.75 < kept < 1.0


@pytest.mark.parametrize("lscale,share,config", [
    (5.0, 0.90, "dpcube-uniform"), (5.0, 0.50, "hierarchical-geo+nn"),
    (3.0, 0.90, "agrid"), (3.0, 0.05, "agrid"), (2.0, 0.90, "agrid"),
])
def test_each_piece_reads_its_threshold(lscale, share, config):
    features = {"total": 10 ** lscale, "top_share": share}
    choice = choose_method((64, 64), epsilon=1.0, expected_total=10 ** lscale, workload="ranges",
                           total_is_noisy=True, features=features)
    assert choice.config == config and f"noisy top_share {share:.3f}" in choice.reason
    assert ("no threshold in this piece" in choice.reason) == (lscale < 3.5)
    # Without features (a public total), the pieces alone decide:
    plain = choose_method((64, 64), epsilon=1.0, expected_total=10 ** lscale, workload="ranges")
    assert plain.config == ("agrid" if lscale < 3.25 else "hierarchical-geo+nn")


def test_the_features_are_one_coarse_histogram_charged_once_at_the_share():
    with pdp.budget(1.0) as b:
        h = _auto(SPIKE, 3)
    assert b.spent == 0.5 and len(b.ledger) == 1 and b.ledger.loc[0, "method"] == "histogram:auto"
    row = json.loads(b.ledger.loc[0, "params"])
    assert row["auto_total_share"] == str(AUTO_TOTAL_SHARE) and row["auto_total_epsilon"] == "1/100"
    assert row["auto_feature_blocks"] == [64, 32]
    assert row["auto_candidates"] == list(auto_candidates((64, 32), workload="ranges", features=True))
    assert row["auto_features_epsilon"] == "1/200"
    # The measurement, draw for draw, first from the release's generator: the noisy total at 1/200, then the
    # exact counts summed over the public blocks plus discrete Laplace noise at 1/200 (one row is in one block).
    counts = np.zeros((64, 32), dtype=np.int64)
    np.add.at(counts, (SPIKE["x"].to_numpy(), SPIKE["y"].to_numpy()), 1)
    half = pure(0.5).part(AUTO_TOTAL_SHARE).part(Fraction(1, 2))
    assert half == pure(Fraction(1, 200))
    rng = np.random.default_rng(3)
    total = float(half.noise().add(np.array([len(SPIKE)]), rng)[0])
    floor = top_floor(half.noise(), 64 * 32)
    features = shape_features(half.noise().add(coarse_counts(counts, (64, 32)), rng), total, floor=floor)
    p = h.params
    assert p["auto_features"] == features and p["auto_total"] == features["total"] and p["auto_total_is_noisy"]
    assert p["auto_top_floor"] == floor
    assert p["auto_feature_blocks"] == [64, 32] and "coarse histogram" in p["auto_note"]
    assert "noisy top_share" in p["auto_reason"] and p["auto_reason"] in p["auto_note"]


def test_the_choice_is_the_rule_applied_to_the_noisy_features():
    """Another frame with the same coarse blocks (same seed) gives the same features and choice."""
    wide = dict(bins=[512, 32], range=[(0, 512), (0, 32)])      # 512 cells on x: blocks of 2 x 1 cells
    other = SPIKE.assign(x=SPIKE["x"] ^ 1)     # every row moves to the other cell of its 2 x 1 coarse block
    with pdp.budget(2.0):
        a, c = (f.dp.histogram(["x", "y"], **wide, method="auto", epsilon=0.5, rng=np.random.default_rng(4))
                for f in (SPIKE, other))
    assert a.params["auto_features"] == c.params["auto_features"] and a.params["auto_config"] == c.params["auto_config"]
    assert a.params["auto_feature_blocks"] == [256, 32]
    again = choose_method((512, 32), epsilon=0.5, expected_total=max(a.params["auto_total"], 0.0), workload="ranges",
                          total_is_noisy=True, features=a.params["auto_features"])
    assert again.config == a.params["auto_config"] and again.reason == a.params["auto_reason"]


def test_neighbouring_frames_give_the_same_outcome_class_and_charge():
    neighbours = {"D": SPIKE, "remove a spike row": SPIKE.iloc[1:], "add a row elsewhere":
                  pd.concat([SPIKE, pd.DataFrame({"x": [63], "y": [31]})]), "add a row outside the domain":
                  pd.concat([SPIKE, pd.DataFrame({"x": [500], "y": [-4]})])}
    seen = set()
    for frame in neighbours.values():
        with warnings.catch_warnings(record=True) as caught, pdp.budget(1.0) as b:
            warnings.simplefilter("always")
            h = _auto(frame, 5)
        seen.add((b.spent, len(b.ledger), b.ledger.loc[0, "method"], b.ledger.loc[0, "status"], len(caught),
                  tuple(json.loads(b.ledger.loc[0, "params"])), h.params["auto_feature_blocks"] == [64, 32]))
        assert h.params["auto_config"] in auto_candidates((64, 32), workload="ranges", features=True)
    assert len(seen) == 1


def test_a_public_total_buys_no_features():
    with pdp.budget(1.0) as b:
        h = _auto(SPIKE, 6, expected_total=3000)
    assert b.spent == 0.5 and "auto_features" not in h.params and h.params["auto_total_share"] is None
    assert h.params["auto_config"] == AUTO_RULE[(2, "ranges")][0][1] == "agrid"     # log10(1500) below 3.25
    with pdp.budget(rho=1.0):                                                  # zCDP: one configuration, nothing bought
        z = SPIKE.dp.histogram(["x", "y"], **TWO, rho=0.1, method="auto", rng=np.random.default_rng(6))
    assert "auto_features" not in z.params and z.params["auto_total_share"] is None


def test_the_grid_share_adds_up_with_the_features():
    # 3,000 spread rows at epsilon 0.5: log10(N eps) ~ 3.18 in [2.25, 3.25), the piece without a threshold:
    # AGrid whatever the noisy top_share, sized by the noisy total; the loss splits exactly into the total's and
    # the blocks' 1/200 each and AGrid's levels.
    spread = pd.DataFrame({"x": RNG.integers(0, 64, 3_000), "y": RNG.integers(0, 32, 3_000)})
    with pdp.budget(1.0):
        h = _auto(spread, 7)
    assert h.method == "agrid" and "top_share" in h.params["auto_features"]
    assert h.params["total"] == h.params["auto_total"] and h.params["total_epsilon"] == "1/100"
    assert 2 * Fraction(h.params["auto_features_epsilon"]) == Fraction(h.params["auto_total_epsilon"])
    assert Fraction("1/100") + sum(Fraction(e) for e in h.params["level_epsilons"]) == Fraction(1, 2)


@pytest.mark.slow
def test_auto_with_features_is_dp_on_a_tiny_domain():
    from pandas_dp.testing import assert_dp

    d = pd.DataFrame({"x": [0, 1, 1, 2, 3, 3, 3, 0, 3, 3], "y": [0, 0, 1, 3, 3, 3, 2, 0, 3, 3]})
    neighbour = pd.concat([d, pd.DataFrame({"x": [3], "y": [3]})], ignore_index=True)     # add to the largest cell

    def release(df, rng):
        return df.dp.histogram(["x", "y"], bins=[[0, 1, 2, 3, 4]] * 2, epsilon=1.0, method="auto", rng=rng)

    def outputs(r):
        f = r.params["auto_features"]
        return np.r_[r.counts.to_numpy(float), f["total"], f["top_share"],
                     list(AUTO_CONFIGS).index(r.params["auto_config"])]

    # 120 runs a dataset (~20 s): the features are the new part; the estimates are tested with the other methods.
    report = assert_dp(release, d, neighbour, epsilon=1.0, trials=120, statistic=outputs, rng=28)
    assert report.charged_per_run == 1.0


@pytest.mark.parametrize("seed", range(4))
def test_the_exact_dawa_compression_is_the_partition_stage_one_finds_without_noise(seed):
    # bench_auto --bound reads DAWA's partition of the exact counts as a free feature; it must be the partition
    # the first stage computes (same per-bin deviations, same dynamic programme) once its noise is negligible.
    pytest.importorskip("benchmarks.bench_auto")
    from benchmarks.auto_features import dawa_compression
    from pandas_dp.algorithms.dawa.partition import private_partition

    rng = np.random.default_rng(seed)
    x = np.repeat(rng.integers(0, 50, 6), rng.multinomial(100, np.full(6, 1 / 6)) + 1)[:96]
    x = x + rng.integers(0, 3, x.size)
    for eps in (0.1, 1.0):
        got = dawa_compression(x, eps)
        edges = private_partition(x, loss=pure(10 ** 9), bucket_cost=1 / (0.75 * eps), rng=rng).edges
        assert got == pytest.approx(1 - np.log(edges.size - 1) / np.log(x.size))
    assert dawa_compression(np.full(64, 7), 1.0) == 1.0                        # one bucket
    assert dawa_compression(np.tile([0, 1000], 32), 1e6) == 0.0                # one per bin


def test_the_committed_bound_is_the_report_of_the_evidence():
    # benchmarks/results/auto_1d_bound.md (the closing argument on 1-D ranges at N eps ~ 10^3) is what
    # bench_auto --bound prints for the committed evidence.
    pytest.importorskip("benchmarks.bench_auto")
    from benchmarks import dpbench
    from benchmarks.bench_auto import bound_report

    if not dpbench.DATA_DIR.is_dir():  # a user's clone: the DPBench arrays live in the project's shared data
        pytest.skip(f"needs the DPBench arrays in {dpbench.DATA_DIR} (the project's shared data, beside the checkout)")
    report = bound_report(pd.read_csv(RESULTS / "auto_evidence.csv.gz", dtype={"scale": str}))
    committed = (RESULTS / "auto_1d_bound.md").read_text()
    assert report.strip() in committed
    rows = [line for line in report.splitlines() if line.startswith("| ") and "oracle" not in line][1:]
    window = [float(line.split(" | ")[3].split(" / ")[0]) for line in rows]
    oracle = float(next(line for line in report.splitlines() if "oracle" in line).split(" | ")[3].split(" / ")[0])
    assert oracle < 1.01 < 1.1 < min(window)      # what a per-case choice would gain; no feature choice comes near
