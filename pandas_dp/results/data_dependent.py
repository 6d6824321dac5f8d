"""Results of the data-dependent histogram methods: ``AHPHistogram`` and ``DPCubeHistogram``.

Both are :class:`~pandas_dp.results.Histogram` subclasses whose bins share
noise (all bins of an AHP cluster, all cells of a DPCube partition), so range
variances are not sums of per-bin variances; they override the range
statistics with the estimators' exact linear forms and expose the released
structure (clusters, partitions) for inspection.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._public import float_array, safe_repr
from ..algorithms.ahp import AHPRelease
from ..algorithms.dpcube import DPCubeRelease, box_sums
from ..errors import DomainError, ParameterError
from ._frozen import stored_fields
from .histogram import Histogram

__all__ = ["AHPHistogram", "DPCubeHistogram"]


@stored_fields
@dataclass(frozen=True, repr=False, eq=False)
class AHPHistogram(Histogram):
    """An AHP release (Zhang et al. 2014): bins clustered by their noisy counts.

    ``variance`` and range ``std_error`` cover the noise only: each bin of a
    cluster C is the cluster's noisy mean, so the approximation (bias) error
    ``(H_j - mean(C))**2`` is not included (``variance_exact`` is False).

    Attributes
    ----------
    detail : AHPRelease
        The algorithm's output: cluster labels, sizes, noisy sums, epsilon_1/2, threshold.
    """

    detail: AHPRelease | None = field(default=None, compare=False)

    @property
    def clusters(self) -> pd.DataFrame:
        """One row per bin: ``cluster`` id, ``cluster_size`` and the cluster's released ``cluster_sum``."""
        d = self.detail
        return pd.DataFrame({"cluster": d.labels, "cluster_size": d.cluster_sizes[d.labels],
                             "cluster_sum": d.cluster_sums[d.labels]}, index=self.counts.index)

    def _range_stats(self, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        est = np.concatenate([[0.0], np.cumsum(self.counts.to_numpy(dtype=np.float64))])
        return est[j] - est[i], self.detail.range_variance(i, j)


@stored_fields
@dataclass(frozen=True, repr=False, eq=False)
class DPCubeHistogram(Histogram):
    """A DPCube release (Xiao et al.): a noisy cell histogram and kd-tree partition counts.

    With ``estimate="least_squares"`` the per-cell variances and range
    ``std_error`` are exact (generalized least squares per partition); with
    ``"uniform"`` they cover the noise only (the bias of the uniform
    assumption is excluded, ``variance_exact`` is False).

    Attributes
    ----------
    detail : DPCubeRelease
        The algorithm's output: both released histograms, partition boxes, weights.
    """

    detail: DPCubeRelease | None = field(default=None, compare=False)

    @property
    def partitions(self) -> pd.DataFrame:
        """One row per kd-tree partition: half-open cell bounds per dimension, ``cells``,
        the released ``noisy_count`` (phase 2) and the least-squares ``weight``."""
        d = self.detail
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
        return pd.Series(self.detail.noisy_cells.reshape(-1), index=self.counts.index, name="noisy_cell")

    def cell_box_query(self, lower: Any, upper: Any) -> pd.DataFrame:
        """Estimate and std error of sums over boxes of cells ``[lower, upper)`` (cell indices).

        Parameters
        ----------
        lower, upper : array-like of int, shape (d,) or (q, d)
            Half-open cell-index bounds of one or several boxes.

        Returns
        -------
        DataFrame
            Columns ``estimate`` and ``std_error``, one row per box.

        Raises
        ------
        ParameterError
            When the corners are not integer cell indices of the grid's dimension.
        DomainError
            When a box leaves the grid or ``lower > upper``.
        """
        lo, hi = _cell_boxes(lower, upper, self.domain.shape)
        grid = self.counts.to_numpy(dtype=np.float64).reshape(self.domain.shape)
        sat = np.zeros(tuple(k + 1 for k in grid.shape))
        inner = grid
        for ax in range(grid.ndim):
            inner = np.cumsum(inner, axis=ax)
        sat[tuple(slice(1, None) for _ in grid.shape)] = inner
        return pd.DataFrame({"estimate": box_sums(sat, lo, hi),
                             "std_error": np.sqrt(self.detail.box_variance(lo, hi))})

    def _range_stats(self, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        est = np.concatenate([[0.0], np.cumsum(self.counts.to_numpy(dtype=np.float64))])
        var = self.detail.box_variance(np.asarray(i)[:, None], np.asarray(j)[:, None])
        return est[j] - est[i], var


def _cell_boxes(lower: Any, upper: Any, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Validated ``(q, d)`` int64 corners of half-open cell boxes inside a grid of ``shape``."""
    d = len(shape)
    corners = []
    for name, value in (("lower", lower), ("upper", upper)):
        arr = None if isinstance(value, (str, bytes)) else float_array(value)
        if arr is not None:
            arr = np.atleast_2d(arr)
        if arr is None or arr.ndim != 2 or arr.shape[1] != d or not np.all(np.isfinite(arr)) \
                or not np.all(arr == np.round(arr)):
            raise ParameterError(f"The '{name}' parameter of cell_box_query must be {d} integer cell indices "
                                 f"(one box) or an array of shape (q, {d}). Got {safe_repr(value)}.")
        corners.append(arr)
    lo, hi = corners
    if lo.shape != hi.shape:
        raise ParameterError(f"cell_box_query needs as many lower as upper corners; got {lo.shape[0]} and "
                             f"{hi.shape[0]}.")
    limit = np.asarray(shape, dtype=np.float64)
    if np.any(lo < 0) or np.any(hi > limit) or np.any(lo > hi):
        raise DomainError(f"Cell boxes must satisfy 0 <= lower <= upper <= {list(shape)} in every dimension "
                          f"(half-open [lower, upper) in cell indices). Got lower={safe_repr(lower)}, "
                          f"upper={safe_repr(upper)}.")
    return lo.astype(np.int64), hi.astype(np.int64)
