"""Exact rational conversion of user-given privacy parameters."""

from __future__ import annotations

import numbers
import reprlib
from decimal import Decimal
from fractions import Fraction

import numpy as np

from pandas_dp.errors import ParameterError

__all__ = ["to_fraction", "safe_repr", "fraction_text", "exact_text"]


class _ShortRepr(reprlib.Repr):
    """``reprlib`` with a few more items per container; an element whose ``__repr__`` raises is shown by type."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxlist, self.maxtuple, self.maxdict, self.maxset, self.maxfrozenset = 3, 12, 12, 6, 6, 6
        self.maxarray, self.maxdeque, self.maxstring, self.maxother, self.maxlong = 12, 12, 200, 200, 60

    def repr_instance(self, x: object, level: int) -> str:
        try:
            shown = repr(x)
        except Exception:  # noqa: BLE001 - a hostile __repr__ may raise anything
            return f"<{type(x).__name__} object>"
        return shown if len(shown) <= self.maxother else shown[:self.maxother - 3] + "..."


_SHORT = _ShortRepr()


def exact_text(value: Fraction) -> str:
    """An exact rational as a person writes it: a decimal when it has one (up to 20 places), else ``a/b``.

    Examples
    --------
    >>> exact_text(Fraction(1, 2)), exact_text(Fraction(5)), exact_text(Fraction(-1, 80)), exact_text(Fraction(1, 3))
    ('0.5', '5', '-0.0125', '1/3')
    """
    value = Fraction(value)
    d, twos, fives = value.denominator, 0, 0
    while d % 2 == 0:
        d, twos = d // 2, twos + 1
    while d % 5 == 0:
        d, fives = d // 5, fives + 1
    places = max(twos, fives)
    if d != 1 or places > 20:
        return f"{value.numerator}/{value.denominator}"
    if places == 0:
        return str(value.numerator)
    scaled = abs(value.numerator) * 10**places // value.denominator
    whole, frac = divmod(scaled, 10**places)
    return f"{'-' if value < 0 else ''}{whole}.{frac:0{places}d}".rstrip("0")


def safe_repr(value: object, limit: int = 60) -> str:
    """``repr(value)`` for an error message: shortened, bounded in cost, and never raising.

    Containers show their first items only (a list of 2**22 bin edges is not printed whole), and a
    value whose ``__repr__`` (or ``__len__``, ``__iter__``...) raises is shown by its type.

    Examples
    --------
    >>> safe_repr(list(range(100)))
    '[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, ...]'
    >>> class Hostile:
    ...     def __repr__(self):
    ...         raise RuntimeError
    >>> safe_repr([1, Hostile()])
    '[1, <Hostile object>]'
    """
    try:
        shown = _SHORT.repr(value)
    except Exception:  # noqa: BLE001 - a hostile container method
        shown = f"<{type(value).__name__} object>"
    return shown if len(shown) <= limit else shown[:limit - 3] + "..."


def _refuse(value: object, name: str, why: str) -> ParameterError:
    shown = safe_repr(value)
    return ParameterError(
        f"The '{name}' parameter must be a positive, finite real number; {why}. Got {shown} of type "
        f"{type(value).__name__}. Pass a positive number such as {name}=0.5.")


def to_fraction(value: object, *, name: str = "epsilon") -> Fraction:
    """Convert a positive, finite real number to an exact :class:`~fractions.Fraction`.

    Floats go through their shortest decimal representation, so ``0.1`` is
    exactly ``1/10`` and ten charges of ``0.1`` add up to exactly ``1``.
    Decimals, integers and fractions are taken exactly.

    Parameters
    ----------
    value : int, float, Fraction, Decimal or a numpy real scalar
        The amount. ``bool``, strings, complex numbers, ``numpy.timedelta64``
        and other non-numbers are refused.
    name : str
        The argument's name, used in the error message.

    Returns
    -------
    Fraction
        ``value`` exactly, positive.

    Raises
    ------
    ParameterError
        If ``value`` is not a real number, or is NaN (quiet or signalling),
        infinite, zero, negative, or above the largest double (``10**400``).
        Decimals whose exponent is beyond +-400 are refused without building
        their huge integers.

    Examples
    --------
    >>> to_fraction(0.1)
    Fraction(1, 10)
    >>> to_fraction(Decimal("0.25"), name="rho")
    Fraction(1, 4)
    """
    if isinstance(value, (bool, np.bool_, np.timedelta64, np.datetime64)) or not isinstance(
            value, (numbers.Real, Decimal)):
        raise _refuse(value, name, "bools, strings, dates and complex numbers are not amounts")
    try:
        frac = _exact(value)
    except (ArithmeticError, ValueError, TypeError, OverflowError):
        raise _refuse(value, name, "NaN, infinite and out-of-range values are refused")
    if frac is None:
        raise _refuse(value, name, "NaN, infinite and out-of-range values are refused")
    if frac <= 0:
        raise _refuse(value, name, "it must be greater than 0")
    # The amount must survive the float conversions of messages and noise calibration.
    try:
        float(frac)
    except OverflowError:
        raise _refuse(value, name, "it must be at most the largest double (about 1.8e308)")
    return frac


def _exact(value: object) -> Fraction | None:
    """The exact rational of ``value``, or None for NaN and infinities (ValueError and friends may escape)."""
    if isinstance(value, Decimal):
        if not value.is_finite():  # NaN, sNaN (float() would raise) and infinities
            return None
        if value.is_zero():
            return Fraction(0)
        if not -400 <= value.adjusted() <= 400:  # outside a double's range: refused without a huge integer
            raise OverflowError("decimal exponent out of range")
        return Fraction(value)
    if isinstance(value, Fraction):
        return value
    if isinstance(value, numbers.Integral):
        as_int = int(value)
        if as_int.bit_length() > 1100:
            raise OverflowError("integer out of range")
        return Fraction(as_int)
    if isinstance(value, np.floating) and value.dtype.itemsize > 8:  # long double: no shortest repr as a float
        with np.errstate(all="ignore"):
            if not np.isfinite(value):
                return None
            as_float = float(value)
        if as_float in (0.0, float("inf"), float("-inf")) and value != 0:
            raise OverflowError("long double out of the range of a double")
        return Fraction(repr(as_float))
    as_float = float(value)  # type: ignore[arg-type]
    if as_float != as_float or as_float in (float("inf"), float("-inf")):
        return None
    return Fraction(repr(as_float))


def fraction_text(value: Fraction) -> str:
    """Exact text of a rational: ``"3/10"``, ``"2"``, ``"-1/4"`` (ledgers, results' parameters)."""
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
