"""Plots of a release by geography: one region's histogram, or small multiples of a level's largest regions."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pandas_dp._utils.optional import import_optional
from pandas_dp.errors import ParameterError
from pandas_dp.results._checks import check_count

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
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols, 2.8 * nrows), sharex=True, sharey=True,
                             squeeze=False)
    flat = axes.ravel()
    for panel, pos in zip(flat, top):          # at most max_regions panels
        label = result.regions[lvl][pos]
        result.histogram(name, label).plot(panel, confidence_level=confidence_level, **kwargs)
        panel.set_title(str(label), fontsize="small")
        panel.set_xlabel("")
    for panel in flat[top.size:]:
        panel.set_visible(False)
    fig.suptitle(f"{', '.join(map(str, result.domain.columns))} by {name} "
                 f"(largest {top.size} of {len(result.regions[lvl]):,})")
    return flat[:top.size]

