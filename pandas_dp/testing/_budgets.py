"""The budgets the testing tools open around the calls they make, in a fresh context."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any, Union

from pandas_dp._utils.rational import to_fraction
from pandas_dp.accounting.budget import ACTIVE_BUDGETS, Budget
from pandas_dp.accounting.budget import budget as open_user_budget
from pandas_dp.errors import ParameterError

__all__ = ["BudgetSpec", "DEFAULT_TEST_BUDGET", "TESTING_BUDGET", "describe_spec", "open_budget"]

#: Budget opened around the trials when the caller gives none: large enough for any test run.
DEFAULT_TEST_BUDGET = Fraction(10**9)


class _TestingBudget:
    """Sentinel: the default testing budget (pure epsilon ``DEFAULT_TEST_BUDGET``)."""

    def __repr__(self) -> str:
        return f"epsilon={DEFAULT_TEST_BUDGET}"


TESTING_BUDGET: Any = _TestingBudget()

#: A budget given to the testing tools: a total epsilon, keyword arguments of
#: :func:`pandas_dp.budget` (e.g. ``{"rho": 10**6}``), a zero-argument factory
#: returning a fresh budget, or ``None`` (no budget open).
BudgetSpec = Union[float, Fraction, Mapping[str, Any], Callable[[], Any], None]


def describe_spec(spec: Any) -> str:
    """Short text of a budget spec for messages."""
    if spec is None:
        return "no budget"
    if isinstance(spec, _TestingBudget):
        return f"the testing budget, epsilon={DEFAULT_TEST_BUDGET}"
    if isinstance(spec, Mapping):
        return "budget(" + ", ".join(f"{k}={v!r}" for k, v in spec.items()) + ")"
    if callable(spec) and not isinstance(spec, _TestingBudget):
        return f"budget from {getattr(spec, '__name__', 'a factory')}()"
    return f"budget(epsilon={spec!r})"


def open_budget(spec: Any, *, caller: str) -> Any:
    """A fresh, not yet entered budget object for ``spec`` (``None`` for no budget).

    Raises
    ------
    ParameterError
        When ``spec`` is none of the accepted forms, or ``pandas_dp.budget``
        refuses its keyword arguments (checked before any call is made).
    """
    if spec is None:
        return None
    if isinstance(spec, _TestingBudget):
        return Budget(DEFAULT_TEST_BUDGET)
    if isinstance(spec, numbers.Real) and not isinstance(spec, bool):
        return Budget(to_fraction(spec, name="budget"))
    if isinstance(spec, Mapping):
        try:
            made = open_user_budget(**spec)
        except TypeError as err:
            raise ParameterError(
                f"The 'budget' parameter of {caller} was {describe_spec(spec)}, which pandas_dp.budget does not "
                f"accept ({err}). Pass keyword arguments of pandas_dp.budget, e.g. {{'epsilon': 10**9}}.") from err
        return made
    if callable(spec):
        made = spec()
        if not (hasattr(made, "__enter__") and hasattr(made, "spent_exact")):
            raise ParameterError(
                f"The 'budget' factory given to {caller} returned a {type(made).__name__}, not a budget. "
                f"Return a fresh pandas_dp.budget(...) from it (it is called once per dataset).")
        return made
    raise ParameterError(
        f"The 'budget' parameter of {caller} must be a total epsilon, a dict of pandas_dp.budget keyword "
        f"arguments (e.g. {{'rho': 10**6}}), a factory returning a fresh budget, or None for no budget. "
        f"Got {spec!r}.")


def run_detached(body: Callable[[], Any]) -> Any:
    """Run ``body`` in a copy of the current context with no budget active.

    A budget open around the tester is neither charged nor made a parent; every
    other context variable (a Dask collection's backend state, for one) is kept,
    which a fresh, empty :class:`contextvars.Context` would lose.
    """
    from contextvars import Context, copy_context

    no_budget = Context().run(ACTIVE_BUDGETS.get)  # the variable's default: no budget open

    def detached() -> Any:
        ACTIVE_BUDGETS.set(no_budget)
        return body()

    return copy_context().run(detached)
