"""The ``Histogram`` result of a release, and ``RangeAnswer``."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import html
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, cast

import numpy as np
import pandas as pd

from pandas_dp._utils.public import float_array, safe_repr
from pandas_dp.domain.grid import BinDomain, Grid
from pandas_dp.errors import DomainError, ParameterError
from pandas_dp.results._base import EstimatesView, FrozenRelease, MeasureView, confidence_bounds, noise_radius, normal_quantile
from pandas_dp.results._checks import check_axes, check_flag, range_pairs
from pandas_dp.results._format import estimates_table, guarantee_text, html_params, release_note
from pandas_dp.results.frozen import SeriesOnIndex, lock_in_place, stored_fields
from pandas_dp.results._sampling import grid_rows
from pandas_dp.results._plot import plot_grid
from pandas_dp.results.quantiles import release_quantiles

__all__ = ["Histogram", "RangeAnswer", "box_bounds"]


def box_bounds(domain: Grid, low: Any, high: Any, scalar: Callable[[], Any]
               ) -> tuple[tuple[slice, ...], tuple[Any, ...], tuple[Any, ...]]:
    """Checked bounds of a box ``[low[k], high[k])`` in data units on a d-D grid (bin edges per column).

    Returns the cell slices per dimension and the edges they start and end at. ``scalar()`` raises the
    release's 1-D error when ``low``/``high`` are scalars. Public arguments only: errors are
    :class:`ParameterError` (shape) and :class:`DomainError` (not bin edges, outside the domain).
    """
    dims = domain.dims
    text = isinstance(low, (str, bytes)) or isinstance(high, (str, bytes))
    if not text and (not isinstance(low, Iterable) or not isinstance(high, Iterable)):
        scalar()  # scalar bounds on a d-D release: the 1-D form's DomainError, naming the box form
    try:
        lows, highs = ([], []) if text else (list(low), list(high))
    except Exception:  # noqa: BLE001 - a public argument whose iteration raises: the documented error below
        lows = highs = []
    if text or len(lows) != len(dims) or len(highs) != len(dims):
        raise ParameterError(f"range_query over a {len(dims)}-D release takes low and high with one bound per "
                             f"column {list(domain.columns)}: e.g. range_query((44.8, -93.4), (45.0, "
                             f"-93.1)). Got low={safe_repr(low)}, high={safe_repr(high)}.")
    slices, edges_low, edges_high = [], [], []
    for dim, a, b in zip(dims, lows, highs):
        if not isinstance(dim, BinDomain):
            dim.align(None, None)  # raises the categorical explanation
        bins = cast(BinDomain, dim)
        if bins.kind == "number":
            a, b = (None if isinstance(v, (str, bytes)) else float_array(v) for v in (a, b))
            if a is None or b is None or a.ndim != 0 or b.ndim != 0:
                raise ParameterError(f"Box bounds on column {bins.column!r} must be numbers (bin edges). "
                                     f"Got low={safe_repr(low)}, high={safe_repr(high)}.")
        i, j = bins.align(a, b)
        slices.append(slice(int(i[0]), int(j[0])))
        edges_low.append(bins.edge_value(int(i[0])))
        edges_high.append(bins.edge_value(int(j[0])))
    return tuple(slices), tuple(edges_low), tuple(edges_high)


#: What a range or box answer of a release clipped at 0 says about its sum.
_CLIPPED_SUM_NOTE = ("biased: a sum of estimates clipped at 0 (non-negative post-processing) over-counts; its "
                     "std_error and interval cover the noise only. Release with nonnegative=False (an unbiased "
                     "linear method: method='identity' or 'hierarchical') for unbiased sums.")


@dataclass(frozen=True)
class RangeAnswer:
    """The released estimate of one range ``[low, high)`` with its standard error.

    ``std_error`` is exact (from the estimator's linear form) when
    ``exact_std_error`` is true; otherwise it excludes bias or nonlinear
    post-processing, as the release's ``params`` explain. ``low`` and ``high``
    are floats for numeric bins, Timestamps or Timedeltas for date and
    duration bins.
    """

    low: Any
    high: Any
    estimate: float
    std_error: float
    exact_std_error: bool = True
    noise: Any = field(default=None, compare=False)
    terms: int = 0
    #: Why the estimate is biased (a sum of estimates clipped at 0), or ``""``.
    note: str = ""

    def confidence_interval(self, confidence_level: float = 0.95) -> tuple[float, float]:
        """Interval ``estimate ± r`` at ``confidence_level`` (:func:`confidence_bounds`).

        A range of ``k`` identity bins carries the sum of ``k`` independent
        draws of one noise: ``r`` is the exact quantile of that sum (``k = 1``:
        the noise's own quantile). A least-squares estimate (a tree, DPCube)
        combines draws with real weights: ``r`` is the noise's
        ``tail_factor`` times ``std_error`` (never narrower than normal).
        Without a noise model, ``r = z * std_error``. It adds no privacy cost.
        The ``lower``/``upper`` columns of ``range_query([...])`` use the same rule.
        """
        radius = noise_radius(self.noise, self.terms, self.std_error, confidence_level)
        lower, upper = confidence_bounds(self.estimate, self.std_error, confidence_level, radius=radius)
        return (float(lower), float(upper))


@stored_fields
@dataclass(frozen=True, repr=False, eq=False)
class Histogram(FrozenRelease, EstimatesView, MeasureView):
    """A differentially private histogram over a public domain.

    Attributes
    ----------
    counts : Series
        The released estimates, indexed by the domain (``IntervalIndex`` for
        numeric bins, ``CategoricalIndex`` for labels, ``MultiIndex`` for grids).
    variance : Series
        Per-bin variance of the released estimate (of the noise actually drawn).
    epsilon : float or None
        Privacy loss charged for this release (pure DP; None for a zCDP release).
    method : str
        The method that produced it (``"identity"``, ...).
    params : Mapping
        Every parameter of the release (noise scale, choices made, ...), as a
        read-only ``dict`` (``dict(result.params)`` gives an editable copy).
    post_processing : tuple of str
        Post-processing steps applied (free of privacy cost).
    variance_exact : bool
        False when a nonlinear post-processing (e.g. clipping at 0) or a
        data-dependent approximation makes ``variance`` a noise-only figure.
    domain : Grid
        The public domain.
    loss : PrivacyLoss
        The release's privacy loss (``PureDP`` epsilon or ``ZCDP`` rho).
    noise : Noise
        The noise of its measurements (for exact intervals).
    single_draw : bool
        Whether every estimate is its exact count plus one draw of ``noise``
        (identity without post-processing): single-cell intervals then use the
        noise's exact quantile.

    Notes
    -----
    A release cannot change: assigning an attribute raises, ``counts`` and
    ``variance`` are new Series on every access (cheap: pandas copy-on-write),
    arrays reached through ``domain`` or ``detail`` are read-only. Results
    pickle (every protocol, ``joblib``) and compare by value (``==``).
    """

    counts: pd.Series
    variance: pd.Series
    epsilon: float | None
    method: str
    params: Mapping[str, Any]
    domain: Grid = field(compare=False)
    post_processing: tuple[str, ...] = ()
    variance_exact: bool = True
    loss: Any = field(default=None, compare=False)
    noise: Any = field(default=None, compare=False)
    single_draw: bool = False

    def _cells_noise(self) -> tuple[Any, int]:
        return self.noise, (1 if self.single_draw else 0)

    def _ranges_noise(self, i: np.ndarray, j: np.ndarray) -> tuple[Any, np.ndarray]:
        """The noise of each range ``[i, j)`` and its draws summed (see ``noise_radius``)."""
        noise, terms = self._cells_noise()
        return noise, terms * (np.asarray(j) - np.asarray(i))

    # -- range queries ---------------------------------------------------
    def _bin_domain(self) -> BinDomain:
        if self.domain.ndim != 1:
            raise DomainError(
                f"range_query answers 1-D ranges; this release has {self.domain.ndim} dimensions "
                f"{list(self.domain.columns)}. Pass one bound per column for a box, e.g. range_query((low_1, "
                f"low_2), (high_1, high_2)), or sum cells of result.counts (a MultiIndex Series)."
            )
        dim = self.domain.dims[0]
        if not isinstance(dim, BinDomain):
            dim.align(None, None)  # raises the categorical explanation
        return cast(BinDomain, dim)

    def _range_stats(self, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Estimate and variance of the bin ranges ``[i, j)``.

        Bins of a flat release carry independent noise, so a range's variance
        is the sum of its bins' variances (prefix sums make this O(1) each).
        Subclasses with correlated estimates override this.
        """
        est = np.concatenate([[0.0], np.cumsum(self.counts.to_numpy(dtype=np.float64))])
        var = np.concatenate([[0.0], np.cumsum(self.variance.to_numpy(dtype=np.float64))])
        return est[j] - est[i], var[j] - var[i]

    def range_query(self, low: Any, high: Any = None, *,
                    confidence_level: float = 0.95) -> RangeAnswer | pd.DataFrame:
        """Answer ``[low, high)`` — or a list of ``(low, high)`` ranges — from this release.

        Post-processing only: no budget is spent. Bounds must be bin edges.

        Parameters
        ----------
        low, high : float, Timestamp or Timedelta
            A half-open range in value space (dates and durations for date and
            duration bins; ISO 8601 text is read as a date). Or pass one list of
            ``(low, high)`` pairs as ``low`` to answer many at once.
        confidence_level : float
            Coverage of the ``lower``/``upper`` columns of the list form (the
            single form returns a :class:`RangeAnswer`, whose
            ``confidence_interval(confidence_level)`` gives the same bounds).

        Returns
        -------
        RangeAnswer or DataFrame
            For a list, one row per range with columns ``low, high, estimate,
            std_error, lower, upper`` (``estimate`` is int64 for an integer
            table, ``integer=True``); ``lower``/``upper`` follow the rule of
            :meth:`RangeAnswer.confidence_interval` (:func:`confidence_bounds`).
            ``low``/``high`` hold the bins' own kind of value (floats, or
            Timestamps / Timedeltas).

        Raises
        ------
        DomainError
            When a bound is not a bin edge, ``low > high``, or the release is
            not over bins. A release of 2 or more dimensions answers one box:
            ``low`` and ``high`` give one bound per column
            (``range_query((44.8, -93.4), (45.0, -93.1))``, bin edges in data
            units) and return a :class:`RangeAnswer` whose ``low``/``high`` are
            tuples; its standard error and interval are exact for linear
            releases (``method="identity"``: independent cells; trees and
            quadtrees: ``w^T Cov w`` of the least-squares estimate), data-dependent
            methods (DAWA, UGrid/AGrid, AHP, DPCube) return the bracket interval
            of :mod:`pandas_dp.results.bracket`, and a release clipped at 0
            answers with its estimate and says in ``note`` that the sum is biased.
        ParameterError
            When the ranges are not pairs or ``confidence_level`` is not in (0, 1).

        Examples
        --------
        >>> import numpy as np, pandas as pd, pandas_dp as pdp
        >>> df = pd.DataFrame({"age": np.arange(1000) % 100})
        >>> with pdp.budget(epsilon=1.0):
        ...     h = df.dp.histogram("age", bins=10, range=(0, 100), epsilon=1.0,
        ...                         rng=np.random.default_rng(0))
        >>> ans = h.range_query([(0, 20), (20, 70)], confidence_level=0.9)
        >>> list(ans.columns)
        ['low', 'high', 'estimate', 'std_error', 'lower', 'upper']
        >>> bool((ans["lower"] < ans["estimate"]).all() and (ans["estimate"] < ans["upper"]).all())
        True
        """
        normal_quantile(confidence_level)  # validate the public argument before any work
        if self.domain.ndim > 1 and high is not None:
            return self._box_query(low, high)
        dim = self._bin_domain()
        if high is None:
            pairs = range_pairs(low)
            i, j = dim.align(pairs[:, 0], pairs[:, 1])
            est, var = self._range_stats(i, j)
            std = np.sqrt(var)
            radius = noise_radius(*self._ranges_noise(i, j), std, confidence_level)
            lower, upper = confidence_bounds(est, std, confidence_level, radius=radius)
            if self.counts.dtype.kind in "iu":  # integer tables answer in whole counts (exact sums)
                est = np.rint(est).astype(np.int64)
            frame = pd.DataFrame({"low": dim.edge_values(i), "high": dim.edge_values(j), "estimate": est,
                                  "std_error": std, "lower": lower, "upper": upper})
            note = self._box_bias_note()
            if note:
                frame.attrs["note"] = note
            return frame
        if dim.kind == "number":
            bounds = [None if isinstance(v, (str, bytes)) else float_array(v) for v in (low, high)]
            if any(v is None or v.ndim != 0 for v in bounds):
                raise ParameterError(f"range_query(low, high) takes two numbers, the bin edges that start and end "
                                     f"the range (for several ranges pass one list of (low, high) pairs). Got "
                                     f"low={safe_repr(low)}, high={safe_repr(high)}.")
            low, high = bounds
        i, j = dim.align(low, high)
        est, var = self._range_stats(i, j)
        noise, terms = self._ranges_noise(i, j)
        return RangeAnswer(dim.edge_value(i[0]), dim.edge_value(j[0]), float(est[0]),
                           float(np.sqrt(var[0])), self.variance_exact,
                           noise[0] if isinstance(noise, list) else noise, int(np.ravel(terms)[0]),
                           self._box_bias_note() or "")

    def quantile(self, q: Any = 0.5, *, confidence_level: float | None = None) -> Any:
        """The ``q``-quantile(s) of the released column, read from the release (post-processing, no budget).

        The release's prefix sums, made monotone (weighted isotonic regression: the non-negative,
        consistent bins), give a CDF; the ``q``-quantile is where it reaches ``q``, linear inside its bin.
        With ``confidence_level``, an interval too, by inverting the release's range intervals edge by edge
        (:mod:`pandas_dp.results.quantiles` says what it covers). 1-D releases over numeric, date or
        duration bins.

        Parameters
        ----------
        q : float or list of float
            Probabilities in ``[0, 1]`` (as ``Series.quantile``).
        confidence_level : float, optional
            Return a frame with ``estimate``, ``ci_low``, ``ci_high`` and ``confidence_level`` columns.

        Returns
        -------
        float, Timestamp, Timedelta, Series or DataFrame
            A value for a scalar ``q`` (``NaN`` when the release's total is not positive), a Series indexed
            by ``q`` for a list, or the frame with ``confidence_level``.

        Examples
        --------
        >>> import numpy as np, pandas as pd, pandas_dp as pdp
        >>> df = pd.DataFrame({"age": np.arange(10_000) % 100})
        >>> with pdp.budget(epsilon=1.0):
        ...     h = df.dp.hierarchical_histogram("age", bins=100, range=(0, 100), epsilon=1.0,
        ...                                      rng=np.random.default_rng(0))
        >>> bool(abs(h.quantile(0.5) - 50) < 2)
        True
        >>> h.quantile([0.1, 0.9], confidence_level=0.95).columns.tolist()
        ['estimate', 'ci_low', 'ci_high', 'confidence_level']
        """
        return release_quantiles(self, q, confidence_level)

    def _box_query(self, low: Any, high: Any) -> RangeAnswer:
        """The box ``[low[k], high[k])`` on every dimension ``k`` of a d-D release (bin edges, data units).

        The estimate is the sum of the box's cells. Its standard error and interval are exact when the
        estimate is a linear map of the noisy measurements whose covariance the release knows: cells with
        independent noise (``method="identity"``: the sum of their variances, and the exact quantile of
        the sum of their draws) or a subclass's own structure (a tree's least squares). A release clipped
        at 0 answers with its estimate and says in ``note`` that the sum is biased; a release whose
        covariance is unknown refuses with that reason.
        """
        note = self._box_bias_note()
        if not self._boxes_exact() and note is None:
            raise DomainError(f"range_query over boxes needs cells with independent noise (method='identity'); "
                              f"this release ({self.method!r}) combines cells, so a box's variance needs its "
                              f"covariance. Release the grid with method='identity' for box queries.")
        box, edges_low, edges_high = self._box_bounds(low, high)
        shape = tuple(d.size for d in self.domain.dims)
        cells = int(np.prod([sl.stop - sl.start for sl in box]))
        est = float(self.counts.to_numpy(dtype=np.float64).reshape(shape)[box].sum()) if cells else 0.0
        var = self._box_variance(box) if cells else 0.0
        noise, per_cell = self._cells_noise()
        return RangeAnswer(edges_low, edges_high, est, math.sqrt(max(var, 0.0)),
                           self.variance_exact and note is None, noise, int(per_cell) * cells, note or "")

    def _box_bounds(self, low: Any, high: Any) -> tuple[tuple[slice, ...], tuple[Any, ...], tuple[Any, ...]]:
        """Checked box bounds in data units: the cell slices per dimension and the edges they start and end at."""
        return box_bounds(self.domain, low, high, self._bin_domain)

    def _boxes_exact(self) -> bool:
        """Whether boxes and sums over columns get exact variances (independent cells, or a subclass's own)."""
        return type(self)._range_stats is Histogram._range_stats and self.variance_exact

    def _box_bias_note(self) -> str | None:
        """Why a box sum of this release is biased (a clip at 0), or None when it is not."""
        if type(self)._range_stats is Histogram._range_stats and self.params.get("nonnegative") \
                and self.method == "identity":
            return _CLIPPED_SUM_NOTE
        return None

    def _box_variance(self, box: tuple[slice, ...]) -> float:
        """Exact variance of the sum of the cells of ``box`` (independent cells: the sum of theirs)."""
        return float(self.variance.to_numpy(dtype=np.float64).reshape(self.domain.shape)[box].sum())

    def marginal(self, columns: Any) -> "Histogram":
        """The release summed over the other columns: a histogram of ``columns`` (free post-processing).

        Each marginal cell is the sum of the cells it covers, and its variance the sum of theirs: exact
        when the cells carry independent noise (``method="identity"``), which is why other methods
        refuse (their cells are combined: a sum's variance needs their covariance). A 3-D release can
        so be plotted by its 1-D and 2-D marginals with honest error bars, where
        ``result.counts.groupby(...).sum()`` loses them.

        Parameters
        ----------
        columns : str or list of str
            Columns of this release to keep, in this release's order or any order.

        Returns
        -------
        Histogram
            On the kept columns' bins, ``method`` unchanged, ``params`` with ``marginal_of``.

        Examples
        --------
        >>> import numpy as np, pandas as pd, pandas_dp as pdp
        >>> df = pd.DataFrame({"a": np.arange(100) % 4, "b": np.arange(100) % 5, "c": np.arange(100) % 2})
        >>> with pdp.budget(epsilon=1.0):
        ...     h = df.dp.histogram(["a", "b", "c"], bins=[4, 5, 2], range=[(0, 4), (0, 5), (0, 2)],
        ...                         epsilon=1.0, rng=np.random.default_rng(0))
        >>> m = h.marginal("a")
        >>> bool(m.counts.sum() == h.counts.sum()), round(float(m.variance.iloc[0] / h.variance.iloc[0]), 9)
        (True, 10.0)
        """
        wanted = [columns] if isinstance(columns, str) else list(columns) if isinstance(columns, (list, tuple)) \
            else None
        names = list(self.domain.columns)
        # Plain text copies: a str subclass's own __eq__/__hash__ is never called (hostile public values).
        wanted = [str.__str__(c) if isinstance(c, str) else c for c in wanted] if wanted else wanted
        if not wanted or any(not isinstance(c, str) or c not in names for c in wanted) or len(set(wanted)) != len(wanted):
            raise ParameterError(f"marginal() takes one or more distinct columns of this release {names}. "
                                 f"Got {safe_repr(columns)}.")
        if type(self)._range_stats is not Histogram._range_stats or not self.variance_exact:
            raise DomainError(f"marginal() needs cells with independent noise (method='identity') for exact "
                              f"variances; this release ({self.method!r}) combines cells, so a sum's variance "
                              f"needs their covariance.")
        keep = [names.index(c) for c in wanted]
        drop = tuple(k for k in range(len(names)) if k not in keep)
        shape = self.domain.shape
        est = self.counts.to_numpy().reshape(shape).sum(axis=drop)
        var = self.variance.to_numpy(dtype=np.float64).reshape(shape).sum(axis=drop)
        order = sorted(keep)
        perm = [order.index(k) for k in keep]  # the caller's column order
        est, var = np.transpose(est, perm), np.transpose(var, perm)
        grid = Grid(tuple(self.domain.dims[k] for k in keep))
        return Histogram(counts=as_series(np.ascontiguousarray(est), grid, "estimate"),
                         variance=as_series(np.ascontiguousarray(var), grid, "variance"),
                         epsilon=self.epsilon, method=self.method,
                         params={**self.params, "marginal_of": names}, domain=grid,
                         post_processing=(*self.post_processing, f"sum over {[names[k] for k in drop]}"),
                         variance_exact=True, loss=self.loss, noise=self.noise, single_draw=False)

    # -- synthetic rows ----------------------------------------------------
    def sample(self, n: int | None = None, rng: Any = None) -> pd.DataFrame:
        """Synthetic rows drawn from this release (post-processing: no budget is spent).

        Parameters
        ----------
        n : int, optional
            Number of rows. ``None`` gives the released table itself: every
            cell appears ``round(max(estimate, 0))`` times. An integer draws
            ``n`` rows independently with cell probabilities proportional to
            those clipped, rounded counts.
        rng : numpy.random.Generator, optional
            Source of the draws; ``None`` uses ``numpy.random.default_rng()``
            seeded from operating-system entropy. The draws only post-process
            the public release, so their predictability is not a privacy issue.

        Returns
        -------
        DataFrame
            One column per dimension: numeric bins give values uniform in
            ``[low, high)`` of their bin, categories give their labels (a
            ``Categorical`` with the public categories), in random order.

        Notes
        -----
        Only the released estimates and the public domain are read, so the
        rows inherit the release's epsilon-DP guarantee (post-processing).

        Examples
        --------
        >>> import numpy as np, pandas as pd, pandas_dp as pdp
        >>> df = pd.DataFrame({"age": [23, 35, 35, 61, 17]})
        >>> with pdp.budget(epsilon=1.0):
        ...     h = df.dp.histogram("age", bins=4, range=(0, 80), epsilon=1.0,
        ...                         rng=np.random.default_rng(0))
        >>> rows = h.sample(n=1000, rng=np.random.default_rng(1))
        >>> rows.shape, bool(rows["age"].between(0, 80).all())
        ((1000, 1), True)
        """
        return grid_rows(self.counts.to_numpy(), self.domain, n, rng)

    # -- display -----------------------------------------------------------
    def plot(self, ax: Any = None, *, confidence_level: float = 0.95, density: bool = False,
             **kwargs: Any) -> Any:
        """Draw the release in the columns' units; returns the matplotlib Axes (needs the ``plot`` extra).

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Where to draw; a new figure by default.
        confidence_level : float
            Coverage of the error bars, from :meth:`confidence_interval` (1-D).
        density : bool
            Draw the count per unit of the column (the count divided by the
            bin's width, so a bar's area is its count) instead of the count:
            the honest picture of unequal bins. Needs numeric bins.
        **kwargs
            Passed to ``Axes.bar`` (``Axes.stairs`` above 200 bins, or
            ``Axes.pcolormesh`` for 2-D grids).

        Returns
        -------
        matplotlib.axes.Axes

        Raises
        ------
        ParameterError
            For releases of more than two columns, a bad ``confidence_level``,
            or ``density=True`` on categories only.

        Notes
        -----
        1-D numeric bins are bars from ``edges[i]`` to ``edges[i+1]`` (their
        true width) with error bars ``[lower, upper]`` of the release's
        intervals; above 200 bins a filled step line with the interval as a
        band. Categories are one bar each, labelled. 2-D grids are heat maps
        whose axes are the bin edges' values (or categories), rows the first
        column. Numbers carry thousands separators, dates read as dates.
        Drawing reads only the release: no budget is spent.

        Examples
        --------
        >>> import numpy as np, pandas as pd, pandas_dp as pdp
        >>> import matplotlib; matplotlib.use("Agg")
        >>> df = pd.DataFrame({"income": np.arange(0, 200_000, 50)})
        >>> with pdp.budget(epsilon=1.0):
        ...     h = df.dp.histogram("income", bins=[0, 20_000, 50_000, 100_000, 200_000], epsilon=1.0,
        ...                         rng=np.random.default_rng(0))
        >>> ax = h.plot(density=True)
        >>> [float(v) for v in ax.get_xlim()], [t.get_text() for t in ax.get_xticklabels()]
        ([0.0, 200000.0], ['0', '20,000', '50,000', '100,000', '200,000'])
        >>> ax.get_ylabel()
        'count per unit of income (± 95% CI)'
        """
        check_axes(ax, f"{type(self).__name__}.plot()")
        normal_quantile(confidence_level)
        density = check_flag(density, "density", f"{type(self).__name__}.plot()")
        return plot_grid(self, ax, confidence_level=float(confidence_level), density=density, **kwargs)

    def _summary_rows(self, n: int = 10) -> pd.DataFrame:
        """The first ``n`` rows of :meth:`to_frame` for reading (labels and numbers formatted)."""
        return estimates_table(self.to_frame().head(n), ", ".join(map(str, self.domain.columns)))

    def _html_rows(self, n: int = 10) -> str:
        """The first ``n`` bins as an HTML table: ``estimate ± std_error`` per bin."""
        return html_estimates(self.to_frame().head(n), self.variance_exact,
                              ", ".join(map(str, self.domain.columns)))

    #: How several noises of one release are told apart in its description.
    _noise_by = "by level"

    def _noises(self) -> list[Any]:
        """Descriptions (``Noise.describe()``) of the noise the release drew, shown with its guarantee."""
        return [] if self.noise is None else [self.noise.describe()]

    def _guarantee(self, *, html: bool = True) -> str:
        """``ε = 0.5, noise scale t = 2`` or ``ρ = 0.125 (zCDP), σ = 2`` (``repr``: ``rho=0.125 (zCDP), sigma=2``)."""
        return guarantee_text(self.loss, self.epsilon, self._noises(), html=html, by=self._noise_by)

    def _repr_head(self) -> str:
        return (f"{type(self).__name__}(method={self.method!r}, {self._guarantee(html=False)}, "
                f"columns={list(self.domain.columns)}, bins={self.domain.size:,})")

    def __repr__(self) -> str:
        more = f"\n… {self.domain.size - 10:,} more bins" if self.domain.size > 10 else ""
        note = release_note(self.params)
        return self._repr_head() + (f"\nnote: {note}" if note else "") + "\n" + self._summary_rows().to_string() + more

    def _html_title(self) -> str:
        """The method's facts shown after the method name (subclasses add theirs)."""
        return self._guarantee()

    def _html_notes(self) -> str:
        """Escaped HTML shown above the parameters (subclasses add theirs)."""
        return ""

    def _repr_html_(self) -> str:
        table = self._html_rows()
        more = f"<p>… {self.domain.size - 10:,} more bins</p>" if self.domain.size > 10 else ""
        return (f"<div><strong>{html.escape(type(self).__name__)}</strong> — method "
                f"<code>{html.escape(self.method)}</code>, {self._html_title()}, "
                f"{self.domain.size:,} bins over {html.escape(str(list(self.domain.columns)))}"
                f"{_note_html(self.params)}"
                f"<br><small>{self._html_notes()}{html_params(self.params)}</small>{table}{more}</div>")


def _note_html(params: Any) -> str:
    """The bounding note as an HTML line (or nothing)."""
    note = release_note(params)
    return f"<br><em>{html.escape(note)}</em>" if note else ""


def html_estimates(frame: pd.DataFrame, exact: bool = True, index_name: str | None = None) -> str:
    """HTML table of ``estimate ± std_error`` rows (from a frame with those two columns).

    Integral estimates show as ``120,800``, others with one decimal
    (``3,267.1``); bins as ``[20, 30)``.
    """
    shown = estimates_table(frame[["estimate", "std_error"]], index_name)
    table = pd.DataFrame({"estimate ± std_error": [f"{e} ± {s}" for e, s in
                                                   zip(shown["estimate"], shown["std_error"])]},
                         index=shown.index)
    note = "" if exact else "<br><small>± covers the noise only (see variance_exact)</small>"
    return table.to_html() + note


def as_series(values: np.ndarray, grid: Grid, name: str, *, owned: bool = False) -> SeriesOnIndex:
    """A flat per-cell array as a result's Series on the grid's index, the index built on first use.

    Parameters
    ----------
    values : ndarray
        One value per cell of ``grid`` (any shape with ``grid.size`` elements, read in C order).
    grid : Grid
        The release's domain; its ``index`` labels the values when the Series is first handed out.
    name : str
        The Series' name.
    owned : bool
        The caller hands ``values`` over (a fresh array that nothing else holds or writes): the
        result locks it read-only in place and shares it (:func:`~pandas_dp.results.frozen.lock_in_place`)
        instead of copying it.

    Returns
    -------
    SeriesOnIndex
        What a result stores for a Series field; ``result.counts`` hands it out as
        ``pd.Series(values, index=grid.index, name=name)``.
    """
    flat = np.asarray(values).reshape(-1)
    if flat.size != grid.size:
        raise ValueError(f"{name}: {flat.size} values for a domain of {grid.size} cells")
    if owned:
        lock_in_place(flat)
    return SeriesOnIndex(pd.Series(flat, name=name, copy=False), grid)


def constant_cells(value: float, grid: Grid) -> np.ndarray:
    """One float per cell of ``grid``, all ``value``: a read-only broadcast view of a single float64.

    The same values as ``np.full(grid.size, value)`` (a constant variance column) in 8 bytes instead
    of ``8 * grid.size``; operations on it read like on any array, writes are refused.
    """
    return lock_in_place(np.broadcast_to(np.array(value, dtype=np.float64), (grid.size,)))

