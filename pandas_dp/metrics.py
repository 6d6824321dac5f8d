"""Error metrics for histogram releases.

Pure numpy; inputs are count vectors (or mappings size -> count for
count-of-counts histograms).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["emd", "mse", "squared_error", "count_of_counts_vector"]


def count_of_counts_vector(h: np.ndarray | Mapping[int, int] | object, length: int | None = None) -> np.ndarray:
    """Dense count-of-counts vector ``H[0..]`` from an array or a size -> count mapping.

    Parameters
    ----------
    h : array_like or mapping
        Either a dense vector (``h[i]`` = number of groups of size ``i``) or a
        mapping / pandas Series from size to number of groups.
    length : int, optional
        Pad with zeros to this length.

    Returns
    -------
    numpy.ndarray
        Dense float64 vector.
    """
    if hasattr(h, "items") and not isinstance(h, np.ndarray):
        items = list(h.items())
        sizes = np.asarray([int(k) for k, _ in items], dtype=np.int64)
        counts = np.asarray([v for _, v in items], dtype=np.float64)
        n = int(sizes.max()) + 1 if sizes.size else 0
        dense = np.zeros(max(n, length or 0))
        np.add.at(dense, sizes, counts)
        return dense
    dense = np.asarray(h, dtype=np.float64).ravel()
    if length is not None and dense.size < length:
        dense = np.concatenate([dense, np.zeros(length - dense.size)])
    return dense


def emd(estimate: np.ndarray | Mapping[int, int], truth: np.ndarray | Mapping[int, int]) -> float:
    """Earth mover's distance between two count-of-counts histograms.

    Parameters
    ----------
    estimate, truth : array_like or mapping
        Count-of-counts histograms: dense vectors ``H[i]`` (groups of size
        ``i``) or mappings size -> number of groups.

    Returns
    -------
    float
        ``sum_i |C_est[i] - C_true[i]|`` with ``C[i] = sum_{j <= i} H[j]``.

    Notes
    -----
    With equal numbers of groups this is the minimum number of persons to add
    to or remove from groups to turn one histogram into the other (Kuo et al.
    Lemma 1): the L1 distance between the cumulative histograms.

    References
    ----------
    Kuo, Chiang, Kifer et al. Differentially private hierarchical
    count-of-counts histograms. PVLDB 2018, section 3.1.

    Examples
    --------
    >>> emd([0, 20], [0, 0, 20])
    20.0
    """
    a = count_of_counts_vector(estimate)
    b = count_of_counts_vector(truth)
    n = max(a.size, b.size)
    a = count_of_counts_vector(a, n)
    b = count_of_counts_vector(b, n)
    return float(np.abs(np.cumsum(a) - np.cumsum(b)).sum())


def squared_error(estimate: np.ndarray, truth: np.ndarray) -> float:
    """Total squared error ``sum_i (estimate_i - truth_i)^2``."""
    d = np.asarray(estimate, dtype=np.float64) - np.asarray(truth, dtype=np.float64)
    return float(np.dot(d, d))


def mse(estimate: np.ndarray, truth: np.ndarray) -> float:
    """Mean squared error per cell, ``squared_error / n``."""
    truth = np.asarray(truth)
    return squared_error(estimate, truth) / max(truth.size, 1)
