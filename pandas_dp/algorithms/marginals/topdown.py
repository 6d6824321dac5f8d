"""Publishable table sets by geography: non-negative (or integer) joints, consistent across tables and regions.

Input: the GLS estimates of a table set for every region of a geography
(:mod:`~pandas_dp.algorithms.marginals.geography`): for every level ``l`` and
workload table ``t``, the region tables ``y_{r,t}`` and their cell variance
``v_{r,t}``. Output: one non-negative joint ``x_r`` over the union domain of
the workload's columns for every region ``r`` of every level, such that

* every table of a region is read from its joint (so the tables of a region
  agree exactly, as in the flat case, :mod:`~pandas_dp.algorithms.marginals.nonnegative`);
* every child region's joints sum to their parent's joint in every joint cell
  (so every table of a parent is the sum of its children's tables);
* public totals are matched (a region's joint sums to its total).

The scheme is top-down, as in the 2020 Census TopDown algorithm [1]: one
geographic level at a time, each level fitted to its own noisy (here: GLS)
tables under the constraint that it adds up to the level above, already fixed,
and to its own public totals.

1. **Roots.** Level 0 is fitted on its own: ``minimise sum_t w_{r,t}
   ||M_t x_r - y_{r,t}||^2`` over ``x_r >= 0``, with ``sum x_r = T_r`` when
   the geography has public totals (the totals of the finest level with
   totals, the *anchor*, summed up). With one root and no totals this is the
   flat projection of the national tables.
2. **Every level below**, the children ``c`` of every parent ``p`` (joint
   ``X_p``, fixed) solve jointly ``minimise sum_c sum_t w_{c,t}
   ||M_t x_c - y_{c,t}||^2`` over ``x_c >= 0`` with ``sum_c x_c = X_p`` cell by
   cell of the joint: the feasible set is a product of scaled simplices, one
   per (parent, joint cell). At and above the anchor every child also keeps
   its total (``sum x_c = T_c``, the anchor's totals summed to that level):
   the feasible set of a parent is then a transportation polytope, projected
   onto by :func:`~pandas_dp.algorithms.marginals.transport.transport_project`.

Fitting the anchor first and summing it upwards (the scheme before) made every
coarser level carry the clipping of all its anchor regions: with public state
totals the national tables of 51 states lost 2x (non-negative) to 6x (integer)
of their accuracy; top-down, every level keeps its own fit's.

Weights ``w_{r,t} = 1 / v_{r,t}``, the variance floored as in the flat case
(:func:`~pandas_dp.algorithms.marginals.publish.table_weights`, the floors taken
over the whole level). Every fit is accelerated projected gradient (FISTA with
gradient restarts, as the flat projection) over all regions of the level at
once, with a per-region step ``1 / L_r`` (``L_r = sum_t w_{r,t} N / n_t``)
and the projection in the matching diagonal metric: per (parent, cell) group a
weighted simplex projection by Michelot's iteration, vectorised over every
group (:func:`~pandas_dp.algorithms.geography.nonnegative.project_groups`); with
totals one sweep of the transportation polytope's dual block ascent per step,
its multipliers carried from step to step, and a full projection at the end.
No Python loop runs over regions or cells.

Exactness. Joints are put on the dyadic grid ``2**-k`` of the flat case (``k``
from the root total, so every sum of grid values is exact in float64): the
roots by rounding (to the public total in grid units, largest remainders
first); below them every (parent, cell) group's children are rounded to grid
units by largest remainders so that they sum to the parent's value *exactly*,
and, with totals, by :func:`~pandas_dp.algorithms.transport_rounding.transport_round`
so that they also sum to their totals exactly. Consistency across tables and
geography is then exact, not up to rounding.

Integers (:func:`topdown_integer`), top-down too. The roots' joints are rounded
as the flat ``integer=True`` rounds one joint (controlled rounding down the
prefix tables, the largest workload table's columns leading), each to its total
(public, or its rounded sum). At and above the anchor, level by level, the
children of every parent are rounded down the same prefix tables, each step a
two-way controlled rounding with fixed margins (children's rounded cells of the
previous prefix, parent's integer cells: :func:`transport_round`), so that they
sum to the parent's integers and keep their integer totals. Below the anchor,
every (parent, cell) group's non-negative children are scaled to the parent's
integer and controlled-rounded
(:func:`~pandas_dp.algorithms.controlled_rounding.controlled_round`). The tables
are then non-negative integers, consistent across tables and geography,
matching integer public totals, and every level is rounded from its own fit.

Everything is post-processing of released estimates, deterministic (IEEE
arithmetic and fixed-order numpy reductions).

References
----------
.. [1] J. M. Abowd et al. "The 2020 Census Disclosure Avoidance System TopDown
   Algorithm", Harvard Data Science Review, Special Issue 2, 2022.
.. [2] A. Beck, M. Teboulle. "A Fast Iterative Shrinkage-Thresholding Algorithm for Linear Inverse
   Problems", SIAM J. Imaging Sciences 2(1), 2009, 183-202.
.. [3] C. Michelot. "A finite algorithm for finding the projection of a point onto the canonical
   simplex of R^n", JOTA 50(1), 1986, 195-200.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pandas_dp.algorithms.controlled_rounding import controlled_round
from pandas_dp.algorithms.transport_rounding import transport_round
from pandas_dp.algorithms.marginals.nonnegative import check_joint, momentum_step
from pandas_dp.algorithms.marginals.transport import transport_project
from pandas_dp.algorithms.marginals.publish import MAX_WEIGHT_RATIO, WEIGHT_VARIANCE_FLOOR
from pandas_dp.algorithms.geography.layout import RegionLayout
from pandas_dp.algorithms.geography.nonnegative import project_groups
from pandas_dp.errors import DomainError

__all__ = ["MAX_GEOGRAPHY_JOINT", "TopDownFit", "check_geography_joint", "anchor_level", "project_level",
           "topdown_nonnegative", "topdown_integer", "region_tables", "simplex_groups", "grid_round", "totals_upwards"]

#: Most block-ascent sweeps of the last projection onto a level's transportation polytope (public totals).
POLISH_SWEEPS = 1_000

#: Largest number of joint cells over every region of every level (each fit holds a few float64 arrays of
#: that many values: 128 MB each at the cap).
MAX_GEOGRAPHY_JOINT = 1 << 24


def check_geography_joint(shape: Sequence[int], regions: int, what: str) -> int:
    """Joint cells of every region, refused above the flat cap (per region) or :data:`MAX_GEOGRAPHY_JOINT`."""
    cells = check_joint(shape, what)
    if cells * regions > MAX_GEOGRAPHY_JOINT:
        raise DomainError(f"{what} by geography fits one joint of every workload column for each of the {regions:,} "
                          f"regions: {cells * regions:,} cells here; the limit is {MAX_GEOGRAPHY_JOINT:,} (2**24). "
                          f"Use coarser bins or fewer categories or regions, or publish the unconstrained tables.")
    return cells


def region_tables(joints: np.ndarray, axes: Sequence[int]) -> np.ndarray:
    """The table on ``axes`` (increasing) of every region's joint (``joints`` shaped ``(regions, *shape)``)."""
    drop = tuple(k + 1 for k in range(joints.ndim - 1) if k not in axes)
    return np.add.reduce(joints, axis=drop) if drop else joints.copy()


