"""Constrained inference on a tree of noisy counts: the exact GLS estimate.

Every noised level ``k`` carries independent noise of variance ``sigma2[k]``
(``inf`` for a level that is not noised, e.g. the root of Qardaji's ``H_b``).
The generalized-least-squares (GLS) estimate of all node counts, subject to
"every node equals the sum of its children", is computed in two passes:

* bottom-up (weighted averaging): ``S_v = sum_c z_c``, ``VS_v = sum_c V_c``,
  ``V_v = 1 / (1/sigma2 + 1/VS_v)``, ``z_v = V_v (n_v / sigma2 + S_v / VS_v)``;
* top-down (mean consistency): ``est_c = z_c + (V_c / VS_v) (est_v - S_v)``:
  the parent's residual goes to the children in proportion to their
  bottom-up variances.

The GLS error of node ``c`` is ``e_c = a_c e_v + xi_c`` with ``a_c = V_c / VS_v``
and ``Cov(xi_c, xi_c') = V_c delta_cc' - V_c V_c' / VS_v``, independent of
``e_v`` (the errors form a Gaussian Markov tree).  Hence the exact variance of
every node estimate, top-down: ``P_c = a_c^2 P_v + V_c - V_c^2 / VS_v``.  For
complete trees with equal budgets these passes reduce to Hay et al.'s and
Qardaji et al.'s formulas (weights ``(b^i - b^(i-1)) / (b^i - 1)``, residual
divided equally).

References
----------
.. [1] M. Hay, V. Rastogi, G. Miklau, D. Suciu. "Boosting the Accuracy of
   Differentially Private Histograms Through Consistency", PVLDB 3(1), 2010,
   Section 4.1 and Appendix B.
.. [2] W. Qardaji, W. Yang, N. Li. "Understanding Hierarchical Methods for
   Differentially Private Histograms", PVLDB 6(14), 2013, Section 3.3.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pandas_dp.algorithms.tree.layout import TreeLayout

__all__ = ["TreeInference", "TreeVariances", "tree_variances", "constrained_inference",
           "nonnegative_tree"]


@dataclass(frozen=True)
class TreeInference:
    """Result of the two GLS passes, per level (index 0 = leaves).

    Attributes
    ----------
    z, vdown : tuple of ndarray
        Bottom-up estimates and their variances (``V^down`` in Qardaji).
    child_sum, child_var : tuple of ndarray or None
        ``S_v`` and ``VS_v`` for levels ``>= 1`` (``None`` at level 0).
    estimates : tuple of ndarray
        The GLS estimate of every node (consistent: parents equal child sums).
    variances : tuple of ndarray
        Exact error variance of every node estimate.
    """

    z: tuple[np.ndarray, ...]
    vdown: tuple[np.ndarray, ...]
    child_sum: tuple[np.ndarray | None, ...]
    child_var: tuple[np.ndarray | None, ...]
    estimates: tuple[np.ndarray, ...]
    variances: tuple[np.ndarray, ...]


@dataclass(frozen=True)
class TreeVariances:
    """Variance structure of the GLS estimator (independent of the noisy values).

    Attributes
    ----------
    vdown : tuple of ndarray
        Bottom-up variances ``V^down`` per level (index 0 = leaves).
    child_var : tuple of ndarray or None
        ``VS_v = sum_c V^down_c`` for levels ``>= 1`` (``None`` at level 0).
    variances : tuple of ndarray
        Exact error variance ``P_v`` of every node's GLS estimate.
    """

    vdown: tuple[np.ndarray, ...]
    child_var: tuple[np.ndarray | None, ...]
    variances: tuple[np.ndarray, ...]


def _known(level: np.ndarray | None) -> np.ndarray:
    """A level's array that exists by construction (``child_var[k]`` for ``k >= 1``)."""
    assert level is not None
    return level


