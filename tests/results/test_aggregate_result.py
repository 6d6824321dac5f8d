"""The ``Aggregate`` result: groupby-shaped frames, intervals, display, pickling, immutability."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.results.aggregate import Aggregate

FRAME = pd.DataFrame({"sex": ["F", "M"] * 300, "region": ["N", "S", "E"] * 200,
                      "income": np.arange(600) * 100.0, "hours": np.arange(600) % 50 * 1.0})
AGGS = {"income": ["count", "sum", "mean"], "hours": "mean"}


@pytest.fixture(scope="module")
def result() -> Aggregate:
    with pdp.budget(epsilon=1.0):
        return FRAME.dp.aggregate(["sex", "region"], AGGS, categories={"sex": ["F", "M"], "region": ["N", "S", "E"]},
                                  bounds={"income": (0, 100_000), "hours": (0, 60)}, epsilon=1.0,
                                  rng=np.random.default_rng(0))


def test_frames_are_shaped_like_groupby_agg(result):
    frame = result.to_frame()
    want = FRAME.groupby(["sex", "region"]).agg({"income": ["count", "sum", "mean"], "hours": ["mean"]})
    assert list(frame.columns) == list(want.columns)
    assert frame.index.names == ["sex", "region"] and len(frame) == 6
    assert frame["income", "mean"].shape == (6,)
    for other in (result.std_error(), *result.confidence_interval(0.9)):
        assert other.shape == frame.shape and list(other.columns) == list(frame.columns)
        assert other.index.equals(frame.index)
    assert list(result.count.columns) == ["income", "hours"] and result.count.shape == (6, 2)
    np.testing.assert_array_equal(result.count["income"], frame["income", "count"])


def test_intervals_hold_the_estimates_and_widen_with_the_level(result):
    frame = result.to_frame()
    low90, high90 = result.confidence_interval(0.9)
    low99, high99 = result.confidence_interval(0.99)
    assert ((low90 <= frame) & (frame <= high90)).all().all()
    assert ((low99 <= low90) & (high90 <= high99)).all().all()
    assert (low99["income", "mean"] >= 0).all() and (high99["hours", "mean"] <= 60).all()  # inside the bounds
    with pytest.raises(pdp.ParameterError):
        result.confidence_interval(1.5)


def test_repr_html_and_params(result):
    text = repr(result)
    assert text.startswith("Aggregate(epsilon=1") and "income" in text
    assert "<div>" in result._repr_html_() and "Aggregate" in result._repr_html_()
    assert result.params["split"] == "equal" and result.epsilon == 1.0 and result.measure == "pure"


def test_pickle_round_trip_and_immutability(result):
    again = pickle.loads(pickle.dumps(result))
    assert again == result and copy.deepcopy(result) is result
    pd.testing.assert_frame_equal(again.to_frame(), result.to_frame())
    pd.testing.assert_frame_equal(again.confidence_interval()[0], result.confidence_interval()[0])
    with pytest.raises(Exception):
        result.estimates = None  # type: ignore[misc]
    handed = result.to_frame()
    before = result.to_frame().copy()
    handed.iloc[0, 0] = -12345.0
    pd.testing.assert_frame_equal(result.to_frame(), before)
    with pytest.raises(TypeError):
        result.params["split"] = "mine"  # type: ignore[index]


def test_plot_draws_error_bars(result):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = result.plot("income", "mean")
    assert len(ax.patches) == 6
    plt.close("all")
    with pytest.raises(pdp.ParameterError):
        result.plot("income", "median")
