"""Hilbert-curve ordering of a 2-D grid of cells, and rectangles as runs along it.

DAWA works on a 1-D vector of counts. For 2-D data its authors, and the DPBench
study that compares it, lay the cells out along a Hilbert curve: the curve
visits every aligned ``2**j x 2**j`` block of a ``2**m x 2**m`` square as one
contiguous stretch, so cells close in the plane are mostly close on the line,
and, on a power-of-two square, consecutive cells on the line are always
neighbours in the plane (on other shapes the curve skips padding cells, so a
few steps jump).

* :func:`hilbert_index` / :func:`hilbert_cells`: the curve position of a cell
  of a ``side x side`` square (``side`` a power of two) and its inverse,
  vectorized over cells (one pass per bit of ``side``).
* :func:`hilbert_order`: the cells of any ``(rows, cols)`` grid in curve order.
  A grid that is not a power-of-two square is embedded in the smallest one
  that holds it; the curve then skips the padding cells, so the order is a
  public function of the shape only.
* :func:`rectangle_runs`: a rectangle of cells as the maximal runs of
  consecutive positions in :func:`hilbert_order`, found by descending the
  quadtree of aligned blocks (a block inside the rectangle is one run), level
  by level for all rectangles at once.

References
----------
.. [1] D. Hilbert. "Ueber die stetige Abbildung einer Linie auf ein
   Flaechenstueck", Math. Ann. 38, 1891.
.. [2] C. Li, M. Hay, G. Miklau, Y. Wang. "A Data- and Workload-Aware Algorithm
   for Range Queries Under Differential Privacy", PVLDB 7(5), 2014.
.. [3] M. Hay, A. Machanavajjhala, G. Miklau, Y. Chen, D. Zhang. "Principled
   Evaluation of Differentially Private Algorithms using DPBench", SIGMOD 2016
   (DAWA on 2-D data through a Hilbert ordering).
"""

from __future__ import annotations

import numpy as np

__all__ = ["hilbert_side", "hilbert_index", "hilbert_cells", "hilbert_order", "rectangle_runs"]


def hilbert_side(shape: tuple[int, int]) -> int:
    """Side of the smallest power-of-two square holding a ``(rows, cols)`` grid (at least 1)."""
    return 1 << max(0, (max(int(shape[0]), int(shape[1])) - 1).bit_length())


def hilbert_index(rows: np.ndarray, cols: np.ndarray, side: int) -> np.ndarray:
    """Position along the Hilbert curve of the cells ``(rows, cols)`` of a ``side x side`` square.

    Parameters
    ----------
    rows, cols : array_like of int
        Cell coordinates in ``[0, side)``.
    side : int
        A power of two.

    Returns
    -------
    ndarray of int64
        ``d`` in ``[0, side**2)``; the map is a bijection of the square.

    Notes
    -----
    From the top bit down: the quadrant ``(r, c)`` of the current block adds
    ``s**2 * ((3 r) xor c)`` (quadrants in the order (0,0), (0,1), (1,1), (1,0)),
    then the coordinates inside the quadrant are reflected / transposed so
    that the sub-curve starts and ends where its neighbours need it.

    Examples
    --------
    >>> hilbert_index(np.array([0, 0, 1, 1]), np.array([0, 1, 1, 0]), 2)
    array([0, 1, 2, 3])
    """
    r = np.asarray(rows, dtype=np.int64).copy()
    c = np.asarray(cols, dtype=np.int64).copy()
    d = np.zeros(np.broadcast(r, c).shape, dtype=np.int64)
    s = side >> 1
    while s > 0:                                   # one pass per bit of side (not per cell)
        rx = (r & s) > 0
        cy = (c & s) > 0
        d += s * s * ((3 * rx.astype(np.int64)) ^ cy.astype(np.int64))
        r &= s - 1
        c &= s - 1
        flip = ~cy & rx
        r = np.where(flip, s - 1 - r, r)
        c = np.where(flip, s - 1 - c, c)
        swap = ~cy
        r, c = np.where(swap, c, r), np.where(swap, r, c)
        s >>= 1
    return d


def hilbert_cells(index: np.ndarray, side: int) -> tuple[np.ndarray, np.ndarray]:
    """Cells ``(rows, cols)`` at the curve positions ``index`` (inverse of :func:`hilbert_index`).

    Examples
    --------
    >>> hilbert_cells(np.arange(4), 2)
    (array([0, 0, 1, 1]), array([0, 1, 1, 0]))
    """
    t = np.asarray(index, dtype=np.int64).copy()
    r = np.zeros_like(t)
    c = np.zeros_like(t)
    s = 1
    while s < side:                                # one pass per bit of side
        rx = (t >> 1) & 1
        cy = (t ^ rx) & 1
        flip = (cy == 0) & (rx == 1)
        r = np.where(flip, s - 1 - r, r)
        c = np.where(flip, s - 1 - c, c)
        swap = cy == 0
        r, c = np.where(swap, c, r), np.where(swap, r, c)
        r += s * rx
        c += s * cy
        t >>= 2
        s <<= 1
    return r, c


