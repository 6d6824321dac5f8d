"""DPCube: two-phase kd-tree partitioning of a d-dimensional cell histogram.

Pure numpy. :func:`plan_dpcube` splits the privacy loss into the two phases
and asks each for its noise (public inputs only). Only the two noising steps
read the true counts: phase 1 (every cell plus noise) and
:func:`_noisy_partition_counts` (phase 2). The kd-tree (:func:`kd_partition`)
and the estimators see only noisy values and public parameters.

References
----------
Y. Xiao, L. Xiong, L. Fan, S. Goryczka, H. Li. DPCube: Differentially Private
Histogram Release through Multidimensional Partitioning. Trans. Data Privacy
(sections 4.3-4.4, 6).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import Noise, PrivacyLoss

__all__ = [
    "DPCubePlan",
    "DPCubeRelease",
    "plan_dpcube",
    "dpcube",
    "kd_partition",
    "partition_labels",
    "box_sums",
    "DEFAULT_EPSILON_SPLIT",
    "DEFAULT_THRESHOLD_FACTOR",
]

#: Share of epsilon spent on the phase-1 cell histogram (the paper's equal split).
DEFAULT_EPSILON_SPLIT = 0.5
#: Default xi_0 = factor * Var(phase-1 noise) (benchmarks/bench_ahp_defaults.py).
DEFAULT_THRESHOLD_FACTOR = 1.0

Estimate = Literal["uniform", "least_squares"]


def summed_area(x: np.ndarray) -> np.ndarray:
    """d-dim inclusive prefix sums padded with a leading zero plane on every axis."""
    s = np.zeros(tuple(k + 1 for k in x.shape), dtype=x.dtype)
    inner = x
    for ax in range(x.ndim):
        inner = np.cumsum(inner, axis=ax, dtype=x.dtype)
    s[tuple(slice(1, None) for _ in range(x.ndim))] = inner
    return s


def box_sums(sat: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Sums over half-open boxes [lo, hi) (rows of lo/hi) from a summed-area table.

    Inclusion-exclusion over the 2^d corners: sum = sum_b (-1)^(#lo in b) S[corner_b].
    """
    d = lo.shape[1]
    out = np.zeros(lo.shape[0], dtype=sat.dtype)
    for bits in itertools.product((0, 1), repeat=d):        # 2^d corners, not cells
        idx = tuple(np.where(b, hi[:, a], lo[:, a]) for a, b in enumerate(bits))
        if (d - sum(bits)) % 2:
            out -= sat[idx]
        else:
            out += sat[idx]
    return out


