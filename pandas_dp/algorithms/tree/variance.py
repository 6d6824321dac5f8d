"""Range queries on a 1-D tree: estimates and their exact variances.

Two estimators (Qardaji et al., Section 3):

* ``H_b`` (no inference): a range is answered by the least number of noisy
  nodes, the maximal noised nodes inside it; its variance is the sum of their
  level variances.
* ``H_b^c`` (GLS constrained inference): a range is the sum of its leaf
  estimates.  Its exact variance comes from the Markov-tree form of the GLS
  error (``e_c = a_c e_v + xi_c``, see :mod:`pandas_dp.algorithms.tree.inference`):
  for the part ``q_v`` of a query inside node ``v``, ``e(q_v) = alpha_v e_v +
  eta_v`` with ``alpha_v = sum_c alpha_c V_c / VS_v`` and
  ``Var(eta_v) = beta_v = sum_c beta_c + sum_c alpha_c^2 V_c - (sum_c alpha_c V_c)^2 / VS_v``
  (fully covered children have ``alpha = 1, beta = 0``).  Only the nodes on
  the two boundary paths are partial, so each range costs O(h) with prefix
  sums of ``V`` per level.  At the node ``u`` where the two paths meet,
  ``Var = alpha_u^2 P_u + beta_u``.

The average over all ``N (N + 1) / 2`` ranges (``V_Avg``) is
``(sum_i P_i (i+1)(N-i) + 2 sum_{i<j} Cov_ij (i+1)(N-j)) / (N(N+1)/2)``; with
the lowest common ancestor ``u`` of leaves ``i < j`` in children ``c < m``,
``Cov_ij = g_i g_j (a_c a_m P_u - V_c V_m / VS_u)``, which sums over all pairs
in O(number of nodes) through ``L_c = sum_i (i+1) g_i`` and
``R_c = sum_j (N-j) g_j``.

References
----------
.. [1] W. Qardaji, W. Yang, N. Li. "Understanding Hierarchical Methods for
   Differentially Private Histograms", PVLDB 6(14), 2013, Sections 3.2-3.4.
.. [2] M. Hay et al. "Boosting the Accuracy of Differentially Private
   Histograms Through Consistency", PVLDB 3(1), 2010, Section 4.2.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from pandas_dp.algorithms.tree.inference import TreeVariances
from pandas_dp.algorithms.tree.layout import TreeLayout

__all__ = ["range_variance", "box_variance", "average_range_variance", "canonical_node_counts",
           "raw_range_estimate", "raw_range_variance", "raw_level_usage",
           "raw_average_range_variance", "approx_average_range_variance"]


def _child_var(tv: TreeVariances, k: int) -> np.ndarray:
    """``VS`` of the nodes of level ``k``, set for every level above the leaves (``k >= 1``)."""
    vs = tv.child_var[k]
    assert vs is not None, "the leaves have no children; callers pass a level k >= 1"
    return vs


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """``sum(a * b)`` in a fixed order (numpy's pairwise sum of correctly rounded products).

    ``np.dot`` calls BLAS, whose kernel (and so its order of additions and its
    use of fused multiply-adds) depends on the CPU; these predictions decide
    budget splits, which must be the same on every machine.
    """
    return float(np.sum(np.multiply(a, b)))


def _check_1d(layout: TreeLayout) -> None:
    if layout.ndim != 1:
        raise ValueError("range queries over leaf intervals need a 1-D tree")


def range_variance(layout: TreeLayout, tv: TreeVariances, lo: np.ndarray,
                   hi: np.ndarray) -> np.ndarray:
    """Exact GLS error variance of the half-open leaf ranges ``[lo, hi)``.

    Parameters
    ----------
    layout : TreeLayout
        A 1-D tree.
    tv : TreeVariances
        Its variance structure.
    lo, hi : ndarray of int
        Range bounds, ``0 <= lo < hi <= N``.

    Returns
    -------
    ndarray
        ``Var(q_hat)`` per range, O(h) each, vectorized over ranges.
    """
    _check_1d(layout)
    lo = np.asarray(lo, dtype=np.int64).ravel()
    hi = np.asarray(hi, dtype=np.int64).ravel()
    b = layout.branching
    res = np.empty(lo.size)
    j_l, j_r = lo.copy(), hi - 1
    single = j_l == j_r
    res[single] = tv.variances[0].ravel()[j_l[single]]
    a_l, b_l = np.ones(lo.size), np.zeros(lo.size)
    a_r, b_r = np.ones(lo.size), np.zeros(lo.size)
    active = np.flatnonzero(~single)
    for k in range(layout.n_levels - 1):
        if active.size == 0:
            break
        v = tv.vdown[k].ravel()
        cum = np.concatenate([[0.0], np.cumsum(v)])
        vs = _child_var(tv, k + 1).ravel()
        p_up = tv.variances[k + 1].ravel()
        jl, jr = j_l[active], j_r[active]
        al, bl, ar, br = a_l[active], b_l[active], a_r[active], b_r[active]
        ul, ur = jl // b, jr // b
        vl, vr = v[jl], v[jr]
        merge = ul == ur
        # Nodes where the two boundary paths meet: finish these ranges.
        mid = cum[jr] - cum[jl + 1]
        s = al * vl + mid + ar * vr
        vsu = vs[ul]
        am = s / vsu
        bm = bl + br + al * al * vl + mid + ar * ar * vr - s * s / vsu
        res[active[merge]] = (am * am * p_up[ul] + bm)[merge]
        # Separate left and right paths: move both one level up.
        full_l = cum[np.minimum((ul + 1) * b, v.size)] - cum[jl + 1]
        sl = al * vl + full_l
        full_r = cum[jr] - cum[ur * b]
        sr = ar * vr + full_r
        vsl, vsr = vs[ul], vs[ur]
        keep = ~merge
        idx = active[keep]
        a_l[idx] = (sl / vsl)[keep]
        b_l[idx] = (bl + al * al * vl + full_l - sl * sl / vsl)[keep]
        a_r[idx] = (sr / vsr)[keep]
        b_r[idx] = (br + ar * ar * vr + full_r - sr * sr / vsr)[keep]
        j_l[idx], j_r[idx] = ul[keep], ur[keep]
        active = idx
    return np.maximum(res, 0.0)


def box_variance(layout: TreeLayout, tv: TreeVariances, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Exact GLS error variance of the sums of the leaves in the boxes ``[lo, hi)`` of a d-dim tree.

    The recursion of :func:`range_variance` run over every node instead of the
    two boundary paths: the part ``q_v`` of a box inside node ``v`` has error
    ``alpha_v e_v + eta_v`` with ``alpha_v = sum_c alpha_c V_c / VS_v`` and
    ``beta_v = sum_c beta_c + sum_c alpha_c^2 V_c - (sum_c alpha_c V_c)^2 / VS_v``
    from the leaves (``alpha = 1`` inside the box, 0 outside, ``beta = 0``) up,
    and ``Var = alpha_r^2 P_r + beta_r`` at the root. That is ``w^T Cov w`` for the
    box's indicator ``w`` in O(number of nodes) per box and memory, never a
    matrix over the domain.

    Parameters
    ----------
    layout : TreeLayout
        A tree of any dimension.
    tv : TreeVariances
        Its variance structure.
    lo, hi : ndarray of int, shape (q, d)
        Half-open leaf-index boxes, ``0 <= lo < hi <= shape`` per axis.

    Returns
    -------
    ndarray
        ``Var(sum of the box's leaf estimates)`` per box.
    """
    lo = np.atleast_2d(np.asarray(lo, dtype=np.int64))
    hi = np.atleast_2d(np.asarray(hi, dtype=np.int64))
    top = layout.n_levels - 1
    out = np.empty(lo.shape[0])
    for q in range(lo.shape[0]):   # one box at a time: each pass is vectorized over the whole tree
        alpha = np.zeros(layout.level_shapes[0])
        alpha[tuple(slice(int(a), int(b)) for a, b in zip(lo[q], hi[q]))] = 1.0
        beta = np.zeros(layout.level_shapes[0])
        for k in range(top):
            v = np.broadcast_to(tv.vdown[k], layout.level_shapes[k])
            av = alpha * v
            s = layout.aggregate(av, k)
            vs = np.broadcast_to(_child_var(tv, k + 1), layout.level_shapes[k + 1])
            beta = layout.aggregate(beta + alpha * av, k) - s * s / vs
            alpha = s / vs
        out[q] = float(np.sum(alpha * alpha * np.broadcast_to(tv.variances[top], alpha.shape) + beta))
    return np.maximum(out, 0.0)


def average_range_variance(layout: TreeLayout, tv: TreeVariances) -> float:
    """Exact mean GLS error variance over all ``N (N + 1) / 2`` ranges (``V_Avg``).

    Parameters
    ----------
    layout : TreeLayout
        A 1-D tree.
    tv : TreeVariances
        Its variance structure.

    Returns
    -------
    float
        ``sum_{ranges} Var(q_hat) / (N (N + 1) / 2)``, in O(number of nodes).
    """
    _check_1d(layout)
    n = layout.n_leaves
    i = np.arange(n, dtype=np.float64)
    left, right = i + 1.0, n - i
    total = _dot(tv.variances[0], left * right)
    b = layout.branching
    cross = 0.0
    for k in range(layout.n_levels - 1):
        v = tv.vdown[k]
        vs = _child_var(tv, k + 1)
        p_up = tv.variances[k + 1]
        x, y = v * left, v * right
        starts = np.arange(0, v.size, b)
        cx = np.cumsum(x) - x
        before = cx - np.repeat(cx[starts], np.diff(np.r_[starts, v.size]))
        pair = np.add.reduceat(y * before, starts)
        cross += _dot(pair, p_up / (vs * vs) - 1.0 / vs)
        left = np.add.reduceat(x, starts) / vs
        right = np.add.reduceat(y, starts) / vs
    return (total + 2.0 * cross) / (n * (n + 1) / 2.0)


def canonical_node_counts(layout: TreeLayout, noised: Sequence[bool] | npt.NDArray[np.bool_], lo: np.ndarray,
                          hi: np.ndarray, noisy: Sequence[np.ndarray | None] | None = None
                          ) -> tuple[np.ndarray, np.ndarray]:
    """Number of maximal noised nodes per level inside each range, and their noisy sum.

    Parameters
    ----------
    layout : TreeLayout
        A 1-D tree.
    noised : sequence of bool
        Whether each level was noised (the root may not be).
    lo, hi : ndarray of int
        Half-open leaf ranges.
    noisy : sequence of ndarray or None, optional
        Noisy counts per level; when given, the second output is the ``H_b``
        answer of each range.

    Returns
    -------
    (ndarray, ndarray)
        ``(len(lo), n_levels)`` int counts of nodes used per level, and the
        sums of their noisy counts (zeros when ``noisy`` is None).
    """
    _check_1d(layout)
    l = np.asarray(lo, dtype=np.int64).ravel().copy()
    r = np.asarray(hi, dtype=np.int64).ravel().copy()
    b, top = layout.branching, layout.n_levels - 1
    counts = np.zeros((l.size, layout.n_levels), dtype=np.int64)
    sums = np.zeros(l.size)
    active = np.arange(l.size)
    for k in range(layout.n_levels):
        if active.size == 0:
            break
        cum = None
        if noisy is not None and noisy[k] is not None:
            cum = np.concatenate([[0.0], np.cumsum(np.asarray(noisy[k], dtype=np.float64).ravel())])
        la, ra = l[active], r[active]
        n_k = layout.level_sizes[k]
        if k == top or not noised[k + 1]:
            stop = np.ones(la.size, dtype=bool)
            big_l, big_r = la, ra
        else:
            big_l = -(-la // b)
            big_r = np.where(ra == n_k, layout.level_sizes[k + 1], ra // b)
            stop = big_l >= big_r
        left_end = np.where(stop, ra, np.minimum(big_l * b, ra))
        right_start = np.where(stop, ra, np.minimum(big_r * b, ra))
        counts[active, k] = (left_end - la) + (ra - right_start)
        if cum is not None:
            sums[active] += cum[left_end] - cum[la] + cum[ra] - cum[right_start]
        go = ~stop
        active = active[go]
        l[active], r[active] = big_l[go], big_r[go]
    return counts, sums


def raw_range_estimate(layout: TreeLayout, noisy: Sequence[np.ndarray | None],
                       noised: Sequence[bool] | npt.NDArray[np.bool_], lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``H_b`` answers: sums of the maximal noised nodes inside each range."""
    return canonical_node_counts(layout, noised, lo, hi, noisy)[1]


def raw_range_variance(layout: TreeLayout, level_variances: Sequence[float] | npt.NDArray[np.float64],
                       lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Exact ``H_b`` error variance: nodes used per level times the level variance."""
    sigma2 = np.asarray(level_variances, dtype=np.float64)
    noised = np.isfinite(sigma2)
    counts, _ = canonical_node_counts(layout, noised, lo, hi)
    return counts @ np.where(noised, sigma2, 0.0)


def _sum_containing(n: int, span: int) -> tuple[int, int, int]:
    """Sum over the nodes of span ``span`` of ``C(v)``, their count, and ``C`` of the last node.

    ``C(v) = (lo + 1)(N - hi + 1)`` ranges contain ``v = [lo, hi)``.  Full nodes
    ``j < m = n_nodes - 1`` give ``A + j s (A - 1) - j^2 s^2`` with
    ``A = N + 1 - s``; the last node gives ``m s + 1``.  Exact integers.
    """
    nodes = -(-n // span)
    m = nodes - 1
    a = n + 1 - span
    full = m * a + span * (a - 1) * m * (m - 1) // 2 - span * span * (m - 1) * m * (2 * m - 1) // 6
    last = m * span + 1
    return full + last, nodes, last


def raw_level_usage(layout: TreeLayout, noised: Sequence[bool] | npt.NDArray[np.bool_]) -> np.ndarray:
    """Total number of times each level's nodes answer the ``N (N + 1) / 2`` ranges.

    Notes
    -----
    A node ``v = [lo, hi)`` lies inside ``C(v) = (lo + 1)(N - hi + 1)`` ranges; it
    is used by those whose parent is not inside them, ``C(v) - C(parent)``
    (Qardaji's proof of Proposition 1), or by all ``C(v)`` when the parent is
    not noised.  Summed in closed form per level (O(h), exact integers), for
    any ``N`` including incomplete trees.
    """
    _check_1d(layout)
    n, b = layout.n_leaves, layout.branching
    out = np.zeros(layout.n_levels)
    for k in range(layout.n_levels):
        if not noised[k]:
            continue
        total, nodes, _ = _sum_containing(n, b ** k)
        if k < layout.n_levels - 1 and noised[k + 1]:
            ptotal, pnodes, plast = _sum_containing(n, b ** (k + 1))
            last_children = nodes - b * (pnodes - 1)
            total -= b * ptotal - (b - last_children) * plast
        out[k] = float(total)
    return out


def raw_average_range_variance(layout: TreeLayout, level_variances: Sequence[float] | npt.NDArray[np.float64]) -> float:
    """Exact mean ``H_b`` error variance over all ``N (N + 1) / 2`` ranges."""
    sigma2 = np.asarray(level_variances, dtype=np.float64)
    noised = np.isfinite(sigma2)
    usage = raw_level_usage(layout, noised)
    n = layout.n_leaves
    return _dot(usage, np.where(noised, sigma2, 0.0)) / (n * (n + 1) / 2.0)


def approx_average_range_variance(layout: TreeLayout, level_variances: Sequence[float] | npt.NDArray[np.float64],
                                  *, consistent: bool = True) -> float:
    """Qardaji's estimate of ``V_Avg`` (node usage of Eq. (2), Algorithms 1-2).

    Parameters
    ----------
    layout : TreeLayout
        A 1-D tree.
    level_variances : sequence of float
        Noise variance ``V_O`` of each level (``inf`` when not noised).
    consistent : bool
        ``True`` for ``H_b^c`` (Algorithm 2), ``False`` for ``H_b`` (then exact).

    Returns
    -------
    float
        ``sum_l M(l) Z_l V_O,l / (N (N + 1) / 2)``, where ``M(l)`` is the exact
        node usage of :func:`raw_level_usage` (Eq. (2) for complete trees:
        ``M(l) = (b - 1)(N^2/2 - N (b + 1) b^(l-1) / 3 + N)``) and ``Z_l`` is the
        variance reduction of constrained inference on level ``l``:
        ``Z_l = (3 V^up_(l+1) V^down_l + (b + 1) V^down_l^2) / (3 V_O (V^up_(l+1) + b V^down_l))``
        (the mean over ``k = 1..b-1`` covered siblings of the best combination
        of the estimates from below and above, relative to ``k V_O``) and
        ``Z = V^down / V_O`` on the top noised level.  O(h); it ignores
        cross-level effects, so it slightly underestimates for ``h >= 3``.
    """
    n, b = layout.n_leaves, layout.branching
    sigma2 = np.asarray(level_variances, dtype=np.float64)
    noised = np.flatnonzero(np.isfinite(sigma2))
    vo = sigma2[noised]
    m = noised.size
    usage = raw_level_usage(layout, np.isfinite(sigma2))[noised]
    if not consistent or m == 1:
        return _dot(usage, vo) / (n * (n + 1) / 2.0)
    vdown = np.empty(m)
    vdown[0] = vo[0]
    for i in range(1, m):
        vdown[i] = b * vo[i] * vdown[i - 1] / (vo[i] + b * vdown[i - 1])
    vup = np.empty(m)
    vup[-1] = vo[-1]
    for i in range(m - 2, -1, -1):
        rest = vup[i + 1] + (b - 1) * vdown[i]
        vup[i] = vo[i] * rest / (vo[i] + rest)
    z = np.empty(m)
    z[:-1] = ((3 * vup[1:] * vdown[:-1] + (b + 1) * vdown[:-1] ** 2)
              / (3 * vo[:-1] * (vup[1:] + b * vdown[:-1])))
    z[-1] = vdown[-1] / vo[-1]
    return _dot(usage * z, vo) / (n * (n + 1) / 2.0)
