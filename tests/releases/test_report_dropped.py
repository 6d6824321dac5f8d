"""Issue 29, item 3: report_dropped=, a charged private estimate of the share of rows max_rows dropped."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.engines.pandas.bounding import kept_and_dropped
from _slow import SLOW_TRIALS

RNG = np.random.default_rng(0)
ROWS = RNG.integers(1, 16, 2000)            # panel data: 1 to 15 rows a person
PANEL = pd.DataFrame({"pid": np.repeat(np.arange(ROWS.size), ROWS), "x": RNG.uniform(0, 10, ROWS.sum())})


def _release(frame=PANEL, **kw):
    kw = {"epsilon": 1.0, "privacy_unit": "pid", "max_rows": 5, "report_dropped": 0.1,
          "rng": np.random.default_rng(1), **kw}
    return frame.dp.histogram("x", bins=5, range=(0, 10), **kw)


@pytest.mark.parametrize("r", [1, 3, 5, 6, 9, 10, 11, 40])
def test_one_whole_unit_moves_the_pair_by_at_most_k_each(r):
    """D and D' differ by one unit with r rows: (kept, dropped) moves by (min(r, k), min((r - k)+, k))."""
    k = 5
    units = np.repeat(np.arange(50), RNG.integers(1, 12, 50))
    cells = RNG.integers(-1, 3, units.size)                     # -1: out of domain, never counted
    with_unit = np.concatenate([units, np.full(r, 50)])
    with_cells = np.concatenate([cells, RNG.integers(0, 3, r)])
    diff = kept_and_dropped(with_cells, with_unit, k) - kept_and_dropped(cells, units, k)
    assert diff.tolist() == [min(r, k), min(max(r - k, 0), k)]
    assert np.abs(diff).sum() <= 2 * k and (diff ** 2).sum() <= 2 * k * k


def test_the_share_is_estimated_charged_once_and_shown_where_the_numbers_are():
    with pdp.budget(epsilon=1.0) as budget:
        h = _release()
    dropped = np.minimum(np.maximum(ROWS - 5, 0), 5)
    truth = dropped.sum() / (np.minimum(ROWS, 5).sum() + dropped.sum())
    low, high = h.params["dropped_interval"]
    assert low <= truth <= high and high - low < 0.06            # fixed seed; about +/- 2.5 points
    assert abs(h.params["dropped_share"] - truth) < 0.02
    assert h.params["dropped_cap"] == 5 and h.params["report_dropped"] == "1/10"
    assert budget.spent_exact == 1 and len(budget.ledger) == 1   # one charge: sequential composition inside
    assert h.noise.scale == Fraction(5) / Fraction(9, 10)         # the histogram runs at 0.9 epsilon
    for shown in (repr(h), h._repr_html_(), h.to_frame().attrs["note"]):
        assert "of rows were dropped by max_rows=5" in shown and "95% interval" in shown
    with pdp.budget(epsilon=1.0):
        auto = _release(max_rows="auto")
    assert auto.params["dropped_cap"] == auto.params["max_rows"] and "dropped_share" in auto.params


def test_neighbouring_frames_give_the_same_outcome_class():
    """Removing the unit with the most rows changes no key, warning or charge (only the noisy numbers)."""
    big = int(np.argmax(ROWS))
    neighbour = PANEL[PANEL.pid != big]
    outcomes = []
    for frame in (PANEL, neighbour):
        with pdp.budget(epsilon=1.0) as budget:
            h = _release(frame)
        outcomes.append((sorted(h.params), budget.spent_exact, h.counts.index.tolist()))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("kw, match", [
    ({"report_dropped": 0}, "report_dropped.*greater than 0"), ({"report_dropped": 0.6}, r"\(0, 0.5\]"),
    ({"report_dropped": "5%"}, "share of the loss"), ({"report_dropped": True}, "share of the loss"),
    ({"privacy_unit": None, "max_rows": None}, "privacy_unit"),
    ({"max_rows": None, "max_cells": 2, "max_rows_per_cell": 2}, "max_rows"),
    ({"report_dropped": 1e-18}, "too small"),
])
def test_bad_arguments_are_refused_before_any_charge(kw, match):
    with pdp.budget(epsilon=1.0) as budget:
        with pytest.raises(pdp.ParameterError, match=match):
            _release(**kw)
        with pytest.raises(pdp.ParameterError, match="without by="):
            PANEL.assign(g="a").dp.histogram("x", bins=5, range=(0, 10), epsilon=1.0, privacy_unit="pid", max_rows=5,
                                              report_dropped=0.1, by="g", by_categories=["a"])
    assert budget.spent_exact == 0


def test_the_dask_engine_gives_the_same_release():
    dd = pytest.importorskip("dask.dataframe")
    small = PANEL[PANEL.pid < 60].reset_index(drop=True)
    with pdp.budget(epsilon=2.0):
        local = _release(small)
        distributed = _release(dd.from_pandas(small, npartitions=2))
    assert distributed.params["dropped_noisy"] == local.params["dropped_noisy"]
    assert distributed.counts.equals(local.counts)


@pytest.mark.slow
def test_the_combined_release_is_dp_on_neighbouring_units():
    """assert_dp on the histogram and the noisy (kept, dropped) pair together, D' = D without one unit of 4 rows
    (k = 2: the unit moves the histogram by 2 and the pair by (2, 2), the worst case)."""
    from pandas_dp.testing import assert_dp

    frame = pd.DataFrame({"pid": [0, 0, 0, 0, 1, 2, 2, 3], "x": [1, 1, 1, 1, 1, 6, 6, 6]})
    neighbour = frame[frame.pid != 0].reset_index(drop=True)

    def mech(df, rng):
        return df.dp.histogram("x", bins=2, range=(0, 10), epsilon=1.0, privacy_unit="pid", max_rows=2,
                               report_dropped=0.25, rng=rng)

    def statistic(h):
        return np.concatenate([h.counts.to_numpy(dtype=np.float64), h.params["dropped_noisy"]])

    assert_dp(mech, frame, neighbour, epsilon=1.0, trials=SLOW_TRIALS, rng=0, statistic=statistic)
