"""Publishable table sets by geography: non-negative (or integer) tables consistent across tables and regions.

The result of ``df.dp.marginals(workload, ..., by=[...], nonnegative=True | integer=True)``, or of
``tables.nonnegative()`` / ``tables.integer()`` on a table set by geography: post-processing only (no
private data is read, no budget spent). Every region of every level has one joint over the union of
the workload's columns (:mod:`pandas_dp.algorithms.marginals.topdown`): its tables are read from it (so
they agree exactly), every child region's joint sums to its parent's in every cell (so every table of
a parent is the sum of its children's), and public totals are matched exactly.

A :class:`GeographyPublishedTables` is a
:class:`~pandas_dp.results.geography_marginals.GeographyMarginalTables` (so a ``MarginalTables``):
``table(columns, level=, region=)`` is a
:class:`~pandas_dp.results.marginals.PublishedHistogram` whose ``variance`` is the unconstrained GLS
table's (not exact for the published values: ``variance_exact`` false, a note starting with
"biased"); :meth:`~GeographyPublishedTables.error` reports how far each level's tables moved, and
for integers the rounding's extra error per level.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp._utils.public import safe_repr
from pandas_dp.algorithms.marginals.sample import sample_joint
from pandas_dp.algorithms.marginals.topdown import TopDownFit, region_tables, topdown_integer, topdown_nonnegative
from pandas_dp.algorithms.regions.layout import region_layout
from pandas_dp.domain.grid import Grid
from pandas_dp.errors import ParameterError
from pandas_dp.results.frozen import stored_fields
from pandas_dp.results.geography_marginals import GeographyMarginalTables
from pandas_dp.results.marginals import PUBLISHED_NOTE, PublishedHistogram, _published_table, sample_arguments

__all__ = ["GeographyPublishedTables", "publish_by_region", "public_totals_of", "check_integer_totals"]


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
        variances = [np.stack([est.variance(lvl, a) for a in axes], axis=1) for lvl in levels]
        fit = topdown_nonnegative(shape, axes, estimates, variances, layout, facts)
    joints: tuple[np.ndarray, ...] = fit.joints
    steps: tuple[str, ...] = (f"top-down non-negative weighted least squares over one joint per region (level "
                              f"{reference.levels[fit.anchor]!r} first; children sum to parents in every cell)",)
    params: dict[str, Any] = {"kind": kind, "method": "top-down weighted least squares onto non-negative joints",
                              "anchor": reference.levels[fit.anchor], "grid": fit.grid,
                              "solver_iterations": list(fit.iterations), "solver_step": list(fit.steps)}
    if kind == "integer":
        joints = topdown_integer(fit, shape, axes, layout, facts)
        steps += ("controlled rounding of every level's joints to integers (children sum to parents' integers)",)
        params["rounding"] = "controlled rounding: prefix tables at the anchor level, then per parent and cell"
    return GeographyPublishedTables(
        workload=reference.workload, domain=reference.domain, epsilon=reference.epsilon, method=reference.method,
        params={**reference.params, "publish": params},
        post_processing=(*reference.post_processing, *steps), loss=reference.loss, noise=reference.noise,
        detail=reference.detail, levels=reference.levels, regions=reference.regions, parents=reference.parents,
        geography=reference.geography, kind=kind, joints=joints, nonnegative_joints=fit.joints,
        unconstrained=reference)
