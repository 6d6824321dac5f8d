"""Which mechanism ``quantiles`` runs, from public inputs only, and the exponential mechanisms' estimates.

``quantiles`` has three mechanisms over the same exact counts (rows per value of the public grid):

* ``"tree"``: the hierarchical histogram, its CDF inverted (:mod:`pandas_dp.releases.quantiles`);
* ``"exponential"``: the exponential mechanism once per ``q``, the loss split over the ``q``'s;
* ``"recursive exponential"``: ApproximateQuantiles (Kaplan, Schnapp and Stemmer, ICML 2022), the middle ``q``
  first and the others among the rows on their side, the loss split over the depth ``ceil(log2(m + 1))``;

both exponential ones in :mod:`pandas_dp.algorithms.exponential_quantiles`, drawn exactly
(:mod:`pandas_dp.noise.exponential`). :func:`choose_mechanism` picks the tree or the recursive one from the
number of ``q``'s alone (see its notes for the evidence); it never sees a row.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.algorithms.exponential_quantiles import (em_epsilon, independent_quantiles, recursion_depth,
                                                        recursive_quantiles)
from pandas_dp.domain.grid import BinDomain
from pandas_dp.noise.exponential import exponential_index
from pandas_dp.privacy.loss import PrivacyLoss
from pandas_dp.results.quantiles import Quantiles, key_values

__all__ = ["MECHANISMS", "choose_mechanism", "exponential_estimates", "describe_mechanism", "exponential_result"]

#: The mechanisms and what the ledger and ``result.params["mechanism"]`` say of them.
MECHANISMS = {
    "tree": "hierarchical histogram over a public grid of the bounds, CDF inverted",
    "exponential": "exponential mechanism per q over a public grid of the bounds (the loss split over the q's)",
    "recursive exponential": "recursive exponential mechanism (ApproximateQuantiles) over a public grid of the "
                             "bounds (the loss split over the recursion's depth)",
}

#: Up to this many distinct ``q``'s (a recursion at most 4 deep) the recursive exponential mechanism runs; the
#: tree above.
MAX_RECURSIVE_Q = 15


def choose_mechanism(n_q: int, loss: PrivacyLoss, steps: int, max_rows: int) -> str:
    """The mechanism for ``n_q`` distinct ``q``'s (public inputs only; see the module notes).

    Parameters
    ----------
    n_q : int
        The number of distinct ``q``'s asked.
    loss : PrivacyLoss
        The release's loss (its kind and size).
    steps : int
        The public grid's number of values.
    max_rows : int
        Rows a privacy unit may add (1 without units).

    Returns
    -------
    str
        A key of :data:`MECHANISMS`.

    Notes
    -----
    Measured in ``benchmarks/bench_quantile_mechanisms.py`` (``benchmarks/results/quantile_mechanisms.md``:
    five real skewed columns, eps 0.1 and 1, 50 seeds):

    * one ``q``: the exponential mechanism's rank error is below the tree's in 40 of 50 cells (2x-24x
      where the noise dominates), equal in 5, above in 5 (large tied columns at eps = 1, at most 1.25x);
    * nine deciles (depth 4): the recursion is below both the tree and the exponential mechanism per
      ``q`` on the noise-dominated cells (1.1x-1.4x below the better of the two), equal or slightly
      above on the largest, most tied columns (there the exponential mechanism per ``q`` is best, by up
      to 1.35x; nothing public tells those apart);
    * 19 and 99 ``q``'s (depth 5 and 7): the tree, one release for every ``q``, is as good or better.

    So the recursion runs up to a depth of 4 (15 ``q``'s) and the tree above; the exponential mechanism per
    ``q`` is never chosen (it is the peers' way, kept for the benchmark). The loss and ``max_rows`` scale the
    noise part of every mechanism's rank error alike (``max_rows / (n eps)`` times a function of the grid),
    and the grid is fixed, so none of them moves the choice; they are arguments so that the rule stays on
    public inputs by its signature.
    """
    del loss, steps, max_rows  # public, and measured not to change the choice (see Notes)
    return "recursive exponential" if n_q <= MAX_RECURSIVE_Q else "tree"


def exponential_estimates(counts: np.ndarray, probs: np.ndarray, loss: PrivacyLoss, max_rows: int, mechanism: str,
                          rng: Any) -> np.ndarray:
    """The grid index of every ``q`` by one of the exponential mechanisms (exact draws from ``rng``)."""
    def draw(gamma: Any, scores: np.ndarray) -> int:
        return exponential_index(gamma, scores, rng=rng)

    run = recursive_quantiles if mechanism == "recursive exponential" else independent_quantiles
    return run(np.asarray(counts, dtype=np.int64), probs, loss, max_rows, draw)


def describe_mechanism(mechanism: str, n_q: int, loss: PrivacyLoss) -> dict[str, Any]:
    """The public parameters of an exponential mechanism: the epsilon of every draw and how many share it."""
    if mechanism == "recursive exponential":
        depth = recursion_depth(n_q)
        return {"depth": depth, "epsilon_per_draw": str(em_epsilon(loss.part(Fraction(1, depth))))}
    return {"draws": n_q, "epsilon_per_draw": str(em_epsilon(loss.part(Fraction(1, n_q))))}


def exponential_result(counts: np.ndarray, probs: np.ndarray, bins: BinDomain, loss: PrivacyLoss, max_rows: int,
                       mechanism: str, params: dict[str, Any], column: Any, rng: Any,
                       grid: np.ndarray | None = None) -> Quantiles:
    """The ``Quantiles`` of an exponential mechanism: one grid value per ``q``, no interval (``NaN``: see
    :mod:`pandas_dp.algorithms.exponential_quantiles`), no histogram. ``grid``: the grid values in the keys of
    ``bins`` when the caller has them exactly (numbers: round decimals); else the midpoints of the bins."""
    found = exponential_estimates(counts, probs, loss, max_rows, mechanism, rng)
    keys = np.asarray(bins.keys, dtype=np.float64)
    values = np.concatenate([keys[:1], (keys[1:-2] + keys[2:-1]) / 2.0, keys[-1:]]) if grid is None else grid
    none = np.full(probs.size, np.nan)
    estimates = pd.DataFrame({"estimate": key_values(bins, values[found]), "ci_low": key_values(bins, none),
                              "ci_high": key_values(bins, none.copy()), "confidence_level": np.nan},
                             index=pd.Index(probs, name="q"))
    return Quantiles(estimates=estimates, histogram=None, epsilon=loss.pure_epsilon, params=params, loss=loss,
                     column=column)
