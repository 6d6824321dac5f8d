"""The result of UGrid / AGrid: atom estimates, the grid, and exact rectangle variances.

A :class:`GridRelease` holds a two-level grid over a 2-D domain of atoms (one
level for UGrid, where every cell is its own single sub-cell). A rectangle
that covers a share ``f_j`` of the finest cell ``j`` of first-level cell ``k``
is estimated by ``sum f_j u_hat_j``; its error is ``alpha_k e_T + eta_k`` per
cell with ``alpha_k = sum_j f_j / J_k`` and
``Var(eta_k) = s2 (sum_j f_j**2 - (sum_j f_j)**2 / J_k)`` (for UGrid,
``J = 1``: ``f_k**2 s``), independent across cells. Sub-grids are products of
row and column intervals, so ``sum_j f_j`` and ``sum_j f_j**2`` factor into
one sum per axis (:func:`_axis_sums`); cells entirely inside the rectangle
contribute their total's variance through 2-D prefix sums, so a rectangle
costs O(cells along its border).

References
----------
.. [1] W. Qardaji, W. Yang, N. Li. "Differentially Private Grids for Geospatial
   Data", ICDE 2013.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

import numpy as np

from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import Noise, PrivacyLoss

__all__ = ["GridPlan", "GridRelease", "VARIANCE_NOTE"]

VARIANCE_NOTE = ("Noise-only variances, exact given the grid; they exclude the bias of spreading a "
                 "cell's count evenly over its atoms (zero for rectangles made of whole cells).")



def _axis_sums(length: np.ndarray, parts: np.ndarray, u: np.ndarray, w: np.ndarray, mode: str
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per axis: ``sum_a f_a``, ``sum_a f_a**2`` of the ``parts`` sub-intervals of ``[0, length)``
    under the overlap ``[u, w)``, and the covered atoms ``[lo, hi)`` (local coordinates).

    ``mode``: ``"fraction"`` (``f_a`` = share of interval ``a`` inside), ``"inner"``
    (1 for intervals entirely inside) or ``"outer"`` (1 for intervals touched).
    """
    edge = lambda a: (a * length) // parts                     # noqa: E731
    empty = u >= w
    uu, ww = np.where(empty, 0, u), np.where(empty, 1, w)
    a1 = ((uu + 1) * parts - 1) // length
    a2 = (ww * parts - 1) // length                             # interval holding atom w - 1
    len1 = (edge(a1 + 1) - edge(a1)).astype(np.float64)
    len2 = (edge(a2 + 1) - edge(a2)).astype(np.float64)
    if mode == "fraction":
        same = a1 == a2
        left = np.where(same, (ww - uu) / len1, (edge(a1 + 1) - uu) / len1)
        right = np.where(same, 0.0, (ww - edge(a2)) / len2)
        mid = np.maximum(a2 - a1 - 1, 0)
        f, g, lo, hi = left + right + mid, left ** 2 + right ** 2 + mid, uu, ww
    else:
        if mode == "inner":
            first = np.where(edge(a1) == uu, a1, a1 + 1)
            last = np.where(edge(a2 + 1) == ww, a2, a2 - 1)
        else:
            first, last = a1, a2
        count = np.maximum(last - first + 1, 0).astype(np.float64)
        f, g = count, count
        lo, hi = edge(first), np.maximum(edge(last + 1), edge(first))
    zero = np.zeros_like(f)
    return (np.where(empty, zero, f), np.where(empty, zero, g), np.where(empty, 0, lo),
            np.where(empty, 0, hi))


@dataclass(frozen=True)
class GridPlan:
    """The public part of a UGrid / AGrid release (made without data and without budget).

    Attributes
    ----------
    method : {"ugrid", "agrid"}
    shape : tuple of int
        The public 2-D domain of atoms.
    loss : PrivacyLoss
        The whole loss: ``total_loss`` (if any) plus ``level_losses``, exactly.
    total_loss : PrivacyLoss or None
        Loss of the noisy total; ``None`` when ``expected_total`` is public.
    total_noise : Noise or None
        Its noise (sensitivity 1).
    expected_total : float or None
        The caller's public number of rows, if given.
    level_losses : tuple of PrivacyLoss
        Loss of each counting level (one for UGrid, two for AGrid).
    level_noise : tuple of Noise
        Each level's noise (cells of a level are disjoint: sensitivity 1).
    epsilon_used : float
        ``epsilon`` in the first size formula (:func:`~pandas_dp.algorithms.grids.equivalent_epsilon`
        of the whole counting loss).
    epsilon_second : float or None
        AGrid: ``(1 - alpha) epsilon`` of the second size formula (that of the level-2 noise).
    c : float
        The paper's constant (the second level uses ``c / 2``).
    alpha : Fraction
        AGrid's first-level share (1 for UGrid).
    """

    method: str
    shape: tuple[int, int]
    loss: PrivacyLoss
    total_loss: PrivacyLoss | None
    total_noise: Noise | None
    expected_total: float | None
    level_losses: tuple[PrivacyLoss, ...]
    level_noise: tuple[Noise, ...]
    epsilon_used: float
    epsilon_second: float | None
    c: float
    alpha: Fraction


