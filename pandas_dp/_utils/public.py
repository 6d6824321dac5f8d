"""Reading public arguments without letting the argument itself raise or warn.

A public argument (bin edges, a range, query bounds) may be any object: a
generator, a string, a ``Decimal('sNaN')``, an integer beyond a double, an
object whose ``__float__`` or ``__iter__`` raises. The release checks must
answer such a value with a :class:`pandas_dp.ParameterError` (or
:class:`pandas_dp.DomainError`) that names it, never with the exception the
object raised or a numpy warning (``RuntimeWarning: overflow``). The helpers
here convert without raising or warning and return ``None`` when the value is
not what was asked for, so the caller raises its own documented error.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from pandas_dp._utils.rational import safe_repr

__all__ = ["float_array", "safe_repr"]


def float_array(value: Any) -> np.ndarray | None:
    """``value`` as a float64 array, or ``None`` when it is not made of real numbers.

    Never raises and never warns: numbers beyond the double range become
    ``inf`` (callers refuse non-finite values with their own message), and a
    value whose conversion raises anything (a string, a date, a complex
    number, a hostile ``__float__``, a generator) gives ``None``.

    Examples
    --------
    >>> float_array([0, 2.5]).tolist()
    [0.0, 2.5]
    >>> float_array(["a", 1]) is None, float_array(10**400) is None
    (True, True)
    """
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return np.asarray(value, dtype=np.float64)
        except Exception:  # noqa: BLE001 - whatever the object raises, it is not an array of numbers
            return None
