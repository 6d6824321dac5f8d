"""Projection onto the joints of sibling regions that sum to their parent's joint *and* to their own totals.

Input: a point ``t`` (children by joint cells), one positive metric weight ``v_c`` per child, each
child's parent (children of a parent next to each other), the parents' joints ``Z`` (one value per
parent and cell) and every child's total ``T_c``. Output: the point of the transportation polytope

    x >= 0,   sum_c x[c, j] = Z[p, j] (every parent p, cell j),   sum_j x[c, j] = T_c (every child c),

closest to ``t`` in the metric ``sum_c ||x_c - t_c||^2 / v_c``. This is the feasible set of a level of a
geography fitted top-down when its regions have public totals (the 2020 Census TopDown algorithm [1]
keeps such invariants the same way: a level's fit adds up to the level above and to its own totals).
It is non-empty whenever every parent's joint sums to its children's totals.

By the KKT conditions the projection is ``x[c, j] = max(0, t[c, j] - v_c (a_c + b_{p, j}))`` for
multipliers ``a`` (one per child, its total) and ``b`` (one per parent and cell). The concave dual is
maximised by exact block coordinate ascent [2]: given ``b`` every child's ``a_c`` is a simplex
projection of its row, given ``a`` every (parent, cell) group's ``b`` is a weighted simplex projection
of its siblings' values (Michelot's finite iteration [3], all groups at once, for both). Each step
leaves one family of sums exact; the sweeps stop when the other is within ``tol`` too. Warm-started
from the previous multipliers (as a projected-gradient solver calls it with points that move little),
a few sweeps do.

References
----------
.. [1] J. M. Abowd et al. "The 2020 Census Disclosure Avoidance System TopDown Algorithm", Harvard
   Data Science Review, Special Issue 2, 2022.
.. [2] P. Tseng. "Dual Coordinate Ascent Methods for Non-strictly Convex Minimization", Mathematical
   Programming 59, 1993, 231-247.
.. [3] C. Michelot. "A finite algorithm for finding the projection of a point onto the canonical
   simplex of R^n", JOTA 50(1), 1986, 195-200.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["TransportProjection", "transport_project"]


#: Newton steps of :func:`_threshold` before it starts again from every element (Michelot's iteration).
_NEWTON_STEPS = 30


@dataclass(frozen=True)
class _Groups:
    """How the elements of a ``(children, cells)`` array form groups: ``sums`` and ``largest`` reduce an
    array of that shape to one value per group, ``spread`` broadcasts one value per group back."""

    sums: Callable[[np.ndarray], np.ndarray]
    largest: Callable[[np.ndarray], np.ndarray]
    spread: Callable[[np.ndarray], np.ndarray]


def _threshold(z: np.ndarray, scale: np.ndarray, total: np.ndarray, lam: np.ndarray, groups: _Groups) -> np.ndarray:
    """``lam[g]`` with ``sum_{i in g} max(0, z_i - lam[g] scale_i) = total[g]`` for every group, by Newton's
    method on that convex, decreasing, piecewise-linear function of ``lam``, from ``lam`` (a previous
    solution): with ``A`` the elements above the current value, ``lam = (sum_A z - total) / sum_A scale``,
    until ``A`` no longer changes (``lam`` is then exact). Left of the root every step goes right and ``A``
    shrinks; from the right the first step lands left of it; so the iteration ends (from every element
    active it is Michelot's finite iteration [3]). A group with nothing above the start starts from every
    element; a group whose total is 0 gets ``max z / scale``, the smallest multiplier zeroing it."""
    live = groups.spread(total > 0)
    active = live & (z - groups.spread(lam) * scale > 0)
    active = active | (live & groups.spread(groups.sums(active.astype(np.float64)) == 0))
    steps = 0
    while True:
        count = groups.sums(np.where(active, scale, 0.0))
        lam = np.divide(groups.sums(np.where(active, z, 0.0)) - total, count, out=np.zeros(total.shape),
                        where=count > 0)
        if not np.all(count > 0):
            # nothing left above (a total below rounding): the smallest multiplier zeroing the group
            lam = np.where(count > 0, lam, groups.largest(z / scale))
        still = live & (z - groups.spread(lam) * scale > 0)
        if steps > _NEWTON_STEPS:
            still &= active            # Michelot's iteration: elements only leave
        if np.array_equal(still, active):
            break
        steps += 1
        # rounding can make Newton's steps circle between active sets: then Michelot's from every element
        active = live if steps == _NEWTON_STEPS + 1 else still
    empty = total <= 0
    if np.any(empty):
        lam = np.where(empty, groups.largest(z / scale), lam)
    return lam


@dataclass(frozen=True)
class TransportProjection:
    """The projection and the state to warm-start the next one.

    Attributes
    ----------
    x : ndarray
        ``(children, cells)``: every parent's cells exact, the children's totals within the tolerance.
    a : ndarray
        ``(children,)``: the multipliers of the children's totals.
    b : ndarray
        ``(parents, cells)``: the multipliers of the parents' cells.
    sweeps : int
        Block-ascent sweeps taken.
    """

    x: np.ndarray
    a: np.ndarray
    b: np.ndarray
    sweeps: int


def transport_project(t: np.ndarray, v: np.ndarray, codes: np.ndarray, parent_joints: np.ndarray,
                      totals: np.ndarray, a: np.ndarray | None = None, b: np.ndarray | None = None, *,
                      tol: float,
                      max_sweeps: int = 1_000) -> TransportProjection:
    """The projection of ``t`` onto the transportation polytope of the module notes.

    Parameters
    ----------
    t : ndarray
        ``(children, cells)``.
    v : ndarray
        ``(children,)`` positive metric weights.
    codes : ndarray
        ``(children,)``: every child's parent.
    parent_joints : ndarray
        ``(parents, cells)``, non-negative, each parent's row summing to its children's totals.
    totals : ndarray
        ``(children,)``, non-negative.
    a, b : ndarray, optional
        The multipliers to start from (a previous projection's); zeros by default.
    tol : float
        Stop when every child's total is within ``tol``.
    max_sweeps : int
        At most this many sweeps (the last point is returned, its cells exact).
    """
    n, cells = t.shape
    n_parents = parent_joints.shape[0]
    v = np.asarray(v, dtype=np.float64)
    codes = np.asarray(codes, dtype=np.int64)
    sizes = np.bincount(codes, minlength=n_parents)
    if n and (np.any(np.diff(codes) < 0) or np.any(sizes == 0)):
        raise ValueError("transport_project: children must be grouped by parent, every parent with a child")
    starts = np.cumsum(sizes) - sizes
    vc = np.broadcast_to(v[:, None], t.shape)
    rows = _Groups(sums=lambda a: a.sum(axis=1), largest=lambda a: a.max(axis=1),
                   spread=lambda g: np.broadcast_to(g[:, None], t.shape))
    columns = _Groups(sums=lambda a: np.add.reduceat(a, starts, axis=0),
                      largest=lambda a: np.maximum.reduceat(a, starts, axis=0), spread=lambda g: g[codes])
    column_totals = np.maximum(np.asarray(parent_joints, dtype=np.float64), 0.0)
    row_totals = np.maximum(np.asarray(totals, dtype=np.float64), 0.0)
    alpha = np.zeros(n) if a is None else np.asarray(a, dtype=np.float64)
    beta = np.zeros((n_parents, cells)) if b is None else np.asarray(b, dtype=np.float64)
    x = t
    sweeps = 0
    while sweeps < max_sweeps:
        sweeps += 1
        alpha = _threshold(t - vc * beta[codes], vc, row_totals, alpha, rows)
        shifted = t - vc * alpha[:, None]
        beta = _threshold(shifted, vc, column_totals, beta, columns)
        x = np.maximum(shifted - vc * beta[codes], 0.0)
        if float(np.max(np.abs(x.sum(axis=1) - row_totals), initial=0.0)) <= tol:
            break
    return TransportProjection(x=x, a=alpha, b=beta, sweeps=sweeps)
