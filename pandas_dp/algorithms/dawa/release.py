"""DAWA: data- and workload-aware range queries (1-D, and 2-D through a Hilbert ordering).

:func:`dawa` splits its privacy loss exactly in two (``ratio`` for stage 1):

1. a private partition of the domain into buckets of nearly uniform counts
   (:mod:`pandas_dp.algorithms.dawa.partition`);
2. a weighted hierarchy of bucket sums chosen for the workload, answered with
   noise and combined by least squares, each bucket spread evenly over its bins
   (:mod:`pandas_dp.algorithms.dawa.strategy`).

Under zCDP (``rho=``), stage 1 stays the pure-DP partition, run at a rational
``epsilon_1`` with ``epsilon_1**2 / 2 <= ratio * rho`` (as large as that allows, to
``2**-40``) and charged ``epsilon_1**2 / 2`` (pure ``epsilon``-DP implies
``epsilon**2 / 2``-zCDP, Bun and Steinke 2016, Proposition 1.4); stage 2 gets
exactly the rest, ``rho - epsilon_1**2 / 2``, with discrete Gaussian noise
calibrated to the L2 sensitivity of the weighted hierarchy
(:mod:`pandas_dp.algorithms.dawa.strategy`, "Under zCDP"). The two charges add
up to ``rho`` exactly. ``ratio`` is thus a share of ``rho`` (1/4 in 1-D, 1/2
in 2-D by default, the shares of the pure defaults), and the partition's
``bucket_cost`` is the expected absolute value of a stage-2 bucket count's
Gaussian noise, ``sigma sqrt(2 / pi)``.

2-D counts are laid out along a Hilbert curve (:mod:`pandas_dp.algorithms.hilbert`),
rectangles become runs of positions on that line, and the estimates are put
back on the grid.

Error bars
----------
Given the partition (which depends on the data only through stage-1 noise),
every estimate is linear in the stage-2 noise, so its noise variance is exact
(``variances``, :meth:`DawaRelease.range_variance`, ...). What they exclude is
the *bias* of uniform spreading inside a bucket, which depends on the unknown
true counts: ``variance_exact`` is ``False``. A query made of whole buckets
has no such bias (:meth:`DawaRelease.aligned`), and for any query the whole
buckets inside it and those touching it bracket its true count
(:meth:`DawaRelease.inner_outer`), since counts are not negative; see
``docs/methods/dawa.md`` for the recommended confidence intervals.

References
----------
.. [1] C. Li, M. Hay, G. Miklau, Y. Wang. "A Data- and Workload-Aware Algorithm
   for Range Queries Under Differential Privacy", PVLDB 7(5), 2014.
.. [2] M. Hay, A. Machanavajjhala, G. Miklau, Y. Chen, D. Zhang. "Principled
   Evaluation of Differentially Private Algorithms using DPBench", SIGMOD 2016.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from pandas_dp._utils.rational import to_fraction
from pandas_dp.algorithms.dawa.partition import PrivatePartition, partition_loss_shares, private_partition
from pandas_dp.algorithms.dawa.runs import (PREFIX_2D_CORNERS, Workload, merge_runs, bucket_runs, query_variance,
                                            workload_runs)
from pandas_dp.algorithms.dawa.strategy import HierarchicalAnswers, HierarchyStrategy, answer_hierarchy, choose_strategy
from pandas_dp.algorithms.grids import equivalent_epsilon
from pandas_dp.algorithms.hilbert import hilbert_order
from pandas_dp.algorithms.tree.inference import nonnegative_tree
from pandas_dp.algorithms.tree.layout import shape_dims
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import DiscreteLaplace, Noise, PrivacyLoss, PureDP, Sensitivity

__all__ = ["DawaPlan", "plan_dawa", "partition_epsilon", "bucket_cost", "DawaRelease", "dawa", "workload_runs", "DEFAULT_RATIO", "DEFAULT_RATIO_2D",
           "PREFIX_2D_CORNERS"]

#: Share of the loss spent on the partition in 1-D (the paper's recommendation, 0.25; best in 38 of 40
#: DPBench 1-D cases against 0.1 and 0.5, benchmarks/results/dawa_grids.txt).
DEFAULT_RATIO = Fraction(1, 4)
#: Share in 2-D: the Hilbert line has 16 levels of candidates at 256 x 256, so the partition needs more;
#: 0.5 was best in all 10 DPBench 2-D cases (against 0.1 and 0.25).
DEFAULT_RATIO_2D = Fraction(1, 2)

VARIANCE_NOTE = ("Noise-only variances, exact given the private partition; they exclude the bias of "
                 "spreading a bucket's estimate evenly over its bins (zero for queries made of whole "
                 "buckets, see aligned()).")


def _check_ratio(ratio: Any) -> Fraction:
    r = to_fraction(ratio, name="ratio")
    if not 0 < r < 1:
        raise ParameterError(
            f"The 'ratio' parameter of dawa must be strictly between 0 and 1 (the share of the loss "
            f"spent on the partition). Got {ratio!r}. Pass e.g. ratio=0.25 (the paper's choice), or leave the default.")
    return r


def partition_epsilon(loss: PrivacyLoss, ratio: Fraction) -> PureDP:
    """Stage 1's pure loss under a zCDP ``loss``: ``epsilon_1`` with ``epsilon_1**2 / 2 <= ratio * rho``,
    charged ``epsilon_1**2 / 2``.

    ``epsilon_1`` is the exact square root of ``2 ratio rho`` when a fraction with denominator at most
    ``10**6`` is, or is below it and within ``2**-k`` of it, else ``j / 2**k`` rounded down
    (exact integer square root; ``2**-k`` is ``2**-40`` for targets above 1/4, finer below so that
    ``epsilon_1`` keeps 40 significant bits): never above, so the charge never exceeds the share.

    Examples
    --------
    >>> from pandas_dp.privacy.loss import ZCDP
    >>> e = partition_epsilon(ZCDP(Fraction(1, 2)), Fraction(1, 4))    # sqrt(2 * 1/8) = 1/2
    >>> e.epsilon, e.charged_as("zcdp").rho
    (Fraction(1, 2), Fraction(1, 8))
    >>> e = partition_epsilon(ZCDP(Fraction(1, 10)), Fraction(1, 4))   # sqrt(1/20): irrational, rounded down
    >>> e.epsilon ** 2 / 2 <= Fraction(1, 40) < (e.epsilon + Fraction(1, 2 ** 40)) ** 2 / 2
    True
    """
    target = 2 * Fraction(ratio) * loss.amount
    # k bits after the point: 40 significant bits at least, however small the target (rho may be 2**-80).
    k = 40 + max(0, (target.denominator.bit_length() - target.numerator.bit_length()) // 2 + 1)
    scaled = target * 4 ** k
    eps = Fraction(math.isqrt(scaled.numerator // scaled.denominator), 2 ** k)
    simple = Fraction(math.sqrt(float(target))).limit_denominator(10 ** 6)     # readable when exact enough
    if eps <= simple and simple * simple <= target:
        eps = simple
    if eps <= 0:
        raise ParameterError(f"The 'rho' parameter is too small for DAWA's partition: its share "
                             f"{float(ratio * loss.amount):.3g} of rho gives epsilon_1 = 0. Pass a larger rho.")
    return PureDP(eps)


def bucket_cost(noise: Noise) -> float:
    """``b2``: the expected absolute noise of one stage-2 bucket count, in the paper's Laplace form.

    Discrete Laplace noise: ``1 / epsilon_2`` (its scale, exactly as the paper); discrete Gaussian
    noise: ``sigma sqrt(2 / pi)``, the expected absolute value of ``N(0, sigma**2)``.
    """
    v = float(noise.variance())
    return 1.0 / equivalent_epsilon(v) if isinstance(noise, DiscreteLaplace) else math.sqrt(2.0 * v / math.pi)


@dataclass(frozen=True)
class DawaPlan:
    """The public part of a DAWA release (made without data and without budget).

    Attributes
    ----------
    shape : tuple of int
        The public domain's shape (1-D or 2-D).
    loss, partition_loss, strategy_loss : PrivacyLoss
        The whole loss and its two exact parts (``partition_loss + strategy_loss == loss``).
        Under zCDP the partition's part is pure (``PureDP(epsilon_1)``):
        ``partition_loss.charged_as("zcdp") + strategy_loss == loss``.
    ratio : Fraction
        Share of the loss given to the partition.
    bucket_cost : float
        ``b2``: the expected absolute noise of one stage-2 bucket count (:func:`bucket_cost`).
    query, lo, hi : ndarray of int64
        The workload as runs of positions on DAWA's line (sorted by query, then ``lo``).
    n_queries : int
        Number of workload queries.
    order : ndarray of int64 or None
        2-D: the Hilbert order (flat cell index of every line position); 1-D: ``None``.
    """

    shape: tuple[int, ...]
    loss: PrivacyLoss
    partition_loss: PrivacyLoss
    strategy_loss: PrivacyLoss
    ratio: Fraction
    bucket_cost: float
    query: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    n_queries: int
    order: np.ndarray | None

    @property
    def size(self) -> int:
        """Number of bins / cells."""
        return int(np.prod(self.shape))


def plan_dawa(shape: int | tuple[int, ...], *, loss: PrivacyLoss, ratio: float | Fraction | None = None,
              workload: np.ndarray | Workload | str = "prefix") -> DawaPlan:
    """Plan a DAWA release from public information (the domain shape, the loss, the workload).

    Parameters
    ----------
    shape : int or tuple of int
        Number of bins, or the 2-D grid shape.
    loss : PrivacyLoss
        Total privacy loss; ``ratio`` of it (exactly) goes to the partition. A
        :class:`~pandas_dp.privacy.loss.ZCDP` loss runs the partition at the pure
        :func:`partition_epsilon` charged ``epsilon_1**2 / 2`` and the strategy with
        Gaussian noise at the rest (module notes).
    ratio : float or Fraction, optional
        Share of the loss spent on the partition, strictly between 0 and 1 (of ``rho`` under zCDP).
        Default: :data:`DEFAULT_RATIO` (1/4, the paper's) in 1-D,
        :data:`DEFAULT_RATIO_2D` (1/2, measured) in 2-D.
    workload : {"prefix", "identity"} or ndarray
        Public queries the strategy is tuned for (see :func:`workload_runs`).

    Returns
    -------
    DawaPlan

    Raises
    ------
    ParameterError
        For a bad shape, ``ratio`` or ``workload``, or a loss too small for the
        noise sampler (every partition level and the bucket counts are asked for
        their noise here).
    """
    dims = shape_dims(shape)
    if len(dims) not in (1, 2) or min(dims, default=0) < 1:
        raise ParameterError(
            f"dawa takes 1-D or 2-D counts on a non-empty public domain. Got an array of shape {dims}. "
            f"Flatten or slice the domain first.")
    r = _check_ratio((DEFAULT_RATIO if len(dims) == 1 else DEFAULT_RATIO_2D) if ratio is None else ratio)
    query, lo, hi, m = workload_runs(workload, dims)
    part_loss: PrivacyLoss
    if loss.measure == "zcdp":
        part_loss = partition_epsilon(loss, r)
        strat_loss = loss - part_loss.charged_as("zcdp")                 # exactly the rest of rho
    else:
        part_loss, strat_loss = loss.split([r, 1 - r])
    n = int(np.prod(dims))
    for k, share in enumerate(partition_loss_shares(n), start=1):
        length = min(1 << k, n)
        part_loss.part(share).noise(Sensitivity.cells(per_cell=2 * (length - 1)), what="DAWA's partition")
    b2 = bucket_cost(strat_loss.noise(what="DAWA's bucket counts"))
    order = hilbert_order(dims) if len(dims) == 2 else None
    return DawaPlan(shape=dims, loss=loss, partition_loss=part_loss, strategy_loss=strat_loss, ratio=r,
                    bucket_cost=b2, query=query, lo=lo, hi=hi, n_queries=m, order=order)


@dataclass(frozen=True)
class DawaRelease:
    """Output of :func:`dawa` (everything is differentially private or public).

    Attributes
    ----------
    estimates : ndarray of float64
        Estimated count of every bin / cell, shaped like the input counts.
    variances : ndarray of float64
        Noise variance of every estimate, exact given the partition (``P_j / |B_j|**2``
        for a bin of bucket ``j``); excludes the bias of uniform spreading.
    edges : ndarray of int64
        Bucket edges on the 1-D line (positions in ``order`` for 2-D).
    bucket_estimates, bucket_variances : ndarray
        Least-squares estimate of every bucket total and its exact variance.
    plan : DawaPlan
        The public plan (shape, losses, workload, Hilbert order).
    partition : PrivatePartition
        Stage 1 (noisy deviations, level losses).
    strategy : HierarchyStrategy
        Stage 2's hierarchy, its level shares and the candidates' workload errors.
    answers : HierarchicalAnswers
        Stage 2's noisy answers, level losses and noise variances.
    """

    estimates: np.ndarray
    variances: np.ndarray
    edges: np.ndarray
    bucket_estimates: np.ndarray
    bucket_variances: np.ndarray
    plan: DawaPlan
    partition: PrivatePartition
    strategy: HierarchyStrategy
    answers: HierarchicalAnswers

    #: The variances are noise-only (the bias of uniform spreading is not in them).
    variance_exact: ClassVar[bool] = False
    #: What the variances include and exclude, for results and docs.
    variance_note: ClassVar[str] = VARIANCE_NOTE

    @property
    def n_buckets(self) -> int:
        """Number of buckets of the private partition."""
        return int(self.edges.size - 1)

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the counts (the public domain)."""
        return self.plan.shape

    @property
    def order(self) -> np.ndarray | None:
        """2-D: the Hilbert order of the cells on DAWA's line; 1-D: ``None``."""
        return self.plan.order

    @property
    def loss(self) -> PrivacyLoss:
        """The whole loss (exactly ``partition_loss + strategy_loss``; the partition's charged as ``loss`` is)."""
        return self.plan.loss

    @property
    def partition_loss(self) -> PrivacyLoss:
        """Loss of stage 1."""
        return self.plan.partition_loss

    @property
    def strategy_loss(self) -> PrivacyLoss:
        """Loss of stage 2."""
        return self.plan.strategy_loss

    @property
    def ratio(self) -> Fraction:
        """Share of the loss given to the partition."""
        return self.plan.ratio

    @property
    def phase_losses(self) -> tuple[PrivacyLoss, ...]:
        """Every exact loss actually composed: partition levels, then strategy levels."""
        return tuple(self.partition.level_losses) + tuple(self.answers.level_losses)

    def nonnegative_estimates(self) -> np.ndarray:
        """Non-negative estimates of every bin / cell: the bucket tree's non-negative consistent projection.

        Stage 2 measures a tree over the buckets and takes its least-squares estimate; here the same
        noisy answers go through the tree's non-negative projection
        (:func:`~pandas_dp.algorithms.tree.inference.nonnegative_tree`, what ``method="hierarchical"``
        does for ``nonnegative=True``): the root is clipped at 0, then each node's children are
        projected onto ``{c >= 0, sum c = parent}`` in the metric of their variances, and every
        bucket's non-negative total is spread evenly over its bins. Post-processing of the noisy
        answers only. Where the least-squares bucket totals are already non-negative they are
        returned unchanged; otherwise the negative mass is taken from the bucket's siblings instead of
        being added by clipping (on prefixes and ranges clipping biases every sum upwards).
        """
        return _spread(nonnegative_tree(self.strategy.layout, self.answers.inference)[0], self.edges, self.plan)

    # -- queries as runs on the line ----------------------------------------------------------
    def _runs(self, query: np.ndarray, lo: np.ndarray, hi: np.ndarray, m: int
              ) -> tuple[np.ndarray, np.ndarray]:
        line = self.estimates.ravel() if self.order is None else self.estimates.ravel()[self.order]
        cum = np.concatenate([[0.0], np.cumsum(line)])
        est = np.bincount(query, weights=cum[hi] - cum[lo], minlength=m)
        if query.size == 0:
            return est, np.zeros(m)
        br = bucket_runs(query, lo, hi, self.edges, m)
        return est, query_variance(self.strategy.layout, self.answers.structure, br)

    def _query_runs(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        return workload_runs(np.atleast_2d(np.asarray(queries)), self.shape)

    def range_estimate(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Estimates of the 1-D half-open bin ranges ``[lo, hi)``."""
        q, a, b, m = self._query_runs(np.column_stack([np.ravel(lo), np.ravel(hi)]))
        return self._runs(q, a, b, m)[0]

    def range_variance(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Exact noise variance of :meth:`range_estimate` (O(height) per range; bias excluded)."""
        q, a, b, m = self._query_runs(np.column_stack([np.ravel(lo), np.ravel(hi)]))
        return self._runs(q, a, b, m)[1]

    def rectangle_estimate(self, rects: np.ndarray) -> np.ndarray:
        """Estimates of 2-D half-open rectangles (rows ``r0, r1, c0, c1``)."""
        return self._runs(*self._query_runs(rects))[0]

    def rectangle_variance(self, rects: np.ndarray) -> np.ndarray:
        """Exact noise variance of :meth:`rectangle_estimate` (bias excluded)."""
        return self._runs(*self._query_runs(rects))[1]

    def aligned(self, queries: np.ndarray) -> np.ndarray:
        """Whether each query (1-D ``(lo, hi)`` rows or 2-D rectangles) is a union of whole buckets.

        For such a query the estimate is unbiased given the partition and its
        variance is the exact error variance.
        """
        q, lo, hi, m = self._query_runs(queries)
        on_edge = np.isin(lo, self.edges) & np.isin(hi, self.edges)
        return np.bincount(q, weights=~on_edge, minlength=m) == 0

    def inner_outer(self, queries: np.ndarray) -> dict[str, np.ndarray]:
        """Estimates and exact variances of the whole-bucket queries inside and around each query.

        ``inner`` takes the buckets lying entirely inside the query, ``outer`` the
        buckets it touches. Both are unbiased given the partition, and since
        counts are non-negative, ``count(inner) <= count(query) <= count(outer)``.

        Returns
        -------
        dict of ndarray
            ``inner_estimate``, ``inner_variance``, ``outer_estimate``, ``outer_variance``.
        """
        q, lo, hi, m = self._query_runs(queries)
        e = self.edges
        up = lambda v: e[np.searchsorted(e, v, side="left")]         # noqa: E731 (first edge >= v)
        down = lambda v: e[np.searchsorted(e, v, side="right") - 1]  # noqa: E731 (last edge <= v)
        inner = merge_runs(q, up(lo), down(hi))
        outer = merge_runs(q, down(lo), up(hi))
        ie, iv = self._runs(*inner, m)
        oe, ov = self._runs(*outer, m)
        return {"inner_estimate": ie, "inner_variance": iv, "outer_estimate": oe, "outer_variance": ov}


def _spread(bucket_values: np.ndarray, edges: np.ndarray, plan: DawaPlan, power: int = 1) -> np.ndarray:
    """Every bucket's value over its bins, divided by ``|B_j| ** power`` (1: an estimate spread evenly;
    2: its variance), put back on the grid along the plan's order (2-D)."""
    sizes = np.diff(edges)
    bucket_of = np.repeat(np.arange(sizes.size), sizes)
    line = np.asarray(bucket_values, dtype=np.float64).ravel()[bucket_of] / sizes[bucket_of].astype(np.float64) ** power
    if plan.order is None:
        return line
    out = np.empty(plan.size)
    out[plan.order] = line
    return out.reshape(plan.shape)


def dawa(counts: np.ndarray, plan: DawaPlan | None = None, *, loss: PrivacyLoss | None = None,
         ratio: float | Fraction | None = None, workload: np.ndarray | Workload = "prefix",
         rng: Any = None) -> DawaRelease:
    """Release 1-D or 2-D counts with DAWA (Li, Hay, Miklau, Wang, PVLDB 2014).

    Parameters
    ----------
    counts : ndarray of int
        Exact counts on the public domain: 1-D bins, or a 2-D grid (laid out
        along a Hilbert curve).
    plan : DawaPlan, optional
        From :func:`plan_dawa` on ``counts.shape``; without it one is made here
        from ``loss``, ``ratio`` and ``workload``.
    loss : PrivacyLoss, optional
        Total privacy loss when no plan is given.
    ratio : float or Fraction, optional
        Share of the loss spent on the partition (see :func:`plan_dawa`).
    workload : {"prefix", "identity"} or ndarray
        Public queries the strategy is tuned for (see :func:`workload_runs`).
    rng : numpy.random.Generator, optional
        ``None``: the secure source (production); a seeded Generator for experiments.

    Returns
    -------
    DawaRelease

    Raises
    ------
    ParameterError
        For a bad ``ratio``, ``workload`` or counts shape, or a loss too small
        for the noise sampler; all checked before the counts are read.

    Notes
    -----
    Stage 1 (:func:`~pandas_dp.algorithms.dawa.partition.private_partition`)
    chooses buckets minimising ``sum_B (dev(x, B) + b2)`` over noisy
    deviations, with ``b2 = 1 / epsilon_2`` the expected absolute Laplace noise
    of one stage-2 bucket count (Gaussian noise: ``sigma sqrt(2 / pi)``). Stage 2
    (:mod:`~pandas_dp.algorithms.dawa.strategy`) answers the level sums of a
    binary tree over the buckets, each level with its exact share of the
    stage-2 loss, and takes the tree least-squares estimate
    ``x_hat = (A^T S^-1 A)^-1 A^T S^-1 y``; bin ``i`` of bucket ``j`` gets
    ``x_hat_j / |B_j|``. Noise variance of a query with bucket weights ``w``:
    ``w^T (A^T S^-1 A)^-1 w`` (exact; bias of uniform spreading excluded).

    Examples
    --------
    >>> from pandas_dp.privacy.loss import PureDP
    >>> x = np.r_[np.zeros(32, dtype=np.int64), np.full(32, 40)]
    >>> rel = dawa(x, loss=PureDP(Fraction(1)), rng=np.random.default_rng(0))
    >>> rel.estimates.shape, rel.partition_loss + rel.strategy_loss == rel.loss
    ((64,), True)
    """
    x = np.asarray(counts)
    if plan is None:
        if loss is None:
            raise TypeError("dawa needs a plan or a loss")
        plan = plan_dawa(x.shape, loss=loss, ratio=ratio, workload=workload)          # before reading data
    elif tuple(x.shape) != plan.shape:
        raise ParameterError(f"The counts have shape {x.shape} but the DAWA plan was made for {plan.shape}. "
                             f"Plan on the counts' public domain.")
    xi = np.asarray(x, dtype=np.int64)
    line = xi if plan.order is None else xi.ravel()[plan.order]
    partition = private_partition(line, loss=plan.partition_loss, bucket_cost=plan.bucket_cost,
                                  rng=rng)                                             # reads true counts
    edges = partition.edges
    br = bucket_runs(plan.query, plan.lo, plan.hi, edges, plan.n_queries)
    strategy: HierarchyStrategy = choose_strategy(br, measure=plan.strategy_loss.measure)  # public + noisy only
    bucket_counts = np.add.reduceat(line, edges[:-1])
    answers: HierarchicalAnswers = answer_hierarchy(bucket_counts, strategy, loss=plan.strategy_loss,
                                                    rng=rng)                          # reads true counts
    bucket_var = answers.structure.variances[0].ravel()
    estimates = _spread(answers.estimates, edges, plan)
    variances = _spread(bucket_var, edges, plan, power=2)
    return DawaRelease(estimates=estimates, variances=variances, edges=edges,
                       bucket_estimates=np.asarray(answers.estimates, dtype=np.float64),
                       bucket_variances=bucket_var, plan=plan, partition=partition,
                       strategy=strategy, answers=answers)