def kd_partition(noisy: np.ndarray, *, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Kd-tree partition of a noisy cell grid (Algorithm 3 of Xiao et al.).

    Parameters
    ----------
    noisy : ndarray
        Phase-1 noisy cell counts, any number of dimensions. The only data read.
    threshold : float
        Variance threshold xi_0: a partition is split while the (population) variance of
        its noisy cell counts exceeds it.

    Returns
    -------
    lo, hi : ndarray of int64, shape (P, d)
        Half-open bounds of the P leaf partitions (they tile the grid).

    Notes
    -----
    A partition is split on the dimension with the largest range (first on ties) at the
    point minimizing n1*V1 + n2*V2 = SSE1 + SSE2, SSE = sum(y^2) - (sum y)^2 / n. Box sums of
    y and y^2 come from summed-area tables, so every candidate costs O(2^d) and the tree
    is built level by level, vectorized over all nodes and split points of a level.
    """
    y = np.asarray(noisy)
    shape = np.asarray(y.shape, dtype=np.int64)
    d = y.ndim
    yi = y.astype(np.int64)
    bound = float(np.max(np.abs(yi), initial=0)) ** 2 * max(y.size, 1)
    sq_dtype = np.int64 if bound < 2.0 ** 62 else np.float64
    sat1 = summed_area(yi if bound < 2.0 ** 62 else yi.astype(np.float64))
    sat2 = summed_area(yi.astype(sq_dtype) ** 2)
    lo = np.zeros((1, d), dtype=np.int64)
    hi = shape[None, :].copy()
    leaves_lo, leaves_hi = [], []
    while lo.shape[0]:                                        # loop over tree levels
        ncell = np.prod(hi - lo, axis=1).astype(np.float64)
        s1 = box_sums(sat1, lo, hi).astype(np.float64)
        s2 = box_sums(sat2, lo, hi).astype(np.float64)
        var = np.maximum(s2 / ncell - (s1 / ncell) ** 2, 0.0)
        split = (var > threshold) & (ncell > 1)
        leaves_lo.append(lo[~split])
        leaves_hi.append(hi[~split])
        lo, hi = lo[split], hi[split]
        if not lo.shape[0]:
            break
        ext = hi - lo
        axis = np.argmax(ext, axis=1)
        length = ext[np.arange(lo.shape[0]), axis]
        node = np.repeat(np.arange(lo.shape[0]), length - 1)
        first = np.concatenate([[0], np.cumsum(length - 1)[:-1]])
        t = np.arange(node.size) - first[node] + 1            # split offsets 1..L-1
        ax = axis[node]
        c_lo, c_hi = lo[node], hi[node].copy()
        c_hi[np.arange(node.size), ax] = c_lo[np.arange(node.size), ax] + t
        n1 = np.prod(c_hi - c_lo, axis=1).astype(np.float64)
        a1 = box_sums(sat1, c_lo, c_hi).astype(np.float64)
        b1 = box_sums(sat2, c_lo, c_hi).astype(np.float64)
        n2 = ncell[split][node] - n1
        a2 = s1[split][node] - a1
        b2 = s2[split][node] - b1
        cost = (b1 - a1 * a1 / n1) + (b2 - a2 * a2 / n2)
        order = np.lexsort((np.arange(node.size), cost, node))   # per node: min cost, first
        best = order[np.r_[True, node[order][1:] != node[order][:-1]]]
        cut = c_hi[best, ax[best]]
        rows = np.arange(best.size)
        left_hi = hi.copy()
        left_hi[rows, axis] = cut
        right_lo = lo.copy()
        right_lo[rows, axis] = cut
        lo = np.concatenate([lo, right_lo])
        hi = np.concatenate([left_hi, hi])
    return np.concatenate(leaves_lo), np.concatenate(leaves_hi)


def partition_labels(shape: tuple[int, ...], lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Partition id of every cell, from boxes that tile the grid.

    Each box adds its id with alternating signs at its 2^d corners of a difference array;
    cumulative sums along every axis then give the id inside the box (boxes are disjoint).
    """
    d = len(shape)
    diff = np.zeros(tuple(k + 1 for k in shape), dtype=np.int64)
    ids = np.arange(lo.shape[0], dtype=np.int64)
    for bits in itertools.product((0, 1), repeat=d):
        idx = tuple(np.where(b, hi[:, a], lo[:, a]) for a, b in enumerate(bits))
        sign = -1 if sum(bits) % 2 else 1
        np.add.at(diff, idx, sign * ids)
    for ax in range(d):
        np.cumsum(diff, axis=ax, out=diff)
    return diff[tuple(slice(0, k) for k in shape)]


@dataclass(frozen=True)
class DPCubePlan:
    """The public part of a DPCube release: the two phases' losses and noise, the threshold, the estimator.

    Attributes
    ----------
    loss_1, loss_2 : PrivacyLoss
        Phase losses (cell histogram, partition counts), adding up exactly to the release's loss.
    noise_1, noise_2 : Noise
        Each phase's noise (sensitivity 1: cells and partitions are disjoint).
    threshold : float
        xi_0 of the kd-tree.
    estimate : {"uniform", "least_squares"}
        Cell estimator.
    """

    loss_1: PrivacyLoss
    loss_2: PrivacyLoss
    noise_1: Noise
    noise_2: Noise
    threshold: float
    estimate: str


def plan_dpcube(*, loss: PrivacyLoss, epsilon_split: float | Fraction = DEFAULT_EPSILON_SPLIT,
                threshold: float | None = None, estimate: Estimate = "least_squares") -> DPCubePlan:
    """Plan a DPCube release from public information (the loss and the knobs).

    The default threshold is ``DEFAULT_THRESHOLD_FACTOR * Var(phase-1 noise)``:
    the noisy cells of a perfectly uniform partition already have variance about
    Var(noise), so xi_0 must be tied to the noise level.

    Raises
    ------
    ParameterError
        For an unknown estimator, or a phase share too small for the noise sampler.
    """
    if estimate not in ("uniform", "least_squares"):
        raise ParameterError(
            f"The 'estimate' parameter of dpcube must be 'uniform' or 'least_squares'. "
            f"Got {estimate!r}.")
    loss_1, loss_2 = loss.phases(epsilon_split)
    noise_1 = loss_1.noise(what="DPCube's first phase")
    noise_2 = loss_2.noise(what="DPCube's second phase")
    xi0 = DEFAULT_THRESHOLD_FACTOR * noise_1.variance() if threshold is None else float(threshold)
    return DPCubePlan(loss_1, loss_2, noise_1, noise_2, xi0, estimate)


@dataclass(frozen=True)
class DPCubeRelease:
    """Output of :func:`dpcube` (all fields are differentially private or public).

    Attributes
    ----------
    estimates : ndarray of float64
        Estimated cell counts, grid shape.
    variances : ndarray of float64
        Per-cell variance. ``least_squares``: exact, sigma1^2 (1 - w_p). ``uniform``: noise
        only, sigma2^2 / n_p^2 (the approximation bias of the uniform assumption is NOT
        included).
    noisy_cells : ndarray of int64
        The released phase-1 cell histogram.
    lo, hi : ndarray of int64, shape (P, d)
        Partition boxes; ``partition_counts`` their released phase-2 noisy counts.
    labels : ndarray of int64
        Partition id of every cell.
    plan : DPCubePlan
        The phases' losses and noise, the threshold xi_0 and the estimator.
    noise_variance_1, noise_variance_2 : float
        Variances of the phase-1 and phase-2 noise.
    """

    estimates: np.ndarray
    variances: np.ndarray
    noisy_cells: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    partition_counts: np.ndarray
    labels: np.ndarray
    plan: DPCubePlan
    noise_variance_1: float
    noise_variance_2: float

    @property
    def estimate(self) -> str:
        """The cell estimator, ``"uniform"`` or ``"least_squares"``."""
        return self.plan.estimate

    @property
    def threshold(self) -> float:
        """xi_0 used by the kd-tree."""
        return self.plan.threshold

    @property
    def partition_sizes(self) -> np.ndarray:
        """Number of cells n_p of every partition."""
        return np.prod(self.hi - self.lo, axis=1)

    @property
    def weights(self) -> np.ndarray:
        """Least-squares weight w_p = sigma1^2 / (n_p sigma1^2 + sigma2^2) of every partition."""
        s1, s2 = self.noise_variance_1, self.noise_variance_2
        return s1 / (self.partition_sizes * s1 + s2)

    def box_variance(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Variance of the estimated sum over half-open query boxes [lo, hi) (rows).

        Notes
        -----
        With s_p the cells a box shares with partition p (independent across partitions):
        ``least_squares``: Var = sum_p sigma1^2 s_p (1 - s_p w_p) (exact: the estimator is
        linear, error q.N1 + s_p w_p (N2 - 1.N1) per partition);
        ``uniform``: Var = sum_p sigma2^2 (s_p / n_p)^2 (noise only, bias excluded).
        """
        qlo = np.atleast_2d(np.asarray(lo, dtype=np.int64))
        qhi = np.atleast_2d(np.asarray(hi, dtype=np.int64))
        npart = self.lo.shape[0]
        sizes = self.partition_sizes.astype(np.float64)
        w = self.weights
        out = np.empty(qlo.shape[0])
        chunk = max(1, 2_000_000 // max(npart, 1))
        for a in range(0, qlo.shape[0], chunk):               # bounded-memory query chunks
            ql, qh = qlo[a:a + chunk, None, :], qhi[a:a + chunk, None, :]
            ov = np.clip(np.minimum(qh, self.hi[None]) - np.maximum(ql, self.lo[None]), 0, None)
            s = np.prod(ov, axis=2).astype(np.float64)
            if self.estimate == "least_squares":
                out[a:a + chunk] = self.noise_variance_1 * np.sum(s * (1.0 - s * w[None]), axis=1)
            else:
                out[a:a + chunk] = self.noise_variance_2 * np.sum((s / sizes[None]) ** 2, axis=1)
        return out


def _noisy_partition_counts(counts: np.ndarray, lo: np.ndarray, hi: np.ndarray, noise: Noise,
                            rng: Any) -> np.ndarray:
    """Phase 2 (reads the TRUE counts): disjoint partitions' true sums + noise."""
    return noise.add(box_sums(summed_area(counts), lo, hi), rng)


def dpcube(counts: np.ndarray, plan: DPCubePlan | None = None, *, loss: PrivacyLoss | None = None,
           rng: Any = None, **knobs: Any) -> DPCubeRelease:
    """Release a d-dimensional histogram with DPCube (Algorithm 2 of Xiao et al.).

    Parameters
    ----------
    counts : ndarray of int
        True cell counts, any number of dimensions.
    plan : DPCubePlan, optional
        From :func:`plan_dpcube`; without it one is made from ``loss`` and ``knobs``
        (``epsilon_split``, ``threshold``, ``estimate``).
    loss : PrivacyLoss, optional
        The release's loss when no plan is given.
    rng : numpy.random.Generator, optional
        None means a cryptographically secure source.

    Returns
    -------
    DPCubeRelease

    Notes
    -----
    Phase 1: y1 = x + N1 (sensitivity 1, parallel composition over cells).
    Kd-tree on y1 only. Phase 2: y_p = sum_{i in p} x_i + N2 (partitions are
    disjoint). Uniform: x_hat_i = y_p / n_p. Least squares: per partition, the
    generalized least-squares solution of [I; 1^T] x = [y1; y_p] with noise variances
    sigma1^2, sigma2^2 is x_hat_i = y1_i + w_p (y_p - sum_{j in p} y1_j),
    w_p = sigma1^2 / (n_p sigma1^2 + sigma2^2); for sigma1 = sigma2 this is the paper's
    closed form H^+ = (H^T H)^{-1} H^T with w = 1/(n_p + 1). Per-cell variance
    sigma1^2 (1 - w_p).

    References
    ----------
    Xiao et al., DPCube, Algorithms 2-3, Theorems 4.3-4.6.
    """
    if plan is None:
        if loss is None:
            raise TypeError("dpcube needs a plan or a loss")
        plan = plan_dpcube(loss=loss, **knobs)
    x = np.asarray(counts, dtype=np.int64)
    var1 = plan.noise_1.variance()
    var2 = plan.noise_2.variance()
    y1 = plan.noise_1.add(x, rng)                                       # reads true counts
    lo, hi = kd_partition(y1, threshold=plan.threshold)                 # noisy values only
    yp = _noisy_partition_counts(x, lo, hi, plan.noise_2, rng)          # reads true counts
    labels = partition_labels(x.shape, lo, hi)
    sizes = np.prod(hi - lo, axis=1)
    if plan.estimate == "uniform":
        est = yp[labels] / sizes[labels]
        variances = var2 / sizes[labels].astype(np.float64) ** 2
    else:
        w = var1 / (sizes * var1 + var2)
        resid = yp - np.bincount(labels.ravel(), weights=y1.ravel(), minlength=sizes.size)
        est = y1 + (w * resid)[labels]
        variances = var1 * (1.0 - w[labels])
    return DPCubeRelease(estimates=est, variances=variances, noisy_cells=y1, lo=lo, hi=hi,
                         partition_counts=yp, labels=labels, plan=plan,
                         noise_variance_1=var1, noise_variance_2=var2)
