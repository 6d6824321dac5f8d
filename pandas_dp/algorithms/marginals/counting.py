"""Counting kernel: every closure marginal from integer-coded columns, at the floor.

One ``np.bincount`` per maximal marginal of the closure over combined codes
(``code = ((c_0 n_1 + c_1) n_2 + c_2) ...`` in attribute order; the code of
all but the last attribute is shared by consecutive maximal sets), then every
smaller marginal of the closure by summing a containing table down (over
cells, not rows). No Python loop touches rows or cells.

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

__all__ = ["closure_marginals", "combined_codes"]


def combined_codes(codes: Sequence[np.ndarray], attrs: Marginal, sizes: Sequence[int]) -> np.ndarray:
    """Row-major cell index of every row in the marginal on ``attrs`` (``intp``; codes must be in domain)."""
    if not attrs:
        return np.zeros(len(codes[0]) if codes else 0, dtype=np.intp)
    out = np.asarray(codes[attrs[0]]).astype(np.intp, copy=True)
    for i in attrs[1:]:
        out *= sizes[i]
        out += codes[i]
    return out


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
    available: dict[Marginal, np.ndarray] = {}
    prefix: Marginal | None = None
    prefix_codes = np.empty(0, dtype=np.intp)
    buffer = np.empty(len(codes[0]) if codes else 0, dtype=np.intp)
    for top in workload.maximal:
        if top not in needed:
            continue
        cells = workload.cells(top)
        if len(top) >= 2:
            # Maximal sets come sorted, so neighbours share their first attributes: the combined
            # code of the prefix is computed once and reused (two passes per table, then bincount).
            if top[:-1] != prefix:
                prefix = top[:-1]
                prefix_codes = combined_codes(codes, prefix, sizes)
            combined = np.multiply(prefix_codes, sizes[top[-1]], out=buffer)
            combined += codes[top[-1]]
        else:
            combined = combined_codes(codes, top, sizes)
        if bad is not None:
            combined[bad] = cells        # one extra bin, dropped below
        counts = np.bincount(combined, minlength=cells + 1)[:cells] if bad is not None else \
            np.bincount(combined, minlength=cells)
        available[top] = counts.astype(np.int64, copy=False).reshape(workload.shape(top))
    # Sum down, largest sets first, each from an available set one attribute larger (cells, not rows).
    for a in sorted(closure, key=len, reverse=True):
        if a in available:
            continue
        source = next((b for b in up(a) if b in available), None)
        if source is None:
            continue
        axis = next(k for k, i in enumerate(source) if i not in a)
        available[a] = available[source].sum(axis=axis, dtype=np.int64)
    return {a: available[a] for a in wanted}
