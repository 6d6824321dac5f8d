"""A workload of marginals for every region of a public geography: measured per level, exact GLS across it.

Levels ``0 .. L`` (coarse to fine) partition the rows; level ``l`` measures
the workload in every one of its regions with the level's ResidualPlanner plan
(:mod:`~pandas_dp.algorithms.marginals.plan`; the same plan, hence the same
noise, in every region of the level: the regions hold disjoint rows and compose
in parallel, the levels sequentially). Nothing here reads rows: the inputs are
exact counts of every maximal marginal with a leading region axis (an engine's
one pass over the finest regions; coarser levels are sums of their children).

The estimate
------------
Within one region the noisy marginals decompose into residual components
(:mod:`~pandas_dp.algorithms.marginals.reconstruct`): the component of residual
``A'`` is known with covariance ``V_{A',l} kron_{i in A'} P_i``, where
``V_{A',l} = 1 / tau_{A',l}`` depends on the level's plan only, and components
of different residuals, regions and levels are uncorrelated (orthogonal
projections of independent isotropic noise). The per-region precision-weighted
mean of a component is a sufficient statistic for it (the other combinations
of the measurements carry only noise), and the unknown components obey the
geography's constraints coefficient by coefficient (a parent's marginal is the
sum of its children's, so is each of its components). The GLS estimate of the
whole table set therefore separates: for every residual ``A'``, every
coordinate of its component is one Hay et al. tree problem across the regions
with noise variance ``V_{A',l}`` on level ``l``, solved exactly by
:func:`~pandas_dp.algorithms.geography.inference.region_inference` (all
coordinates at once: its weights do not depend on the cell). The tree GLS
maps centred arrays to centred arrays, so the estimated components stay in
their residual's range, and each has the exact variance ``g_{A',l,r}``
(:mod:`~pandas_dp.algorithms.geography.variance`) times ``kron P_i``: a cell of
the table on ``W`` at region ``r`` of level ``l`` has variance
``sum_{A' subset W} g_{A',l,r} a(A', W)``.

Public totals. A public total per region of level ``l`` fixes the ``()``
component (the region's total) there: that component's tree problem gets
exact values on level ``l`` (variance 0), which makes every ancestor exact
(sums of public values) and conditions every descendant on its ancestor's
total (the variances ``g`` are the conditioned ones). The other components are
unchanged: their ranges are orthogonal to the total.

Consistency is exact by construction: within a region the tables agree (one
set of components), and across the geography every component, hence every
table, of a parent is the sum of its children's.

References
----------
.. [1] Y. Xiao, G. He, D. Zhang, D. Kifer. "An Optimal and Scalable Matrix
   Mechanism for Noisy Marginals under Convex Loss Functions", NeurIPS 2023.
.. [2] M. Hay, V. Rastogi, G. Miklau, D. Suciu. "Boosting the Accuracy of
   Differentially Private Histograms Through Consistency", PVLDB 3(1), 2010.
.. [3] J. M. Abowd et al. "The 2020 Census Disclosure Avoidance System TopDown
   Algorithm", Harvard Data Science Review, 2022.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pandas_dp.algorithms.marginals.measure import through_strategies
from pandas_dp.algorithms.marginals.ordered import AxisSplit, cell_variances
from pandas_dp.algorithms.marginals.plan import ResidualPlan, cell_coefficient
from pandas_dp.algorithms.marginals.reconstruct import MarginalEstimates
from pandas_dp.algorithms.marginals.workload import Marginal, Workload
from pandas_dp.algorithms.geography.inference import region_inference
from pandas_dp.algorithms.geography.layout import RegionLayout
from pandas_dp.privacy.loss import Noise

__all__ = ["RegionMarginalEstimates", "region_sum_down", "measure_levels", "level_components",
           "geography_gls", "region_workload"]


def region_workload(workload: Workload, n_leaves: int) -> Workload:
    """The workload with the finest region as attribute 0 of every table (the others shifted by one).

    Counting its maximal marginals is one ``bincount`` per maximal marginal of ``workload`` over
    (leaf region, cells): every region's tables in one pass.
    """
    return Workload(sizes=(n_leaves, *workload.sizes),
                    tables=tuple((0, *(i + 1 for i in t)) for t in workload.tables))


def region_sum_down(tables: Mapping[Marginal, np.ndarray], workload: Workload) -> dict[Marginal, np.ndarray]:
    """Every closure marginal of ``workload`` for every region, from the maximal ones (leading region axis).

    ``tables`` maps (at least) every maximal marginal to counts shaped ``(regions, *shape)``;
    smaller marginals are sums over a containing one's axes (cells, not rows; exact int64).
    """
    closure = set(workload.closure)
    available = dict(tables)
    for a in sorted(closure, key=len, reverse=True):
        if a in available:
            continue
        ups = (tuple(sorted(a + (i,))) for i in workload.attributes if i not in a)
        source = next(b for b in ups if b in closure and b in available)
        axis = next(k for k, i in enumerate(source) if i not in a)
        available[a] = available[source].sum(axis=axis + 1, dtype=np.int64)
    return available


def measure_levels(counts: Sequence[Mapping[Marginal, np.ndarray] | None], plans: Sequence[ResidualPlan | None], *,
                   rng: Any = None) -> list[dict[Marginal, np.ndarray] | None]:
    """Noise every marginal each level's plan measures, in every region of the level.

    Marginals (of every region) that get the same noise are noised in one draw: levels in
    order, then groups in order of their first marginal, cells region-major in closure order.
    """
    out: list[dict[Marginal, np.ndarray] | None] = []
    for tables, plan in zip(counts, plans):
        if plan is None or tables is None:
            out.append(None)
            continue
        groups: dict[Noise, list[Marginal]] = {}
        for a, noise in zip(plan.residuals, plan.noises):
            if noise is not None:
                groups.setdefault(noise, []).append(a)
        noisy: dict[Marginal, np.ndarray] = {}
        values = {a: through_strategies(tables[a], a, plan.strategies, offset=1)
                  for members in groups.values() for a in members}
        for noise, members in groups.items():
            flat = np.concatenate([values[a].ravel() for a in members])
            drawn = noise.add(flat, rng)
            ends = np.cumsum([values[a].size for a in members])
            for a, piece in zip(members, np.split(drawn, ends[:-1])):
                noisy[a] = piece.reshape(values[a].shape)
        out.append(noisy)
    return out


def level_components(noisy: Mapping[Marginal, np.ndarray], plan: ResidualPlan,
                     n_regions: int) -> tuple[list[np.ndarray], np.ndarray]:
    """Every region's GLS residual components from its noisy marginals (one level, all regions at once).

    Returns the components (closure order, each ``(regions, *shape)``, centred along every cell
    axis) and ``V_{A'} = 1 / tau_{A'}`` of every residual (the same in every region).
    """
    work = plan.workload
    strategies = plan.strategies
    # with ordered attributes: each measurement back to its cells, b_i for n_i, the split along pi_i
    # (:mod:`~pandas_dp.algorithms.marginals.ordered`); the same as ResidualPlanner's for the cells
    sizes = [float(n) if not strategies or strategies[i] is None else strategies[i].b
             for i, n in enumerate(work.sizes)]
    index = work.index
    acc = [np.zeros((n_regions, *work.shape(a))) for a in plan.residuals]
    taus = np.zeros(len(plan.residuals))
    for a, v in zip(plan.residuals, plan.effective_variances()):
        if a not in noisy:
            continue
        y = np.asarray(noisy[a], dtype=np.float64)
        for axis, i in enumerate(a):
            if strategies and strategies[i] is not None:
                y = strategies[i].back(y, axis + 1)
        for k in range(len(a) + 1):
            for sub in itertools.combinations(a, k):
                drop = tuple(axis + 1 for axis, i in enumerate(a) if i not in sub)
                weight = 1.0 / (v * math.prod(sizes[a[axis - 1]] for axis in drop))
                j = index[sub]
                acc[j] += weight * (y.sum(axis=drop) if drop else y)
                taus[j] += weight
    comps = []
    for a, total, tau in zip(plan.residuals, acc, taus):
        c = total / tau if tau > 0 else total
        for axis, i in enumerate(a):
            if strategies and strategies[i] is not None:
                c = strategies[i].split(c, axis + 1)
            else:
                c = c - c.mean(axis=axis + 1, keepdims=True)
        comps.append(c)
    with np.errstate(divide="ignore"):
        return comps, np.where(taus > 0, 1.0 / np.where(taus > 0, taus, 1.0), np.inf)


@dataclass(frozen=True)
class RegionMarginalEstimates:
    """Consistent estimates of every closure marginal of every region of every level.

    Attributes
    ----------
    plans : tuple of ResidualPlan or None
        Each level's plan (``None``: the level was not measured).
    components : tuple of tuple of ndarray
        ``components[l][k]``: the GLS estimate of residual ``k`` (closure order) in every
        region of level ``l``, shaped ``(regions, *shape)``.
    residual_variances : tuple of ndarray
        ``residual_variances[l]``: shaped ``(closure, regions)``, the exact variance ``g`` of
        every residual in every region (times ``kron P_i``).
    """

    plans: tuple[ResidualPlan | None, ...]
    components: tuple[tuple[np.ndarray, ...], ...]
    residual_variances: tuple[np.ndarray, ...]

    @property
    def workload(self) -> Workload:
        """The workload (the same on every level)."""
        return next(p for p in self.plans if p is not None).workload

    @property
    def finest_plan(self) -> ResidualPlan:
        """The finest level's plan (always measured)."""
        plan = self.plans[-1]
        assert plan is not None, "the finest level is always measured"
        return plan

    def region(self, level: int, region: int) -> MarginalEstimates:
        """The estimates of one region, as a flat release's (its ``plan`` gives the workload only)."""
        return MarginalEstimates(plan=self.finest_plan,
                                 components=tuple(c[region] for c in self.components[level]),
                                 residual_variances=self.residual_variances[level][:, region])

    def marginal(self, level: int, attrs: Sequence[int]) -> np.ndarray:
        """The marginal on ``attrs`` (axes in the order given) of every region of ``level``: ``(regions, *shape)``."""
        order = tuple(attrs)
        key = tuple(sorted(order))
        work = self.workload
        work.check(key)
        sizes = work.sizes
        n = self.components[level][0].shape[0]
        out = np.zeros((n, *(sizes[i] for i in key)))
        strategies = self.finest_plan.strategies
        for a in (s for k in range(len(key) + 1) for s in itertools.combinations(key, k)):
            comp = self.components[level][work.index[a]].reshape((n, *(sizes[i] if i in a else 1 for i in key)))
            if strategies:   # the total spreads along pi_i over every attribute the residual does not keep
                for axis, i in enumerate(key):
                    if i not in a:
                        view = [1] * (len(key) + 1)
                        view[axis + 1] = sizes[i]
                        spread = np.full(sizes[i], 1.0 / sizes[i]) if strategies[i] is None else strategies[i].pi
                        comp = comp * spread.reshape(view)
                out += comp
                continue
            out += comp / math.prod(sizes[i] for i in key if i not in a)
        if order != key:
            out = out.transpose([0, *(key.index(i) + 1 for i in order)])
        return out

    def mean_variance(self, level: int, attrs: Sequence[int]) -> np.ndarray:
        """The mean cell variance of the marginal on ``attrs`` in every region of ``level``: ``(regions,)``."""
        v = self.variance(level, attrs)
        return v if v.ndim == 1 else v.reshape(v.shape[0], -1).mean(axis=1)

    def variance(self, level: int, attrs: Sequence[int]) -> np.ndarray:
        """Exact variance of every cell of the marginal on ``attrs`` in every region of ``level``: ``(regions,)``
        (the same in every cell), or with an ordered attribute ``(regions, *shape)`` (axes as given)."""
        key = tuple(sorted(attrs))
        work = self.workload
        work.check(key)
        strategies = self.finest_plan.strategies
        if strategies and any(strategies[i] is not None for i in key):
            splits = [AxisSplit.of(work.sizes[i], strategies[i]) for i in attrs]
            order = tuple(attrs)
            per_region = [self.residual_variances[level][work.index[tuple(sorted(
                order[b] for b in range(len(order)) if m >> b & 1))]] for m in range(1 << len(order))]
            return cell_variances(per_region, splits)   # every region at once: (regions, *shape)
        terms = [self.residual_variances[level][work.index[a]] * float(cell_coefficient(work.sizes, a, key))
                 for k in range(len(key) + 1) for a in itertools.combinations(key, k)]
        return np.sum(terms, axis=0)


