"""Quantiles by the exponential mechanism on a public grid (numpy only): one per ``q``, or recursively.

The input is the exact count of rows at every value of a public grid (``counts[j]``, ``j = 0..m-1``, values
clipped to the bounds and rounded to the grid, each privacy unit keeping at most ``k = max_rows`` rows). The
output is a grid index per ``q``. The draw itself is an argument, ``draw(gamma, scores) -> index`` (the release
passes the exact sampler of :mod:`pandas_dp.noise.exponential`), so this module stays numpy only.

**One quantile** (Smith, STOC 2011, on a grid: the candidates are the grid values). With ``q = a / b`` in
lowest terms (``q`` is public; a float is read as the nearest fraction with denominator at most ``2**20``)
and, for candidate ``j``, ``lt_j`` the rows below it and ``gt_j`` the rows above it, the score is the integer
``d_j = |(b - a) lt_j - a gt_j|`` (``b`` times ``|(1 - q) lt_j - q gt_j|``: 0 where ``j`` splits the rows
``q : 1 - q``). *Sensitivity.* A neighbour adds or removes one row (or one unit's at most ``k`` rows): each row
moves ``lt_j`` or ``gt_j`` (or neither, at ``j`` itself) by one, so ``d_j`` moves by at most
``k max(a, b - a)`` for every ``j``; ``n`` is not in the score, so its change costs nothing more. The
candidate is drawn with probability proportional to ``exp(-gamma d_j)``, ``gamma = eps / (2 Delta)`` with
``Delta = k max(a, b - a)``: the exponential mechanism of McSherry and Talwar, ``eps``-DP. *zCDP.* The same
mechanism is ``eps``-bounded range (Durfee and Rogers, NeurIPS 2019: every outcome's log-ratio between
neighbours lies in an interval of width ``gamma 2 Delta = eps``), and ``eps``-bounded range implies
``eps**2 / 8``-zCDP (Cesar and Rogers, ALT 2021, Lemma 3.2), so a loss ``rho`` runs it at
``eps = sqrt(8 rho)``, rounded down to a rational (:func:`em_epsilon`); the plain conversion
(``eps``-DP is ``eps**2 / 2``-zCDP) would give half of that.

**Several quantiles, independently** (what OpenDP, Tumult and diffprivlib do): the loss split equally over the
``q``'s (sequential composition), one draw each; the indices are then sorted (post-processing), so the
released quantiles never decrease in ``q``.

**Several quantiles, recursively** (ApproximateQuantiles, Kaplan, Schnapp and Stemmer, ICML 2022,
arXiv:2110.05429): the middle ``q`` of the sorted list (``p``) is drawn first, on all rows, at index ``v``;
the ``q``'s below it are then found among the rows below ``v`` (candidates ``lo..v``, targets ``q / p``) and the
ones above among the rows above ``v`` (candidates ``v..hi``, targets ``(q - p) / (1 - p)``), recursively. The
``c`` rows *at* ``v`` are split: ``floor(c / 2)`` go down with the lower half, the rest up (the paper's points are
distinct; on a grid a whole tie at ``v`` on one side shifts every rescaled target of that side by up to the tie's
share, which the measurements showed on integer-valued columns; halving it halves that shift). One more row at
``v`` moves exactly one of ``floor(c / 2)``, ``c - floor(c / 2)`` by one, and ``k`` more rows move them by
``k_1 + k_2 = k``: the halves still see disjoint rows, chosen by the public ``v`` and the count at ``v``, each
row (or unit's rows) in one half only, so one depth of the recursion costs one draw's loss in parallel
composition; with ``m`` quantiles the depth is ``ceil(log2(m + 1))`` and each depth gets that
share of the loss. A unit whose rows fall on both sides moves the two halves' scores by ``k_1`` and ``k_2``
units' worth with ``k_1 + k_2 <= k``: the two draws' losses are ``eps k_1 / k`` and ``eps k_2 / k`` (pure DP;
bounded range scales the same way, so under zCDP ``rho ((k_1 / k)**2 + (k_2 / k)**2) <= rho``), so parallel
composition holds for units too. The results never decrease in ``q`` by construction.

**No interval.** An exponential-mechanism draw comes with a rank guarantee (its score exceeds the best by more
than ``ln(m / beta) / gamma`` with chance at most ``beta``), but turning ranks into values needs the data's
distribution, which is private: there is no sound value interval without spending more of the loss, so the
release reports none (``NaN``).

JointExp (Gillenwater, Joseph and Kulesza, ICML 2021) is not built. Its one draw picks all ``m`` outputs at once
with weight ``prod_j exp(-gamma |n_j - (q_j - q_{j-1}) n|)`` over the gaps between consecutive outputs; sampling
it needs the ``m x steps`` table of partition sums of those products over every monotone sequence (naively ``m
steps**2`` products-and-sums, about ``1.5e8`` for nine deciles on 4,097 values; the paper speeds it up in
floating-point logarithms) and then ``m`` draws backwards from it. Certified, every entry would be a directed-
rounding fixed-point bracket whose width grows along the sums, and each backward draw a refinement like
:mod:`pandas_dp.noise.exponential`'s over brackets recomputed at higher precision: multi-word integer arithmetic
over ``10**8`` terms per release, which numpy's fixed-width integers do not give and Python integers do too
slowly.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Callable, Sequence

import numpy as np

from pandas_dp.privacy.loss import PrivacyLoss, PureDP, ZCDP

__all__ = ["em_epsilon", "as_rational_q", "quantile_scores", "independent_quantiles", "recursive_quantiles",
           "recursion_depth"]

#: ``draw(gamma, scores) -> index``: an exact exponential-mechanism draw (probability ``exp(-gamma d_j) / Z``).
Draw = Callable[[Fraction, np.ndarray], int]

_MAX_Q_DENOMINATOR = 1 << 20
_SQRT_DENOMINATOR = 1 << 64


def em_epsilon(loss: PrivacyLoss) -> Fraction:
    """The epsilon an exponential-mechanism draw may use under ``loss`` (exact, never more than allowed).

    Pure DP: the loss's epsilon. zCDP: ``sqrt(8 rho)`` (bounded range, see the module notes), rounded down to a
    multiple of ``2**-64``.
    """
    if isinstance(loss, ZCDP):
        eight = 8 * loss.rho * _SQRT_DENOMINATOR ** 2
        return Fraction(math.isqrt(eight.numerator // eight.denominator), _SQRT_DENOMINATOR)
    if isinstance(loss, PureDP):
        return loss.epsilon
    raise TypeError(f"no exponential mechanism for a {type(loss).__name__} loss")


def as_rational_q(q: float | Fraction) -> Fraction:
    """A public probability as a fraction of denominator at most ``2**20`` (``0.1`` is ``1/10``)."""
    return Fraction(q).limit_denominator(_MAX_Q_DENOMINATOR)


def quantile_scores(counts: np.ndarray, q: Fraction) -> np.ndarray:
    """``|(b - a) lt_j - a gt_j|`` for every candidate ``j`` of ``counts`` (``q = a / b``; int64)."""
    a, b = q.numerator, q.denominator
    counts = np.asarray(counts, dtype=np.int64)
    below = np.cumsum(counts) - counts
    above = int(counts.sum()) - below - counts
    return np.abs((b - a) * below - a * above)


def _gamma(epsilon: Fraction, q: Fraction, max_rows: int) -> Fraction:
    """``eps / (2 Delta)`` with ``Delta = k max(a, b - a)``: the score's sensitivity (module notes)."""
    a, b = q.numerator, q.denominator
    return epsilon / (2 * max_rows * max(a, b - a))


