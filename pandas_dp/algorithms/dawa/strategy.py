"""DAWA stage 2: a workload-aware hierarchical strategy on the buckets, answered and inferred.

Given the buckets of stage 1, DAWA answers a *weighted hierarchy* of bucket
sums (binary tree over the buckets) chosen for the workload (GreedyH), then
estimates the bucket counts by least squares and spreads each evenly over its
bins.

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

Under zCDP (Gaussian noise)
---------------------------
The strategy is the matrix ``A`` of the weighted levels: level ``l``'s rows
are its node sums times ``w_l``. Every bucket lies in exactly one node per
level, so every column of ``A`` has the same L2 norm ``sqrt(sum_l w_l**2)``:
that is the strategy's L2 sensitivity (the largest column's norm). Discrete
Gaussian noise of ``sigma**2 = sum_l w_l**2 / (2 rho)`` on every row is
``rho``-zCDP; dividing level ``l``'s rows by ``w_l``, it is the same as noising
level ``l``'s node sums (L2 sensitivity 1) at ``rho_l = rho w_l**2 / sum w**2``
(these add up to ``rho``), which is how it is drawn: the level shares under
zCDP are ``w_l**2 / sum w**2``. The workload error of the weights is then
``sum w**2 * E(w) / (2 rho)`` (``E`` = :func:`workload_error`) against
``(sum w)**2 * 2 E(w) / epsilon**2`` under Laplace noise, so the candidates are
compared with the weights scaled to unit L2 norm instead of unit sum
(:func:`choose_strategy` with ``measure="zcdp"``).

Inference
---------
Each noised level is the vector of node sums plus noise; the estimate is the
exact tree least squares (:func:`~pandas_dp.algorithms.tree.inference.constrained_inference`),
whose exact query variances :mod:`pandas_dp.algorithms.dawa.runs` computes.

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

from pandas_dp.algorithms.dawa.runs import (BucketRuns, VariancePlan, level_entries, compact_variances,
                                            plan_variance, subsample_runs, variance_plan)
from pandas_dp.algorithms.tree.inference import TreeInference, TreeVariances, constrained_inference
from pandas_dp.algorithms.tree.layout import TreeLayout, tree_layout
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import PrivacyLoss

__all__ = ["GreedyHierarchy", "greedy_hierarchy", "level_shares", "HierarchyStrategy", "choose_strategy",
           "workload_error", "HierarchicalAnswers", "answer_hierarchy", "GREEDY_GRID", "EVAL_QUERIES"]

#: Number of candidate weights ``p = i / GREEDY_GRID`` tried per level (the paper's granularity, 100).
GREEDY_GRID = 100
#: Queries of the public subsample on which candidate strategies are compared exactly.
EVAL_QUERIES = 256
#: Queries GreedyH sees at most (all of them for every DPBench workload; bounds the cost at 2**20 bins).
GREEDY_QUERIES = 4096
_CHUNK = 1 << 21


def _level_t(br: BucketRuns, level: int, h: np.ndarray, node_total: np.ndarray) -> np.ndarray:
    """``T_v = sum_q (w_q|v . h)**2`` for every node of ``level``."""
    _, ev, sums, full = level_entries(br, level, h)
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


def workload_error(layout: TreeLayout, br: BucketRuns | VariancePlan, shares: np.ndarray) -> float:
    """``sum_q Var(q)`` of the tree least squares when level ``l`` has noise variance ``1 / w_l**2``.

    The unit-scale form of the Laplace variance ``2 / (w_l epsilon)**2``: the ratio
    between two share vectors does not depend on epsilon.
    """
    plan = br if isinstance(br, VariancePlan) else variance_plan(layout, br)
    w = np.asarray(shares, dtype=np.float64)
    sigma2 = np.where(w > 0, 1.0 / np.where(w > 0, w, 1.0) ** 2, np.inf)
    return float(np.sum(plan_variance(plan, compact_variances(layout, sigma2))))


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
        of every candidate (``"greedy"``, ``"uniform"``, ``"every s levels"``, ``"buckets"``) and of the
        ``"chosen"`` shares.
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


def _normalised(w: np.ndarray, measure: str) -> np.ndarray:
    """Weights scaled to sensitivity 1: unit sum (L1, pure) or unit L2 norm (zCDP)."""
    return w / (float(np.sqrt(np.sum(w * w))) if measure == "zcdp" else float(np.sum(w)))


def choose_strategy(br: BucketRuns, *, max_queries: int = EVAL_QUERIES, sweeps: int = 2,
                    measure: str = "pure") -> HierarchyStrategy:
    """Level shares of the bucket hierarchy with the least exact workload variance.

    Parameters
    ----------
    br : BucketRuns
        The workload on the buckets.
    max_queries : int
        Queries of the evaluation subsample (evenly spaced by index).
    sweeps : int
        Coordinate-descent sweeps over the levels.
    measure : {"pure", "zcdp"}
        The stage-2 loss's measure: weights are compared at unit L1 sensitivity (Laplace noise)
        or unit L2 sensitivity (Gaussian noise, module notes), and the returned shares are shares
        of epsilon (``w_l / sum w``) or of rho (``w_l**2 / sum w**2``).

    Returns
    -------
    HierarchyStrategy

    Notes
    -----
    Candidates: GreedyH (:func:`greedy_hierarchy`, on at most
    :data:`GREEDY_QUERIES` queries), the uniform split over the levels, the
    uniform split over every 2nd, 3rd or 4th level (a 4-, 8- or 16-ary tree) and
    all weight on the buckets. From the best, each level's share is
    multiplied by 1/4, 1/2, 2, 4 (or set to 0; an unasked level is tried at
    1/10 and 1/2 of the mean share) while the exact workload variance
    :func:`workload_error` decreases. Everything here is a function of public
    queries and the private partition only; no count is read.
    """
    greedy = greedy_hierarchy(subsample_runs(br, GREEDY_QUERIES))
    layout = greedy.layout
    sub = variance_plan(layout, subsample_runs(br, max_queries))
    n_levels = layout.n_levels
    cands = {"greedy": np.array([float(s) for s in greedy.shares]),
             "uniform": np.full(n_levels, 1.0 / n_levels),
             "buckets": np.eye(1, n_levels).ravel()}
    for step in (2, 3, 4):                      # uniform on every step-th level: a 2**step-ary tree
        if n_levels > step:
            cands[f"every {step} levels"] = (np.arange(n_levels) % step == 0) / np.ceil(n_levels / step)
    err = lambda w: workload_error(layout, sub, _normalised(w, measure))      # noqa: E731
    errors = {name: err(w) for name, w in cands.items()}
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
                e = err(trial)
                if e < best * (1 - 1e-3):
                    w, best, improved = trial, e, True
        if not improved:
            break
    shares = _exact_shares(w * w if measure == "zcdp" else w)
    exact = np.array([float(s) for s in shares])
    errors["chosen"] = workload_error(layout, sub, np.sqrt(exact) if measure == "zcdp" else exact)
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
    inference : TreeInference
        The exact tree least squares of the noisy answers (with its bottom-up pass, which the
        non-negative projection reads); ``estimates`` and ``structure`` are read from it.
    """

    noisy: tuple[np.ndarray | None, ...]
    level_losses: tuple[PrivacyLoss, ...]
    level_variances: np.ndarray
    inference: TreeInference

    @property
    def estimates(self) -> np.ndarray:
        """GLS estimate of every bucket count."""
        return self.inference.estimates[0]

    @property
    def structure(self) -> TreeVariances:
        """Variance structure of the GLS estimator (for :func:`query_variance`)."""
        inf = self.inference
        return TreeVariances(vdown=inf.vdown, child_var=inf.child_var, variances=inf.variances)


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
        try:
            noise = losses[level].noise(what="DAWA's hierarchical strategy")
        except ParameterError:
            if level == 0:
                raise
            noisy.append(None)          # a share too small for the sampler: the level is not asked
            continue
        noisy.append(noise.add(true, rng))
        sigma2[level] = noise.variance()
    return HierarchicalAnswers(noisy=tuple(noisy), level_losses=tuple(losses), level_variances=sigma2,
                               inference=constrained_inference(layout, noisy, sigma2))
