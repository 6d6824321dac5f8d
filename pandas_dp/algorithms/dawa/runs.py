"""Workload queries as runs on DAWA's buckets, and exact variances of the bucket-tree least squares.

Workloads as runs
-----------------
A workload query is a set of bins given as *runs* ``[lo, hi)`` of consecutive
positions (one run for a 1-D range; a rectangle on the Hilbert order is a few
hundred). On the buckets (:class:`BucketRuns`), a run covers whole buckets
with weight 1 and the buckets at its two ends with the fraction of their bins
inside it: the query's row of DAWA's "reformed" workload (uniform expansion).
Per tree level, only the nodes holding a run's two end buckets need work
(nodes strictly inside a run are fully covered), so a level costs O(runs + nodes).

Exact variances
---------------
Each noised level of the bucket tree is the vector of node sums plus noise of
variance ``sigma_l**2``; the generalized least-squares estimate is the exact
tree GLS of :func:`~pandas_dp.algorithms.tree.inference.constrained_inference`.
For a query with bucket weights ``w`` the error is linear in the noise, with
exact variance ``w^T (A^T S^-1 A)^-1 w``, computed on the Markov-tree form of
the GLS error (``e_c = a_c e_v + xi_c``): for the part of a query inside node
``v``, ``e = alpha_v e_v + eta_v`` with ``alpha_v VS_v = sum_c alpha_c V_c`` and
``Var(eta_v) = sum_c (beta_c + alpha_c**2 V_c) - (alpha_v VS_v)**2 / VS_v``;
fully covered children have ``alpha = 1, beta = 0`` and empty ones vanish, so
only nodes holding run ends are visited (:func:`query_variance`).

References
----------
.. [1] C. Li, M. Hay, G. Miklau, Y. Wang. "A Data- and Workload-Aware Algorithm
   for Range Queries Under Differential Privacy", PVLDB 7(5), 2014, Section 4
   (workload reform by uniform expansion).
.. [2] M. Hay, V. Rastogi, G. Miklau, D. Suciu. "Boosting the Accuracy of
   Differentially Private Histograms Through Consistency", PVLDB 3(1), 2010
   (tree least squares).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from pandas_dp.algorithms.hilbert import rectangle_runs
from pandas_dp.algorithms.tree.inference import TreeVariances
from pandas_dp.algorithms.tree.layout import TreeLayout
from pandas_dp.errors import ParameterError

__all__ = ["workload_runs", "PREFIX_2D_CORNERS", "BucketRuns", "bucket_runs", "subsample_runs", "VariancePlan", "variance_plan", "plan_variance",
           "CompactVariances", "compact_variances", "query_variance"]


#: ``workload="prefix"`` on a 2-D grid: prefix rectangles at up to this many corners per axis.
PREFIX_2D_CORNERS = 32

Workload = Literal["prefix", "identity"]


def workload_runs(workload: np.ndarray | str, shape: tuple[int, ...]
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """A public workload as runs ``(query, lo, hi, m)`` of positions on DAWA's 1-D line.

    Parameters
    ----------
    workload : {"prefix", "identity"} or ndarray
        1-D: ``"prefix"`` (all ``n`` ranges ``[0, j)``), ``"identity"`` (single
        bins) or an ``(m, 2)`` int array of half-open ranges ``[lo, hi)``. 2-D:
        ``"prefix"`` (rectangles ``[0, r) x [0, c)`` with ``r, c`` at up to
        :data:`PREFIX_2D_CORNERS` evenly spaced corners per axis), ``"identity"``
        (single cells) or an ``(m, 4)`` int array of rectangles ``r0, r1, c0, c1``.
    shape : tuple of int
        Domain shape.

    Returns
    -------
    query, lo, hi : ndarray of int64
        Runs sorted by ``(query, lo)``; 2-D positions are in ``hilbert_order(shape)``.
    m : int
        Number of queries.

    Raises
    ------
    ParameterError
        For an unknown name, a wrong array shape, or queries outside the domain or empty.
    """
    if isinstance(workload, str):
        if workload not in ("prefix", "identity"):
            raise ParameterError(
                f"The 'workload' parameter of dawa must be 'prefix', 'identity' or an array of "
                f"ranges/rectangles. Got {workload!r}.")
        if len(shape) == 1:
            n = shape[0]
            lo = np.zeros(n, dtype=np.int64) if workload == "prefix" else np.arange(n, dtype=np.int64)
            return np.arange(n, dtype=np.int64), lo, np.arange(1, n + 1, dtype=np.int64), n
        if workload == "identity":
            rr, cc = np.divmod(np.arange(shape[0] * shape[1], dtype=np.int64), shape[1])
            rects = np.column_stack([rr, rr + 1, cc, cc + 1])
        else:
            corners = [np.unique(np.linspace(0, s, min(s, PREFIX_2D_CORNERS) + 1).round().astype(np.int64)[1:])
                       for s in shape]
            r1, c1 = np.meshgrid(*corners, indexing="ij")
            zeros = np.zeros(r1.size, dtype=np.int64)
            rects = np.column_stack([zeros, r1.ravel(), zeros, c1.ravel()])
        return (*rectangle_runs(rects, (shape[0], shape[1])), rects.shape[0])
    arr = np.asarray(workload)
    width = 2 if len(shape) == 1 else 4
    if arr.ndim != 2 or arr.shape[1] != width or arr.shape[0] == 0 or not np.issubdtype(arr.dtype, np.integer):
        raise ParameterError(
            f"The 'workload' parameter of dawa must be a non-empty integer array of shape (m, {width}) "
            f"({'lo, hi ranges' if width == 2 else 'r0, r1, c0, c1 rectangles'}, half-open). Got "
            f"{'an array of shape ' + str(arr.shape) + ' and dtype ' + str(arr.dtype)}.")
    arr = arr.astype(np.int64)
    bounds = [(arr[:, 0], arr[:, 1], shape[0])] + ([(arr[:, 2], arr[:, 3], shape[1])] if width == 4 else [])
    for lo, hi, size in bounds:
        bad = (lo < 0) | (hi > size) | (lo >= hi)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ParameterError(
                f"Every workload query of dawa must be a non-empty half-open range inside the domain "
                f"(0 <= lo < hi <= {size}). Query {i} is {arr[i].tolist()}. Fix or drop it.")
    if width == 2:
        m = arr.shape[0]
        return np.arange(m, dtype=np.int64), arr[:, 0].copy(), arr[:, 1].copy(), m
    return (*rectangle_runs(arr, (shape[0], shape[1])), arr.shape[0])


def merge_runs(query: np.ndarray, lo: np.ndarray, hi: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Drop empty runs and merge overlapping or touching runs of the same query (input sorted)."""
    keep = lo < hi
    query, lo, hi = query[keep], lo[keep], hi[keep]
    if query.size == 0:
        return query, lo, hi
    # running maximum of hi within each query (runs sorted by (query, lo))
    starts_q = np.r_[True, query[1:] != query[:-1]]
    seg = np.cumsum(starts_q) - 1
    offset = seg * (int(hi.max()) + 1)
    reach = np.maximum.accumulate(hi + offset) - offset
    new = np.r_[True, starts_q[1:] | (lo[1:] > reach[:-1])]
    first = np.flatnonzero(new)
    last = np.r_[first[1:] - 1, query.size - 1]
    return query[first], lo[first], reach[last]