def tree_variances(layout: TreeLayout, level_variances: Sequence[float] | np.ndarray) -> TreeVariances:
    """Bottom-up and posterior variances of every node for given level noise variances.

    Parameters
    ----------
    layout : TreeLayout
        The tree.
    level_variances : sequence of float
        Noise variance ``sigma2[k]`` of each level (``inf`` when not noised).

    Returns
    -------
    TreeVariances
        ``V_v = 1 / (1/sigma2 + 1/VS_v)`` bottom-up, then
        ``P_c = a_c^2 P_v + V_c (1 - a_c)`` with ``a_c = V_c / VS_v`` top-down.

    Notes
    -----
    Every leaf has the same ``V = sigma2[0]``: ``vdown[0]`` is a read-only
    broadcast view of that one value, and on a 1-D tree the leaf variances
    are computed once per parent (they depend on the leaf only through its
    parent) and spread to the leaves, as a broadcast view again when every
    parent gives the same value (a complete tree). Any level whose nodes all
    have the same value (every level of a complete tree) is stored the same
    way. The values are those of the formulas evaluated leaf by leaf, bit for bit.
    """
    sigma2 = [float(v) for v in level_variances]
    lean = layout.n_leaves >= _COMPACT_MIN   # small trees: the plain formulas cost less than the bookkeeping
    vdown = [constant_level(sigma2[0], layout.level_shapes[0]) if lean else np.full(layout.level_shapes[0], sigma2[0])]
    expand = _expander(layout, lean)
    child_var: list[np.ndarray | None] = [None]
    for k in range(1, layout.n_levels):
        vs = _compact(layout.aggregate(vdown[k - 1], k - 1))
        child_var.append(vs)
        vdown.append(vs if not np.isfinite(sigma2[k]) else _compact(1.0 / (1.0 / sigma2[k] + 1.0 / vs)))
    top = layout.n_levels - 1
    var: list[np.ndarray] = [np.empty(0)] * layout.n_levels
    var[top] = vdown[top]
    for k in range(top - 1, -1, -1):
        if lean and k == 0 and layout.ndim == 1:
            # a = V_leaf / VS_parent is a per-parent value: P = a^2 P_parent + V (1 - a) per parent, spread.
            a = sigma2[0] / _known(child_var[1])
            var[0] = spread_to_leaves(a * a * var[1] + sigma2[0] * (1.0 - a), layout)
            continue
        a = vdown[k] / expand(_known(child_var[k + 1]), k)
        var[k] = _compact(a * a * expand(var[k + 1], k) + vdown[k] * (1.0 - a))
    return TreeVariances(vdown=tuple(vdown), child_var=tuple(child_var), variances=tuple(var))


def constant_level(value: float, shape: tuple[int, ...]) -> np.ndarray:
    """``np.full(shape, value)`` as a read-only broadcast view of one float64 (8 bytes, not ``8 * size``)."""
    return np.broadcast_to(np.array(value, dtype=np.float64), shape)


_COMPACT_MIN = 4096  # nodes: a level this large is stored once when all its nodes share a value


def _compact(values: np.ndarray) -> np.ndarray:
    """``values``, or a read-only broadcast view of its one value when all its elements are that value.

    Only levels of at least :data:`_COMPACT_MIN` nodes: on smaller ones the check costs more than the
    memory it saves (many small trees are released in a row, e.g. by the privacy tests).
    """
    if values.size >= _COMPACT_MIN and any(values.strides):
        first = values.flat[0]
        if np.all(values == first):
            return constant_level(float(first), values.shape)
    return values


def spread_to_leaves(per_parent: np.ndarray, layout: TreeLayout) -> np.ndarray:
    """``layout.expand(per_parent, 0)`` on a 1-D tree: each parent's value on each of its leaves.

    A broadcast view of one value when every parent has the same one; otherwise each value repeated
    for its parent's children (the last parent may have fewer than ``b``).
    """
    if per_parent.size and np.all(per_parent == per_parent[0]):
        return constant_level(float(per_parent[0]), (layout.n_leaves,))
    return _expand(layout, per_parent, 0)


def _expander(layout: TreeLayout, lean: bool) -> Callable[[np.ndarray, int], np.ndarray]:
    """``expand(parent_values, level)``: :func:`_expand` on large trees, ``layout.expand`` (cheaper) on small ones."""
    return (lambda values, level: _expand(layout, values, level)) if lean else layout.expand


