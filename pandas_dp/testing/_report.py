"""Result types of the DP tester: one row per tested event, and the whole report."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

__all__ = ["DPTestFailure", "DPTestReport", "EventResult"]


@dataclass(frozen=True)
class EventResult:
    """One tested event ``S``: ``P[M(A) in S] <= e^eps P[M(B) in S] + slack`` with ``(A, B)``
    either ``(D, D')`` or ``(D', D)``.

    ``p_a_low`` and ``p_b_high`` are Clopper-Pearson bounds at the
    Bonferroni-corrected level; ``epsilon_lower_bound`` is
    ``log((p_a_low - delta) / p_b_high)``: with the report's confidence, the
    mechanism's true epsilon is at least this (``-inf`` when undefined).

    ``kind`` is ``"output"`` for an event on the released numbers and
    ``"boundary"`` for an event on what else the caller observes (the
    outcome class, exception, index and shape, warnings, charge; see
    :class:`~pandas_dp.testing.Outcome`). A boundary event that happened on
    every run of ``A`` and never on ``B`` and refutes the claim shows an
    infinite ``epsilon_lower_bound``: the outcome, not the noise, told the
    datasets apart. ``detail`` says in words what each dataset's runs showed.
    """

    event: str
    direction: str
    count_a: int
    trials_a: int
    count_b: int
    trials_b: int
    p_a_low: float
    p_b_high: float
    epsilon_lower_bound: float
    violation: bool
    kind: str = "output"
    detail: str = ""

    @property
    def p_a(self) -> float:
        """Empirical ``P[M(A) in S]``."""
        return self.count_a / self.trials_a if self.trials_a else math.nan

    @property
    def p_b(self) -> float:
        """Empirical ``P[M(B) in S]``."""
        return self.count_b / self.trials_b if self.trials_b else math.nan

    def __str__(self) -> str:
        text = (f"{self.event}  [{self.direction}]\n"
                f"    P[M(A) in S] = {self.p_a:.5f} ({self.count_a}/{self.trials_a}), lower bound {self.p_a_low:.5f}\n"
                f"    P[M(B) in S] = {self.p_b:.5f} ({self.count_b}/{self.trials_b}), upper bound {self.p_b_high:.5f}\n"
                f"    implied epsilon >= {self.epsilon_lower_bound:.4f}")
        return text + (f"\n    ({self.detail})" if self.detail else "")


@dataclass(frozen=True)
class DPTestReport:
    """Outcome of :func:`~pandas_dp.testing.assert_dp`.

    Attributes
    ----------
    passed : bool
        No event showed, at the given confidence, a probability above
        ``e^epsilon`` times the other's plus ``delta``, and the mechanism did
        not raise (unless ``allow_errors``).
    epsilon, confidence, delta : float
        The claim tested (``delta = 0``: pure epsilon-DP) and the test's confidence.
    trials : int
        Runs per dataset (selection plus test runs).
    selection_trials : int
        Runs per dataset used only to choose the events (kept apart so the
        Bonferroni correction over the tested events is valid).
    epsilon_lower_bound : float
        Largest implied epsilon lower bound over the tested events (``inf``
        for a deterministic boundary leak).
    events : tuple of EventResult
        Every tested event, most suspicious first.
    charged_per_run : float
        Budget the mechanism charged per run to the testing budget (0 if it
        charged nothing, e.g. an algorithm-level mechanism).
    seconds : float
        Time spent running the mechanism.
    neighbour : str
        Name of the neighbouring pair.
    outcomes : tuple of (str, int, int)
        Every distinct outcome of a run (see :class:`~pandas_dp.testing.Outcome`),
        with its number of runs on ``D`` and on ``D'``, most frequent first.
    mechanism_error : str
        Why the report fails although no event refuted the claim: the
        mechanism raised (on every run, or on some), and ``allow_errors`` was
        False. Empty otherwise.
    allow_errors : bool
        Runs that raised were accepted as outputs of the mechanism.
    """

    passed: bool
    epsilon: float
    confidence: float
    delta: float
    trials: int
    selection_trials: int
    epsilon_lower_bound: float
    events: tuple[EventResult, ...] = field(repr=False)
    charged_per_run: float = 0.0
    seconds: float = 0.0
    neighbour: str = ""
    outcomes: tuple[tuple[str, int, int], ...] = field(default=(), repr=False)
    mechanism_error: str = ""
    allow_errors: bool = False

    @property
    def slack(self) -> float:
        """Former name of :attr:`delta`."""
        return self.delta

    @property
    def worst(self) -> EventResult | None:
        """The event with the largest implied epsilon lower bound."""
        return self.events[0] if self.events else None

    @property
    def violations(self) -> tuple[EventResult, ...]:
        """Events whose probability exceeds ``e^epsilon`` times the other's plus ``delta``, at the given confidence."""
        return tuple(e for e in self.events if e.violation)

    @property
    def boundary_violations(self) -> tuple[EventResult, ...]:
        """Violations on what the caller observes besides the numbers (exceptions, index, shape, warnings)."""
        return tuple(e for e in self.events if e.violation and e.kind == "boundary")

    def to_frame(self) -> pd.DataFrame:
        """One row per tested event, with probabilities and bounds."""
        rows = [dict(event=e.event, direction=e.direction, p_a=e.p_a, p_a_low=e.p_a_low, p_b=e.p_b,
                     p_b_high=e.p_b_high, epsilon_lower_bound=e.epsilon_lower_bound, violation=e.violation)
                for e in self.events]
        return pd.DataFrame(rows, columns=["event", "direction", "p_a", "p_a_low", "p_b", "p_b_high",
                                           "epsilon_lower_bound", "violation"])

    def outcome_frame(self) -> pd.DataFrame:
        """One row per distinct outcome of a run: its description and its runs on ``D`` and ``D'``."""
        return pd.DataFrame(list(self.outcomes), columns=["outcome", "runs_D", "runs_D_prime"])

    def __str__(self) -> str:
        verdict = "PASSED" if self.passed else "FAILED"
        pair = f" on {self.neighbour}" if self.neighbour else ""
        claim = f"epsilon={self.epsilon:g}" + (f", delta={self.delta:g}" if self.delta else "")
        head = (f"DP test {verdict}{pair}: claimed {claim}, "
                f"{len(self.events)} events tested on {self.trials - self.selection_trials} runs per dataset "
                f"(+{self.selection_trials} selection runs), confidence {self.confidence:g}.\n"
                f"Largest implied epsilon lower bound: {self.epsilon_lower_bound:.4f}"
                f" (charged per run: {self.charged_per_run:g}; {self.seconds:.1f} s).")
        if self.mechanism_error:
            head += f"\n{self.mechanism_error}"
        if len(self.outcomes) > 1 or any(o.startswith("raises") for o, _, _ in self.outcomes):
            head += "\nOutcomes (runs on D / D'" + (" (allowed errors)" if self.allow_errors else "") + "): " + \
                "; ".join(f"{o}: {a} / {b}" for o, a, b in self.outcomes[:5])
        shown = self.violations if not self.passed else self.events[:1]
        if not shown:
            return head
        label = "Violations" if not self.passed else "Most suspicious event"
        return head + f"\n{label} (A, B = the two datasets in the order shown):\n" + "\n".join(
            str(e) for e in shown[:5])


class DPTestFailure(AssertionError):
    """Raised by :func:`~pandas_dp.testing.assert_dp` when the data refute the claim (or the mechanism raised).

    The full :class:`DPTestReport` is in ``.report``.
    """

    def __init__(self, report: DPTestReport) -> None:
        super().__init__(str(report))
        self.report = report