def _spread(tables: np.ndarray, axes: Sequence[int], ndim: int) -> np.ndarray:
    shape = [tables.shape[0]] + [1] * ndim
    for k, a in enumerate(axes):
        shape[a + 1] = tables.shape[k + 1]
    return tables.reshape(shape)


def level_weights(variances: np.ndarray) -> np.ndarray:
    """``1 / v`` per (region, table), ``v`` floored at :data:`WEIGHT_VARIANCE_FLOOR` and at the level's
    largest over :data:`MAX_WEIGHT_RATIO` (the flat rule, over every region of the level)."""
    v = np.asarray(variances, dtype=np.float64)
    floor = max(WEIGHT_VARIANCE_FLOOR, float(np.max(v)) / MAX_WEIGHT_RATIO)
    return 1.0 / np.maximum(v, floor)


def anchor_level(totals: Mapping[int, np.ndarray]) -> int:
    """The anchor: the finest level with public totals (at and above it every region keeps a total), else
    the root (0)."""
    return max(totals) if totals else 0


def totals_upwards(values: np.ndarray, anchor: int, layout: RegionLayout) -> dict[int, np.ndarray]:
    """The anchor's totals and their sums on every level above it, by level."""
    out = {anchor: values}
    for lvl in range(anchor, 0, -1):
        out[lvl - 1] = layout.aggregate(out[lvl], lvl)
    return out


