"""Controlled rounding of two-way tables whose row and column sums are fixed integers.

Input: blocks of a non-negative real matrix, row ``r`` of block ``b(r)`` holding ``values[r, a]`` for
the ``s`` columns ``(b, a)`` of its block, and integer sums for every row and every column (per block,
the row sums and the column sums have the same total). Output: non-negative integers ``n[r, a]`` with
exactly those row and column sums, every value the floor or the ceiling of its real value wherever the
sums allow it.

This is the step a top-down rounding of a geography takes when the children of a region have public
(integer) totals: the children's values in one cell of the parent must sum to the parent's integer
there (the columns) while every child's values sum to its own fixed integer (the rows). A top-down
pass over a tree (:mod:`~pandas_dp.algorithms.controlled_rounding`) keeps only the columns; both at
once are a transportation problem, solved here as a maximum flow (every integer flow of the network is
a rounding, and by the integrality theorem there is one whenever a real one exists) [1], [2]:

* every value starts at its floor ``l``; row ``r`` then still needs ``R_r - sum_a l[r, a]`` units and
  column ``(b, a)`` ``C_{b,a} - sum_r l[r, a]``. A sum below its floors' (values fitted a hair above
  it) first lowers its largest floors, so every need is ``>= 0``;
* network: source -> row (capacity its need), row -> column (capacity: how far the value may go up to
  its ceiling), column -> sink (its need); a maximum flow (Dinic's algorithm [3], integer arithmetic)
  raises every value by the units it carries;
* preference: the flow runs first on the nearest roundings (ceilings of fractional parts ``>= 1/2``),
  then on every value with that first flow free to be undone (its edges reversed: the residual
  network), so the result is a maximum flow that keeps as many nearest roundings as that allows;
* the rest: needs the ceilings cannot carry (sums rounded apart from the values, or no floor/ceiling
  rounding with these sums) are met by the north-west-corner rule within each block (every row's
  remaining need in turn to its block's columns' remaining needs, in order), so the sums always hold
  exactly and every value stays non-negative.

Everything after the floors is integer arithmetic: the result is the same on every machine.

References
----------
.. [1] M. Bacharach. "Matrix Rounding Problems", Management Science 12(9), 1966, 732-742.
.. [2] L. H. Cox, L. R. Ernst. "Controlled Rounding", INFOR 20(4), 1982, 423-432.
.. [3] E. A. Dinitz. "Algorithm for solution of a problem of maximum flow in networks with power
   estimation", Soviet Math. Doklady 11, 1970, 1277-1280.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import maximum_flow

from pandas_dp.algorithms.controlled_rounding import _SNAP_ABS, _SNAP_REL

__all__ = ["transport_round"]


def _flow(n_rows: int, n_cols: int, row_need: np.ndarray, col_need: np.ndarray, forward: np.ndarray,
          backward: np.ndarray, row: np.ndarray, col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A maximum flow source -> rows -> columns -> sink: every value an edge row -> column of capacity
    ``forward`` (how far it may still go up) and one column -> row of capacity ``backward`` (units already
    placed that may be taken back). Returns the flow on each forward and each backward edge."""
    source, sink = 0, 1
    r_node = 2 + np.arange(n_rows)
    c_node = 2 + n_rows + np.arange(n_cols)
    f_idx = np.flatnonzero(forward > 0)
    b_idx = np.flatnonzero(backward > 0)
    tails = np.concatenate([np.full(n_rows, source), r_node[row[f_idx]], c_node[col[b_idx]], c_node])
    heads = np.concatenate([r_node, c_node[col[f_idx]], r_node[row[b_idx]], np.full(n_cols, sink)])
    caps = np.concatenate([row_need, forward[f_idx], backward[b_idx], col_need])
    keep = caps > 0
    size = 2 + n_rows + n_cols
    # scipy's capacities are int32: a larger need is met in part here, the rest by the north-west corner
    caps = np.minimum(caps[keep], np.iinfo(np.int32).max).astype(np.int32)
    graph = sparse.csr_array((caps, (tails[keep], heads[keep])), shape=(size, size))
    flow = maximum_flow(graph, source, sink, method="dinic").flow
    on_forward = np.zeros(row.size, dtype=np.int64)
    on_backward = np.zeros(row.size, dtype=np.int64)
    if f_idx.size:
        on_forward[f_idx] = np.maximum(np.asarray(flow[r_node[row[f_idx]], c_node[col[f_idx]]]).ravel(), 0)
    if b_idx.size:
        on_backward[b_idx] = np.maximum(np.asarray(flow[c_node[col[b_idx]], r_node[row[b_idx]]]).ravel(), 0)
    return on_forward, on_backward


