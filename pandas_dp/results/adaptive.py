"""Results of the adaptive partition methods: ``DAWAHistogram`` and ``GridHistogram``.

Both are :class:`~pandas_dp.results.Histogram` subclasses whose cells share
noise (the cells of a DAWA bucket, the atoms of a grid cell), so query
variances are not sums of per-cell variances: they answer ranges (1-D) and
boxes of cells (``cell_box_query``, 2-D rectangles) with the algorithms' exact
noise variances. Their estimates spread each block's noisy total evenly over
its cells, a data-dependent bias no variance can state, so their intervals
are the brackets of :mod:`pandas_dp.results.bracket` (valid at the stated
level), and ``variance_exact`` is False.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from pandas_dp.algorithms.dawa.release import DawaRelease
from pandas_dp.algorithms.dpcube import box_sums, summed_area
from pandas_dp.algorithms.grid_release import GridRelease
from pandas_dp.results.bracket import Bracket, BracketedIntervals
from pandas_dp.results._detail import required_detail
from pandas_dp.results.frozen import stored_fields
from pandas_dp.results.histogram import Histogram

__all__ = ["DAWAHistogram", "GridHistogram"]


def _sat(counts: pd.Series, shape: tuple[int, ...]) -> np.ndarray:
    return summed_area(counts.to_numpy(dtype=np.float64).reshape(shape))


def _queries(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Boxes ``[lo, hi)`` as DAWA / grid queries: ``(lo, hi)`` rows in 1-D, ``(r0, r1, c0, c1)`` in 2-D."""
    if lo.shape[1] == 1:
        return np.column_stack([lo[:, 0], hi[:, 0]])
    return np.column_stack([lo[:, 0], hi[:, 0], lo[:, 1], hi[:, 1]])


@stored_fields
@dataclass(frozen=True, repr=False, eq=False)
class DAWAHistogram(BracketedIntervals, Histogram):
    """A DAWA release (Li, Hay, Miklau, Wang, PVLDB 2014): noisy bucket totals spread over their bins.

    ``variance`` and every ``std_error`` are the exact noise variances of the
    estimates given the private partition (least squares on the bucket tree);
    they exclude the bias of spreading a bucket evenly over its bins
    (``variance_exact`` is False). Intervals are brackets between whole buckets
    (:mod:`pandas_dp.results.bracket`): exact for ranges made of whole buckets
    (``aligned``), conservative otherwise.

    Attributes
    ----------
    detail : DawaRelease
        The algorithm's output: partition, strategy, noisy answers, plan.
    """

    detail: DawaRelease | None = field(default=None, compare=False)

    @property
    def _detail(self) -> DawaRelease:
        return required_detail(self, self.detail)

    @property
    def buckets(self) -> pd.DataFrame:
        """One row per bucket: ``start``, ``stop`` (positions on DAWA's line: bins in 1-D, Hilbert
        positions in 2-D), ``cells``, the least-squares ``estimate`` of its total and its ``variance``."""
        d = self._detail
        return pd.DataFrame({"start": d.edges[:-1], "stop": d.edges[1:], "cells": np.diff(d.edges),
                             "estimate": d.bucket_estimates, "variance": d.bucket_variances})

    def _range_stats(self, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        i, j = np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64)
        est = np.concatenate([[0.0], np.cumsum(self.counts.to_numpy(dtype=np.float64))])
        var = np.zeros(i.size)
        some = i < j
        if some.any():
            var[some] = self._detail.range_variance(i[some], j[some])
        return est[j] - est[i], var

    def _box_stats(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if lo.shape[1] == 1:
            return self._range_stats(lo[:, 0], hi[:, 0])
        est = box_sums(_sat(self.counts, self.domain.shape), lo, hi)
        return est, self._detail.rectangle_variance(_queries(lo, hi))

    def _bracket_boxes(self, lo: np.ndarray, hi: np.ndarray) -> Bracket:
        queries = _queries(lo, hi)
        io = self._detail.inner_outer(queries)
        return Bracket(io["inner_estimate"], io["inner_variance"], io["outer_estimate"], io["outer_variance"],
                       self._detail.aligned(queries))

    def _bracket_cells(self) -> Bracket:
        d = self._detail
        sizes = np.diff(d.edges)
        bucket = np.repeat(np.arange(sizes.size), sizes)          # bucket of every line position
        if d.order is not None:                                   # 2-D: line position -> cell
            of_cell = np.empty(d.order.size, dtype=np.int64)
            of_cell[d.order] = bucket
            bucket = of_cell
        alone = sizes[bucket] == 1
        outer, outer_var = d.bucket_estimates[bucket], d.bucket_variances[bucket]
        return Bracket(np.where(alone, outer, 0.0), np.where(alone, outer_var, 0.0), outer, outer_var, alone)

    def _html_title(self) -> str:
        return f"{self._guarantee()}, {self._detail.n_buckets:,} buckets"


@stored_fields
@dataclass(frozen=True, repr=False, eq=False)
class GridHistogram(BracketedIntervals, Histogram):
    """A UGrid or AGrid release (Qardaji, Yang, Li, ICDE 2013): noisy grid cells spread over their atoms.

    The domain's 2-D cells are the *atoms*; the grid's (sub-)cells are blocks
    of atoms. ``variance`` and ``std_error`` are exact noise variances given
    the grid (for AGrid, after the constrained inference between its two
    levels); they exclude the bias of spreading a cell evenly over its atoms
    (``variance_exact`` is False). Intervals are brackets between whole cells
    (:mod:`pandas_dp.results.bracket`).

    Attributes
    ----------
    detail : GridRelease
        The algorithm's output: grid edges, noisy counts of both levels, the total used.
    """

    detail: GridRelease | None = field(default=None, compare=False)

    @property
    def _detail(self) -> GridRelease:
        return required_detail(self, self.detail)

    @property
    def grid(self) -> pd.DataFrame:
        """One row per (first-level) grid cell: atom bounds ``row_lo, row_hi, col_lo, col_hi``, the
        released ``noisy_count``, the inferred ``estimate`` of its total, its ``variance`` and the
        ``sub_rows x sub_cols`` sub-grid (1 x 1 for UGrid)."""
        d = self._detail
        re, ce = d.row_edges, d.col_edges
        grid_rows, grid_cols = np.meshgrid(np.arange(re.size - 1), np.arange(ce.size - 1), indexing="ij")
        rows, cols = grid_rows.ravel(), grid_cols.ravel()
        return pd.DataFrame({"row_lo": re[rows], "row_hi": re[rows + 1], "col_lo": ce[cols], "col_hi": ce[cols + 1],
                             "noisy_count": d.cell_counts.ravel(), "estimate": d.cell_estimates.ravel(),
                             "variance": d.cell_variances.ravel(), "sub_rows": d.sub_shape[..., 0].ravel(),
                             "sub_cols": d.sub_shape[..., 1].ravel()})

    def _box_stats(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        est = box_sums(_sat(self.counts, self.domain.shape), lo, hi)
        return est, self._detail.rectangle_variance(_queries(lo, hi))

    def _bracket_boxes(self, lo: np.ndarray, hi: np.ndarray) -> Bracket:
        rects = _queries(lo, hi)
        io = self._detail.inner_outer(rects)
        return Bracket(io["inner_estimate"], io["inner_variance"], io["outer_estimate"], io["outer_variance"],
                       self._detail.aligned(rects))

    def _html_title(self) -> str:
        rows, cols = self._detail.grid_shape
        return f"{self._guarantee()}, {rows} x {cols} grid"