def project_level(shape: Sequence[int], tables: Sequence[Sequence[int]], targets: Sequence[np.ndarray],
                  weights: np.ndarray, *, parents: np.ndarray | None = None, parent_joints: np.ndarray | None = None,
                  totals: np.ndarray | None = None, tol: float = 1e-8,
                  max_iter: int = 20_000) -> tuple[np.ndarray, int, float]:
    """The weighted least-squares non-negative joints of every region of one level (module notes).

    Parameters
    ----------
    shape : sequence of int
        Sizes of the union domain.
    tables : sequence of sequence of int
        Each table's axes (increasing).
    targets : sequence of ndarray
        Each table of every region, ``(regions, *table shape)``.
    weights : ndarray
        ``(regions, tables)``, positive.
    parents, parent_joints : ndarray, optional
        Parent code of every region and the parents' joints ``(parents, *shape)``: the children of a
        parent must sum to its joint in every cell.
    totals : ndarray, optional
        ``(regions,)``: every region's joint sums to its total (without ``parents``).

    Returns
    -------
    (joints, iterations, step)
        The joints ``(regions, *shape)`` (feasible to floating-point accuracy), the gradient steps taken
        and the last gradient-mapping step (largest change of a cell).
    """
    if parents is not None and np.any(np.diff(np.asarray(parents, dtype=np.int64)) < 0):
        # children of one parent next to each other (a stable order), then back to the regions' order
        order = np.argsort(np.asarray(parents, dtype=np.int64), kind="stable")
        fitted, it, last = project_level(shape, tables, [np.asarray(y)[order] for y in targets],
                                         np.asarray(weights)[order], parents=np.asarray(parents)[order],
                                         parent_joints=parent_joints,
                                         totals=None if totals is None else np.asarray(totals)[order],
                                         tol=tol, max_iter=max_iter)
        back = np.empty_like(fitted)
        back[order] = fitted
        return back, it, last
    shape = tuple(int(s) for s in shape)
    ndim = len(shape)
    axes = [tuple(int(a) for a in t) for t in tables]
    n = int(weights.shape[0])
    cells = math.prod(shape)
    ys = [np.asarray(y, dtype=np.float64).reshape((n, *(shape[a] for a in t))) for y, t in zip(targets, axes)]
    w = np.asarray(weights, dtype=np.float64) / float(np.max(weights))
    lipschitz = np.zeros(n)
    for k, t in enumerate(axes):
        lipschitz = lipschitz + w[:, k] * (cells / math.prod(shape[a] for a in t))
    v = np.repeat(1.0 / lipschitz, cells)          # the metric of the projection: the per-region step
    if parents is not None:
        assert parent_joints is not None
        codes = np.asarray(parents, dtype=np.int64)
        px = np.asarray(parent_joints, dtype=np.float64).reshape(-1, cells)
        first = np.concatenate([[True], codes[1:] != codes[:-1]]) if n else np.zeros(0, dtype=bool)
        starts = np.flatnonzero(first)
        block = np.cumsum(first) - 1                      # each child's sibling block
        block_total = np.maximum(px[codes[starts]], 0.0)  # (blocks, cells)
        row_v = (1.0 / lipschitz)[:, None]
        # start: each parent's cells split by the children's estimated totals (non-negative shares)
        own = np.maximum(ys[0].reshape(n, -1).sum(axis=1), 0.0)
        siblings = np.bincount(codes, weights=own, minlength=px.shape[0])
        count = np.bincount(codes, minlength=px.shape[0]).astype(np.float64)
        share = np.where(siblings[codes] > 0, own / np.where(siblings[codes] > 0, siblings[codes], 1.0),
                         1.0 / count[codes])
        x = (px[codes] * share[:, None]).reshape((n, *shape))
        scale = max(1.0, float(np.max(px.sum(axis=1)))) if px.size else 1.0
    else:
        region_total = np.maximum(ys[0].reshape(n, -1).sum(axis=1), 0.0) if totals is None \
            else np.maximum(np.asarray(totals, dtype=np.float64), 0.0)
        group = np.repeat(np.arange(n), cells)
        group_total = region_total
        x = np.broadcast_to((region_total / cells).reshape((n,) + (1,) * ndim), (n, *shape)).copy()
        scale = max(1.0, float(np.max(region_total))) if n else 1.0

    warm: list[np.ndarray | None] = [None, None]

    def project(point: np.ndarray) -> np.ndarray:
        if parents is None and totals is None:
            return np.maximum(point, 0.0)
        if parents is None:
            return simplex_groups(point.ravel(), v, group, group_total).reshape(point.shape)
        if totals is not None:
            # one sweep of the block ascent from the last multipliers: the gradient steps and the
            # multipliers converge together; the fit is polished to feasibility at the end
            done = transport_project(point.reshape(n, cells), 1.0 / lipschitz, codes, px, totals, *warm,
                                     tol=0.0, max_sweeps=1)
            warm[:] = [done.a, done.b]
            return done.x.reshape(point.shape)
        # Michelot on every (parent, cell) group at once, siblings contiguous: sums are reduceat's
        t = point.reshape(n, cells)
        active = block_total[block] > 0
        while True:
            sums = np.add.reduceat(np.where(active, t, 0.0), starts, axis=0)
            weight = np.add.reduceat(np.where(active, row_v, 0.0), starts, axis=0)
            lam = np.divide(sums - block_total, weight, out=np.zeros(sums.shape), where=weight > 0)
            x_new = t - lam[block] * row_v
            still = active & (x_new > 0)
            if np.array_equal(still, active):
                return np.where(active, x_new, 0.0).reshape(point.shape)
            active = still

    def gradient(point: np.ndarray) -> np.ndarray:
        g = np.zeros(point.shape)
        for k, (t, y) in enumerate(zip(axes, ys)):
            wk = w[:, k].reshape((n,) + (1,) * len(t))
            g = g + _spread(wk * (region_tables(point, t) - y), t, ndim)
        return g

    step_size = (1.0 / lipschitz).reshape((n,) + (1,) * ndim)
    y_point = x
    momentum = 1.0
    step = math.inf
    it = 0
    while it < max_iter and n:
        it += 1
        new = project(y_point - gradient(y_point) * step_size)
        step = float(np.max(np.abs(new - y_point)))
        if step <= tol * scale:
            x = new
            break
        y_point, momentum = momentum_step(x, new, y_point, momentum)
        x = new
    if parents is not None and totals is not None and n:
        x = transport_project(x.reshape(n, cells), 1.0 / lipschitz, codes, px, totals, *warm,
                              tol=tol * scale * 1e-3, max_sweeps=POLISH_SWEEPS).x.reshape(x.shape)
    return x, it, step


