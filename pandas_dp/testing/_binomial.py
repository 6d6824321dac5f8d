"""Exact (Clopper-Pearson) one-sided binomial confidence bounds, vectorized."""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["lower_bound", "upper_bound"]


def lower_bound(successes: np.ndarray, trials: int, alpha: float) -> np.ndarray:
    """One-sided Clopper-Pearson lower bound ``p_lo`` with ``P(p < p_lo) <= alpha``.

    Parameters
    ----------
    successes : ndarray of int
        Number of runs whose output fell in the event.
    trials : int
        Number of runs.
    alpha : float
        Error probability of the bound.

    Returns
    -------
    ndarray of float
        ``Beta(alpha; x, n - x + 1)`` quantile, and 0 when ``x = 0``.

    Notes
    -----
    The Clopper-Pearson bound inverts the exact binomial tail, so its coverage
    is at least ``1 - alpha`` for every ``p`` (no normal approximation, valid in
    the tails where the privacy ratio is largest).
    """
    x = np.asarray(successes, dtype=np.float64)
    safe = np.maximum(x, 1.0)
    out = stats.beta.ppf(alpha, safe, trials - safe + 1.0)
    return np.where(x > 0, out, 0.0)


def upper_bound(successes: np.ndarray, trials: int, alpha: float) -> np.ndarray:
    """One-sided Clopper-Pearson upper bound ``p_hi`` with ``P(p > p_hi) <= alpha``.

    Returns ``Beta(1 - alpha; x + 1, n - x)`` quantile, and 1 when ``x = n``.
    """
    x = np.asarray(successes, dtype=np.float64)
    safe = np.minimum(x, trials - 1.0)
    out = stats.beta.ppf(1.0 - alpha, safe + 1.0, trials - safe)
    return np.where(x < trials, out, 1.0)
