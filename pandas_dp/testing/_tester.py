"""``assert_dp``: a statistical test of an epsilon-DP claim on one neighbouring pair."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from .._rational import to_fraction
from ..errors import ParameterError
from ._binomial import lower_bound, upper_bound
from ._events import Event, Statistic, count_in, select_events, sorted_stats, statistics
from ._outputs import DEFAULT_TEST_BUDGET, run_mechanism
from ._report import DPTestFailure, DPTestReport, EventResult

__all__ = ["assert_dp"]


def _check_probability(value: Any, name: str, *, low_open: bool = True) -> float:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(float(value))
    if not ok or not (0 < float(value) < 1 if low_open else 0 <= float(value) < 1):
        raise ParameterError(f"The '{name}' parameter of assert_dp must be a number in "
                             f"{'(0, 1)' if low_open else '[0, 1)'}. Got {value!r}.")
    return float(value)


def _check_count(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < minimum:
        raise ParameterError(f"The '{name}' parameter of assert_dp must be an integer >= {minimum}. "
                             f"Got {value!r}.")
    return int(value)


def _frame_and_name(obj: Any, default: str) -> tuple[Any, str]:
    frame = getattr(obj, "frame", obj)
    return frame, str(getattr(obj, "name", default))


EventPredicate = Callable[[np.ndarray], np.ndarray]


def assert_dp(mechanism: Callable[..., Any], dataset: Any, neighbour: Any, *, epsilon: float,
              trials: int = 10_000, events: int | Mapping[str, EventPredicate] = 10,
              confidence: float = 0.999, slack: float = 0.0,
              rng: int | np.random.Generator | None = None, vectorized: bool = False,
              statistic: Callable[[Any], Any] | None = None, selection: float = 0.3,
              budget_epsilon: float | Fraction | None = None, raises: bool = True) -> DPTestReport:
    """Test statistically that ``mechanism`` is ``epsilon``-DP on a pair of neighbouring datasets.

    Runs ``mechanism`` ``trials`` times on each dataset, chooses output events
    on a first share of the runs and tests them on the rest: the test fails
    when, at the given confidence, some event ``S`` has
    ``P[M(A) in S] > e^epsilon P[M(B) in S] + slack`` for ``(A, B) = (D, D')``
    or ``(D', D)``.

    Parameters
    ----------
    mechanism : callable
        ``mechanism(df, rng) -> release`` (a ``Histogram``-like result with
        ``counts``, a Series, an array...). With ``vectorized=True``:
        ``mechanism(df, rng, n)`` returns ``n`` releases stacked as an
        ``(n, k)`` array (or a sequence of releases), so that 10^5 runs of a
        small domain take seconds.
    dataset, neighbour : DataFrame or Neighbour
        The two datasets (``D`` and ``D'``); a :class:`Neighbour` from
        :func:`neighbours` is accepted and its name shown in the report.
    epsilon : float
        The claim tested.
    trials : int
        Runs per dataset (selection and test runs together).
    events : int or dict of callables
        An int: events kept per direction after selection (the Bonferroni
        factor is twice this). A dict ``{name: predicate}``: your own events,
        fixed in advance, tested in both directions on all runs (no
        selection); ``predicate(x)`` maps the ``(runs, k)`` matrix of release
        vectors to a boolean vector, e.g. ``lambda x: x[:, 3] >= 2``.
    confidence : float
        Probability that a mechanism satisfying the claim passes (type I error
        at most ``1 - confidence``, whatever the mechanism).
    slack : float
        Additive term ``delta`` of the tested inequality (0 for pure DP).
    rng : int or numpy.random.Generator, optional
        Randomness passed to the mechanism (seed it for a reproducible test).
    vectorized : bool
        Use the batched signature ``mechanism(df, rng, n)``.
    statistic : callable, optional
        Maps a release to a fixed-length numeric vector (e.g.
        ``lambda r: r.at("national")``), when the default conversion does not apply.
    selection : float
        Share of the runs used to choose the events.
    budget_epsilon : float, optional
        Total of the testing budget opened around the runs (default ``10**9``).
    raises : bool
        Raise :class:`DPTestFailure` on failure (default); otherwise return the report.

    Returns
    -------
    DPTestReport

    Raises
    ------
    DPTestFailure
        When the data refute the claim (an ``AssertionError``; ``.report`` holds the details).

    Notes
    -----
    *Events.* Every output statistic is linear, ``s = w . x``: each output
    cell (the cells whose means differ most between ``D`` and ``D'`` when
    there are many), the total, and the directions that add up the evidence
    of all shifted cells (inverse-variance ``w_j = d_j / v_j`` and
    ``sign(d_j)``). Events are tails ``{s >= c}``, ``{s <= c}``, buckets
    between quantiles and the most frequent single values. The ``events``
    events per direction with the largest selection-run lower bound on
    ``log(P[A]/P[B])`` are tested on fresh runs.

    *Test.* For each tested event, one-sided Clopper-Pearson bounds
    ``p_lo`` (of ``P[M(A) in S]``) and ``q_hi`` (of ``P[M(B) in S]``), each at
    level ``alpha / (2 m)`` with ``alpha = 1 - confidence`` and ``m`` the number
    of tested events (Bonferroni). The claim is refuted when
    ``p_lo - slack > e^epsilon q_hi``; ``log((p_lo - slack) / q_hi)`` is a lower
    bound on the true epsilon at the given confidence. Events chosen on
    separate runs keep the correction valid, so a mechanism that satisfies the
    claim fails with probability at most ``alpha``.

    *Budget.* The runs are made inside a fresh ``pandas_dp`` budget of
    ``budget_epsilon``, opened in a new context: a budget active around the
    call is neither charged nor made the parent. The report records how much
    each run charged.

    References
    ----------
    Ding, Wang, Wang, Zhang, Kifer (2018), "Detecting violations of
    differential privacy" (events chosen on separate runs, then tested);
    Google differential-privacy library, stochastic tester.

    Examples
    --------
    >>> import numpy as np, pandas as pd, pandas_dp as pdp
    >>> from pandas_dp.testing import assert_dp
    >>> d = pd.DataFrame({"x": [1, 2, 2]})
    >>> mech = lambda df, rng: df.dp.histogram("x", bins=[0, 1, 2, 3], epsilon=1.0, rng=rng)
    >>> report = assert_dp(mech, d, d.iloc[:2], epsilon=1.0, trials=500, rng=0)
    >>> report.passed
    True
    """
    eps = float(to_fraction(epsilon, name="epsilon"))
    trials = _check_count(trials, "trials", 20)
    user_events = _check_user_events(events)
    n_events = _check_count(events, "events", 1) if user_events is None else len(user_events)
    confidence = _check_probability(confidence, "confidence")
    slack = _check_probability(slack, "slack", low_open=False)
    share = _check_probability(selection, "selection")
    total = DEFAULT_TEST_BUDGET if budget_epsilon is None else to_fraction(budget_epsilon, name="budget_epsilon")
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    d_frame, d_name = _frame_and_name(dataset, "D")
    n_frame, n_name = _frame_and_name(neighbour, "D'")

    run_a = run_mechanism(mechanism, d_frame, trials, rng=gen, vectorized=vectorized, statistic=statistic,
                          budget_epsilon=total)
    run_b = run_mechanism(mechanism, n_frame, trials, rng=gen, vectorized=vectorized, statistic=statistic,
                          budget_epsilon=total)
    if run_a.values.shape[1] != run_b.values.shape[1]:
        raise ValueError(f"The releases on the two datasets have different lengths ({run_a.values.shape[1]} "
                         f"and {run_b.values.shape[1]}); pass statistic= mapping both to the same public domain.")
    if user_events is not None:
        n_sel = 0
        results = _test_user_events(user_events, run_a.values, run_b.values, eps=eps, slack=slack,
                                    alpha=1.0 - confidence, names=(d_name, n_name))
    else:
        n_sel = max(10, int(round(share * trials)))
        a_sel, a_test = run_a.values[:n_sel], run_a.values[n_sel:]
        b_sel, b_test = run_b.values[:n_sel], run_b.values[n_sel:]
        stats = statistics(a_sel, b_sel, run_a.labels)
        chosen = select_events(a_sel, b_sel, stats, epsilon=eps, slack=slack, max_events=n_events)
        results = _test_events(chosen, stats, a_test, b_test, eps=eps, slack=slack, alpha=1.0 - confidence,
                               names=(d_name, n_name))
    results.sort(key=lambda r: -r.epsilon_lower_bound)
    bound = results[0].epsilon_lower_bound if results else -math.inf
    charged = (run_a.charged + run_b.charged) / (2 * trials)
    report = DPTestReport(
        passed=not any(r.violation for r in results), epsilon=eps, confidence=confidence, slack=slack,
        trials=trials, selection_trials=n_sel, epsilon_lower_bound=bound, events=tuple(results),
        charged_per_run=float(charged), seconds=run_a.seconds + run_b.seconds,
        neighbour=n_name if n_name != "D'" else "")
    if raises and not report.passed:
        raise DPTestFailure(report)
    return report


def _check_user_events(events: Any) -> dict[str, EventPredicate] | None:
    if not isinstance(events, Mapping):
        return None
    if not events or not all(callable(f) for f in events.values()):
        raise ParameterError("The 'events' parameter of assert_dp must be an int or a non-empty dict "
                             "{name: predicate} of callables mapping the (runs, k) outputs to booleans. "
                             f"Got {events!r}.")
    return {str(k): v for k, v in events.items()}


def _bounds_result(name: str, direction: str, ca: int, na: int, cb: int, nb: int, level: float, *,
                   eps: float, slack: float) -> EventResult:
    p_lo = float(lower_bound(np.array([ca]), na, level)[0])
    q_hi = float(upper_bound(np.array([cb]), nb, level)[0])
    top = p_lo - slack
    bound = math.log(top / q_hi) if top > 0 and q_hi > 0 else (math.inf if top > 0 else -math.inf)
    return EventResult(event=name, direction=direction, count_a=ca, trials_a=na, count_b=cb, trials_b=nb,
                       p_a_low=p_lo, p_b_high=q_hi, epsilon_lower_bound=bound,
                       violation=top > math.exp(eps) * q_hi)


def _test_user_events(events: Mapping[str, EventPredicate], a: np.ndarray, b: np.ndarray, *, eps: float,
                      slack: float, alpha: float, names: tuple[str, str]) -> list[EventResult]:
    """Fixed events: both directions on all runs, Bonferroni over ``2 * len(events)`` tests."""
    level = alpha / (2 * 2 * len(events))
    out = []
    for name, predicate in events.items():
        ca = int(np.count_nonzero(np.asarray(predicate(a), dtype=bool)))
        cb = int(np.count_nonzero(np.asarray(predicate(b), dtype=bool)))
        out.append(_bounds_result(name, f"A={names[0]}, B={names[1]}", ca, len(a), cb, len(b), level,
                                  eps=eps, slack=slack))
        out.append(_bounds_result(name, f"A={names[1]}, B={names[0]}", cb, len(b), ca, len(a), level,
                                  eps=eps, slack=slack))
    return out


def _test_events(chosen: list[tuple[Event, bool]], stats: list[Statistic], a: np.ndarray, b: np.ndarray,
                 *, eps: float, slack: float, alpha: float, names: tuple[str, str]) -> list[EventResult]:
    """Clopper-Pearson bounds with a Bonferroni correction over the chosen events, on the test runs."""
    if not chosen:
        return []
    level = alpha / (2 * len(chosen))
    sa, sb = sorted_stats(a, stats), sorted_stats(b, stats)
    out: list[EventResult] = []
    for event, swapped in chosen:
        num, den = (sb, sa) if swapped else (sa, sb)
        ca = int(count_in(num[event.statistic], [event])[0])
        cb = int(count_in(den[event.statistic], [event])[0])
        na, nb = num[event.statistic].size, den[event.statistic].size
        first, second = (names[1], names[0]) if swapped else names
        out.append(_bounds_result(event.describe(stats), f"A={first}, B={second}", ca, na, cb, nb, level,
                                  eps=eps, slack=slack))
    return out