@dataclass(frozen=True)
class GridRelease:
    """Output of :func:`ugrid` and :func:`agrid` (everything is differentially private or public).

    Attributes
    ----------
    method : {"ugrid", "agrid"}
    estimates, variances : ndarray of float64
        Estimate of every atom and its noise variance (exact given the grid; bias excluded).
    row_edges, col_edges : ndarray of int64
        Atom edges of the (first-level) grid.
    cell_counts : ndarray of int64
        Released noisy count of every (first-level) cell.
    cell_estimates, cell_variances : ndarray of float64
        Estimate of every cell total (after inference for AGrid) and its exact variance.
    sub_shape : ndarray of int64, shape (rows, cols, 2)
        Sub-grid of every cell (``1 x 1`` for UGrid).
    sub_counts : ndarray of int64 or None
        AGrid's released second-level counts, cell by cell (row-major cells,
        row-major sub-cells inside); ``None`` for UGrid.
    sub_estimates, sub_variances : ndarray of float64 or None
        AGrid: the inferred count of every sub-cell (same order) and its exact variance.
    total : float
        ``N`` used in the size formulas: the caller's ``expected_total`` or the noisy total.
    total_is_noisy : bool
        Whether ``total`` was released with the plan's ``total_loss``.
    plan : GridPlan
        The public plan: losses (``total_loss``, ``level_losses``; exactly the whole), noise, constants.
    """

    method: str
    estimates: np.ndarray
    variances: np.ndarray
    row_edges: np.ndarray
    col_edges: np.ndarray
    cell_counts: np.ndarray
    cell_estimates: np.ndarray
    cell_variances: np.ndarray
    sub_shape: np.ndarray
    sub_counts: np.ndarray | None
    sub_estimates: np.ndarray | None
    sub_variances: np.ndarray | None
    total: float
    total_is_noisy: bool
    plan: GridPlan

    variance_exact: ClassVar[bool] = False
    variance_note: ClassVar[str] = VARIANCE_NOTE

    @property
    def grid_shape(self) -> tuple[int, int]:
        """Number of (first-level) cells per axis."""
        return int(self.row_edges.size - 1), int(self.col_edges.size - 1)

    @property
    def total_loss(self) -> PrivacyLoss | None:
        """Loss spent on the noisy total (``None`` with a public ``expected_total``)."""
        return self.plan.total_loss

    @property
    def level_losses(self) -> tuple[PrivacyLoss, ...]:
        """Loss of each counting level."""
        return self.plan.level_losses

    @property
    def noise_variances(self) -> tuple[float, ...]:
        """Variance of the noise of each counting level."""
        return tuple(noise.variance() for noise in self.plan.level_noise)

    @property
    def epsilon_used(self) -> float:
        """``epsilon`` in the size formulas."""
        return self.plan.epsilon_used

    @property
    def c(self) -> float:
        """The paper's constant used."""
        return self.plan.c

    @property
    def alpha(self) -> Fraction:
        """AGrid's first-level share (1 for UGrid)."""
        return self.plan.alpha

    @property
    def phase_losses(self) -> tuple[PrivacyLoss, ...]:
        """Every exact loss composed (noisy total first, when bought)."""
        return ((self.total_loss,) if self.total_loss is not None else ()) + tuple(self.level_losses)

    def _rects(self, rects: np.ndarray) -> np.ndarray:
        r = np.atleast_2d(np.asarray(rects))
        shape = self.estimates.shape
        if r.ndim != 2 or r.shape[1] != 4 or not np.issubdtype(r.dtype, np.integer):
            raise ParameterError(f"Rectangles must be an integer array of shape (m, 4) (r0, r1, c0, c1, "
                                 f"half-open). Got shape {r.shape} and dtype {r.dtype}.")
        r = r.astype(np.int64)
        bad = (r[:, 0] < 0) | (r[:, 1] > shape[0]) | (r[:, 0] >= r[:, 1]) | \
              (r[:, 2] < 0) | (r[:, 3] > shape[1]) | (r[:, 2] >= r[:, 3])
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ParameterError(f"Rectangle {i} = {r[i].tolist()} is empty or outside the {shape} grid; "
                                 f"rectangles are half-open (r0 < r1 <= rows, c0 < c1 <= cols).")
        return r

    def _query(self, rects: np.ndarray, mode: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Estimates, exact noise variances and finest-cell weight sums of rectangles under ``mode``.

        ``mode`` as in :func:`_axis_sums`; the third output is ``sum_j f_j`` over the finest cells.
        """
        r = self._rects(rects)
        m = r.shape[0]
        re, ce = self.row_edges, self.col_edges
        sat = np.zeros((self.estimates.shape[0] + 1, self.estimates.shape[1] + 1))
        sat[1:, 1:] = np.cumsum(np.cumsum(self.estimates, axis=0), axis=1)
        pv = np.zeros((re.size, ce.size))
        pv[1:, 1:] = np.cumsum(np.cumsum(self.cell_variances, axis=0), axis=1)
        ct = np.zeros((re.size, ce.size))
        ct[1:, 1:] = np.cumsum(np.cumsum(self.cell_estimates, axis=0), axis=1)
        nj = np.zeros((re.size, ce.size))
        nj[1:, 1:] = np.cumsum(np.cumsum(self.sub_shape[..., 0] * self.sub_shape[..., 1], axis=0), axis=1)
        spans = []
        for lo, hi, edges in ((r[:, 0], r[:, 1], re), (r[:, 2], r[:, 3], ce)):
            first = np.searchsorted(edges, lo, side="right") - 1
            last = np.searchsorted(edges, hi - 1, side="right") - 1
            full_lo = np.where(edges[first] == lo, first, first + 1)
            full_hi = np.where(edges[last + 1] == hi, last + 1, last)
            spans.append((first, last, full_lo, np.maximum(full_hi, full_lo)))
        (i0, i1, fi0, fi1), (j0, j1, fj0, fj1) = spans
        # Cells entirely inside: one block, from prefix sums of cell variances and estimates.
        block = lambda s: s[fi1, fj1] - s[fi0, fj1] - s[fi1, fj0] + s[fi0, fj0]  # noqa: E731
        est, var, weight = block(ct), block(pv), block(nj)
        # Partial cells: rows not fully covered (all columns), then full rows x partial columns.
        prow = [np.where(fi0 > i0, i0, -1), np.where(fi1 <= i1, i1, -1)]
        prow[1] = np.where(prow[1] == prow[0], -1, prow[1])
        pcol = [np.where(fj0 > j0, j0, -1), np.where(fj1 <= j1, j1, -1)]
        pcol[1] = np.where(pcol[1] == pcol[0], -1, pcol[1])
        qs, ii, jj = [], [], []
        for row in prow:
            ok = row >= 0
            cnt = np.where(ok, j1 - j0 + 1, 0)
            q = np.repeat(np.arange(m), cnt)
            qs.append(q)
            ii.append(row[q])
            jj.append(j0[q] + np.arange(q.size) - np.repeat(np.cumsum(cnt) - cnt, cnt))
        for col in pcol:
            ok = col >= 0
            cnt = np.where(ok, fi1 - fi0, 0)
            q = np.repeat(np.arange(m), cnt)
            qs.append(q)
            jj.append(col[q])
            ii.append(fi0[q] + np.arange(q.size) - np.repeat(np.cumsum(cnt) - cnt, cnt))
        q, i, j = np.concatenate(qs), np.concatenate(ii), np.concatenate(jj)
        if q.size:
            rows_len, cols_len = re[i + 1] - re[i], ce[j + 1] - ce[j]
            m2r, m2c = self.sub_shape[i, j, 0], self.sub_shape[i, j, 1]
            fx, gx, xlo, xhi = _axis_sums(rows_len, m2r, np.maximum(r[q, 0] - re[i], 0),
                                          np.minimum(r[q, 1] - re[i], rows_len), mode)
            fy, gy, ylo, yhi = _axis_sums(cols_len, m2c, np.maximum(r[q, 2] - ce[j], 0),
                                          np.minimum(r[q, 3] - ce[j], cols_len), mode)
            jn = (m2r * m2c).astype(np.float64)
            a = fx * fy / jn
            s2 = self.noise_variances[-1]
            beta = np.maximum(s2 * (gx * gy - (fx * fy) ** 2 / jn), 0.0) if self.method == "agrid" else 0.0
            var += np.bincount(q, weights=a * a * self.cell_variances[i, j] + beta, minlength=m)
            x0, x1, y0, y1 = re[i] + xlo, re[i] + xhi, ce[j] + ylo, ce[j] + yhi
            box = sat[x1, y1] - sat[x0, y1] - sat[x1, y0] + sat[x0, y0]
            est += np.bincount(q, weights=np.where((x1 > x0) & (y1 > y0), box, 0.0), minlength=m)
            weight += np.bincount(q, weights=fx * fy, minlength=m)
        return est, var, weight

    def rectangle_estimate(self, rects: np.ndarray) -> np.ndarray:
        """Estimates of half-open rectangles (rows ``r0, r1, c0, c1``) of atoms."""
        return self._query(rects, "fraction")[0]

    def rectangle_variance(self, rects: np.ndarray) -> np.ndarray:
        """Exact noise variance of :meth:`rectangle_estimate` (bias of uniform spreading excluded)."""
        return self._query(rects, "fraction")[1]

    def aligned(self, rects: np.ndarray) -> np.ndarray:
        """Whether each rectangle is a union of whole finest cells (then its estimate has no spreading bias)."""
        return self._query(rects, "inner")[2] == self._query(rects, "outer")[2]

    def inner_outer(self, rects: np.ndarray) -> dict[str, np.ndarray]:
        """Estimates and exact variances of the finest cells inside and touching each rectangle.

        Both are unbiased given the grid and, counts being non-negative,
        ``count(inner) <= count(rectangle) <= count(outer)``.
        """
        ie, iv, _ = self._query(rects, "inner")
        oe, ov, _ = self._query(rects, "outer")
        return {"inner_estimate": ie, "inner_variance": iv, "outer_estimate": oe, "outer_variance": ov}
