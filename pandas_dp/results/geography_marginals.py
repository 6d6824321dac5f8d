"""Table sets by geography: ``GeographyMarginalTables`` and its published form ``GeographyPublishedTables``.

``GeographyMarginalTables`` is the result of ``df.dp.marginals(workload, ..., by=[...], hierarchy=regions)``
(or ``by=column, by_categories=[...]``). It is a :class:`~pandas_dp.results.marginals.MarginalTables`
whose ``table(columns, level=None, region=None)`` answers any workload table (or
sub-table of one) of any region of any level, ``"national"`` by default. All
tables come from one GLS estimate across the geography
(:mod:`pandas_dp.algorithms.marginals.geography`): within a region the tables
agree, every child region's table sums to its parent's in every cell, public
totals are matched exactly, and every cell has its exact variance.

``GeographyPublishedTables`` is the result of ``df.dp.marginals(workload, ..., by=[...], nonnegative=True |
integer=True)``, or of ``tables.nonnegative()`` / ``tables.integer()`` on a table set by geography:
post-processing only (no private data is read, no budget spent). Every region of every level has one
joint over the union of the workload's columns (:mod:`pandas_dp.algorithms.marginals.topdown`): its
tables are read from it (so they agree exactly), every child region's joint sums to its parent's in
every cell (so every table of a parent is the sum of its children's), and public totals are matched
exactly. It is a ``GeographyMarginalTables`` (so a ``MarginalTables``): ``table(columns, level=,
region=)`` is a :class:`~pandas_dp.results.marginals.PublishedHistogram` whose ``variance`` is the
unconstrained GLS table's (not exact for the published values: ``variance_exact`` false, a note
starting with "biased"); :meth:`~GeographyPublishedTables.error` reports how far each level's tables
moved, and for integers the rounding's extra error per level.

Why one module: as in :mod:`pandas_dp.results.marginals`, ``GeographyMarginalTables.nonnegative()``
returns a ``GeographyPublishedTables``, which subclasses ``GeographyMarginalTables``; the two classes
need each other, so they are defined together, and the top-down fit they delegate to sits below both
(:mod:`pandas_dp.algorithms.marginals.topdown`).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp._utils.checks import normal_quantile
from pandas_dp._utils.public import safe_repr
from pandas_dp.algorithms.marginals.geography import RegionMarginalEstimates
from pandas_dp.algorithms.marginals.reconstruct import MarginalEstimates
from pandas_dp.algorithms.marginals.sample import sample_joint
from pandas_dp.algorithms.marginals.topdown import TopDownFit, region_tables, topdown_integer, topdown_nonnegative
from pandas_dp.algorithms.geography.layout import region_layout
from pandas_dp.domain.grid import Grid
from pandas_dp.errors import ParameterError
from pandas_dp.results._base import confidence_bounds
from pandas_dp.results._checks import level_position, region_position
from pandas_dp.results._format import guarantee_text
from pandas_dp.results._geography_plot import interval_half_text, small_multiples
from pandas_dp.results.frozen import stored_fields
from pandas_dp.results.marginals import (PUBLISHED_NOTE, MarginalDetail, MarginalHistogram, MarginalTables,
                                         PublishedHistogram, _published_table, _table, sample_arguments)

__all__ = ["GeographyMarginalTables", "GeographyPublishedTables", "publish_by_region", "public_totals_of",
           "check_integer_totals"]


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
        out = _table(np.ascontiguousarray(est.marginal(attrs)), grid, subset, self, est.variance(attrs),
                     splits=est.splits(attrs))
        return out

    def nonnegative(self) -> Any:
        """These tables made non-negative, consistent across tables and geography, public totals kept
        (post-processing, free): a :class:`GeographyPublishedTables`
        (:mod:`pandas_dp.algorithms.marginals.topdown`)."""
        return publish_by_region(self, "nonnegative")

    def integer(self) -> Any:
        """These tables as consistent non-negative integers across tables and geography (post-processing,
        free), the rounding's extra error per level in ``error()``."""
        return publish_by_region(self, "integer")

    def sample(self, n: Any = None, rng: Any = None) -> pd.DataFrame:
        """Synthetic records with their geography whose tables agree with :meth:`nonnegative` (free); see
        :meth:`GeographyPublishedTables.sample`."""
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
                cells_var = est.variance(lvl, attrs)   # (regions,) or, with an ordered column, every cell's
                variance = np.repeat(cells_var, width) if cells_var.ndim == 1 else cells_var.reshape(n * width)
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
                total += float(w) * work.cells(t) * float(np.sum(est.mean_variance(lvl, t)))
        return total

    @property
    def plan(self) -> pd.DataFrame:
        """Every level's plan (see :attr:`MarginalTables.plan`), with a leading ``level`` column; the
        residual variances and ``alone_ratio`` are those of one region's measurement, before the GLS across
        the geography (without public totals every region's ratio after it is at most the largest level's)."""
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


