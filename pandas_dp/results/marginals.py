"""``MarginalTables``: a consistent set of cross-tabulations released at once (ResidualPlanner).

The result of ``df.dp.marginals(workload, ...)``. Every table of the workload,
and any sub-table of one, is read from one estimate of the residual components
(:mod:`pandas_dp.algorithms.marginals.reconstruct`), so the tables agree
exactly: a table summed over some of its columns is the smaller table, and all
share one total. Errors are exact: a cell of the table on columns ``W`` has
variance ``sum_{A subset W} V_A a(A, W)``, the same for every cell of it, and
cells of one table are correlated through the shared components, so
:class:`MarginalHistogram` computes a range's or a box's variance from the
components (never by summing cell variances).
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
from pandas_dp.algorithms.marginals.reconstruct import MarginalEstimates
from pandas_dp.domain.grid import Grid
from pandas_dp.errors import ParameterError
from pandas_dp.results._base import FrozenRelease, MeasureView
from pandas_dp.results._checks import check_axes, find_label
from pandas_dp.results._format import guarantee_text, html_params
from pandas_dp.results.frozen import FrozenDict, Released, freeze, lock_in_place, stored_fields
from pandas_dp.results.histogram import Histogram, as_series, constant_cells

__all__ = ["MarginalTables", "MarginalHistogram", "MarginalDetail"]


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

    def _boxes_exact(self) -> bool:
        return True

    def _range_stats(self, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        est = np.concatenate([[0.0], np.cumsum(self.counts.to_numpy(dtype=np.float64))])
        n = self.domain.size
        lengths = (np.asarray(j) - np.asarray(i)).astype(np.float64)
        v0, v1 = (float(v) for v in self.subset_variances[:2])
        return est[j] - est[i], v0 * (lengths / n) ** 2 + v1 * (lengths - lengths ** 2 / n)

    def _box_variance(self, box: tuple[slice, ...]) -> float:
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
        return _table(np.ascontiguousarray(est), grid, sub, self, cls=None if self.variance_exact else type(self))


def _table(values: np.ndarray, grid: Grid, subset_variances: tuple[float, ...], like: Any,
           cell: float | None = None, cls: type[MarginalHistogram] | None = None,
           params: Mapping[str, Any] | None = None) -> MarginalHistogram:
    """One table as a :class:`MarginalHistogram` (or ``cls``, a subclass whose variances are the unconstrained
    table's: ``variance_exact`` false, ``params`` saying why)."""
    if cell is None:
        cell = _box_variance(subset_variances, [1] * grid.ndim, list(grid.shape))
    kind = MarginalHistogram if cls is None else cls
    return kind(
        counts=as_series(values, grid, "estimate"), variance=as_series(constant_cells(cell, grid), grid, "variance"),
        epsilon=like.epsilon, method=like.method,
        params={**(like.params if params is None else params), "table": list(grid.columns)},
        domain=grid, post_processing=like.post_processing, variance_exact=cls is None, loss=like.loss,
        noise=like.noise, single_draw=False, subset_variances=subset_variances)


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
        return _table(np.ascontiguousarray(values), grid, subset, self, detail.variance(attrs))

    def tables(self) -> list[MarginalHistogram]:
        """Every workload table, in the workload's order."""
        return [self.table(t) for t in self.workload]

    def nonnegative(self) -> Any:
        """These tables made non-negative and kept consistent (post-processing, free): a
        :class:`~pandas_dp.results.published.PublishedTables` (the weighted least-squares tables of a
        non-negative joint; see :mod:`pandas_dp.algorithms.marginals.nonnegative`)."""
        from pandas_dp.results.published import publish  # local: published.py imports this module
        return publish(self, "nonnegative")

    def integer(self) -> Any:
        """These tables as consistent non-negative integers (post-processing, free): a
        :class:`~pandas_dp.results.published.PublishedTables` with the rounding's extra error in its
        ``error()``."""
        from pandas_dp.results.published import publish  # local: published.py imports this module
        return publish(self, "integer")

    def sample(self, n: Any = None, rng: Any = None) -> pd.DataFrame:
        """Synthetic person records whose tables agree with :meth:`nonnegative` (post-processing, free); see
        :meth:`~pandas_dp.results.published.PublishedTables.sample`."""
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
        noise (kind, scale, cell variance), its residual's variance and its share of the ``"sum"`` loss."""
        plan = self._detail().plan
        names = list(self.columns)
        shares = plan.loss_shares()
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
                         "share_of_total_variance": float(shares[k])})
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
                         "total": float(tbl.counts.sum()), "std_error per cell": float(np.sqrt(tbl.variance.iloc[0]))})
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        return (f"MarginalTables(method={self.method!r}, {self._guarantee(html=False)}, "
                f"tables={len(self.workload)}, columns={list(self.columns)})\n{self._summary().to_string(index=False)}")

    def _repr_html_(self) -> str:
        return (f"<div><strong>MarginalTables</strong> — method <code>{html.escape(self.method)}</code>, "
                f"{self._guarantee()}, {len(self.workload)} tables over {html.escape(str(list(self.columns)))}"
                f"<br><small>{html_params(self.params)}</small>{self._summary().to_html(index=False)}</div>")
