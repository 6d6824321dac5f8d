"""DAWA stage 1: a private, data-aware partition of the domain into buckets.

A bucket ``B`` (an interval of bins) replaced by its noisy total spread evenly
over its bins has expected L1 error about ``dev(x, B) + b2``, where
``dev(x, B) = sum_{i in B} |x_i - mean_B(x)|`` is the error of the uniform
assumption and ``b2`` the expected absolute noise of one bucket count in stage
2 (``1 / epsilon_2`` for Laplace noise). DAWA looks for the partition of least
total cost ``sum_B (dev(x, B) + b2)`` among a set of candidate intervals, using
noisy deviations, so that the partition is differentially private.

Candidates and calibration (what this module does)
--------------------------------------------------
The candidates are the **dyadic-aligned** intervals: the nodes of the binary
tree over the bins (:func:`~pandas_dp.algorithms.tree.layout.tree_layout`
with ``b = 2``), ``[j 2**k, min((j + 1) 2**k, n))`` on level ``k``. Every bin
lies in exactly one candidate per level. Adding or removing one row changes
``dev(x, B)`` by at most ``2 (1 - 1/|B|)`` (the bin moves by 1, the mean by
``1/|B|``), so the vector of all candidate deviations has L1 sensitivity
``sum_k 2 (1 - 1/min(2**k, n))`` over the levels ``k >= 1`` (single bins have
``dev = 0`` and get no noise). The partition loss is split across the levels
in proportion to these sensitivities, which gives every candidate noise of the
same scale ``b1 = sum_k 2 (1 - 2**-k) / epsilon_1`` in deviation units (the
Laplace mechanism on the whole cost vector). To use exact integer noise, a
level's costs are released as the integers ``|B| dev(x, B) = sum_i ||B| x_i - S_B|``
(sensitivity ``2 (|B| - 1)``) and divided by ``|B|`` afterwards.

Post-processing (no privacy cost): a noisy deviation below 0 is raised to 0
(``dev >= 0``; the research code does the same), and the least-cost partition
made of candidates is found bottom-up on the tree, ``best(v) = min(cost(v),
sum_children best(c))``, O(n) per tree and vectorized per level. It only reads
noisy costs and public values, so the partition is epsilon_1-DP.

The research implementation (dpcomp_core, ``L1partition_approx``) scores
power-of-two intervals at *every* start position with per-interval noise
scaled to one interval's sensitivity; a bin lies in about ``2 n`` of those
intervals, and we found no argument that this composes to ``epsilon_1``, so
this module restricts candidates to aligned intervals, whose calibration
follows from the L1 sensitivity above.

References
----------
.. [1] C. Li, M. Hay, G. Miklau, Y. Wang. "A Data- and Workload-Aware Algorithm
   for Range Queries Under Differential Privacy", PVLDB 7(5), 2014, Section 3
   (private partitioning, bucket cost, dynamic programme over intervals whose
   lengths are powers of two).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from pandas_dp.algorithms.tree.layout import tree_layout
from pandas_dp.privacy.loss import PrivacyLoss, Sensitivity

__all__ = ["PrivatePartition", "deviation_costs", "level_sensitivities", "least_cost_partition",
           "exact_partition", "private_partition", "partition_loss_shares"]


def level_sensitivities(n: int) -> tuple[Fraction, ...]:
    """L1 sensitivity of the candidate deviations of each level ``k = 1..h`` (exact).

    ``2 (1 - 1/L_k)`` with ``L_k = min(2**k, n)`` the length of the longest
    candidate of level ``k``: one row changes one candidate per level.

    Examples
    --------
    >>> [str(s) for s in level_sensitivities(5)]
    ['1', '3/2', '8/5']
    """
    layout = tree_layout(max(int(n), 1), 2)
    return tuple(Fraction(2) * (1 - Fraction(1, min(1 << k, n))) for k in range(1, layout.n_levels))


def partition_loss_shares(n: int) -> tuple[Fraction, ...]:
    """Shares of the partition loss per level ``k = 1..h``: proportional to :func:`level_sensitivities`."""
    sens = level_sensitivities(n)
    total = sum(sens, Fraction(0))
    return tuple(s / total for s in sens)


def _intervals(n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Bins ``[j 2**k, min((j + 1) 2**k, n))`` of the nodes of level ``k`` of ``tree_layout(n, 2)``."""
    lo = np.arange(((n - 1) >> k) + 1, dtype=np.int64) << k
    return lo, np.minimum(lo + (1 << k), n)


