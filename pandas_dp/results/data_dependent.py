"""Results of the data-dependent histogram methods: ``AHPHistogram`` and ``DPCubeHistogram``.

Both are :class:`~pandas_dp.results.Histogram` subclasses whose bins share
noise (all bins of an AHP cluster, all cells of a DPCube partition), so range
variances are not sums of per-bin variances; they override the range
statistics with the estimators' exact linear forms and expose the released
structure (clusters, partitions) for inspection.

Intervals. AHP and DPCube-uniform spread a cluster's / partition's noisy total
evenly over its cells: the bias that adds depends on the unknown data, so
their intervals are the whole-block brackets of
:mod:`pandas_dp.results.bracket` (valid at the stated level; exact for
queries made of whole clusters or partitions). DPCube's least-squares
estimate is unbiased: its intervals are ``estimate ± r`` from the exact
variance of the unclipped estimate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.algorithms.ahp import AHPRelease
from pandas_dp.algorithms.dpcube import DPCubeRelease, box_sums, summed_area
from pandas_dp.results.bracket import Bracket, BracketedIntervals
from pandas_dp.results._detail import required_detail
from pandas_dp.results.frozen import stored_fields
from pandas_dp.results.histogram import Histogram

#: Most (query, block) pairs held in memory at once when brackets are computed.
_PAIRS = 2_000_000


def _whole_blocks(cells_in: np.ndarray, sizes: np.ndarray, totals: np.ndarray, variance: np.ndarray | float
                  ) -> tuple[np.ndarray, ...]:
    """Bracket sums from the cells each query shares with each block (``(q, blocks)``)."""
    inner = cells_in == sizes[None, :]
    outer = cells_in > 0
    var = np.broadcast_to(np.asarray(variance, dtype=np.float64), sizes.shape)
    return (inner @ totals, inner @ var, outer @ totals, outer @ var,
            inner.sum(axis=1) == outer.sum(axis=1))

__all__ = ["AHPHistogram", "DPCubeHistogram"]


@stored_fields
@dataclass(frozen=True, repr=False, eq=False)
class AHPHistogram(BracketedIntervals, Histogram):
    """An AHP release (Zhang et al. 2014): bins clustered by their noisy counts.

    ``variance`` and range ``std_error`` cover the noise only: each bin of a
    cluster C is the cluster's noisy mean, so the approximation (bias) error
    ``(H_j - mean(C))**2`` is not included (``variance_exact`` is False).
    Intervals bracket a query between the whole clusters inside it and the
    clusters it touches (:mod:`pandas_dp.results.bracket`); clusters are not
    contiguous, so these are wide unless the query holds whole clusters.

    Attributes
    ----------
    detail : AHPRelease
        The algorithm's output: cluster labels, sizes, noisy sums, epsilon_1/2, threshold.
    """

    detail: AHPRelease | None = field(default=None, compare=False)
    _noise_by = "by phase"

    @property
    def _detail(self) -> AHPRelease:
        return required_detail(self, self.detail)

    def _noises(self) -> list[Any]:
        if self.detail is None:
            return super()._noises()
        return [self.detail.plan.noise_1.describe(), self.detail.plan.noise_2.describe()]

    @property
    def clusters(self) -> pd.DataFrame:
        """One row per bin: ``cluster`` id, ``cluster_size`` and the cluster's released ``cluster_sum``."""
        d = self._detail
        return pd.DataFrame({"cluster": d.labels, "cluster_size": d.cluster_sizes[d.labels],
                             "cluster_sum": d.cluster_sums[d.labels]}, index=self.counts.index)

    def _range_stats(self, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        est = np.concatenate([[0.0], np.cumsum(self.counts.to_numpy(dtype=np.float64))])
        return est[j] - est[i], self._detail.range_variance(i, j)

    def _box_stats(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if lo.shape[1] == 1:
            return self._range_stats(lo[:, 0], hi[:, 0])
        d = self._detail
        est = box_sums(summed_area(self.counts.to_numpy(dtype=np.float64).reshape(self.domain.shape)), lo, hi)
        share = self._cells_in_clusters(lo, hi) / d.cluster_sizes[None, :]
        return est, d.noise_variance * np.sum(share ** 2, axis=1)

    def _cells_in_clusters(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Number of cells of every cluster inside every box, ``(q, clusters)``."""
        d = self._detail
        labels = d.labels
        n, k = labels.size, d.cluster_sizes.size
        out = np.empty((lo.shape[0], k))
        if lo.shape[1] == 1:                    # ranges: binary search in the sorted (cluster, bin) keys
            keys = np.sort(labels * (n + 1) + np.arange(n))
            base = np.arange(k, dtype=np.int64) * (n + 1)
            step = max(1, _PAIRS // max(k, 1))
            for a in range(0, lo.shape[0], step):
                out[a:a + step] = (np.searchsorted(keys, base[None, :] + hi[a:a + step, 0, None])
                                   - np.searchsorted(keys, base[None, :] + lo[a:a + step, 0, None]))
            return out
        coords = np.stack(np.unravel_index(np.arange(n), self.domain.shape), axis=1)
        order = np.argsort(labels, kind="stable")
        starts = np.searchsorted(labels[order], np.arange(k))
        step = max(1, _PAIRS // max(n, 1))
        for a in range(0, lo.shape[0], step):   # boxes x cells membership, bounded memory
            inside = np.all((coords[None, order] >= lo[a:a + step, None, :])
                            & (coords[None, order] < hi[a:a + step, None, :]), axis=2)
            out[a:a + step] = np.add.reduceat(inside, starts, axis=1)
        return out

    def _bracket_boxes(self, lo: np.ndarray, hi: np.ndarray) -> Bracket:
        d = self._detail
        parts = _whole_blocks(self._cells_in_clusters(lo, hi), d.cluster_sizes,
                              d.cluster_sums.astype(np.float64), d.noise_variance)
        return Bracket(*parts)

    def _bracket_cells(self) -> Bracket:
        d = self._detail
        alone = d.cluster_sizes[d.labels] == 1
        outer = d.cluster_sums[d.labels].astype(np.float64)
        var = np.full(outer.size, d.noise_variance)
        return Bracket(np.where(alone, outer, 0.0), np.where(alone, var, 0.0), outer, var, alone)


@stored_fields
@dataclass(frozen=True, repr=False, eq=False)
class DPCubeHistogram(BracketedIntervals, Histogram):
    """A DPCube release (Xiao et al.): a noisy cell histogram and kd-tree partition counts.

    With ``estimate="least_squares"`` the per-cell variances and range
    ``std_error`` are exact (generalized least squares per partition) and
    intervals are ``estimate ± r`` of the unclipped estimate; with
    ``"uniform"`` they cover the noise only (the bias of the uniform
    assumption is excluded, ``variance_exact`` is False) and intervals bracket
    a query between the whole partitions inside it and those it touches
    (:mod:`pandas_dp.results.bracket`).

    Attributes
    ----------
    detail : DPCubeRelease
        The algorithm's output: both released histograms, partition boxes, weights.
    """

    detail: DPCubeRelease | None = field(default=None, compare=False)
    _noise_by = "by phase"

    @property
    def _detail(self) -> DPCubeRelease:
        return required_detail(self, self.detail)

    def _noises(self) -> list[Any]:
        if self.detail is None:
            return super()._noises()
        return [self.detail.plan.noise_1.describe(), self.detail.plan.noise_2.describe()]

    @property
    def partitions(self) -> pd.DataFrame:
        """One row per kd-tree partition: half-open cell bounds per dimension, ``cells``,
        the released ``noisy_count`` (phase 2) and the least-squares ``weight``."""
        d = self._detail
        frame: dict[str, Any] = {}
        for a, col in enumerate(self.domain.columns):
            frame[f"{col}_lo"] = d.lo[:, a]
            frame[f"{col}_hi"] = d.hi[:, a]
        frame["cells"] = d.partition_sizes
        frame["noisy_count"] = d.partition_counts
        frame["weight"] = d.weights
        return pd.DataFrame(frame)

    @property
    def cell_histogram(self) -> pd.Series:
        """The released phase-1 noisy cell counts."""
        return pd.Series(self._detail.noisy_cells.reshape(-1), index=self.counts.index, name="noisy_cell")

    def _range_stats(self, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        est = np.concatenate([[0.0], np.cumsum(self.counts.to_numpy(dtype=np.float64))])
        var = self._detail.box_variance(np.asarray(i)[:, None], np.asarray(j)[:, None])
        return est[j] - est[i], var

    def _box_stats(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        grid = self.counts.to_numpy(dtype=np.float64).reshape(self.domain.shape)
        return box_sums(summed_area(grid), lo, hi), self._detail.box_variance(lo, hi)

    def _bracket_boxes(self, lo: np.ndarray, hi: np.ndarray) -> Bracket:
        d = self._detail
        if d.estimate == "least_squares":       # unbiased: the interval of the unclipped estimate
            raw = box_sums(summed_area(np.asarray(d.estimates, dtype=np.float64)), lo, hi)
            var = d.box_variance(lo, hi)
            return Bracket(raw, var, raw, var, np.ones(raw.size, dtype=bool))
        sizes = d.partition_sizes
        totals = d.partition_counts.astype(np.float64)
        parts = []
        step = max(1, _PAIRS // max(sizes.size, 1))
        for a in range(0, lo.shape[0], step):   # query chunks x partitions, bounded memory
            ov = np.clip(np.minimum(hi[a:a + step, None, :], d.hi[None]) -
                         np.maximum(lo[a:a + step, None, :], d.lo[None]), 0, None)
            parts.append(_whole_blocks(np.prod(ov, axis=2), sizes, totals, d.noise_variance_2))
        return Bracket(*(np.concatenate(p) for p in zip(*parts)))

    def _bracket_cells(self) -> Bracket:
        d = self._detail
        labels = np.asarray(d.labels).reshape(-1)
        if d.estimate == "least_squares":
            raw = np.asarray(d.estimates, dtype=np.float64).reshape(-1)
            var = np.asarray(d.variances, dtype=np.float64).reshape(-1)
            return Bracket(raw, var, raw, var, np.ones(raw.size, dtype=bool))
        alone = d.partition_sizes[labels] == 1
        outer = d.partition_counts[labels].astype(np.float64)
        var = np.full(outer.size, d.noise_variance_2)
        return Bracket(np.where(alone, outer, 0.0), np.where(alone, var, 0.0), outer, var, alone)
