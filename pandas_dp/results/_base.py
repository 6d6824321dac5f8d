"""Behaviour shared by every result object: immutability, pickling, value equality, intervals."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from pandas_dp._utils.checks import normal_quantile
from pandas_dp.errors import ParameterError
from pandas_dp.results._format import with_note
from pandas_dp.results.frozen import FrozenDict, FrozenList, Released, freeze, same

__all__ = ["FrozenRelease", "EstimatesView", "MeasureView", "normal_quantile", "confidence_bounds", "noise_radius",
           "FrozenDict", "FrozenList"]


def confidence_bounds(estimate: Any, std_error: Any, confidence_level: float = 0.95, *,
                      radius: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds of two-sided intervals ``estimate ± r``: the one rule of every result.

    Parameters
    ----------
    estimate, std_error : array-like of float
        Released estimates and their standard errors (same shape).
    confidence_level : float
        Nominal coverage in (0, 1).
    radius : array-like of float, optional
        Exact half-widths at ``confidence_level`` where known (e.g. a
        quantile of the noise distribution of a single cell); a missing
        (NaN) entry, or no ``radius`` at all, uses the normal approximation.

    Returns
    -------
    (ndarray, ndarray)
        ``lower`` and ``upper``, float64, shaped like ``estimate``.

    Raises
    ------
    ParameterError
        When ``confidence_level`` is not a number in (0, 1).

    Notes
    -----
    The normal approximation is ``r = z * std_error`` with
    ``z = Phi^{-1}((1 + confidence_level) / 2)`` (1.959964 at 0.95). It adds
    no privacy cost: only released estimates and public variances are read.

    Examples
    --------
    >>> lower, upper = confidence_bounds([10.0, 20.0], [1.0, 2.0])
    >>> lower.round(3).tolist(), upper.round(3).tolist()
    ([8.04, 16.08], [11.96, 23.92])
    """
    z = normal_quantile(confidence_level)
    est = np.asarray(estimate, dtype=np.float64)
    half = z * np.asarray(std_error, dtype=np.float64)
    if radius is not None:
        exact = np.broadcast_to(np.asarray(radius, dtype=np.float64), half.shape)
        half = np.where(np.isnan(exact), half, exact)
    return est - half, est + half


def noise_radius(noise: Any, terms: Any, std_error: Any, confidence_level: float) -> np.ndarray | None:
    """Half-widths from the release's noise model, or None (normal approximation) without one.

    Parameters
    ----------
    noise : Noise, list of Noise, or None
        The noise of the release's measurements (:class:`pandas_dp.privacy.loss.Noise`), or one
        noise per estimate.
    terms : int or array of int
        Per estimate: ``k >= 1`` when it is the sum of ``k`` independent draws of ``noise``
        added to exact counts (identity cells and ranges: the exact distribution of the sum);
        ``0`` for a linear combination with real weights (``noise.tail_factor`` times the
        standard error).
    std_error : array-like of float
        Standard errors of the estimates.
    confidence_level : float
        Nominal coverage.
    """
    if noise is None:
        return None
    normal_quantile(confidence_level)
    se = np.asarray(std_error, dtype=np.float64)
    k = np.broadcast_to(np.asarray(terms, dtype=np.int64), se.shape)
    if isinstance(noise, list):
        radius = np.empty(se.shape)
        for one in set(noise):
            mine = np.array([n == one for n in noise]).reshape(se.shape)
            radius[mine] = noise_radius(one, k[mine], se[mine], confidence_level)
        return radius
    radius = noise.tail_factor(confidence_level) * se
    for count in np.unique(k[k > 0]):
        radius = np.where(k == count, noise.sum_radius(int(count), confidence_level), radius)
    return radius


class FrozenRelease(Released):
    """A released result is immutable, pickles, and compares by value.

    Every field is stored frozen and handed out protected (see
    :mod:`pandas_dp.results.frozen`): assigning an attribute raises, and
    writing into a Series, array or mapping obtained from the result leaves
    the result unchanged. ``copy.copy`` and ``copy.deepcopy`` return the
    result itself (it cannot change), which lets a release ride in
    ``DataFrame.attrs``, deep-copied by pandas on every derived frame.
    ``pickle``/``joblib`` round trips give an equal result whose every method
    answers the same.
    """

    __hash__ = None  # type: ignore[assignment]  # value equality over unhashable pandas fields

    def __copy__(self) -> Any:
        return self

    def __deepcopy__(self, memo: dict) -> Any:
        return self

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Unpickled arrays are writeable again (or memory maps, from joblib): freeze every field anew.
        vars(self).update({name: freeze(value, loaded=True) for name, value in state.items()})

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        mine, theirs = vars(self), vars(other)
        return mine.keys() == theirs.keys() and all(same(mine[k], theirs[k]) for k in mine)


class MeasureView:
    """The privacy measure of a release that carries its ``loss`` (``PureDP`` epsilon or ``ZCDP`` rho).

    ``epsilon`` (a field of every result) is the pure epsilon, ``None`` for a
    zCDP release; ``rho`` is the zCDP rho, ``None`` for a pure release (whose
    epsilon implies ``epsilon**2 / 2``-zCDP, which is what it cost in a rho budget).
    """

    loss: Any

    @property
    def measure(self) -> str | None:
        """``"pure"`` (epsilon-DP) or ``"zcdp"`` (rho-zCDP): what ``loss`` measures."""
        return None if self.loss is None else self.loss.measure

    @property
    def rho(self) -> float | None:
        """The rho of a zCDP release (None for a pure-epsilon release)."""
        return float(self.loss.amount) if self.measure == "zcdp" else None


class EstimatesView:
    """Pandas views of a release made of ``counts`` (estimates) and their ``variance``."""

    counts: pd.Series
    variance: pd.Series

    @property
    def std_error(self) -> pd.Series:
        """Standard error of every estimate, ``sqrt(variance)``."""
        return np.sqrt(self.variance).rename("std_error")

    def to_series(self) -> pd.Series:
        """The released estimates as a new Series."""
        return self.counts.copy()

    def to_frame(self) -> pd.DataFrame:
        """One row per estimate: ``estimate``, ``variance``, ``std_error`` (a new frame)."""
        counts, variance = self.counts, self.variance.to_numpy()
        # Columns as arrays on one index: aligning the Series would compare their (equal) indexes.
        return with_note(pd.DataFrame({"estimate": counts.to_numpy(), "variance": variance,
                                       "std_error": np.sqrt(variance)}, index=counts.index),
                         getattr(self, "params", {}))

    def _cells_noise(self) -> tuple[Any, int]:
        """The noise of the estimates, and the draws summed in one (1: its count plus one draw; 0: a
        least-squares combination)."""
        return getattr(self, "noise", None), 0

    def confidence_interval(self, confidence_level: float = 0.95) -> pd.DataFrame:
        """Intervals per estimate: columns ``lower``, ``upper`` (:func:`confidence_bounds`).

        An estimate that is its exact count plus one noise draw (identity cells)
        gets the exact quantile of the noise; a least-squares combination of
        draws gets the noise's ``tail_factor`` times its standard error; without
        a noise model, ``z * std_error``.
        """
        counts = self.counts
        std = self.std_error.to_numpy()
        noise, terms = self._cells_noise()
        radius = noise_radius(noise, terms, std, confidence_level)
        lower, upper = confidence_bounds(counts.to_numpy(), std, confidence_level, radius=radius)
        return pd.DataFrame({"lower": lower, "upper": upper}, index=counts.index)
