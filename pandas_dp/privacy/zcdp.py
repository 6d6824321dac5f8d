"""Convert a zCDP guarantee to (epsilon, delta)-DP, rounding up.

``rho``-zCDP implies ``(epsilon, delta)``-DP for every ``delta`` in ``(0, 1)`` with
(Canonne, Kamath, Steinke 2020, Corollary 13)

.. math:: \\varepsilon(\\delta) = \\inf_{\\alpha > 1}\\; g(\\alpha), \\qquad
   g(\\alpha) = \\alpha\\rho + \\frac{\\log(1/(\\alpha\\delta))}{\\alpha - 1} + \\log(1 - 1/\\alpha).

Any ``alpha > 1`` gives a valid ``epsilon``, so the value returned is
``g(alpha)`` at a numerically optimal ``alpha``, evaluated in interval
arithmetic and rounded up: never below ``g`` at that ``alpha``, hence never
below the infimum. ``g'(alpha) = rho - log(1/(alpha delta)) / (alpha - 1)**2``,
so the minimizer is the unique root of
``h(v) = rho v**2 + log(1 + v) - log(1/delta)`` with ``v = alpha - 1``
(``h`` is increasing, ``h(0) < 0 <= h(sqrt(log(1/delta)/rho))``).

The classical bound ``rho + 2 sqrt(rho log(1/delta))`` (Bun and Steinke 2016,
Proposition 1.3) is the same infimum without the two negative terms
``-log(alpha)/(alpha - 1) + log(1 - 1/alpha)``, hence never smaller.
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Context, Decimal
from fractions import Fraction


from pandas_dp._utils.rational import to_fraction
from pandas_dp.errors import ParameterError

__all__ = ["zcdp_epsilon", "zcdp_epsilon_simple"]

_DIGITS = 80


def _inputs(rho: object, delta: object) -> tuple[Fraction, Fraction]:
    r = to_fraction(rho, name="rho")
    try:
        d = float(delta)  # type: ignore[arg-type]
    except (TypeError, ValueError) as err:
        raise ParameterError(f"delta must be a number strictly between 0 and 1; got {delta!r}.") from err
    if not 0.0 < d < 1.0 or isinstance(delta, bool):
        raise ParameterError(f"delta must be a number strictly between 0 and 1; got {delta!r}. "
                             "Pass a small delta such as 1e-6 (below 1/n for n people).")
    return r, Fraction(d)


def _contexts() -> tuple[Context, Context]:
    return (Context(prec=_DIGITS, rounding=ROUND_CEILING, Emin=-(10**6), Emax=10**6),
            Context(prec=_DIGITS, rounding=ROUND_HALF_EVEN, Emin=-(10**6), Emax=10**6))


def _dec(x: Fraction, ctx: Context) -> Decimal:
    return ctx.divide(Decimal(x.numerator), Decimal(x.denominator))


def _ln_up(x: Fraction, up: Context, near: Context) -> Decimal:
    """An upper bound on ``log(x)`` (``x`` rounded up; ``ln`` is correctly rounded, so its successor bounds it)."""
    return up.next_plus(near.ln(_dec(x, up)))


def _down(up: Context) -> Context:
    down = up.copy()
    down.rounding = ROUND_FLOOR
    return down


def _ln_down(x: Fraction, up: Context, near: Context) -> Decimal:
    """A lower bound on ``log(x)``."""
    down = _down(up)
    return down.next_minus(near.ln(_dec(x, down)))


def _ceil_float(x: Decimal) -> float:
    """The smallest float ``>= x``."""
    f = float(x)
    return math.nextafter(f, math.inf) if Decimal(f) < x else f


def _g_upper(rho: Fraction, delta: Fraction, v: Fraction) -> Decimal:
    """Upper bound on ``g(1 + v) = (1+v) rho + (log(1/delta) - log(1+v)) / v + log(v / (1+v))``."""
    up, near = _contexts()
    log_inv_delta = _ln_down(delta, up, near).copy_negate()  # upper bound on log(1/delta), exact negation
    numerator = up.subtract(log_inv_delta, _ln_down(1 + v, up, near))
    # Dividing an upper bound by v > 0: the smaller v bounds a non-negative numerator, the larger a negative one.
    v_dec = _dec(v, _down(up)) if numerator >= 0 else _dec(v, up)
    middle = up.divide(numerator, v_dec)
    first = _dec((1 + v) * rho, up)
    last = _ln_up(v / (1 + v), up, near)
    return up.add(up.add(first, middle), last)


def zcdp_epsilon(rho: Fraction | float | int, delta: float) -> float:
    """Tight ``epsilon`` such that ``rho``-zCDP implies ``(epsilon, delta)``-DP, rounded up.

    Parameters
    ----------
    rho : Fraction, float or int
        The zCDP parameter, ``> 0`` (floats read through their shortest repr).
    delta : float
        ``0 < delta < 1``.

    Returns
    -------
    float
        ``g(alpha) = alpha rho + log(1/(alpha delta))/(alpha - 1) + log(1 - 1/alpha)``
        at a numerically optimal ``alpha``, rounded up (at least the infimum over
        ``alpha > 1``, within about ``1e-12`` relative of it), and at least 0.

    Raises
    ------
    ParameterError
        If ``rho`` is not positive or ``delta`` is not in ``(0, 1)``.

    Notes
    -----
    The minimizer solves ``rho (alpha - 1)**2 = log(1/(alpha delta))``, found by
    Brent's method on ``v = alpha - 1``; ``g`` is evaluated at the rational
    ``alpha = 1 + v`` with 80-digit decimal interval arithmetic (operations
    rounded up, correctly rounded logarithms widened by one unit), then
    rounded up to a float. The classical ``rho + 2 sqrt(rho log(1/delta))``
    is also evaluated at its own ``alpha`` and the smaller bound is returned
    (both are valid). A negative bound means ``(0, delta)``-DP and gives 0.

    References
    ----------
    Canonne, Kamath, Steinke (2020), "The discrete Gaussian for differential
    privacy", NeurIPS, Proposition 12 and Corollary 13; Bun and Steinke
    (2016), "Concentrated differential privacy: simplifications, extensions,
    and lower bounds", TCC, Proposition 1.3.

    Examples
    --------
    >>> round(zcdp_epsilon(Fraction(1, 2), 1e-6), 4)
    5.2215
    >>> zcdp_epsilon(0.5, 1e-6) < zcdp_epsilon_simple(0.5, 1e-6)
    True
    """
    r, d = _inputs(rho, delta)
    rf, log_inv = float(r), -math.log(float(d))
    v_max = math.sqrt(log_inv / rf)  # alpha of the classical bound; h(v_max) = log(1 + v_max) > 0
    candidates = [Fraction(v_max)]
    if v_max > 0:
        try:
            from scipy.optimize import brentq  # imported when a conversion needs it (0.5 s)

            v = brentq(lambda x: rf * x * x + math.log1p(x) - log_inv, 0.0, v_max, xtol=1e-300, rtol=1e-15,
                       maxiter=500)
            if v > 0:
                candidates.append(Fraction(v))
        except (ValueError, RuntimeError):  # pragma: no cover - h changes sign on [0, v_max]
            pass
    best = min(_g_upper(r, d, v) for v in candidates if v > 0)
    return max(_ceil_float(best), 0.0)


def zcdp_epsilon_simple(rho: Fraction | float | int, delta: float) -> float:
    """The classical conversion ``rho + 2 sqrt(rho log(1/delta))``, rounded up (for orientation).

    Parameters
    ----------
    rho : Fraction, float or int
        The zCDP parameter, ``> 0``.
    delta : float
        ``0 < delta < 1``.

    Returns
    -------
    float
        ``rho + 2 sqrt(rho log(1/delta))``, never below the exact value; never
        below :func:`zcdp_epsilon`.

    Raises
    ------
    ParameterError
        If ``rho`` is not positive or ``delta`` is not in ``(0, 1)``.

    References
    ----------
    Bun and Steinke (2016), Proposition 1.3.

    Examples
    --------
    >>> round(zcdp_epsilon_simple(Fraction(1, 2), 1e-6), 4)
    5.7565
    """
    r, d = _inputs(rho, delta)
    up, near = _contexts()
    log_inv = _ln_down(d, up, near).copy_negate()
    product = up.multiply(_dec(r, up), log_inv)
    root = up.next_plus(near.sqrt(product))
    return _ceil_float(up.add(_dec(r, up), up.multiply(Decimal(2), root)))
