"""Honest intervals for estimates that spread a noisy total evenly over several cells.

DAWA buckets, UGrid/AGrid cells, DPCube-uniform partitions and AHP clusters
all release one noisy total per *block* of cells and give every cell of the
block an equal share of it. A query that cuts a block inherits the *bias* of
that even split, which depends on the unknown data; an interval built from the
noise variance alone is then not a confidence interval (the outside check
measured DPCube-uniform's noise-only 95% intervals covering 77% of true box
counts). This module builds intervals that stay valid:

* the whole blocks lying **inside** the query and the blocks it **touches**
  are queries without that bias (their estimates are unbiased given the
  blocks, which depend on the data only through earlier, independent noise);
* counts are not negative, so ``count(inner) <= count(query) <= count(outer)``;
* each estimate's error is a combination of independent noise draws that are
  symmetric about 0, so it exceeds the two-sided radius ``r_c`` of level ``c``
  on a given side with probability at most ``(1 - c) / 2``.

Hence ``[max(inner - r_c(inner), 0), outer + r_c(outer)]`` fails to cover the
true count with probability at most ``(1 - c)/2 + (1 - c)/2 = 1 - c``. For a
query made of whole blocks (``aligned``) the two ends are the usual
``estimate ± r_c`` of an unbiased estimate. The bracket reads only released
values and public variances: no privacy cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pandas as pd

from pandas_dp._utils.public import safe_repr
from pandas_dp.errors import ParameterError
from pandas_dp.results._base import noise_radius, normal_quantile
from pandas_dp.results.histogram import RangeAnswer

if TYPE_CHECKING:
    from pandas_dp.domain.grid import BinDomain, Grid

__all__ = ["Bracket", "bracket_bounds", "BracketedRangeAnswer", "BracketedIntervals", "INTERVAL_NOTE",
           "cell_boxes"]

#: What the intervals of a bracketed result are, for ``params`` and the docs.
INTERVAL_NOTE = ("Intervals bracket the query between the whole blocks inside it and the blocks it touches "
                 "(valid at the stated level although the estimate is biased by even spreading); exact "
                 "noise-only intervals for queries made of whole blocks.")


class Bracket(NamedTuple):
    """Unbiased estimates and exact noise variances of the whole-block queries inside and around queries."""

    inner_estimate: np.ndarray
    inner_variance: np.ndarray
    outer_estimate: np.ndarray
    outer_variance: np.ndarray
    #: Whether each query is made of whole blocks (inner and outer are the same blocks).
    aligned: np.ndarray


def bracket_bounds(bracket: Bracket, noise: Any, confidence_level: float,
                   estimate: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper ends of the bracket intervals at ``confidence_level`` (module notes).

    Parameters
    ----------
    bracket : Bracket
        Inner and outer estimates with their exact noise variances.
    noise : Noise or None
        The release's noise model (its ``tail_factor`` turns a standard error into a
        radius that covers combinations of its draws); ``None``: the normal quantile.
    confidence_level : float
        Nominal coverage in (0, 1).
    estimate : array-like of float, optional
        The released point estimates of the queries: the interval is widened to hold them.

    Returns
    -------
    (ndarray, ndarray)
        ``lower = max(inner - r_c(inner), 0)``, ``upper = max(outer + r_c(outer), lower)``,
        then ``lower = min(lower, estimate)``, ``upper = max(upper, estimate)``.

    Notes
    -----
    ``r_c(v) = tail_factor(c) * sqrt(v)`` covers the two-sided error at level ``c``;
    the error being symmetric, each one-sided miss has probability at most
    ``(1 - c) / 2``, and the union bound gives coverage ``>= c``. Clipping the
    lower end at 0 (counts are not negative), keeping ``upper >= lower`` and
    holding the point estimate only remove impossible values or widen the interval.

    Examples
    --------
    >>> b = Bracket(np.array([10.0, 0.0]), np.array([4.0, 0.0]), np.array([10.0, 30.0]), np.array([4.0, 9.0]),
    ...             np.array([True, False]))
    >>> lower, upper = bracket_bounds(b, None, 0.95)
    >>> lower.round(2).tolist(), upper.round(2).tolist(), b.aligned.tolist()
    ([6.08, 0.0], [13.92, 35.88], [True, False])
    """
    inner_se = np.sqrt(np.maximum(np.asarray(bracket.inner_variance, dtype=np.float64), 0.0))
    outer_se = np.sqrt(np.maximum(np.asarray(bracket.outer_variance, dtype=np.float64), 0.0))
    r_in = noise_radius(noise, 0, inner_se, confidence_level)
    r_out = noise_radius(noise, 0, outer_se, confidence_level)
    if r_in is None or r_out is None:   # both or neither: one noise, one answer
        z = normal_quantile(confidence_level)
        r_in, r_out = z * inner_se, z * outer_se
    lower = np.maximum(np.asarray(bracket.inner_estimate, dtype=np.float64) - r_in, 0.0)
    upper = np.maximum(np.asarray(bracket.outer_estimate, dtype=np.float64) + r_out, lower)
    if estimate is not None:
        est = np.asarray(estimate, dtype=np.float64)
        lower, upper = np.minimum(lower, est), np.maximum(upper, est)
    return lower, upper


