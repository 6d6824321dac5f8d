"""A geography plot's title rounds its interval half-widths as a person would (issue 44, item 7c).

It printed ``± 7.69802 to 8.00162``; now two significant digits of the smallest, the largest to the same
decimal place: ``± 7.7 to 8.0``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import pandas_dp as pdp
from pandas_dp.data import load_persons
from pandas_dp.results._geography_plot import interval_half_text


@pytest.mark.parametrize("half, text", [
    ([7.69802, 8.00162], "± 7.7 to 8.0"),
    ([2.8, 2.8], "± 2.8"),
    ([2.83, 2.84], "± 2.8"),
    ([0.04567, 0.31], "± 0.046 to 0.310"),
    ([12.4, 130.2], "± 12 to 130"),
    ([1534.2, 20512.9], "± 1,534 to 20,513"),
])
def test_half_widths_read_as_a_person_writes_them(half, text):
    assert interval_half_text(np.array(half), 0.95) == f"95% interval per cell: {text}"


def test_the_small_multiples_title_is_rounded():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    states = ["Avalon", "Borealis", "Cascadia", "Dunmore", "Estoria"]
    with pdp.budget(epsilon=1.0):
        t = load_persons().dp.histogram(["sex", "age"], categories={"sex": ["F", "M"]},
                                        bins={"age": range(0, 101, 20)}, by="state", by_categories=states,
                                        level_weights=[1, 3], epsilon=1.0, rng=np.random.default_rng(0))
    axes = t.plot()
    title = axes[0].figure._suptitle.get_text()
    found = re.search(r"± ([\d,.]+)(?: to ([\d,.]+))?$", title)
    assert found, title
    for number in filter(None, found.groups()):
        assert len(number.replace(",", "").replace(".", "").lstrip("0")) <= 3, title
    plt.close(axes[0].figure)