def _expand(layout: TreeLayout, parent_values: np.ndarray, level: int) -> np.ndarray:
    """``layout.expand(parent_values, level)``; on a 1-D tree by ``np.repeat`` (no index array)."""
    if layout.ndim != 1:
        return layout.expand(parent_values, level)
    n, b = layout.level_sizes[level], layout.branching
    reps = np.full(parent_values.size, b, dtype=np.int64)
    reps[-1] = n - b * (parent_values.size - 1)
    return np.repeat(parent_values, reps)


def _add_per_parent(leaves: np.ndarray, per_parent: np.ndarray, b: int) -> None:
    """``leaves += expand(per_parent)`` in place on a 1-D tree, without the expanded array."""
    full = leaves.size // b
    if full:
        leaves[: full * b].reshape(full, b)[...] += per_parent[:full, None]
    if leaves.size > full * b:
        leaves[full * b:] += per_parent[full]


def constrained_inference(layout: TreeLayout, noisy: Sequence[np.ndarray | None],
                          level_variances: Sequence[float] | np.ndarray, *,
                          keep_bottom_up: bool = True) -> TreeInference:
    """Exact GLS estimate of every node of the tree from its noisy counts.

    Parameters
    ----------
    layout : TreeLayout
        The tree.
    noisy : sequence of ndarray or None
        Noisy counts per level (shaped ``layout.level_shapes[k]``), ``None`` for a
        level that was not noised.  The leaf level must be noised.
    level_variances : sequence of float
        Noise variance of each level (``inf`` when not noised).
    keep_bottom_up : bool
        Return the bottom-up ``z`` and ``child_sum`` (needed by :func:`nonnegative_tree`).
        With False they are left out (empty tuples) and the leaf estimates are
        built in the buffer of the leaves' ``z``: one leaf-sized array less.

    Returns
    -------
    TreeInference
        Bottom-up and final estimates and their exact variances.  O(number of
        nodes), vectorized per level.

    Notes
    -----
    On a 1-D tree the top-down step of the leaves (and of any level whose
    nodes share one ``V``, e.g. every level of a complete tree) adds
    ``a (est_v - S_v)`` once per parent (``a = V / VS_v`` is the same for all
    children of ``v``) to the nodes' ``z``: the same operations on the same
    values as node by node.
    """
    tv = tree_variances(layout, level_variances)
    sigma2 = [float(v) for v in level_variances]
    expand = _expander(layout, layout.n_leaves >= _COMPACT_MIN)
    z = [np.array(noisy[0], dtype=np.float64)]  # a copy: the leaf estimates may be built in it
    child_sum: list[np.ndarray | None] = [None]
    for k in range(1, layout.n_levels):
        s = layout.aggregate(z[k - 1], k - 1)
        child_sum.append(s)
        if noisy[k] is None or not np.isfinite(sigma2[k]):
            z.append(s)
        else:
            # v (n / sigma2 + S / VS), evaluated in one new array (the same operations, the same bits).
            zk = np.array(noisy[k], dtype=np.float64)
            zk /= sigma2[k]
            zk += s / tv.child_var[k]
            zk *= tv.vdown[k]
            z.append(zk)
    top = layout.n_levels - 1
    est: list[np.ndarray] = [np.empty(0)] * layout.n_levels
    est[top] = z[top]
    for k in range(top - 1, -1, -1):
        v = tv.vdown[k]
        if layout.ndim == 1 and not any(v.strides):
            # Every node of the level has the same V (the leaves; any level of a complete tree), so
            # a = V / VS_v is a per-parent value: add a (est_v - S_v) once per parent to the nodes' z.
            # The leaves' z is a copy made above: the leaf estimates may be built in it.
            nodes = z[0] if k == 0 and not keep_bottom_up else z[k].copy()
            step = est[k + 1] - child_sum[k + 1]
            vs = _known(tv.child_var[k + 1])
            step *= v.flat[0] / (vs if any(vs.strides) else vs.flat[0])
            _add_per_parent(nodes, step, layout.branching)
            del step
            est[k] = nodes
            continue
        a = tv.vdown[k] / expand(_known(tv.child_var[k + 1]), k)
        est[k] = z[k] + a * expand(est[k + 1] - child_sum[k + 1], k)
    if not keep_bottom_up:
        return TreeInference(z=(), vdown=tv.vdown, child_sum=(), child_var=tv.child_var, estimates=tuple(est),
                             variances=tv.variances)
    return TreeInference(z=tuple(z), vdown=tv.vdown, child_sum=tuple(child_sum),
                         child_var=tv.child_var, estimates=tuple(est), variances=tv.variances)