# -- published tables by geography: non-negative (or integer), consistent across regions -----------
@stored_fields
@dataclass(frozen=True, repr=False, eq=False)
class GeographyPublishedTables(GeographyMarginalTables):
    """Non-negative (``kind="nonnegative"``) or non-negative integer (``kind="integer"``) tables of every region.

    Attributes
    ----------
    kind : str
        ``"nonnegative"`` or ``"integer"``.
    joints : tuple of ndarray
        ``joints[l]``: the published joint of every region of level ``l``, ``(regions, *domain shape)``
        (float64 on a dyadic grid, or int64); every table of a region is its sum over the other columns.
    nonnegative_joints : tuple of ndarray
        The non-negative joints the integers were rounded from (``joints`` for ``"nonnegative"``).
    unconstrained : GeographyMarginalTables
        The release these tables were computed from (exact variances of the unconstrained tables).

    The other attributes are :class:`~pandas_dp.results.geography_marginals.GeographyMarginalTables`'s
    (``plan``, ``total_variance()`` and the variances are the unconstrained release's).

    Examples
    --------
    >>> import numpy as np, pandas as pd, pandas_dp as pdp
    >>> df = pd.DataFrame({"state": ["A"] * 30 + ["B"] * 30, "a": np.arange(60) % 3, "b": np.arange(60) % 2})
    >>> with pdp.budget(rho=1.0):
    ...     t = df.dp.marginals([("a", "b")], categories={"a": [0, 1, 2], "b": [0, 1]}, rho=1.0, by="state",
    ...                         by_categories=["A", "B"], integer=True, rng=np.random.default_rng(0))
    >>> a, b = (t.table(("a", "b"), level="state", region=r).counts for r in "AB")
    >>> bool(((a + b) == t.table(("a", "b")).counts).all()), a.dtype == np.int64, bool((a >= 0).all())
    (True, True, True)
    """

    kind: str = "nonnegative"
    joints: tuple[Any, ...] = ()
    nonnegative_joints: tuple[Any, ...] = field(default=(), compare=False)
    unconstrained: Any = field(default=None, compare=False)

    @property
    def total(self) -> float:
        """The total of every table of the root (an integer for ``kind="integer"``)."""
        joint = np.asarray(self.joints[0])
        return int(joint.sum()) if joint.dtype.kind == "i" else math.fsum(joint.ravel().tolist())

    @staticmethod
    def _values(joints: np.ndarray, axes: list[int]) -> np.ndarray:
        """The table on ``axes`` (in that order) of every region: ``(regions, *table shape)``."""
        order = sorted(axes)
        values = region_tables(np.asarray(joints), order)
        return np.ascontiguousarray(np.transpose(values, [0, *(order.index(k) + 1 for k in axes)]))

    def table(self, columns: Any, level: Any = None, region: Any = None) -> PublishedHistogram:
        """The published table of ``columns`` for one region (``"national"`` by default).

        Returns
        -------
        PublishedHistogram
            The region's published values (int64 for integers), with the unconstrained GLS table's
            variances marked not exact (``variance_exact`` false; see ``params["published_note"]``).
        """
        unconstrained = super().table(columns, level=level, region=region)   # the GLS table; checks the arguments
        axes = self._attributes(columns)
        lvl = self._level(level)
        pos = self._region(lvl, region)
        grid = Grid(tuple(self.domain.dims[k] for k in axes))
        values = self._values(np.asarray(self.joints[lvl])[pos:pos + 1], axes)[0]
        return _published_table(values, grid, unconstrained, self)

    def nonnegative(self) -> GeographyPublishedTables:
        """The non-negative tables of the same release (these, for ``kind="nonnegative"``)."""
        return self if self.kind == "nonnegative" else publish_by_region(self.unconstrained, "nonnegative")

    def integer(self) -> GeographyPublishedTables:
        """The integer tables of the same release (these, for ``kind="integer"``; from non-negative tables,
        their own joints rounded: the same as ``unconstrained.integer()``, without fitting again)."""
        if self.kind == "integer":
            return self
        fit = self.params["publish"]
        done = TopDownFit(joints=tuple(np.asarray(j) for j in self.joints), grid=float(fit["grid"]),
                          anchor=self.levels.index(fit["anchor"]), iterations=tuple(fit["solver_iterations"]),
                          steps=tuple(fit["solver_step"]))
        return publish_by_region(self.unconstrained, "integer", fit=done)

    def _column(self, joints: tuple[Any, ...]) -> np.ndarray:
        """Values of ``joints`` laid out as the rows of the unconstrained ``to_frame()``."""
        parts, levels = [], []
        for cols in self.workload:
            axes = self._attributes(cols)
            for lvl in range(len(self.levels)):
                values = self._values(np.asarray(joints[lvl]), axes).ravel()
                parts.append(values)
                levels.append(np.full(values.size, lvl))
        order = np.argsort(np.concatenate(levels), kind="stable")
        return np.concatenate(parts)[order]

    def to_frame(self) -> pd.DataFrame:
        """One row per cell of every workload table of every region (the rows of the unconstrained
        ``to_frame()``): ``level``, ``region``, ``table``, the cells, ``estimate`` (published),
        ``variance`` and ``std_error`` (the unconstrained GLS table's: a reference; ``attrs["note"]``),
        ``unconstrained_estimate``, and for integers ``nonnegative_estimate``."""
        base = super().to_frame()   # the GLS tables (the estimates this result holds)
        out = base.drop(columns=["estimate", "variance", "std_error"])
        out["estimate"] = self._column(self.joints)
        out["variance"] = base["variance"].to_numpy()
        out["std_error"] = base["std_error"].to_numpy()
        out["unconstrained_estimate"] = base["estimate"].to_numpy()
        if self.kind == "integer":
            out["nonnegative_estimate"] = self._column(self.nonnegative_joints)
        out.attrs["note"] = PUBLISHED_NOTE
        return out

    def error(self) -> pd.DataFrame:
        """How far the tables moved, one row per level and workload table: ``level``, ``table``, ``cells``
        (over every region of the level), ``rmse_vs_unconstrained`` and ``max_abs_vs_unconstrained``, and
        for integers ``rmse_vs_nonnegative`` and ``max_abs_vs_nonnegative`` (the rounding's extra error)."""
        rows = []
        est = self._estimates()
        refs = [("unconstrained", None)] + ([("nonnegative", self.nonnegative_joints)] if self.kind == "integer"
                                           else [])
        for lvl, name in enumerate(self.levels):
            for cols in self.workload:
                axes = self._attributes(cols)
                published = self._values(np.asarray(self.joints[lvl]), axes).astype(np.float64)
                row: dict[str, Any] = {"level": name, "table": tuple(cols), "cells": int(published.size)}
                for ref_name, joints in refs:
                    ref = est.marginal(lvl, axes) if joints is None else self._values(np.asarray(joints[lvl]), axes)
                    diff = published - ref
                    row[f"rmse_vs_{ref_name}"] = float(np.sqrt(np.mean(diff * diff)))
                    row[f"max_abs_vs_{ref_name}"] = float(np.max(np.abs(diff)))
                rows.append(row)
        return pd.DataFrame(rows)

    def sample(self, n: Any = None, rng: Any = None) -> pd.DataFrame:
        """Synthetic person records with their geography whose tables agree with the finest level's tables.

        The model is the finest level's published joints (every region's joint over the union domain).
        ``n`` records are drawn by systematic sampling over (finest region, joint cell): every such
        cell gets the floor or the ceiling of its expected count, so with integer tables and ``n=None``
        (the published total) the records reproduce every published table of every region exactly.

        Parameters
        ----------
        n : int, optional
            Number of records (default: the published total, rounded).
        rng : numpy.random.Generator, optional
            The systematic sample's one uniform draw and the records' order (default: OS-seeded).

        Returns
        -------
        DataFrame
            One row per record: one categorical column per ``by`` level (coarse to fine), then one per
            workload column, labelled as the tables' cells are, in random order.
        """
        total = self.total
        n, generator = sample_arguments(n, rng, total)
        finest = np.asarray(self.joints[-1])
        if finest.dtype.kind == "i" and n == total:
            counts = finest
        else:
            counts = sample_joint(finest.astype(np.float64), int(n), generator)
        cells = np.repeat(np.arange(counts.size), counts.ravel())
        cells = cells[generator.permutation(cells.size)]
        codes = np.unravel_index(cells, counts.shape)
        leaf = codes[0]
        columns: dict[Any, Any] = {}
        chain = [leaf]
        for lvl in range(len(self.levels) - 1, 1, -1):
            chain.append(np.asarray(self.parents[lvl])[chain[-1]])
        for lvl, position in zip(range(len(self.levels) - 1, 0, -1), chain):
            columns[self.levels[lvl]] = pd.Categorical.from_codes(position, categories=self.regions[lvl])
        out = {name: columns[name] for name in self.levels[1:]}
        out.update({dim.column: pd.Categorical.from_codes(code, categories=dim.index)
                    for dim, code in zip(self.domain.dims, codes[1:])})
        return pd.DataFrame(out)

    def __repr__(self) -> str:
        return (f"PublishedTables(kind={self.kind!r}, total={self.total}, tables={len(self.workload)}, "
                f"columns={list(self.columns)}, levels={list(self.levels)}, regions={list(self.n_regions)})\n"
                f"{self.error().to_string(index=False)}")

    def _repr_html_(self) -> str:
        return (f"<div><strong>PublishedTables</strong> — {html.escape(self.kind)}, total {self.total}, "
                f"{len(self.workload)} tables over {html.escape(str(list(self.columns)))}, levels "
                f"{html.escape(str(list(self.levels)))}<br><small>{html.escape(PUBLISHED_NOTE)}</small>"
                f"{self.error().to_html(index=False)}</div>")


