"""Weighted L2 isotonic regression (pool-adjacent-violators), optionally bounded.

This is the post-processing step of Hay et al.'s unattributed-histogram
estimator S-bar and of Kuo et al.'s count-of-counts estimators ``hg`` and
``hc``. The pooling itself is delegated to
:func:`scipy.optimize.isotonic_regression` (a compiled O(n) PAV); this module
adds box bounds, batching of many independent sequences in one call, exact
block means, and the blocks (runs of equal fitted value) that feed the
variance estimates downstream.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["IsotonicFit", "isotonic_regression", "segmented_isotonic_regression"]


@dataclass(frozen=True)
class IsotonicFit:
    """Result of an isotonic regression.

    Attributes
    ----------
    values : numpy.ndarray
        Fitted values (float64), one per input position.
    block_starts : numpy.ndarray
        Start index of every block, a maximal run of positions with equal
        fitted value (int64, ascending, first entry 0).
    block_lengths : numpy.ndarray
        Number of positions in every block (int64).
    """

    values: np.ndarray
    block_starts: np.ndarray
    block_lengths: np.ndarray

    def block_of(self) -> np.ndarray:
        """Return the block index of every position (int64 array)."""
        ids = np.zeros(self.values.size, dtype=np.int64)
        ids[self.block_starts[1:]] = 1
        return np.cumsum(ids)

    def block_length_per_position(self) -> np.ndarray:
        """Return, for every position, the length of the block containing it."""
        return np.repeat(self.block_lengths, self.block_lengths)


def isotonic_regression(
    y: np.ndarray,
    *,
    weights: np.ndarray | None = None,
    lower: float | None = None,
    upper: float | None = None,
    increasing: bool = True,
) -> IsotonicFit:
    """Closest monotone sequence to ``y`` in weighted L2, within ``[lower, upper]``.

    Parameters
    ----------
    y : numpy.ndarray
        Observations, 1-D.
    weights : numpy.ndarray, optional
        Positive weights ``w_i`` (default all ones).
    lower, upper : float, optional
        Box bounds on every fitted value.
    increasing : bool, default True
        Fit a non-decreasing (True) or non-increasing (False) sequence.

    Returns
    -------
    IsotonicFit
        Fitted values and blocks (runs of equal fitted value).

    Notes
    -----
    Solves ``min_x sum_i w_i (y_i - x_i)^2`` subject to ``x_1 <= ... <= x_n``
    and ``lower <= x_i <= upper``. Without bounds the solution is unique and
    piecewise constant; on each block ``B`` it equals the weighted mean
    ``sum_B w_i y_i / sum_B w_i`` (Hay et al. Theorem 1: ``x_k = min_j max_i
    M[i, j]``). With box bounds on a chain order the solution is the
    unbounded one clipped to ``[lower, upper]``: clipping keeps monotonicity,
    and the KKT conditions of the bounded problem hold block by block.
    Pooling runs in O(n) (pool-adjacent-violators).

    References
    ----------
    Hay, Rastogi, Miklau, Suciu. Boosting the accuracy of differentially
    private histograms through consistency. PVLDB 2010, section 3, Table 2.
    """
    y = np.asarray(y, dtype=np.float64)
    return segmented_isotonic_regression(
        y, np.zeros(1 if y.size else 0, dtype=np.int64), weights=weights,
        lower=lower, upper=upper, increasing=increasing,
    )


def segmented_isotonic_regression(
    y: np.ndarray,
    segment_starts: np.ndarray,
    *,
    weights: np.ndarray | None = None,
    lower: float | np.ndarray | None = None,
    upper: float | np.ndarray | None = None,
    increasing: bool = True,
) -> IsotonicFit:
    """Independent isotonic regressions on consecutive segments of ``y``, in one pass.

    Parameters
    ----------
    y : numpy.ndarray
        Concatenated observations of all segments, 1-D.
    segment_starts : numpy.ndarray
        Start index of each segment (ascending, first 0; empty if ``y`` is empty).
    weights : numpy.ndarray, optional
        Positive weights, one per position.
    lower, upper : float or numpy.ndarray, optional
        Bounds, scalar or one per segment.
    increasing : bool, default True
        Direction of the order constraint (the same for all segments).

    Returns
    -------
    IsotonicFit
        Fitted values; blocks never cross a segment boundary.

    Notes
    -----
    Segment ``s`` is shifted by ``s * D`` with ``D = max(y) - min(y) + 1``
    before one compiled PAV call, so that no pool can span two segments (the
    last value of a segment is below the first value of the next). The block
    boundaries are taken from that call and the block values are then
    recomputed exactly from the unshifted data as weighted block means.
    """
    y = np.asarray(y, dtype=np.float64)
    n = y.size
    starts = np.asarray(segment_starts, dtype=np.int64)
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return IsotonicFit(np.zeros(0), empty, empty)
    shifted = y if increasing else -y
    if starts.size > 1:
        seg_len = np.diff(np.append(starts, n))
        spread = float(y.max() - y.min()) + 1.0
        shifted = shifted + np.repeat(np.arange(starts.size, dtype=np.float64) * spread, seg_len)
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    from scipy.optimize import isotonic_regression  # scipy.optimize takes 0.5 s to import: only when fitting

    pav = isotonic_regression(shifted, weights=w, increasing=True)
    del shifted
    # Pools never span segments, so every segment start is already a block start.
    blocks = np.asarray(pav.blocks, dtype=np.int64)
    cuts = blocks[:-1]
    lengths = blocks[1:] - cuts
    if w is None:
        means = np.add.reduceat(y, cuts) / lengths
    else:
        means = np.add.reduceat(w * y, cuts) / np.add.reduceat(w, cuts)
    seg_of_block = np.searchsorted(starts, cuts, side="right") - 1
    if lower is not None:
        means = np.maximum(means, _per_block(lower, seg_of_block))
    if upper is not None:
        means = np.minimum(means, _per_block(upper, seg_of_block))
    # Blocks = maximal runs of equal value inside a segment: merge equal neighbours.
    keep = np.ones(cuts.size, dtype=bool)
    keep[1:] = (means[1:] != means[:-1]) | (seg_of_block[1:] != seg_of_block[:-1])
    if not keep.all():
        idx = np.flatnonzero(keep)
        lengths = np.add.reduceat(lengths, idx)
        cuts, means = cuts[idx], means[idx]
    return IsotonicFit(np.repeat(means, lengths), cuts, lengths)


def _per_block(bound: float | np.ndarray, seg_of_block: np.ndarray) -> np.ndarray | float:
    b = np.asarray(bound, dtype=np.float64)
    return float(b) if b.ndim == 0 else b[seg_of_block]