def geography_gls(noisy: Sequence[Mapping[Marginal, np.ndarray] | None], plans: Sequence[ResidualPlan | None],
                  layout: RegionLayout, *,
                  public_totals: Mapping[int, np.ndarray] | None = None) -> RegionMarginalEstimates:
    """Exact GLS of every residual component across the geography (module docstring).

    Parameters
    ----------
    noisy : sequence of mapping or None
        Per level, the noisy measured marginals of every region (``(regions, *shape)``), or None
        for a level that is not measured.
    plans : sequence of ResidualPlan or None
        Per level, its plan (None: not measured). The finest level is measured.
    layout : RegionLayout
        The region tree, coarse to fine.
    public_totals : mapping of int to ndarray, optional
        ``{level: totals}`` (one per region of the level): public facts every table of that
        level matches exactly (consistent with each other across levels; the caller checks).

    Examples
    --------
    >>> from pandas_dp.algorithms.marginals.workload import make_workload
    >>> from pandas_dp.algorithms.marginals.plan import plan_residuals
    >>> from pandas_dp.algorithms.geography.layout import region_layout
    >>> from pandas_dp.privacy.loss import zcdp
    >>> work = make_workload([2], [(0,)])
    >>> plans = [plan_residuals(work, loss=zcdp(1)), plan_residuals(work, loss=zcdp(1))]
    >>> lay = region_layout([None, np.array([0, 0])], [1, 2])
    >>> leaf = {(0,): np.array([[3, 1], [2, 2]])}
    >>> counts = [region_sum_down({(0,): leaf[(0,)].sum(axis=0, keepdims=True)}, work), region_sum_down(leaf, work)]
    >>> est = geography_gls(counts, plans, lay, public_totals={1: np.array([4.0, 4.0])})
    >>> est.marginal(1, (0,)).round(6).tolist(), est.marginal(0, (0,)).round(6).tolist()
    ([[3.0, 1.0], [2.0, 2.0]], [[5.0, 3.0]])
    """
    first = next(p for p in plans if p is not None)
    work = first.workload
    levels = layout.n_levels
    per_level = [None if p is None or y is None else level_components(y, p, layout.n_regions[lvl])
                 for lvl, (y, p) in enumerate(zip(noisy, plans))]
    totals = dict(public_totals or {})
    components: list[list[np.ndarray]] = [[] for _ in range(levels)]
    variances: list[list[np.ndarray]] = [[] for _ in range(levels)]
    for k, a in enumerate(work.closure):
        tables: list[np.ndarray | None] = []
        sigma2: list[float] = []
        for lvl in range(levels):
            got = per_level[lvl]
            if a == () and lvl in totals:
                tables.append(np.asarray(totals[lvl], dtype=np.float64))
                sigma2.append(0.0)
            elif got is None or not np.isfinite(got[1][k]):
                tables.append(None)
                sigma2.append(np.inf)
            else:
                tables.append(got[0][k])
                sigma2.append(float(got[1][k]))
        inference = region_inference(tables, layout, sigma2)
        for lvl in range(levels):
            components[lvl].append(inference.estimates[lvl])
            variances[lvl].append(np.asarray(inference.variances[lvl], dtype=np.float64))
    return RegionMarginalEstimates(plans=tuple(plans), components=tuple(tuple(c) for c in components),
                                   residual_variances=tuple(np.stack(v) for v in variances))
