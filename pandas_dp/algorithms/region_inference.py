"""Exact GLS across a public tree of regions, for every cell of a table at once.

Every region ``v`` of level ``l`` has a table of cells; level ``l`` is measured
with independent noise of variance ``sigma2[l]`` per value (``inf``: not
measured; ``0``: known exactly, e.g. public values).  The generalized least
squares (GLS) estimate of every region x cell subject to "parent = sum of
children, in every cell" is the two passes of Hay et al. generalised to any
fan-out (the same passes as :mod:`pandas_dp.algorithms.tree_inference`, with
levels numbered coarse to fine here):

* bottom-up: ``S_v = sum_c z_c``, ``VS_v = sum_c V_c``,
  ``V_v = sigma2 VS_v / (sigma2 + VS_v)`` and
  ``z_v = (VS_v y_v + sigma2 S_v) / (sigma2 + VS_v)`` (inverse-variance
  weighting of the region's own measurement with the sum of its children);
* top-down: ``est_c = z_c + a_c (est_v - S_v)`` with ``a_c = V_c / VS_v``:
  the parent's residual goes to the children in proportion to their
  bottom-up variances.

The weights depend only on the tree and the level variances, never on the
cell, so every pass is one vectorized operation per level over all regions
and cells (``np.add.reduceat`` over the children grouped by parent).

Error structure.  The GLS errors form a Gaussian Markov tree: the error of a
child is ``e_c = a_c e_v + xi_c`` with ``xi`` independent of every error on
coarser levels, independent across parents, and
``Cov(xi_c, xi_c') = V_c delta_cc' - V_c V_c' / VS_v`` within one parent.
Hence the exact variance of every estimate, top-down,
``P_c = a_c^2 P_v + V_c (1 - a_c)`` (the same in every cell), and the exact
variance of any weighted sum of regions of one level
(:meth:`RegionVariances.sum_variance`): with ``u_v = sum_c w_c a_c``,
``Var(sum_c w_c e_c) = Var(sum_v u_v e_v)
+ sum_v [sum_c w_c^2 V_c - (sum_c w_c V_c)^2 / VS_v]``, recursing to the
roots.  Cells are independent with the same variances, so a sum of cells of
one region has the sum of their variances.

Public totals over cells.  When the total over all cells of every root
(level-0 region) is public (e.g. the national population), the GLS estimate
subject to it too is closed-form: the per-cell errors have covariance
``Sigma (x) I`` (regions x cells), so conditioning on a root's total moves
every descendant ``c`` by ``A_c (T - t_root) / n`` in every one of the ``n``
cells, with ``A_c`` the product of the shares ``a`` on the path from the root
(the gain of ``e_c`` on ``e_root``), and lowers its variance by
``A_c^2 P_root / n``.

References
----------
.. [1] M. Hay, V. Rastogi, G. Miklau, D. Suciu. "Boosting the Accuracy of
   Differentially Private Histograms Through Consistency", PVLDB 3(1), 2010,
   Section 4.1 and Appendix B.
.. [2] R. Cumings-Menon. "Least Squares Estimation for Hierarchical Data",
   arXiv:2404.13164, 2024 (the two passes on a census geography equal the GLS
   estimator; variances of linear functions of it).
.. [3] J. M. Abowd et al. "The 2020 Census Disclosure Avoidance System TopDown
   Algorithm", Harvard Data Science Review, 2022 (noisy tables per geographic
   level, consistency across the geography).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pandas_dp.algorithms.region_layout import RegionLayout, region_layout
from pandas_dp.errors import ParameterError

__all__ = ["RegionVariances", "RegionInference", "region_variances", "region_inference",
           "as_layout"]


def as_layout(parents: RegionLayout | Sequence[np.ndarray | None],
              n_regions: Sequence[int | None] | None = None,
              tables: Sequence[np.ndarray | None] | None = None) -> RegionLayout:
    """A :class:`RegionLayout` as given, or built from plain parent codes.

    Without ``n_regions``, the sizes of the levels that have a table in
    ``tables`` are read from the tables' first axis.
    """
    if isinstance(parents, RegionLayout):
        return parents
    if n_regions is None and tables is not None and len(tables) == len(parents):
        n_regions = [None if t is None else int(np.shape(t)[0]) for t in tables]
    return region_layout(parents, n_regions)


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
            acc = acc + np.sum(t1 - _ratio(t2 * t2, self.child_var[k - 1][col]), axis=0)
            w = lay.aggregate(w * self.share[k][col], k)
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


@dataclass(frozen=True)
class RegionInference:
    """Result of the two GLS passes, per level (coarse to fine), cells on the trailing axes.

    Attributes
    ----------
    structure : RegionVariances
        The variance structure (``V``, ``VS``, ``a``, exact variances ``P``).
    z : tuple of ndarray
        Bottom-up estimates per level.
    child_sum : tuple of ndarray or None
        ``S_v`` (sum of the children's ``z``) for levels above the finest.
    estimates : tuple of ndarray
        GLS estimates, consistent: every parent equals the sum of its children
        in every cell (and every root's cells sum to its total when given).
    root_totals : ndarray or None
        Public totals over the cells of every root, when given.
    """

    structure: RegionVariances
    z: tuple[np.ndarray, ...]
    child_sum: tuple[np.ndarray | None, ...]
    estimates: tuple[np.ndarray, ...]
    root_totals: np.ndarray | None = None

    @property
    def layout(self) -> RegionLayout:
        """The region tree."""
        return self.structure.layout

    @property
    def variances(self) -> tuple[np.ndarray, ...]:
        """Exact error variance of every region's estimate (one value per region, every cell)."""
        return self.structure.variances


def _level_variances(layout: RegionLayout, level_variances: Sequence[float]) -> np.ndarray:
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
                     level_variances: Sequence[float], *,
                     n_regions: Sequence[int] | None = None,
                     root_total_cells: int | None = None) -> RegionVariances:
    """Bottom-up and posterior variances of every region for given level noise variances.

    Parameters
    ----------
    parents : RegionLayout or sequence of array or None
        The region tree (see :func:`~pandas_dp.algorithms.region_layout.region_layout`).
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
    sigma2 = _level_variances(lay, level_variances)
    top = lay.leaf_level
    vdown: list[np.ndarray] = [np.empty(0)] * lay.n_levels
    child_var: list[np.ndarray | None] = [None] * lay.n_levels
    vdown[top] = np.full(lay.n_regions[top], sigma2[top])
    for lvl in range(top - 1, -1, -1):
        vs = lay.aggregate(vdown[lvl + 1], lvl + 1)
        child_var[lvl] = vs
        s2 = sigma2[lvl]
        vdown[lvl] = vs if np.isinf(s2) else s2 * vs / (s2 + vs) if s2 > 0 else np.zeros_like(vs)
    share: list[np.ndarray | None] = [None] * lay.n_levels
    gain: list[np.ndarray] = [np.ones(lay.n_regions[0])]
    root_var: list[np.ndarray] = [vdown[0]]   # the variance of each region's root, per region
    var: list[np.ndarray] = [np.empty(0)] * lay.n_levels
    var[0] = vdown[0]
    for lvl in range(1, lay.n_levels):
        a = _ratio(vdown[lvl], lay.expand(child_var[lvl - 1], lvl))
        share[lvl] = a
        gain.append(a * lay.expand(gain[lvl - 1], lvl))
        root_var.append(lay.expand(root_var[lvl - 1], lvl))
        var[lvl] = a * a * lay.expand(var[lvl - 1], lvl) + vdown[lvl] * (1.0 - a)
    if root_total_cells is not None:
        n = int(root_total_cells)
        var = [p - g * g * r / n for p, g, r in zip(var, gain, root_var)]
    for arrays in (vdown, var, gain, child_var[:-1], share[1:]):
        for arr in arrays:
            arr.setflags(write=False)
    return RegionVariances(layout=lay, level_variances=sigma2, vdown=tuple(vdown),
                           child_var=tuple(child_var), share=tuple(share), gain=tuple(gain),
                           root_variance=vdown[0],
                           root_total_cells=None if root_total_cells is None else int(root_total_cells),
                           variances=tuple(var))


def _cells_shape(layout: RegionLayout, noisy: Sequence[np.ndarray | None],
                 sigma2: np.ndarray) -> tuple[int, ...]:
    if len(noisy) != layout.n_levels:
        raise ParameterError(f"noisy must give one table (or None) per level ({layout.n_levels}); "
                             f"got {len(noisy)}.")
    cells: tuple[int, ...] | None = None
    for lvl, (table, s2) in enumerate(zip(noisy, sigma2)):
        if np.isfinite(s2) and table is None:
            raise ParameterError(f"Level {lvl} has a finite variance but no table; pass its noisy "
                                 f"(or exact) table, or variance inf if it was not measured.")
        if table is None or not np.isfinite(s2):
            continue
        shape = np.shape(table)
        if shape[:1] != (layout.n_regions[lvl],) or (cells is not None and shape[1:] != cells):
            raise ParameterError(
                f"The table of level {lvl} must have shape ({layout.n_regions[lvl]}, *cells) with the "
                f"same cells on every level; got {shape}.")
        cells = shape[1:]
    return cells if cells is not None else ()


def region_inference(noisy: Sequence[np.ndarray | None],
                     parents: RegionLayout | Sequence[np.ndarray | None],
                     level_variances: Sequence[float], *,
                     n_regions: Sequence[int] | None = None,
                     root_totals: np.ndarray | None = None) -> RegionInference:
    """Exact GLS estimate of every region x cell from noisy tables per level.

    Parameters
    ----------
    noisy : sequence of ndarray or None
        ``noisy[l]`` shaped ``(n_regions[l], *cells)`` (the same cells on every
        level), ``None`` for a level that is not measured.  A level with
        variance 0 holds exact (public) values, which must be consistent with
        the other exact levels.
    parents : RegionLayout or sequence of array or None
        The region tree, coarse to fine.
    level_variances : sequence of float
        Noise variance per value on each level (``inf``: not measured; ``0``:
        exact).  The finest level must be finite.
    n_regions : sequence of int, optional
        Sizes per level when ``parents`` are plain arrays.
    root_totals : ndarray, optional
        Public total over all cells of every root (level-0 region), shaped
        ``(n_regions[0],)``, e.g. the national population: the estimate is
        then the GLS estimate subject to these totals too.

    Returns
    -------
    RegionInference
        GLS estimates (consistent in every cell) and their exact variances.
        O(regions x cells), one vectorized pass per level and direction.

    Examples
    --------
    >>> y = [np.array([[10.0]]), np.array([[4.0], [5.0]])]
    >>> inf = region_inference(y, [None, np.array([0, 0])], [1.0, 1.0])
    >>> [e.ravel().round(4).tolist() for e in inf.estimates]
    [[9.6667], [4.3333, 5.3333]]
    """
    lay = as_layout(parents, n_regions, noisy)
    sigma2 = _level_variances(lay, level_variances)
    cells = _cells_shape(lay, noisy, sigma2)
    width = int(np.prod(cells)) if cells else 1
    totals = None
    if root_totals is not None:
        totals = np.asarray(root_totals, dtype=np.float64)
        if totals.shape != (lay.n_regions[0],) or not np.all(np.isfinite(totals)):
            raise ParameterError(f"root_totals must give one finite total per root "
                                 f"({lay.n_regions[0]},); got shape {totals.shape}.")
    structure = region_variances(lay, sigma2, root_total_cells=None if totals is None else width)

    def table(lvl: int) -> np.ndarray:
        return np.asarray(noisy[lvl], dtype=np.float64).reshape(lay.n_regions[lvl], width)

    top = lay.leaf_level
    z: list[np.ndarray] = [np.empty(0)] * lay.n_levels
    child_sum: list[np.ndarray | None] = [None] * lay.n_levels
    z[top] = table(top)
    for lvl in range(top - 1, -1, -1):
        s = lay.aggregate(z[lvl + 1], lvl + 1)
        child_sum[lvl] = s
        s2 = sigma2[lvl]
        if np.isinf(s2):
            z[lvl] = s
        elif s2 == 0:
            z[lvl] = table(lvl)
        else:
            vs = structure.child_var[lvl][:, None]
            z[lvl] = (vs * table(lvl) + s2 * s) / (s2 + vs)
    est: list[np.ndarray] = [np.empty(0)] * lay.n_levels
    est[0] = z[0]
    for lvl in range(1, lay.n_levels):
        resid = lay.expand(est[lvl - 1] - child_sum[lvl - 1], lvl)
        est[lvl] = z[lvl] + structure.share[lvl][:, None] * resid
    if totals is not None:
        # Condition on the roots' totals: descendants move by A_c (T - t_root) / n in every cell.
        shift = np.where(structure.root_variance > 0, (totals - est[0].sum(axis=1)) / width, 0.0)
        for lvl in range(lay.n_levels):
            est[lvl] = est[lvl] + (structure.gain[lvl] * shift)[:, None]
            if lvl + 1 < lay.n_levels:
                shift = lay.expand(shift, lvl + 1)

    def shaped(arrays: list) -> tuple:
        return tuple(None if a is None else a.reshape((lay.n_regions[i],) + cells)
                     for i, a in enumerate(arrays))

    return RegionInference(structure=structure, z=shaped(z), child_sum=shaped(child_sum),
                           estimates=shaped(est), root_totals=totals)