def _grid_indices(shape: tuple[int, int]) -> tuple[np.ndarray, int]:
    side = hilbert_side(shape)
    rr, cc = np.divmod(np.arange(shape[0] * shape[1], dtype=np.int64), shape[1])
    return hilbert_index(rr, cc, side), side


def hilbert_order(shape: tuple[int, int]) -> np.ndarray:
    """Flat (row-major) indices of the cells of a ``(rows, cols)`` grid in Hilbert-curve order.

    Parameters
    ----------
    shape : tuple of int
        Grid shape (any positive sizes).

    Returns
    -------
    ndarray of int64
        ``order[p]`` is the flat index of the cell at position ``p`` on the
        line; ``counts.ravel()[order]`` is the 1-D vector DAWA runs on.

    Examples
    --------
    >>> hilbert_order((2, 2))
    array([0, 1, 3, 2])
    """
    d, _ = _grid_indices(shape)
    return np.argsort(d, kind="stable")


def rectangle_runs(rects: np.ndarray, shape: tuple[int, int]
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each half-open rectangle ``[r0, r1) x [c0, c1)`` as maximal runs of :func:`hilbert_order` positions.

    Parameters
    ----------
    rects : ndarray of int, shape (m, 4)
        Columns ``r0, r1, c0, c1`` (the layout of ``benchmarks.dpbench``), non-empty,
        inside the grid.
    shape : tuple of int
        Grid shape.

    Returns
    -------
    query, lo, hi : ndarray of int64
        Run ``i`` covers positions ``[lo[i], hi[i])`` of rectangle ``query[i]``;
        sorted by ``(query, lo)``, disjoint and not adjacent within a query.

    Notes
    -----
    Quadtree descent over the padded ``side x side`` square, one level per
    step for all (rectangle, block) pairs at once: a block outside the
    rectangle is dropped, a block inside it is the curve stretch
    ``[d0, d0 + s**2)`` with ``d0`` the position of any of its cells rounded
    down to a multiple of ``s**2``, and a block across its border splits into
    its four quadrants. Only blocks along the border are visited, about
    ``O(perimeter)`` per rectangle. Curve positions map to positions in the
    (padding-free) order by a binary search in the sorted positions of the
    real cells; a block inside the rectangle holds only real cells, so it
    stays one stretch.

    Examples
    --------
    >>> rectangle_runs(np.array([[0, 2, 0, 1]]), (2, 2))
    (array([0, 0]), array([0, 3]), array([1, 4]))
    """
    rects = np.asarray(rects, dtype=np.int64).reshape(-1, 4)
    d_cells, side = _grid_indices(shape)
    sorted_d = np.sort(d_cells)
    m = rects.shape[0]
    q = np.arange(m, dtype=np.int64)
    x0 = np.zeros(m, dtype=np.int64)
    y0 = np.zeros(m, dtype=np.int64)
    out_q, out_lo, out_hi = [], [], []
    s = side
    while q.size:                                  # one pass per quadtree level
        r0, r1, c0, c1 = rects[q, 0], rects[q, 1], rects[q, 2], rects[q, 3]
        inside = (x0 >= r0) & (x0 + s <= r1) & (y0 >= c0) & (y0 + s <= c1)
        outside = (x0 >= r1) | (x0 + s <= r0) | (y0 >= c1) | (y0 + s <= c0)
        if inside.any():
            block = s * s
            d0 = hilbert_index(x0[inside], y0[inside], side) // block * block
            out_q.append(q[inside])
            out_lo.append(np.searchsorted(sorted_d, d0))
            out_hi.append(np.searchsorted(sorted_d, d0 + block))
        split = ~inside & ~outside
        if s == 1 or not split.any():
            break
        h = s >> 1
        q, x0, y0 = q[split], x0[split], y0[split]
        q = np.repeat(q, 4)
        x0 = np.repeat(x0, 4) + np.tile(np.array([0, 0, h, h]), x0.size)
        y0 = np.repeat(y0, 4) + np.tile(np.array([0, h, 0, h]), y0.size)
        s = h
    if not out_q:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty.copy(), empty.copy()
    qq = np.concatenate(out_q)
    lo = np.concatenate(out_lo).astype(np.int64)
    hi = np.concatenate(out_hi).astype(np.int64)
    order = np.lexsort((lo, qq))
    qq, lo, hi = qq[order], lo[order], hi[order]
    # Merge runs that touch (the end of one is the start of the next, same rectangle).
    start = np.r_[True, (qq[1:] != qq[:-1]) | (lo[1:] != hi[:-1])]
    first = np.flatnonzero(start)
    last = np.r_[first[1:] - 1, qq.size - 1]
    return qq[first], lo[first], hi[last]
