"""``outcome`` and ``assert_same_outcome``: one call on D and on D' must look the same to its caller."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pandas as pd

from pandas_dp.testing._budgets import TESTING_BUDGET, BudgetSpec, describe_spec, open_budget, run_detached
from pandas_dp.testing._neighbours import frame_and_name
from pandas_dp.testing._observe import Outcome, capture, error_outcome, result_outcome

__all__ = ["SameOutcomeFailure", "assert_same_outcome", "outcome"]


def _ledger_rows(b: Any) -> tuple[tuple[tuple[str, str], ...], ...]:
    """The budget's ledger rows without their time stamp (every value as text)."""
    frame = getattr(b, "ledger", None)
    if not isinstance(frame, pd.DataFrame):
        return ()
    frame = frame.drop(columns=[c for c in ("time",) if c in frame.columns])
    return tuple(tuple((str(k), str(v)) for k, v in row.items()) for row in frame.to_dict("records"))


def outcome(call: Callable[[Any], Any], frame: Any, *, budget: BudgetSpec = TESTING_BUDGET) -> Outcome:
    """Run ``call(frame)`` once and record everything its caller can observe.

    The call runs in a copy of the current context, detached from any open budget, inside a fresh
    budget made from ``budget`` (a budget open around ``outcome`` is neither
    charged nor made the parent), with every warning recorded and any
    exception caught.

    Parameters
    ----------
    call : callable
        ``call(frame)``, e.g. ``lambda df: df.dp.histogram("age", bins=edges, epsilon=1.0)``.
    frame : DataFrame (or any dataset the call takes)
        The dataset.
    budget : float, dict, callable or None
        The budget open around the call: a total epsilon; keyword arguments
        of :func:`pandas_dp.budget` (e.g. ``{"rho": 10**6}``); a
        zero-argument factory returning a fresh budget (called once); or
        ``None`` for no budget at all. Default: a pure budget of ``10**9``.

    Returns
    -------
    Outcome
        The outcome class (returned / raised), exception type, message,
        chained exceptions and attributes, the result's type and structure
        (index, shape, labels, levels, regions; not its numbers), the set of
        warnings, the budget charged (exact) and the ledger rows written.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from pandas_dp.testing import outcome
    >>> d = pd.DataFrame({"x": [1, 2, 2]})
    >>> call = lambda df: df.dp.histogram("x", bins=[0, 2, 4], epsilon=0.5, rng=np.random.default_rng(0))
    >>> outcome(call, d).describe()
    'returns a Histogram, charging 1/2 (= 0.5)'
    >>> outcome(call, d, budget=None).error_type
    'pandas_dp.errors.NoActiveBudgetError'
    """
    def body() -> Outcome:
        b = open_budget(budget, caller="outcome")
        if b is None:
            result, error, caught, _ = capture(lambda: call(frame))
            charged = None
        else:
            with b:
                result, error, caught, charged = capture(lambda: call(frame), lambda: b.spent_exact)
        made = error_outcome(error, caught, charged) if error is not None else result_outcome(result, caught, charged)
        if b is not None:
            made = dataclasses.replace(made, ledger=_ledger_rows(b))
        return made

    return run_detached(body)


class SameOutcomeFailure(AssertionError):
    """Raised by :func:`assert_same_outcome`; ``.outcomes`` holds the two :class:`Outcome` objects."""

    def __init__(self, message: str, outcomes: tuple[Outcome, Outcome]) -> None:
        super().__init__(message)
        self.outcomes = outcomes


def assert_same_outcome(call: Callable[[Any], Any], D: Any, D_prime: Any, *,
                        budget: BudgetSpec = TESTING_BUDGET) -> tuple[Outcome, Outcome]:
    """Assert that ``call`` looks the same to its caller on two neighbouring datasets.

    Runs ``call(D)`` and ``call(D_prime)`` with :func:`outcome` (each in a
    fresh context under its own fresh budget made from ``budget``) and fails
    when the outcomes differ in class (returned / raised), exception type,
    message, chained exceptions or attributes, result type, result structure
    (index, shape, labels, dtypes, levels, regions), the set of warnings, the
    budget charged or the ledger rows. The released numbers are not compared
    (they are noisy); test them with :func:`assert_dp`.

    Parameters
    ----------
    call : callable
        ``call(frame)``; pass ``rng=np.random.default_rng(seed)`` inside it
        when the call's structure could depend on its noise.
    D, D_prime : DataFrame or Neighbour
        The two datasets (a :class:`Neighbour` is named in the message).
    budget : float, dict, callable or None
        The budget open around each call (see :func:`outcome`); ``None``
        checks the calls made without any budget.

    Returns
    -------
    (Outcome, Outcome)
        The two (equal) outcomes.

    Raises
    ------
    SameOutcomeFailure
        An ``AssertionError`` describing both outcomes and each difference.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from pandas_dp.testing import assert_same_outcome, with_row
    >>> d = pd.DataFrame({"x": [1.0, 2.0, 2.0]})
    >>> call = lambda df: df.dp.histogram("x", bins=[0, 2, 4], epsilon=0.5, rng=np.random.default_rng(0))
    >>> a, b = assert_same_outcome(call, d, with_row(d, {"x": np.nan}))
    >>> a.kind, a == b
    ('returned', True)
    """
    d_frame, d_name = frame_and_name(D, "D")
    n_frame, n_name = frame_and_name(D_prime, "D'")
    first = outcome(call, d_frame, budget=budget)
    second = outcome(call, n_frame, budget=budget)
    diffs = first.differences(second)
    if diffs:
        raise SameOutcomeFailure(
            f"The call behaves differently on {d_name} and {n_name} (under {describe_spec(budget)}), so its "
            f"caller can tell the two datasets apart without looking at the noisy numbers:\n"
            f"  {d_name}: {first.describe(full=True)}\n  {n_name}: {second.describe(full=True)}\n"
            f"Differences ({d_name} vs {n_name}):\n" + "\n".join(f"  - {d}" for d in diffs),
            (first, second))
    return first, second
