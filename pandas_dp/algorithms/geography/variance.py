"""Error structure of the GLS estimate across a region tree (independent of the noisy values).

The GLS errors of :mod:`pandas_dp.algorithms.geography.inference` form a
Gaussian Markov tree: the error of a child is ``e_c = a_c e_v + xi_c`` with
``a_c = V_c / VS_v``, ``xi`` independent of every error on coarser levels,
independent across parents, and
``Cov(xi_c, xi_c') = V_c delta_cc' - V_c V_c' / VS_v`` within one parent.
Hence the exact variance of every estimate, top-down,
``P_c = a_c^2 P_v + V_c (1 - a_c)`` (the same in every cell), and the exact
variance of any weighted sum of regions of one level
(:meth:`RegionVariances.sum_variance`).  Cells are independent with the same
variances, so a sum of cells of one region has the sum of their variances.
Known totals over the ``n`` cells of the roots lower every variance by
``A_c^2 P_root / n`` (``A_c``: product of the shares ``a`` from the root).

References
----------
.. [1] M. Hay, V. Rastogi, G. Miklau, D. Suciu. "Boosting the Accuracy of
   Differentially Private Histograms Through Consistency", PVLDB 3(1), 2010,
   Appendix B.
.. [2] R. Cumings-Menon. "Least Squares Estimation for Hierarchical Data",
   arXiv:2404.13164, 2024 (variances of linear functions of the hierarchical
   GLS estimator).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pandas_dp.algorithms.geography.layout import RegionLayout, as_layout
from pandas_dp.errors import ParameterError

__all__ = ["RegionVariances", "region_variances", "check_level_variances"]


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` with ``0`` where ``den == 0`` (children known exactly)."""
    return np.divide(num, den, out=np.zeros(np.broadcast(num, den).shape), where=den > 0)


@dataclass(frozen=True)
class RegionVariances:
    """Variance structure of the GLS estimator (independent of the noisy values and of the cell).

    Attributes
    ----------
    layout : RegionLayout
        The tree.
    level_variances : ndarray
        Noise variance ``sigma2[l]`` per level (``inf``: not measured, ``0``: exact).
    vdown : tuple of ndarray
        Bottom-up variances ``V`` per level, one value per region.
    child_var : tuple of ndarray or None
        ``VS_v = sum_c V_c`` for levels above the finest (``None`` on the finest).
    share : tuple of ndarray or None
        ``a_c = V_c / VS_parent`` for levels ``>= 1`` (``None`` on level 0).
    gain : tuple of ndarray
        ``A_c``: product of the shares on the path from the root (1 on level 0).
    root_variance : ndarray
        Variance ``P`` of every root's estimate in one cell before any
        conditioning on root totals.
    root_total_cells : int or None
        Number of cells ``n`` when every root's total over the cells is known
        exactly (``None``: no such totals).
    variances : tuple of ndarray
        Exact error variance of every region's estimate, in every cell:
        ``P_c``, or ``P_c - A_c^2 P_root / n`` given root totals.
    """

    layout: RegionLayout
    level_variances: np.ndarray
    vdown: tuple[np.ndarray, ...]
    child_var: tuple[np.ndarray | None, ...]
    share: tuple[np.ndarray | None, ...]
    gain: tuple[np.ndarray, ...]
    root_variance: np.ndarray
    root_total_cells: int | None
    variances: tuple[np.ndarray, ...]

    def child_variance(self, level: int) -> np.ndarray:
        """``child_var[level]``: ``VS_v``, the summed children's variances of every region of ``level``.

        Set for every level above the finest (``level < leaf_level``).
        """
        vs = self.child_var[level]
        assert vs is not None, "the finest level has no children; callers pass a level above it"
        return vs

    def share_of(self, level: int) -> np.ndarray:
        """``share[level]``: ``a_c = V_c / VS_parent`` of every region of ``level >= 1``."""
        a = self.share[level]
        assert a is not None, "level 0 has no parent; callers pass a child level >= 1"
        return a

    def sum_variance(self, level: int, region_weights: np.ndarray,
                     cell_weights: np.ndarray | None = None) -> np.ndarray | float:
        """Exact error variance of ``sum_r sum_j w_r u_j est[level][r, j]``.

        Parameters
        ----------
        level : int
            The level whose regions are combined.
        region_weights : ndarray
            ``w``, shaped ``(n_regions[level],)``, or ``(n_regions[level], q)``
            for ``q`` combinations at once (e.g. 0/1 columns selecting sets of
            sibling or arbitrary regions).
        cell_weights : ndarray, optional
            ``u`` over the cells (``None``: a single cell).  Cells are
            independent with the same region covariance, so the variance is
            ``sum_j u_j^2`` times that of the region combination (less the
            part explained by known root totals, see Notes).

        Returns
        -------
        float or ndarray
            One variance, or ``q`` of them.  O(number of regions) per
            combination, vectorized.

        Notes
        -----
        Recursion to the roots with ``u_v = sum_{c in ch(v)} w_c a_c``:
        ``Var(w' e_l) = Var(u' e_{l-1}) + sum_v [sum_c w_c^2 V_c - (sum_c w_c V_c)^2 / VS_v]``;
        on level 0 (independent roots) ``Var(u' e_0) = sum_v u_v^2 P_v``.
        For siblings ``S`` of one parent ``v`` with ``A = sum_S V_c / VS_v``
        this is ``A^2 P_v + VS_v A (1 - A)``.  With the cells, the variance is
        ``sum_j u_j^2`` times this, minus ``(sum_j u_j)^2 / n sum_r u_r^2 P_r``
        when the roots' totals over the ``n`` cells are known.
        """
        lay = self.layout
        w = np.asarray(region_weights, dtype=np.float64)
        if w.shape[:1] != (lay.n_regions[level],) or w.ndim > 2:
            raise ParameterError(
                f"region_weights must have shape ({lay.n_regions[level]},) or "
                f"({lay.n_regions[level]}, q) for level {level}; got {w.shape}.")
        col = (slice(None),) + (None,) * (w.ndim - 1)
        acc = np.zeros(w.shape[1:])
        for k in range(level, 0, -1):
            v = self.vdown[k][col]
            t1 = lay.aggregate(w * w * v, k)
            t2 = lay.aggregate(w * v, k)
            acc = acc + np.sum(t1 - _ratio(t2 * t2, self.child_variance(k - 1)[col]), axis=0)
            w = lay.aggregate(w * self.share_of(k)[col], k)
        base = np.sum(w * w * self.root_variance[col], axis=0)
        s1, s2 = 1.0, 1.0
        if cell_weights is not None:
            u = np.asarray(cell_weights, dtype=np.float64).ravel()
            if self.root_total_cells is not None and u.size != self.root_total_cells:
                raise ParameterError(f"cell_weights must give one weight per cell "
                                     f"({self.root_total_cells}); got {u.size}.")
            s1, s2 = float(u.sum()), float(np.sum(u * u))
        acc = s2 * (acc + base)
        if self.root_total_cells is not None:
            acc = acc - s1 * s1 / self.root_total_cells * base
        return float(acc) if acc.ndim == 0 else acc


