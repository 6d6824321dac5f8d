"""``GeographyMarginalTables.plot``: small multiples of one table by region, on one scale, with error bars."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.errors import ParameterError

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
plt = pytest.importorskip("matplotlib.pyplot")

HIER = pd.DataFrame({"state": ["A", "A", "B"], "county": ["a1", "a2", "b1"]})
COUNTY_STATE = dict(zip(HIER["county"], HIER["state"]))


def _tables(**kw):
    rng = np.random.default_rng(0)
    county = rng.choice(HIER["county"], 300)
    frame = pd.DataFrame({"state": [COUNTY_STATE[c] for c in county], "county": county,
                          "age": rng.integers(0, 100, 300), "sex": rng.choice(["F", "M"], 300)})
    with pdp.budget(rho=1.0):
        return frame.dp.marginals([("age", "sex")], bins={"age": [0, 18, 65, 100]}, categories={"sex": ["F", "M"]},
                                  rho=1.0, by=["state", "county"], hierarchy=HIER, rng=np.random.default_rng(1), **kw)


T = _tables()


def test_one_panel_per_region_on_one_scale_with_error_bars():
    axes = T.plot("age", level="county")
    assert sorted(a.get_title() for a in axes) == ["county = a1", "county = a2", "county = b1"]
    assert len({a.get_ylim() for a in axes}) == 1                     # one count scale
    assert all(a.get_xlabel() == "age" for a in axes[-1:]) and axes[0].get_ylabel().startswith("count")
    # error bars: the region's table's 95% intervals (from each cell's exact std_error), as the title says
    ci = T.table("age", level="county", region="a1").confidence_interval(0.95)
    panel = next(a for a in axes if a.get_title() == "county = a1")
    bars = next(c for c in panel.containers if hasattr(c, "patches"))
    heights = np.array([p.get_height() for p in bars.patches])
    np.testing.assert_allclose(heights, T.table("age", level="county", region="a1").counts.to_numpy())
    segments = bars.errorbar.lines[2][0].get_segments()
    np.testing.assert_allclose([s[1, 1] - s[0, 1] for s in segments], ci["upper"] - ci["lower"], rtol=1e-6)
    assert "95% interval per cell: ± " in axes[0].figure._suptitle.get_text()
    plt.close("all")


def test_two_column_tables_share_one_colour_scale_and_max_regions_caps_the_panels():
    axes = T.plot(level="county", max_regions=2)                      # default: the first table, (age, sex)
    assert len(axes) == 2 and len({a.collections[0].get_clim() for a in axes}) == 1
    shown = [T.table(("age", "sex"), level="county", region=a.get_title().split(" = ")[1]).counts for a in axes]
    assert axes[0].collections[0].get_clim() == (min(s.min() for s in shown), max(s.max() for s in shown))
    assert T.plot("sex", level="state", region="B").get_title() == "state = B"
    with pytest.raises(ParameterError):
        T.plot("sex", level="county", ax=axes[0])                     # ax= is for one region
    with pytest.raises(ParameterError):
        T.plot("sex", level="city")
    plt.close("all")
