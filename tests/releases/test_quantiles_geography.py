"""``df.dp.quantiles(..., by=...)``: every region's quantiles of a public geography, one charge (issue 43).

References computed here: the same release as ``aggregate``'s ``("quantile", q)`` statistics by geography (the
mechanism it is made of, so the same numbers for a seed), pandas' ``groupby(...).quantile`` per level on the
clipped values at a huge epsilon (within one sub-bin), and the tidy layout DESIGN section 8 names.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.algorithms.aggregate import CELL_STEPS
from pandas_dp.releases.value_bounds import round_step
from pandas_dp.testing import assert_dp
from _slow import QUICK_TRIALS, SLOW_TRIALS

RNG = np.random.default_rng(8)
N = 1200
HIER = pd.DataFrame({"state": ["A", "A", "B", "B", "B"], "county": ["a1", "a2", "b1", "b2", "b3"]})
_COUNTY = RNG.choice(HIER.county.to_numpy(), N)
FRAME = pd.DataFrame({"state": HIER.set_index("county").state.loc[_COUNTY].to_numpy(), "county": _COUNTY,
                      "income": RNG.lognormal(10.3, 0.8, N), "pid": np.repeat(np.arange(N // 3), 3)})
BOUNDS = (0, 250_000)
QS = [0.1, 0.5, 0.9]


def release(frame=FRAME, *, q=QS, epsilon=1.0, seed=0, **kw):
    with pdp.budget(epsilon=10**12):
        return frame.dp.quantiles("income", q, bounds=kw.pop("bounds", BOUNDS), by=["state", "county"],
                                  hierarchy=HIER, epsilon=epsilon, rng=np.random.default_rng(seed), **kw)


def test_every_region_and_q_is_one_tidy_row_as_aggregate_releases_it():
    got = release()
    table = got.to_frame()
    assert list(table.columns) == ["level", "region", "q", "estimate", "ci_low", "ci_high", "confidence_level"]
    regions = [("national", "national"), ("state", "A"), ("state", "B"), *(("county", c) for c in HIER.county)]
    assert list(zip(table["level"], table["region"]))[::3] == regions and table["q"].tolist() == QS * len(regions)
    assert ((table["ci_low"] <= table["estimate"]) & (table["estimate"] <= table["ci_high"])).all()
    with pdp.budget(epsilon=10**12):
        same = FRAME.dp.aggregate([], {"income": [("quantile", q) for q in QS]}, bounds={"income": BOUNDS},
                                  resolution={"income": round_step((BOUNDS[1] - BOUNDS[0]) / 4096)}, by=["state", "county"],
                                  hierarchy=HIER, epsilon=1.0, rng=np.random.default_rng(0))
    wide = same.to_frame()
    for i, q in enumerate(QS):
        np.testing.assert_array_equal(table["estimate"].to_numpy()[i::3],
                                      wide[("income", f"quantile({q!r})")].to_numpy())
    assert got.params["mechanism"].startswith("sub-bin CDF") and got.params["q"] == QS
    # The released q at another level of interval, read again from the same release (post-processing).
    again = got.quantile(QS, confidence_level=0.5)
    np.testing.assert_array_equal(again["estimate"], table["estimate"])
    assert (again["ci_high"] - again["ci_low"] <= table["ci_high"] - table["ci_low"]).all()
    with pytest.raises(pdp.ParameterError, match="the q they released"):
        got.quantile(0.25, confidence_level=0.9)


def test_a_huge_epsilon_gives_every_regions_quantiles_within_two_sub_bins():
    """pandas interpolates between the two values around the quantile, which may sit in the next sub-bin: the
    release's value is in the sub-bin where the exact CDF reaches q, so the two are at most two sub-bins apart."""
    table = release(epsilon=1e9).to_frame().set_index(["level", "region", "q"])["estimate"]
    width = 2 * (BOUNDS[1] - BOUNDS[0]) / CELL_STEPS
    clipped = FRAME.assign(income=FRAME.income.clip(*BOUNDS), national="national")
    for level, column in (("national", "national"), ("state", "state"), ("county", "county")):
        want = clipped.groupby(column).income.quantile(QS)
        for (region, q), value in want.items():
            assert abs(table[(level, region, q)] - value) <= width, (level, region, q)


def test_one_charge_recorded_as_quantiles_and_bad_input_spends_nothing():
    with pdp.budget(epsilon=1.0) as budget:
        FRAME.dp.quantiles("income", 0.5, bounds=BOUNDS, by="state", by_categories=["A", "B"], epsilon=0.5,
                           rng=np.random.default_rng(1))
        with pytest.raises(pdp.ParameterError, match="strictly between 0 and 1"):
            FRAME.dp.quantiles("income", [0.0, 0.5], bounds=BOUNDS, by="state", by_categories=["A", "B"],
                               epsilon=0.5)
        with pytest.raises(pdp.PandasDPError, match="public knowledge"):
            FRAME.dp.quantiles("income", 0.5, bounds=BOUNDS, by="state", epsilon=0.5)
    assert budget.spent == 0.5 and budget.ledger["method"].tolist() == ["quantiles"]


def test_dask_equals_pandas():
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    with dask.config.set(scheduler="synchronous"):
        got = release(dd.from_pandas(FRAME, npartitions=3)).to_frame()
    pd.testing.assert_frame_equal(got, release().to_frame())


D = pd.DataFrame({"r": ["a", "a", "b"], "v": [1.0, 3.0, 2.0], "u": [0, 1, 2]})
#: One more row at a sub-bin edge of the bounds (0, 4): the edge of sub-bin 32 of 64.
D_ROW = pd.concat([D, pd.DataFrame({"r": ["a"], "v": [2.0], "u": [9]})], ignore_index=True)
#: One more unit of three rows, two kept (max_rows=2), at the top bound in one region.
D_UNIT = pd.concat([D, pd.DataFrame({"r": ["b"] * 3, "v": [4.0] * 3, "u": [9] * 3})], ignore_index=True)


def _by_region(**kw):
    return lambda df, rng: df.dp.quantiles("v", [0.25, 0.5], bounds=(0, 4), by="r", by_categories=["a", "b"],
                                           epsilon=1.0, rng=rng, **kw)


def _vector(r):
    return np.nan_to_num(r.to_frame()[["estimate", "ci_low", "ci_high"]].to_numpy(dtype=float).ravel(), nan=-1.0)


def test_quantiles_by_geography_are_dp_for_a_row_at_a_sub_bin_edge():
    report = assert_dp(_by_region(), D, D_ROW, epsilon=1.0, trials=QUICK_TRIALS, statistic=_vector, rng=45)
    assert report.charged_per_run == 1.0


@pytest.mark.slow
def test_quantiles_by_geography_are_dp_for_whole_units():
    report = assert_dp(_by_region(privacy_unit="u", max_rows=2), D, D_UNIT, epsilon=1.0, trials=SLOW_TRIALS,
                       statistic=_vector, rng=46)
    assert report.charged_per_run == 1.0
