"""Hierarchical histograms: Hay et al.'s H-bar and Qardaji et al.'s H_b^c.

:func:`release_tree` takes exact leaf counts, builds the tree of fan-out ``b``
(``b**d`` in d dims), splits ``epsilon`` across the noised levels, adds
integer discrete-Laplace noise of scale ``1 / epsilon_k`` to every node of
level ``k`` (each level is a partition, sensitivity 1; levels compose
sequentially), and post-processes: exact GLS constrained inference
(``consistent=True``), optionally non-negativity.  The returned
:class:`TreeRelease` answers 1-D range queries with exact error variances.

References
----------
.. [1] M. Hay, V. Rastogi, G. Miklau, D. Suciu. "Boosting the Accuracy of
   Differentially Private Histograms Through Consistency", PVLDB 3(1), 2010.
.. [2] W. Qardaji, W. Yang, N. Li. "Understanding Hierarchical Methods for
   Differentially Private Histograms", PVLDB 6(14), 2013.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np

from pandas_dp.algorithms import tree_variance as tvar
from pandas_dp.algorithms.branching import BranchingChoice, choose_branching
from pandas_dp.algorithms.tree_budget import BudgetSplit, level_shares, split_epsilon
from pandas_dp.algorithms.tree_inference import (TreeVariances, constrained_inference,
                                                 nonnegative_tree)
from pandas_dp.algorithms.tree_layout import TreeLayout, tree_layout
from pandas_dp._rational import to_fraction
from pandas_dp.noise import discrete_laplace, discrete_laplace_variance, noise_scale

__all__ = ["TreeRelease", "release_tree"]


@dataclass(frozen=True)
class TreeRelease:
    """A released tree: layout, per-level budgets and noise, node estimates.

    Attributes
    ----------
    layout : TreeLayout
        The tree (``layout.branching``, ``layout.height``).
    epsilon : Fraction
        Total budget spent (sum of ``level_epsilons``, at most the request).
    level_epsilons, level_scales : tuple
        Per level (index 0 = leaves): budget and discrete-Laplace scale
        (``Fraction(0)`` / ``None`` on a level that is not noised).
    level_variances : ndarray
        Variance of the noise actually drawn per level (``inf`` if not noised).
    noisy : tuple of ndarray or None
        Noisy integer counts per level.
    estimates : tuple of ndarray
        Published node estimates per level (GLS, non-negative GLS, or for
        ``consistent=False`` the noisy counts).
    variances : tuple of ndarray
        Error variance of every node estimate (exact unless ``nonnegative``).
    consistent, nonnegative, include_root : bool
        Post-processing flags.
    budget_split : str
        How epsilon was split.
    choice : BranchingChoice or None
        The automatic choice of ``b`` when ``branching="auto"``.
    structure : TreeVariances or None
        Variance structure of the GLS estimator (``V^down``, ``VS``, node
        variances) used for exact range variances; ``None`` without inference.
    """

    layout: TreeLayout
    epsilon: Fraction
    level_epsilons: tuple[Fraction, ...]
    level_scales: tuple[Fraction | None, ...]
    level_variances: np.ndarray
    noisy: tuple[np.ndarray | None, ...]
    estimates: tuple[np.ndarray, ...]
    variances: tuple[np.ndarray, ...]
    consistent: bool
    nonnegative: bool
    include_root: bool
    budget_split: str
    choice: BranchingChoice | None
    structure: TreeVariances | None

    @property
    def branching(self) -> int:
        """Fan-out ``b`` per axis."""
        return self.layout.branching

    @property
    def height(self) -> int:
        """Height ``h = ceil(log_b n)``."""
        return self.layout.height

    @property
    def variance_exact(self) -> bool:
        """False when non-negativity made the estimator non-linear (error bars approximate)."""
        return not self.nonnegative

    def leaf_estimates(self) -> np.ndarray:
        """Estimated leaf counts, shaped like the input counts."""
        return self.estimates[0]

    def leaf_variance(self) -> np.ndarray:
        """Error variance of each leaf estimate, shaped like the input counts."""
        return self.variances[0]

    def _ranges(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo = np.asarray(lo, dtype=np.int64).ravel()
        hi = np.asarray(hi, dtype=np.int64).ravel()
        n = self.layout.n_leaves
        if lo.shape != hi.shape or np.any(lo < 0) or np.any(hi > n) or np.any(lo >= hi):
            raise ValueError(f"ranges must satisfy 0 <= lo < hi <= {n}")
        return lo, hi

    def range_estimate(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Estimates of the half-open leaf ranges ``[lo, hi)`` (1-D trees).

        Consistent releases sum the leaf estimates (prefix sums, O(1) per
        range); ``consistent=False`` sums the fewest noisy nodes covering the
        range (``H_b``), O(h) per range.
        """
        lo, hi = self._ranges(lo, hi)
        if self.consistent:
            c = np.concatenate([[0.0], np.cumsum(self.estimates[0], dtype=np.float64)])
            return c[hi] - c[lo]
        noised = np.isfinite(self.level_variances)
        return tvar.raw_range_estimate(self.layout, self.estimates, noised, lo, hi)

    def range_variance(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Exact error variance of :meth:`range_estimate` (O(h) per range, vectorized)."""
        lo, hi = self._ranges(lo, hi)
        if self.consistent:
            return tvar.range_variance(self.layout, self.structure, lo, hi)
        return tvar.raw_range_variance(self.layout, self.level_variances, lo, hi)

    def average_range_variance(self) -> float:
        """Exact mean error variance over all ``N (N + 1) / 2`` ranges (``V_Avg``), O(nodes)."""
        if self.consistent:
            return tvar.average_range_variance(self.layout, self.structure)
        return tvar.raw_average_range_variance(self.layout, self.level_variances)


def release_tree(counts: np.ndarray, *, epsilon: float | Fraction,
                 branching: int | Literal["auto"] = "auto",
                 budget_split: BudgetSplit = "uniform", include_root: bool = False,
                 consistent: bool = True, nonnegative: bool = False,
                 rng: np.random.Generator | None = None) -> TreeRelease:
    """Release a hierarchical histogram of ``counts`` under ``epsilon``-DP.

    Parameters
    ----------
    counts : ndarray of int
        Exact counts on a public domain (1-D, or a d-dim grid).
    epsilon : float or Fraction
        Total budget; split across the noised levels (sequential composition).
    branching : int or "auto"
        Fan-out per axis; ``"auto"`` minimises the predicted average range
        variance (:func:`~pandas_dp.algorithms.branching.choose_branching`).
    budget_split : {"uniform", "geometric", "optimal"}
        Split of epsilon across levels.
    include_root : bool
        Also noise the root (Hay et al.'s tree); Qardaji's ``H_b`` does not.
    consistent : bool
        Apply exact GLS constrained inference (``H_b^c``); otherwise ranges use
        the fewest noisy nodes (``H_b``).
    nonnegative : bool
        Post-process to non-negative estimates that stay consistent up the
        tree (then the reported variances are the GLS ones, approximate).
    rng : numpy.random.Generator, optional
        ``None`` uses the cryptographically secure source (production).

    Returns
    -------
    TreeRelease

    Notes
    -----
    Level ``k`` gets ``epsilon_k = share_k * epsilon`` (exact rationals,
    ``sum_k epsilon_k <= epsilon``) and noise ``DLap(t_k)`` with
    ``t_k = noise_scale(1, epsilon_k)``, of variance ``2p/(1-p)^2``,
    ``p = exp(-1/t_k)``.

    Examples
    --------
    >>> rel = release_tree(np.arange(16), epsilon=1.0, branching=4,
    ...                    rng=np.random.default_rng(0))
    >>> rel.height, rel.level_epsilons
    (2, (Fraction(1, 2), Fraction(1, 2), Fraction(0, 1)))
    """
    counts = np.asarray(counts)
    eps = to_fraction(epsilon, name="epsilon")
    choice = None
    if isinstance(branching, str):
        choice = choose_branching(counts.shape, epsilon=float(eps), budget_split=budget_split,
                                  include_root=include_root, consistent=consistent)
        branching = choice.branching
    layout = tree_layout(counts.shape if counts.ndim > 1 else counts.size, int(branching))
    counts = counts.reshape(layout.shape).astype(np.int64)
    shares = level_shares(layout, budget_split=budget_split, include_root=include_root,
                          consistent=consistent)
    level_eps = split_epsilon(eps, shares)
    noised = [e > 0 for e in level_eps]
    scales: list[Fraction | None] = []
    sigma2 = np.full(layout.n_levels, np.inf)
    noisy: list[np.ndarray | None] = []
    true = counts
    for k in range(layout.n_levels):
        if k > 0:
            true = layout.aggregate(true, k - 1)
        if not noised[k]:
            scales.append(None)
            noisy.append(None)
            continue
        t = noise_scale(1, level_eps[k])
        scales.append(t)
        sigma2[k] = discrete_laplace_variance(t)
        noisy.append(true + discrete_laplace(t, true.shape, rng=rng))
    structure = None
    if consistent:
        inf = constrained_inference(layout, noisy, sigma2)
        structure = TreeVariances(vdown=inf.vdown, child_var=inf.child_var,
                                  variances=inf.variances)
        estimates = nonnegative_tree(layout, inf) if nonnegative else inf.estimates
        variances = inf.variances
    else:
        est, var = [], []
        for k in range(layout.n_levels):
            if noised[k]:
                value = noisy[k].astype(np.float64)
                est.append(np.maximum(value, 0.0) if nonnegative else value)
                var.append(np.full(layout.level_shapes[k], sigma2[k]))
            else:
                est.append(layout.aggregate(est[k - 1], k - 1))
                var.append(layout.aggregate(var[k - 1], k - 1))
        estimates, variances = tuple(est), tuple(var)
    return TreeRelease(layout=layout, epsilon=sum(level_eps, Fraction(0)),
                       level_epsilons=level_eps, level_scales=tuple(scales),
                       level_variances=sigma2, noisy=tuple(noisy), estimates=tuple(estimates),
                       variances=tuple(variances), consistent=consistent,
                       nonnegative=nonnegative, include_root=include_root,
                       budget_split=budget_split, choice=choice, structure=structure)
