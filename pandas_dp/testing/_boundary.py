"""Boundary events of the DP tester: what a run lets its caller observe besides the released numbers.

Each run has an :class:`~pandas_dp.testing.Outcome` (returned or raised, the
exception, the release's index and shape, the warnings, the charge). Under
the boundary rule these depend on the private rows only through the noise,
so ``{outcome of the run == o}`` is an output event like any other: chosen on
the selection runs, tested on the others with the same Clopper-Pearson
bounds and Bonferroni correction as the events on the released numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pandas_dp.testing._binomial import lower_bound, upper_bound
from pandas_dp.testing._events import selection_score
from pandas_dp.testing._observe import Outcome
from pandas_dp.testing._report import EventResult

__all__ = ["BoundaryEvent", "select_boundary_events", "check_boundary_events"]


@dataclass(frozen=True)
class BoundaryEvent:
    """``{the run's outcome == outcomes[code]}``, tested as ``P[A] <= e^eps P[B] + delta`` (``swapped``: B, A)."""

    code: int
    swapped: bool


def _counts(codes: np.ndarray, k: int) -> np.ndarray:
    return np.bincount(codes, minlength=k)


def select_boundary_events(codes_a: np.ndarray, codes_b: np.ndarray, k: int, *, epsilon: float, delta: float,
                           max_events: int) -> list[BoundaryEvent]:
    """The outcome events most suspicious on the selection runs, at most ``max_events`` per direction.

    Nothing is chosen when every selection run on both datasets had the
    same outcome (the usual case: then there is nothing to test).
    """
    pooled = np.union1d(np.unique(codes_a), np.unique(codes_b))
    if pooled.size <= 1:
        return []
    ca, cb = _counts(codes_a, k), _counts(codes_b, k)
    chosen: list[BoundaryEvent] = []
    for swapped in (False, True):
        num, den = (cb, ca) if swapped else (ca, cb)
        n_num, n_den = (len(codes_b), len(codes_a)) if swapped else (len(codes_a), len(codes_b))
        score = selection_score(num[pooled], n_num, den[pooled], n_den, epsilon=epsilon, delta=delta)
        order = np.argsort(-score, kind="stable")
        picked = [int(pooled[i]) for i in order if np.isfinite(score[i])][:max_events]
        chosen += [BoundaryEvent(c, swapped) for c in picked]
    return chosen


def _contrast(code: int, codes_b: np.ndarray, codes_a: np.ndarray, k: int) -> int:
    """The outcome to describe the event against: B's most common other outcome (else A's, else itself)."""
    for codes in (codes_b, codes_a):
        counts = np.bincount(codes, minlength=k)
        counts[code] = 0
        if counts.any():
            return int(np.argmax(counts))
    return code


def check_boundary_events(chosen: list[BoundaryEvent], outcomes: list[Outcome], codes: tuple[np.ndarray, np.ndarray],
                         first_test: int, *, eps: float, delta: float, level: float,
                         names: tuple[str, str]) -> list[EventResult]:
    """Clopper-Pearson test of each chosen outcome event on the runs from ``first_test`` on.

    When the event happened on every run of ``A`` and on no run of ``B``
    (selection and test runs alike) and the test refutes the claim, the
    outcome separated the datasets on every run: its implied epsilon is
    reported as infinite (``EventResult.epsilon_lower_bound = inf``), the
    finite Clopper-Pearson bounds stay in ``p_a_low`` and ``p_b_high``.
    """
    out: list[EventResult] = []
    k = len(outcomes)
    for event in chosen:
        (ia, ib) = (1, 0) if event.swapped else (0, 1)
        all_a, all_b = codes[ia], codes[ib]
        test_a, test_b = all_a[first_test:], all_b[first_test:]
        ca = int(_counts(test_a, k)[event.code])
        cb = int(_counts(test_b, k)[event.code])
        na, nb = len(test_a), len(test_b)
        p_lo = float(lower_bound(np.array([ca]), na, level)[0])
        q_hi = float(upper_bound(np.array([cb]), nb, level)[0])
        top = p_lo - delta
        bound = math.log(top / q_hi) if top > 0 and q_hi > 0 else (math.inf if top > 0 else -math.inf)
        violation = top > math.exp(eps) * q_hi
        target = outcomes[event.code]
        contrast = _contrast(event.code, all_b, all_a, k)
        other = outcomes[contrast]
        other_count = int(np.count_nonzero(all_b == contrast))
        what, else_what = target.describe_against(other), other.describe_against(target)
        seen_a = int(np.count_nonzero(all_a == event.code))
        seen_b = int(np.count_nonzero(all_b == event.code))
        name_a, name_b = names[ia], names[ib]
        if seen_a == len(all_a) and seen_b == 0 and violation:
            bound = math.inf
            detail = (f"deterministic: {name_a} {what} on every run ({seen_a}/{len(all_a)}), {name_b} on none; "
                      f"{name_b} {else_what} on {other_count}/{len(all_b)} runs")
        else:
            detail = (f"{name_a} {what} on {seen_a}/{len(all_a)} runs, {name_b} on {seen_b}/{len(all_b)}; "
                      f"{name_b} {else_what} on {other_count}/{len(all_b)} runs")
        out.append(EventResult(event=f"the call {what}", direction=f"A={name_a}, B={name_b}",
                               count_a=ca, trials_a=na, count_b=cb, trials_b=nb, p_a_low=p_lo, p_b_high=q_hi,
                               epsilon_lower_bound=bound, violation=violation, kind="boundary", detail=detail))
    return out