def _lower(low: np.ndarray, group: np.ndarray, excess: np.ndarray) -> np.ndarray:
    """``low`` (1-D) less ``excess[g]`` in every group ``g``, taken from its largest values first (never
    below 0)."""
    order = np.lexsort((-low, group))
    sorted_low = low[order]
    g = group[order]
    cum = np.cumsum(sorted_low)
    first = np.concatenate([[True], g[1:] != g[:-1]]) if g.size else np.zeros(0, dtype=bool)
    base = np.maximum.accumulate(np.where(first, cum - sorted_low, 0))
    take = np.clip(excess[g] - (cum - sorted_low - base), 0, sorted_low)
    out = low.copy()
    out[order] -= take
    return out


def _north_west(row_need: np.ndarray, col_need: np.ndarray, block: np.ndarray) -> tuple[np.ndarray, ...]:
    """The north-west-corner allocation of row needs to column needs within every block (rows of a
    block in increasing position, its columns in order); returns ``(rows, columns, amounts)``."""
    order = np.argsort(block, kind="stable")
    cum_r = np.cumsum(row_need[order])
    cum_c = np.cumsum(col_need.ravel())                       # columns are (block, a): already in block order
    points = np.unique(np.concatenate([[0], cum_r, cum_c]))
    start, end = points[:-1], points[1:]
    r = order[np.searchsorted(cum_r, start, side="right")]
    c = np.searchsorted(cum_c, start, side="right")
    return r, c, end - start


def transport_round(values: np.ndarray, block: np.ndarray, row_totals: np.ndarray,
                    col_totals: np.ndarray) -> np.ndarray:
    """Non-negative integers with the given row and column sums, each the floor or ceiling of its value
    where the sums allow (module notes).

    Parameters
    ----------
    values : ndarray
        ``(rows, s)``, non-negative reals.
    block : ndarray
        ``(rows,)``: the block of every row; the columns of block ``b`` are ``col_totals[b]``.
    row_totals : ndarray
        ``(rows,)`` non-negative integers.
    col_totals : ndarray
        ``(blocks, s)`` non-negative integers; within a block, summing to the same total as its rows'.

    Returns
    -------
    ndarray
        ``(rows, s)`` int64.
    """
    x = np.maximum(np.asarray(values, dtype=np.float64), 0.0)
    n_rows, s = x.shape
    block = np.asarray(block, dtype=np.int64)
    near = np.rint(x)
    snap = np.abs(x - near) <= _SNAP_ABS + _SNAP_REL * x
    floor = np.where(snap, near, np.floor(x)).astype(np.int64).ravel()
    frac = np.where(snap, 0.0, x - np.floor(x)).ravel()
    row = np.repeat(np.arange(n_rows), s)
    col = (block[:, None] * s + np.arange(s)[None, :]).ravel()
    row_totals = np.asarray(row_totals, dtype=np.int64)
    col_totals = np.asarray(col_totals, dtype=np.int64)
    n_blocks = col_totals.shape[0]
    n_cols = n_blocks * s

    def sums(v: np.ndarray, of: np.ndarray, size: int) -> np.ndarray:
        out = np.zeros(size, dtype=np.int64)
        np.add.at(out, of, v)
        return out

    low = floor
    row_excess = sums(low, row, n_rows) - row_totals
    if np.any(row_excess > 0):
        low = _lower(low, row, np.maximum(row_excess, 0))
    col_excess = sums(low, col, n_cols) - col_totals.ravel()
    if np.any(col_excess > 0):
        low = _lower(low, col, np.maximum(col_excess, 0))
    row_need = row_totals - sums(low, row, n_rows)
    col_need = col_totals.ravel() - sums(low, col, n_cols)
    room = floor + (frac > 0) - low
    nearest = np.where(frac >= 0.5, room, floor - low)
    first, _ = _flow(n_rows, n_cols, row_need, col_need, nearest, np.zeros(row.size, dtype=np.int64), row, col)
    added, undone = _flow(n_rows, n_cols, row_need - sums(first, row, n_rows), col_need - sums(first, col, n_cols),
                          room - first, first, row, col)
    out = (low + first + added - undone).reshape(n_rows, s)
    rest_rows = row_totals - out.sum(axis=1)
    if np.any(rest_rows):
        have = np.zeros((n_blocks, s), dtype=np.int64)
        np.add.at(have, block, out)
        r, c, amount = _north_west(rest_rows, col_totals - have, block)
        np.add.at(out, (r, c % s), amount)
    return out
