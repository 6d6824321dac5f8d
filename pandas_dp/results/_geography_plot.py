"""Plots of a release by geography: one region's histogram, or small multiples of a level's largest regions."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pandas_dp._utils.optional import import_optional
from pandas_dp.errors import ParameterError
from pandas_dp.results._checks import check_count
from pandas_dp.results._format import format_edge
from pandas_dp.results._plot import _count_formatter

__all__ = ["plot_regions"]


def plot_regions(result: Any, level: str | None, region: Any, ax: Any, *, max_regions: int = 12,
                 confidence_level: float = 0.95, **kwargs: Any) -> Any:
    """:meth:`GeographyHistogram.plot <pandas_dp.results.geography.GeographyHistogram.plot>`.

    One region (or a level of one region) is drawn by its
    :meth:`~pandas_dp.results.Histogram.plot` on ``ax``; a level of several
    regions as a grid of panels (4 per row, shared axes), one per region of
    the ``max_regions`` largest estimated totals. Reads the release only.
    """
    lvl = result._level(level) if level is not None else min(1, len(result.levels) - 1)
    name = result.levels[lvl]
    if region is not None or len(result.regions[lvl]) == 1:
        label = result.regions[lvl][result._one_region(lvl, region)]
        out = result.histogram(name, label).plot(ax, confidence_level=confidence_level, **kwargs)
        out.set_title(f"{name} = {label}" if lvl else name)
        return out
    if ax is not None:
        raise ParameterError("ax= draws one region: pass region= too, or leave ax out for small multiples.")
    max_regions = check_count(max_regions, "max_regions", "GeographyHistogram.plot()", low=1)
    plt = import_optional("matplotlib.pyplot", extra="plot", purpose="GeographyHistogram.plot()")
    totals = result._table(lvl).sum(axis=1)
    top = np.argsort(-totals, kind="stable")[:max_regions]
    ncols = min(4, top.size)
    nrows = math.ceil(top.size / ncols)
    two_d = result.domain.ndim == 2
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols + (1.2 if two_d else 0), 2.8 * nrows),
                             sharex=True, sharey=True, squeeze=False, layout="constrained")
    flat = axes.ravel()
    if two_d and not kwargs.get("density"):
        # One colour scale for every panel, so that panels compare (issue 29, item 4).
        shown = result._table(lvl)[top]
        kwargs = {"vmin": float(np.min(shown)), "vmax": float(np.max(shown)), **kwargs}
    for k, (panel, pos) in enumerate(zip(flat, top)):          # at most max_regions panels
        label = result.regions[lvl][pos]
        one = result.histogram(name, label)
        if two_d:
            one.plot(panel, confidence_level=confidence_level, colorbar=bool(kwargs.get("density")), **kwargs)
        else:
            one.plot(panel, confidence_level=confidence_level, **kwargs)
        panel.set_title(f"{name} = {label}", fontsize="small")
        if k % ncols:
            panel.set_ylabel("")
        if k < top.size - ncols:
            panel.set_xlabel("")
    for panel in flat[top.size:]:
        panel.set_visible(False)
    if two_d and not kwargs.get("density") and flat[0].collections:
        bar = fig.colorbar(flat[0].collections[0], ax=list(flat[:top.size]), label="count (one scale, every panel)")
        bar.ax.yaxis.set_major_formatter(_count_formatter())
    fig.suptitle(f"{', '.join(map(str, result.domain.columns))} by {name} "
                 f"(largest {top.size} of {len(result.regions[lvl]):,}); {_interval_text(result, lvl, top, confidence_level)}")
    return flat[:top.size]


def _interval_text(result: Any, lvl: int, top: np.ndarray, confidence_level: float) -> str:
    """The half-width of the cells' intervals in the panels: ``95% interval per cell: ± 2.8`` (or a range)."""
    bounds = result.confidence_interval(confidence_level)
    half = ((bounds["upper"] - bounds["lower"]) / 2).xs(result.levels[lvl], level=0)
    labels = [result.regions[lvl][p] for p in top]
    rows = half[half.index.get_level_values(0).isin(labels)].to_numpy()
    low, high = format_edge(float(np.min(rows))), format_edge(float(np.max(rows)))
    width = f"± {low}" if low == high else f"± {low} to {high}"
    return f"{float(confidence_level):.0%} interval per cell: {width}"

