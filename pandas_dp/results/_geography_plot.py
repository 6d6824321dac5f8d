"""Plots of a release by geography: one region's histogram, or small multiples of a level's largest regions
(of a histogram by geography, or of one table of a table set by geography)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from pandas_dp._utils.optional import import_optional
from pandas_dp.errors import ParameterError
from pandas_dp.results._checks import check_count
from pandas_dp.results._plot import _count_formatter

__all__ = ["plot_regions", "small_multiples", "interval_half_text"]


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
    regions = result.regions[lvl]
    return small_multiples(
        name, regions, result._table(lvl), lambda pos: result.histogram(name, regions[pos]), result.domain,
        lambda top: _interval_text(result, lvl, top, confidence_level), max_regions=max_regions,
        confidence_level=confidence_level, purpose="GeographyHistogram.plot()", **kwargs)


def small_multiples(name: str, regions: Any, values: np.ndarray, table: Callable[[int], Any], domain: Any,
                    interval_text: Callable[[np.ndarray], str], *, max_regions: int, confidence_level: float,
                    purpose: str, **kwargs: Any) -> Any:
    """One panel per region of a level (its ``max_regions`` largest), sharing axes and one colour scale.

    ``values`` are the level's estimates, ``(regions, cells)``; ``table(pos)`` is region ``pos``'s
    Histogram (drawn by its ``plot``); ``interval_text(top)`` says the cells' interval half-widths in
    the panels ``top`` (region positions). Returns the Axes drawn. Reads the release only.
    """
    max_regions = check_count(max_regions, "max_regions", purpose, low=1)
    plt = import_optional("matplotlib.pyplot", extra="plot", purpose=purpose)
    totals = values.sum(axis=1)
    top = np.argsort(-totals, kind="stable")[:max_regions]
    ncols = min(4, top.size)
    nrows = math.ceil(top.size / ncols)
    two_d = domain.ndim == 2
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols + (1.2 if two_d else 0), 2.8 * nrows),
                             sharex=True, sharey=True, squeeze=False, layout="constrained")
    flat = axes.ravel()
    if two_d and not kwargs.get("density"):
        # One colour scale for every panel, so that panels compare (issue 29, item 4).
        shown = values[top]
        kwargs = {"vmin": float(np.min(shown)), "vmax": float(np.max(shown)), **kwargs}
    for k, (panel, pos) in enumerate(zip(flat, top)):          # at most max_regions panels
        label = regions[pos]
        one = table(int(pos))
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
    fig.suptitle(f"{', '.join(map(str, domain.columns))} by {name} "
                 f"(largest {top.size} of {len(regions):,}); {interval_text(top)}")
    return flat[:top.size]


def interval_half_text(half: np.ndarray, confidence_level: float) -> str:
    """``95% interval per cell: ± 2.8`` (or a range) from the half-widths of the cells shown.

    Rounded as a person writes them: two significant digits of the smallest half-width, the largest
    to the same decimal place (whole numbers stay whole), with thousands separators.

    Examples
    --------
    >>> interval_half_text(np.array([7.69802, 8.00162]), 0.95)
    '95% interval per cell: ± 7.7 to 8.0'
    >>> interval_half_text(np.array([0.01234, 0.0121]), 0.9), interval_half_text(np.array([1234.5, 20512.0]), 0.95)
    ('90% interval per cell: ± 0.012', '95% interval per cell: ± 1,234 to 20,512')
    """
    low, high = float(np.min(half)), float(np.max(half))
    smallest = low if low > 0 else high
    places = max(0, 1 - math.floor(math.log10(smallest))) if math.isfinite(smallest) and smallest > 0 else 0
    low_text, high_text = f"{low:,.{places}f}", f"{high:,.{places}f}"
    width = f"± {low_text}" if low_text == high_text else f"± {low_text} to {high_text}"
    return f"{float(confidence_level):.0%} interval per cell: {width}"


def _interval_text(result: Any, lvl: int, top: np.ndarray, confidence_level: float) -> str:
    """The half-width of the cells' intervals in the panels: ``95% interval per cell: ± 2.8`` (or a range)."""
    bounds = result.confidence_interval(confidence_level)
    half = ((bounds["upper"] - bounds["lower"]) / 2).xs(result.levels[lvl], level=0)
    labels = [result.regions[lvl][p] for p in top]
    rows = half[half.index.get_level_values(0).isin(labels)].to_numpy()
    return interval_half_text(rows, confidence_level)

