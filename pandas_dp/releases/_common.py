"""Shared steps of every release: argument checks and the budget charge.

Order of every release (privacy rule 4): validate all arguments and build the
public domain -> check that a budget is active -> count -> charge (atomic,
before any noise) -> draw noise and post-process -> wrap. An exception after
the charge keeps the charge and marks the ledger entry ``failed``.
"""

from __future__ import annotations

from contextlib import contextmanager
from fractions import Fraction
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd

from .._rational import to_fraction
from ..budget import Budget, active_budget
from ..errors import BudgetExceededError, ParameterError
from ..noise import SecureRandom

__all__ = ["check_epsilon", "check_noise_scale", "check_rng", "check_columns", "check_flag", "check_choice", "charging",
           "active_budget", "check_budget_room"]


MIN_EPSILON = Fraction(1, 2**40)


def check_epsilon(epsilon: Any) -> Fraction:
    """The caller's epsilon as an exact positive rational (ParameterError otherwise).

    Epsilons below ``2**-40`` are refused: their noise scale (above 10^12 per
    unit of sensitivity, even before a method splits the budget) would
    overflow the integer noise and carries no information anyway.
    """
    value = to_fraction(epsilon, name="epsilon")
    if value < MIN_EPSILON:
        raise ParameterError(
            f"The 'epsilon' parameter is too small: got {epsilon!r}, the minimum is 2**-40 "
            f"(about {float(MIN_EPSILON):.1e}); noise that large would hide every count. Pass a larger epsilon."
        )
    return value


#: Largest noise scale the sampler accepts (int64 noise must not overflow).
MAX_NOISE_SCALE = Fraction(1 << 50)


def check_noise_scale(epsilon_part: Fraction, *, sensitivity: int = 1, what: str) -> None:
    """Raise ParameterError (before any charge) when a share of epsilon needs a noise scale above 2**50."""
    from ..noise import noise_scale

    if epsilon_part <= 0 or noise_scale(sensitivity, epsilon_part) > MAX_NOISE_SCALE:
        raise ParameterError(
            f"The 'epsilon' parameter is too small for {what}: its share {float(epsilon_part):.3g} needs a "
            f"noise scale above 2**50. Pass a larger epsilon or change the split."
        )


def check_rng(rng: Any) -> np.random.Generator | SecureRandom | None:
    """``None`` or a :class:`~pandas_dp.noise.SecureRandom` (cryptographically secure noise), or a numpy
    Generator (reproducible, not for production)."""
    if rng is None or isinstance(rng, (np.random.Generator, SecureRandom)):
        return rng
    hint = " Pass rng=np.random.default_rng(seed) for a reproducible experiment." if isinstance(
        rng, (int, np.integer)) else ""
    raise ParameterError(
        f"The 'rng' parameter must be None or a pandas_dp.noise.SecureRandom (secure randomness, for production), "
        f"or a numpy.random.Generator "
        f"(reproducible experiments only). Got {rng!r}.{hint}"
    )


def check_flag(value: Any, name: str) -> bool:
    """A strict boolean keyword argument."""
    if not isinstance(value, (bool, np.bool_)):
        raise ParameterError(f"The '{name}' parameter must be True or False. Got {value!r}.")
    return bool(value)


def check_choice(value: Any, name: str, choices: Sequence[str]) -> str:
    """One of a fixed set of string options."""
    if not isinstance(value, str) or value not in choices:
        raise ParameterError(f"The '{name}' parameter must be one of {list(choices)}. Got {value!r}.")
    return value


def check_columns(frame: pd.DataFrame, columns: Any, *, name: str = "columns") -> list[str]:
    """The released column names: one label or a non-empty list of distinct labels present in ``frame``."""
    if isinstance(columns, (list, tuple)):
        cols = list(columns)
        if not cols:
            raise ParameterError(f"The '{name}' parameter is empty; pass at least one column of the frame.")
    else:
        cols = [columns]
    missing = [c for c in cols if c not in frame.columns]
    if missing:
        raise ParameterError(
            f"Column(s) {missing} of '{name}' not in the frame; check spelling. Columns: {list(frame.columns)[:20]}."
        )
    if len(set(map(repr, cols))) != len(cols):
        raise ParameterError(f"The '{name}' parameter repeats a column: {cols}. Pass each column once.")
    return cols


@contextmanager
def charging(epsilon: Fraction, *, method: str, columns: Sequence[str],
             params: Mapping[str, Any], budget: Budget | None = None) -> Iterator[Budget]:
    """Charge ``epsilon`` to the active budget, then run the block that draws noise.

    The charge is recorded (durably, with a ledger) before the block runs. If
    the block raises, the charge stays and its ledger entry is marked ``failed``.
    """
    owner = budget if budget is not None else active_budget()
    charge = owner.spend(epsilon, method=method, columns=columns, params=params)
    try:
        yield owner
    except BaseException:
        charge.finish("failed")
        raise
    charge.finish("ok")


def check_budget_room(budget: Budget, epsilon: Fraction) -> None:
    """Raise :class:`BudgetExceededError` when ``budget`` cannot pay ``epsilon``, before private rows are read.

    The budget state is public, so this may raise loudly. It checks the
    innermost budget; :meth:`Budget.spend` checks the whole chain atomically
    at the charge. (Stand-in until ``Budget.check`` exists.)
    """
    remaining = budget.remaining_exact
    if epsilon > remaining:
        label = f"budget {budget.name!r}" if budget.name else "the active budget"
        raise BudgetExceededError(
            f"Requested epsilon={float(epsilon)!r} but {label} has only remaining={float(remaining)!r} of "
            f"epsilon={budget.epsilon!r} (spent {budget.spent!r}). Nothing was charged. Lower epsilon or "
            f"open a larger budget."
        )
