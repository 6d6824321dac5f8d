"""Bounding before the rows meet: the rows of one part of a frame that no unit can keep, dropped where they are.

A unit keeps its ``k`` live rows of smallest key (:mod:`.bounding`: keys are a pseudorandom
function of each row's position in the frame, full-key ties go to the earlier position). Split
the frame's rows into parts (Dask partitions). If a row is not among the ``k`` smallest keys of
its unit's live rows *in its part*, at least ``k`` rows of its unit in that part come before it,
and they are rows of the whole frame too: the row is not among its unit's ``k`` smallest in the
frame, so it is never kept. Dropping, in every part, every unit's rows beyond its ``k`` smallest
therefore keeps every row the whole frame keeps, and ranking what is left by the same keys picks
the same ``k`` rows of every unit: the kept set is exactly the one of the whole frame.

The same holds for any group whose rows are ranked by row keys: the cells scheme keeps at most
``r`` rows of every (unit, cell) pair (its pairs are then ranked by keys of the pair, which do
not depend on which of the pair's rows are left, and every pair keeps at least one row), and a
step that only needs ``min(rows, L)`` per unit (the contribution histogram of ``max_rows="auto"``,
the kept and dropped rows of ``report_dropped``) can keep any ``L`` rows of a unit in every part:
the rows left per unit ``r'`` satisfy ``min(r, L) <= r' <= r``, so ``min(r', L) = min(r, L)``.

Finding the rows to drop needs each unit's rows grouped, a hash-table pass that costs about what
bounding itself costs. Most rows need none: rows are first counted per bucket of a hash of their
group (at least as many buckets as rows), and only the rows of buckets holding more than ``k`` rows
(a superset of the groups over ``k``) are grouped exactly and ranked. Which rows are dropped
depends only on the rows, the keys and ``k``; the bucketing changes the work, never the result.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from pandas_dp.engines.pandas.bounding import _dropped_rows, index_dtype

__all__ = ["local_survivors"]

_MIX = np.uint64(0x9E3779B97F4A7C15)     # multiplicative hashing of the buckets (Knuth's golden ratio)


def _candidates(rows: np.ndarray, hashes: np.ndarray, cells: np.ndarray | None, limit: int) -> np.ndarray:
    """The rows (of ``rows``) whose bucket of a hash of their group holds more than ``limit`` rows."""
    bits = max(int(rows.size - 1).bit_length(), 1)         # at least as many buckets as rows
    h = hashes[rows]
    if cells is not None:
        h = h ^ (cells[rows].astype(np.uint64) * _MIX)
    bucket = ((h * _MIX) >> np.uint64(64 - bits)).astype(np.intp)
    over = np.bincount(bucket, minlength=1 << bits)[bucket] > limit
    return rows[over]


def local_survivors(live: np.ndarray, hashes: np.ndarray, limit: int, keys_of: Callable[[np.ndarray], np.ndarray],
                    cells: np.ndarray | None = None) -> np.ndarray:
    """Which rows of one part may still be kept: live, with a unit, and among their group's ``limit`` smallest keys.

    Parameters
    ----------
    live : ndarray of bool
        The rows that count toward their unit's bound (in the domain of the step).
    hashes : ndarray of uint64
        Every row's unit hash (0: no unit; such rows are never kept).
    limit : int
        Rows each group keeps (``max_rows``; ``max_rows_per_cell`` with ``cells``).
    keys_of : callable
        ``keys_of(rows)``: the uint64 keys of the rows at these (ascending) indices.
    cells : ndarray, optional
        Each row's cell identity: the groups are then (unit, cell) pairs.

    Returns
    -------
    ndarray of bool
        ``live & (hashes != 0)``, less the rows beyond their group's ``limit`` smallest keys
        (ties by index: pass the rows in the order of their positions in the frame).
    """
    keep = np.asarray(live, dtype=bool) & (hashes != 0)
    rows = np.flatnonzero(keep)
    if rows.size <= limit:
        return keep
    cand = _candidates(rows, hashes, cells, limit)
    if cand.size == 0:
        return keep
    groups = pd.factorize(hashes[cand])[0].astype(np.int64)
    if cells is not None:
        cell = pd.factorize(np.asarray(cells)[cand])[0].astype(np.int64)
        groups = pd.factorize(groups * (int(cell.max()) + 1) + cell)[0].astype(np.int64)
    dropped = _dropped_rows(groups.astype(index_dtype(cand.size)), None, int(limit),
                            lambda sub: keys_of(cand[sub]))
    keep[cand[dropped]] = False
    return keep

