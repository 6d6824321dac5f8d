"""The one release pipeline: every release runs the same steps in the same order.

1. **Validate public inputs** (the release kind's entry function): arguments,
   parameter tables, the public domain and public tables, the privacy loss
   (fitted to what the active budget has left when it exceeds it by float
   rounding only: :meth:`~pandas_dp.accounting.budget.Budget.fit`), and the
   *plan* of the mechanism (how the loss is split and which noise each part
   buys; a loss too small for the sampler is refused here).
2. **Check the budget**: a budget is active and can pay (nothing is recorded).
3. **Count** (the engine): the only step that reads private rows; it never
   raises, warns or reports because of a private value.
4. **Charge** the whole loss, atomically and durably, before any noise exists.
5. **Noise, post-process and wrap** (the mechanism). The ledger row is marked
   ``ok`` once the result object exists, ``failed`` if this step raises (the
   charge stays).

Steps 1 and 5 are the release kind's; 2-4 and the charge semantics belong to
:func:`run` alone. This module is the boundary rule's home (DESIGN section 6):
nothing a caller can observe depends on private rows except through step 5's
noisy output.
"""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from pandas_dp.accounting.budget import ACTIVE_BUDGETS, Budget, active_budget
from pandas_dp.engines import Engine, engine_for
from pandas_dp.errors import GroupbyReleaseWarning, ParameterError
from pandas_dp.privacy.loss import PrivacyLoss, loss_from

__all__ = ["Release", "run", "privacy_loss", "check_measure"]


@dataclass(frozen=True)
class Release:
    """A release whose public inputs are checked and whose mechanism is planned.

    Attributes
    ----------
    loss : PrivacyLoss
        What the release charges (the caller's whole loss).
    method : str
        The ledger label (``"histogram:identity"``, ``"count_of_counts:hc"``...).
    columns : sequence of str
        The columns read, for the ledger.
    params : Mapping
        Public parameters recorded in the ledger row.
    count : callable
        ``count(engine) -> exact aggregate``: reads the private rows through the engine.
    mechanism : callable
        ``mechanism(exact) -> result``: draws the noise, post-processes and wraps.
    """

    loss: PrivacyLoss
    method: str
    columns: Sequence[Any]
    params: Mapping[str, Any]
    count: Callable[[Engine], Any]
    mechanism: Callable[[Any], Any]
    budget: Budget | None = field(default=None, compare=False)


_GROUPBY_DIR = f"{os.sep}pandas{os.sep}core{os.sep}groupby{os.sep}"
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
#: Call sites already warned (pandas resets Python's own once-per-site registry inside groupby).
_WARNED_SITES: set[tuple[str, int]] = set()


def warn_inside_groupby() -> None:
    """Warn (:class:`~pandas_dp.errors.GroupbyReleaseWarning`) when a pandas groupby calls this release.

    ``df.groupby(g).apply(lambda part: part.dp.histogram(...))`` charges one loss per group:
    the total spent is set by how many groups the private data hold. The check looks at the
    call stack only (never at the data), so it warns or not the same way on neighbouring frames.
    It warns once per call site (the caller's file and line) in a process.
    """
    frame: FrameType | None = sys._getframe(1)
    user: FrameType | None = None
    while frame is not None:
        name = frame.f_code.co_filename
        if user is None and not name.startswith(_PACKAGE_DIR):
            user = frame
        if _GROUPBY_DIR in name:
            break
        frame = frame.f_back
    if frame is None or user is None or (user.f_code.co_filename, user.f_lineno) in _WARNED_SITES:
        return
    _WARNED_SITES.add((user.f_code.co_filename, user.f_lineno))
    depth = 1
    walk: FrameType | None = sys._getframe(1)
    while walk is not None and walk is not user:
        depth, walk = depth + 1, walk.f_back
    warnings.warn(
        "A pandas_dp release inside a pandas groupby (apply/agg/transform) charges its loss once per group, "
        "and the number of groups comes from the private data. Release every group at once instead: "
        "df.dp.histogram(columns, by='group', by_categories=[...every public group...], epsilon=...), "
        "or add the group column to the released columns with public categories=.",
        GroupbyReleaseWarning, stacklevel=depth + 1)


def run(frame: Any, release: Release) -> Any:
    """Run a planned release on ``frame``: check the budget, count, charge, then noise and wrap."""
    budget = release.budget if release.budget is not None else active_budget()
    budget.check(release.loss)
    warn_inside_groupby()
    engine = engine_for(frame)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        # Counting reads private values: nothing it does may warn (the boundary rule).
        warnings.simplefilter("ignore")
        exact = release.count(engine)
    charge = budget.spend(release.loss, method=release.method, columns=[str(c) for c in release.columns],
                          params=release.params)
    try:
        result = release.mechanism(exact)
    except BaseException:
        charge.finish("failed")
        raise
    charge.finish("ok")
    if charge.ledger_head:
        _stamp_head(result, charge.ledger_head)
    return result


def _stamp_head(result: Any, head: str) -> None:
    """Record the ledger head after the release's charge in ``result.params["ledger_head"]``.

    An auditor who keeps it can prove later that a copy of the ledger still
    holds this charge and every one before it (``ledger verify --head``).
    """
    params = getattr(result, "params", None)
    if isinstance(params, Mapping):
        object.__setattr__(result, "params", {**params, "ledger_head": head})


def privacy_loss(epsilon: Any, rho: Any = None) -> PrivacyLoss:
    """The release's loss from its ``epsilon=`` / ``rho=`` arguments (exactly one), fitted to the active budget.

    A loss above what the active budget chain has left by float rounding only is lowered to exactly what is
    left (:meth:`~pandas_dp.accounting.budget.Budget.fit`): the release then plans its noise for the amount it
    will be charged. Without an active budget the loss is as asked (:func:`run` raises).
    """
    if rho is None:
        loss = loss_from(epsilon=epsilon) if epsilon is not None else _missing()
    else:
        loss = loss_from(epsilon=epsilon, rho=rho)
    active = ACTIVE_BUDGETS.get()
    return active[-1].fit(loss) if active else loss


def _missing() -> PrivacyLoss:
    raise ParameterError("Pass the privacy loss of this release: epsilon= (pure DP) or rho= (zCDP), "
                         "e.g. epsilon=0.5.")


def check_measure(loss: PrivacyLoss, measures: frozenset[str] | set[str], what: str) -> None:
    """Refuse a loss of a measure the method has no analysis for (before any charge)."""
    if loss.measure not in measures:
        accepted = " or ".join(f"{m!r}" for m in sorted(measures))
        raise ParameterError(f"{what} supports the {accepted} measure only; got {loss.parameter}= "
                             f"({loss.measure}). Pass epsilon= instead or choose another method.")