@dataclass(frozen=True)
class BucketRuns:
    """Workload runs on the buckets, sorted by ``(query, first)``.

    Attributes
    ----------
    query : ndarray of int64
        Query of each run.
    first, last : ndarray of int64
        First and last bucket touched by the run (``first <= last``).
    first_weight, last_weight : ndarray of float64
        Share of the first / last bucket's bins inside the run; for a run inside one
        bucket, ``first_weight`` holds it and ``last_weight`` is 0. Buckets strictly
        between have weight 1.
    n_queries : int
        Number of queries ``m``.
    n_buckets : int
        Number of buckets.
    """

    query: np.ndarray
    first: np.ndarray
    last: np.ndarray
    first_weight: np.ndarray
    last_weight: np.ndarray
    n_queries: int
    n_buckets: int


def bucket_runs(query: np.ndarray, lo: np.ndarray, hi: np.ndarray, edges: np.ndarray,
                n_queries: int) -> BucketRuns:
    """Map runs of positions ``[lo, hi)`` (sorted by query, then ``lo``) onto buckets with ``edges``.

    Examples
    --------
    >>> br = bucket_runs(np.array([0]), np.array([1]), np.array([6]), np.array([0, 2, 4, 8]), 1)
    >>> br.first.tolist(), br.first_weight.tolist(), br.last.tolist(), br.last_weight.tolist()
    ([0], [0.5], [2], [0.5])
    """
    edges = np.asarray(edges, dtype=np.int64)
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    size = np.diff(edges).astype(np.float64)
    bf = np.searchsorted(edges, lo, side="right") - 1
    bl = np.searchsorted(edges, hi - 1, side="right") - 1
    single = bf == bl
    wf = np.where(single, (hi - lo) / size[bf], (edges[bf + 1] - lo) / size[bf])
    wl = np.where(single, 0.0, (hi - edges[bl]) / size[bl])
    return BucketRuns(query=np.asarray(query, dtype=np.int64), first=bf, last=bl, first_weight=wf,
                      last_weight=wl, n_queries=int(n_queries), n_buckets=int(edges.size - 1))


