"""zCDP -> (epsilon, delta)-DP conversion (pandas_dp.privacy.zcdp) against a high-precision reference."""

from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pandas_dp._utils.rational import to_fraction
from pandas_dp.privacy.zcdp import zcdp_epsilon, zcdp_epsilon_simple
from pandas_dp.errors import ParameterError

RHOS = [1e-4, 0.005, Fraction(1, 8), Fraction(1, 3), 0.5, 1, 2.5, 10, 1000, 1e6]
DELTAS = [1e-15, 1e-12, 1e-9, 1e-6, 1e-3, 0.05]


def dec(x: Fraction) -> Decimal:
    return Decimal(x.numerator) / Decimal(x.denominator)


def g(alpha: Decimal, rho: Decimal, delta: Decimal) -> Decimal:
    """CKS (2020) Corollary 13: alpha rho + log(1/(alpha delta))/(alpha - 1) + log(1 - 1/alpha)."""
    return alpha * rho + (1 / (alpha * delta)).ln() / (alpha - 1) + (1 - 1 / alpha).ln()


def reference(rho, delta: float) -> Decimal:
    """inf over alpha > 1 at 60 digits: golden-section search on log(alpha - 1) (g is unimodal in alpha).

    Independent of the library's stationarity equation: only the objective is used.
    """
    with localcontext() as ctx:
        ctx.prec = 60
        r, d = dec(to_fraction(rho, name="rho")), Decimal(delta)

        def obj(x: Decimal) -> Decimal:
            return g(1 + x.exp(), r, d)

        lo, hi = Decimal(-80), Decimal(60)  # alpha - 1 in [e**-80, e**60]
        inv_phi = (Decimal(5).sqrt() - 1) / 2
        a, b = hi - inv_phi * (hi - lo), lo + inv_phi * (hi - lo)
        fa, fb = obj(a), obj(b)
        for _ in range(300):  # interval shrinks by 0.618**300 ~ 1e-63
            if fa < fb:
                hi, b, fb = b, a, fa
                a = hi - inv_phi * (hi - lo)
                fa = obj(a)
            else:
                lo, a, fa = a, b, fb
                b = lo + inv_phi * (hi - lo)
                fb = obj(b)
        return min(fa, fb)


@pytest.mark.parametrize("rho", RHOS)
def test_tight_conversion_against_reference(rho):
    for delta in DELTAS:
        ours = zcdp_epsilon(rho, delta)
        ref = reference(rho, delta)
        if ref <= 0:  # (0, delta)-DP: the function reports 0
            assert ours == 0.0
            continue
        # Never below the infimum (it is g at some alpha, rounded up) and within 1e-6 relative of it.
        assert Decimal(ours) >= ref, (rho, delta)
        assert (Decimal(ours) - ref) / ref <= Decimal("1e-6"), (rho, delta)
        assert ours <= zcdp_epsilon_simple(rho, delta)


def test_simple_bound_matches_formula_and_rounds_up():
    for rho in RHOS:
        for delta in DELTAS:
            with localcontext() as ctx:
                ctx.prec = 60
                r = dec(to_fraction(rho, name="rho"))
                exact = r + 2 * (r * -Decimal(delta).ln()).sqrt()
                got = zcdp_epsilon_simple(rho, delta)
                assert Decimal(got) >= exact and (Decimal(got) - exact) / exact < Decimal("1e-15")


def test_known_values():
    # rho = 1/2, delta = 1e-6 (the Gaussian mechanism at sigma = 1 per unit of L2 sensitivity):
    # the classical bound is 0.5 + 2 sqrt(0.5 ln 1e6) = 5.7565; the tight one is about 0.53 lower.
    assert zcdp_epsilon_simple(0.5, 1e-6) == pytest.approx(5.756521769756932, rel=1e-14)
    assert zcdp_epsilon(0.5, 1e-6) == pytest.approx(float(reference(0.5, 1e-6)), rel=1e-12)
    assert 5.2 < zcdp_epsilon(0.5, 1e-6) < 5.25


def test_tiny_rho_gives_zero():
    # rho = 1e-6 and delta = 1e-3: g(alpha) < 0 at the optimum, i.e. (0, 1e-3)-DP.
    assert reference(1e-6, 1e-3) < 0
    assert zcdp_epsilon(1e-6, 1e-3) == 0.0


@given(st.floats(min_value=1e-6, max_value=1e3), st.floats(min_value=1e-15, max_value=0.5),
       st.floats(min_value=1.0001, max_value=10.0))
@settings(max_examples=100, deadline=None)
def test_monotone_in_rho_and_delta(rho, delta, factor):
    # More rho, more epsilon; more delta, less epsilon (both hold for the infimum and its rounding
    # is far below the steps tested here).
    assert zcdp_epsilon(rho * factor, delta) >= zcdp_epsilon(rho, delta)
    assert zcdp_epsilon(rho, min(delta * factor, 0.99)) <= zcdp_epsilon(rho, delta)
    assert zcdp_epsilon(rho, delta) <= zcdp_epsilon_simple(rho, delta)


@pytest.mark.parametrize("delta", [0, 1, 0.0, 1.0, -0.1, 1.5, float("nan"), float("inf"), "x", None, True])
def test_bad_delta_raises(delta):
    with pytest.raises(ParameterError, match="delta"):
        zcdp_epsilon(0.5, delta)
    with pytest.raises(ParameterError, match="delta"):
        zcdp_epsilon_simple(0.5, delta)


@pytest.mark.parametrize("rho", [0, -1, float("nan"), float("inf"), "x", None])
def test_bad_rho_raises(rho):
    with pytest.raises(ParameterError, match="rho"):
        zcdp_epsilon(rho, 1e-6)
    with pytest.raises(ParameterError, match="rho"):
        zcdp_epsilon_simple(rho, 1e-6)
