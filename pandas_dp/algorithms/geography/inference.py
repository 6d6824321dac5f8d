"""Exact GLS across a public tree of regions, for every cell of a table at once.

Every region ``v`` of level ``l`` has a table of cells; level ``l`` is measured
with independent noise of variance ``sigma2[l]`` per value (``inf``: not
measured; ``0``: known exactly, e.g. public values).  The generalized least
squares (GLS) estimate of every region x cell subject to "parent = sum of
children, in every cell" is the two passes of Hay et al. generalised to any
fan-out (the same passes as :mod:`pandas_dp.algorithms.tree.inference`, with
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

Error structure.  The errors form a Gaussian Markov tree; the exact variance
of every estimate (the same in every cell) and of any weighted sum of regions
and cells are in :mod:`pandas_dp.algorithms.geography.variance`.

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
import numpy.typing as npt

from pandas_dp.algorithms.geography.layout import RegionLayout, as_layout
from pandas_dp.algorithms.geography.variance import (RegionVariances, check_level_variances,
                                                   region_variances)
from pandas_dp.errors import ParameterError

__all__ = ["RegionInference", "region_inference"]


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

    def children_sum(self, level: int) -> np.ndarray:
        """``child_sum[level]``: ``S_v`` of every region of a level above the finest."""
        total = self.child_sum[level]
        assert total is not None, "the finest level has no children; callers pass a level above it"
        return total


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
                     level_variances: Sequence[float] | npt.NDArray[np.float64], *,
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
    sigma2 = check_level_variances(lay, level_variances)
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
    sums: list[np.ndarray] = [np.empty(0)] * top   # S_v per level above the finest
    z[top] = table(top)
    for lvl in range(top - 1, -1, -1):
        s = lay.aggregate(z[lvl + 1], lvl + 1)
        sums[lvl] = s
        s2 = sigma2[lvl]
        if np.isinf(s2):
            z[lvl] = s
        elif s2 == 0:
            z[lvl] = table(lvl)
        else:
            vs = structure.child_variance(lvl)[:, None]
            z[lvl] = (vs * table(lvl) + s2 * s) / (s2 + vs)
    est: list[np.ndarray] = [np.empty(0)] * lay.n_levels
    est[0] = z[0]
    for lvl in range(1, lay.n_levels):
        resid = lay.expand(est[lvl - 1] - sums[lvl - 1], lvl)
        est[lvl] = z[lvl] + structure.share_of(lvl)[:, None] * resid
    if totals is not None:
        # Condition on the roots' totals: descendants move by A_c (T - t_root) / n in every cell.
        shift = np.where(structure.root_variance > 0, (totals - est[0].sum(axis=1)) / width, 0.0)
        for lvl in range(lay.n_levels):
            est[lvl] = est[lvl] + (structure.gain[lvl] * shift)[:, None]
            if lvl + 1 < lay.n_levels:
                shift = lay.expand(shift, lvl + 1)

    def shaped(arrays: list[np.ndarray]) -> tuple[np.ndarray, ...]:
        return tuple(a.reshape((lay.n_regions[i],) + cells) for i, a in enumerate(arrays))

    return RegionInference(structure=structure, z=shaped(z), child_sum=(*shaped(sums), None),
                           estimates=shaped(est), root_totals=totals)
