"""Exact rational conversion of user-given privacy parameters."""

from __future__ import annotations

import math
import numbers
from decimal import Decimal
from fractions import Fraction

from .errors import ParameterError

__all__ = ["to_fraction"]


def to_fraction(value: object, *, name: str = "epsilon") -> Fraction:
    """Convert a positive, finite real number to an exact :class:`~fractions.Fraction`.

    Floats go through their shortest decimal representation, so ``0.1`` is
    exactly ``1/10`` and ten charges of ``0.1`` add up to exactly ``1``.

    Raises
    ------
    ParameterError
        If ``value`` is not a real number, or is NaN, infinite, zero or negative.
    """
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, Decimal)):
        raise ParameterError(
            f"The '{name}' parameter must be a positive real number. Got {value!r} "
            f"of type {type(value).__name__}. Pass e.g. {name}=0.5."
        )
    if isinstance(value, Fraction):
        frac = value
    elif isinstance(value, numbers.Integral):
        frac = Fraction(int(value))
    else:
        as_float = float(value)
        if not math.isfinite(as_float):
            raise ParameterError(
                f"The '{name}' parameter must be finite. Got {value!r}. Pass a positive number such as {name}=0.5."
            )
        frac = Fraction(value) if isinstance(value, Decimal) else Fraction(repr(as_float))
    if frac <= 0:
        raise ParameterError(
            f"The '{name}' parameter must be greater than 0. Got {value!r}. "
            f"Pass a positive number such as {name}=0.5."
        )
    return frac
