"""Pictures of histogram releases, in the units of the released columns.

* 1-D numeric bins: bars drawn at their true width (``edges[i]`` to
  ``edges[i+1]``), error bars from the release's confidence intervals; with
  ``density=True`` the height is the count per unit of the column (the area
  of a bar is its count). More than :data:`BAR_LIMIT` bins: a filled step
  line with the interval as a shaded band (thousands of bars do not read).
* 1-D categories: one bar per category, categories as tick labels.
* 2-D grids: a heat map whose axes are the columns' values (cells at their
  true width, bin edges as tick labels) or categories.

Numbers on axes carry thousands separators, dates read as dates. Only the
release and its public domain are drawn (post-processing: no privacy cost).
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp._utils.optional import import_optional
from pandas_dp.errors import ParameterError
from pandas_dp.results._base import normal_quantile
from pandas_dp.results._format import release_note, format_edge

__all__ = ["BAR_LIMIT", "EDGE_TICKS", "AxisScale", "axis_scale", "plot_grid", "readable_numbers"]

#: Most bins drawn as bars; more are drawn as a step line with an interval band.
BAR_LIMIT = 200
#: Most bins (per axis) whose every edge gets a tick label; more get evenly spaced ticks.
EDGE_TICKS = 12

_TIMEDELTA_UNITS = (("day", pd.Timedelta(days=1)), ("hour", pd.Timedelta(hours=1)),
                    ("minute", pd.Timedelta(minutes=1)), ("second", pd.Timedelta(seconds=1)))


@dataclass(frozen=True)
class AxisScale:
    """One dimension of a release laid out on a plot axis.

    Attributes
    ----------
    column : str
        The released column.
    kind : {"number", "date", "timedelta", "category"}
    bounds : ndarray
        ``k + 1`` cell boundaries in drawing units (bin edges; ``i - 0.5`` for categories).
    labels : list of str
        Edge labels (``k + 1``) for bins, category labels (``k``) for categories.
    unit : str
        What one drawing unit is (``"day"`` for dates; the column for numbers).
    step : pandas.Timedelta or None
        Length of one drawing unit on a timedelta axis.
    """

    column: str
    kind: str
    bounds: np.ndarray
    labels: list[str]
    unit: str
    step: pd.Timedelta | None = None

    @property
    def size(self) -> int:
        return int(self.bounds.size - 1)

    @property
    def widths(self) -> np.ndarray:
        """Width of every cell in drawing units (1 for a category)."""
        return np.ones(self.size) if self.kind == "category" else np.diff(self.bounds)

    def tick_text(self, value: float) -> str:
        """Label of an arbitrary position on a numeric or timedelta axis."""
        if self.kind == "timedelta" and self.step is not None:
            return format_edge(value * self.step)
        return format_edge(float(value))


def axis_scale(dim: Any) -> AxisScale:
    """Lay out a public dimension (``BinDomain``/``CategoryDomain``) from its index."""
    index = dim.index
    column = str(dim.column)
    if not isinstance(index, pd.IntervalIndex):
        return AxisScale(column, "category", np.arange(index.size + 1) - 0.5, [str(v) for v in index], column)
    edges = index.left.append(index.right[-1:])
    labels = [format_edge(e) for e in edges]
    if isinstance(edges, pd.DatetimeIndex):
        mdates = import_optional("matplotlib.dates", extra="plot", purpose="plot()")
        return AxisScale(column, "date", np.asarray(mdates.date2num(edges.to_pydatetime())), labels, "day")
    if isinstance(edges, pd.TimedeltaIndex):
        name, step = next(((n, s) for n, s in _TIMEDELTA_UNITS if (edges % s == pd.Timedelta(0)).all()),
                          _TIMEDELTA_UNITS[-1])
        return AxisScale(column, "timedelta", (edges / step).to_numpy(dtype=np.float64), labels, name, step)
    return AxisScale(column, "number", edges.to_numpy(dtype=np.float64), labels, column)


def _axis_points(ax: Any, vertical: bool) -> float:
    fig = ax.figure
    box = ax.get_position()
    return (box.height * fig.get_figheight() if vertical else box.width * fig.get_figwidth()) * 72.0


def _spaced(positions: np.ndarray, labels: list[str], span_points: float, vertical: bool,
            fontsize: float = 10.0) -> list[str]:
    """Blank the labels that would overlap their kept neighbour (the last label is always kept)."""
    lo, hi = positions[0], positions[-1]
    at = (positions - lo) / (hi - lo) * span_points if hi > lo else np.zeros(positions.size)

    def room(a: str, b: str) -> float:
        return fontsize * 1.3 if vertical else 0.6 * fontsize * (len(a) + len(b)) / 2 + 4

    out = [""] * len(labels)
    kept: list[int] = []
    for i in range(len(labels)):
        if kept and at[i] - at[kept[-1]] < room(labels[i], labels[kept[-1]]):
            if i != len(labels) - 1:
                continue
            while kept and at[i] - at[kept[-1]] < room(labels[i], labels[kept[-1]]):
                out[kept.pop()] = ""
        out[i] = labels[i]
        kept.append(i)
    return out


def _set_ticks(ax: Any, scale: AxisScale, which: str) -> None:
    ticker = import_optional("matplotlib.ticker", extra="plot", purpose="plot()")
    axis = ax.xaxis if which == "x" else ax.yaxis
    vertical = which == "y"
    if scale.kind == "category":
        centers = np.arange(scale.size)
        step = max(1, math.ceil(scale.size / 30))
        # Long labels wrap at 18 characters (a figure's margin would cut them; issue 29, item 4).
        axis.set_ticks(centers[::step], [textwrap.fill(str(t), 18) for t in scale.labels[::step]])
        width = sum(0.6 * 10 * len(t) + 6 for t in scale.labels[::step])
        if not vertical and width > _axis_points(ax, False):
            ax.tick_params(axis="x", labelrotation=45)
            for text in axis.get_ticklabels():
                text.set_horizontalalignment("right")
        return
    if scale.size <= EDGE_TICKS:
        axis.set_ticks(scale.bounds, _spaced(scale.bounds, scale.labels, _axis_points(ax, vertical), vertical))
    elif scale.kind == "date":
        mdates = import_optional("matplotlib.dates", extra="plot", purpose="plot()")
        locator = mdates.AutoDateLocator()
        axis.set_major_locator(locator)
        axis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    else:
        axis.set_major_locator(ticker.MaxNLocator(nbins=8))
        axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: scale.tick_text(v)))


def _count_formatter() -> Any:
    ticker = import_optional("matplotlib.ticker", extra="plot", purpose="plot()")
    return ticker.FuncFormatter(lambda v, _: format_edge(float(v)))


def readable_numbers(axis: Any, *, log: bool = False) -> None:
    """Tick labels with thousands separators (``1,000``, not ``1e3``); on a log axis, decades only."""
    ticker = import_optional("matplotlib.ticker", extra="plot", purpose="plot()")
    axis.set_major_formatter(_count_formatter())
    if log:
        axis.set_major_locator(ticker.LogLocator(base=10))
        axis.set_minor_formatter(ticker.NullFormatter())


def _density_unit(scales: list[AxisScale]) -> str:
    numeric = [s for s in scales if s.kind != "category"]
    if not numeric:
        raise ParameterError("plot(density=True) divides counts by bin widths, and this release has only "
                             "categories (no widths). Drop density=True.")
    return " × ".join(f"unit of {s.unit}" if s.kind == "number" else s.unit for s in numeric)


def _plot_1d(result: Any, ax: Any, scale: AxisScale, confidence_level: float, density: bool,
             kwargs: dict[str, Any]) -> None:
    estimate = result.counts.to_numpy(dtype=np.float64)
    ci = result.confidence_interval(confidence_level)
    lower, upper = ci["lower"].to_numpy(), ci["upper"].to_numpy()
    per = 1.0 / scale.widths if density else 1.0
    height, lower, upper = estimate * per, lower * per, upper * per
    if scale.kind == "category":
        if density:
            _density_unit([scale])
        ax.bar(np.arange(scale.size), height, width=0.8, yerr=np.vstack([height - lower, upper - height]),
               capsize=2 if scale.size <= 50 else 0, ecolor="0.25", **kwargs)
        ax.set_xlim(scale.bounds[0], scale.bounds[-1])
    elif scale.size <= BAR_LIMIT:
        kwargs.setdefault("edgecolor", "white")
        kwargs.setdefault("linewidth", 0.5 if scale.size <= 100 else 0)
        ax.bar(scale.bounds[:-1], height, width=scale.widths, align="edge",
               yerr=np.vstack([height - lower, upper - height]), capsize=2 if scale.size <= 50 else 0,
               ecolor="0.25", **kwargs)
        ax.set_xlim(scale.bounds[0], scale.bounds[-1])
    else:
        ax.stairs(height, scale.bounds, fill=True, **kwargs)
        ax.stairs(upper, scale.bounds, baseline=lower, fill=True, color="0.2", alpha=0.3,
                  label=f"{float(confidence_level):.0%} interval")
        ax.legend(loc="best", fontsize="small")
        ax.set_xlim(scale.bounds[0], scale.bounds[-1])
    _set_ticks(ax, scale, "x")
    ax.yaxis.set_major_formatter(_count_formatter())
    ax.set_xlabel(scale.column)
    what = f"count per {_density_unit([scale])}" if density else "count"
    ax.set_ylabel(f"{what} (± {float(confidence_level):.0%} CI)")


def _plot_2d(result: Any, ax: Any, rows: AxisScale, cols: AxisScale, density: bool,
             kwargs: dict[str, Any], colorbar: bool = True) -> None:
    values = result.counts.to_numpy(dtype=np.float64).reshape(rows.size, cols.size)
    label = "count"
    if density:
        label = f"count per {_density_unit([cols, rows])}"
        values = values / np.outer(rows.widths, cols.widths)
    mesh = ax.pcolormesh(cols.bounds, rows.bounds, values, shading="flat", **kwargs)
    if colorbar:  # small multiples draw one shared colour bar for all their panels instead
        bar = ax.figure.colorbar(mesh, ax=ax, label=label)
        bar.ax.yaxis.set_major_formatter(_count_formatter())
    ax.set_xlim(cols.bounds[0], cols.bounds[-1])
    ax.set_ylim(rows.bounds[0], rows.bounds[-1])
    _set_ticks(ax, cols, "x")
    _set_ticks(ax, rows, "y")
    ax.set_xlabel(cols.column)
    ax.set_ylabel(rows.column)


def plot_grid(result: Any, ax: Any = None, *, confidence_level: float = 0.95, density: bool = False,
              colorbar: bool = True, **kwargs: Any) -> Any:
    """Draw a 1-D or 2-D histogram release (see the module notes); returns the matplotlib Axes."""
    plt = import_optional("matplotlib.pyplot", extra="plot", purpose=f"{type(result).__name__}.plot()")
    normal_quantile(confidence_level)  # validate before drawing anything
    grid = result.domain
    if grid.ndim > 2:
        raise ParameterError(f"plot() draws 1-D and 2-D releases; this one has {grid.ndim} dimensions "
                             f"{list(grid.columns)}. Plot a marginal, with its exact variances: "
                             f"result.marginal({list(grid.columns)[:2]}).plot().")
    if not isinstance(density, bool):
        raise ParameterError(f"The 'density' parameter of plot() must be True or False. Got {density!r}.")
    scales = [axis_scale(d) for d in grid.dims]
    if density:
        _density_unit(scales)  # check before drawing
    if ax is None:  # a figure of its own lays itself out: a plain savefig clips no tick label, axis label or note
        _, ax = plt.subplots(figsize=(8, 4) if grid.ndim == 1 else (8, 5), layout="constrained")
    if grid.ndim == 1:
        _plot_1d(result, ax, scales[0], confidence_level, density, dict(kwargs))
    else:
        _plot_2d(result, ax, scales[0], scales[1], density, dict(kwargs), colorbar=colorbar)
    ax.set_title(f"{result.method} histogram, {result._guarantee()}")   # measure and noise: ρ = 0.1 (zCDP), σ = 2.2
    note = release_note(result.params)
    if note:  # the bias of bounding is not in the error bars: say so on the picture
        text = ax.annotate(note, xy=(0, -0.16 if grid.ndim == 1 else -0.2), xycoords="axes fraction",
                           fontsize="x-small", va="top", wrap=True)
        # Lines no wider than the Axes (about 0.55 em a character): a laid-out figure then keeps the note
        # under its Axes instead of widening the Axes' column for it.
        chars = int(0.8 * _axis_points(ax, False) / (0.55 * text.get_fontsize()))
        text.set_text(textwrap.fill(note, max(30, chars)))
    return ax
