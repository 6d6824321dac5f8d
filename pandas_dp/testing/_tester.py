"""``assert_dp``: a statistical test of an (epsilon, delta)-DP claim on one neighbouring pair."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from pandas_dp._utils.rational import to_fraction
from pandas_dp.errors import ParameterError
from pandas_dp.testing._binomial import lower_bound, upper_bound
from pandas_dp.testing._boundary import check_boundary_events, select_boundary_events
from pandas_dp.testing._budgets import TESTING_BUDGET, BudgetSpec
from pandas_dp.testing._events import Event, Statistic, count_in, select_events, sorted_stats, statistics
from pandas_dp.testing._neighbours import frame_and_name
from pandas_dp.testing._outputs import OutcomeTable, RunResult, run_mechanism
from pandas_dp.testing._report import DPTestFailure, DPTestReport, EventResult

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


EventPredicate = Callable[[np.ndarray], np.ndarray]


#: Outcome events kept per direction (they are added only when the runs' outcomes differ).
BOUNDARY_EVENTS = 4
#: Distinct outcomes listed one by one in the report.
MAX_OUTCOMES_SHOWN = 20


def assert_dp(mechanism: Callable[..., Any], dataset: Any, neighbour: Any, *, epsilon: float,
              delta: float = 0.0, trials: int = 10_000, events: int | Mapping[str, EventPredicate] = 10,
              confidence: float = 0.999, rng: int | np.random.Generator | None = None, vectorized: bool = False,
              statistic: Callable[[Any], Any] | None = None, selection: float = 0.3,
              budget: BudgetSpec = TESTING_BUDGET, allow_errors: bool = False, raises: bool = True,
              slack: float | None = None, budget_epsilon: float | Fraction | None = None) -> DPTestReport:
    """Test statistically that ``mechanism`` is ``(epsilon, delta)``-DP on a pair of neighbouring datasets.

    Runs ``mechanism`` ``trials`` times on each dataset, each run captured
    (its exception, warnings, output structure and charge are recorded,
    never raised), chooses output events on a first share of the runs and
    tests them on the rest: the test fails when, at the given confidence,
    some event ``S`` has ``P[M(A) in S] > e^epsilon P[M(B) in S] + delta``
    for ``(A, B) = (D, D')`` or ``(D', D)``. Events are sets of released
    numbers and, under the boundary rule, sets of *outcomes*: a run that
    raises, warns, or returns another index or shape on one dataset only is
    a distinguishing event, reported with its implied epsilon (infinite
    when it separates the datasets on every run).

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
    delta : float
        Additive term of the claim, in ``[0, 1)`` (0: pure epsilon-DP). For a
        zCDP release, the ``(epsilon, delta)`` its rho converts to.
    trials : int
        Runs per dataset (selection and test runs together).
    events : int or dict of callables
        An int: events on the released numbers kept per direction after
        selection (the Bonferroni factor is twice this). A dict ``{name:
        predicate}``: your own events, fixed in advance, tested in both
        directions on all runs (no selection); ``predicate(x)`` maps the
        ``(runs, k)`` matrix of release vectors to a boolean vector, e.g.
        ``lambda x: x[:, 3] >= 2``.
    confidence : float
        Probability that a mechanism satisfying the claim passes (type I error
        at most ``1 - confidence``, whatever the mechanism).
    rng : int or numpy.random.Generator, optional
        Randomness passed to the mechanism (seed it for a reproducible test).
    vectorized : bool
        Use the batched signature ``mechanism(df, rng, n)``.
    statistic : callable, optional
        Maps a release to a fixed-length numeric vector (e.g.
        ``lambda r: r.at("national")``), when the default conversion does not apply.
    selection : float
        Share of the runs used to choose the events.
    budget : float, dict, callable or None
        The testing budget opened around each dataset's runs, in a fresh
        context: a total epsilon, keyword arguments of
        :func:`pandas_dp.budget` (``{"rho": 10**6}`` for ``rho=`` releases), a
        factory returning a fresh budget, or ``None`` (no budget). Default: a
        pure budget of ``10**9``.
    allow_errors : bool
        Accept runs that raise as outputs of the mechanism. By default a
        mechanism that raises fails the test (see Notes).
    raises : bool
        Raise :class:`DPTestFailure` on failure (default); otherwise return the report.
    slack : float, optional
        Former name of ``delta`` (pass one of the two).
    budget_epsilon : float, optional
        Former way to give ``budget`` as a total epsilon.

    Returns
    -------
    DPTestReport

    Raises
    ------
    DPTestFailure
        When the data refute the claim or the mechanism raised (an
        ``AssertionError``; ``.report`` holds the details).
    ParameterError
        When an argument of ``assert_dp`` itself is invalid.
    TypeError
        When no release of either dataset can be turned into numbers (pass ``statistic=``).

    Notes
    -----
    *Events on the numbers.* Every output statistic is linear, ``s = w . x``:
    each output cell (the cells whose means differ most between ``D`` and
    ``D'`` when there are many), the total, and the directions that add up
    the evidence of all shifted cells (inverse-variance ``w_j = d_j / v_j``
    and ``sign(d_j)``). Events are tails ``{s >= c}``, ``{s <= c}``, buckets
    between quantiles and the most frequent single values. With
    ``delta = 0`` the ``events`` events per direction with the largest
    selection-run lower bound on ``log(P[A]/P[B])`` are tested on fresh runs;
    with ``delta > 0`` those with the largest standardized margin
    ``(p - e^eps q - delta) / (sd_p + e^eps sd_q)``, which favours events of
    moderate probability, where the additive ``delta`` matters little.
    Runs whose release has another layout (length, labels) than the most
    common one, that raised, or whose ``statistic`` failed belong to none of
    these events.

    *Events on the outcomes (boundary rule).* Each run's
    :class:`~pandas_dp.testing.Outcome` (returned or raised, exception type,
    message, output index, shape and labels, warnings, budget charged) is
    recorded. When the runs' outcomes are not all the same, up to 4 events
    ``{outcome == o}`` per direction are chosen on the selection runs and
    tested with the others. One that happened on every run of ``A``, never on
    ``B`` and refutes the claim shows an infinite implied epsilon, with a
    description such as ``D raises SchemaError('...') on every run, D'
    returns a Histogram``.

    *Test.* For each tested event, one-sided Clopper-Pearson bounds
    ``p_lo`` (of ``P[M(A) in S]``) and ``q_hi`` (of ``P[M(B) in S]``), each at
    level ``alpha / (2 m)`` with ``alpha = 1 - confidence`` and ``m`` the number
    of tested events (Bonferroni). The claim is refuted when
    ``p_lo - delta > e^epsilon q_hi``; ``log((p_lo - delta) / q_hi)`` is a
    lower bound on the true epsilon at the given confidence. Events chosen on
    separate runs keep the correction valid, so a mechanism that satisfies
    the claim fails with probability at most ``alpha``.

    *Errors.* A mechanism that raised on any run fails the test with
    ``report.mechanism_error`` saying so (e.g. "the mechanism raised on
    every run of both datasets: NoActiveBudgetError(...)"): the noise of a
    release that never happened cannot be tested, and an error usually means
    the test is set up wrong. With ``allow_errors=True`` such runs are
    outputs like any other (compared through the outcome events) and the
    numbers of the runs that returned are tested. Errors of the tester's own
    arguments raise ``ParameterError``, before any run.

    *Budget.* The runs are made inside a fresh ``pandas_dp`` budget, opened
    in a new context: a budget active around the call is neither charged nor
    made the parent. The report records how much each run charged; a run
    that charged differently on the two datasets shows as an outcome event.

    References
    ----------
    Ding, Wang, Wang, Zhang, Kifer (2018), "Detecting violations of
    differential privacy" (events chosen on separate runs, then tested);
    Google differential-privacy library, stochastic tester; Clopper and
    Pearson (1934) for the exact binomial bounds.

    Examples
    --------
    >>> import numpy as np, pandas as pd, pandas_dp as pdp
    >>> from pandas_dp.testing import assert_dp
    >>> d = pd.DataFrame({"x": [1, 2, 2]})
    >>> mech = lambda df, rng: df.dp.histogram("x", bins=[0, 1, 2, 3], epsilon=1.0, rng=rng)
    >>> report = assert_dp(mech, d, d.iloc[:2], epsilon=1.0, trials=200, rng=0)
    >>> report.passed
    True
    """
    cfg = _settings(epsilon=epsilon, delta=delta, trials=trials, events=events, confidence=confidence, rng=rng,
                    selection=selection, budget=budget, allow_errors=allow_errors, slack=slack,
                    budget_epsilon=budget_epsilon)
    d_frame, d_name = frame_and_name(dataset, "D")
    n_frame, n_name = frame_and_name(neighbour, "D'")
    names = (d_name, n_name)

    table = OutcomeTable()
    run_a = run_mechanism(mechanism, d_frame, cfg.trials, rng=cfg.gen, vectorized=vectorized, statistic=statistic,
                          budget=cfg.budget, table=table)
    run_b = run_mechanism(mechanism, n_frame, cfg.trials, rng=cfg.gen, vectorized=vectorized, statistic=statistic,
                          budget=cfg.budget, table=table)
    outcomes = table.by_code()
    results, n_sel = _test_runs(cfg, run_a, run_b, table, outcomes, names)
    return _report(cfg, run_a, run_b, outcomes, results, n_sel, names, allow_errors=allow_errors, raises=raises)


@dataclass(frozen=True)
class _Settings:
    """The checked public arguments of :func:`assert_dp`."""

    eps: float
    trials: int
    user_events: dict[str, EventPredicate] | None
    n_events: int
    confidence: float
    delta: float
    share: float
    budget: BudgetSpec
    gen: np.random.Generator


def _settings(*, epsilon: Any, delta: Any, trials: Any, events: Any, confidence: Any, rng: Any, selection: Any,
              budget: BudgetSpec, allow_errors: Any, slack: Any, budget_epsilon: Any) -> _Settings:
    """Check the arguments of :func:`assert_dp` (loudly, before any run) in a fixed order."""
    eps = float(to_fraction(epsilon, name="epsilon"))
    trials = _check_count(trials, "trials", 20)
    user_events = _check_user_events(events)
    n_events = _check_count(events, "events", 1) if user_events is None else len(user_events)
    confidence = _check_probability(confidence, "confidence")
    if slack is not None and delta:
        raise ParameterError("assert_dp got both 'delta' and its former name 'slack'; pass delta only.")
    delta = _check_probability(slack if slack is not None else delta, "delta" if slack is None else "slack",
                               low_open=False)
    share = _check_probability(selection, "selection")
    if budget_epsilon is not None:
        if budget is not TESTING_BUDGET:
            raise ParameterError("assert_dp got both 'budget' and 'budget_epsilon'; pass budget only.")
        budget = to_fraction(budget_epsilon, name="budget_epsilon")
    if not isinstance(allow_errors, bool):
        raise ParameterError(f"The 'allow_errors' parameter of assert_dp must be True or False. Got {allow_errors!r}.")
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    return _Settings(eps=eps, trials=trials, user_events=user_events, n_events=n_events, confidence=confidence,
                     delta=delta, share=share, budget=budget, gen=gen)


def _test_runs(cfg: _Settings, run_a: RunResult, run_b: RunResult, table: OutcomeTable, outcomes: list,
               names: tuple[str, str]) -> tuple[list[EventResult], int]:
    """Choose the events on the first share of the runs, then test them all on the rest (Bonferroni).

    Returns the event results, most violated first, and the number of selection runs.
    """
    trials, user_events, eps, delta = cfg.trials, cfg.user_events, cfg.eps, cfg.delta
    layout = _main_layout(run_a, run_b)
    n_sel = 0 if user_events is not None else max(10, int(round(cfg.share * trials)))
    n_sel_outcomes = max(10, int(round(cfg.share * trials)))

    # choose every event first: the Bonferroni level counts them all
    numeric: list[tuple[Event, bool]] = []
    stats: list[Statistic] = []
    if layout is not None and user_events is None:
        a_sel, b_sel = run_a.rows(layout, 0, n_sel), run_b.rows(layout, 0, n_sel)
        if len(a_sel) and len(b_sel):
            stats = statistics(a_sel, b_sel, table.labels(layout))
            numeric = select_events(a_sel, b_sel, stats, epsilon=eps, slack=delta, max_events=cfg.n_events,
                                    trials_a=n_sel, trials_b=n_sel)
    boundary = select_boundary_events(run_a.codes[:n_sel_outcomes], run_b.codes[:n_sel_outcomes], len(outcomes),
                                      epsilon=eps, delta=delta, max_events=BOUNDARY_EVENTS)
    n_numeric = 2 * len(user_events) if user_events is not None and layout is not None else len(numeric)
    tested = n_numeric + len(boundary)
    level = (1.0 - cfg.confidence) / (2 * max(tested, 1))

    results: list[EventResult] = []
    if user_events is not None and layout is not None:
        results += _test_user_events(user_events, run_a.rows(layout, 0, trials), run_b.rows(layout, 0, trials),
                                     trials, eps=eps, delta=delta, level=level, names=names)
    elif numeric and layout is not None:
        results += _test_events(numeric, stats, run_a.rows(layout, n_sel, trials), run_b.rows(layout, n_sel, trials),
                                trials - n_sel, eps=eps, delta=delta, level=level, names=names)
    results += check_boundary_events(boundary, outcomes, (run_a.codes, run_b.codes), n_sel_outcomes, eps=eps,
                                     delta=delta, level=level, names=names)
    unconverted = run_a.conversion_error or run_b.conversion_error
    if layout is None and unconverted is not None and not any(r.violation for r in results):
        raise unconverted  # releases were made but none could be turned into numbers: statistic= is needed
    results.sort(key=lambda r: -r.epsilon_lower_bound)
    return results, n_sel


def _report(cfg: _Settings, run_a: RunResult, run_b: RunResult, outcomes: list, results: list[EventResult],
            n_sel: int, names: tuple[str, str], *, allow_errors: bool, raises: bool) -> DPTestReport:
    """The report of :func:`assert_dp`; :class:`DPTestFailure` when it did not pass and ``raises``."""
    n_name = names[1]
    bound = results[0].epsilon_lower_bound if results else -math.inf
    charged = (run_a.charged + run_b.charged) / (2 * cfg.trials)
    error = _mechanism_error(outcomes, run_a, run_b, names, allow_errors)
    report = DPTestReport(
        passed=not any(r.violation for r in results) and not error, epsilon=cfg.eps, confidence=cfg.confidence,
        delta=cfg.delta, trials=cfg.trials, selection_trials=n_sel, epsilon_lower_bound=bound,
        events=tuple(results), charged_per_run=float(charged), seconds=run_a.seconds + run_b.seconds,
        neighbour=n_name if n_name != "D'" else "", outcomes=_outcome_counts(outcomes, run_a, run_b),
        mechanism_error=error, allow_errors=allow_errors)
    if raises and not report.passed:
        raise DPTestFailure(report)
    return report


def _main_layout(run_a: RunResult, run_b: RunResult) -> int | None:
    """The release layout (length, labels) of most runs on both datasets; ``None`` when no run has a vector."""
    k = int(max(run_a.layout.max(initial=-1), run_b.layout.max(initial=-1))) + 1
    if k == 0:
        return None
    counts = np.bincount(run_a.layout[run_a.layout >= 0], minlength=k) + \
        np.bincount(run_b.layout[run_b.layout >= 0], minlength=k)
    return int(np.argmax(counts))


def _outcome_counts(outcomes: list, run_a: RunResult, run_b: RunResult) -> tuple[tuple[str, int, int], ...]:
    """Distinct outcomes with their runs on each dataset, most frequent first (the rest summed in one row)."""
    ca = np.bincount(run_a.codes, minlength=len(outcomes))
    cb = np.bincount(run_b.codes, minlength=len(outcomes))
    order = np.argsort(-(ca + cb), kind="stable")
    shown, rest = order[:MAX_OUTCOMES_SHOWN], order[MAX_OUTCOMES_SHOWN:]
    rows = [(outcomes[i].describe(full=True), int(ca[i]), int(cb[i])) for i in shown]
    if rest.size:
        rows.append((f"{rest.size} other outcomes", int(ca[rest].sum()), int(cb[rest].sum())))
    return tuple(rows)


def _mechanism_error(outcomes: list, run_a: RunResult, run_b: RunResult, names: tuple[str, str],
                     allow_errors: bool) -> str:
    """The failure text when the mechanism raised and errors are not allowed ("" otherwise)."""
    if allow_errors:
        return ""
    raised = np.array([o.raised for o in outcomes], dtype=bool)
    ra, rb = raised[run_a.codes], raised[run_b.codes]
    if not ra.any() and not rb.any():
        return ""
    codes = np.concatenate([run_a.codes[ra], run_b.codes[rb]])
    first = outcomes[int(np.bincount(codes).argmax())]
    if ra.all() and rb.all() and len(np.unique(codes)) == 1:
        return (f"The mechanism raised on every run of both datasets: {first.describe()}; there is no release to "
                f"test. Fix the call (budget, arguments), or pass allow_errors=True if raising is the behaviour "
                f"under test.")
    return (f"The mechanism raised on {int(ra.sum())}/{run_a.n} runs of {names[0]} and {int(rb.sum())}/{run_b.n} "
            f"of {names[1]} (most often: {first.describe()}). Pass allow_errors=True to test runs that raise as "
            f"outputs of the mechanism.")


def _check_user_events(events: Any) -> dict[str, EventPredicate] | None:
    if not isinstance(events, Mapping):
        return None
    if not events or not all(callable(f) for f in events.values()):
        raise ParameterError("The 'events' parameter of assert_dp must be an int or a non-empty dict "
                             "{name: predicate} of callables mapping the (runs, k) outputs to booleans. "
                             f"Got {events!r}.")
    return {str(k): v for k, v in events.items()}


def _bounds_result(name: str, direction: str, ca: int, na: int, cb: int, nb: int, level: float, *,
                   eps: float, delta: float) -> EventResult:
    p_lo = float(lower_bound(np.array([ca]), na, level)[0])
    q_hi = float(upper_bound(np.array([cb]), nb, level)[0])
    top = p_lo - delta
    bound = math.log(top / q_hi) if top > 0 and q_hi > 0 else (math.inf if top > 0 else -math.inf)
    return EventResult(event=name, direction=direction, count_a=ca, trials_a=na, count_b=cb, trials_b=nb,
                       p_a_low=p_lo, p_b_high=q_hi, epsilon_lower_bound=bound,
                       violation=top > math.exp(eps) * q_hi)


def _test_user_events(events: Mapping[str, EventPredicate], a: np.ndarray, b: np.ndarray, trials: int, *,
                      eps: float, delta: float, level: float, names: tuple[str, str]) -> list[EventResult]:
    """Fixed events: both directions on all runs (``a``, ``b``: the vectors of the runs that have one)."""
    out = []
    for name, predicate in events.items():
        ca = int(np.count_nonzero(np.asarray(predicate(a), dtype=bool))) if len(a) else 0
        cb = int(np.count_nonzero(np.asarray(predicate(b), dtype=bool))) if len(b) else 0
        out.append(_bounds_result(name, f"A={names[0]}, B={names[1]}", ca, trials, cb, trials, level,
                                  eps=eps, delta=delta))
        out.append(_bounds_result(name, f"A={names[1]}, B={names[0]}", cb, trials, ca, trials, level,
                                  eps=eps, delta=delta))
    return out


def _test_events(chosen: list[tuple[Event, bool]], stats: list[Statistic], a: np.ndarray, b: np.ndarray,
                 trials: int, *, eps: float, delta: float, level: float, names: tuple[str, str]
                 ) -> list[EventResult]:
    """Clopper-Pearson bounds of the chosen events on the ``trials`` test runs (``a``, ``b``: their vectors)."""
    sa, sb = sorted_stats(a, stats), sorted_stats(b, stats)
    out: list[EventResult] = []
    for event, swapped in chosen:
        num, den = (sb, sa) if swapped else (sa, sb)
        ca = int(count_in(num[event.statistic], [event])[0])
        cb = int(count_in(den[event.statistic], [event])[0])
        first, second = (names[1], names[0]) if swapped else names
        out.append(_bounds_result(event.describe(stats), f"A={first}, B={second}", ca, trials, cb, trials, level,
                                  eps=eps, delta=delta))
    return out
