"""DAWA stage 2: a workload-aware hierarchical strategy on the buckets, and its exact variances.

Given the buckets of stage 1, DAWA answers a *weighted hierarchy* of bucket
sums (binary tree over the buckets) chosen for the workload (GreedyH), then
estimates the bucket counts by least squares and spreads each evenly over its
bins.

Workloads as runs
-----------------
A workload query is a set of bins given as *runs* ``[lo, hi)`` of consecutive
positions (one run for a 1-D range; a rectangle on the Hilbert order is a few
hundred). On the buckets (:class:`BucketRuns`), a run covers whole buckets
with weight 1 and the buckets at its two ends with the fraction of their bins
inside it: the query's row of DAWA's "reformed" workload (uniform expansion).

GreedyH, one weight per level
-----------------------------
With node strategies scaled so every root-to-leaf path of weights sums to 1
(sensitivity 1), a node ``v`` with children ``c`` asks its own sum with weight
``1 - p`` and its children's strategies scaled by ``p``. Writing
``M_c = (A_c^T A_c)^{-1}``, ``h = concat_c(M_c 1)`` and ``K = 1^T h``,
Sherman-Morrison gives the local workload error (noise variance 1)::

    err_v(p) = [ sum_c err_c - (1 - p)**2 T_v / (p**2 + (1 - p)**2 K) ] / p**2,
    T_v = sum_q (w_q|v . h)**2,          M_v 1 = h / (p**2 + (1 - p)**2 K),

with ``w_q|v`` the query's bucket weights restricted to ``v``. The paper
chooses ``p`` per node from a grid of 100 values, bottom-up. Here ``p`` is
chosen **per level** (minimising the level's summed local error on the same
grid), so that every level is one exact discrete-Laplace draw of one scale:
level ``l`` (0 = buckets) gets the share ``w_0 = prod_l p_l``,
``w_l = (1 - p_l) prod_{l' > l} p_l'`` of the stage-2 loss; the shares are
exact rationals summing to 1, and each level partitions the buckets, so the
strategy is ``loss``-DP. ``T_v`` needs only the nodes holding a run's two end
buckets (nodes strictly inside a run contribute ``K_v``), so a level costs
O(runs + nodes).

Inference and exact variances
-----------------------------
Each noised level is the vector of node sums plus noise of variance
``sigma_l**2``; the generalized least-squares estimate is the exact tree GLS of
:func:`~pandas_dp.algorithms.tree_inference.constrained_inference`. For a
query with bucket weights ``w`` the error is linear in the noise, with exact
variance ``w^T (A^T S^-1 A)^-1 w``, computed on the Markov-tree form of the GLS
error (``e_c = a_c e_v + xi_c``): for the part of a query inside node ``v``,
``e = alpha_v e_v + eta_v`` with ``alpha_v VS_v = sum_c alpha_c V_c`` and
``Var(eta_v) = sum_c (beta_c + alpha_c**2 V_c) - (alpha_v VS_v)**2 / VS_v``;
fully covered children have ``alpha = 1, beta = 0`` and empty ones vanish, so
only nodes holding run ends are visited (:func:`query_variance`).

References
----------
.. [1] C. Li, M. Hay, G. Miklau, Y. Wang. "A Data- and Workload-Aware Algorithm
   for Range Queries Under Differential Privacy", PVLDB 7(5), 2014, Section 4
   (workload reform by uniform expansion, GreedyH, least squares).
.. [2] M. Hay, V. Rastogi, G. Miklau, D. Suciu. "Boosting the Accuracy of
   Differentially Private Histograms Through Consistency", PVLDB 3(1), 2010
   (tree least squares).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from pandas_dp.algorithms.tree_inference import TreeVariances, constrained_inference, tree_variances
from pandas_dp.algorithms.tree_layout import TreeLayout, tree_layout
from pandas_dp.loss import PrivacyLoss

__all__ = ["BucketRuns", "bucket_runs", "GreedyHierarchy", "greedy_hierarchy", "level_shares",
           "HierarchyStrategy", "choose_strategy", "workload_error", "subsample_runs",
           "HierarchicalAnswers", "answer_hierarchy", "query_variance", "VariancePlan", "variance_plan",
           "plan_variance", "GREEDY_GRID", "EVAL_QUERIES"]

#: Number of candidate weights ``p = i / GREEDY_GRID`` tried per level (the paper's granularity, 100).
GREEDY_GRID = 100
#: Queries of the public subsample on which candidate strategies are compared exactly.
EVAL_QUERIES = 256
_CHUNK = 1 << 21


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


def _level_entries(br: BucketRuns, level: int, values: np.ndarray
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


def _level_t(br: BucketRuns, level: int, h: np.ndarray, node_total: np.ndarray) -> np.ndarray:
    """``T_v = sum_q (w_q|v . h)**2`` for every node of ``level``."""
    _, ev, sums, full = _level_entries(br, level, h)
    t = np.bincount(ev, weights=sums * sums, minlength=node_total.size)
    return t + full * node_total * node_total


@dataclass(frozen=True)
class GreedyHierarchy:
    """The strategy chosen by :func:`greedy_hierarchy` (depends on public inputs and the partition only).

    Attributes
    ----------
    layout : TreeLayout
        Binary tree over the buckets (level 0 = buckets).
    p : tuple of Fraction
        Weight ``p_l`` of the children's strategies on levels ``l = 1..h``.
    shares : tuple of Fraction
        Share of the stage-2 loss of every level ``0..h`` (exact, summing to 1).
    local_error : float
        The root's workload error ``tr(W M W^T)`` for unit noise variance.
    """

    layout: TreeLayout
    p: tuple[Fraction, ...]
    shares: tuple[Fraction, ...]
    local_error: float


def level_shares(p: tuple[Fraction, ...]) -> tuple[Fraction, ...]:
    """Per-level weights ``w_0 = prod p_l``, ``w_l = (1 - p_l) prod_{l' > l} p_l'`` (sum exactly 1).

    Examples
    --------
    >>> [str(w) for w in level_shares((Fraction(1, 2), Fraction(3, 4)))]
    ['3/8', '3/8', '1/4']
    """
    out = [Fraction(0)] * (len(p) + 1)
    above = Fraction(1)
    for level in range(len(p), 0, -1):
        out[level] = (1 - p[level - 1]) * above
        above *= p[level - 1]
    out[0] = above
    return tuple(out)


def greedy_hierarchy(br: BucketRuns, *, grid: int = GREEDY_GRID) -> GreedyHierarchy:
    """Choose the weighted binary hierarchy on the buckets for the workload (GreedyH, per level).

    Parameters
    ----------
    br : BucketRuns
        The workload on the buckets (public queries mapped onto the private partition).
    grid : int
        Candidate weights ``p = i / grid``, ``i = 1..grid``.

    Returns
    -------
    GreedyHierarchy

    Notes
    -----
    Bottom-up from the buckets (``M = 1``, ``err_j = sum_q w_qj**2``), each level
    takes the ``p`` minimising ``sum_v err_v(p)`` (module docstring; ties go to
    the larger ``p``), then updates ``err_v``, ``kappa_v = 1^T M_v 1`` and
    ``M_v 1``. Vectorized over nodes and candidate weights.
    """
    k = br.n_buckets
    layout = tree_layout(max(k, 1), 2)
    ones = np.ones(k)
    g = ones.copy()                                     # M_v 1 stacked over the nodes of a level
    kappa = ones.copy()
    err = _level_t(br, 0, ones, ones)
    cand = np.arange(grid, 0, -1, dtype=np.float64) / grid   # descending: argmin keeps the larger p
    chosen: list[Fraction] = []
    for level in range(1, layout.n_levels):
        big_k = layout.aggregate(kappa, level - 1)
        e_sum = float(layout.aggregate(err, level - 1).sum())
        t = _level_t(br, level, g, big_k)
        total = np.zeros(cand.size)
        step = max(1, _CHUNK // cand.size)
        for a in range(0, big_k.size, step):                      # bounded-memory chunks of nodes
            kk, tt = big_k[a:a + step], t[a:a + step]
            denom = cand[:, None] ** 2 + (1 - cand[:, None]) ** 2 * kk[None, :]
            total += (tt[None, :] / denom).sum(axis=1)
        objective = (e_sum - (1 - cand) ** 2 * total) / cand ** 2
        i = int(np.argmin(objective))
        p = float(cand[i])
        chosen.append(Fraction(int(round(p * grid)), grid))
        denom = p * p + (1 - p) ** 2 * big_k
        err = (layout.aggregate(err, level - 1) - (1 - p) ** 2 * t / denom) / (p * p)
        kappa = big_k / denom
        g = g / denom[np.arange(k) >> level]
    p_tuple = tuple(chosen)
    return GreedyHierarchy(layout=layout, p=p_tuple, shares=level_shares(p_tuple),
                           local_error=float(np.sum(err)))


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


def workload_error(layout: TreeLayout, br: BucketRuns | VariancePlan, shares: np.ndarray) -> float:
    """``sum_q Var(q)`` of the tree least squares when level ``l`` has noise variance ``1 / w_l**2``.

    The unit-scale form of the Laplace variance ``2 / (w_l epsilon)**2``: the ratio
    between two share vectors does not depend on epsilon.
    """
    plan = br if isinstance(br, VariancePlan) else variance_plan(layout, br)
    w = np.asarray(shares, dtype=np.float64)
    sigma2 = np.where(w > 0, 1.0 / np.where(w > 0, w, 1.0) ** 2, np.inf)
    return float(np.sum(plan_variance(plan, tree_variances(layout, sigma2))))


@dataclass(frozen=True)
class HierarchyStrategy:
    """The weighted hierarchy used in stage 2 (depends on public inputs and the partition only).

    Attributes
    ----------
    layout : TreeLayout
        Binary tree over the buckets (level 0 = buckets).
    shares : tuple of Fraction
        Exact share of the stage-2 loss of every level ``0..h`` (sum 1; 0 = not asked).
    greedy : GreedyHierarchy
        The paper's GreedyH choice (one weight per level), one of the candidates.
    errors : dict
        Workload error ``sum_q Var(q)`` (unit noise scale, on the evaluation subsample)
        of every candidate: ``"greedy"``, ``"uniform"``, ``"buckets"`` and the ``"chosen"`` shares.
    """

    layout: TreeLayout
    shares: tuple[Fraction, ...]
    greedy: GreedyHierarchy
    errors: dict[str, float]


def _exact_shares(w: np.ndarray) -> tuple[Fraction, ...]:
    """Rational shares summing exactly to 1 (levels below ``2**-24`` dropped; the leaves absorb the rest)."""
    w = np.asarray(w, dtype=np.float64) / float(np.sum(w))
    grid = 1 << 30
    upper = [Fraction(int(v * grid), grid) if v >= 2.0 ** -24 else Fraction(0) for v in w[1:]]
    return (1 - sum(upper, Fraction(0)), *upper)


def choose_strategy(br: BucketRuns, *, max_queries: int = EVAL_QUERIES, sweeps: int = 2) -> HierarchyStrategy:
    """Level shares of the bucket hierarchy with the least exact workload variance.

    Parameters
    ----------
    br : BucketRuns
        The workload on the buckets.
    max_queries : int
        Queries of the evaluation subsample (evenly spaced by index).
    sweeps : int
        Coordinate-descent sweeps over the levels.

    Returns
    -------
    HierarchyStrategy

    Notes
    -----
    Candidates: GreedyH (:func:`greedy_hierarchy`), the uniform split over the
    levels and all weight on the buckets. From the best, each level's share is
    multiplied by 1/4, 1/2, 2, 4 (or set to 0; an unasked level is tried at
    1/10 and 1/2 of the mean share) while the exact workload variance
    :func:`workload_error` decreases. Everything here is a function of public
    queries and the private partition only; no count is read.
    """
    greedy = greedy_hierarchy(br)
    layout = greedy.layout
    sub = variance_plan(layout, subsample_runs(br, max_queries))
    n_levels = layout.n_levels
    cands = {"greedy": np.array([float(s) for s in greedy.shares]),
             "uniform": np.full(n_levels, 1.0 / n_levels),
             "buckets": np.eye(1, n_levels).ravel()}
    errors = {name: workload_error(layout, sub, w) for name, w in cands.items()}
    best_name = min(errors, key=lambda name: errors[name])
    w, best = cands[best_name].copy(), errors[best_name]
    for _ in range(sweeps if n_levels > 1 else 0):
        improved = False
        for level in range(n_levels - 1, -1, -1):
            mean = 1.0 / n_levels
            tries = ([w[level] * f for f in (0.25, 0.5, 2.0, 4.0)] + ([0.0] if level > 0 else [])
                     if w[level] > 0 else [0.1 * mean, 0.5 * mean])
            for value in tries:
                trial = w.copy()
                trial[level] = value
                trial /= trial.sum()
                e = workload_error(layout, sub, trial)
                if e < best * (1 - 1e-3):
                    w, best, improved = trial, e, True
        if not improved:
            break
    shares = _exact_shares(w)
    errors["chosen"] = workload_error(layout, sub, np.array([float(s) for s in shares]))
    return HierarchyStrategy(layout=layout, shares=shares, greedy=greedy, errors=errors)


@dataclass(frozen=True)
class HierarchicalAnswers:
    """Noisy answers of the hierarchy and their least-squares estimates.

    Attributes
    ----------
    noisy : tuple of ndarray or None
        Noisy node sums per level (``None`` on a level with weight 0).
    level_losses : tuple of PrivacyLoss
        Exact loss of every level (zero where not noised).
    level_variances : ndarray
        Variance of the noise actually drawn on every level (``inf`` if not noised).
    estimates : ndarray
        GLS estimate of every bucket count.
    structure : TreeVariances
        Variance structure of the GLS estimator (for :func:`query_variance`).
    """

    noisy: tuple[np.ndarray | None, ...]
    level_losses: tuple[PrivacyLoss, ...]
    level_variances: np.ndarray
    estimates: np.ndarray
    structure: TreeVariances


def answer_hierarchy(bucket_counts: np.ndarray, strategy: HierarchyStrategy, *, loss: PrivacyLoss,
                     rng: Any = None) -> HierarchicalAnswers:
    """Noisy node sums of every weighted level, then the exact tree least squares.

    Parameters
    ----------
    bucket_counts : ndarray of int
        True bucket totals (reads the true data: the only use of it in stage 2).
    strategy : HierarchyStrategy
        Levels and their exact shares.
    loss : PrivacyLoss
        Stage-2 loss, split exactly by ``strategy.shares``.
    rng : numpy.random.Generator, optional
        ``None``: the secure source.

    Returns
    -------
    HierarchicalAnswers
    """
    layout = strategy.layout
    losses = loss.split(list(strategy.shares))
    true = np.asarray(bucket_counts, dtype=np.int64).reshape(layout.shape)
    noisy: list[np.ndarray | None] = []
    sigma2 = np.full(layout.n_levels, np.inf)
    for level in range(layout.n_levels):
        if level > 0:
            true = layout.aggregate(true, level - 1)
        if strategy.shares[level] == 0:
            noisy.append(None)
            continue
        noise = losses[level].noise(what="DAWA's hierarchical strategy")
        noisy.append(noise.add(true, rng))
        sigma2[level] = noise.variance()
    inference = constrained_inference(layout, noisy, sigma2)
    structure = TreeVariances(vdown=inference.vdown, child_var=inference.child_var,
                              variances=inference.variances)
    return HierarchicalAnswers(noisy=tuple(noisy), level_losses=tuple(losses), level_variances=sigma2,
                               estimates=inference.estimates[0], structure=structure)


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
    eq, ev, alpha, _ = _level_entries(br, 0, np.ones(br.n_buckets))
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


def plan_variance(plan: VariancePlan, structure: TreeVariances) -> np.ndarray:
    """Evaluate a :class:`VariancePlan` for the GLS variance structure of given level variances."""
    alpha = plan.alpha0
    beta = np.zeros(alpha.size)
    for level, (child, starts, parent, full_sib) in enumerate(plan.levels):
        v = structure.vdown[level].ravel()
        vs = structure.child_var[level + 1].ravel()[parent]
        vc = v[child]
        if starts.size:
            a_sum = np.add.reduceat(alpha * vc, starts)
            b_sum = np.add.reduceat(beta + alpha * alpha * vc, starts)
        else:
            a_sum, b_sum = alpha[:0], beta[:0]
        extra = np.where(full_sib >= 0, v[np.maximum(full_sib, 0)], 0.0)
        a_sum = a_sum + extra
        alpha = a_sum / vs
        beta = b_sum + extra - a_sum * alpha
    root = structure.variances[len(plan.levels)].ravel()
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