@dataclass(frozen=True)
class BracketedRangeAnswer(RangeAnswer):
    """A :class:`RangeAnswer` whose interval brackets the range between whole blocks.

    ``estimate`` spreads cut blocks evenly (biased); ``std_error`` is its noise
    only. ``confidence_interval`` is the bracket of :func:`bracket_bounds`: the
    whole blocks inside (``inner_*``) and touching (``outer_*``) the range.
    """

    inner_estimate: float = 0.0
    inner_std_error: float = 0.0
    outer_estimate: float = 0.0
    outer_std_error: float = 0.0
    aligned: bool = False

    def confidence_interval(self, confidence_level: float = 0.95) -> tuple[float, float]:
        """``(lower, upper)`` covering the true count with probability at least ``confidence_level``."""
        bracket = Bracket(np.array([self.inner_estimate]), np.array([self.inner_std_error ** 2]),
                          np.array([self.outer_estimate]), np.array([self.outer_std_error ** 2]),
                          np.array([self.aligned]))
        lower, upper = bracket_bounds(bracket, self.noise, confidence_level, [self.estimate])
        return float(lower[0]), float(upper[0])


def cell_boxes(shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Every cell of a grid as a half-open box ``[lo, lo + 1)`` (row-major order)."""
    lo = np.stack(np.unravel_index(np.arange(int(np.prod(shape))), shape), axis=1).astype(np.int64)
    return lo, lo + 1


def _boxes(lower: Any, upper: Any, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Checked half-open cell boxes ``[lower, upper)``, shape ``(q, d)`` each."""
    try:
        lo = np.atleast_2d(np.asarray(lower))
        hi = np.atleast_2d(np.asarray(upper))
    except Exception as err:  # noqa: BLE001 - a public argument whose conversion raises anything
        raise ParameterError(f"cell_box_query takes integer cell-index bounds; got {safe_repr(lower)}, "
                             f"{safe_repr(upper)}.") from err
    d = len(shape)
    if (lo.shape != hi.shape or lo.ndim != 2 or lo.shape[1] != d or lo.shape[0] == 0
            or not np.issubdtype(lo.dtype, np.integer) or not np.issubdtype(hi.dtype, np.integer)):
        raise ParameterError(f"cell_box_query takes integer cell-index bounds of shape ({d},) or (q, {d}) for "
                             f"lower and upper (half-open boxes). Got shapes {lo.shape} and {hi.shape}.")
    lo, hi = lo.astype(np.int64), hi.astype(np.int64)
    bad = (lo < 0) | (hi > np.asarray(shape)) | (lo >= hi)
    if bad.any():
        i = int(np.flatnonzero(bad.any(axis=1))[0])
        raise ParameterError(f"Box {i} = [{lo[i].tolist()}, {hi[i].tolist()}) is empty or outside the grid of "
                             f"shape {shape}; boxes are half-open (0 <= lower < upper <= shape).")
    return lo, hi


class BracketedIntervals:
    """Mixin of results whose estimates spread block totals: bracket intervals everywhere.

    Subclasses provide :meth:`_bracket_boxes` (unbiased whole-block estimates
    for boxes of cells) and may override :meth:`_bracket_cells` with a faster
    per-cell form. ``confidence_interval()``, ``range_query`` (1-D) and
    ``cell_box_query`` then report bracket intervals; estimates and
    ``std_error`` stay those of the release (noise only).
    """

    if TYPE_CHECKING:   # provided by the Histogram the mixin is combined with
        counts: pd.Series
        domain: Grid
        noise: Any
        post_processing: tuple[str, ...]

        def _bin_domain(self) -> BinDomain: ...

        def _range_stats(self, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...

        def _box_bounds(self, low: Any, high: Any) -> tuple[tuple[slice, ...], tuple[Any, ...], tuple[Any, ...]]:
            ...

    def _bracket_boxes(self, lo: np.ndarray, hi: np.ndarray) -> Bracket:  # pragma: no cover - interface
        raise NotImplementedError

    def _bracket_cells(self) -> Bracket:
        return self._bracket_boxes(*cell_boxes(self.domain.shape))

    def _box_stats(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Released estimate and noise variance of boxes (default: from the 1-D range statistics)."""
        return self._range_stats(lo[:, 0], hi[:, 0])

    def confidence_interval(self, confidence_level: float = 0.95) -> pd.DataFrame:
        """Per-cell intervals ``lower``/``upper`` that hold despite the even-spreading bias.

        A cell that is a block on its own gets ``estimate ± r`` (exact noise);
        a cell sharing a block gets ``[0, block total + r]``: the only valid
        statement without assumptions on how the block's count is spread.
        See :func:`pandas_dp.results.bracket.bracket_bounds`.
        """
        normal_quantile(confidence_level)
        counts = self.counts
        lower, upper = bracket_bounds(self._bracket_cells(), self.noise, confidence_level, counts.to_numpy())
        return pd.DataFrame({"lower": lower, "upper": upper}, index=counts.index)

    def range_query(self, low: Any, high: Any = None, *, confidence_level: float = 0.95) -> Any:
        """Answer 1-D ranges (or d-D boxes) like :meth:`Histogram.range_query`, with bracket intervals.

        The ``lower``/``upper`` columns (and ``RangeAnswer.confidence_interval``)
        bracket each range between the whole blocks inside it and those it
        touches; an ``aligned`` column says which ranges are made of whole
        blocks (their interval is the exact ``estimate ± r``).
        """
        if self.domain.ndim > 1 and high is not None:   # a box in data units
            normal_quantile(confidence_level)
            return self._box_query(low, high)
        answer = super().range_query(low, high, confidence_level=confidence_level)  # type: ignore[misc]
        dim = self._bin_domain()
        if high is None:
            pairs = np.asarray(low, dtype=object)
            i, j = dim.align(pairs[:, 0].astype(np.float64), pairs[:, 1].astype(np.float64))
        else:
            i, j = dim.align(low, high)
        i, j = np.atleast_1d(i).astype(np.int64), np.atleast_1d(j).astype(np.int64)
        empty = i >= j
        bracket = self._bracket_boxes(np.where(empty, 0, i)[:, None], np.where(empty, 1, j)[:, None])
        inner_est, inner_var, outer_est, outer_var = (np.where(empty, 0.0, part) for part in bracket[:4])
        bracket = Bracket(inner_est, inner_var, outer_est, outer_var, bracket.aligned | empty)
        if isinstance(answer, pd.DataFrame):
            lower, upper = bracket_bounds(bracket, self.noise, confidence_level, answer["estimate"].to_numpy())
            return answer.assign(lower=lower, upper=upper, aligned=bracket.aligned)
        return BracketedRangeAnswer(
            answer.low, answer.high, answer.estimate, answer.std_error,
            bool(bracket.aligned[0]) and not self.post_processing, self.noise, 0,
            inner_estimate=float(bracket.inner_estimate[0]), inner_std_error=float(np.sqrt(bracket.inner_variance[0])),
            outer_estimate=float(bracket.outer_estimate[0]), outer_std_error=float(np.sqrt(bracket.outer_variance[0])),
            aligned=bool(bracket.aligned[0]))

    def _box_query(self, low: Any, high: Any) -> BracketedRangeAnswer:
        """A box in data units (``range_query((lat0, lon0), (lat1, lon1))``) with its bracket interval.

        The estimate sums the box's cells (cut blocks spread evenly: biased),
        ``std_error`` is its noise only, and ``confidence_interval`` brackets the
        box between the whole blocks inside it and those it touches, as
        :meth:`cell_box_query` does for cell-index boxes.
        """
        box, edges_low, edges_high = self._box_bounds(low, high)
        if any(sl.start >= sl.stop for sl in box):   # an empty box: exactly 0
            return BracketedRangeAnswer(edges_low, edges_high, 0.0, 0.0, True, self.noise, 0, aligned=True)
        lo = np.array([[sl.start for sl in box]], dtype=np.int64)
        hi = np.array([[sl.stop for sl in box]], dtype=np.int64)
        est, var = self._box_stats(lo, hi)
        b = self._bracket_boxes(lo, hi)
        aligned = bool(b.aligned[0])
        return BracketedRangeAnswer(
            edges_low, edges_high, float(est[0]), float(np.sqrt(max(float(var[0]), 0.0))),
            aligned and not self.post_processing, self.noise, 0,
            inner_estimate=float(b.inner_estimate[0]), inner_std_error=float(np.sqrt(b.inner_variance[0])),
            outer_estimate=float(b.outer_estimate[0]), outer_std_error=float(np.sqrt(b.outer_variance[0])),
            aligned=aligned)

    def cell_box_query(self, lower: Any, upper: Any, *, confidence_level: float = 0.95) -> pd.DataFrame:
        """Estimate, noise std error and bracket interval of sums over boxes of cells ``[lower, upper)``.

        Parameters
        ----------
        lower, upper : array-like of int, shape (d,) or (q, d)
            Half-open cell-index bounds of one or several boxes (rectangles in 2-D).
        confidence_level : float
            Coverage of ``lower``/``upper``.

        Returns
        -------
        DataFrame
            One row per box: ``estimate``, ``std_error`` (noise only), ``lower``,
            ``upper`` (:func:`~pandas_dp.results.bracket.bracket_bounds`) and
            ``aligned`` (the box is made of whole blocks: no spreading bias).
        """
        normal_quantile(confidence_level)
        lo, hi = _boxes(lower, upper, self.domain.shape)
        est, var = self._box_stats(lo, hi)
        bracket = self._bracket_boxes(lo, hi)
        low_end, high_end = bracket_bounds(bracket, self.noise, confidence_level, est)
        return pd.DataFrame({"estimate": est, "std_error": np.sqrt(np.maximum(var, 0.0)), "lower": low_end,
                             "upper": high_end, "aligned": bracket.aligned})
