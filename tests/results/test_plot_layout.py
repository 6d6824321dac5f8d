"""A plot's own figure lays itself out: a plain ``fig.savefig`` clips no label (issue 44, item 7b).

A heat map with long category labels used to lose the start of its tick labels and its y label off the
left edge unless saved with ``bbox_inches="tight"``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp

LABELS = ["Self-employed in own not incorporated business", "Federal government employee",
          "Private for-profit company employee", "Working without pay in family business"]


def _clipped(ax):
    """Whether anything drawn by the Axes (tick labels, axis labels, title, notes) leaves its figure."""
    fig = ax.figure
    fig.canvas.draw()
    box = ax.get_tightbbox(fig.canvas.get_renderer())
    return box.x0 < -0.5 or box.y0 < -0.5 or box.x1 > fig.bbox.width + 0.5 or box.y1 > fig.bbox.height + 0.5


def _frame():
    rng = np.random.default_rng(0)
    return pd.DataFrame({"class of worker": rng.choice(LABELS, 400), "age": rng.integers(0, 100, 400),
                         "rider": np.arange(400) // 2})


@pytest.mark.parametrize("unit", [False, True])
def test_a_heat_map_with_long_labels_fits_its_figure(unit):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    extra = {"privacy_unit": "rider", "max_rows": 1} if unit else {}
    with pdp.budget(epsilon=1.0):
        h = _frame().dp.histogram(["class of worker", "age"], categories={"class of worker": LABELS},
                                  bins={"age": range(0, 101, 10)}, epsilon=1.0, rng=np.random.default_rng(1),
                                  **extra)
    ax = h.plot()
    assert not _clipped(ax) and (ax.texts or not unit)
    plt.close(ax.figure)


def test_a_one_dimensional_plot_fits_its_figure():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with pdp.budget(epsilon=1.0):
        h = _frame().dp.histogram("class of worker", categories=LABELS, epsilon=1.0, rng=np.random.default_rng(1))
    ax = h.plot()
    assert not _clipped(ax)
    plt.close(ax.figure)
