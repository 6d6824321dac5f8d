"""Table sets of ResidualPlanner: ``MarginalTables`` and its published form ``PublishedTables``.

``MarginalTables`` is the result of ``df.dp.marginals(workload, ...)``. Every table of the workload,
and any sub-table of one, is read from one estimate of the residual components
(:mod:`pandas_dp.algorithms.marginals.reconstruct`), so the tables agree
exactly: a table summed over some of its columns is the smaller table, and all
share one total. Errors are exact: a cell of the table on columns ``W`` has
variance ``sum_{A subset W} V_A a(A, W)``, the same for every cell of it, and
cells of one table are correlated through the shared components, so
:class:`MarginalHistogram` computes a range's or a box's variance from the
components (never by summing cell variances).

``PublishedTables`` is the same table set made publishable: non-negative (or non-negative integer)
and consistent, built by post-processing only (``tables.nonnegative()``, ``tables.integer()``, or
``df.dp.marginals(..., nonnegative=True)`` / ``integer=True``): no private data is read and no budget
is spent. Every table is read from one non-negative joint over the union of the workload's columns
(:mod:`pandas_dp.algorithms.marginals.nonnegative`, then :mod:`pandas_dp.algorithms.marginals.sample`
for integers), so a table summed over some of its columns is the smaller table exactly and all
share one total.

A ``PublishedTables`` *is* a ``MarginalTables`` (the contract of ``marginals(...)``): ``table(columns)``
returns a :class:`PublishedHistogram` (a ``Histogram``) whose estimates are the published values and
whose ``variance``/``std_error`` are the unconstrained GLS table's, exact for *that* table, not for the
published one (clipping and rounding add a bias that depends on the unknown counts): its
``variance_exact`` is false, range answers have ``exact_std_error=False`` and a ``note`` starting with
"biased", and ``to_frame().attrs["note"]``, the repr and the notebook view say so.
:meth:`PublishedTables.error` reports how far the published tables moved from the unconstrained ones
(``unconstrained``).

Why one module: ``MarginalTables.nonnegative()`` returns a ``PublishedTables``, and ``PublishedTables``
subclasses ``MarginalTables`` (a published table set is still a ``MarginalTables``: ``isinstance`` holds,
and ``plan``, ``detail`` and the variances are the unconstrained release's), so each class needs the
other. They are defined together, rather than in two modules joined by a deferred import, and the
computation they delegate to sits below both (:mod:`pandas_dp.algorithms.marginals.publish`). The
table sets by geography build on these in :mod:`pandas_dp.results.geography_marginals`.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

from pandas_dp._utils.optional import import_optional
from pandas_dp._utils.public import safe_repr
from pandas_dp.algorithms.marginals.alone import alone_ratios
from pandas_dp.algorithms.marginals.nonnegative import table_of
from pandas_dp.algorithms.marginals.ordered import box_variances, cell_variances
from pandas_dp.algorithms.marginals.publish import publish_tables
from pandas_dp.algorithms.marginals.reconstruct import MarginalEstimates
from pandas_dp.algorithms.marginals.sample import fit_model, sample_joint
from pandas_dp.domain.grid import Grid
from pandas_dp.errors import ParameterError
from pandas_dp.results._base import FrozenRelease, MeasureView
from pandas_dp.results._checks import check_axes, find_label
from pandas_dp.results._format import guarantee_text, html_params
from pandas_dp.results.frozen import FrozenDict, Released, freeze, lock_in_place, stored_fields
from pandas_dp.results.histogram import Histogram, as_series, constant_cells

__all__ = ["MarginalTables", "MarginalHistogram", "MarginalDetail", "PublishedTables", "PublishedHistogram",
           "PUBLISHED_NOTE", "publish", "sample_arguments"]


@dataclass(frozen=True)
class MarginalDetail(MarginalEstimates, Released):
    """The algorithm's output held by a :class:`MarginalTables`: read-only, shared (never cloned) on access.

    The same attributes and methods as
    :class:`~pandas_dp.algorithms.marginals.reconstruct.MarginalEstimates` (``plan``, ``components``,
    ``residual_variances``, ``marginal(attrs)``, ``variance(attrs)``, ``total()``); its arrays are
    read-only and its plan frozen, so it is handed out as is.
    """

    @classmethod
    def of(cls, estimates: MarginalEstimates) -> MarginalDetail:
        """Hold ``estimates`` read-only (their arrays locked in place, the plan's mappings frozen)."""
        plan = estimates.plan
        if not isinstance(plan.workload.index, FrozenDict):
            freeze(plan)   # in place, once: a plan may be shared by releases of the same public inputs
        return cls(plan=plan, components=tuple(_read_only(c) for c in estimates.components),
                   residual_variances=_read_only(estimates.residual_variances))

    def __reduce__(self) -> tuple[Any, ...]:
        return (_held, (self.plan, self.components, self.residual_variances))


def _read_only(values: Any) -> np.ndarray:
    """A read-only view of a private copy of ``values``: the view cannot be made writeable again."""
    owner = np.array(values, dtype=np.float64, copy=True)
    lock_in_place(owner)
    return owner.view()


def _held(plan: Any, components: tuple[np.ndarray, ...], residual_variances: np.ndarray) -> MarginalDetail:
    """Unpickling: the arrays come back writeable, so they are copied read-only again."""
    return MarginalDetail.of(MarginalEstimates(plan, tuple(np.array(c) for c in components),
                                               np.array(residual_variances)))


def _box_variance(subset_variances: tuple[float, ...], lengths: list[int], sizes: list[int]) -> float:
    """Variance of the sum of a box of ``lengths[k]`` cells on every axis ``k`` of one table.

    The table is ``sum_A (kron_{k in A} P_k  kron_{k not in A} 1/n_k) r_A`` with ``Cov(r_A) = V_A P_A``,
    so a box ``q = kron q_k`` has variance ``sum_A V_A prod_{k in A} (L_k - L_k**2 / n_k)
    prod_{k not in A} (L_k / n_k)**2`` (``A`` a bit mask over the table's axes).
    """
    total = []
    for mask, v in enumerate(subset_variances):
        term = float(v)
        for k, (length, n) in enumerate(zip(lengths, sizes)):
            term *= (length - length * length / n) if mask >> k & 1 else (length / n) ** 2
        total.append(term)
    return math.fsum(total)


@stored_fields
@dataclass(frozen=True, repr=False, eq=False)
class MarginalHistogram(Histogram):
    """One table of a :class:`MarginalTables` release: a :class:`~pandas_dp.results.Histogram` with exact
    range, box and sub-table variances.

    Attributes
    ----------
    subset_variances : tuple of float
        ``V_A`` of the residual of every subset ``A`` of the table's columns, indexed by the bit
        mask of ``A`` over the columns in this table's order (bit ``k``: column ``k``).
    """

    subset_variances: tuple[float, ...] = ()
    splits: tuple[Any, ...] = ()

    def _boxes_exact(self) -> bool:
        return True

    def _range_stats(self, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        est = np.concatenate([[0.0], np.cumsum(self.counts.to_numpy(dtype=np.float64))])
        if self.splits:
            return est[j] - est[i], box_variances(self.subset_variances, self.splits,
                                                  [_indicators(i, j, self.domain.size)])
        n = self.domain.size
        lengths = (np.asarray(j) - np.asarray(i)).astype(np.float64)
        v0, v1 = (float(v) for v in self.subset_variances[:2])
        return est[j] - est[i], v0 * (lengths / n) ** 2 + v1 * (lengths - lengths ** 2 / n)

    def _box_variance(self, box: tuple[slice, ...]) -> float:
        if self.splits:
            return float(box_variances(self.subset_variances, self.splits,
                                       [_indicators(np.array([sl.start]), np.array([sl.stop]), n)
                                        for sl, n in zip(box, self.domain.shape)])[0])
        return _box_variance(self.subset_variances, [sl.stop - sl.start for sl in box], list(self.domain.shape))

    def marginal(self, columns: Any) -> Histogram:
        """This table summed over its other columns: the release's table of ``columns`` (exact variances).

        The tables of a :class:`MarginalTables` agree, so this equals ``tables.table(columns)``.
        """
        wanted = [columns] if isinstance(columns, str) else list(columns) if isinstance(columns, (list, tuple)) \
            else None
        names = list(self.domain.columns)
        wanted = [str.__str__(c) if isinstance(c, str) else c for c in wanted] if wanted else wanted
        keep = [find_label(c, names) for c in wanted] if wanted else [None]
        if any(k is None for k in keep) or len(set(keep)) != len(keep):
            raise ParameterError(f"marginal() takes one or more distinct columns of this table {names}. "
                                 f"Got {safe_repr(columns)}.")
        axes = [int(k) for k in keep if k is not None]
        drop = tuple(k for k in range(len(names)) if k not in axes)
        values = self.counts.to_numpy()
        values = values if values.dtype.kind in "iu" else values.astype(np.float64)   # integer tables stay so
        est = values.reshape(self.domain.shape).sum(axis=drop)
        order = sorted(axes)
        est = np.transpose(est, [order.index(k) for k in axes])
        sub = tuple(self.subset_variances[sum(1 << axes[b] for b in range(len(axes)) if m >> b & 1)]
                    for m in range(1 << len(axes)))
        grid = Grid(tuple(self.domain.dims[k] for k in axes))
        splits = tuple(self.splits[k] for k in axes) if self.splits else ()
        cell = cell_variances(sub, splits) if splits else None
        return _table(np.ascontiguousarray(est), grid, sub, self, cell, cls=None if self.variance_exact else type(self),
                      splits=splits)


def _one_or_mean(values: np.ndarray) -> float:
    """The common value of ``values``, or their mean when they differ."""
    return float(values[0]) if bool(np.all(values == values[0])) else float(values.mean())


def _indicators(i: np.ndarray, j: np.ndarray, n: int) -> np.ndarray:
    """Rows ``1[i <= k < j]`` over ``k = 0..n-1``, one per range."""
    k = np.arange(n)
    return ((k >= np.asarray(i)[:, None]) & (k < np.asarray(j)[:, None])).astype(np.float64)


def _table(values: np.ndarray, grid: Grid, subset_variances: tuple[float, ...], like: Any,
           cell: Any = None, cls: type[MarginalHistogram] | None = None,
           params: Mapping[str, Any] | None = None, splits: tuple[Any, ...] = ()) -> MarginalHistogram:
    """One table as a :class:`MarginalHistogram` (or ``cls``, a subclass whose variances are the unconstrained
    table's: ``variance_exact`` false, ``params`` saying why)."""
    if cell is None:
        cell = _box_variance(subset_variances, [1] * grid.ndim, list(grid.shape))
    kind = MarginalHistogram if cls is None else cls
    # with an ordered column the cells' variances differ (an array); else one value for every cell
    spread = np.ascontiguousarray(cell, dtype=np.float64) if np.ndim(cell) else constant_cells(cell, grid)
    return kind(
        counts=as_series(values, grid, "estimate"), variance=as_series(spread, grid, "variance"),
        epsilon=like.epsilon, method=like.method,
        params={**(like.params if params is None else params), "table": list(grid.columns)},
        domain=grid, post_processing=like.post_processing, variance_exact=cls is None, loss=like.loss,
        noise=like.noise, single_draw=False, subset_variances=subset_variances,
        splits=tuple(s for s in splits if s.pi is not None) and splits)


@stored_fields
@dataclass(frozen=True, repr=False, eq=False)
class MarginalTables(FrozenRelease, MeasureView):
    """Differentially private cross-tabulations of one frame, consistent with each other.

    Attributes
    ----------
    workload : tuple of tuple
        The tables asked for, as tuples of column labels (in the order given).
    domain : Grid
        The public domain of every column of the workload, one dimension each.
    epsilon : float or None
        Privacy loss charged (pure DP; None for a zCDP release).
    method : str
        ``"residual_planner"``.
    params : Mapping
        The loss, weights, privacy unit and sensitivity, and every measured marginal's share of the
        loss and noise (``plan`` shows them as a table).
    post_processing : tuple of str
        Steps after the noise (the GLS reconstruction).
    loss : PrivacyLoss
        The whole loss of the release (``PureDP`` or ``ZCDP``).
    noise : Noise
        The noise with the widest tails among those drawn (for the intervals of the tables).
    detail : MarginalDetail
        The algorithm's output: the plan, the estimated residual components and their variances
        (:class:`~pandas_dp.algorithms.marginals.reconstruct.MarginalEstimates`, read-only).

    Notes
    -----
    Every method reads only the release: no budget is spent. Results are immutable, pickle, and
    compare by value.

    Examples
    --------
    >>> import numpy as np, pandas as pd, pandas_dp as pdp
    >>> df = pd.DataFrame({"a": np.arange(300) % 3, "b": np.arange(300) % 4, "c": np.arange(300) % 2})
    >>> with pdp.budget(rho=1.0):
    ...     t = df.dp.marginals([("a", "b"), ("b", "c")], categories={"a": [0, 1, 2], "b": [0, 1, 2, 3],
    ...                         "c": [0, 1]}, rho=1.0, rng=np.random.default_rng(0))
    >>> ab, bc = t.table(("a", "b")), t.table(("b", "c"))
    >>> bool(np.allclose(ab.counts.groupby(level="b").sum(), bc.counts.groupby(level="b").sum()))
    True
    >>> bool(np.isclose(ab.counts.sum(), bc.counts.sum()))
    True
    """

    workload: tuple[tuple[Any, ...], ...]
    domain: Grid = field(compare=False)
    epsilon: float | None
    method: str
    params: Mapping[str, Any]
    post_processing: tuple[str, ...] = ()
    loss: Any = field(default=None, compare=False)
    noise: Any = field(default=None, compare=False)
    detail: MarginalDetail | None = field(default=None, compare=False)

    @property
    def columns(self) -> tuple[Any, ...]:
        """Every column of the workload (the attributes), in order of first appearance."""
        return self.domain.columns

    def _detail(self) -> MarginalDetail:
        if self.detail is None:
            raise ParameterError("This MarginalTables has no estimates (built without its detail).")
        return self.detail

    def _attributes(self, columns: Any) -> list[int]:
        """Attribute positions of ``columns`` (one label or a tuple/list of labels), checked."""
        names = list(self.columns)
        wanted = list(columns) if isinstance(columns, (tuple, list)) else [columns]
        wanted = [str.__str__(c) if isinstance(c, str) else c for c in wanted]
        found = [find_label(c, names) for c in wanted]
        if not wanted or any(k is None for k in found) or len(set(found)) != len(found):
            raise ParameterError(f"table() takes one or more distinct columns of this release {names}, e.g. "
                                 f"table({tuple(self.workload[0])!r}). Got {safe_repr(columns)}.")
        return [int(k) for k in found if k is not None]

    def table(self, columns: Any, level: Any = None, region: Any = None) -> MarginalHistogram:
        """The released table of ``columns``: a workload table or any sub-table of one (free).

        Parameters
        ----------
        columns : label or tuple of labels
            Columns of the table, in the order of its index levels.
        level, region : optional
            A region's table, for a release by geography (``marginals(..., by=...)``); a release
            without ``by`` has no level or region to pick.

        Returns
        -------
        MarginalHistogram
            A :class:`~pandas_dp.results.Histogram` (``MultiIndex`` over the cells for two or more
            columns) with the exact variance of every cell, and exact ``range_query`` answers on
            numeric columns (ranges, and boxes of several columns).

        Raises
        ------
        ParameterError
            When a column is not in the workload, or the columns are in no workload table together.
        """
        if level is not None or region is not None:
            raise ParameterError("This table set was released without by=: it has no levels or regions. Call "
                                 "table(columns), or release with by=[...] and hierarchy= for tables by region.")
        attrs = self._attributes(columns)
        detail = self._detail()
        detail.plan.workload.check(tuple(sorted(attrs)))
        values = detail.marginal(attrs)
        index = detail.plan.workload.index
        subset = tuple(float(detail.residual_variances[index[tuple(sorted(attrs[b] for b in range(len(attrs))
                                                                        if m >> b & 1))]])
                       for m in range(1 << len(attrs)))
        grid = Grid(tuple(self.domain.dims[k] for k in attrs))
        return _table(np.ascontiguousarray(values), grid, subset, self, detail.variance(attrs),
                      splits=detail.splits(attrs))

    def tables(self) -> list[MarginalHistogram]:
        """Every workload table, in the workload's order."""
        return [self.table(t) for t in self.workload]

    def nonnegative(self) -> Any:
        """These tables made non-negative and kept consistent (post-processing, free): a
        :class:`PublishedTables` (the weighted least-squares tables of a
        non-negative joint; see :mod:`pandas_dp.algorithms.marginals.nonnegative`)."""
        return publish(self, "nonnegative")

    def integer(self) -> Any:
        """These tables as consistent non-negative integers (post-processing, free): a
        :class:`PublishedTables` with the rounding's extra error in its
        ``error()``."""
        return publish(self, "integer")

    def sample(self, n: Any = None, rng: Any = None) -> pd.DataFrame:
        """Synthetic person records whose tables agree with :meth:`nonnegative` (post-processing, free); see
        :meth:`PublishedTables.sample`."""
        return self.nonnegative().sample(n=n, rng=rng)

    def to_frame(self) -> pd.DataFrame:
        """One row per cell of every workload table: ``table``, one column per attribute, ``estimate``,
        ``variance``, ``std_error`` (an attribute not in a row's table is missing)."""
        parts = []
        for cols, tbl in zip(self.workload, self.tables()):
            frame = tbl.to_frame()
            cells = frame.index.to_frame(index=False) if isinstance(frame.index, pd.MultiIndex) else \
                pd.DataFrame({cols[0]: frame.index.to_numpy(dtype=object)})
            cells = cells.astype(object)
            body = pd.DataFrame({c: cells[c].to_numpy() if c in cols else None for c in self.columns})
            body.insert(0, "table", pd.Series([tuple(cols)] * len(frame), dtype=object))
            for name in ("estimate", "variance", "std_error"):
                body[name] = frame[name].to_numpy()
            parts.append(body)
        return pd.concat(parts, ignore_index=True)

    @property
    def counts(self) -> pd.Series:
        """The estimates of every workload table, indexed like :meth:`to_frame` (a new Series)."""
        return self.to_frame()["estimate"]

    @property
    def variance(self) -> pd.Series:
        """The variance of every estimate of :attr:`counts` (a new Series)."""
        return self.to_frame()["variance"]

    def total_variance(self) -> float:
        """The plan's loss ``"sum"`` at the noise drawn: the weighted sum of every workload cell's variance."""
        return self._detail().plan.total_variance()

    @property
    def plan(self) -> pd.DataFrame:
        """Every marginal of the workload's closure: measured or not, its share of the privacy loss, its
        noise (kind, scale, cell variance), its residual's variance, its share of the ``"sum"`` loss and, for
        a workload table, ``alone_ratio``: its cell variance over that of the table measured alone with an
        even split (``1 / T`` of the loss, the identity mechanism, the same noise), at most 1 under the
        default plan (NaN for a sub-table)."""
        plan = self._detail().plan
        names = list(self.columns)
        shares = plan.loss_shares()
        alone = dict(zip(plan.workload.tables, alone_ratios(plan).tolist()))
        rows = []
        for k, (attrs, share, part, noise) in enumerate(zip(plan.residuals, plan.shares, plan.losses, plan.noises)):
            described = {} if noise is None else noise.describe()
            rows.append({"marginal": tuple(names[i] for i in attrs), "cells": plan.workload.cells(attrs),
                         "measured": noise is not None, "loss_share": float(share),
                         plan.loss.parameter: float(part.amount),
                         "noise": described.get("noise"),
                         # the scale of the noise on one cell: sigma (discrete Gaussian) or t (discrete Laplace)
                         "noise_scale": (float("nan") if noise is None else
                                         math.sqrt(float(noise.sigma2)) if hasattr(noise, "sigma2") else
                                         float(getattr(noise, "scale"))),
                         "noise_variance": float("nan") if noise is None else float(noise.variance()),
                         "residual_variance": float(self._detail().residual_variances[k]),
                         "share_of_total_variance": float(shares[k]),
                         "alone_ratio": alone.get(attrs, float("nan"))})
        return pd.DataFrame(rows)

    def plot(self, columns: Any = None, ax: Any = None, **kwargs: Any) -> Any:
        """Draw one table (``columns``), or every workload table of one or two columns side by side.

        Returns the matplotlib Axes (one table) or an array of Axes; needs the ``plot`` extra.
        Reads only the release: no budget is spent.
        """
        if columns is not None:
            return self.table(columns).plot(ax, **kwargs)
        check_axes(ax, "MarginalTables.plot()")
        small = [t for t in self.workload if len(t) <= 2]
        if not small:
            raise ParameterError("MarginalTables.plot() draws tables of one or two columns; this workload has "
                                 "none. Pass columns= of a sub-table, e.g. plot(columns=('a', 'b')).")
        plt = import_optional("matplotlib.pyplot", extra="plot", purpose="MarginalTables.plot()")
        ncols = min(len(small), 3)
        nrows = -(-len(small) // ncols)
        _, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.2 * nrows), squeeze=False)
        for cols, axis in zip(small, axes.ravel()):
            self.table(cols).plot(axis, **kwargs)
        for axis in axes.ravel()[len(small):]:
            axis.set_visible(False)
        return axes

    # -- display -----------------------------------------------------------
    def _guarantee(self, *, html: bool = True) -> str:
        noises = [n.describe() for n in self._detail().plan.noises if n is not None]
        return guarantee_text(self.loss, self.epsilon, noises, html=html, by="by marginal")

    def _summary(self) -> pd.DataFrame:
        rows = []
        for cols, tbl in zip(self.workload, self.tables()):
            rows.append({"table": " x ".join(map(str, cols)), "cells": tbl.domain.size,
                         "total": float(tbl.counts.sum()),
                         # the same in every cell, or (an ordered column) the root of the mean cell variance
                         "std_error per cell": float(np.sqrt(_one_or_mean(tbl.variance.to_numpy())))})
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        return (f"MarginalTables(method={self.method!r}, {self._guarantee(html=False)}, "
                f"tables={len(self.workload)}, columns={list(self.columns)})\n{self._summary().to_string(index=False)}")

    def _repr_html_(self) -> str:
        return (f"<div><strong>MarginalTables</strong> — method <code>{html.escape(self.method)}</code>, "
                f"{self._guarantee()}, {len(self.workload)} tables over {html.escape(str(list(self.columns)))}"
                f"<br><small>{html_params(self.params)}</small>{self._summary().to_html(index=False)}</div>")


# -- published tables: non-negative (or integer) and consistent --------------------------------------
#: Most records :meth:`PublishedTables.sample` draws at once (one int64 cell code each: 8 GB).
MAX_RECORDS = 10**9

#: What the variances of a published table are (``to_frame().attrs["note"]``, repr, range answers' ``note``).
PUBLISHED_NOTE = ("biased: published (non-negative or integer) tables are not linear in the noise; variance, "
                  "std_error and intervals are those of the unconstrained GLS tables (result.unconstrained), the "
                  "noise only, not exact for the published values; error() says how far they moved")


def sample_arguments(n: Any, rng: Any, total: float) -> tuple[int, np.random.Generator]:
    """``sample(n=, rng=)``'s checked arguments: the number of records (the published total for None) and the
    generator (public inputs: a clear error naming the argument)."""
    if n is None:
        n = int(round(total))
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 0 <= n <= MAX_RECORDS:
        raise ParameterError(f"sample(n=) takes a non-negative integer number of records, at most "
                             f"{MAX_RECORDS:,}, or None for the published total. Got {safe_repr(n)}.")
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise ParameterError(f"sample(rng=) takes a numpy.random.Generator or None (the draws are "
                             f"post-processing of released values). Got {safe_repr(rng)}.")
    return int(n), (rng if rng is not None else np.random.default_rng())


@stored_fields
@dataclass(frozen=True, repr=False, eq=False)
class PublishedHistogram(MarginalHistogram):
    """One published table: a :class:`~pandas_dp.results.Histogram` whose ``counts`` are the published values
    (int64 for integer tables) and whose ``variance`` is the unconstrained GLS table's (``variance_exact``
    false; ``params["published_note"]`` says so, and range and box answers carry it as their ``note``)."""

    def _box_bias_note(self) -> str | None:
        return PUBLISHED_NOTE


@stored_fields
@dataclass(frozen=True, repr=False, eq=False)
class PublishedTables(MarginalTables):
    """Non-negative (``kind="nonnegative"``) or non-negative integer (``kind="integer"``) consistent tables.

    A :class:`~pandas_dp.results.marginals.MarginalTables` (``plan``, ``total_variance()``, ``detail``
    are the unconstrained release's); ``table(columns)`` is a :class:`PublishedHistogram`.

    Attributes
    ----------
    workload : tuple of tuple
        The tables asked for, as tuples of column labels.
    domain : Grid
        The public domain of every column of the workload.
    kind : str
        ``"nonnegative"`` or ``"integer"``.
    joint : ndarray
        The published joint over the union of the workload's columns (axes in ``domain`` order):
        every table is its sum over the other columns. Float64 on a dyadic grid (``"nonnegative"``)
        or int64 (``"integer"``).
    nonnegative_joint : ndarray
        The non-negative joint the integers were rounded from (the ``joint`` itself for
        ``"nonnegative"``).
    unconstrained : MarginalTables
        The release these tables were computed from (exact variances of the unconstrained tables).
    method : str
        The release's method (``"residual_planner"``).
    params : Mapping
        The release's parameters, with ``"publish"``: how these tables were computed (solver
        steps and last step, the joint's grid, the record model's fit).
    post_processing : tuple of str
        The steps after the noise (the GLS reconstruction, the projection, the rounding).
    epsilon, loss :
        The privacy loss of the release (nothing more was spent).

    Examples
    --------
    >>> import numpy as np, pandas as pd, pandas_dp as pdp
    >>> df = pd.DataFrame({"a": np.arange(30) % 3, "b": np.arange(30) % 2})
    >>> with pdp.budget(rho=1.0):
    ...     t = df.dp.marginals([("a", "b")], categories={"a": [0, 1, 2], "b": [0, 1]}, rho=1.0,
    ...                         integer=True, rng=np.random.default_rng(0))
    >>> ab = t.table(("a", "b")).counts
    >>> bool((ab >= 0).all()), ab.dtype == np.int64, int(ab.sum()) == t.total
    (True, True, True)
    >>> bool((ab.groupby(level="a").sum().to_numpy() == t.table("a").counts.to_numpy()).all())
    True
    >>> isinstance(t, pdp.MarginalTables), t.table("a").variance_exact
    (True, False)
    """

    kind: str = "nonnegative"
    joint: Any = None
    nonnegative_joint: Any = field(default=None, compare=False)
    unconstrained: Any = field(default=None, compare=False)

    @property
    def total(self) -> float:
        """The one total every table shares (an integer for ``kind="integer"``)."""
        joint = np.asarray(self.joint)
        return int(joint.sum()) if joint.dtype.kind == "i" else math.fsum(joint.ravel().tolist())

    def _axes(self, columns: Any) -> list[int]:
        axes = self._attributes(columns)
        self.unconstrained._detail().plan.workload.check(tuple(sorted(axes)))
        return axes

    @staticmethod
    def _values(joint: np.ndarray, axes: list[int]) -> np.ndarray:
        order = sorted(axes)
        values = table_of(np.asarray(joint), order)
        return np.ascontiguousarray(np.transpose(values, [order.index(k) for k in axes]))

    def table(self, columns: Any, level: Any = None, region: Any = None) -> PublishedHistogram:
        """The published table of ``columns`` (a workload table or any sub-table of one).

        Returns
        -------
        PublishedHistogram
            A :class:`~pandas_dp.results.Histogram` over the cells (a ``MultiIndex`` for two or more
            columns): ``counts`` the published values (int64 for ``kind="integer"``), ``variance`` and
            ``std_error`` the unconstrained GLS table's (``variance_exact`` false: not exact for the
            published values, which clipping and rounding moved; see ``params["published_note"]``).
        """
        unconstrained = super().table(columns, level=level, region=region)   # the GLS table; checks the arguments
        axes = self._axes(columns)
        grid = Grid(tuple(self.domain.dims[k] for k in axes))
        return _published_table(self._values(self.joint, axes), grid, unconstrained, self)

    def nonnegative(self) -> PublishedTables:
        """The non-negative tables of the same release (these, for ``kind="nonnegative"``)."""
        return self if self.kind == "nonnegative" else publish(self.unconstrained, "nonnegative")

    def integer(self) -> PublishedTables:
        """The integer tables of the same release (these, for ``kind="integer"``)."""
        return self if self.kind == "integer" else publish(self.unconstrained, "integer")

    def to_frame(self) -> pd.DataFrame:
        """One row per cell of every workload table: ``table``, one column per attribute, ``estimate`` (the
        published value), ``variance`` and ``std_error`` (the unconstrained GLS table's: a reference, not
        the published value's error; ``attrs["note"]`` says so), ``unconstrained_estimate`` (the GLS
        table's value), and for integers ``nonnegative_estimate`` (the value before rounding)."""
        base = self.unconstrained.to_frame()
        estimates = np.concatenate([self._values(self.joint, self._axes(t)).ravel() for t in self.workload])
        out = base.drop(columns=["estimate", "variance", "std_error"])
        out["estimate"] = estimates
        out["variance"] = base["variance"].to_numpy()
        out["std_error"] = base["std_error"].to_numpy()
        out["unconstrained_estimate"] = base["estimate"].to_numpy()
        if self.kind == "integer":
            out["nonnegative_estimate"] = np.concatenate(
                [self._values(self.nonnegative_joint, self._axes(t)).ravel() for t in self.workload])
        out.attrs["note"] = PUBLISHED_NOTE
        return out

    def error(self) -> pd.DataFrame:
        """How far every workload table moved, one row per table: ``cells``, ``rmse_vs_unconstrained`` and
        ``max_abs_vs_unconstrained`` (published against the GLS table), and for integers
        ``rmse_vs_nonnegative`` and ``max_abs_vs_nonnegative`` (the rounding's extra error)."""
        frame = self.to_frame()
        rows = []
        for cols in self.workload:
            part = frame[frame["table"].map(lambda t, c=tuple(cols): t == c)]
            row: dict[str, Any] = {"table": tuple(cols), "cells": len(part)}
            refs = [("unconstrained", part["unconstrained_estimate"])]
            if self.kind == "integer":
                refs.append(("nonnegative", part["nonnegative_estimate"]))
            for name, ref in refs:
                diff = part["estimate"].to_numpy(dtype=np.float64) - ref.to_numpy(dtype=np.float64)
                row[f"rmse_vs_{name}"] = float(np.sqrt(np.mean(diff * diff)))
                row[f"max_abs_vs_{name}"] = float(np.max(np.abs(diff)))
            rows.append(row)
        return pd.DataFrame(rows)

    def sample(self, n: Any = None, rng: Any = None) -> pd.DataFrame:
        """Synthetic person records whose tables agree with these tables (post-processing, free).

        The model is the maximum-entropy joint with the published tables (iterative proportional
        fitting over the union domain; :mod:`pandas_dp.algorithms.marginals.sample`), or the
        published joint itself when one table holds every column or the tables are integers.
        ``n`` records are drawn by systematic sampling: every joint cell gets the floor or the
        ceiling of its expected count ``n q``, so with ``n`` the published total a cell of the
        integer tables is matched exactly, and of non-negative tables to within the model's fit
        (IPF to ``1e-9`` of the total) plus the rounding of the cells it sums (each joint cell
        within 1 of ``n q``; a cell of a table on the first columns, a run of joint cells, too).

        Parameters
        ----------
        n : int, optional
            Number of records (default: the published total, rounded).
        rng : numpy.random.Generator, optional
            The one uniform draw of the systematic sample and the order of the records (default: a
            fresh OS-seeded generator).

        Returns
        -------
        DataFrame
            One row per record, one categorical column per workload column, labelled as the
            tables' cells are, in random order.
        """
        n, generator = sample_arguments(n, rng, self.total)
        counts = sample_joint(self._model(), int(n), generator)
        cells = np.repeat(np.arange(counts.size), counts.ravel())
        cells = cells[generator.permutation(cells.size)]
        codes = np.unravel_index(cells, counts.shape)
        return pd.DataFrame({dim.column: pd.Categorical.from_codes(code, categories=dim.index)
                             for dim, code in zip(self.domain.dims, codes)})

    def _model(self) -> np.ndarray:
        if self.kind == "integer":
            return np.asarray(self.joint, dtype=np.float64)
        axes = [tuple(sorted(self._axes(t))) for t in self.workload]
        targets = [table_of(np.asarray(self.joint), t) for t in axes]
        return fit_model(self.domain.shape, axes, targets, support=np.asarray(self.nonnegative_joint) > 0).joint

    def __repr__(self) -> str:
        err = self.error()
        return (f"PublishedTables(kind={self.kind!r}, total={self.total}, tables={len(self.workload)}, "
                f"columns={list(self.columns)})\n{err.to_string(index=False)}")

    def _repr_html_(self) -> str:
        return (f"<div><strong>PublishedTables</strong> — {html.escape(self.kind)}, total {self.total}, "
                f"{len(self.workload)} tables over {html.escape(str(list(self.columns)))}"
                f"{self.error().to_html(index=False)}</div>")


def _published_table(values: np.ndarray, grid: Grid, unconstrained: MarginalHistogram,
                     like: Any) -> PublishedHistogram:
    """A published table: ``values`` with the unconstrained table's variances, marked not exact."""
    params = {**like.params, "published_note": PUBLISHED_NOTE}
    out = _table(np.ascontiguousarray(values), grid, tuple(unconstrained.subset_variances), like,
                 float(unconstrained.variance.iloc[0]), cls=PublishedHistogram, params=params)
    assert isinstance(out, PublishedHistogram)
    return out


def publish(reference: Any, kind: str) -> PublishedTables:
    """The ``kind`` (``"nonnegative"`` or ``"integer"``) tables of a ``MarginalTables`` (post-processing):
    :func:`~pandas_dp.algorithms.marginals.publish.publish_tables` on its workload tables and their
    exact cell variances."""
    if kind not in ("nonnegative", "integer"):
        raise ParameterError(f"kind must be 'nonnegative' or 'integer'; got {safe_repr(kind)}.")
    detail = reference._detail()
    axes = [tuple(sorted(reference._attributes(t))) for t in reference.workload]
    done = publish_tables(reference.domain.shape, axes,
                          [np.asarray(detail.marginal(list(a)), dtype=np.float64) for a in axes],
                          [float(np.mean(detail.variance(list(a)))) for a in axes], integer=kind == "integer")
    return PublishedTables(workload=reference.workload, domain=reference.domain, kind=kind, joint=done.joint,
                           nonnegative_joint=done.nonnegative_joint, unconstrained=reference, method=reference.method,
                           params={**reference.params, "publish": {"kind": kind, **done.params}},
                           post_processing=(*reference.post_processing, *done.steps),
                           epsilon=reference.epsilon, loss=reference.loss, noise=reference.noise,
                           detail=reference.detail)