def simplex_groups(t: np.ndarray, v: np.ndarray, group: np.ndarray, total: np.ndarray) -> np.ndarray:
    """:func:`~pandas_dp.algorithms.geography.nonnegative.project_groups` (every group of ``t`` onto
    ``{x >= 0, sum x = total[g]}`` in the metric ``1 / v``), its later rounds on the unsettled groups only.

    The first round shifts every group onto its total (``x = t - lambda v``); a group with no value
    at or below 0 is then projected exactly, and only the others (few, near a fit's end) go on to
    Michelot's iteration, on their own elements.
    """
    n_groups = total.size
    sums = np.bincount(group, weights=t, minlength=n_groups)
    weights = np.bincount(group, weights=v, minlength=n_groups)
    lam = np.divide(sums - total, weights, out=np.zeros(n_groups), where=weights > 0)
    x = t - lam[group] * v
    live = total > 0
    x[~live[group]] = 0.0
    unsettled = np.bincount(group, weights=(x <= 0) & live[group], minlength=n_groups) > 0
    if unsettled.any():
        idx = np.flatnonzero(unsettled[group])
        codes = np.flatnonzero(unsettled)
        remap = np.zeros(n_groups, dtype=np.int64)
        remap[codes] = np.arange(codes.size)
        x[idx] = project_groups(t[idx], v[idx], remap[group[idx]], total[codes])
    return x