def public_totals_of(reference: GeographyMarginalTables) -> dict[int, np.ndarray]:
    """The public totals a table set by geography was released with, by level position: the GLS total of
    every region of a level named in ``params["public_totals"]`` (the exact public value: variance 0)."""
    names = list(reference.params.get("public_totals", []) or [])
    est = reference._estimates()
    index = est.workload.index[()]
    return {reference.levels.index(name): np.asarray(est.components[reference.levels.index(name)][index],
                                                      dtype=np.float64).reshape(-1)
            for name in names}


def check_integer_totals(totals: dict[int, np.ndarray], names: tuple[str, ...]) -> None:
    """Integer tables match public totals only when they are whole numbers (a public input: loud)."""
    for lvl, values in totals.items():
        if not np.all(np.abs(values - np.rint(values)) <= 1e-9 * np.maximum(1.0, np.abs(values))):
            raise ParameterError(f"integer=True matches the public totals of level {names[lvl]!r} exactly, so they "
                                 f"must be whole numbers; pass integer totals, or nonnegative=True.")


def publish_by_region(reference: GeographyMarginalTables, kind: str, totals: dict[int, np.ndarray] | None = None,
                      fit: TopDownFit | None = None) -> GeographyPublishedTables:
    """The ``kind`` (``"nonnegative"`` or ``"integer"``) tables of a table set by geography (post-processing).

    ``totals`` (by level position) are the public totals as given; by default they are read back from
    the release (:func:`public_totals_of`). ``fit``: the non-negative joints of this release, already
    fitted (then only rounded).
    """
    if kind not in ("nonnegative", "integer"):
        raise ParameterError(f"kind must be 'nonnegative' or 'integer'; got {safe_repr(kind)}.")
    est = reference._estimates()
    facts = public_totals_of(reference) if totals is None else dict(totals)
    if kind == "integer":
        check_integer_totals(facts, reference.levels)
        facts = {lvl: np.rint(v) for lvl, v in facts.items()}
    shape = reference.domain.shape
    axes = [tuple(sorted(reference._attributes(t))) for t in reference.workload]
    levels = range(len(reference.levels))
    layout = region_layout([None, *(np.asarray(p) for p in reference.parents[1:])], list(reference.n_regions))
    if fit is None:
        estimates = [[est.marginal(lvl, a) for a in axes] for lvl in levels]
        variances = [np.stack([est.mean_variance(lvl, a) for a in axes], axis=1) for lvl in levels]
        fit = topdown_nonnegative(shape, axes, estimates, variances, layout, facts)
    joints: tuple[np.ndarray, ...] = fit.joints
    steps: tuple[str, ...] = ("top-down non-negative weighted least squares over one joint per region (coarsest "
                              "level first; children sum to parents in every cell and keep public totals down to "
                              f"level {reference.levels[fit.anchor]!r})",)
    params: dict[str, Any] = {"kind": kind, "method": "top-down weighted least squares onto non-negative joints",
                              "anchor": reference.levels[fit.anchor], "grid": fit.grid,
                              "solver_iterations": list(fit.iterations), "solver_step": list(fit.steps)}
    if kind == "integer":
        joints = topdown_integer(fit, shape, axes, layout, facts)
        steps += ("controlled rounding of every level's joints to integers (children sum to parents' integers)",)
        params["rounding"] = ("controlled rounding, top-down: prefix tables of the roots, then down to the anchor "
                              "two-way roundings with fixed margins, then per parent and cell")
    return GeographyPublishedTables(
        workload=reference.workload, domain=reference.domain, epsilon=reference.epsilon, method=reference.method,
        params={**reference.params, "publish": params},
        post_processing=(*reference.post_processing, *steps), loss=reference.loss, noise=reference.noise,
        detail=reference.detail, levels=reference.levels, regions=reference.regions, parents=reference.parents,
        geography=reference.geography, kind=kind, joints=joints, nonnegative_joints=fit.joints,
        unconstrained=reference)