def _group(keys_q: np.ndarray, keys_v: np.ndarray) -> np.ndarray:
    """Start index of every run of equal consecutive ``(q, v)`` pairs."""
    if keys_q.size == 0:
        return np.zeros(0, dtype=np.int64)
    change = np.ones(keys_q.size, dtype=bool)
    change[1:] = (keys_q[1:] != keys_q[:-1]) | (keys_v[1:] != keys_v[:-1])
    return np.flatnonzero(change)


def level_entries(br: BucketRuns, level: int, values: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per (query, node) sums of ``values`` over the query's bucket weights, for nodes holding run ends.

    Returns the grouped ``(query, node, sum)`` entries (sorted) and the number of
    queries covering each node fully without holding a run end there.
    """
    k = br.n_buckets
    n_nodes = ((k - 1) >> level) + 1
    cum = np.concatenate([[0.0], np.cumsum(values, dtype=np.float64)])
    bf, bl = br.first, br.last
    vf, vl = bf >> level, bl >> level
    same = vf == vl
    head = br.first_weight * values[bf]
    tail = br.last_weight * values[bl]
    s_same = head + np.where(bl > bf, cum[bl] - cum[np.minimum(bf + 1, k)], 0.0) + tail
    s_first = head + cum[np.minimum((vf + 1) << level, k)] - cum[bf + 1]
    s_last = cum[bl] - cum[vl << level] + tail
    split = ~same
    offset = np.concatenate([[0], np.cumsum(split)[:-1]]) if split.size else np.zeros(0, np.int64)
    pos = np.arange(bf.size) + offset
    total = bf.size + int(split.sum())
    eq = np.empty(total, dtype=np.int64)
    ev = np.empty(total, dtype=np.int64)
    es = np.empty(total)
    eq[pos], ev[pos], es[pos] = br.query, vf, np.where(same, s_same, s_first)
    p2 = pos[split] + 1
    eq[p2], ev[p2], es[p2] = br.query[split], vl[split], s_last[split]
    starts = _group(eq, ev)
    sums = np.add.reduceat(es, starts) if starts.size else es[:0]
    wide = split & (vl - vf >= 2)
    diff = np.zeros(n_nodes + 1, dtype=np.int64)
    np.add.at(diff, vf[wide] + 1, 1)
    np.add.at(diff, vl[wide], -1)
    full = np.cumsum(diff)[:n_nodes]
    return eq[starts], ev[starts], sums, full


def subsample_runs(br: BucketRuns, max_queries: int) -> BucketRuns:
    """The runs of at most ``max_queries`` queries, evenly spaced by query index (public, deterministic)."""
    if br.n_queries <= max_queries:
        return br
    keep_q = np.unique(np.linspace(0, br.n_queries - 1, max_queries).round().astype(np.int64))
    new_id = np.full(br.n_queries, -1, dtype=np.int64)
    new_id[keep_q] = np.arange(keep_q.size)
    sel = new_id[br.query] >= 0
    return BucketRuns(query=new_id[br.query[sel]], first=br.first[sel], last=br.last[sel],
                      first_weight=br.first_weight[sel], last_weight=br.last_weight[sel],
                      n_queries=int(keep_q.size), n_buckets=br.n_buckets)


@dataclass(frozen=True)
class VariancePlan:
    """The part of :func:`query_variance` that does not depend on the noise variances.

    For every level below the root: the children holding run ends (``child``), the
    start of each (query, parent) group among them, the group's parent, and the
    sibling added as a fully covered child (``-1`` if none). Built once per
    workload and partition, then evaluated for many level variances.
    """

    alpha0: np.ndarray
    levels: tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], ...]
    final_query: np.ndarray
    final_node: np.ndarray
    n_queries: int


def variance_plan(layout: TreeLayout, br: BucketRuns) -> VariancePlan:
    """Precompute the Markov-tree recursion of :func:`query_variance` for a workload."""
    eq, ev, alpha, _ = level_entries(br, 0, np.ones(br.n_buckets))
    levels = []
    for level in range(layout.n_levels - 1):
        n_here = layout.level_sizes[level]
        parent = ev >> 1
        starts = _group(eq, parent)
        gq, gp = eq[starts], parent[starts]
        # A child of the parent that holds no run end is either empty or fully covered.
        lone = np.diff(np.append(starts, ev.size)) == 1
        sib = ev[starts] ^ 1
        check = lone & (sib < n_here)
        full = np.zeros(starts.size, dtype=bool)
        full[check] = _covers(br, level, gq[check], sib[check])
        levels.append((ev, starts, gp, np.where(full, sib, -1)))
        eq, ev = gq, gp
    return VariancePlan(alpha0=alpha, levels=tuple(levels), final_query=eq, final_node=ev,
                        n_queries=br.n_queries)


@dataclass(frozen=True)
class CompactVariances:
    """Bottom-up variances of a bucket tree with one noise variance per level, in O(levels).

    Every node of a level but the last roots a complete binary subtree, so a
    level has two values of ``V^down`` and of ``VS`` (its children's sum): the
    complete nodes' (``*_full``) and the last node's (``*_last``). This is all
    :func:`plan_variance` needs (plus the root's posterior, its ``V^down``).
    """

    v_full: np.ndarray
    v_last: np.ndarray
    vs_full: np.ndarray
    vs_last: np.ndarray
    last: np.ndarray


def compact_variances(layout: TreeLayout, sigma2: np.ndarray) -> CompactVariances:
    """:class:`CompactVariances` for level noise variances ``sigma2`` (``inf`` = level not asked)."""
    sizes = layout.level_sizes
    n = len(sizes)
    v_full, v_last = np.empty(n), np.empty(n)
    vs_full, vs_last = np.full(n, np.nan), np.full(n, np.nan)
    v_full[0] = v_last[0] = sigma2[0]
    for level in range(1, n):
        vs_full[level] = 2.0 * v_full[level - 1]
        two = sizes[level - 1] == 2 * sizes[level]            # the last node has a complete first child
        vs_last[level] = v_full[level - 1] + v_last[level - 1] if two else v_last[level - 1]
        for vs, out in ((vs_full, v_full), (vs_last, v_last)):
            out[level] = vs[level] if not np.isfinite(sigma2[level]) else 1.0 / (1.0 / sigma2[level] + 1.0 / vs[level])
    return CompactVariances(v_full=v_full, v_last=v_last, vs_full=vs_full, vs_last=vs_last,
                            last=np.asarray(sizes, dtype=np.int64) - 1)


def _pick(full: float, last: float, index: np.ndarray, last_index: int) -> np.ndarray:
    return np.where(index == last_index, last, full)


def plan_variance(plan: VariancePlan, structure: TreeVariances | CompactVariances) -> np.ndarray:
    """Evaluate a :class:`VariancePlan` for the GLS variance structure of given level variances."""
    alpha = plan.alpha0
    beta = np.zeros(alpha.size)
    for level, (child, starts, parent, full_sib) in enumerate(plan.levels):
        sib = np.maximum(full_sib, 0)
        if isinstance(structure, CompactVariances):
            c = structure
            vc = _pick(c.v_full[level], c.v_last[level], child, c.last[level])
            vsib = _pick(c.v_full[level], c.v_last[level], sib, c.last[level])
            vs = _pick(c.vs_full[level + 1], c.vs_last[level + 1], parent, c.last[level + 1])
        else:
            v = structure.vdown[level].ravel()
            vc, vsib = v[child], v[sib]
            child_var = structure.child_var[level + 1]
            assert child_var is not None, "every level above the leaves has children"
            vs = child_var.ravel()[parent]
        if starts.size:
            a_sum = np.add.reduceat(alpha * vc, starts)
            b_sum = np.add.reduceat(beta + alpha * alpha * vc, starts)
        else:
            a_sum, b_sum = alpha[:0], beta[:0]
        extra = np.where(full_sib >= 0, vsib, 0.0)
        a_sum = a_sum + extra
        alpha = a_sum / vs
        beta = b_sum + extra - a_sum * alpha
    top = len(plan.levels)
    root = (np.array([structure.v_last[top]]) if isinstance(structure, CompactVariances)
            else structure.variances[top].ravel())
    out = np.zeros(plan.n_queries)
    out[plan.final_query] = alpha * alpha * root[plan.final_node] + beta
    return np.maximum(out, 0.0)


def query_variance(layout: TreeLayout, structure: TreeVariances, br: BucketRuns) -> np.ndarray:
    """Exact variance of every query's least-squares estimate ``sum_j w_qj x_hat_j``.

    Parameters
    ----------
    layout : TreeLayout
        The bucket tree.
    structure : TreeVariances
        Its GLS variance structure.
    br : BucketRuns
        The queries (weights ``w_qj`` from their runs).

    Returns
    -------
    ndarray
        ``w_q^T (A^T S^-1 A)^-1 w_q`` per query, O(runs x height).
    """
    return plan_variance(variance_plan(layout, br), structure)


def _covers(br: BucketRuns, level: int, q: np.ndarray, node: np.ndarray) -> np.ndarray:
    """Whether some run of query ``q`` covers ``node`` (of ``level``) strictly between its end nodes."""
    vf, vl = br.first >> level, br.last >> level
    width = int(((br.n_buckets - 1) >> level) + 2)
    key = br.query * width + vf
    idx = np.searchsorted(key, q * width + node, side="left") - 1
    ok = idx >= 0
    idx = np.maximum(idx, 0)
    return ok & (br.query[idx] == q) & (vf[idx] < node) & (vl[idx] > node)