def grid_round(values: np.ndarray, group: np.ndarray, units: np.ndarray) -> np.ndarray:
    """Non-negative ``values`` (1-D, in grid units) rounded to integers that sum to ``units[g]`` in every group.

    Every value gets its floor, and the ``units[g] - sum floor`` largest fractional parts of the group one
    more (ties in position order); were that count outside ``[0, group size]`` (a fit off by more than
    a grid unit per value), the rest goes to the group's largest value. Returns float64 grid units.
    """
    q = np.maximum(np.asarray(values, dtype=np.float64), 0.0)
    low = np.floor(q)
    frac = q - low
    low_i = low.astype(np.int64)
    n_groups = units.size
    order = np.lexsort((-frac, group))
    g_sorted = group[order]
    starts = np.searchsorted(g_sorted, np.arange(n_groups))
    size = np.bincount(group, minlength=n_groups)
    have = np.zeros(n_groups, dtype=np.int64)
    np.add.at(have, group, low_i)
    need = np.clip(units - have, 0, size)
    rank = np.arange(order.size) - starts[g_sorted]
    up = np.zeros(q.size, dtype=np.int64)
    up[order] = (rank < need[g_sorted]).astype(np.int64)
    out = low_i + up
    rest = units - (have + need)
    if np.any(rest != 0):
        largest = np.full(n_groups, -1, dtype=np.int64)
        by_value = np.lexsort((-out, group))
        first = by_value[starts[size > 0]]
        largest[size > 0] = first
        fix = np.flatnonzero((rest != 0) & (size > 0))
        out[largest[fix]] = np.maximum(out[largest[fix]] + rest[fix], 0)
    return out.astype(np.float64)


@dataclass(frozen=True)
class TopDownFit:
    """Non-negative joints of every region of every level.

    Attributes
    ----------
    joints : tuple of ndarray
        ``joints[l]`` shaped ``(regions, *shape)``, float64 on the grid ``grid``.
    grid : float
        The dyadic step every value is a multiple of.
    anchor : int
        The finest level with public totals (0 without any): at and above it every region keeps a total.
    iterations, steps : tuple
        Per level, the solver's gradient steps and its last step.
    """

    joints: tuple[np.ndarray, ...]
    grid: float
    anchor: int
    iterations: tuple[int, ...]
    steps: tuple[float, ...]


