"""AHP: accurate histogram publication by clustering sorted noisy counts.

Pure numpy. Only two functions read the true counts, and they are the two
noising steps: :func:`_noisy_counts` (phase 1, epsilon_1) and
:func:`_noisy_cluster_sums` (phase 2, epsilon_2). Everything in between
(thresholding, sorting, clustering) sees only the phase-1 noisy counts, see
:func:`ahp_clusters`.

References
----------
X. Zhang, R. Chen, J. Xu, X. Meng, Y. Xie. Towards Accurate Histogram
Publication under Differential Privacy. SDM 2014 (sections 4-5).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np

from pandas_dp._rational import to_fraction
from pandas_dp.errors import ParameterError
from pandas_dp.noise import discrete_laplace, discrete_laplace_variance, noise_scale

from .ahp_clustering import (
    EMPIRICAL_MAX_BINS,
    OPTIMAL_MAX_BINS,
    clustering_error,
    empirical_clustering,
    greedy_clustering,
    optimal_clustering,
)

__all__ = [
    "AHPRelease",
    "ahp",
    "ahp_clusters",
    "split_epsilon",
    "greedy_clustering",
    "empirical_clustering",
    "optimal_clustering",
    "clustering_error",
    "DEFAULT_EPSILON_SPLIT",
    "DEFAULT_ETA",
    "OPTIMAL_MAX_BINS",
    "EMPIRICAL_MAX_BINS",
]

#: Share of epsilon spent on the phase-1 noisy counts (see benchmarks/bench_ahp_defaults.py).
DEFAULT_EPSILON_SPLIT = 0.75
#: Threshold multiplier eta in theta = eta * ln(n) / epsilon_1 (benchmarks/bench_ahp_defaults.py).
DEFAULT_ETA = 0.1

Clustering = Literal["greedy", "empirical", "optimal"]


def split_epsilon(epsilon: float | Fraction, share: float | Fraction) -> tuple[Fraction, Fraction]:
    """Split ``epsilon`` into exact rationals ``(epsilon_1, epsilon_2)`` summing to ``epsilon``.

    Parameters
    ----------
    epsilon : float or Fraction
        Total privacy parameter (> 0).
    share : float or Fraction
        Share of ``epsilon`` given to phase 1, strictly between 0 and 1.

    Returns
    -------
    tuple of Fraction
        ``epsilon_1 = share * epsilon`` and ``epsilon_2 = epsilon - epsilon_1``, so that
        ``epsilon_1 + epsilon_2 == epsilon`` exactly (sequential composition).
    """
    eps = to_fraction(epsilon, name="epsilon")
    s = to_fraction(share, name="epsilon_split")
    if not 0 < s < 1:
        raise ParameterError(
            f"epsilon_split must be strictly between 0 and 1 (the share of epsilon spent on the "
            f"first phase). Got {float(s)!r}. Pass e.g. epsilon_split={DEFAULT_EPSILON_SPLIT}.")
    eps1 = eps * s
    return eps1, eps - eps1


# ---------------------------------------------------------------------------------------------
# The mechanism
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AHPRelease:
    """Output of :func:`ahp` (all fields are differentially private or public).

    Attributes
    ----------
    estimates : ndarray of float64
        Released value of every bin, in the original bin order.
    variances : ndarray of float64
        Noise-only variance of every bin, ``Var(Z) / |C|**2`` for a bin of cluster C;
        the approximation (bias) error of replacing a bin by its cluster mean is NOT included.
    labels : ndarray of int64
        Cluster id of every bin (original order); clusters numbered in sorted order.
    cluster_sizes, cluster_sums : ndarray
        Size and released noisy sum of every cluster.
    epsilon_1, epsilon_2 : Fraction
        Phase budgets, summing exactly to the total epsilon.
    theta : float
        Threshold applied to the phase-1 noisy counts.
    noise_variance : float
        Variance of the one phase-2 noise draw per cluster.
    """

    estimates: np.ndarray
    variances: np.ndarray
    labels: np.ndarray
    cluster_sizes: np.ndarray
    cluster_sums: np.ndarray
    epsilon_1: Fraction
    epsilon_2: Fraction
    theta: float
    noise_variance: float

    def range_variance(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Noise-only variance of half-open bin ranges [lo, hi) (bias not included).

        Notes
        -----
        A range R takes |R cap C| / |C| of cluster C's noise, so
        Var = Var(Z) * sum_C (|R cap C| / |C|)**2. |R cap C| comes from a binary search in
        the sorted (cluster, bin) keys; vectorized over chunks of ranges x clusters.
        """
        lo = np.atleast_1d(np.asarray(lo, dtype=np.int64))
        hi = np.atleast_1d(np.asarray(hi, dtype=np.int64))
        n, k = self.labels.size, self.cluster_sizes.size
        keys = np.sort(self.labels * (n + 1) + np.arange(n))
        base = np.arange(k, dtype=np.int64) * (n + 1)
        out = np.empty(lo.size)
        chunk = max(1, 2_000_000 // max(k, 1))
        for a in range(0, lo.size, chunk):       # chunks of ranges, bounded memory
            cnt = (np.searchsorted(keys, base[None, :] + hi[a:a + chunk, None])
                   - np.searchsorted(keys, base[None, :] + lo[a:a + chunk, None]))
            out[a:a + chunk] = self.noise_variance * np.sum(
                (cnt / self.cluster_sizes[None, :]) ** 2, axis=1)
        return out


def _noisy_counts(counts: np.ndarray, epsilon_1: Fraction, rng: np.random.Generator | None
                  ) -> np.ndarray:
    """Phase 1 (reads the TRUE counts): counts + discrete Laplace(1/epsilon_1)."""
    return counts + discrete_laplace(noise_scale(1, epsilon_1), counts.size, rng=rng)


def _noisy_cluster_sums(counts: np.ndarray, labels: np.ndarray, k: int, epsilon_2: Fraction,
                        rng: np.random.Generator | None) -> np.ndarray:
    """Phase 2 (reads the TRUE counts): each cluster's true sum + one discrete Laplace draw.

    Clusters are disjoint, so the k sums have L1 sensitivity 1 together.
    """
    sums = np.bincount(labels, weights=counts, minlength=k).astype(np.int64)
    return sums + discrete_laplace(noise_scale(1, epsilon_2), k, rng=rng)


def ahp_clusters(noisy: np.ndarray, *, epsilon_1: float | Fraction, noise_variance: float,
                 eta: float = DEFAULT_ETA, clustering: Clustering = "greedy"
                 ) -> tuple[np.ndarray, float]:
    """Cluster bins from their phase-1 noisy counts only (threshold, sort, cluster).

    Parameters
    ----------
    noisy : ndarray of int64
        Phase-1 noisy counts (original order).
    epsilon_1 : float or Fraction
        Phase-1 budget (public), used by the threshold.
    noise_variance : float
        Variance of one phase-2 noise draw.
    eta : float
        Threshold multiplier.
    clustering : {"greedy", "empirical", "optimal"}
        Clustering strategy.

    Returns
    -------
    labels : ndarray of int64
        Cluster id of every bin, original order.
    theta : float
        Threshold used: ``eta * ln(n) / epsilon_1``; noisy counts below it become 0.
    """
    n = noisy.size
    theta = float(eta) * math.log(n) / float(epsilon_1) if n > 0 else 0.0
    h = np.where(noisy >= theta, noisy, 0).astype(np.int64)
    order = np.argsort(h, kind="stable")
    fn = {"greedy": greedy_clustering, "empirical": empirical_clustering,
          "optimal": optimal_clustering}[clustering]
    starts = fn(h[order], noise_variance=noise_variance)
    sorted_labels = np.zeros(n, dtype=np.int64)
    sorted_labels[starts[1:]] = 1
    np.cumsum(sorted_labels, out=sorted_labels)
    labels = np.empty(n, dtype=np.int64)
    labels[order] = sorted_labels
    return labels, theta


def ahp(counts: np.ndarray, *, epsilon: float | Fraction,
        epsilon_split: float = DEFAULT_EPSILON_SPLIT, eta: float = DEFAULT_ETA,
        clustering: Clustering = "greedy", rng: np.random.Generator | None = None) -> AHPRelease:
    """Release a histogram with AHP (Algorithm 1 of Zhang et al.).

    Parameters
    ----------
    counts : ndarray of int
        True bin counts (1-D; d-dim grids are flattened by the caller).
    epsilon : float or Fraction
        Total privacy parameter; ``epsilon_1 + epsilon_2 == epsilon`` exactly.
    epsilon_split : float
        Share of ``epsilon`` spent on the phase-1 noisy counts.
    eta : float
        Threshold multiplier, ``theta = eta * ln(n) / epsilon_1``.
    clustering : {"greedy", "empirical", "optimal"}
        Clustering strategy (Algorithm 3, Algorithm 2, exact DP).
    rng : numpy.random.Generator, optional
        None means a cryptographically secure source.

    Returns
    -------
    AHPRelease

    Notes
    -----
    epsilon_1-DP noisy counts (sensitivity 1), thresholded, sorted and clustered (no
    privacy cost); then each cluster's true sum plus one discrete Laplace draw at
    epsilon_2 (disjoint clusters: sensitivity 1), spread evenly over its bins. Per-bin
    error (Theorem 4.2): (H_j - mean(C))**2 + Var(Z)/|C|**2; only the second (noise) part
    is reported in ``variances``.

    References
    ----------
    Zhang et al., SDM 2014, Algorithm 1 and Theorems 4.2, 5.1.
    """
    x = np.asarray(counts, dtype=np.int64).ravel()
    eps1, eps2 = split_epsilon(epsilon, epsilon_split)
    var2 = discrete_laplace_variance(noise_scale(1, eps2))
    noisy = _noisy_counts(x, eps1, rng)                                # reads true counts
    labels, theta = ahp_clusters(noisy, epsilon_1=eps1, noise_variance=var2, eta=eta,
                                 clustering=clustering)                # noisy values only
    k = int(labels.max()) + 1 if labels.size else 0
    sums = _noisy_cluster_sums(x, labels, k, eps2, rng)                 # reads true counts
    sizes = np.bincount(labels, minlength=k)
    estimates = sums[labels] / sizes[labels]
    variances = var2 / sizes[labels].astype(np.float64) ** 2
    return AHPRelease(estimates=estimates, variances=variances, labels=labels,
                      cluster_sizes=sizes, cluster_sums=sums, epsilon_1=eps1, epsilon_2=eps2,
                      theta=theta, noise_variance=var2)
