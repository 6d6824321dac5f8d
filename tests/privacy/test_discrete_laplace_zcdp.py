"""What a pure epsilon release costs under a rho budget: the Renyi divergences of the discrete Laplace.

A pure release adds discrete Laplace noise, ``P(z) = (1 - q)/(1 + q) q^|z|`` with ``q = exp(-1/t)`` and
``t = L1/epsilon`` (:mod:`pandas_dp.privacy.loss`), and is charged ``epsilon**2 / 2`` in a zCDP budget
(Bun and Steinke 2016, Proposition 1.4). Harrison and Manurangsi (FORC 2026, arXiv 2510.25746) prove
that the *continuous* Laplace mechanism is exactly ``(epsilon + e^-epsilon - 1)``-zCDP, which is smaller.
These tests compute the divergences of the discrete mechanism the library runs and show:

* ``epsilon + e^-epsilon - 1`` does NOT hold for the discrete Laplace at sensitivity 1, for any epsilon of
  the grid: as alpha -> 1, ``D_alpha / alpha`` tends to the KL divergence ``epsilon tanh(epsilon/2)``, which
  is above it (the privacy loss of a shift by one takes only the values +-epsilon, as in randomized
  response; the continuous mechanism's loss also takes every value in between). So the library keeps
  ``epsilon**2 / 2`` (docs/guide/zcdp.md);
* ``epsilon**2 / 2`` does hold, at every (epsilon, alpha) of the grid, for shifts 1 and 2 at scales
  ``1/epsilon`` and ``2/epsilon``.

Arithmetic (float64, with a stated error bound). ``D_alpha(P || Q) = log S / (alpha - 1)`` with
``S = sum_z P(z)^alpha Q(z)^(1 - alpha)``. Each term is ``exp(e_z)`` with the exponent
``e_z = log c - (alpha |z| + (1 - alpha) |z - k|)/t`` (``log c`` from ``log1p``); terms are summed with
``math.fsum`` (correctly rounded) after subtracting the largest exponent ``m``, and
``log S = m + log1p(fsum(terms) - 1)`` (the ``- 1`` inside ``fsum``: no cancellation). Every exponent has
absolute error below ``1e-13`` (``|e_z| < 2000`` times a few ulps), so every term and ``S`` have relative
error below ``2e-13``, and ``D_alpha`` absolute error below ``2e-13 / (alpha - 1) <= 2e-11`` for
``alpha >= 1.01``. The sum runs over ``|z| <= N`` with ``N`` chosen so that the two geometric tails left out
(at most ``2 e^(m) q^N / (1 - q)`` relative to the largest term) are below ``1e-30`` of ``S``; they are
added back as an upper bound. Assertions keep margins far above these errors (stated at each).
"""

from __future__ import annotations

import math

import numpy as np
import pytest


EPSILONS = [0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0]
#: Bound on the absolute error of :func:`renyi` for alpha >= 1.01 (module notes).
ERROR = 2e-11
ALPHAS = [1.01, 1.1, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0, 100.0]


def renyi(alpha: float, t: float, shift: int) -> float:
    """``D_alpha(DL_t(0) || DL_t(shift))`` by the truncated sum over the integers, tails added back."""
    q = math.exp(-1.0 / t)
    log_c = math.log1p(-q) - math.log1p(q)
    # Terms decay like q^|z| beyond the shift; the largest exponent is at most |alpha - 1| shift / t.
    top = abs(alpha - 1.0) * shift / t
    n = int(math.ceil((top + 80.0) * t)) + shift + 1  # q^n <= e^-(top + 80): tails below 1e-30 of S
    z = np.arange(-n, n + 1, dtype=np.float64)
    e = log_c - (alpha * np.abs(z) + (1.0 - alpha) * np.abs(z - shift)) / t
    m = float(e.max())
    terms = np.exp(e - m)
    tail = 2.0 * math.exp(log_c - m + (abs(alpha - 1.0) * shift - n) / t) / (1.0 - q)
    log_s = m + math.log1p(math.fsum([*terms.tolist(), tail, -1.0]))
    return log_s / (alpha - 1.0)


def test_the_sum_matches_the_closed_form_for_a_shift_by_one():
    # For shift 1 the two geometric series sum to S = (q^(1 - alpha) + q^alpha) / (1 + q).
    for eps in (0.05, 1.0, 5.0):
        q = math.exp(-eps)
        for alpha in (1.01, 2.0, 100.0):
            closed = (math.log(q ** (1 - alpha) + q ** alpha) - math.log1p(q)) / (alpha - 1)
            assert renyi(alpha, 1 / eps, 1) == pytest.approx(closed, rel=1e-9)  # two float routes agree


def test_the_laplace_bound_does_not_hold_for_the_discrete_laplace():
    """epsilon + e^-epsilon - 1 is below D_alpha / alpha near alpha = 1 at every epsilon of the grid."""
    for eps in EPSILONS:
        hm = eps + math.expm1(-eps)
        d = renyi(1.01, 1.0 / eps, 1)
        kl = eps * math.tanh(eps / 2)  # the limit alpha -> 1 (closed form for a shift by one)
        assert d / 1.01 > hm * (1 + 1e-3), (eps, d, hm)  # margins >= 3e-3 relative, errors ~1e-11
        assert kl > hm


def _check_square_bound(epsilons: list[float], alphas: list[float]) -> None:
    for eps in epsilons:
        for shift, t in ((1, 1.0 / eps), (1, 2.0 / eps), (2, 2.0 / eps)):  # sensitivity 1 and 2 at scale L1/eps
            for alpha in alphas:
                d = renyi(alpha, t, shift)
                # D_alpha is computed within ERROR (module notes); the smallest margin on the grid is 4.3e-10
                # (epsilon = 0.01, alpha = 1.01, shift 1, where it is about alpha epsilon^4 / 24), 20 times ERROR.
                assert d + ERROR <= alpha * eps**2 / 2, (eps, shift, alpha, d)


def test_epsilon_squared_over_two_holds_on_the_grid():
    _check_square_bound(EPSILONS, ALPHAS)
