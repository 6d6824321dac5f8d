"""Counting kernel: every closure marginal from integer-coded columns, at the floor.

One ``np.bincount`` per maximal marginal of the closure over combined codes
(``code = ((c_0 n_1 + c_1) n_2 + c_2) ...`` in attribute order, in the
narrowest unsigned type that holds the table's cells; the code of all but the
last attribute is shared by consecutive maximal sets), then every smaller
marginal of the closure by summing a containing table down (over cells, not
rows). Rows are taken in chunks of ``2**16``: every table is counted from a
chunk while it is in the CPU cache, so the columns are read from memory once
for all tables. No Python loop touches rows or cells (the loops run over
chunks and tables).

A row is in the domain when every attribute the workload uses has a code in
``0 .. n_i - 1``; code ``-1`` marks a value outside the public domain. A row
outside the domain in any workload attribute is dropped from every marginal,
so all marginals are those of one data vector (the residual decomposition and
the sensitivity of every marginal hold for that vector).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pandas_dp.algorithms.marginals.workload import Marginal, Workload

__all__ = ["closure_marginals", "combined_codes", "sum_down"]

#: Rows per chunk: a chunk of every column and its combined codes stay in the CPU cache.
_CHUNK = 1 << 16


def combined_codes(codes: Sequence[np.ndarray], attrs: Marginal, sizes: Sequence[int],
                   dtype: type = np.intp) -> np.ndarray:
    """Row-major cell index of every row in the marginal on ``attrs``.

    Exact for rows inside the domain when ``dtype`` holds the marginal's cells; a row with an
    out-of-domain code gets an arbitrary value (the caller overwrites it).
    """
    if not attrs:
        return np.zeros(len(codes[0]) if codes else 0, dtype=dtype)
    out: np.ndarray = np.asarray(codes[attrs[0]]).astype(dtype, copy=True)
    for i in attrs[1:]:
        np.multiply(out, sizes[i], out=out, casting="unsafe")
        np.add(out, codes[i], out=out, casting="unsafe")
    return out


def _code_dtype(cells: int) -> type:
    """The narrowest unsigned integer type holding ``0 .. cells`` (``cells`` is the out-of-domain bin).

    Narrow codes move less memory: the combined code of a small table is built in bytes, and
    ``np.bincount`` widens it once as it reads.
    """
    for dt in (np.uint8, np.uint16, np.uint32):
        if cells <= np.iinfo(dt).max:
            return dt
    return np.intp


def _out_of_domain(codes: Sequence[np.ndarray], attrs: Sequence[int], sizes: Sequence[int]) -> np.ndarray | None:
    """Boolean mask of rows outside the domain, or None when every row is inside (the common case)."""
    bad: np.ndarray | None = None
    for i in attrs:
        col = np.asarray(codes[i])
        if len(col) == 0 or (int(col.min()) >= 0 and int(col.max()) < sizes[i]):
            continue
        here = (col < 0) | (col >= sizes[i])
        bad = here if bad is None else bad | here
    return bad


def closure_marginals(codes: Sequence[np.ndarray], workload: Workload, *,
                      only: Sequence[Marginal] | None = None) -> dict[Marginal, np.ndarray]:
    """Exact counts of every marginal of the workload's closure (or of ``only``, a subset of it).

    Parameters
    ----------
    codes : sequence of integer ndarray
        One array per attribute (all of the same length), value codes ``0 .. n_i - 1``;
        ``-1`` (or any code outside the range) is outside the domain.
    workload : Workload
        The public domain sizes and the workload.
    only : sequence of Marginal, optional
        The closure marginals wanted (default: all of them).

    Returns
    -------
    dict
        ``int64`` counts per marginal, axes in attribute order.

    Examples
    --------
    >>> from pandas_dp.algorithms.marginals.workload import make_workload
    >>> w = make_workload([2, 3], [(0, 1)])
    >>> out = closure_marginals([np.array([0, 1, 1, -1]), np.array([2, 0, 0, 1])], w)
    >>> out[(0, 1)].tolist(), out[(1,)].tolist(), int(out[()])
    ([[0, 0, 1], [2, 0, 0]], [2, 0, 1], 3)
    """
    sizes = workload.sizes
    wanted = list(workload.closure if only is None else only)
    closure = set(workload.closure)
    attributes = workload.attributes
    maximal = set(workload.maximal)

    def up(a: Marginal) -> list[Marginal]:
        """The closure sets one attribute larger than ``a``."""
        return [b for b in (tuple(sorted(a + (i,))) for i in attributes if i not in a) if b in closure]

    # The maximal tables to count: every wanted maximal one, and for each other wanted set the
    # first maximal table reached by walking up the closure (deterministic), unless one is counted.
    needed: set[Marginal] = {a for a in wanted if a in maximal}
    for a in wanted:
        if a in maximal:
            continue
        b = a
        while b not in maximal:
            b = up(b)[0]
        needed.add(b)
    bad = _out_of_domain(codes, attributes, sizes)
    tops = [top for top in workload.maximal if top in needed]
    dtypes = [_code_dtype(workload.cells(top)) for top in tops]
    extra = 0 if bad is None else 1     # the out-of-domain bin, dropped at the end
    totals = [np.zeros(workload.cells(top) + extra, dtype=np.int64) for top in tops]
    rows = len(codes[0]) if codes else 0
    buffers: dict[type, np.ndarray] = {dt: np.empty(min(rows, _CHUNK), dtype=dt) for dt in set(dtypes)}
    for start in range(0, rows, _CHUNK):
        # One chunk of every column stays in cache while every table is counted from it.
        chunk = [np.asarray(c)[start:start + _CHUNK] for c in codes]
        bad_chunk = None if bad is None else bad[start:start + _CHUNK]
        prefix: tuple[Marginal, type] | None = None
        prefix_codes = np.empty(0, dtype=np.intp)
        for top, dtype, total in zip(tops, dtypes, totals):
            cells = workload.cells(top)
            if len(top) >= 2:
                # Maximal sets come sorted, so neighbours share their first attributes: the prefix's
                # combined code is computed once and reused (two passes per table, then bincount).
                if (top[:-1], dtype) != prefix:
                    prefix = (top[:-1], dtype)
                    prefix_codes = combined_codes(chunk, top[:-1], sizes, dtype)
                combined = np.multiply(prefix_codes, sizes[top[-1]], out=buffers[dtype][:len(chunk[0])],
                                       casting="unsafe")
                np.add(combined, chunk[top[-1]], out=combined, casting="unsafe")
            else:
                combined = combined_codes(chunk, top, sizes, dtype)
            if bad_chunk is not None:
                combined[bad_chunk] = cells
            total += np.bincount(combined, minlength=cells + extra)
    available: dict[Marginal, np.ndarray] = {
        top: total[:workload.cells(top)].reshape(workload.shape(top)) for top, total in zip(tops, totals)}
    summed = sum_down(available, workload)
    return {a: summed[a] for a in wanted}


def sum_down(tables: dict[Marginal, np.ndarray], workload: Workload) -> dict[Marginal, np.ndarray]:
    """Every closure marginal reachable from ``tables`` by summing over attributes (cells, not rows).

    Largest sets first, each from an available set one attribute larger. With ``tables`` holding
    every maximal marginal (an engine's one pass, e.g. summed over partitions), the result holds
    the whole closure. Exact: int64 sums of int64 counts.

    Examples
    --------
    >>> from pandas_dp.algorithms.marginals.workload import make_workload
    >>> w = make_workload([2, 3], [(0, 1)])
    >>> out = sum_down({(0, 1): np.array([[1, 0, 2], [0, 4, 0]])}, w)
    >>> out[(0,)].tolist(), out[(1,)].tolist(), int(out[()])
    ([3, 4], [1, 4, 2], 7)
    """
    closure = set(workload.closure)
    attributes = workload.attributes
    available = dict(tables)
    for a in sorted(closure, key=len, reverse=True):
        if a in available:
            continue
        ups = (tuple(sorted(a + (i,))) for i in attributes if i not in a)
        source = next((b for b in ups if b in closure and b in available), None)
        if source is None:
            continue
        axis = next(k for k, i in enumerate(source) if i not in a)
        available[a] = available[source].sum(axis=axis, dtype=np.int64)
    return available
