"""Hierarchical histograms: Hay et al.'s H-bar and Qardaji et al.'s H_b^c.

:func:`plan_tree` works from public inputs only (the domain's shape, the
privacy loss and the knobs): it builds the tree of fan-out ``b`` (``b**d`` in
d dims), splits the loss exactly across the noised levels and asks each
level's part for the noise of one partition of the domain (each level is a
flat histogram of sensitivity 1; levels compose sequentially). The release
layer calls it before the charge, so a loss too small for some level is
refused before anything is spent. :func:`release_tree` then adds the planned
integer noise to every node of every noised level and post-processes: exact
GLS constrained inference (``consistent=True``), optionally non-negativity.
The returned :class:`TreeRelease` answers 1-D range queries with exact error
variances.

References
----------
.. [1] M. Hay, V. Rastogi, G. Miklau, D. Suciu. "Boosting the Accuracy of
   Differentially Private Histograms Through Consistency", PVLDB 3(1), 2010.
.. [2] W. Qardaji, W. Yang, N. Li. "Understanding Hierarchical Methods for
   Differentially Private Histograms", PVLDB 6(14), 2013.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Literal

import numpy as np

import pandas_dp.algorithms.tree.variance as tvar
from pandas_dp.algorithms.tree.branching import BranchingChoice, choose_branching
from pandas_dp.algorithms.tree.budget import BudgetSplit, level_shares
from pandas_dp.algorithms.tree.inference import (TreeVariances, constant_level, constrained_inference,
                                                 nonnegative_tree)
from pandas_dp.algorithms.tree.layout import TreeLayout, shape_dims, tree_layout
from pandas_dp.privacy.loss import UNIT, Noise, PrivacyLoss, Sensitivity

__all__ = ["TreePlan", "TreeRelease", "plan_tree", "release_tree"]


@dataclass(frozen=True)
class TreePlan:
    """The public part of a tree release: layout, per-level losses and the noise each level gets.

    Attributes
    ----------
    layout : TreeLayout
        The tree.
    loss : PrivacyLoss
        What the release spends: the sum of ``level_losses`` (at most the loss asked for).
    level_losses : tuple of PrivacyLoss
        Per level (index 0 = leaves); zero on a level that is not noised.
    level_noise : tuple of Noise or None
        The noise of each noised level (``None`` on the others).
    budget_split, include_root, consistent
        The knobs the plan was made with.
    choice : BranchingChoice or None
        The automatic choice of ``b`` when ``branching="auto"``.
    """

    layout: TreeLayout
    loss: PrivacyLoss
    level_losses: tuple[PrivacyLoss, ...]
    level_noise: tuple[Noise | None, ...]
    budget_split: str
    include_root: bool
    consistent: bool
    choice: BranchingChoice | None

    @property
    def level_variances(self) -> np.ndarray:
        """Variance of one noise value per level (``inf`` where a level is not noised)."""
        return np.array([np.inf if n is None else n.variance() for n in self.level_noise])


def plan_tree(shape: int | tuple[int, ...], *, loss: PrivacyLoss, branching: int | Literal["auto"] = "auto",
              budget_split: BudgetSplit = "uniform", include_root: bool = False, consistent: bool = True,
              sensitivity: Sensitivity | Callable[[int], Sensitivity] = UNIT) -> TreePlan:
    """Plan a hierarchical release from public information only (no data, no budget).

    Parameters
    ----------
    shape : int or tuple of int
        The public domain's shape (leaf count, or grid shape).
    loss : PrivacyLoss
        The whole release's privacy loss, split across the noised levels.
    branching : int or "auto"
        Fan-out per axis; ``"auto"`` minimises the predicted average range
        variance (:func:`~pandas_dp.algorithms.tree.branching.choose_branching`).
    budget_split : {"uniform", "geometric", "optimal"}
        Split of the loss across levels.
    include_root : bool
        Also noise the root (Hay et al.'s tree); Qardaji's ``H_b`` does not.
    consistent : bool
        Whether constrained inference will run (it changes the optimal split).
    sensitivity : Sensitivity or callable
        How far one privacy unit moves one level's counts (default: one row, 1), or a
        function of the number of cells a node of the level covers (at most), for
        bounds whose sensitivity grows as nodes merge cells (a privacy unit's cells).

    Returns
    -------
    TreePlan

    Raises
    ------
    ParameterError
        When a level's share of the loss is too small for the noise sampler.

    Notes
    -----
    Level ``k`` gets the exact part ``share_k * loss`` (rationals; the parts
    never add up to more than the loss) and the noise that part calibrates for
    ``sensitivity``: discrete Laplace of scale ``L1 / epsilon_k`` for a pure
    loss, rounded up to an exact rational.
    """
    dims = shape_dims(shape)
    choice = None
    if isinstance(branching, str):
        choice = choose_branching(dims, loss=loss, budget_split=budget_split,
                                  include_root=include_root, consistent=consistent)
        branching = choice.branching
    layout = tree_layout(dims if len(dims) > 1 else dims[0], int(branching))
    shares = level_shares(layout, budget_split=budget_split, include_root=include_root, consistent=consistent,
                          variance_exponent=loss.variance_exponent)
    parts = loss.split(shares)
    n_noised = int((shares > 0).sum())
    what = (f"one level of this {n_noised}-level tree (a larger branching gives fewer levels)")
    def level_sensitivity(k: int) -> Sensitivity:
        if not callable(sensitivity):
            return sensitivity
        span = int(layout.branching) ** k
        return sensitivity(math.prod(min(span, n) for n in layout.shape))

    noise = tuple(part.noise(level_sensitivity(k), what=what) if part.amount > 0 else None
                  for k, part in enumerate(parts))
    total = loss.zero()
    for part in parts:
        total = total + part
    return TreePlan(layout=layout, loss=total, level_losses=parts, level_noise=noise, budget_split=budget_split,
                    include_root=include_root, consistent=consistent, choice=choice)


@dataclass(frozen=True)
class TreeRelease:
    """A released tree: its plan (layout, per-level losses and noise) and node estimates.

    Attributes
    ----------
    plan : TreePlan
        Layout, per-level losses and noise, knobs, the branching choice.
    level_variances : ndarray
        Variance of the noise actually drawn per level (``inf`` if not noised).
    noisy : tuple of ndarray or None
        Noisy integer counts per level.
    estimates : tuple of ndarray
        Published node estimates per level (GLS, non-negative GLS, or for
        ``consistent=False`` the noisy counts).
    variances : tuple of ndarray
        Error variance of every node estimate (exact unless ``nonnegative``).
    nonnegative : bool
        Whether the non-negative post-processing ran.
    structure : TreeVariances or None
        Variance structure of the GLS estimator (``V^down``, ``VS``, node
        variances) used for exact range variances; ``None`` without inference.
    """

    plan: TreePlan
    level_variances: np.ndarray
    noisy: tuple[np.ndarray | None, ...]
    estimates: tuple[np.ndarray, ...]
    variances: tuple[np.ndarray, ...]
    nonnegative: bool
    structure: TreeVariances | None

    @property
    def layout(self) -> TreeLayout:
        """The tree (``layout.branching``, ``layout.height``)."""
        return self.plan.layout

    @property
    def loss(self) -> PrivacyLoss:
        """The loss spent (sum of the levels' losses)."""
        return self.plan.loss

    @property
    def level_losses(self) -> tuple[PrivacyLoss, ...]:
        """Per-level losses (zero on a level that is not noised)."""
        return self.plan.level_losses

    @property
    def level_noise(self) -> tuple[Noise | None, ...]:
        """Per-level noise (``None`` on a level that is not noised)."""
        return self.plan.level_noise

    @property
    def consistent(self) -> bool:
        """Whether constrained inference ran (``H_b^c``)."""
        return self.plan.consistent

    @property
    def _structure(self) -> TreeVariances:
        """The GLS variance structure (set whenever constrained inference ran)."""
        assert self.structure is not None
        return self.structure

    @property
    def include_root(self) -> bool:
        """Whether the root was noised."""
        return self.plan.include_root

    @property
    def budget_split(self) -> str:
        """How the loss was split across levels."""
        return self.plan.budget_split

    @property
    def choice(self) -> BranchingChoice | None:
        """The automatic choice of ``b``, if any."""
        return self.plan.choice

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
            return tvar.range_variance(self.layout, self._structure, lo, hi)
        return tvar.raw_range_variance(self.layout, self.level_variances, lo, hi)

    def box_variance(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Exact error variance of the sums of the leaf estimates in the boxes ``[lo, hi)``, shape ``(q, d)``.

        Trees of any dimension: the GLS recursion over every node (consistent
        releases, :func:`~pandas_dp.algorithms.tree.variance.box_variance`), or
        the sum of the independent noisy leaves' variances (``consistent=False``).
        """
        lo = np.atleast_2d(np.asarray(lo, dtype=np.int64))
        hi = np.atleast_2d(np.asarray(hi, dtype=np.int64))
        shape = np.asarray(self.layout.shape)
        if lo.shape != hi.shape or lo.shape[1] != shape.size or np.any(lo < 0) or np.any(hi > shape) \
                or np.any(lo >= hi):
            raise ValueError(f"boxes must satisfy 0 <= lo < hi <= {tuple(shape.tolist())} per axis")
        if self.consistent:
            return tvar.box_variance(self.layout, self._structure, lo, hi)
        return np.array([float(self.variances[0][tuple(slice(int(a), int(b)) for a, b in zip(lq, hq))].sum())
                         for lq, hq in zip(lo, hi)])

    def average_range_variance(self) -> float:
        """Exact mean error variance over all ``N (N + 1) / 2`` ranges (``V_Avg``), O(nodes)."""
        if self.consistent:
            return tvar.average_range_variance(self.layout, self._structure)
        return tvar.raw_average_range_variance(self.layout, self.level_variances)


def release_tree(counts: np.ndarray, plan: TreePlan | None = None, *, loss: PrivacyLoss | None = None,
                 nonnegative: bool = False, rng: Any = None, overwrite_counts: bool = False,
                 **knobs: Any) -> TreeRelease:
    """Release a hierarchical histogram of ``counts`` with the noise of ``plan``.

    Parameters
    ----------
    counts : ndarray of int
        Exact counts on a public domain (1-D, or a d-dim grid).
    plan : TreePlan, optional
        From :func:`plan_tree` on ``counts.shape``; without it, one is made here
        from ``loss`` and ``knobs`` (``branching``, ``budget_split``,
        ``include_root``, ``consistent``, ``sensitivity``).
    loss : PrivacyLoss, optional
        The release's loss when no plan is given.
    nonnegative : bool
        Post-process to non-negative estimates that stay consistent up the
        tree (then the reported variances are the GLS ones, approximate).
    rng : numpy.random.Generator, optional
        ``None`` uses the cryptographically secure source (production).
    overwrite_counts : bool
        ``counts`` may be overwritten (a contiguous writeable int64 array then
        becomes the noisy leaves, ``noisy[0]``, with no copy); the release layer
        passes the engine's fresh counts this way. Otherwise they are copied.

    Returns
    -------
    TreeRelease

    Notes
    -----
    Every node of noised level ``k`` gets an independent draw of the level's
    noise (discrete Laplace of scale ``t_k`` and variance ``2p/(1-p)^2``,
    ``p = exp(-1/t_k)``, for a pure loss); the levels' variances drive the
    exact GLS inference and the reported error bars. The exact counts of every
    level are summed first, then each noised level gets its draws added in
    place, leaves first (the order of the draws).

    Examples
    --------
    >>> from fractions import Fraction
    >>> from pandas_dp.privacy.loss import PureDP
    >>> rel = release_tree(np.arange(16), loss=PureDP(Fraction(1)), branching=4,
    ...                    rng=np.random.default_rng(0))
    >>> rel.height, [str(part.amount) for part in rel.level_losses]
    (2, ['1/2', '1/2', '0'])
    """
    counts = np.asarray(counts)
    if plan is None:
        if loss is None:
            raise TypeError("release_tree needs a plan or a loss")
        plan = plan_tree(counts.shape if counts.ndim > 1 else counts.size, loss=loss, **knobs)
    layout = plan.layout
    leaves = counts.reshape(layout.shape)
    if not (overwrite_counts and leaves.dtype == np.int64 and leaves.flags.writeable
            and leaves.flags.c_contiguous and np.may_share_memory(leaves, counts)):
        leaves = leaves.astype(np.int64)
    sigma2 = plan.level_variances
    true = [leaves]
    for k in range(1, layout.n_levels):
        true.append(layout.aggregate(true[k - 1], k - 1))
    noisy: list[np.ndarray | None] = [None if noise is None else noise.add_in_place(true[k], rng)
                                      for k, noise in enumerate(plan.level_noise)]
    del true
    structure = None
    if plan.consistent:
        inf = constrained_inference(layout, noisy, sigma2, keep_bottom_up=nonnegative)
        structure = TreeVariances(vdown=inf.vdown, child_var=inf.child_var,
                                  variances=inf.variances)
        estimates = nonnegative_tree(layout, inf) if nonnegative else inf.estimates
        variances = inf.variances
    else:
        est, var = [], []
        for k in range(layout.n_levels):
            level_noisy = noisy[k]
            if level_noisy is not None:
                value = level_noisy.astype(np.float64)
                est.append(np.maximum(value, 0.0, out=value) if nonnegative else value)
                var.append(constant_level(sigma2[k], layout.level_shapes[k]))
            else:
                est.append(layout.aggregate(est[k - 1], k - 1))
                var.append(layout.aggregate(var[k - 1], k - 1))
        estimates, variances = tuple(est), tuple(var)
    return TreeRelease(plan=plan, level_variances=sigma2, noisy=tuple(noisy), estimates=tuple(estimates),
                       variances=tuple(variances), nonnegative=nonnegative, structure=structure)