def independent_quantiles(counts: np.ndarray, q: Sequence[float] | np.ndarray, loss: PrivacyLoss, max_rows: int,
                          draw: Draw) -> np.ndarray:
    """One draw per ``q`` on all candidates, the loss split equally; the indices sorted (int64, in ``q``'s order).

    Parameters
    ----------
    counts : ndarray
        Exact rows at every grid value (int64, length ``m``).
    q : sequence of float
        The probabilities (public), in any order.
    loss : PrivacyLoss
        The loss of the whole release.
    max_rows : int
        Rows a privacy unit may add (1 without privacy units).
    draw : callable
        ``draw(gamma, scores) -> index``.

    Returns
    -------
    ndarray
        The grid index of every ``q``, never decreasing in ``q``.
    """
    rationals = [as_rational_q(p) for p in q]
    epsilon = em_epsilon(loss.part(Fraction(1, len(rationals))))
    found = np.array([draw(_gamma(epsilon, p, max_rows), quantile_scores(counts, p)) for p in rationals],
                     dtype=np.int64)
    return _in_q_order(np.sort(found), np.asarray(q, dtype=np.float64))


def recursion_depth(m: int) -> int:
    """Depth of the recursive split of ``m`` quantiles: ``ceil(log2(m + 1))``."""
    return max(1, math.ceil(math.log2(m + 1)))


def recursive_quantiles(counts: np.ndarray, q: Sequence[float] | np.ndarray, loss: PrivacyLoss, max_rows: int,
                        draw: Draw) -> np.ndarray:
    """ApproximateQuantiles (module notes): the grid index of every ``q`` (int64, in ``q``'s order).

    Parameters are those of :func:`independent_quantiles`. Repeated ``q``'s are drawn once.
    """
    probs = np.asarray(q, dtype=np.float64)
    distinct = sorted({as_rational_q(p) for p in probs})
    epsilon = em_epsilon(loss.part(Fraction(1, recursion_depth(len(distinct)))))
    counts = np.asarray(counts, dtype=np.int64)
    found: dict[Fraction, int] = {}
    # (first candidate, rows at candidates first.., the absolute q range [start, start + width], the q's in it)
    stack: list[tuple[int, np.ndarray, Fraction, Fraction, list[Fraction]]] = [
        (0, counts, Fraction(0), Fraction(1), distinct)]
    while stack:
        lo, sub, start, width, todo = stack.pop()
        middle = todo[(len(todo) - 1) // 2]
        target = as_rational_q((middle - start) / width)
        j = draw(_gamma(epsilon, target, max_rows), quantile_scores(sub, target))
        found[middle] = lo + j
        left = [p for p in todo if p < middle]
        right = [p for p in todo if p > middle]
        at_v = int(sub[j])
        if left:                                           # the rows below v and half of those at v
            below = sub[: j + 1].copy()
            below[-1] = at_v // 2
            stack.append((lo, below, start, middle - start, left))
        if right:                                          # the other rows at v and those above
            above = sub[j:].copy()
            above[0] = at_v - at_v // 2
            stack.append((lo + j, above, middle, start + width - middle, right))
    return np.array([found[as_rational_q(p)] for p in probs], dtype=np.int64)


def _in_q_order(sorted_found: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """The sorted indices handed to the ``q``'s in increasing order of ``q`` (ties keep their order)."""
    out = np.empty_like(sorted_found)
    out[np.argsort(probs, kind="stable")] = sorted_found
    return out
