"""UGrid and AGrid: differentially private grids for 2-D (geospatial) counts.

Both lay a coarse grid over a public 2-D domain of *atoms* (the cells of the
domain grid, e.g. 256 x 256), release noisy counts of the grid cells and spread
each count evenly over its atoms.

* **UGrid**: one ``m x m`` grid with ``m = ceil(sqrt(N epsilon / c))``, ``c = 10``.
* **AGrid**: a first level of ``m1 x m1`` cells, ``m1 = max(10, ceil(sqrt(N epsilon / c) / 4))``,
  counted with a share ``alpha = 1/2`` of the loss; inside first-level cell ``k`` with
  noisy count ``N'_k``, a second level of ``m2 x m2`` sub-cells,
  ``m2 = ceil(sqrt(N'_k (1 - alpha) epsilon / c2))``, ``c2 = c / 2``, counted with the rest;
  then constrained inference makes every cell equal the sum of its sub-cells.

``N`` is the number of rows, which is private: it is either a public
``expected_total`` from the caller or a noisy total bought with
``total_share`` of the loss (stated in the result). ``epsilon`` in the size
formulas is that of the noise actually used (:func:`equivalent_epsilon`, exact
for pure DP). Grid lines fall on atom boundaries: an axis of ``n`` atoms cut
into ``m`` parts has edges ``floor(i n / m)`` (sizes differ by at most one
atom), and ``m`` is capped at ``n``.

Inference (AGrid, per first-level cell with ``J`` sub-cells): with noise
variances ``s1, s2`` of the two levels, the generalized least-squares total is
``T = P (v / s1 + sum_j u_j / (J s2))`` with ``P = 1 / (1/s1 + 1/(J s2))``, and
sub-cell ``j`` gets ``u_j + (T - sum_j u_j) / J``; its exact variance is
``P / J**2 + s2 (1 - 1/J)``. A query that covers a share ``f_j`` of sub-cell
``j`` of cell ``k`` has error ``alpha_k e_T + eta_k`` with ``alpha_k = sum_j f_j / J``
and ``Var(eta_k) = s2 (sum_j f_j**2 - (sum_j f_j)**2 / J)``, independent across
cells. Sub-grids are products of row and column intervals, so ``sum_j f_j`` and
``sum_j f_j**2`` factor into one sum per axis.

Variances are exact for the noise given the grid, and exclude the bias of
spreading a cell's count evenly over its atoms (``variance_exact = False``).

References
----------
.. [1] W. Qardaji, W. Yang, N. Li. "Differentially Private Grids for Geospatial
   Data", ICDE 2013 (Sections IV-V: UG size ``sqrt(N epsilon / c)``, ``c = 10``;
   AG with ``alpha = 0.5``, ``c2 = c / 2``, constrained inference).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from pandas_dp._rational import to_fraction
from pandas_dp.errors import ParameterError
from pandas_dp.loss import PrivacyLoss

__all__ = ["GridRelease", "ugrid", "agrid", "equivalent_epsilon", "ugrid_size", "agrid_first_size",
           "agrid_second_size", "axis_edges", "DEFAULT_C", "DEFAULT_ALPHA", "DEFAULT_TOTAL_SHARE"]

#: The paper's constant c (UGrid and AGrid's first level); AGrid's second level uses c / 2.
DEFAULT_C = 10.0
#: AGrid's share of the (counting) loss spent on the first level.
DEFAULT_ALPHA = Fraction(1, 2)
#: Share of the loss spent on the noisy total when no ``expected_total`` is given.
DEFAULT_TOTAL_SHARE = Fraction(1, 20)

VARIANCE_NOTE = ("Noise-only variances, exact given the grid; they exclude the bias of spreading a "
                 "cell's count evenly over its atoms (zero for rectangles made of whole cells).")


def equivalent_epsilon(variance: float) -> float:
    """The epsilon of the discrete Laplace noise that has this variance.

    ``Var = 2 p / (1 - p)**2`` with ``p = exp(-epsilon)`` (scale ``1 / epsilon``), so
    ``p = (Var + 1 - sqrt(2 Var + 1)) / Var``. For pure-DP noise of unit sensitivity this
    returns its epsilon; for other noise, the epsilon with the same noise level.

    Examples
    --------
    >>> from pandas_dp.loss import PureDP
    >>> round(equivalent_epsilon(PureDP(Fraction(1, 10)).noise().variance()), 9)
    0.1
    """
    v = float(variance)
    p = (v + 1.0 - math.sqrt(2.0 * v + 1.0)) / v
    return -math.log(p)


def ugrid_size(total: float, epsilon: float, c: float = DEFAULT_C) -> int:
    """UGrid's cells per axis ``m = ceil(sqrt(N epsilon / c))`` (at least 1).

    Examples
    --------
    >>> ugrid_size(1_000_000, 1.0), ugrid_size(19_435, 0.1), ugrid_size(-50, 1.0)
    (317, 14, 1)
    """
    return max(1, math.ceil(math.sqrt(max(float(total), 0.0) * epsilon / c)))


def agrid_first_size(total: float, epsilon: float, c: float = DEFAULT_C) -> int:
    """AGrid's first-level cells per axis ``m1 = max(10, ceil(sqrt(N epsilon / c) / 4))``.

    Examples
    --------
    >>> agrid_first_size(6_442_863, 1.0), agrid_first_size(32_561, 0.1)
    (201, 10)
    """
    return max(10, math.ceil(math.sqrt(max(float(total), 0.0) * epsilon / c) / 4.0))


def agrid_second_size(noisy_counts: np.ndarray, epsilon_2: float, c2: float = DEFAULT_C / 2) -> np.ndarray:
    """AGrid's sub-cells per axis ``m2 = ceil(sqrt(N' epsilon_2 / c2))`` of every first-level cell (at least 1).

    ``epsilon_2 = (1 - alpha) epsilon``; a noisy count ``N' <= 0`` gives ``m2 = 1``.

    Examples
    --------
    >>> agrid_second_size(np.array([-3, 0, 10, 1000]), 0.5).tolist()
    [1, 1, 1, 10]
    """
    n = np.maximum(np.asarray(noisy_counts, dtype=np.float64), 0.0)
    return np.maximum(1, np.ceil(np.sqrt(n * epsilon_2 / c2) - 1e-12)).astype(np.int64)


def axis_edges(n: int, parts: int) -> np.ndarray:
    """Edges ``floor(i n / m)``, ``i = 0..m``, of ``m = min(parts, n)`` near-equal intervals of ``n`` atoms.

    Examples
    --------
    >>> axis_edges(10, 4).tolist()
    [0, 2, 5, 7, 10]
    """
    m = max(1, min(int(parts), int(n)))
    return (np.arange(m + 1, dtype=np.int64) * n) // m


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
        Whether ``total`` was released with ``total_loss``.
    total_loss : PrivacyLoss or None
        Loss spent on the noisy total.
    level_losses : tuple of PrivacyLoss
        Loss of each counting level; with ``total_loss`` they add up to the whole exactly.
    noise_variances : tuple of float
        Variance of the noise of each counting level.
    epsilon_used : float
        ``epsilon`` in the size formulas (:func:`equivalent_epsilon` of the counting loss).
    c, alpha : float, Fraction
        Constants used (``c2 = c / 2``).
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
    total_loss: PrivacyLoss | None
    level_losses: tuple[PrivacyLoss, ...]
    noise_variances: tuple[float, ...]
    epsilon_used: float
    c: float
    alpha: Fraction

    variance_exact: ClassVar[bool] = False
    variance_note: ClassVar[str] = VARIANCE_NOTE

    @property
    def grid_shape(self) -> tuple[int, int]:
        """Number of (first-level) cells per axis."""
        return int(self.row_edges.size - 1), int(self.col_edges.size - 1)

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


# --------------------------------------------------------------------------------------- mechanisms

def _check_counts(counts: np.ndarray, name: str) -> np.ndarray:
    x = np.asarray(counts)
    if x.ndim != 2 or x.size == 0:
        raise ParameterError(f"{name} takes a 2-D grid of counts on a non-empty public domain. Got an array of "
                             f"shape {x.shape}. Pass the counts of the 2-D domain grid (e.g. 256 x 256 atoms).")
    return x


def _check_share(value: Any, name: str, what: str) -> Fraction:
    s = to_fraction(value, name=name)
    if not 0 < s < 1:
        raise ParameterError(f"The '{name}' parameter must be strictly between 0 and 1 ({what}). Got {value!r}.")
    return s


def _split_total(loss: PrivacyLoss, total_share: Any, expected_total: Any
                 ) -> tuple[PrivacyLoss | None, PrivacyLoss]:
    if expected_total is not None:
        t = float(expected_total)
        if not math.isfinite(t) or t < 0:
            raise ParameterError(f"The 'expected_total' parameter must be a public, finite, non-negative number "
                                 f"of rows. Got {expected_total!r}.")
        return None, loss
    share = _check_share(total_share, "total_share", "the share of the loss spent on the noisy total")
    total_loss, rest = loss.split([share, 1 - share])
    return total_loss, rest


def _total(x: np.ndarray, total_loss: PrivacyLoss | None, expected_total: Any, rng: Any) -> tuple[float, bool]:
    if total_loss is None:
        return float(expected_total), False
    noise = total_loss.noise(what="the noisy total of the grid")
    return float(noise.add(np.array([int(x.sum())]), rng)[0]), True     # reads the true total


def _cell_index(edges: np.ndarray, n: int) -> np.ndarray:
    return np.searchsorted(edges, np.arange(n), side="right") - 1


def ugrid(counts: np.ndarray, *, loss: PrivacyLoss, total_share: float | Fraction = DEFAULT_TOTAL_SHARE,
          expected_total: float | None = None, c: float = DEFAULT_C, rng: Any = None) -> GridRelease:
    """Release 2-D counts with the uniform grid UG (Qardaji, Yang, Li, ICDE 2013).

    Parameters
    ----------
    counts : ndarray of int, shape (rows, cols)
        Exact counts of the atoms of a public 2-D domain.
    loss : PrivacyLoss
        Total loss (noisy total, if bought, plus the grid counts: exactly the whole).
    total_share : float or Fraction
        Share of ``loss`` spent on the noisy total ``N`` when ``expected_total`` is not given.
    expected_total : float, optional
        A public number of rows (e.g. last year's published total); then no share is spent.
    c : float
        The paper's constant (10).
    rng : numpy.random.Generator, optional
        ``None``: the secure source.

    Returns
    -------
    GridRelease

    Raises
    ------
    ParameterError
        For bad public inputs, before the counts are read.

    Notes
    -----
    ``m = ceil(sqrt(N epsilon / c))`` cells per axis (capped at the atoms), one
    noisy count per cell (cells are disjoint: sensitivity 1), spread evenly over
    its atoms. Variance of a rectangle covering a share ``f_k`` of cell ``k``:
    ``s * sum_k f_k**2`` (exact noise variance; bias excluded).

    Examples
    --------
    >>> from pandas_dp.loss import PureDP
    >>> x = np.random.default_rng(0).poisson(3, (64, 64))
    >>> rel = ugrid(x, loss=PureDP(Fraction(1)), expected_total=12_000, rng=np.random.default_rng(1))
    >>> rel.grid_shape
    (35, 35)
    """
    x = _check_counts(counts, "ugrid")
    if not (isinstance(c, (int, float)) and c > 0):
        raise ParameterError(f"The 'c' parameter of ugrid must be a positive number. Got {c!r}.")
    total_loss, rest = _split_total(loss, total_share, expected_total)
    noise = rest.noise(what="the grid counts")                              # before reading data
    if total_loss is not None:
        total_loss.noise(what="the noisy total of the grid")
    eps = equivalent_epsilon(noise.variance())
    n_total, noisy_total = _total(np.asarray(x, dtype=np.int64), total_loss, expected_total, rng)
    m = ugrid_size(n_total, eps, c)
    re, ce = axis_edges(x.shape[0], m), axis_edges(x.shape[1], m)
    x = np.asarray(x, dtype=np.int64)
    cells = np.add.reduceat(np.add.reduceat(x, re[:-1], axis=0), ce[:-1], axis=1)
    noisy = noise.add(cells, rng)                                           # reads the true counts
    s = noise.variance()
    area = np.outer(np.diff(re), np.diff(ce)).astype(np.float64)
    ri, cj = _cell_index(re, x.shape[0]), _cell_index(ce, x.shape[1])
    estimates = (noisy / area)[np.ix_(ri, cj)]
    variances = (s / area ** 2)[np.ix_(ri, cj)]
    return GridRelease(method="ugrid", estimates=estimates, variances=variances, row_edges=re, col_edges=ce,
                       cell_counts=noisy, cell_estimates=noisy.astype(np.float64),
                       cell_variances=np.full(noisy.shape, s), sub_shape=np.ones(noisy.shape + (2,), np.int64),
                       sub_counts=None, sub_estimates=None, sub_variances=None, total=n_total,
                       total_is_noisy=noisy_total, total_loss=total_loss, level_losses=(rest,), noise_variances=(s,), epsilon_used=eps, c=float(c),
                       alpha=Fraction(1))


def agrid(counts: np.ndarray, *, loss: PrivacyLoss, alpha: float | Fraction = DEFAULT_ALPHA,
          total_share: float | Fraction = DEFAULT_TOTAL_SHARE, expected_total: float | None = None,
          c: float = DEFAULT_C, rng: Any = None) -> GridRelease:
    """Release 2-D counts with the adaptive grid AG (Qardaji, Yang, Li, ICDE 2013).

    Parameters
    ----------
    counts : ndarray of int, shape (rows, cols)
        Exact counts of the atoms of a public 2-D domain.
    loss : PrivacyLoss
        Total loss (noisy total, if bought, plus both levels: exactly the whole).
    alpha : float or Fraction
        Share of the counting loss spent on the first level (1/2 in the paper).
    total_share : float or Fraction
        Share of ``loss`` spent on the noisy total ``N`` when ``expected_total`` is not given.
    expected_total : float, optional
        A public number of rows; then no share is spent on the total.
    c : float
        The paper's constant (10); the second level uses ``c / 2``.
    rng : numpy.random.Generator, optional
        ``None``: the secure source.

    Returns
    -------
    GridRelease

    Raises
    ------
    ParameterError
        For bad public inputs, before the counts are read.

    Notes
    -----
    Level 1: ``m1 = max(10, ceil(sqrt(N epsilon / c) / 4))`` cells per axis,
    noisy counts ``v_k`` with ``alpha`` of the counting loss. Level 2, from the
    noisy ``v_k`` only: ``m2 = ceil(sqrt(v_k (1 - alpha) epsilon / c2))`` sub-cells
    per axis inside cell ``k``, noisy counts with the rest (all sub-cells are
    disjoint: sensitivity 1 per level). Then the per-cell generalized least
    squares of the module docstring, and uniform spreading over atoms.

    Examples
    --------
    >>> from pandas_dp.loss import PureDP
    >>> x = np.random.default_rng(0).poisson(3, (64, 64))
    >>> rel = agrid(x, loss=PureDP(Fraction(1)), expected_total=12_000, rng=np.random.default_rng(1))
    >>> rel.grid_shape, int(rel.sub_shape.max()) >= 1
    ((10, 10), True)
    """
    x = _check_counts(counts, "agrid")
    if not (isinstance(c, (int, float)) and c > 0):
        raise ParameterError(f"The 'c' parameter of agrid must be a positive number. Got {c!r}.")
    a = _check_share(alpha, "alpha", "the share of the counting loss spent on the first level")
    total_loss, rest = _split_total(loss, total_share, expected_total)
    loss1, loss2 = rest.split([a, 1 - a])
    noise1 = loss1.noise(what="AGrid's first level")                       # before reading data
    noise2 = loss2.noise(what="AGrid's second level")
    if total_loss is not None:
        total_loss.noise(what="the noisy total of the grid")
    eps = equivalent_epsilon(rest.noise().variance())
    eps2 = equivalent_epsilon(noise2.variance())
    xi = np.asarray(x, dtype=np.int64)
    n_total, noisy_total = _total(xi, total_loss, expected_total, rng)
    m1 = agrid_first_size(n_total, eps, c)
    re, ce = axis_edges(x.shape[0], m1), axis_edges(x.shape[1], m1)
    cells = np.add.reduceat(np.add.reduceat(xi, re[:-1], axis=0), ce[:-1], axis=1)
    v = noise1.add(cells, rng)                                             # reads the true counts
    s1, s2 = noise1.variance(), noise2.variance()
    m2 = agrid_second_size(v, eps2, c / 2.0)                               # noisy values only
    heights, widths = np.diff(re), np.diff(ce)
    m2r = np.minimum(m2, heights[:, None])
    m2c = np.minimum(m2, widths[None, :])
    sub_shape = np.stack([m2r, m2c], axis=-1)
    # Sub-cell of every atom: cell (i, j), then sub-row / sub-column inside it.
    ri, cj = _cell_index(re, x.shape[0]), _cell_index(ce, x.shape[1])
    rr, cc = np.meshgrid(np.arange(x.shape[0]), np.arange(x.shape[1]), indexing="ij")
    ci, cjj = ri[rr], cj[cc]
    pr, pc = m2r[ci, cjj], m2c[ci, cjj]
    sub_r = ((rr - re[ci] + 1) * pr - 1) // heights[ci]
    sub_c = ((cc - ce[cjj] + 1) * pc - 1) // widths[cjj]
    n_sub = (m2r * m2c).ravel()
    base = np.concatenate([[0], np.cumsum(n_sub)[:-1]]).reshape(m2r.shape)
    sub_id = base[ci, cjj] + sub_r * pc + sub_c
    true_sub = np.zeros(int(n_sub.sum()), dtype=np.int64)
    np.add.at(true_sub, sub_id.ravel(), xi.ravel())
    u = noise2.add(true_sub, rng)                                          # reads the true counts
    # Constrained inference per first-level cell (exact GLS of the two-level tree).
    cell_of_sub = np.repeat(np.arange(n_sub.size), n_sub)
    jn = n_sub.astype(np.float64)
    usum = np.bincount(cell_of_sub, weights=u, minlength=n_sub.size)
    p_cell = 1.0 / (1.0 / s1 + 1.0 / (jn * s2))
    total = p_cell * (v.ravel() / s1 + usum / (jn * s2))
    u_hat = u + ((total - usum) / jn)[cell_of_sub]
    p_sub = (p_cell / jn ** 2 + s2 * (1.0 - 1.0 / jn))[cell_of_sub]
    atoms_per_sub = np.bincount(sub_id.ravel(), minlength=int(n_sub.sum())).astype(np.float64)
    estimates = (u_hat / atoms_per_sub)[sub_id]
    variances = (p_sub / atoms_per_sub ** 2)[sub_id]
    return GridRelease(method="agrid", estimates=estimates, variances=variances, row_edges=re, col_edges=ce,
                       cell_counts=v, cell_estimates=total.reshape(v.shape), cell_variances=p_cell.reshape(v.shape),
                       sub_shape=sub_shape, sub_counts=u, sub_estimates=u_hat, sub_variances=p_sub,
                       total=n_total, total_is_noisy=noisy_total,
                       total_loss=total_loss, level_losses=(loss1, loss2), noise_variances=(s1, s2),
                       epsilon_used=eps, c=float(c), alpha=a)
