"""The table set of every region of a public geography: a :class:`~pandas_dp.results.marginals.MarginalTables`.

The result of ``df.dp.marginals(workload, ..., by=[...], hierarchy=regions)``
(or ``by=column, by_categories=[...]``). It is a ``MarginalTables`` whose
``table(columns, level=None, region=None)`` answers any workload table (or
sub-table of one) of any region of any level, ``"national"`` by default. All
tables come from one GLS estimate across the geography
(:mod:`pandas_dp.algorithms.marginals.geography`): within a region the tables
agree, every child region's table sums to its parent's in every cell, public
totals are matched exactly, and every cell has its exact variance.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp._utils.checks import normal_quantile
from pandas_dp._utils.rational import safe_repr
from pandas_dp.algorithms.marginals.geography import RegionMarginalEstimates
from pandas_dp.algorithms.marginals.reconstruct import MarginalEstimates
from pandas_dp.domain.grid import Grid
from pandas_dp.errors import ParameterError
from pandas_dp.results._base import confidence_bounds
from pandas_dp.results._checks import level_position, region_position
from pandas_dp.results._format import guarantee_text
from pandas_dp.results._geography_plot import interval_half_text, small_multiples
from pandas_dp.results.frozen import stored_fields
from pandas_dp.results.marginals import MarginalDetail, MarginalHistogram, MarginalTables, _table

__all__ = ["GeographyMarginalTables"]


@stored_fields
@dataclass(frozen=True, repr=False, eq=False)
class GeographyMarginalTables(MarginalTables):
    """Consistent cross-tabulations of every region of a public geography (shown as ``MarginalTables``).

    Attributes
    ----------
    levels : tuple of str
        Level names, coarse to fine; the root is ``"national"``.
    regions : tuple of Index
        Public region labels of every level (``regions[0]`` is ``["national"]``).
    parents : tuple of ndarray
        ``parents[l][i]``: position in level ``l - 1`` of the parent of region ``i`` of level ``l``.
    geography : RegionMarginalEstimates
        Every level's plan, the GLS residual components of every region and their exact variances.

    The other attributes are :class:`~pandas_dp.results.marginals.MarginalTables`'s; ``detail`` holds
    the ``"national"`` estimates, so ``table(columns)`` without ``level`` is the national table.
    """

    levels: tuple[str, ...] = ()
    regions: tuple[pd.Index, ...] = field(default=(), compare=False)
    parents: tuple[Any, ...] = field(default=(), compare=False)
    geography: RegionMarginalEstimates | None = field(default=None, compare=False)

    def _estimates(self) -> RegionMarginalEstimates:
        if self.geography is None:
            raise ParameterError("This table set has no estimates by region (built without its geography).")
        return self.geography

    @property
    def n_regions(self) -> tuple[int, ...]:
        """Number of regions of every level, coarse to fine."""
        return tuple(len(r) for r in self.regions)

    def _level(self, level: Any) -> int:
        if level is None:
            return 0
        return level_position(level, self.levels)

    def _region(self, lvl: int, region: Any) -> int:
        if region is None:
            if len(self.regions[lvl]) == 1:
                return 0
            raise ParameterError(f"Level {self.levels[lvl]!r} has {len(self.regions[lvl])} regions: pass region= "
                                 f"(one of {list(self.regions[lvl][:5])}{' ...' if len(self.regions[lvl]) > 5 else ''}).")
        return region_position(region, self.regions[lvl], self.levels[lvl], lvl)

    def table(self, columns: Any, level: Any = None, region: Any = None) -> MarginalHistogram:
        """The released table of ``columns`` for one region (free; ``"national"`` by default).

        Parameters
        ----------
        columns : label or tuple of labels
            A workload table or any sub-table of one, in the order of its index levels.
        level : str, optional
            A level name (``"national"`` or a ``by`` column); default ``"national"``.
        region : label, optional
            A region of that level (needed when the level has more than one).

        Returns
        -------
        MarginalHistogram
            The region's table with the exact variance of every cell (after the GLS across the
            geography), and exact range and box variances.

        Raises
        ------
        ParameterError
            Unknown columns, level or region, or columns in no workload table together.
        """
        attrs = self._attributes(columns)
        lvl = self._level(level)
        pos = self._region(lvl, region)
        if region is None and level is None and pos == 0 and lvl == 0:
            return super().table(columns)
        est = self._estimates().region(lvl, pos)
        est.plan.workload.check(tuple(sorted(attrs)))
        index = est.plan.workload.index
        subset = tuple(float(est.residual_variances[index[tuple(sorted(attrs[b] for b in range(len(attrs))
                                                                     if m >> b & 1))]])
                       for m in range(1 << len(attrs)))
        grid = Grid(tuple(self.domain.dims[k] for k in attrs))
        out = _table(np.ascontiguousarray(est.marginal(attrs)), grid, subset, self, est.variance(attrs))
        return out

    def nonnegative(self) -> Any:
        """These tables made non-negative, consistent across tables and geography, public totals kept
        (post-processing, free): a :class:`~pandas_dp.results.geography_published.GeographyPublishedTables`
        (:mod:`pandas_dp.algorithms.marginals.topdown`)."""
        from pandas_dp.results.geography_published import publish_by_region  # it subclasses this class
        return publish_by_region(self, "nonnegative")

    def integer(self) -> Any:
        """These tables as consistent non-negative integers across tables and geography (post-processing,
        free), the rounding's extra error per level in ``error()``."""
        from pandas_dp.results.geography_published import publish_by_region  # it subclasses this class
        return publish_by_region(self, "integer")

    def sample(self, n: Any = None, rng: Any = None) -> pd.DataFrame:
        """Synthetic records with their geography whose tables agree with :meth:`nonnegative` (free); see
        :meth:`~pandas_dp.results.geography_published.GeographyPublishedTables.sample`."""
        return self.nonnegative().sample(n=n, rng=rng)

    def to_frame(self) -> pd.DataFrame:
        """One row per cell of every workload table of every region: ``level``, ``region``, ``table``,
        one column per attribute (missing when not in the row's table), ``estimate``, ``variance``,
        ``std_error``; levels coarse to fine, regions in the public order."""
        est = self._estimates()
        parts = []
        for cols in self.workload:
            attrs = self._attributes(cols)
            cells = super().table(cols).to_frame()
            labels = cells.index.to_frame(index=False) if isinstance(cells.index, pd.MultiIndex) else \
                pd.DataFrame({cols[0]: cells.index.to_numpy(dtype=object)})
            width = len(cells)
            for lvl, names in enumerate(self.regions):
                n = len(names)
                values = est.marginal(lvl, attrs).reshape(n * width)
                variance = np.repeat(est.variance(lvl, attrs), width)
                body = pd.DataFrame({"level": np.repeat(np.array([self.levels[lvl]], dtype=object), n * width),
                                     "region": np.repeat(np.asarray(names, dtype=object), width)})
                body["table"] = pd.Series([tuple(cols)] * (n * width), dtype=object)
                for c in self.columns:
                    body[c] = np.tile(labels[c].to_numpy(dtype=object), n) if c in cols else None
                body["estimate"] = values
                body["variance"] = variance
                body["std_error"] = np.sqrt(variance)
                parts.append(body)
        out = pd.concat(parts, ignore_index=True)
        order = {name: k for k, name in enumerate(self.levels)}
        rank = out["level"].map(order).to_numpy()
        return out.iloc[np.argsort(rank, kind="stable")].reset_index(drop=True)

    def confidence_interval(self, confidence_level: float = 0.95) -> pd.DataFrame:
        """``lower`` and ``upper`` of every row of :meth:`to_frame` (in its order): ``estimate ± z std_error``,
        the normal approximation (the GLS estimates mix the noise of many marginals and regions)."""
        tidy = self.to_frame()
        lower, upper = confidence_bounds(tidy["estimate"], tidy["std_error"], confidence_level)
        return pd.DataFrame({"lower": lower, "upper": upper})

    def total_variance(self) -> float:
        """The weighted sum of every workload cell's exact variance over every region of every level."""
        est = self._estimates()
        work = est.workload
        weights = est.finest_plan.weights
        total = 0.0
        for lvl in range(len(self.levels)):
            for w, t in zip(weights, work.tables):
                total += float(w) * work.cells(t) * float(np.sum(est.variance(lvl, t)))
        return total

    @property
    def plan(self) -> pd.DataFrame:
        """Every level's plan (see :attr:`MarginalTables.plan`), with a leading ``level`` column; the
        residual variances are those of one region's measurement, before the GLS across the geography."""
        est = self._estimates()
        parts = []
        for name, level_plan in zip(self.levels, est.plans):
            if level_plan is None:
                continue
            flat = MarginalTables(workload=self.workload, domain=self.domain, epsilon=self.epsilon,
                                  method=self.method, params=self.params, loss=self.loss, noise=self.noise,
                                  detail=_flat_detail(level_plan))
            frame = flat.plan
            frame.insert(0, "level", name)
            parts.append(frame)
        return pd.concat(parts, ignore_index=True)

    def _guarantee(self, *, html: bool = True) -> str:
        noises = [n.describe() for p in self._estimates().plans if p is not None for n in p.noises if n is not None]
        return guarantee_text(self.loss, self.epsilon, noises, html=html, by="by marginal and level")

    def __repr__(self) -> str:
        return (f"MarginalTables(method={self.method!r}, {self._guarantee(html=False)}, "
                f"tables={len(self.workload)}, columns={list(self.columns)}, levels={list(self.levels)}, "
                f"regions={list(self.n_regions)})\n{self._summary().to_string(index=False)}")

    def plot(self, columns: Any = None, ax: Any = None, *, level: Any = None, region: Any = None,
             max_regions: int = 12, confidence_level: float = 0.95, **kwargs: Any) -> Any:
        """Small multiples of one table by region: one panel per region of a level, on one scale.

        Parameters
        ----------
        columns : label or tuple of labels, optional
            A table of one or two columns (a workload table or a sub-table of one); default: the
            first workload table of one or two columns.
        ax : matplotlib Axes, optional
            For one region only (as ``MarginalTables.plot(columns, ax)``).
        level : str, optional
            The level whose regions are drawn (default: the first below ``"national"``).
        region : label, optional
            Draw only this region's table (on ``ax``).
        max_regions : int
            Most panels drawn: the regions with the largest estimated totals, 4 panels a row.
        confidence_level : float
            Coverage of the error bars (1-D tables: each region's table's ``confidence_interval``,
            from its cells' exact ``std_error``); the figure's title gives their half-widths.
        **kwargs
            Passed to :meth:`Histogram.plot <pandas_dp.results.Histogram.plot>`.

        Returns
        -------
        matplotlib Axes (one region) or ndarray of Axes (one per panel)

        Notes
        -----
        The panels share their axes (1-D: one count scale) or one colour scale (2-D, with one
        colour bar), so that regions compare; each is titled ``level = region``. Reads the release
        only: no budget is spent. Needs the ``plot`` extra.
        """
        normal_quantile(confidence_level)   # checked before anything is drawn
        if columns is None:
            small = [t for t in self.workload if len(t) <= 2]
            if not small:
                raise ParameterError("plot() draws a table of one or two columns; this workload has none. Pass "
                                     f"columns= of a sub-table, e.g. plot(columns={tuple(self.workload[0][:2])!r}).")
            columns = tuple(small[0])
        attrs = self._attributes(columns)
        if len(attrs) > 2:
            raise ParameterError(f"plot() draws a table of one or two columns; got {len(attrs)}: "
                                 f"{safe_repr(columns)}. Plot a sub-table of it.")
        lvl = self._level(level) if level is not None else min(1, len(self.levels) - 1)
        name = self.levels[lvl]
        if region is not None or len(self.regions[lvl]) == 1:
            pos = self._region(lvl, region)
            out = self.table(columns, level=name, region=self.regions[lvl][pos]).plot(
                ax, confidence_level=confidence_level, **kwargs)
            out.set_title(f"{name} = {self.regions[lvl][pos]}" if lvl else name)
            return out
        if ax is not None:
            raise ParameterError("ax= draws one region: pass region= too, or leave ax out for small multiples.")
        values = self._estimates().marginal(lvl, attrs).reshape(len(self.regions[lvl]), -1)
        regions = self.regions[lvl]
        grid = Grid(tuple(self.domain.dims[k] for k in attrs))

        def one(pos: int) -> MarginalHistogram:
            return self.table(columns, level=name, region=regions[pos])

        def half_widths(top: np.ndarray) -> str:   # the intervals the panels draw
            bounds = [one(int(p)).confidence_interval(confidence_level) for p in top]
            return interval_half_text(np.concatenate([(b["upper"] - b["lower"]).to_numpy() / 2 for b in bounds]),
                                      confidence_level)

        return small_multiples(name, regions, values, one, grid, half_widths, max_regions=max_regions,
                               confidence_level=confidence_level, purpose="GeographyMarginalTables.plot()",
                               **kwargs)


def _flat_detail(plan: Any) -> MarginalDetail:
    """A flat release's detail for one level's plan (its residual variances, no estimates needed)."""
    comps = tuple(np.zeros(plan.workload.shape(a)) for a in plan.residuals)
    return MarginalDetail.of(MarginalEstimates(plan=plan, components=comps,
                                               residual_variances=plan.residual_variances()))