def deviation_costs(counts: np.ndarray) -> tuple[np.ndarray, ...]:
    """Scaled L1 deviations ``|B| dev(x, B) = sum_{i in B} ||B| x_i - S_B|`` of every candidate.

    Parameters
    ----------
    counts : ndarray of int
        Exact 1-D counts (reads the true data: only :func:`private_partition`
        and tests call it).

    Returns
    -------
    tuple of ndarray of int64
        One array per tree level ``k = 1..h`` (index ``k - 1``), one value per
        node of ``tree_layout(n, 2)``. Exact integers; O(n) per level.
    """
    x = np.asarray(counts, dtype=np.int64).ravel()
    n = x.size
    layout = tree_layout(max(n, 1), 2)
    big = 2 * max(n, 1) * max(int(x.sum()), 1) >= 2 ** 62
    xv = x.astype(object) if big else x            # exact Python ints when int64 could overflow
    out = []
    for k in range(1, layout.n_levels):
        lo, hi = _intervals(n, k)
        lengths = hi - lo
        sums = np.add.reduceat(xv, lo)
        node = np.arange(n) >> k
        dev = np.abs(lengths[node].astype(xv.dtype) * xv - sums[node])
        cost = np.add.reduceat(dev, lo)
        out.append(np.asarray(cost, dtype=object if big else np.int64))
    return tuple(out)


def least_cost_partition(level_costs: tuple[np.ndarray, ...], bucket_cost: float, n: int) -> np.ndarray:
    """Least-cost partition of ``n`` bins into dyadic-aligned candidate intervals.

    Parameters
    ----------
    level_costs : tuple of ndarray
        Deviation cost (in count units) of every candidate of levels
        ``k = 1..h`` of ``tree_layout(n, 2)``; noisy in a release, exact in tests.
    bucket_cost : float
        Cost ``b2`` added per bucket (single bins cost ``b2`` only).
    n : int
        Number of bins.

    Returns
    -------
    ndarray of int64
        Bucket edges ``0 = e_0 < e_1 < ... < e_B = n``.

    Notes
    -----
    Bottom-up: ``best(v) = min(dev_v + b2, sum_c best(c))`` (ties keep the larger
    bucket); top-down: a node is a bucket when it was kept and no ancestor was.
    This is the dynamic programme over partitions restricted to the candidates
    (every such partition is a pruning of the tree), in O(n).
    """
    layout = tree_layout(max(int(n), 1), 2)
    best = np.full(layout.level_sizes[0], float(bucket_cost))
    keep = [np.ones(layout.level_sizes[0], dtype=bool)]
    for k in range(1, layout.n_levels):
        own = np.asarray(level_costs[k - 1], dtype=np.float64) + bucket_cost
        below = layout.aggregate(best, k - 1)
        kept = own <= below
        keep.append(kept)
        best = np.where(kept, own, below)
    starts = []
    blocked = np.zeros(layout.level_sizes[-1], dtype=bool)
    for k in range(layout.n_levels - 1, -1, -1):
        bucket = keep[k] & ~blocked
        starts.append(_intervals(int(n), k)[0][bucket])
        if k > 0:
            blocked = layout.expand(blocked | bucket, k - 1)
    return np.append(np.sort(np.concatenate(starts)), n).astype(np.int64)


def exact_partition(counts: np.ndarray, bucket_cost: float) -> np.ndarray:
    """The partition stage 1 would choose with its noise switched off: the least-cost partition of the
    *exact* per-bin deviations (each candidate's :func:`deviation_costs` over its number of bins).

    Reads the true counts and releases nothing: tests (a reference, a deliberately leaky DAWA) and
    benchmarks (a bound on what a choice could know) only.

    Examples
    --------
    >>> exact_partition(np.array([5, 5, 5, 5, 0, 9, 0, 9]), bucket_cost=2.0).tolist()
    [0, 4, 5, 6, 7, 8]
    """
    x = np.asarray(counts, dtype=np.int64).ravel()
    n = x.size
    costs = tuple(c / np.subtract(*_intervals(n, k)[::-1]) for k, c in enumerate(deviation_costs(x), start=1))
    return least_cost_partition(costs, bucket_cost, n)