def topdown_nonnegative(shape: Sequence[int], tables: Sequence[Sequence[int]],
                        estimates: Sequence[Sequence[np.ndarray]], variances: Sequence[np.ndarray],
                        layout: RegionLayout, totals: Mapping[int, np.ndarray] | None = None, *,
                        tol: float = 1e-8, max_iter: int = 20_000) -> TopDownFit:
    """Non-negative joints for every region, consistent across tables and geography (module notes).

    Parameters
    ----------
    shape, tables :
        The union domain's sizes and each table's axes (increasing).
    estimates : sequence of sequence of ndarray
        ``estimates[l][t]``: table ``t`` of every region of level ``l``, ``(regions, *table shape)``.
    variances : sequence of ndarray
        ``variances[l]``: ``(regions, tables)``, the cell variance of every table of every region.
    layout : RegionLayout
        The region tree, coarse to fine.
    totals : mapping of int to ndarray, optional
        Public totals by level (consistent across levels).
    """
    shape = tuple(int(s) for s in shape)
    cells = math.prod(shape)
    totals = dict(totals or {})
    levels = layout.n_levels
    anchor = anchor_level(totals)
    joints: list[np.ndarray] = [np.empty(0)] * levels
    iterations = [0] * levels
    steps = [0.0] * levels
    level_totals = (totals_upwards(np.asarray(totals[anchor], dtype=np.float64), anchor, layout)
                    if anchor in totals else {})
    fitted, iterations[0], steps[0] = project_level(
        shape, tables, estimates[0], level_weights(variances[0]), totals=level_totals.get(0), tol=tol,
        max_iter=max_iter)
    n_root = layout.n_regions[0]
    if 0 in level_totals:
        base = math.fsum(level_totals[0].tolist())
    else:
        base = math.fsum(fitted.reshape(n_root, -1).sum(axis=1).tolist())
    k = 49 - math.frexp(max(base, 1.0))[1]
    grid = math.ldexp(1.0, -k)
    if 0 in level_totals:
        units = np.round(level_totals[0] / grid).astype(np.int64)
        region = np.repeat(np.arange(n_root), cells)
        joints[0] = (grid_round(fitted.ravel() / grid, region, units) * grid).reshape(fitted.shape)
    else:
        joints[0] = np.maximum(np.round(fitted / grid) * grid, 0.0)
    for lvl in range(1, levels):
        codes = layout.parent_codes(lvl)
        parent = joints[lvl - 1]
        fitted, iterations[lvl], steps[lvl] = project_level(
            shape, tables, estimates[lvl], level_weights(variances[lvl]), parents=codes, parent_joints=parent,
            totals=level_totals.get(lvl), tol=tol, max_iter=max_iter)
        units = np.round(parent.reshape(-1, cells) / grid).astype(np.int64)
        if lvl in level_totals:
            joints[lvl] = (transport_round(fitted.reshape(-1, cells) / grid, codes,
                                           np.round(level_totals[lvl] / grid).astype(np.int64), units)
                           * grid).reshape(fitted.shape)
        else:
            group = (codes[:, None] * cells + np.arange(cells)[None, :]).ravel()
            joints[lvl] = (grid_round(fitted.ravel() / grid, group, units.ravel()) * grid).reshape(fitted.shape)
    return TopDownFit(joints=tuple(joints), grid=grid, anchor=anchor, iterations=tuple(iterations),
                      steps=tuple(steps))


def _prefix_axes(joints: np.ndarray, first: Sequence[int]) -> tuple[list[int], np.ndarray]:
    """The joint axes with ``first`` leading, and ``joints`` (leading region axis) moved to that order."""
    order = [int(a) for a in first] + [a for a in range(joints.ndim - 1) if a not in first]
    return order, np.transpose(joints, [0, *(a + 1 for a in order)])


def _prefix_back(moved: np.ndarray, order: Sequence[int]) -> np.ndarray:
    """``moved`` (axes in ``order`` after the region axis) back to the joint's own axis order."""
    return np.ascontiguousarray(np.transpose(moved, [0, *(int(i) + 1 for i in np.argsort(order))]))


def _prefix_table(moved: np.ndarray, k: int) -> np.ndarray:
    """The table of the first ``k`` moved axes of every region (``moved`` from :func:`_prefix_axes`)."""
    return np.add.reduce(moved, axis=tuple(range(k + 1, moved.ndim))) if k < moved.ndim - 1 else moved