def nonnegative_tree(layout: TreeLayout, inference: TreeInference) -> tuple[np.ndarray, ...]:
    """Non-negative, consistent node estimates by top-down weighted projection.

    The root becomes ``max(est_root, 0)``.  Going down, the children of a node
    with (already non-negative) value ``T`` first get their conditional GLS
    targets ``t_c = z_c + a_c (T - S_v)`` (which sum to ``T``), then are
    projected onto ``{c >= 0, sum c = T}`` in the metric of the bottom-up
    variances: ``c = max(0, t - lambda V)`` with ``lambda`` found per parent from
    the sorted breakpoints ``t / V``.  Where the GLS estimates are already
    non-negative they are returned unchanged (the step is idempotent).

    Parameters
    ----------
    layout : TreeLayout
        The tree.
    inference : TreeInference
        Output of :func:`constrained_inference`.

    Returns
    -------
    tuple of ndarray
        Non-negative estimates per level; every parent equals the sum of its
        children.  This is post-processing: it uses only the noisy counts.

    Notes
    -----
    The result is no longer linear in the noisy counts, so the GLS variances
    are only approximate error bars for it.
    """
    top = layout.n_levels - 1
    out: list[np.ndarray] = [np.empty(0)] * layout.n_levels
    out[top] = np.maximum(inference.estimates[top], 0.0)
    for k in range(top - 1, -1, -1):
        v = inference.vdown[k]
        a = v / layout.expand(_known(inference.child_var[k + 1]), k)
        target = inference.z[k] + a * layout.expand(out[k + 1] - inference.child_sum[k + 1], k)
        parent_id = layout.expand(np.arange(out[k + 1].size).reshape(out[k + 1].shape), k)
        out[k] = _project_groups(target.ravel(), v.ravel(), parent_id.ravel(),
                                 out[k + 1].ravel()).reshape(target.shape)
    return tuple(out)


def _project_groups(t: np.ndarray, v: np.ndarray, group: np.ndarray,
                    total: np.ndarray) -> np.ndarray:
    """Weighted projection of each group of ``t`` onto ``{x >= 0, sum x = total[g]}``."""
    if np.all(t >= 0):
        return t.copy()
    ratio = t / v
    order = np.lexsort((-ratio, group))
    g = group[order]
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    ct = np.cumsum(t[order])
    cv = np.cumsum(v[order])
    seg = np.repeat(starts, np.diff(np.r_[starts, g.size]))
    base_t = np.where(seg > 0, ct[seg - 1], 0.0)
    base_v = np.where(seg > 0, cv[seg - 1], 0.0)
    lam = ((ct - base_t) - total[g]) / (cv - base_v)
    # Relative tolerance only: ratios t / v scale as 1 / noise scale, so an absolute term would
    # accept every prefix when the noise is huge (ratios ~ 1e-12) and break the group sums.
    valid = ratio[order] - lam >= -1e-12 * np.maximum(np.abs(lam), np.abs(ratio[order]))
    pos = np.arange(g.size)
    # The valid prefixes of each group are {1..j*}: take the last valid position.
    last = np.maximum.reduceat(np.where(valid, pos, seg), starts)
    lam_g = lam[last]
    out = np.empty_like(t)
    out[order] = np.maximum(0.0, t[order] - lam_g[np.searchsorted(starts, pos, side="right") - 1] * v[order])
    return out