def check_level_variances(layout: RegionLayout, level_variances: Sequence[float] | npt.NDArray[np.float64]) -> np.ndarray:
    """Validated noise variance per level (``inf``: not measured, ``0``: exact; the finest finite)."""
    sigma2 = np.asarray([float(v) for v in level_variances], dtype=np.float64)
    if sigma2.shape != (layout.n_levels,):
        raise ParameterError(f"level_variances must give one variance per level ({layout.n_levels}); "
                             f"got {sigma2.size}.")
    if np.any(np.isnan(sigma2)) or np.any(sigma2 < 0):
        raise ParameterError(f"level variances must be >= 0 (inf: not measured); got {sigma2.tolist()}.")
    if not np.isfinite(sigma2[-1]):
        raise ParameterError(
            "The finest level must be measured (finite variance) or known exactly: otherwise its "
            "regions are not identifiable from their parents. Give it a share of the budget.")
    return sigma2


def region_variances(parents: RegionLayout | Sequence[np.ndarray | None],
                     level_variances: Sequence[float] | npt.NDArray[np.float64], *,
                     n_regions: Sequence[int] | None = None,
                     root_total_cells: int | None = None) -> RegionVariances:
    """Bottom-up and posterior variances of every region for given level noise variances.

    Parameters
    ----------
    parents : RegionLayout or sequence of array or None
        The region tree (see :func:`~pandas_dp.algorithms.geography.layout.region_layout`).
    level_variances : sequence of float
        ``sigma2[l]`` per level, coarse to fine: ``inf`` for a level that is
        not measured, ``0`` for a level known exactly.  The finest level must
        be finite.
    n_regions : sequence of int, optional
        Sizes per level when ``parents`` are plain arrays.
    root_total_cells : int, optional
        Number of cells ``n`` when every root's total over its cells is known
        exactly (the variances are then conditioned on it).

    Returns
    -------
    RegionVariances

    Examples
    --------
    >>> rv = region_variances([None, np.array([0, 0, 0])], [np.inf, 2.0])
    >>> rv.variances[0].tolist(), rv.variances[1].round(4).tolist()
    ([6.0], [2.0, 2.0, 2.0])
    """
    lay = as_layout(parents, n_regions)
    sigma2 = check_level_variances(lay, level_variances)
    top = lay.leaf_level
    vdown: list[np.ndarray] = [np.empty(0)] * lay.n_levels
    summed: list[np.ndarray] = [np.empty(0)] * top   # VS per level above the finest
    vdown[top] = np.full(lay.n_regions[top], sigma2[top])
    for lvl in range(top - 1, -1, -1):
        vs = lay.aggregate(vdown[lvl + 1], lvl + 1)
        summed[lvl] = vs
        s2 = sigma2[lvl]
        vdown[lvl] = vs if np.isinf(s2) else s2 * vs / (s2 + vs) if s2 > 0 else np.zeros_like(vs)
    shares: list[np.ndarray] = []   # a per level from 1
    gain: list[np.ndarray] = [np.ones(lay.n_regions[0])]
    root_var: list[np.ndarray] = [vdown[0]]   # the variance of each region's root, per region
    var: list[np.ndarray] = [np.empty(0)] * lay.n_levels
    var[0] = vdown[0]
    for lvl in range(1, lay.n_levels):
        a = _ratio(vdown[lvl], lay.expand(summed[lvl - 1], lvl))
        shares.append(a)
        gain.append(a * lay.expand(gain[lvl - 1], lvl))
        root_var.append(lay.expand(root_var[lvl - 1], lvl))
        var[lvl] = a * a * lay.expand(var[lvl - 1], lvl) + vdown[lvl] * (1.0 - a)
    if root_total_cells is not None:
        n = int(root_total_cells)
        var = [p - g * g * r / n for p, g, r in zip(var, gain, root_var)]
    for arrays in (vdown, var, gain, summed, shares):
        for arr in arrays:
            arr.setflags(write=False)
    child_var: list[np.ndarray | None] = [*summed, None]
    share: list[np.ndarray | None] = [None, *shares]
    return RegionVariances(layout=lay, level_variances=sigma2, vdown=tuple(vdown),
                           child_var=tuple(child_var), share=tuple(share), gain=tuple(gain),
                           root_variance=vdown[0],
                           root_total_cells=None if root_total_cells is None else int(root_total_cells),
                           variances=tuple(var))
