"""Unattributed histograms: Hay et al.'s S-bar estimator.

Counts in (the multiset of per-group counts), a sorted, non-negative,
integral private estimate out, with per-position variance estimates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pandas_dp.algorithms.isotonic import IsotonicFit, segmented_isotonic_regression
from pandas_dp.privacy.loss import Noise

__all__ = [
    "UnattributedEstimate",
    "top_n_sorted",
    "unattributed_histogram",
    "noisy_group_count",
    "sorted_to_count_of_counts",
]


@dataclass(frozen=True)
class UnattributedEstimate:
    """Private unattributed histogram.

    Attributes
    ----------
    counts : numpy.ndarray
        Estimated counts in ascending order (int64, non-negative).
    variances : numpy.ndarray
        Per-position variance estimate ``Var(noise) / m`` where ``m`` is the
        length of the isotonic block containing the position.
    block_lengths : numpy.ndarray
        Length of the block containing each position.
    noise : Noise
        The noise that was drawn (one value per position).
    """

    counts: np.ndarray
    variances: np.ndarray
    block_lengths: np.ndarray
    noise: Noise


def top_n_sorted(counts: np.ndarray, n: int) -> np.ndarray:
    """The ``n`` largest counts in ascending order, padded on the left with zeros.

    Parameters
    ----------
    counts : numpy.ndarray
        Per-group counts (any order).
    n : int
        Output length (public or privately estimated number of groups).

    Returns
    -------
    numpy.ndarray
        ``S`` of length ``n``: sorted ascending.

    Notes
    -----
    Padding with zeros and keeping the top ``n`` keeps the L1 sensitivity of
    the sorted vector at 1 when ``n`` is not the true number of groups:
    adding one row either raises one entry by one, or inserts a count of 1
    that replaces a padding zero (or falls below the kept top ``n``).
    """
    c = np.sort(np.asarray(counts, dtype=np.int64))
    if c.size >= n:
        return c[c.size - n:]
    return np.concatenate([np.zeros(n - c.size, dtype=np.int64), c])


def unattributed_histogram(
    sorted_counts: np.ndarray,
    *,
    noise: Noise,
    rng: Any = None,
) -> UnattributedEstimate:
    """Hay et al.'s S-bar: noisy sorted counts, isotonic regression, rounding.

    Parameters
    ----------
    sorted_counts : numpy.ndarray
        True counts sorted ascending (the query ``S``), length ``n``.
    noise : Noise
        Noise calibrated for sensitivity 1 (one value per position).
    rng : numpy.random.Generator, optional
        Randomness for tests; ``None`` uses the secure source.

    Returns
    -------
    UnattributedEstimate
        Sorted non-negative integers and per-position variances.

    Notes
    -----
    ``S`` has L1 sensitivity 1 (adding a row changes one count by one and the
    sorted order can be kept), so ``S~ = S + Z`` with ``Z_i`` the noise of
    sensitivity 1 (discrete Laplace of scale ``t = 1/epsilon`` for pure DP). ``S-bar = argmin_{x_1 <= ... <= x_n, x >= 0}
    ||x - S~||_2`` (pool-adjacent-violators), rounded to the nearest integer
    (rounding keeps the order). Error of S-bar is
    ``O(sum_i log^3(n_i) / epsilon^2)`` over the ``d`` distinct counts of
    multiplicity ``n_i`` (Theorem 2), against ``2n/epsilon^2`` for ``S~``.
    A position in an isotonic block of length ``m`` is a mean of ``m`` noisy
    values: its variance estimate is ``Var(Z) / m`` (partition effects are
    not counted, as in Kuo et al. section 5.1.1).

    References
    ----------
    Hay, Rastogi, Miklau, Suciu. PVLDB 2010, section 3 and appendix A.
    """
    s = np.asarray(sorted_counts, dtype=np.int64)
    noisy = noise.add(s, rng)
    fit = segmented_isotonic_regression(
        noisy.astype(np.float64), np.zeros(1 if s.size else 0, dtype=np.int64), lower=0.0
    )
    return _round_fit(fit, noise)


def _round_fit(fit: IsotonicFit, noise: Noise) -> UnattributedEstimate:
    counts = np.floor(fit.values + 0.5).astype(np.int64)
    m = fit.block_length_per_position()
    var = noise.variance() / m
    return UnattributedEstimate(counts, var, m, noise)


def noisy_group_count(true_count: int, *, noise: Noise, limit: int, rng: Any = None) -> int:
    """Privately estimated number of groups: ``n + Z`` clamped to ``[0, limit]``.

    Parameters
    ----------
    true_count : int
        The true number of groups (private).
    noise : Noise
        Noise of sensitivity 1.
    limit : int
        Public cap on the estimate (clamping is post-processing): the release
        allocates one position per estimated group.

    Notes
    -----
    Adding or removing one row changes the number of non-empty groups by at
    most one (sensitivity 1).
    """
    z = noise.sample(1, rng)
    return min(max(0, int(true_count) + int(z[0])), int(limit))


def sorted_to_count_of_counts(sorted_counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Run-length form (sizes, number of groups) of a sorted unattributed histogram."""
    s = np.asarray(sorted_counts, dtype=np.int64)
    sizes, groups = np.unique(s, return_counts=True)
    return sizes, groups.astype(np.int64)
