"""AHP: accurate histogram publication by clustering sorted noisy counts.

Pure numpy. :func:`plan_ahp` splits the privacy loss into the two phases and
asks each for its noise (public inputs only). Only two steps read the true
counts, and they are the two noising steps: phase 1 (every bin plus noise) and
:func:`_noisy_cluster_sums` (phase 2). Everything in between (thresholding,
sorting, clustering) sees only the phase-1 noisy counts, see
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
from typing import Any, Literal

import numpy as np

from pandas_dp.privacy.loss import Noise, PrivacyLoss

from pandas_dp.algorithms.ahp_clustering import (
    EMPIRICAL_MAX_BINS,
    OPTIMAL_MAX_BINS,
    clustering_error,
    empirical_clustering,
    greedy_clustering,
    optimal_clustering,
)

__all__ = [
    "AHPPlan",
    "AHPRelease",
    "plan_ahp",
    "ahp",
    "ahp_clusters",
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


@dataclass(frozen=True)
class AHPPlan:
    """The public part of an AHP release: the two phases' losses and noise, and the threshold.

    Attributes
    ----------
    loss_1, loss_2 : PrivacyLoss
        Phase losses (noisy counts, noisy cluster sums), adding up exactly to the release's loss.
    noise_1, noise_2 : Noise
        Each phase's noise (sensitivity 1: one row changes one bin, or one cluster's sum, by 1).
    theta : float
        Threshold applied to the phase-1 noisy counts, ``eta * ln(n) / epsilon_1``.
    eta : float
        Threshold multiplier.
    clustering : {"greedy", "empirical", "optimal"}
        Clustering strategy.
    """

    loss_1: PrivacyLoss
    loss_2: PrivacyLoss
    noise_1: Noise
    noise_2: Noise
    theta: float
    eta: float
    clustering: Clustering


def plan_ahp(n_bins: int, *, loss: PrivacyLoss, epsilon_split: float | Fraction = DEFAULT_EPSILON_SPLIT,
             eta: float = DEFAULT_ETA, clustering: Clustering = "greedy") -> AHPPlan:
    """Plan an AHP release from public information (the number of bins, the loss, the knobs).

    ``loss_1 = epsilon_split * loss`` and ``loss_2 = loss - loss_1`` exactly
    (sequential composition). The threshold is the paper's
    ``theta = eta * ln(n) / epsilon_1``: AHP is a pure-DP method, defined with
    the phase-1 epsilon.

    Raises
    ------
    ParameterError
        When a phase's share is too small for the noise sampler.
    """
    loss_1, loss_2 = loss.phases(epsilon_split)
    noise_1 = loss_1.noise(what="AHP's first phase")
    noise_2 = loss_2.noise(what="AHP's second phase")
    theta = float(eta) * math.log(n_bins) / float(loss_1.amount) if n_bins > 0 else 0.0
    return AHPPlan(loss_1, loss_2, noise_1, noise_2, theta, float(eta), clustering)


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
    plan : AHPPlan
        The phases' losses and noise, and the threshold.
    noise_variance : float
        Variance of the one phase-2 noise draw per cluster.
    """

    estimates: np.ndarray
    variances: np.ndarray
    labels: np.ndarray
    cluster_sizes: np.ndarray
    cluster_sums: np.ndarray
    plan: AHPPlan
    noise_variance: float

    @property
    def theta(self) -> float:
        """Threshold applied to the phase-1 noisy counts."""
        return self.plan.theta

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


def _noisy_cluster_sums(counts: np.ndarray, labels: np.ndarray, k: int, noise: Noise, rng: Any) -> np.ndarray:
    """Phase 2 (reads the TRUE counts): each cluster's true sum + one noise draw.

    Clusters are disjoint, so the k sums have L1 sensitivity 1 together.
    """
    sums = np.bincount(labels, weights=counts, minlength=k).astype(np.int64)
    return noise.add(sums, rng)


def ahp_clusters(noisy: np.ndarray, *, theta: float, noise_variance: float,
                 clustering: Clustering = "greedy") -> np.ndarray:
    """Cluster bins from their phase-1 noisy counts only (threshold, sort, cluster).

    Parameters
    ----------
    noisy : ndarray of int64
        Phase-1 noisy counts (original order).
    theta : float
        Threshold (public, :attr:`AHPPlan.theta`): noisy counts below it become 0.
    noise_variance : float
        Variance of one phase-2 noise draw.
    clustering : {"greedy", "empirical", "optimal"}
        Clustering strategy.

    Returns
    -------
    labels : ndarray of int64
        Cluster id of every bin, original order.
    """
    n = noisy.size
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
    return labels


def ahp(counts: np.ndarray, plan: AHPPlan | None = None, *, loss: PrivacyLoss | None = None,
        rng: Any = None, **knobs: Any) -> AHPRelease:
    """Release a histogram with AHP (Algorithm 1 of Zhang et al.).

    Parameters
    ----------
    counts : ndarray of int
        True bin counts (1-D; d-dim grids are flattened by the caller).
    plan : AHPPlan, optional
        From :func:`plan_ahp`; without it one is made from ``loss`` and ``knobs``
        (``epsilon_split``, ``eta``, ``clustering``).
    loss : PrivacyLoss, optional
        The release's loss when no plan is given.
    rng : numpy.random.Generator, optional
        None means a cryptographically secure source.

    Returns
    -------
    AHPRelease

    Notes
    -----
    Phase-1 noisy counts (sensitivity 1), thresholded, sorted and clustered (no
    privacy cost); then each cluster's true sum plus one phase-2 noise draw
    (disjoint clusters: sensitivity 1), spread evenly over its bins. Per-bin
    error (Theorem 4.2): (H_j - mean(C))**2 + Var(Z)/|C|**2; only the second (noise) part
    is reported in ``variances``.

    References
    ----------
    Zhang et al., SDM 2014, Algorithm 1 and Theorems 4.2, 5.1.
    """
    x = np.asarray(counts, dtype=np.int64).ravel()
    if plan is None:
        if loss is None:
            raise TypeError("ahp needs a plan or a loss")
        plan = plan_ahp(x.size, loss=loss, **knobs)
    var2 = plan.noise_2.variance()
    noisy = plan.noise_1.add(x, rng)                                   # reads true counts
    labels = ahp_clusters(noisy, theta=plan.theta, noise_variance=var2,
                          clustering=plan.clustering)                  # noisy values only
    k = int(labels.max()) + 1 if labels.size else 0
    sums = _noisy_cluster_sums(x, labels, k, plan.noise_2, rng)         # reads true counts
    sizes = np.bincount(labels, minlength=k)
    estimates = sums[labels] / sizes[labels]
    variances = var2 / sizes[labels].astype(np.float64) ** 2
    return AHPRelease(estimates=estimates, variances=variances, labels=labels,
                      cluster_sizes=sizes, cluster_sums=sums, plan=plan, noise_variance=var2)
