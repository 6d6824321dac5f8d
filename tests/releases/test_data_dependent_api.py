"""Public API of the data-dependent methods: histogram(method="ahp" | "dpcube") (and "auto"'s knob checks)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.algorithms.ahp import OPTIMAL_MAX_BINS


@pytest.fixture
def grid_frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    n = 3000
    return pd.DataFrame({"x": np.clip(rng.normal(20, 4, n), 0, 39.9),
                         "y": rng.integers(0, 10, n)})


def test_ahp_release_through_accessor(ages):
    with pdp.budget(1.0) as b:
        h = ages.dp.histogram("age", bins=50, range=(0, 100), epsilon=0.4, method="ahp",
                              epsilon_split=0.7, eta=0.5, rng=np.random.default_rng(0))
    assert isinstance(h, pdp.AHPHistogram) and h.method == "ahp"
    assert b.spent == pytest.approx(0.4, abs=0) and len(b.ledger) == 1
    assert Fraction(h.params["epsilon_1"]) + Fraction(h.params["epsilon_2"]) == Fraction("0.4")
    assert Fraction(h.params["epsilon_1"]) == Fraction("0.28")
    assert h.params["eta"] == 0.5 and h.params["clustering"] == "greedy"
    assert not h.variance_exact and "bias" in h.params["variance"]
    clusters = h.clusters
    assert clusters.index.equals(h.counts.index)
    assert clusters["cluster"].nunique() == h.params["n_clusters"]
    # bins of one cluster share one value: the cluster's noisy sum / size
    np.testing.assert_allclose(h.counts.to_numpy(),
                               clusters["cluster_sum"] / clusters["cluster_size"])
    ans = h.range_query(10, 40)
    lo, hi = 5, 20                                   # bins [10, 40) of width 2
    assert ans.std_error == pytest.approx(np.sqrt(h.detail.range_variance([lo], [hi])[0]))
    assert ans.estimate == pytest.approx(h.counts.iloc[lo:hi].sum())
    assert ans.exact_std_error is False


def test_ahp_series_accessor_and_nonnegative(ages):
    with pdp.budget(1.0):
        h = ages["age"].dp.histogram(bins=20, range=(0, 100), epsilon=0.5, method="ahp",
                                     nonnegative=True, rng=np.random.default_rng(1))
    assert (h.counts >= 0).all() and h.post_processing == ("clip at 0",)


def test_dpcube_two_dimensional_release(grid_frame):
    with pdp.budget(1.0) as b:
        h = grid_frame.dp.histogram(["x", "y"], bins=[40, 10], range=[(0, 40), (0, 10)],
                                    epsilon=0.5, method="dpcube", rng=np.random.default_rng(2))
    assert isinstance(h, pdp.DPCubeHistogram)
    assert isinstance(h.counts.index, pd.MultiIndex) and len(h.counts) == 400
    assert b.spent == pytest.approx(0.5, abs=0)
    assert h.variance_exact and h.params["estimate"] == "least_squares"
    parts = h.partitions
    assert parts["cells"].sum() == 400 and len(parts) == h.params["n_partitions"]
    assert list(parts.columns[:4]) == ["x_lo", "x_hi", "y_lo", "y_hi"]
    assert h.cell_histogram.index.equals(h.counts.index)
    box = h.cell_box_query([[0, 0], [10, 2]], [[40, 10], [30, 7]])
    grid = h.counts.to_numpy().reshape(40, 10)
    assert box["estimate"].tolist() == pytest.approx([grid.sum(), grid[10:30, 2:7].sum()])
    assert box["std_error"].iloc[0] == pytest.approx(
        np.sqrt(h.detail.box_variance(np.array([[0, 0]]), np.array([[40, 10]]))[0]))


def test_dpcube_1d_range_std_error_exact(ages):
    with pdp.budget(1.0):
        h = ages.dp.histogram("age", bins=64, range=(0, 128), epsilon=0.5, method="dpcube",
                              estimate="least_squares", rng=np.random.default_rng(4))
    ans = h.range_query(0, 32)                        # bins [0, 16)
    var = h.detail.box_variance(np.array([[0]]), np.array([[16]]))[0]
    assert ans.std_error == pytest.approx(np.sqrt(var)) and ans.exact_std_error
    with pdp.budget(1.0):
        u = ages.dp.histogram("age", bins=64, range=(0, 128), epsilon=0.5, method="dpcube",
                              estimate="uniform", threshold=10.0, rng=np.random.default_rng(4))
    assert not u.variance_exact and u.params["threshold"] == 10.0


@pytest.mark.parametrize("method,kwargs,match", [
    ("ahp", {"epsilon_split": 1.0}, "epsilon_split"),
    ("ahp", {"eta": -1}, "eta"),
    ("ahp", {"clustering": "kmeans"}, "clustering"),
    ("ahp", {"branching": 2}, "branching"),
    ("dpcube", {"estimate": "median"}, "estimate"),
    ("dpcube", {"threshold": -2.0}, "threshold"),
    ("dpcube", {"epsilon_split": 0}, "epsilon_split"),
    ("auto", {"workload": "points"}, "workload"),
    ("auto", {"expected_total": -5}, "expected_total"),
    ("auto", {"eta": 0.3}, "eta"),
])
def test_invalid_knobs_charge_nothing(ages, method, kwargs, match):
    with pdp.budget(1.0) as b:
        with pytest.raises(pdp.ParameterError, match=match):
            ages.dp.histogram("age", bins=64, range=(0, 128), epsilon=0.5, method=method, **kwargs)
    assert b.spent == 0 and len(b.ledger) == 0


def test_optimal_clustering_size_limit_checked_before_charge():
    frame = pd.DataFrame({"v": [0.5, 1.5]})
    with pdp.budget(1.0) as b:
        with pytest.raises(pdp.ParameterError, match="greedy"):
            frame.dp.histogram("v", bins=OPTIMAL_MAX_BINS + 1, range=(0, OPTIMAL_MAX_BINS + 1),
                               epsilon=0.5, method="ahp", clustering="optimal")
    assert b.spent == 0


# method="auto": tests/test_auto.py