def _prefix_round(joints: np.ndarray, totals: np.ndarray, first: Sequence[int]) -> np.ndarray:
    """Every region's joint scaled to its integer total and rounded down its prefix tables (the axes
    ``first`` leading), all regions at once: the flat ``integer_joint`` with a leading region axis."""
    n = joints.shape[0]
    ndim = joints.ndim - 1
    order, moved = _prefix_axes(joints, first)
    mass = moved.reshape(n, -1).sum(axis=1)
    factor = np.divide(totals.astype(np.float64), mass, out=np.zeros(n), where=mass > 0)
    scaled = np.maximum(moved * factor.reshape((n,) + (1,) * ndim), 0.0)
    sizes = moved.shape[1:]
    values = [totals.astype(np.float64).reshape(n, 1)]
    parents: list[np.ndarray | None] = [None]
    for k in range(1, ndim + 1):
        values.append(_prefix_table(scaled, k).reshape(-1, 1))
        parents.append(np.arange(values[k].shape[0]) // sizes[k - 1])
    ints: list[np.ndarray | None] = [totals.astype(np.int64).reshape(n, 1)] + [None] * ndim
    rounded = controlled_round(values, parents, totals=ints, n_regions=[v.shape[0] for v in values])[-1]
    return _prefix_back(rounded.reshape((n, *sizes)), order)


def _transport_prefix(children: np.ndarray, totals: np.ndarray, parents: np.ndarray, codes: np.ndarray,
                      first: Sequence[int]) -> np.ndarray:
    """The children's joints rounded to integers that sum to their parents' integer joints in every cell and
    to their own integer ``totals``, down their prefix tables (the axes ``first`` leading): at each step every
    (parent, prefix cell) is a two-way table, children by the next axis, whose row sums (the children's
    rounded prefix cells) and column sums (the parent's) are fixed (:func:`transport_round`)."""
    n, ndim = children.shape[0], children.ndim - 1
    order, moved = _prefix_axes(children, first)
    _, above = _prefix_axes(parents, first)
    sizes = moved.shape[1:]
    rows = np.asarray(totals, dtype=np.int64).reshape(n, 1)
    for k in range(1, ndim + 1):
        m, width = math.prod(sizes[:k - 1]), sizes[k - 1]
        block = (codes[:, None] * m + np.arange(m)[None, :]).ravel()
        rows = transport_round(_prefix_table(moved, k).reshape(n * m, width), block, rows.ravel(),
                               _prefix_table(above, k).reshape(-1, width)).reshape(n, m * width)
    return _prefix_back(rows.reshape((n, *sizes)), order)


def topdown_integer(fit: TopDownFit, shape: Sequence[int], tables: Sequence[Sequence[int]], layout: RegionLayout,
                    totals: Mapping[int, np.ndarray] | None = None) -> tuple[np.ndarray, ...]:
    """Non-negative integer joints of every region, consistent across tables and geography (module notes).

    ``totals`` at the anchor must be integers (the caller checks). Returns int64 joints per level.
    """
    shape = tuple(int(s) for s in shape)
    cells = math.prod(shape)
    totals = dict(totals or {})
    anchor = fit.anchor
    axes = [tuple(int(a) for a in t) for t in tables]
    largest = max(axes, key=lambda a: (math.prod(shape[k] for k in a), -axes.index(a)))
    joint = fit.joints[anchor]
    n_anchor = joint.shape[0]
    if anchor in totals:
        whole = np.rint(np.asarray(totals[anchor], dtype=np.float64)).astype(np.int64)
    else:
        whole = np.rint(joint.reshape(n_anchor, -1).sum(axis=1)).astype(np.int64)
    # every level at or above the anchor has whole totals: sums of the anchor's
    level_totals = totals_upwards(whole, anchor, layout)
    out: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * layout.n_levels
    out[0] = _prefix_round(fit.joints[0], level_totals[0], largest)
    for lvl in range(1, anchor + 1):
        out[lvl] = _transport_prefix(fit.joints[lvl], level_totals[lvl], out[lvl - 1], layout.parent_codes(lvl),
                                     largest)
    for lvl in range(anchor + 1, layout.n_levels):
        codes = layout.parent_codes(lvl)
        parent_real = fit.joints[lvl - 1].reshape(-1, cells)
        parent_int = out[lvl - 1].reshape(-1, cells)
        factor = np.divide(parent_int.astype(np.float64), parent_real, out=np.zeros(parent_real.shape),
                           where=parent_real > 0)
        scaled = fit.joints[lvl].reshape(-1, cells) * factor[codes]
        # a parent's integer where its real value is 0 (a unit the two-way rounding had to place there):
        # shared evenly by its children
        share = np.where(parent_real > 0, 0.0, parent_int) / layout.n_children(lvl)[:, None]
        scaled = scaled + share[codes]
        rounded = controlled_round([parent_int.astype(np.float64), scaled], [None, codes],
                                   totals=[parent_int, None], n_regions=[parent_int.shape[0], scaled.shape[0]])
        out[lvl] = rounded[1].reshape(fit.joints[lvl].shape)
    return tuple(out)
