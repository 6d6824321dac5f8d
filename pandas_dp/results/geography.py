"""``GeographyHistogram``: one consistent histogram for every region of a public geography.

The result of ``df.dp.histogram(columns, ..., by=[...], hierarchy=regions)``.
Its ``counts`` hold the estimate of every (level, region, cell), level after
level from ``"national"`` down to the finest ``by`` column; every parent's
histogram equals the sum of its children's in every cell (exact GLS across
the geography, then optionally non-negative or integer tables). The GLS
errors of different cells are independent with the same variance, so every
region has one error variance for all its cells and a range of ``k`` cells of
one region has ``k`` times that variance.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

from pandas_dp.domain.grid import BinDomain, Grid
from pandas_dp.errors import DomainError, ParameterError
from pandas_dp.results._base import EstimatesView, FrozenRelease, MeasureView, confidence_bounds, noise_radius, normal_quantile
from pandas_dp.results._checks import level_position, range_pairs, region_position
from pandas_dp.results._format import estimates_table, guarantee_text, html_params, release_note, with_note
from pandas_dp.results.frozen import stored_fields
from pandas_dp.results.geography_layout import level_offsets, synthetic_rows, tidy_frame
from pandas_dp.results.histogram import Histogram, RangeAnswer, box_bounds, html_estimates
from pandas_dp.results._geography_plot import plot_regions

__all__ = ["GeographyHistogram"]


@stored_fields
@dataclass(frozen=True, repr=False, eq=False)
class GeographyHistogram(FrozenRelease, EstimatesView, MeasureView):
    """Differentially private histograms of every region of a public geography, consistent across levels.

    Attributes
    ----------
    counts : Series
        Estimates indexed by a ``MultiIndex`` ``(level, region, *cells)``:
        ``level`` from ``"national"`` (one region) to the finest ``by``
        column, ``region`` the public region label, then one index level per
        released column (intervals for bins, labels for categories).
    variance : Series
        Error variance of every estimate (same index; one value per region).
    epsilon : float or None
        Privacy loss charged (pure DP; None for a zCDP release).
    method : str
        ``"identity"``: a flat histogram of every region, noised per level.
    params : Mapping
        Levels, regions per level, each level's share and loss, noise, flags.
    domain : Grid
        The public cells of every region's histogram.
    levels : tuple of str
        Level names coarse to fine; the root is ``"national"``.
    regions : tuple of Index
        Public region labels of every level (``regions[0]`` is ``["national"]``).
    parents : tuple of ndarray
        ``parents[l][i]``: position in level ``l - 1`` of the parent of region
        ``i`` of level ``l`` (``parents[0]`` is ``[-1]``).
    post_processing : tuple of str
        Steps applied after the noise (GLS, non-negative projection, rounding).
    variance_exact : bool
        False with ``nonnegative``/``integer``: ``variance`` is then the GLS
        estimate's (an approximate error bar for the published values).
    loss : PrivacyLoss
        The whole loss of the release (``PureDP`` or ``ZCDP``).
    noises : tuple of Noise or None
        Noise drawn on every level (``None``: the level was not measured).
    detail : GeographyRelease
        The algorithm's output (noisy tables per level, GLS structure:
        ``detail.sum_variance`` gives the exact variance of any weighted sum
        of regions and cells of one level).

    Notes
    -----
    Results are immutable, pickle, and compare by value (see
    :class:`~pandas_dp.results.histogram.Histogram`). Every method here reads
    only the release: no budget is spent.

    Examples
    --------
    >>> import numpy as np, pandas as pd, pandas_dp as pdp
    >>> regions = pd.DataFrame({"state": ["A", "A", "B"], "county": ["a1", "a2", "b1"]})
    >>> df = pd.DataFrame({"state": ["A", "A", "B"] * 20, "county": ["a1", "a2", "b1"] * 20,
    ...                    "age": np.arange(60) % 90})
    >>> with pdp.budget(epsilon=1.0):
    ...     t = df.dp.histogram("age", bins=[0, 18, 65, 90], by=["state", "county"], hierarchy=regions,
    ...                         epsilon=1.0, integer=True, rng=np.random.default_rng(0))
    >>> t.n_regions
    (1, 2, 3)
    >>> bool((t.at("county", "a1") + t.at("county", "a2") == t.at("state", "A")).all())
    True
    >>> list(t.range_query(18, 90, level="state").columns)
    ['level', 'region', 'low', 'high', 'estimate', 'std_error', 'lower', 'upper']
    """

    counts: pd.Series
    variance: pd.Series
    epsilon: float | None
    method: str
    params: Mapping[str, Any]
    domain: Grid = field(compare=False)
    levels: tuple[str, ...] = ()
    regions: tuple[pd.Index, ...] = field(default=(), compare=False)
    parents: tuple[Any, ...] = field(default=(), compare=False)
    post_processing: tuple[str, ...] = ()
    variance_exact: bool = True
    loss: Any = field(default=None, compare=False)
    noises: tuple[Any, ...] = field(default=(), compare=False)
    detail: Any = field(default=None, compare=False)

    # -- positions -------------------------------------------------------------
    @property
    def n_regions(self) -> tuple[int, ...]:
        """Number of regions of every level, coarse to fine."""
        return tuple(len(r) for r in self.regions)

    def _level(self, level: Any) -> int:
        return level_position(level, self.levels)

    def _region(self, lvl: int, region: Any) -> int:
        return region_position(region, self.regions[lvl], self.levels[lvl], lvl)

    def _one_region(self, lvl: int, region: Any) -> int:
        if region is not None:
            return self._region(lvl, region)
        if len(self.regions[lvl]) != 1:
            raise ParameterError(f"Level {self.levels[lvl]!r} has {len(self.regions[lvl]):,} regions; pass "
                                 f"region= one of result.regions[{lvl}].")
        return 0

    def _block(self, lvl: int) -> slice:
        off = level_offsets(self.n_regions, self.domain.size)
        return slice(int(off[lvl]), int(off[lvl + 1]))

    def _table(self, lvl: int, series: pd.Series | None = None) -> np.ndarray:
        """Estimates (or another per-estimate series) of one level, shaped ``(n_regions, cells)``."""
        values = (self.counts if series is None else series).to_numpy()[self._block(lvl)]
        return values.reshape(len(self.regions[lvl]), self.domain.size)

    def _region_variance(self, lvl: int) -> np.ndarray:
        return self._table(lvl, self.variance)[:, 0]

    # -- noise model of the intervals -------------------------------------------
    def _single_draws(self) -> bool:
        """Only the finest level was measured and nothing nonlinear followed: every finest estimate is
        its exact count plus one draw, every coarser one a sum of such draws."""
        measured = [n is not None for n in self.noises]
        return (self.variance_exact and bool(measured) and measured[-1] and not any(measured[:-1])
                and not self.params.get("public_totals"))

    def _leaves_below(self, lvl: int) -> np.ndarray:
        """Number of finest regions under every region of ``lvl``."""
        count = np.ones(len(self.regions[-1]), dtype=np.int64)
        for k in range(len(self.levels) - 1, lvl, -1):
            count = np.bincount(np.asarray(self.parents[k]), weights=count,
                                minlength=len(self.regions[k - 1])).astype(np.int64)
        return count

    def _noise_terms(self, lvl: int, confidence_level: float) -> tuple[Any, np.ndarray]:
        """The noise of ``lvl``'s estimates and, per region, the draws summed in one cell (0: GLS)."""
        if self._single_draws():
            return self.noises[-1], self._leaves_below(lvl)
        measured = [n for n in self.noises if n is not None]
        if not measured:
            return None, np.zeros(len(self.regions[lvl]), dtype=np.int64)
        # A GLS estimate mixes the levels' draws: the widest tail factor covers any mix.
        widest = max(measured, key=lambda n: n.tail_factor(confidence_level))
        return widest, np.zeros(len(self.regions[lvl]), dtype=np.int64)

    def _bounds(self, lvl: int, rows: np.ndarray, estimate: np.ndarray, variance: np.ndarray,
                width: np.ndarray, confidence_level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Standard errors and bounds of sums of ``width[k]`` cells (columns) of the regions ``rows`` of ``lvl``."""
        std = np.sqrt(variance)
        noise, terms = self._noise_terms(lvl, confidence_level)
        radius = noise_radius(noise, terms[rows][:, None] * np.asarray(width)[None, :], std, confidence_level)
        lower, upper = confidence_bounds(estimate, std, confidence_level, radius=radius)
        return std, lower, upper

    # -- views -----------------------------------------------------------------
    def at(self, level: str, region: Any = None) -> pd.Series:
        """The estimates of one region (Series on the cells), or of every region of a level.

        Parameters
        ----------
        level : str
            A level name (``"national"``, ``"state"``...).
        region : label, optional
            One region of ``level``. Without it, a level of one region gives
            that region's Series; a level of several gives a Series indexed by
            ``(region, *cells)``.

        Returns
        -------
        Series
            Named ``"estimate"``.
        """
        lvl = self._level(level)
        if region is None and len(self.regions[lvl]) > 1:
            part = self.counts.iloc[self._block(lvl)].rename("estimate")
            part.index = part.index.droplevel("level").remove_unused_levels()
            return part
        pos = self._one_region(lvl, region)
        return pd.Series(self._table(lvl)[pos], index=self.domain.index, name="estimate")

    def table(self, level: str) -> pd.DataFrame:
        """The estimates of every region of ``level`` as a wide frame: one row per region, one column per cell."""
        lvl = self._level(level)
        return pd.DataFrame(self._table(lvl), index=self.regions[lvl].rename(self.levels[lvl]),
                            columns=self.domain.index)

    def histogram(self, level: str, region: Any = None) -> Histogram:
        """One region's release as a :class:`~pandas_dp.results.Histogram` (intervals, ranges, plot, sample).

        ``region`` may be omitted for a level of one region (``"national"``).
        Its ``variance`` is the region's exact GLS variance in every cell; its
        ``epsilon`` is the whole release's (the regions were released together).
        """
        lvl = self._level(level)
        pos = self._one_region(lvl, region)
        cells = self.domain.size
        single = self._single_draws() and lvl == len(self.levels) - 1
        measured = [n for n in self.noises if n is not None]
        noise = self.noises[-1] if single else min(measured, key=lambda n: n.variance(), default=None)
        params = dict(self.params, level=self.levels[lvl], region=self.regions[lvl][pos])
        return Histogram(
            counts=pd.Series(self._table(lvl)[pos], index=self.domain.index, name="estimate"),
            variance=pd.Series(np.full(cells, self._region_variance(lvl)[pos]), index=self.domain.index,
                               name="variance"),
            epsilon=self.epsilon, method=self.method, params=params, domain=self.domain,
            post_processing=self.post_processing, variance_exact=self.variance_exact, loss=self.loss,
            noise=noise, single_draw=single)

    def to_frame(self) -> pd.DataFrame:
        """The release in tidy form: ``level, region, <one column per released column>, estimate, variance,
        std_error`` (the exact variance of every estimate, the region's GLS variance, as histograms give it)."""
        variance = self.variance.to_numpy()
        tidy = tidy_frame(self.levels, self.regions, self.domain, self.counts.to_numpy(), np.sqrt(variance))
        tidy.insert(list(tidy.columns).index("std_error"), "variance", variance)
        return with_note(tidy, self.params)

    def confidence_interval(self, confidence_level: float = 0.95) -> pd.DataFrame:
        """Intervals ``lower``, ``upper`` for every estimate (indexed like ``counts``).

        When only the finest level was measured (and no nonlinear step
        followed), an estimate is its count plus a sum of ``k`` draws of one
        noise and the interval is that sum's exact quantile; otherwise it is
        the noise's ``tail_factor`` times the standard error (the widest
        factor of the levels' noises). No budget is spent.
        """
        normal_quantile(confidence_level)
        lower = np.empty(len(self.counts))
        upper = np.empty(len(self.counts))
        for lvl in range(len(self.levels)):
            block = self._block(lvl)
            rows = np.arange(len(self.regions[lvl]))
            ones = np.ones(self.domain.size, dtype=np.int64)
            _, lo, hi = self._bounds(lvl, rows, self._table(lvl), self._table(lvl, self.variance), ones,
                                     confidence_level)
            lower[block], upper[block] = lo.ravel(), hi.ravel()
        return pd.DataFrame({"lower": lower, "upper": upper}, index=self.counts.index)

    # -- range queries -----------------------------------------------------------
    def _bin_domain(self) -> BinDomain:
        if self.domain.ndim != 1 or not isinstance(self.domain.dims[0], BinDomain):
            raise DomainError(
                f"range_query answers ranges of one numeric column; this release's cells are "
                f"{list(self.domain.columns)} ({'categories' if self.domain.ndim == 1 else 'a grid'}). Sum "
                f"cells of result.at(level, region) or result.table(level) instead, or pass one bound per column "
                f"for a box (range_query((low_1, low_2), (high_1, high_2), level=..., region=...)).")
        return self.domain.dims[0]

    def range_query(self, low: Any, high: Any = None, *, level: str | None = None, region: Any = None,
                    confidence_level: float = 0.95) -> RangeAnswer | pd.DataFrame:
        """Answer ``[low, high)`` (or a list of ranges) in every region, from this release.

        Parameters
        ----------
        low, high : float
            A half-open range on bin edges, or one list of ``(low, high)``
            pairs as ``low``.
        level : str, optional
            Only the regions of this level (default: every level).
        region : label, optional
            Only this region of ``level``.
        confidence_level : float
            Coverage of ``lower``/``upper``.

        Returns
        -------
        RangeAnswer or DataFrame
            A :class:`RangeAnswer` for one range in one region; otherwise one
            row per region and range: ``level, region, low, high, estimate,
            std_error, lower, upper``.

        Raises
        ------
        DomainError
            When the cells are not one numeric column, or a bound is not a bin edge.
        ParameterError
            For an unknown level or region, ``region`` without ``level``, or a bad ``confidence_level``.

        Notes
        -----
        A range of bins ``i..j-1`` of one region sums its estimates; the cells'
        errors are independent with the region's variance ``P``, so its
        variance is ``(j - i) P`` (exact for the GLS estimate). Vectorized over
        the regions of a level with prefix sums.
        """
        normal_quantile(confidence_level)
        if self.domain.ndim > 1 and high is not None:
            return self._box_query(low, high, level, region, confidence_level)
        dim = self._bin_domain()
        if region is not None and level is None:
            raise ParameterError("range_query(region=...) needs level= too (region labels belong to a level).")
        chosen = range(len(self.levels)) if level is None else [self._level(level)]
        single = high is not None
        if single:
            i, j = dim.align(low, high)
        else:
            pairs = range_pairs(low)
            i, j = dim.align(pairs[:, 0], pairs[:, 1])  # align reads and checks the bounds
        parts = []
        for lvl in chosen:
            rows = (np.arange(len(self.regions[lvl])) if region is None
                    else np.array([self._region(lvl, region)]))
            table = self._table(lvl)[rows]
            prefix = np.concatenate([np.zeros((rows.size, 1)), np.cumsum(table, axis=1)], axis=1)
            est = prefix[:, j] - prefix[:, i]
            var = self._region_variance(lvl)[rows][:, None] * (j - i)[None, :]
            std, lower, upper = self._bounds(lvl, rows, est, var, j - i, confidence_level)
            if single and level is not None and rows.size == 1:
                noise, terms = self._noise_terms(lvl, confidence_level)
                draws = int(terms[rows[0]] * (j[0] - i[0]))
                return RangeAnswer(float(dim.edges[i[0]]), float(dim.edges[j[0]]), float(est[0, 0]),
                                   float(std[0, 0]), self.variance_exact, noise, draws)
            parts.append(pd.DataFrame({
                "level": self.levels[lvl],
                "region": np.repeat(self.regions[lvl].to_numpy(dtype=object)[rows], i.size),
                "low": np.tile(dim.edges[i], rows.size), "high": np.tile(dim.edges[j], rows.size),
                "estimate": est.ravel(), "std_error": std.ravel(), "lower": lower.ravel(),
                "upper": upper.ravel()}))
        return pd.concat(parts, ignore_index=True)

    def _box_query(self, low: Any, high: Any, level: str | None, region: Any,
                   confidence_level: float) -> RangeAnswer | pd.DataFrame:
        """One box ``[low[k], high[k])`` (bin edges per column, data units) in every region, or in one.

        A region's cells carry independent errors of its variance ``P`` (exact for the GLS estimate),
        so a box of ``m`` cells has variance ``m P``; the interval follows the 1-D rule.
        """
        box, edges_low, edges_high = box_bounds(self.domain, low, high, self._bin_domain)
        if region is not None and level is None:
            raise ParameterError("range_query(region=...) needs level= too (region labels belong to a level).")
        shape = self.domain.shape
        cells = int(np.prod([sl.stop - sl.start for sl in box]))
        chosen = range(len(self.levels)) if level is None else [self._level(level)]
        parts = []
        for lvl in chosen:
            rows = (np.arange(len(self.regions[lvl])) if region is None
                    else np.array([self._region(lvl, region)]))
            table = self._table(lvl)[rows].astype(np.float64).reshape(rows.size, *shape)
            est = table[(slice(None), *box)].reshape(rows.size, -1).sum(axis=1)[:, None]
            var = self._region_variance(lvl)[rows][:, None] * cells
            std, lower, upper = self._bounds(lvl, rows, est, var, np.array([cells]), confidence_level)
            if level is not None and region is not None:
                noise, terms = self._noise_terms(lvl, confidence_level)
                return RangeAnswer(edges_low, edges_high, float(est[0, 0]), float(std[0, 0]), self.variance_exact,
                                   noise, int(terms[rows[0]] * cells))
            parts.append(pd.DataFrame({
                "level": self.levels[lvl], "region": self.regions[lvl].to_numpy(dtype=object)[rows],
                "low": [edges_low] * rows.size, "high": [edges_high] * rows.size, "estimate": est.ravel(),
                "std_error": std.ravel(), "lower": lower.ravel(), "upper": upper.ravel()}))
        return pd.concat(parts, ignore_index=True)

    # -- synthetic rows ------------------------------------------------------------
    def sample(self, n: int | None = None, rng: Any = None) -> pd.DataFrame:
        """Synthetic rows drawn from the finest level (post-processing: no budget is spent).

        Parameters
        ----------
        n : int, optional
            ``None`` reproduces the released finest tables: every (region,
            cell) appears ``round(max(estimate, 0))`` times (with
            ``integer=True`` every level's table is then matched exactly). An
            integer draws ``n`` rows with probabilities proportional to those
            counts.
        rng : numpy.random.Generator, optional
            Source of the draws (``None``: seeded from OS entropy; the draws
            only post-process the release).

        Returns
        -------
        DataFrame
            One column per level below ``"national"`` (the region labels),
            then one per released column (values uniform within their bin, or
            labels).
        """
        return synthetic_rows(self._table(len(self.levels) - 1), self.levels, self.regions, self.parents,
                              self.domain, n, rng)

    # -- display ---------------------------------------------------------------------
    def plot(self, level: str | None = None, region: Any = None, ax: Any = None, *, max_regions: int = 12,
             confidence_level: float = 0.95, **kwargs: Any) -> Any:
        """Draw one region's histogram, or small multiples of the largest regions of a level.

        Parameters
        ----------
        level : str, optional
            The level (default: the first below ``"national"``, or
            ``"national"`` when it is the only one).
        region : label, optional
            Draw only this region (on ``ax``). Without it, a level of several
            regions is drawn as small multiples: the ``max_regions`` regions
            with the largest estimated totals, one panel each, sharing axes.
        ax : matplotlib Axes, optional
            For one region only.
        max_regions : int
            Most panels drawn.
        confidence_level : float
            Coverage of the error bars (1-D).
        **kwargs
            Passed to :meth:`Histogram.plot <pandas_dp.results.Histogram.plot>`.

        Returns
        -------
        matplotlib Axes (one region) or ndarray of Axes (small multiples)
        """
        return plot_regions(self, level, region, ax, max_regions=max_regions, confidence_level=confidence_level,
                            **kwargs)

    def _head(self) -> pd.DataFrame:
        return self.histogram(self.levels[0]).to_frame().head(10)

    def _guarantee(self, *, html: bool = True) -> str:
        """``ε = 1, noise scale t = 2..6 by level`` or ``ρ = 0.5 (zCDP), σ = 1.7..3.2 by level``."""
        described = [noise.describe() for noise in self.noises if noise is not None]
        return guarantee_text(self.loss, self.epsilon, described, html=html, by="by level")

    def __repr__(self) -> str:
        head = (f"GeographyHistogram(method={self.method!r}, {self._guarantee(html=False)}, levels={list(self.levels)}, "
                f"regions={list(self.n_regions)}, columns={list(self.domain.columns)}, cells={self.domain.size:,})")
        shown = estimates_table(self._head(), ", ".join(map(str, self.domain.columns)))
        note = release_note(self.params)
        return head + (f"\nnote: {note}" if note else "") + f"\n{self.levels[0]}:\n" + shown.to_string()

    def _repr_html_(self) -> str:
        levels = " &gt; ".join(f"{html.escape(str(n))} ({k:,})" for n, k in zip(self.levels, self.n_regions))
        eps = self._guarantee()
        table = html_estimates(self._head(), self.variance_exact, ", ".join(map(str, self.domain.columns)))
        note = release_note(self.params)
        note = f"<br><em>{html.escape(note)}</em>" if note else ""
        return (f"<div><strong>GeographyHistogram</strong> — method <code>{html.escape(self.method)}</code>, "
                f"{eps}, {self.domain.size:,} cells per region<br>levels: {levels}{note}"
                f"<br><small>{html_params(self.params)}</small><p>{html.escape(self.levels[0])}:</p>{table}</div>")