@dataclass(frozen=True)
class PrivatePartition:
    """Output of :func:`private_partition` (everything is differentially private or public).

    Attributes
    ----------
    edges : ndarray of int64
        Bucket edges ``0 = e_0 < ... < e_B = n``.
    noisy_costs : tuple of ndarray
        Released noisy deviations (count units, before clipping at 0) per level ``k = 1..h``.
    level_losses : tuple of PrivacyLoss
        Exact loss of each level; they add up to the partition loss.
    cost_noise_scale : float
        Standard deviation of the noise on one deviation (equal across levels, up to
        the truncated last candidates).
    bucket_cost : float
        ``b2`` used by the dynamic programme.
    """

    edges: np.ndarray
    noisy_costs: tuple[np.ndarray, ...]
    level_losses: tuple[PrivacyLoss, ...]
    cost_noise_scale: float
    bucket_cost: float

    @property
    def n_buckets(self) -> int:
        """Number of buckets ``B``."""
        return int(self.edges.size - 1)


def private_partition(counts: np.ndarray, *, loss: PrivacyLoss, bucket_cost: float,
                      rng: Any = None) -> PrivatePartition:
    """Stage 1 of DAWA: noisy candidate deviations, then the least-cost partition.

    Parameters
    ----------
    counts : ndarray of int
        Exact 1-D counts on the public domain.
    loss : PrivacyLoss
        The partition's privacy loss (``epsilon_1``), split exactly across levels
        by :func:`partition_loss_shares`.
    bucket_cost : float
        ``b2``, the expected absolute noise of one stage-2 bucket count.
    rng : numpy.random.Generator, optional
        ``None``: the secure source.

    Returns
    -------
    PrivatePartition

    Notes
    -----
    Level ``k`` gets ``loss_k = loss * s_k / sum_j s_j`` with ``s_k`` the level
    sensitivity (:func:`level_sensitivities`). Each candidate ``B`` of the level
    releases ``|B| dev(x, B) + Z`` with ``Z`` from ``loss_k.noise`` for L1
    sensitivity ``2 (|B| - 1)`` (the full-length candidates and the shorter last
    one each get noise for their own length; one row changes one candidate per
    level, so the level is ``loss_k``-DP by parallel composition, and the levels
    compose to ``loss``). Only these draws read the true counts.

    Examples
    --------
    >>> from pandas_dp.privacy.loss import PureDP
    >>> x = np.array([0, 0, 0, 0, 50, 50, 50, 50])
    >>> part = private_partition(x, loss=PureDP(Fraction(10)), bucket_cost=1.0,
    ...                          rng=np.random.default_rng(0))
    >>> part.edges.tolist()
    [0, 4, 8]
    """
    x = np.asarray(counts, dtype=np.int64).ravel()
    n = x.size
    layout = tree_layout(max(n, 1), 2)
    shares = partition_loss_shares(n)
    level_losses = loss.split(list(shares)) if shares else (loss,)    # one bin: spent, nothing to noise
    exact = deviation_costs(x)                                           # reads true counts
    noisy = []
    scale = 0.0
    for k in range(1, layout.n_levels):
        lo, hi = _intervals(n, k)
        lengths = hi - lo
        value = np.empty(lengths.size)
        for length in np.unique(lengths):                               # at most 2 lengths per level
            sel = lengths == length
            if length < 2:
                value[sel] = 0.0                                        # a single bin: dev = 0 exactly
                continue
            sens = Sensitivity.cells(cells=1, per_cell=2 * (int(length) - 1))
            noise = level_losses[k - 1].noise(sens, what="DAWA's partition")
            released = noise.add(exact[k - 1][sel], rng)                 # the only use of the data
            value[sel] = np.asarray(released, dtype=np.float64) / float(length)
            if length == lengths[0]:
                scale = max(scale, float(np.sqrt(noise.variance())) / float(length))
        noisy.append(value)
    costs = tuple(np.maximum(v, 0.0) for v in noisy)                     # dev >= 0: post-processing
    edges = least_cost_partition(costs, bucket_cost, n)
    return PrivatePartition(edges=edges, noisy_costs=tuple(noisy), level_losses=tuple(level_losses),
                            cost_noise_scale=scale, bucket_cost=float(bucket_cost))
