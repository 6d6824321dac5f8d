"""``PublishedTables``: a table set made publishable: non-negative (or non-negative integer) and consistent.

Built from a :class:`~pandas_dp.results.marginals.MarginalTables` by post-processing only
(``tables.nonnegative()``, ``tables.integer()``, or ``df.dp.marginals(..., nonnegative=True)`` /
``integer=True``): no private data is read and no budget is spent. Every table is read from one
non-negative joint over the union of the workload's columns
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
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp._utils.public import safe_repr
from pandas_dp.algorithms.marginals.nonnegative import table_of
from pandas_dp.algorithms.marginals.publish import publish_tables
from pandas_dp.algorithms.marginals.sample import fit_model, sample_joint
from pandas_dp.domain.grid import Grid
from pandas_dp.errors import ParameterError
from pandas_dp.results._checks import find_label
from pandas_dp.results.frozen import stored_fields
from pandas_dp.results.marginals import MarginalHistogram, MarginalTables, _table

__all__ = ["PublishedTables", "PublishedHistogram", "PUBLISHED_NOTE", "publish", "sample_arguments"]


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
        names = list(self.columns)
        wanted = list(columns) if isinstance(columns, (tuple, list)) else [columns]
        wanted = [str.__str__(c) if isinstance(c, str) else c for c in wanted]
        found = [find_label(c, names) for c in wanted]
        if not wanted or any(k is None for k in found) or len(set(found)) != len(found):
            raise ParameterError(f"table() takes one or more distinct columns of this release {names}, e.g. "
                                 f"table({tuple(self.workload[0])!r}). Got {safe_repr(columns)}.")
        axes = [int(k) for k in found if k is not None]
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
                          [float(detail.variance(list(a))) for a in axes], integer=kind == "integer")
    return PublishedTables(workload=reference.workload, domain=reference.domain, kind=kind, joint=done.joint,
                           nonnegative_joint=done.nonnegative_joint, unconstrained=reference, method=reference.method,
                           params={**reference.params, "publish": {"kind": kind, **done.params}},
                           post_processing=(*reference.post_processing, *done.steps),
                           epsilon=reference.epsilon, loss=reference.loss, noise=reference.noise,
                           detail=reference.detail)
