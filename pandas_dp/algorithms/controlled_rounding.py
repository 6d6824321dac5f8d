"""Controlled rounding on trees: consistent non-negative integers within 1 of real estimates.

Input: a tree of regions (any fan-out, levels coarse to fine) whose every
region holds a table of non-negative real values that is *consistent* (in
every cell, a parent equals the sum of its children), optionally with public
integer totals on some levels.  Output: integers with

* every value the floor or the ceiling of its real value (so within 1),
* the same consistency in every cell (parent = sum of children),
* the public totals exactly,

computed top-down.  A public total over all cells of a root (level-0
region), e.g. the national population, is kept too: the root's cells are
rounded together, as the children of that total.  (Totals over cells of
regions below the roots are a two-way controlled rounding problem that a
top-down pass cannot always solve: rounding a parent's cells first can leave
its children no consistent choice; they are not supported.)

Bottom-up, every node gets the integer interval it may
take, ``[lo, hi]``: ``[floor x, ceil x]`` (one value where ``x`` is an integer,
to floating-point accuracy, or a public total), intersected with
``[sum_c lo_c, sum_c hi_c]`` over its children.  For a consistent tree the
interval is never empty (``sum_c floor x_c <= floor x <= ceil x <= sum_c ceil x_c``)
and a value chosen in it can always be split among the children, each taking
``lo_c`` or ``hi_c``.  Top-down, every root takes one end of its interval,
then every parent's integer ``P`` is distributed to its children: each child
gets ``lo_c``, and the ``m = P - sum_c lo_c`` children chosen from the
fractional parts ``f_c = x_c - lo_c`` get one more.  Vectorized over every
(parent, cell) group of a level at once.

*Huge values.* At counts of about ``10**12`` and more (estimates under noise of that scale) the
float intervals above can be empty through float error alone: the snapping tolerance passes a
unit and float sums drift from the integers. A tree whose only public totals are on its roots is
then rounded from its leaves in exact integer arithmetic (:func:`_exact_round`: cumulative
rounding of the leaves in tree order, each node the floor or the ceiling of its exact value, the
roots' totals kept), so the rounding of such a tree never fails; other inputs raise as before.

Two rules choose the ``m`` children:

* ``"largest_remainder"`` (default): the ``m`` largest fractional parts;
  roots round half up.  Ties go to siblings spread evenly over the group (van
  der Corput order of their positions: 0, s/2, s/4, 3s/4, ...), so that equal
  fractional parts, common in GLS output, do not all round up at the start of
  a group (which would bias sums of a group's first children, such as prefix
  ranges of a histogram).  Deterministic (the same release always gives the
  same table, and integer input is returned unchanged).  Within a sibling
  group it is the rounding closest to the real values for the group's
  integer total: choosing the largest ``f`` minimises both the sum of squared
  rounding errors ``sum f^2 + sum_chosen (1 - 2 f)`` and the largest one; for
  roughly uniform fractional parts it adds about ``1/12`` squared error per
  value, as rounding to the nearest integer does.
* ``"unbiased"``: systematic sampling of the fractional parts within each
  sibling group: with ``C_c`` the running sum of ``f`` in the group, child
  ``c`` is chosen when ``[C_{c-1}, C_c)`` holds a point of ``U + Z``.  Roots
  go up with probability ``f``; given the parent's outcome ``m``, ``U`` is
  drawn uniformly from the part of ``(0, 1]`` that selects exactly ``m``
  children.  As the parent went up with probability ``frac(sum f)``, ``U`` is
  uniform overall, so every node goes up with probability exactly its
  ``f``: ``E[rounded] = x`` at every node, at the price of about twice the
  added error (``E f (1 - f) = 1/6``).  Drawing ``U`` uses only released
  values, so the randomness is post-processing and needs no secure source.

The deterministic rule is the default: its added error is the smaller one,
it is reproducible and idempotent, and DP estimates already carry noise of
standard deviation at least about 1, whose spread makes the rounding's
bias negligible next to that noise; choose ``"unbiased"`` when many rounded
small values will be summed by users outside the tree.

References
----------
.. [1] L. H. Cox. "A Constructive Procedure for Unbiased Controlled Rounding",
   Journal of the American Statistical Association 82(398), 1987, 520-524.
.. [2] W. G. Madow, L. H. Madow. "On the Theory of Systematic Sampling, I",
   Annals of Mathematical Statistics 15(1), 1944, 1-24.
.. [3] J. M. Abowd et al. "The 2020 Census Disclosure Avoidance System TopDown
   Algorithm", Harvard Data Science Review, 2022 (integer, non-negative,
   consistent tables by geography that keep the invariants).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from pandas_dp.algorithms.geography.layout import as_layout
from pandas_dp.algorithms.geography.layout import RegionLayout
from pandas_dp.algorithms.tree.layout import TreeLayout
from pandas_dp.errors import ParameterError

__all__ = ["RoundingMethod", "controlled_round", "tree_parents", "integer_tree"]

RoundingMethod = Literal["largest_remainder", "unbiased"]

#: Values this close to an integer (absolute plus relative part) count as that integer.
_SNAP_ABS, _SNAP_REL = 1e-9, 1e-12
#: Largest accepted inconsistency ``|parent - sum children|``, relative to ``1 + |parent|``.
_CONSISTENCY_REL = 1e-6


def _rounding_rng(rng: Any) -> np.random.Generator:
    """The generator of the rounding draws: ``rng`` if it is one, else a fresh OS-seeded one."""
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng()


def _bounds(x: np.ndarray, total: np.ndarray | None, lvl: int) -> tuple[np.ndarray, np.ndarray]:
    near = np.rint(x)
    snap = np.abs(x - near) <= _SNAP_ABS + _SNAP_REL * np.abs(x)
    lo = np.where(snap, near, np.floor(x)).astype(np.int64)
    hi = np.where(snap, near, np.ceil(x)).astype(np.int64)
    if total is not None:
        if np.any(np.abs(total - x) >= 1.0 + _SNAP_ABS + _SNAP_REL * np.abs(x)):
            worst = float(np.max(np.abs(total - x)))
            raise ParameterError(
                f"The public totals of level {lvl} differ from the estimates by up to {worst:.3g}; "
                f"controlled rounding keeps every value within 1 of its estimate. Estimate with the "
                f"totals as exact values (variance 0) so that the estimates match them.")
        lo = hi = total
    return lo, hi


def _check_input(lay: RegionLayout, x: list[np.ndarray]) -> None:
    for lvl, arr in enumerate(x):
        if not np.all(np.isfinite(arr)):
            raise ParameterError(f"Controlled rounding needs finite values; level {lvl} has NaN or "
                                 f"infinite values. Pass the estimates of a completed release.")
        if np.any(arr < -(_SNAP_ABS + _SNAP_REL * np.abs(arr))):
            raise ParameterError(
                f"Controlled rounding needs non-negative values; level {lvl} has values down to "
                f"{float(arr.min()):.3g}. Project to a non-negative tree first "
                f"(nonnegative_regions or nonnegative_tree).")
        if lvl > 0:
            gap = np.abs(x[lvl - 1] - lay.aggregate(arr, lvl))
            if np.any(gap > _CONSISTENCY_REL * (1.0 + np.abs(x[lvl - 1]))):
                raise ParameterError(
                    f"Controlled rounding needs a consistent tree: level {lvl - 1} differs from the sum "
                    f"of its children by up to {float(gap.max()):.3g}. Pass GLS (or projected) estimates.")


def _van_der_corput(rank: np.ndarray) -> tuple[np.ndarray, int]:
    """Bits of every position reversed (its base-2 radical inverse, as an integer) and the bit count."""
    bits = max(int(rank.max()).bit_length(), 1) if rank.size else 1
    rev = np.zeros_like(rank)
    for bit in range(bits):   # a loop over the bits of a position, not over children
        rev |= ((rank >> bit) & 1) << (bits - 1 - bit)
    return rev, bits


def _spread_order(lay: RegionLayout, lvl: int) -> tuple[np.ndarray, np.ndarray]:
    """Children of ``lvl`` grouped by parent, each group in van der Corput order of positions.

    Position ``p`` of a child among its siblings is ranked by its base-2 radical
    inverse (bits of ``p`` reversed: 0, 1/2, 1/4, 3/4, ...), so children that tie
    on their fractional part take the ceilings spread evenly over the group
    (positions 0, s/2, s/4, 3s/4, ...) instead of all at its start.
    """
    order, starts = lay.group_order(lvl)
    parent_sorted = lay.parent_codes(lvl)[order]
    rev, bits = _van_der_corput(np.arange(order.size, dtype=np.int64) - starts[parent_sorted])
    spread = np.argsort((parent_sorted << bits) | rev, kind="stable")
    return order[spread], starts


def _largest_remainder(f: np.ndarray, eligible: np.ndarray, need: np.ndarray,
                       parent_sorted: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """0/1 choice (rows in group order): the ``need`` largest fractional parts of each group.

    One stable sort per cell column of the key ``group + (1 - f) / 2`` (ineligible
    children ``group + 3/4``): groups stay apart, and within a group fractional
    parts come in decreasing order, ties (to floating-point resolution of the
    key) in the given row order (the spread order of :func:`_spread_order`).
    """
    key = parent_sorted[:, None] + np.where(eligible, 0.5 * (1.0 - f), 0.75)
    idx = np.argsort(key, axis=0, kind="stable")
    rank = np.arange(key.shape[0]) - starts[parent_sorted]
    chosen_sorted = rank[:, None] < need[parent_sorted]
    chosen = np.empty_like(chosen_sorted)
    np.put_along_axis(chosen, idx, chosen_sorted, axis=0)
    return chosen.astype(np.int64)


def _systematic(f: np.ndarray, need: np.ndarray, parent_sorted: np.ndarray, starts: np.ndarray,
                rng: np.random.Generator) -> np.ndarray:
    """0/1 choice (rows in group order) by systematic sampling, exactly ``need`` per group when possible."""
    cum = np.cumsum(f, axis=0)
    base = np.zeros_like(need, dtype=np.float64)
    base[1:] = cum[starts[1:] - 1]
    c = cum - base[parent_sorted]
    c_prev = np.empty_like(c)
    c_prev[0] = 0.0
    c_prev[1:] = c[:-1]
    c_prev[starts] = 0.0
    ends = np.r_[starts[1:], f.shape[0]] - 1
    total = c[ends]
    lo_u = np.maximum(0.0, total - need)
    hi_u = np.minimum(1.0, total - need + 1.0)
    u = lo_u + (1.0 - rng.random(need.shape)) * (hi_u - lo_u)
    u = u[parent_sorted]
    chosen = np.floor(c - u) - np.floor(c_prev - u)
    return np.clip(chosen, 0, 1).astype(np.int64)


def _choose(f: np.ndarray, eligible: np.ndarray, need: np.ndarray, parent_sorted: np.ndarray,
            starts: np.ndarray, gen: np.random.Generator | None) -> np.ndarray:
    """Which children (rows in group order) take their upper value: ``need`` per group and column."""
    if gen is None:
        return _largest_remainder(f, eligible, need, parent_sorted, starts)
    chosen = _systematic(f, need, parent_sorted, starts, gen)
    short = np.add.reduceat(chosen, starts, axis=0) != need
    if short.any():   # floating-point edge cases only: fall back where the count is off
        fallback = _largest_remainder(f, eligible, need, parent_sorted, starts)
        chosen = np.where(short[parent_sorted], fallback, chosen)
    return chosen


def _round_roots(x0: np.ndarray, lo0: np.ndarray, hi0: np.ndarray, root_totals: np.ndarray | None,
                 gen: np.random.Generator | None) -> np.ndarray:
    """Level 0: each value alone (half up, or up with probability f), or each root's cells
    together so that they sum to its public total (the cells are the "children" of the total)."""
    frac = np.where(hi0 > lo0, np.clip(x0 - lo0, 0.0, 1.0), 0.0)
    if root_totals is None:
        up = gen.random(frac.shape) < frac if gen is not None else frac >= 0.5
        return lo0 + (up & (hi0 > lo0))
    need = (root_totals - lo0.sum(axis=1))[None, :]
    eligible = (hi0 > lo0).T
    if np.any(need < 0) or np.any(need > eligible.sum(axis=0)):
        raise ParameterError(
            "No rounding of the roots' cells sums to their public totals: the cells must already sum "
            "to them. Estimate with the totals (region_inference(..., root_totals=...)).")
    width = x0.shape[1]
    rev, _ = _van_der_corput(np.arange(width, dtype=np.int64))
    order = np.argsort(rev, kind="stable")
    one_group = np.zeros(width, dtype=np.int64)
    chosen = _choose(frac.T[order], eligible[order], need, one_group, np.zeros(1, dtype=np.int64), gen)
    out = np.empty_like(lo0)
    out[:, order] = lo0[:, order] + chosen.T
    return out


def controlled_round(values: Sequence[np.ndarray],
                     parents: RegionLayout | Sequence[np.ndarray | None], *,
                     totals: Sequence[np.ndarray | None] | None = None,
                     root_totals: np.ndarray | None = None,
                     method: RoundingMethod = "largest_remainder",
                     rng: np.random.Generator | None = None,
                     n_regions: Sequence[int] | None = None) -> tuple[np.ndarray, ...]:
    """Round a consistent non-negative tree of tables to consistent non-negative integers.

    Parameters
    ----------
    values : sequence of ndarray
        ``values[l]`` shaped ``(n_regions[l], *cells)``, coarse to fine, real
        and non-negative, every parent equal to the sum of its children in
        every cell (up to floating-point error).
    parents : RegionLayout or sequence of array or None
        The tree (``parents[l][i]``: parent in level ``l - 1`` of region ``i``).
    totals : sequence of ndarray or None, optional
        Public integer values to match, per level (``None``: none on that
        level), shaped like ``values[l]``; e.g. the public number of rows at the
        root of a hierarchical histogram.  Each must be within 1 of its value.
    root_totals : ndarray of int, optional
        Public total over all cells of every root (level-0 region), shaped
        ``(n_regions[0],)``, e.g. the national population: each root's cells
        are rounded together (by the same rule, the cells playing the part of
        children) to sum to it.  The real cells should already sum to it
        (``region_inference(..., root_totals=...)``).
    method : {"largest_remainder", "unbiased"}
        How the children of a parent share its integer (see the module notes).
    rng : numpy.random.Generator, optional
        Draws of the ``"unbiased"`` rule (``None``: a fresh OS-seeded
        generator); unused by ``"largest_remainder"``.
    n_regions : sequence of int, optional
        Sizes per level when ``parents`` are plain arrays.

    Returns
    -------
    tuple of ndarray
        ``int64`` tables shaped like ``values``: floor or ceiling of every
        value, consistent in every cell, equal to the totals where given.

    Raises
    ------
    ParameterError
        When a value is negative or not finite, the tree is not consistent, a
        total is 1 or more away from its value, or no rounding of a root's
        cells reaches its root total.

    Examples
    --------
    >>> parents = [None, np.array([0, 0, 0])]
    >>> x = [np.array([[2.0]]), np.array([[0.7], [0.6], [0.7]])]
    >>> [a.ravel().tolist() for a in controlled_round(x, parents)]
    [[2], [1, 0, 1]]
    """
    if method not in ("largest_remainder", "unbiased"):
        raise ParameterError(f"method must be 'largest_remainder' or 'unbiased'; got {method!r}.")
    lay = as_layout(parents, n_regions, values)
    if len(values) != lay.n_levels:
        raise ParameterError(f"values must give one table per level ({lay.n_levels}); got {len(values)}.")
    shapes = [np.shape(v) for v in values]
    cells = shapes[-1][1:]
    if any(sh != (n,) + cells for sh, n in zip(shapes, lay.n_regions)):
        raise ParameterError(f"values must be shaped (n_regions[l], *cells) with the same cells on every "
                             f"level; got shapes {shapes} for sizes {lay.n_regions}.")
    width = int(np.prod(cells)) if cells else 1
    x = [np.asarray(v, dtype=np.float64).reshape(n, width) for v, n in zip(values, lay.n_regions)]
    _check_input(lay, x)
    tot: list[np.ndarray | None] = [None] * lay.n_levels
    if totals is not None:
        if len(totals) != lay.n_levels:
            raise ParameterError(f"totals must give one entry (array or None) per level "
                                 f"({lay.n_levels}); got {len(totals)}.")
        for lvl, t in enumerate(totals):
            if t is None:
                continue
            arr = np.asarray(t)
            if arr.shape != shapes[lvl] or not np.issubdtype(arr.dtype, np.integer):
                raise ParameterError(f"totals[{lvl}] must be an integer array shaped {shapes[lvl]}; "
                                     f"got dtype {arr.dtype} and shape {arr.shape}.")
            tot[lvl] = arr.astype(np.int64).reshape(lay.n_regions[lvl], width)
    root = None
    if root_totals is not None:
        root = np.asarray(root_totals)
        if root.shape != (lay.n_regions[0],) or not np.issubdtype(root.dtype, np.integer):
            raise ParameterError(f"root_totals must be an integer array shaped ({lay.n_regions[0]},); "
                                 f"got dtype {root.dtype} and shape {root.shape}.")
        root = root.astype(np.int64)
    lo: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * lay.n_levels
    hi: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * lay.n_levels
    for lvl in range(lay.leaf_level, -1, -1):
        lo[lvl], hi[lvl] = _bounds(x[lvl], tot[lvl], lvl)
        if lvl < lay.leaf_level:
            lo[lvl] = np.maximum(lo[lvl], lay.aggregate(lo[lvl + 1], lvl + 1))
            hi[lvl] = np.minimum(hi[lvl], lay.aggregate(hi[lvl + 1], lvl + 1))
        if np.any(lo[lvl] > hi[lvl]):
            if root is None and all(t is None for t in tot[1:]):  # float error, not a public fact: exact pass
                gen = _rounding_rng(rng) if method == "unbiased" else None
                exact = _exact_round(lay, x, tot[0], gen)
                return tuple(o.reshape(sh) for o, sh in zip(exact, shapes))
            raise ParameterError(
                f"No consistent rounding exists at level {lvl}: the public totals disagree with the "
                f"totals of the levels below, or the tree is not consistent.")
    gen = _rounding_rng(rng) if method == "unbiased" else None
    out: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * lay.n_levels
    out[0] = _round_roots(x[0], lo[0], hi[0], root, gen)
    for lvl in range(1, lay.n_levels):
        order, starts = _spread_order(lay, lvl)
        parent_sorted = lay.parent_codes(lvl)[order]
        lo_s, hi_s, x_s = lo[lvl][order], hi[lvl][order], x[lvl][order]
        need = out[lvl - 1] - np.add.reduceat(lo_s, starts, axis=0)
        eligible = hi_s > lo_s
        f = np.where(eligible, np.clip(x_s - lo_s, 0.0, 1.0), 0.0)
        chosen = _choose(f, eligible, need, parent_sorted, starts, gen)
        result = np.empty_like(lo_s)
        result[order] = lo_s + chosen
        out[lvl] = result
    return tuple(o.reshape(sh) for o, sh in zip(out, shapes))


#: Fraction bits of the exact leaf values of :func:`_exact_round` (``floor(x * 2**64)``, exact for floats).
_FIXED_BITS = 64
_U_BITS = 53


def _exact_round(lay: RegionLayout, x: list[np.ndarray], root_values: np.ndarray | None,
                 gen: np.random.Generator | None) -> list[np.ndarray]:
    """Consistent non-negative integers of the tree from its leaves alone, in exact integer arithmetic.

    The float pass above rounds every level from its own float values; at counts of about ``10**12``
    and more (noise of that scale) the snapping tolerance passes a unit and float sums drift from the
    integers, so that pass can find no consistent choice. This one cannot fail: the leaves, ordered so
    that every node of the tree is a run of consecutive leaves (by root, then by each level's region),
    are read as exact integers ``X = floor(x * 2**64)``; within a root and cell, with ``C`` their running
    sums, ``S`` the last one and ``v = C T / S`` (``T`` the root's public integer, or ``v = C / 2**64``
    without one), a leaf gets ``floor(v_k + U) - floor(v_{k-1} + U)`` (``U = 1/2``, or uniform for
    ``"unbiased"``: systematic sampling). Every run of leaves, hence every node, is then the floor or the
    ceiling of its exact value, non-negative, and the root equals ``T``; the levels above the leaves are
    their sums. Python integers, a loop over the leaves: only for trees the float pass cannot round.
    """
    leaf = lay.leaf_level
    ancestors: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * lay.n_levels
    ancestors[leaf] = np.arange(lay.n_regions[leaf])
    for lvl in range(leaf, 0, -1):
        ancestors[lvl - 1] = lay.parent_codes(lvl)[ancestors[lvl]]
    order = np.lexsort(tuple(ancestors[lvl] for lvl in range(leaf, -1, -1)))  # root first, then each level
    edges = np.searchsorted(ancestors[0][order], np.arange(lay.n_regions[0] + 1))
    leaves = np.maximum(x[leaf][order], 0.0)
    rounded = np.zeros(leaves.shape, dtype=np.int64)
    for j in range(leaves.shape[1]):
        fixed = [int(v) for v in np.ldexp(leaves[:, j], _FIXED_BITS)]  # exact: a float times a power of 2
        for r in range(lay.n_regions[0]):
            a, b = int(edges[r]), int(edges[r + 1])
            if a == b:
                continue
            part = fixed[a:b]
            whole = sum(part)
            if root_values is None:
                num, den = 1, 1 << _FIXED_BITS
            else:
                num = int(root_values[r, j])
                if whole == 0:  # nothing to share out in proportion: share evenly
                    part, whole = [1] * (b - a), b - a
                den = whole
            u_num = int(gen.integers(0, 1 << _U_BITS)) if gen is not None else 1 << (_U_BITS - 1)
            scale = den << _U_BITS
            running, before = 0, (u_num * den) // scale
            for i, value in enumerate(part):
                running += value
                after = (running * num * (1 << _U_BITS) + u_num * den) // scale
                rounded[a + i, j] = after - before
                before = after
    out: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * lay.n_levels
    out[leaf] = np.empty_like(rounded)
    out[leaf][order] = rounded
    for lvl in range(leaf, 0, -1):
        out[lvl - 1] = lay.aggregate(out[lvl], lvl)
    return out


def tree_parents(layout: TreeLayout) -> list[np.ndarray | None]:
    """Parent codes of a hierarchical-histogram tree, coarse to fine (root first).

    Level ``k`` of ``layout`` (leaves first) becomes level ``h - k`` here; a
    node's code is its flat (C-order) index in ``layout.level_shapes[k]``, and
    its parent covers the children ``j // b`` along every axis.
    """
    out: list[np.ndarray | None] = [None]
    for k in range(layout.height - 1, -1, -1):
        shape = layout.level_shapes[k]
        grid = np.indices(shape).reshape(len(shape), -1) // layout.branching
        out.append(np.asarray(np.ravel_multi_index(tuple(grid), layout.level_shapes[k + 1])).astype(np.int64))
    return out


def integer_tree(layout: TreeLayout, estimates: Sequence[np.ndarray], *,
                 method: RoundingMethod = "largest_remainder", total: int | None = None,
                 rng: np.random.Generator | None = None) -> tuple[np.ndarray, ...]:
    """Consistent non-negative integers for a hierarchical histogram (levels leaves first).

    Parameters
    ----------
    layout : TreeLayout
        The tree of fan-out ``b`` (``b**d`` in d dims).
    estimates : sequence of ndarray
        Non-negative consistent estimates per level, leaves first, shaped
        ``layout.level_shapes[k]`` (e.g. ``nonnegative_tree`` output).
    method : {"largest_remainder", "unbiased"}
        See :func:`controlled_round`.
    total : int, optional
        Public number of rows to match at the root (must be within 1 of it).
    rng : numpy.random.Generator, optional
        For ``method="unbiased"``.

    Returns
    -------
    tuple of ndarray
        ``int64`` per level, leaves first: every node the floor or ceiling of
        its estimate, every node equal to the sum of its children.

    Examples
    --------
    >>> from pandas_dp.algorithms.tree.layout import tree_layout
    >>> lay = tree_layout(4, 2)
    >>> est = (np.array([0.4, 1.3, 2.6, 0.7]), np.array([1.7, 3.3]), np.array([5.0]))
    >>> [a.tolist() for a in integer_tree(lay, est)]
    [[1, 1, 2, 1], [2, 3], [5]]
    """
    parents = tree_parents(layout)
    values = [np.asarray(estimates[k], dtype=np.float64).reshape(-1, 1)
              for k in range(layout.n_levels - 1, -1, -1)]
    totals = None
    if total is not None:
        totals = [np.array([[int(total)]], dtype=np.int64)] + [None] * layout.height
    rounded = controlled_round(values, parents, totals=totals, method=method, rng=rng,
                               n_regions=layout.level_sizes[::-1])
    return tuple(rounded[layout.height - k].reshape(layout.level_shapes[k])
                 for k in range(layout.n_levels))
