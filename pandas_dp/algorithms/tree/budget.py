"""Splitting epsilon across the noised levels of a tree, and predicted errors.

Each noised level is a partition of the domain (a flat histogram of
sensitivity 1), so the levels compose sequentially: ``sum_k epsilon_k <=
epsilon``.  Splits (Qardaji et al., Section 3.5):

* ``"uniform"``: ``epsilon / m`` on each of the ``m`` noised levels;
* ``"geometric"`` (Cormode et al.): each level gets ``b^(1/3)`` times its
  parent's budget, ``epsilon_k ∝ b^(-k/3)`` (leaves, ``k = 0``, get the most);
* ``"optimal"``: write the average range variance locally as
  ``E = sum_k a_k / epsilon_k^2`` (Eq. (5)) and set ``epsilon_k ∝ a_k^(1/3)``
  (Lagrange), recomputing ``a_k`` from the exact ``V_Avg`` after each update
  until the split stops moving.  By the envelope theorem ``a_k`` is
  proportional to ``dV_Avg / d sigma2_k`` at the current split, which is taken
  by finite differences of the exact ``V_Avg`` (Qardaji's approximation
  above ``EXACT_LIMIT`` leaves; for d-dim trees the node-usage approximation
  of Section 5).

References
----------
.. [1] W. Qardaji, W. Yang, N. Li. "Understanding Hierarchical Methods for
   Differentially Private Histograms", PVLDB 6(14), 2013, Sections 3.5, 5.
.. [2] G. Cormode et al. "Differentially Private Spatial Decompositions",
   ICDE 2012 (geometric budget).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import Literal

import numpy as np

from pandas_dp.algorithms.tree.inference import tree_variances
from pandas_dp.algorithms.tree.layout import TreeLayout
from pandas_dp.algorithms.tree.variance import (approx_average_range_variance,
                                                average_range_variance,
                                                raw_average_range_variance)

__all__ = ["BudgetSplit", "EXACT_LIMIT", "noised_levels", "level_shares", "split_epsilon",
           "predicted_average_variance"]

BudgetSplit = Literal["uniform", "geometric", "optimal"]

#: Largest 1-D domain for which predictions use the exact O(nodes) V_Avg.
EXACT_LIMIT = 1 << 16

_SHARE_GRID = 1 << 40

#: Levels whose optimal share falls below this are not noised at all.
MIN_SHARE = 1e-4


def noised_levels(layout: TreeLayout, *, include_root: bool) -> np.ndarray:
    """Boolean mask of the noised levels: all below the root, plus the root if asked.

    A single-cell domain (height 0) noises its only level.
    """
    mask = np.ones(layout.n_levels, dtype=bool)
    if layout.height > 0 and not include_root:
        mask[-1] = False
    return mask


def _usage_ddim(layout: TreeLayout, noised: np.ndarray) -> np.ndarray:
    """Average number of nodes per level a random box uses (Qardaji Section 5)."""
    b = layout.branching
    top = int(np.flatnonzero(noised)[-1])
    out = np.zeros(layout.n_levels)
    for k in np.flatnonzero(noised):
        side = (np.asarray(layout.level_shapes[k], dtype=np.float64) + 2.0) / 3.0
        if k == top:
            out[k] = np.prod(side)
        else:
            out[k] = sum((b - 1) * np.prod(np.delete(side, a)) for a in range(side.size))
    return out


def predicted_average_variance(layout: TreeLayout, level_variances: np.ndarray, *,
                               consistent: bool = True) -> float:
    """Average range-query error variance predicted for given level variances.

    Exact ``V_Avg`` for 1-D trees up to ``EXACT_LIMIT`` leaves, Qardaji's
    Algorithm 2 / Eq. (2) above it, and for d-dim trees the Section 5 node
    usage with constrained inference counted as a factor 1/3 below the top
    noised level (Section 5.3).
    """
    sigma2 = np.asarray(level_variances, dtype=np.float64)
    if layout.ndim > 1:
        noised = np.isfinite(sigma2)
        usage = _usage_ddim(layout, noised)
        if consistent:
            usage[: int(np.flatnonzero(noised)[-1])] /= 3.0
        return float(np.sum(usage[noised] * sigma2[noised]))
    if layout.n_leaves > EXACT_LIMIT:
        return approx_average_range_variance(layout, sigma2, consistent=consistent)
    if not consistent:
        return raw_average_range_variance(layout, sigma2)
    return average_range_variance(layout, tree_variances(layout, sigma2))


def level_shares(layout: TreeLayout, *, budget_split: BudgetSplit = "uniform",
                 include_root: bool = False, consistent: bool = True, variance_exponent: int = 2,
                 max_iter: int = 50, tol: float = 1e-6) -> np.ndarray:
    """Fraction of the loss given to each level (0 on levels that are not noised).

    Parameters
    ----------
    layout : TreeLayout
        The tree.
    budget_split : {"uniform", "geometric", "optimal"}
        How to split (see module notes).
    include_root : bool
        Noise the root too (Hay et al.'s ``H``).
    consistent : bool
        Whether constrained inference will be applied (changes the optimum).
    variance_exponent : int
        ``p`` in ``Var ∝ share**-p`` (:attr:`pandas_dp.privacy.loss.PrivacyLoss.variance_exponent`):
        2 for Laplace noise (pure epsilon), 1 for Gaussian noise (zCDP rho).
    max_iter, tol : int, float
        Stopping rule of the ``"optimal"`` iteration (max change of a share).

    Returns
    -------
    ndarray
        Shares summing to 1.

    Notes
    -----
    Minimising ``sum_k a_k share_k**-p`` subject to ``sum_k share_k = 1``
    gives ``share_k ∝ a_k**(1/(p+1))`` (Lagrange): the cube root of Qardaji's
    Section 3.5 for Laplace noise, the square root for Gaussian noise. The
    geometric split (Cormode et al., ``a_k ∝ b**-k`` nodes used per level)
    becomes ``b**(-k/(p+1))``: ``b**(-k/3)`` for Laplace, ``b**(-k/2)`` for Gaussian.
    """
    return np.array(_level_shares(layout, budget_split, include_root, consistent, variance_exponent, max_iter, tol))


@lru_cache(maxsize=256)
def _level_shares(layout: TreeLayout, budget_split: str, include_root: bool, consistent: bool,
                  variance_exponent: int, max_iter: int, tol: float) -> tuple[float, ...]:
    # Cached: the split depends only on public sizes, and "optimal" iterates.
    noised = noised_levels(layout, include_root=include_root)
    if budget_split == "uniform":
        shares = noised / noised.sum()
    elif budget_split == "geometric":
        top = layout.n_levels - 1
        w = _integer_roots([Fraction(layout.branching ** (top - k)) if noised[k] else Fraction(0)
                            for k in range(layout.n_levels)], variance_exponent + 1)
        shares = w / w.sum()
    elif budget_split == "optimal":
        shares = _optimal_shares(layout, noised, consistent, variance_exponent, max_iter, tol)
    else:
        raise ValueError(f"unknown budget_split {budget_split!r}")
    return tuple(float(v) for v in shares)


def _integer_roots(values: list[Fraction], n: int) -> np.ndarray:
    """Floats proportional to ``values ** (1 / n)``, the same on every machine.

    ``np.cbrt`` and ``np.power`` may use vector math libraries whose last bits
    depend on the CPU, and a last bit can move a share across the
    ``2**-40`` grid of :func:`split_epsilon`, so a seed would not give the
    same release everywhere.  Here each value is scaled by the largest to an
    exact rational ``q`` in ``[0, 1]`` and the root is the exact integer
    ``floor((q * 2**(53 n)) ** (1 / n))`` (at most ``2**53``, so exact as a
    float): integer arithmetic only.
    """
    top = max(values) if values else Fraction(0)
    if top <= 0:
        return np.zeros(len(values))
    out = np.empty(len(values))
    for i, v in enumerate(values):
        scaled = (v / top) * (1 << (53 * n))
        out[i] = float(_iroot(scaled.numerator // scaled.denominator, n))
    return out


def _iroot(x: int, n: int) -> int:
    """``floor(x ** (1 / n))`` for an integer ``x >= 0`` (integer Newton iteration)."""
    if x < 2:
        return x
    r = 1 << -(-x.bit_length() // n)  # >= the root
    while True:
        s = ((n - 1) * r + x // r ** (n - 1)) // n
        if s >= r:
            return r
        r = s


def _optimal_shares(layout: TreeLayout, noised: np.ndarray, consistent: bool, p: int,
                    max_iter: int, tol: float) -> np.ndarray:
    """Damped fixed-point iteration ``share_k ∝ a_k^(1/(p+1))`` (Qardaji Section 3.5, where ``p = 2``).

    Each step moves the shares to the geometric mean of the current split and
    the Lagrange split for the current ``a_k`` (undamped, the iteration can
    oscillate).  A level whose share falls below ``MIN_SHARE`` is dropped (not
    noised): GLS then ignores it anyway, and its budget is better spent
    elsewhere.  The leaf level is always kept.
    """
    shares = noised / noised.sum()
    if noised.sum() == 1:
        return shares
    exact = layout.ndim == 1 and layout.n_leaves <= EXACT_LIMIT
    for _ in range(max_iter):
        idx = np.flatnonzero(shares > 0)
        sigma2 = np.full(layout.n_levels, np.inf)
        sigma2[idx] = 2.0 / shares[idx] ** p
        base = predicted_average_variance(layout, sigma2, consistent=consistent)
        grad = np.zeros(layout.n_levels)
        for j in idx:
            bumped = sigma2.copy()
            step = 1e-6 * sigma2[j]
            bumped[j] += step
            grad[j] = (predicted_average_variance(layout, bumped, consistent=consistent)
                       - base) / step
        target = _integer_roots([Fraction(g) for g in np.maximum(grad, 0.0)], p + 1)
        new = np.sqrt(shares * target / target.sum())
        new /= new.sum()
        if exact:
            drop = (new < MIN_SHARE) & (np.arange(new.size) > 0)
            new[drop] = 0.0
        else:
            # Algorithm 2 assumes fan-out b between noised levels: keep all levels.
            new = np.where(noised, np.maximum(new, 0.1 / noised.sum()), 0.0)
        new /= new.sum()
        done = np.max(np.abs(new - shares)) < tol
        shares = new
        if done:
            break
    return shares


def split_epsilon(epsilon: Fraction, shares: np.ndarray) -> tuple[Fraction, ...]:
    """Exact rational per-level epsilons whose sum never exceeds ``epsilon``.

    Each share is rounded down to a multiple of ``2**-40`` (so the rational
    shares sum to at most 1), then multiplied by the exact ``epsilon``.
    Equal shares (uniform split) are kept exact: ``epsilon / m``.
    """
    eps = Fraction(epsilon)
    pos = shares[shares > 0]
    if pos.size and np.all(pos == pos[0]):
        m = pos.size
        return tuple(eps / m if s > 0 else Fraction(0) for s in shares)
    return tuple(eps * Fraction(int(np.floor(s * _SHARE_GRID)), _SHARE_GRID) for s in shares)
