"""Pictures read well: rendered to PNG (Agg) for every result type and plot option, checked programmatically.

Bars sit at their bins' true positions and widths, axes are in the columns'
units with readable tick labels (``1,000`` not ``1e3``, dates as dates,
categories by name), error bars span the release's intervals, and the
notebook views print counts as ``120,800``.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.domain.grid import Grid
from pandas_dp.results import Histogram
from pandas_dp.results._plot import BAR_LIMIT, EDGE_TICKS
from results_zoo import every_result

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import QuadMesh  # noqa: E402
from matplotlib.container import BarContainer  # noqa: E402
from matplotlib.patches import StepPatch  # noqa: E402


def _render(ax, path) -> None:
    """Draw (tick labels from formatters exist only after a draw) and write a PNG."""
    ax.figure.savefig(path, format="png")
    assert path.stat().st_size > 5_000


def _texts(labels) -> list[str]:
    return [t.get_text() for t in labels]


def _visible(labels) -> list[str]:
    return [t for t in _texts(labels) if t]


def _no_scientific(texts: list[str]) -> None:
    assert not any("e+" in t or "e-" in t or "10^" in t or "$" in t for t in texts), texts


def _bars(ax) -> BarContainer:
    return next(c for c in ax.containers if isinstance(c, BarContainer))


def _error_spans(bars: BarContainer) -> np.ndarray:
    """(lower, upper) of every error bar, from the drawn line segments."""
    segments = bars.errorbar.lines[2][0].get_segments()
    return np.array([[s[0, 1], s[1, 1]] for s in segments])


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.mark.parametrize("name", sorted(k for k, v in every_result().items()
                                        if not isinstance(v, (pd.DataFrame, pdp.RangeAnswer, pdp.MarginalTables))))
def test_every_result_type_renders(name, tmp_path):  # MarginalTables draws small multiples (test_marginals_api)
    result = every_result()[name]
    ax = result.plot()
    _render(ax, tmp_path / f"{name}.png")
    assert ax.get_xlabel() and ax.get_ylabel() and f"ε = {result.epsilon:g}" in ax.get_title()
    _no_scientific(_texts(ax.get_xticklabels()) + _texts(ax.get_yticklabels()))


def test_equal_bins_bars_ticks_and_interval_error_bars(tmp_path):
    h = every_result()["identity"]
    ax = h.plot()
    _render(ax, tmp_path / "identity.png")
    bars = _bars(ax)
    edges = np.arange(0, 101, 10)
    np.testing.assert_allclose([p.get_x() for p in bars.patches], edges[:-1])
    np.testing.assert_allclose([p.get_width() for p in bars.patches], np.diff(edges))
    np.testing.assert_allclose([p.get_height() for p in bars.patches], h.counts.to_numpy())
    assert ax.get_xlim() == (0.0, 100.0)
    assert _texts(ax.get_xticklabels()) == [str(e) for e in edges]
    ci = h.confidence_interval(0.95)
    np.testing.assert_allclose(_error_spans(bars), ci[["lower", "upper"]].to_numpy())
    assert ax.get_xlabel() == "age" and ax.get_ylabel() == "count (± 95% CI)"
    assert any("," in t for t in _visible(ax.get_yticklabels()))   # counts above 1,000 are separated


def test_confidence_level_sets_the_error_bars():
    h = every_result()["identity"]
    ax = h.plot(confidence_level=0.8)
    spans = _error_spans(_bars(ax))
    ci = h.confidence_interval(0.8)  # identity cells: the exact 80% quantile of the noise
    np.testing.assert_allclose(spans[:, 1] - spans[:, 0], (ci["upper"] - ci["lower"]).to_numpy())
    assert (spans[:, 1] - spans[:, 0] != 2 * NormalDist().inv_cdf(0.9) * h.std_error.to_numpy()).all()
    assert ax.get_ylabel() == "count (± 80% CI)"
    with pytest.raises(pdp.ParameterError, match="confidence_level"):
        h.plot(confidence_level=1.2)


def test_unequal_bins_are_drawn_at_their_true_width_with_readable_edges(tmp_path):
    h = every_result()["unequal_bins"]
    edges = np.array([0, 10_000, 25_000, 50_000, 100_000, 250_000, 1_000_000], dtype=float)
    ax = h.plot()
    _render(ax, tmp_path / "unequal.png")
    bars = _bars(ax)
    np.testing.assert_allclose([p.get_x() for p in bars.patches], edges[:-1])
    np.testing.assert_allclose([p.get_width() for p in bars.patches], np.diff(edges))
    assert ax.get_xlim() == (0.0, 1_000_000.0)
    np.testing.assert_allclose(ax.get_xticks(), edges)     # a tick at every edge ...
    shown = _visible(ax.get_xticklabels())
    assert shown[0] == "0" and shown[-1] == "1,000,000"
    assert set(shown) <= {"0", "10,000", "25,000", "50,000", "100,000", "250,000", "1,000,000"}
    # ... but no two labels drawn on top of each other (crowded ones are left blank)
    renderer = ax.figure.canvas.get_renderer()
    boxes = sorted((t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_text()),
                   key=lambda b: b.x0)
    assert all(a.x1 <= b.x0 for a, b in zip(boxes, boxes[1:]))


def test_density_draws_count_per_unit_width(tmp_path):
    h = every_result()["unequal_bins"]
    ax = h.plot(density=True)
    _render(ax, tmp_path / "density.png")
    bars = _bars(ax)
    widths = np.array([p.get_width() for p in bars.patches])
    heights = np.array([p.get_height() for p in bars.patches])
    np.testing.assert_allclose(heights, h.counts.to_numpy() / widths)
    np.testing.assert_allclose((heights * widths).sum(), h.counts.sum())   # areas are counts
    ci = h.confidence_interval()
    np.testing.assert_allclose(_error_spans(bars), ci[["lower", "upper"]].to_numpy() / widths[:, None])
    assert ax.get_ylabel() == "count per unit of income (± 95% CI)"
    with pytest.raises(pdp.ParameterError, match="density"):
        every_result()["categories"].plot(density=True)
    with pytest.raises(pdp.ParameterError, match="density"):
        h.plot(density="yes")


def test_categories_are_tick_labels(tmp_path):
    h = every_result()["categories"]
    ax = h.plot()
    _render(ax, tmp_path / "categories.png")
    assert _texts(ax.get_xticklabels()) == ["F", "M"]
    assert ax.get_xlim() == (-0.5, 1.5) and ax.get_xlabel() == "sex"
    np.testing.assert_allclose([p.get_height() for p in _bars(ax).patches], h.counts.to_numpy())


def test_heat_map_axes_are_in_the_columns_units(tmp_path):
    g = every_result()["grid"]                                  # state (rows) x age bins (columns)
    ax = g.plot()
    _render(ax, tmp_path / "grid.png")
    mesh = next(c for c in ax.collections if isinstance(c, QuadMesh))
    np.testing.assert_allclose(mesh.get_array().reshape(g.domain.shape), g.counts.to_numpy().reshape(g.domain.shape))
    assert ax.get_xlim() == (0.0, 100.0) and ax.get_ylim() == (-0.5, 4.5)
    assert _texts(ax.get_xticklabels()) == ["0", "20", "40", "60", "80", "100"]
    assert _texts(ax.get_yticklabels()) == list(g.domain.dims[0].categories)
    assert ax.get_xlabel() == "age" and ax.get_ylabel() == "state"
    colorbar = ax.figure.axes[-1]
    assert colorbar.get_ylabel() == "count"
    _no_scientific(_texts(colorbar.get_yticklabels()))


def test_heat_map_with_many_numeric_bins_and_density(tmp_path):
    c = every_result()["dpcube_2d_uniform"]                     # age (20 bins) x income (16 bins)
    assert c.domain.shape[0] > EDGE_TICKS and c.domain.shape[1] > EDGE_TICKS
    ax = c.plot(density=True)
    _render(ax, tmp_path / "dpcube_density.png")
    mesh = next(col for col in ax.collections if isinstance(col, QuadMesh))
    area = np.outer(np.full(20, 5.0), np.full(16, 32_000.0))
    np.testing.assert_allclose(mesh.get_array().reshape(20, 16), c.counts.to_numpy().reshape(20, 16) / area)
    assert ax.get_xlim() == (0.0, 512_000.0) and ax.get_ylim() == (0.0, 100.0)
    xt = _visible(ax.get_xticklabels())
    assert "80,000" in xt and ax.xaxis.get_offset_text().get_text() == ""
    _no_scientific(xt + _visible(ax.get_yticklabels()))
    assert ax.figure.axes[-1].get_ylabel() == "count per unit of income × unit of age"


def test_hierarchical_2d_heat_map(tmp_path):
    t = every_result()["hierarchical_2d"]
    ax = t.plot()
    _render(ax, tmp_path / "tree2d.png")
    assert ax.get_xlim() == (0.0, 512_000.0) and ax.get_ylim() == (0.0, 100.0)
    assert ax.get_xlabel() == "income" and ax.get_ylabel() == "age"


def test_many_bins_are_a_step_line_in_an_interval_band(tmp_path):
    frame = pd.DataFrame({"x": np.arange(50_000) % 1_000})
    with pdp.budget(epsilon=1.0):
        h = frame.dp.histogram("x", bins=BAR_LIMIT * 5, range=(0, 1_000), epsilon=1.0,
                               rng=np.random.default_rng(0))
    ax = h.plot()
    _render(ax, tmp_path / "many.png")
    assert not any(isinstance(c, BarContainer) for c in ax.containers)
    steps = [p for p in ax.patches if isinstance(p, StepPatch)]
    assert len(steps) == 2
    values, edges, baseline = steps[0].get_data()
    np.testing.assert_allclose(values, h.counts.to_numpy())
    np.testing.assert_allclose(edges, np.linspace(0, 1_000, BAR_LIMIT * 5 + 1))
    ci = h.confidence_interval()
    band_upper, _, band_lower = steps[1].get_data()
    np.testing.assert_allclose(band_upper, ci["upper"].to_numpy())
    np.testing.assert_allclose(band_lower, ci["lower"].to_numpy())
    assert _texts(ax.get_legend().get_texts()) == ["95% interval"]
    assert ax.get_xlim() == (0.0, 1_000.0)


@dataclass(frozen=True)
class _IntervalDim:
    """A public dimension given by an IntervalIndex (as datetime/timedelta domains expose theirs)."""

    column: str
    index: pd.IntervalIndex

    @property
    def size(self) -> int:
        return len(self.index)


def _release_over(breaks, column: str) -> Histogram:
    index = pd.IntervalIndex.from_breaks(breaks, closed="left", name=column)
    counts = pd.Series(np.linspace(1_000, 150_000, len(index)), index=index, name="estimate")
    variance = pd.Series(np.full(len(index), 2e6), index=index, name="variance")
    return Histogram(counts=counts, variance=variance, epsilon=1.0, method="identity", params={"noise": "x"},
                     domain=Grid((_IntervalDim(column, index),)))


def test_dates_read_as_dates(tmp_path):
    months = _release_over(pd.date_range("2024-01-01", periods=7, freq="MS"), "month")
    ax = months.plot()
    _render(ax, tmp_path / "months.png")
    assert _visible(ax.get_xticklabels())[0] == "2024-01-01" and _visible(ax.get_xticklabels())[-1] == "2024-07-01"
    widths = [p.get_width() for p in _bars(ax).patches]
    assert widths == [31, 29, 31, 30, 31, 30]                    # days: true width of each month
    assert "[2024-01-01, 2024-02-01)" in repr(months)
    days = _release_over(pd.date_range("2024-01-01", periods=60, freq="D"), "day")
    ax = days.plot(density=True)
    _render(ax, tmp_path / "days.png")
    assert ax.get_ylabel() == "count per day (± 95% CI)"
    assert not any(t.replace(".", "").isdigit() and len(t) > 4 for t in _visible(ax.get_xticklabels()))


def test_timedeltas_read_as_durations(tmp_path):
    delays = _release_over(pd.timedelta_range("0h", periods=5, freq="6h"), "delay")
    ax = delays.plot(density=True)
    _render(ax, tmp_path / "delays.png")
    assert _visible(ax.get_xticklabels()) == ["00:00:00", "06:00:00", "12:00:00", "18:00:00", "1 days"]
    assert ax.get_ylabel() == "count per hour (± 95% CI)"


def test_more_than_two_dimensions_say_what_to_do():
    frame = pd.DataFrame({"a": [1], "b": [1], "c": [1]})
    with pdp.budget(epsilon=1.0):
        h = frame.dp.histogram(["a", "b", "c"], bins=2, range=(0, 2), epsilon=1.0, rng=np.random.default_rng(0))
    with pytest.raises(pdp.ParameterError, match=r"marginal\(\[.a., .b.\]\)\.plot\(\)"):
        h.plot()


def test_unattributed_band_and_separators(tmp_path):
    u = every_result()["unattributed"]
    ax = u.plot()
    _render(ax, tmp_path / "sbar.png")
    assert "1,000" in _visible(ax.get_xticklabels())
    ci = u.confidence_interval()
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert band.min() == pytest.approx(ci["lower"].min()) and band.max() == pytest.approx(ci["upper"].max())
    assert _texts(ax.get_legend().get_texts()) == ["95% interval"]


def test_count_of_counts_log_axes_read_as_numbers(tmp_path):
    coc = every_result()["count_of_counts"]
    ax = coc.plot("state")
    _render(ax, tmp_path / "coc.png")
    xt, yt = _visible(ax.get_xticklabels()), _visible(ax.get_yticklabels())
    assert "1" in xt and "10" in xt and "100" in yt
    _no_scientific(xt + yt)
    assert _visible(ax.get_xticklabels(minor=True)) == []


def test_views_print_counts_with_separators():
    results = every_result()
    identity = results["identity"]
    text, page = repr(identity), identity._repr_html_()
    big = identity.counts[identity.counts >= 1_000].iloc[0]
    assert f"{big:,.0f}" in text and f"{big:,.0f} ± " in page
    assert "[0, 10)" in text and "[0, 10)" in page and "[0.0, 10.0)" not in text
    tree = results["hierarchical"]
    assert "[8,000, 16,000)" in repr(tree)
    estimate = tree.counts.iloc[2]
    assert f"{estimate:,.1f}" in repr(tree)                          # non-integral: one decimal
    for name, result in results.items():
        if isinstance(result, (pd.DataFrame, pdp.RangeAnswer)):
            continue
        for shown in (repr(result), result._repr_html_()):
            assert "e+0" not in shown, name


def test_count_of_counts_options(tmp_path):
    coc = every_result()["count_of_counts"]
    ax = coc.plot("county", max_regions=3, cumulative=True)
    _render(ax, tmp_path / "counties.png")
    drawn = _texts(ax.get_legend().get_texts())
    largest = coc.totals("county").sort_values(ascending=False).index[:3]
    assert len(ax.get_lines()) == 3 and drawn == [str(r) for r in largest]
    assert ax.get_ylabel() == "groups of at least this size" and "county" in ax.get_title()
    with pytest.raises(pdp.ParameterError, match="Unknown region"):
        coc.plot("county", region="nowhere")


def test_unattributed_confidence_level_and_style_keywords(tmp_path):
    u = every_result()["unattributed"]
    ax = u.plot(confidence_level=0.5, color="black")
    _render(ax, tmp_path / "sbar50.png")
    ci = u.confidence_interval(0.5)
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert band.max() == pytest.approx(ci["upper"].max())
    assert _texts(ax.get_legend().get_texts()) == ["50% interval"]
    assert matplotlib.colors.same_color(ax.get_lines()[0].get_color(), "black")


def test_style_keywords_reach_the_bars_and_the_mesh():
    bars = _bars(every_result()["identity"].plot(color="tab:green"))
    assert all(matplotlib.colors.same_color(p.get_facecolor(), "tab:green") for p in bars.patches)
    ax = every_result()["grid"].plot(cmap="magma")
    mesh = next(c for c in ax.collections if isinstance(c, QuadMesh))
    assert mesh.get_cmap().name == "magma"


def test_small_multiples_of_a_2d_table_share_one_colour_scale_and_state_their_intervals():
    """Issue 29, item 4: one colour scale (and one colour bar) for every panel, panels titled 'level = region',
    the y label on the first column only, and the cells' interval half-width in the title."""
    import matplotlib.pyplot as plt

    from pandas_dp.data import load_persons

    persons = load_persons()
    states = ["Avalon", "Borealis", "Cascadia", "Dunmore", "Estoria"]
    with pdp.budget(epsilon=1.0):
        t = persons.dp.histogram(["sex", "age"], categories={"sex": ["F", "M"]}, bins={"age": range(0, 101, 20)},
                                 by="state", by_categories=states, epsilon=1.0, rng=np.random.default_rng(0))
    axes = t.plot()
    fig = axes[0].figure
    meshes = [ax.collections[0] for ax in axes]
    assert len({m.norm.vmin for m in meshes}) == 1 and len({m.norm.vmax for m in meshes}) == 1
    shown = t.table("state").to_numpy()
    assert meshes[0].norm.vmin == shown.min() and meshes[0].norm.vmax == shown.max()
    assert len([a for a in fig.axes if a.get_visible()]) == len(axes) + 1  # the panels and one colour bar
    assert [ax.get_title() for ax in axes][0].startswith("state = ")
    assert axes[0].get_ylabel() == "sex" and all(ax.get_ylabel() == "" for ax in axes[1:4])
    half = float(t.confidence_interval(0.95).eval("(upper - lower) / 2").xs("state", level=0).iloc[0])
    assert "95% interval per cell: ± " in fig._suptitle.get_text()
    assert f"{half:.4g}"[:3].rstrip(".") in fig._suptitle.get_text()
    plt.close(fig)


def test_long_category_labels_wrap_on_a_heat_map():
    import matplotlib.pyplot as plt

    long = ["Management, business and financial operations", "Service occupations"]
    frame = pd.DataFrame({"job": long * 5, "age": np.arange(10) * 9})
    with pdp.budget(epsilon=1.0):
        h = frame.dp.histogram(["job", "age"], categories={"job": long}, bins={"age": [0, 45, 90]}, epsilon=1.0,
                               rng=np.random.default_rng(0))
    ax = h.plot()
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert all(max(map(len, text.split("\n"))) <= 18 for text in labels) and "\n" in labels[0]
    assert ax.get_ylabel() == "job" and ax.get_xlabel() == "age"
    plt.close(ax.figure)
