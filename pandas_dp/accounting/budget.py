"""Privacy budget: context manager, exact accounting in one measure, and an optional durable ledger.

A :class:`Budget` is made active with ``with pandas_dp.budget(epsilon=...)``
(pure DP) or ``with pandas_dp.budget(rho=...)`` (zCDP), either with an
approximate part ``delta=...``. Every release charges
the innermost active budget and every budget enclosing it (sequential
composition). Amounts are exact rationals, so ten charges of ``0.1`` fill a
budget of ``1.0`` exactly.

The chain of enclosing budgets belongs to each *entry* into a ``with`` block,
not to the budget object: the active budgets are a tuple on a
:class:`~contextvars.ContextVar`, and :meth:`Budget.spend` reads it at charge
time. One budget object entered under two different parents in two threads or
asyncio tasks therefore charges the right chain each time.

Every budget keeps its records in a ledger store (:mod:`pandas_dp.accounting.ledger`):
in memory by default, or in a ledger file or PostgreSQL database created with
:meth:`pandas_dp.Ledger.create`. A charge is checked and recorded in one
transaction per store *before* any noise is drawn.

A budget with ``delta`` keeps the approximate part in a companion budget of
the same ledger, named ``"<name>#delta"`` with measure ``"delta"`` and the
exact total delta: every charge with a delta appends an entry to it in the
same transaction as the main entry, so delta is checked, recorded exactly and
sealed in the same hash chains (budget list, entries, ledger head) as every
other amount. A ledger written before deltas existed has no companion
budgets: its budgets have delta 0 and open and verify as before.

A :class:`Reservation` (:meth:`Budget.reserve`) is a prepaid share of a budget, itself a budget, closed
(and its unused part returned) on leaving ``with``. It is defined here, next to :class:`Budget`:
``Budget.reserve`` returns a ``Reservation`` and ``Reservation`` subclasses ``Budget``, so each class
needs the other; the ledger transactions both run are below them in :mod:`pandas_dp.accounting.ledger`.
"""

from __future__ import annotations

import json
import math
import os
import unicodedata
from contextvars import ContextVar
from dataclasses import replace
from fractions import Fraction
from typing import Any, Mapping, Sequence

import pandas as pd

from pandas_dp._utils.rational import safe_repr
from pandas_dp.errors import BudgetError, LedgerError, NoActiveBudgetError, PandasDPError, ParameterError
from pandas_dp.accounting.ledger import (DELTA_SUFFIX, NO_BLIND_RESTORE, ChainError, Charge, MemoryStore, Posting, Store, Txn,
                                          check_remaining, columns_text, damaged, entries_frame, entry_text,
                                          loss_of, new_meta, open_budget, open_store, params_text, post,
                                          read_meta, record, store_for, transact, verify_budget,
                                          verify_budget_chain)
from pandas_dp.privacy.loss import PrivacyLoss, check_delta, loss_from

__all__ = ["Budget", "Reservation", "Charge", "budget", "active_budget", "ACTIVE_BUDGETS", "DELTA_SUFFIX",
           "ROUNDING_SLACK"]

#: A release asking for more than a budget has left, by at most this share of its own request, spends what is
#: left instead (:meth:`Budget.fit`): float rounding of an even split. ``n`` float shares of a total add up to
#: the total within a few parts in 10**16 of it, whatever ``n``; one part in 2**30 (about 1e-9) of the request
#: covers that for splits of up to millions of releases, and nothing a person would call a different request.
ROUNDING_SLACK = Fraction(1, 2**30)


#: The active budgets of this context, outermost first (the testing tools run their calls detached from it).
ACTIVE_BUDGETS: ContextVar[tuple["Budget", ...]] = ContextVar("pandas_dp_active_budgets", default=())


class _MeasureError(ParameterError, AttributeError):
    """The attribute of the other measure (``b.rho`` on a pure budget): also an AttributeError, for hasattr."""


def _as_loss(loss: object, *, what: str = "loss") -> PrivacyLoss:
    """A release's loss: a :class:`PrivacyLoss`, or a plain positive number read as a pure epsilon."""
    if isinstance(loss, PrivacyLoss):
        amount = getattr(loss, "amount", None)
        delta = getattr(loss, "delta", Fraction(0))
        if isinstance(amount, int) and not isinstance(amount, bool):
            amount = Fraction(amount)
            loss = type(loss)(amount, delta)  # type: ignore[call-arg]
        if not isinstance(amount, Fraction) or amount <= 0 or not isinstance(delta, Fraction) or not 0 <= delta < 1:
            raise ParameterError(f"The '{what}' must be a positive privacy loss with an exact amount. Got "
                                 f"{safe_repr(loss)}.")
        return loss
    try:
        return loss_from(epsilon=loss)
    except ParameterError as err:
        raise ParameterError(f"The '{what}' must be a pandas_dp.privacy.loss.PrivacyLoss (PureDP or ZCDP) or a positive "
                             f"number (a pure epsilon). {err}") from None


def _check_name(name: object, *, with_ledger: bool) -> str:
    if name is None:
        return "default" if with_ledger else ""
    if not isinstance(name, str):
        raise ParameterError(f"The 'name' parameter of budget must be a string. Got {safe_repr(name)} of type "
                             f"{type(name).__name__}.")
    bad = [c for c in name if unicodedata.category(c) in ("Cc", "Cs", "Cn")]
    if bad or len(name) > 200 or (with_ledger and not name.strip()):
        raise ParameterError(f"The 'name' parameter of budget must be a non-empty, printable string of at most 200 "
                             f"characters. Got {name[:60]!r}.")
    if name.endswith(DELTA_SUFFIX):
        raise ParameterError(f"The 'name' parameter of budget may not end with {DELTA_SUFFIX!r} (reserved for the "
                             f"companion budget that holds a budget's delta). Got {name[:60]!r}.")
    return name


class Budget:
    """A privacy budget in one measure (pure epsilon or zCDP rho), active inside a ``with`` block.

    Use :func:`pandas_dp.budget` to make one. Inside ``with`` every release
    charges this budget and every budget enclosing it *in this context*. The
    object stays readable after the block (``spent``, ``remaining``,
    ``ledger``) and can be entered again to spend what is left.

    Parameters
    ----------
    epsilon, rho : float, int, Fraction or Decimal
        Exactly one: the total pure-DP epsilon, or the total zCDP rho. Read
        exactly (0.1 is 1/10).
    delta : float, Fraction or Decimal, optional
        The approximate part, strictly between 0 and 1: ``(epsilon, delta)``-DP,
        or delta-approximate rho-zCDP. Releases that need a delta (such as
        ``histogram(categories="discover")``) spend from it; others spend none.
    ledger : str, path, postgresql:// URL or Ledger, optional
        An existing ledger (see :meth:`pandas_dp.Ledger.create`) that records every
        charge durably. Reopening the same ledger with the same ``name`` resumes
        the amount spent.
    name : str, optional
        Name of the budget in the ledger (default ``"default"`` with a ledger).

    Notes
    -----
    Measures: a pure ``epsilon`` release costs ``epsilon**2 / 2`` in a zCDP
    budget (pure epsilon-DP implies that zCDP; Bun and Steinke 2016,
    Proposition 1.4); a ``rho`` release in a pure budget is refused with
    :class:`ParameterError` (zCDP implies no pure guarantee). ``b.epsilon`` of a
    zCDP budget, or ``b.rho`` of a pure one, raises :class:`ParameterError`
    (which is also an ``AttributeError``, so ``hasattr(b, "rho")`` is False for
    a pure budget).

    A budget pickles without its live connection: the pickle holds the
    total, the name, the ledger location (and, for an in-memory budget, its
    entries); the ledger is reopened and verified on first use.
    """

    _barrier = False  # a Reservation is prepaid: charges inside it stop there
    _genesis = ""     # the ledger row's genesis once _open has read it ("" before: nothing to compare)
    _delta = Fraction(0)  # the total delta (0: no companion budget)
    _delta_genesis = ""

    def __init__(self, epsilon: Any = None, *, rho: Any = None, delta: Any = None, ledger: Any = None,
                 name: str | None = None) -> None:
        if (epsilon is None) == (rho is None):
            given = ", ".join(f"{k}={safe_repr(v)}" for k, v in (("epsilon", epsilon), ("rho", rho)) if v is not None)
            raise ParameterError(f"Pass exactly one of epsilon= (a pure-DP budget) or rho= (a zCDP budget) to "
                                 f"budget. Got {given or 'neither'}. For example pandas_dp.budget(epsilon=1.0).")
        self._total = loss_from(epsilon=epsilon) if rho is None else loss_from(rho=rho)
        self.name = _check_name(name, with_ledger=ledger is not None)
        self._delta = Fraction(0) if delta is None else check_delta(delta, what="budget")
        if ledger is None:
            self._store: Store = MemoryStore()
            self._store.create(new_meta())
            self._durable = False
        else:
            self._store = store_for(ledger)
            open_store(self._store)
            self._durable = True
        self._opened = False
        self._open()

    def _open(self) -> Store:
        """Open (and fully verify) this budget's chain once per process; create its row when missing."""
        if not self._opened:
            self._open_delta()
            row = open_budget(self._store, self.name, self.measure, self._total.amount, self._total.parameter,
                              parent=self._parent_name(), create=not self._barrier)
            if self._genesis and row.genesis != self._genesis:
                raise LedgerError(
                    f"The budget {self.name!r} of the ledger {self._store.display} is not the one this object was "
                    f"opened on (it was deleted and made again, forgetting what was spent). Nothing was charged. "
                    f"{NO_BLIND_RESTORE}.")
            self._genesis = row.genesis
            self._opened = True
        return self._store

    def _parent_name(self) -> str | None:
        return None

    @property
    def _delta_name(self) -> str:
        return self.name + DELTA_SUFFIX

    def _open_delta(self) -> None:
        """Check the companion delta budget against this budget's delta; create it when new."""
        if self._barrier:
            return
        with self._store.read() as txn:
            main, companion = txn.budget(self.name), txn.budget(self._delta_name)
            # A ledger guarded before delta companions existed has functions that know pure and zCDP only.
            old_guard = txn.guarded and "delta" not in txn.meta().get("guard_measures", "").split()
        if self._delta and old_guard:
            raise ParameterError(f"The guarded PostgreSQL ledger {self._store.display} holds no deltas (it was "
                                 f"created before guarded ledgers recorded delta: its server functions know the pure "
                                 f"and zCDP measures only). Open the budget without delta=, or create a new guarded "
                                 f"ledger (`python -m pandas_dp ledger init URL --roles`) for approximate-DP "
                                 f"releases.")
        where = f"The ledger {self._store.display} already holds a budget named {self.name!r}"
        if companion is not None and not self._delta:
            raise ParameterError(f"{where} with delta={companion.total}; reopen it with the same delta= to resume "
                                 f"it, or pass a new name=.")
        if self._delta and main is not None and companion is None:
            raise ParameterError(f"{where} without a delta; reopen it without delta= to resume it, or pass a new "
                                 f"name= for a budget with delta.")
        if self._delta:
            row = open_budget(self._store, self._delta_name, "delta", self._delta, "delta")
            self._delta_genesis = row.genesis

    # -- pickling ----------------------------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in ("_store", "_opened")}
        if self._durable:
            state["_location"] = self._store.location()
        else:
            state["_memory"] = self._store
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        location = state.pop("_location", None)
        memory = state.pop("_memory", None)
        self.__dict__.update(state)
        self._store = memory if memory is not None else store_for(location)
        self._opened = memory is not None  # a ledger is reopened and verified on first use

    # -- context manager -----------------------------------------------------------------------------------
    def _identity(self) -> tuple[str, str]:
        return self._store.key, self.name

    def __enter__(self) -> "Budget":
        stack = ACTIVE_BUDGETS.get()
        for other in stack:
            if other is self or other._identity() == self._identity():
                label = f"Budget {self.name!r}" if self.name else "This budget"
                raise BudgetError(f"{label} is already active in this block (entered twice inside "
                                  f"one chain of budgets); a release would charge it twice. Leave the outer "
                                  f"'with' or use a different budget.")
        ACTIVE_BUDGETS.set(stack + (self,))
        return self

    def __exit__(self, *exc: object) -> None:
        stack = ACTIVE_BUDGETS.get()
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] is self:
                ACTIVE_BUDGETS.set(stack[:i] + stack[i + 1:])
                return

    def _chain(self) -> list["Budget"]:
        """This budget and the budgets enclosing it in the current context (up to a prepaid reservation)."""
        stack = ACTIVE_BUDGETS.get()
        index = next((i for i in range(len(stack) - 1, -1, -1) if stack[i] is self), None)
        seq = [self] if index is None else list(reversed(stack[:index + 1]))
        chain = []
        for b in seq:
            chain.append(b)
            if b._barrier:
                break
        return chain

    # -- reading ---------------------------------------------------------------------------------------------
    @property
    def total(self) -> PrivacyLoss:
        """The total privacy loss (exact) of this budget."""
        return self._total

    @property
    def measure(self) -> str:
        """``"pure"`` (an epsilon budget) or ``"zcdp"`` (a rho budget)."""
        return self._total.measure

    @property
    def epsilon(self) -> float:
        """Total epsilon of a pure-DP budget (ParameterError for a zCDP budget)."""
        if self.measure != "pure":
            raise _MeasureError("This is a zCDP budget: it has no total epsilon. Read b.rho (or b.total), or "
                                "b.epsilon_delta(delta) for an (epsilon, delta) statement.")
        return float(self._total.amount)

    @property
    def rho(self) -> float:
        """Total rho of a zCDP budget (ParameterError for a pure-DP budget)."""
        if self.measure != "zcdp":
            raise _MeasureError("This is a pure-DP budget: it has no total rho. Read b.epsilon (or b.total).")
        return float(self._total.amount)

    @property
    def delta(self) -> float:
        """Total delta of the budget (0.0 for a budget without one)."""
        return float(self._delta)

    @property
    def delta_exact(self) -> Fraction:
        """Total delta of the budget, exact."""
        return self._delta

    @property
    def delta_spent_exact(self) -> Fraction:
        """Exact delta spent so far (including charges by other processes on the ledger)."""
        if not self._delta:
            return Fraction(0)
        store = self._open()
        probe = Posting(budget=self._delta_name, label=self._label(), kind="charge", amount=Fraction(0),
                        parameter="delta", requested="{}", requested_text="", method="", columns="", params="{}",
                        status="charged", genesis=self._delta_genesis)
        with store.read() as txn:
            meta = read_meta(store, txn)
            state = check_remaining(store, txn, meta["ledger_id"], [probe], lock=False)
        return state[self._delta_name][1]

    @property
    def delta_spent(self) -> float:
        """Delta spent so far (float)."""
        return float(self.delta_spent_exact)

    @property
    def delta_remaining(self) -> float:
        """Delta left (float)."""
        return float(self._delta - self.delta_spent_exact)

    def epsilon_delta(self, delta: float, *, spent: bool = False) -> float:
        """The (epsilon, delta)-DP guarantee of this budget's total (or of what it has spent).

        Parameters
        ----------
        delta : float
            The delta of the statement, ``0 < delta < 1``. For a budget with a delta of
            its own, the statement's total: it must exceed that delta (a zCDP budget's rho
            is converted at the difference).
        spent : bool
            Convert the amount spent so far instead of the total.

        Returns
        -------
        float
            For a zCDP budget of ``rho``: the tight conversion of Canonne, Kamath
            and Steinke (2020, Corollary 13), the infimum over ``alpha > 1`` of
            ``alpha rho + log(1/(alpha delta))/(alpha - 1) + log(1 - 1/alpha)``,
            evaluated so that it is never below the true value (the classical
            ``rho + 2 sqrt(rho log(1/delta))`` is looser). For a pure budget: its
            epsilon (pure epsilon-DP is (epsilon, delta)-DP for every delta).

            With a budget delta ``d`` (approximate DP), the parts add: a pure budget
            is (epsilon, d)-DP, so the statement holds for any ``delta >= d``; a zCDP
            budget is d-approximately rho-zCDP, hence (epsilon(rho, delta - d), delta)-DP
            (Bun and Steinke 2016, Section 8 "approximate zCDP"; deltas of sequential releases add
            there too).

        Examples
        --------
        >>> import pandas_dp as pdp
        >>> round(pdp.budget(rho=0.5).epsilon_delta(1e-6), 3)
        5.222
        """
        amount = self.spent_exact if spent else self._total.amount
        approx = self.delta_spent_exact if spent else self._delta
        return self._total._with(amount, approx).epsilon_delta(delta)

    @property
    def spent_exact(self) -> Fraction:
        """Exact amount spent in the budget's measure (including charges by other processes on the ledger)."""
        store = self._open()
        with store.read() as txn:
            meta = read_meta(store, txn)
            state = check_remaining(store, txn, meta["ledger_id"], [self._probe()], lock=False)
        return state[self.name][1]

    @property
    def spent(self) -> float:
        """Amount spent so far (float, in the budget's measure)."""
        return float(self.spent_exact)

    @property
    def remaining_exact(self) -> Fraction:
        """Exact amount left."""
        return self._total.amount - self.spent_exact

    @property
    def remaining(self) -> float:
        """Amount left (float)."""
        return float(self.remaining_exact)

    @property
    def ledger(self) -> pd.DataFrame:
        """One row per entry: id, time, budget, method, columns, epsilon (or rho), params, status, measure.

        The amount column is named by the budget's parameter (``epsilon`` for a
        pure budget, ``rho`` for a zCDP budget) and holds the amount charged to
        this budget in its measure. A reservation shows as a ``reserve`` row and,
        when it closes, a ``return`` row with the negative unused part, so the
        column always sums to ``spent``. A budget with delta has a ``delta`` column too: the delta
        of each charge (0 for releases that spend none), from its companion budget's entries
        (written in the charge's transaction, with the same time).
        """
        store = self._open()
        with store.read() as txn:
            meta = read_meta(store, txn)
            row = txn.budget(self.name)
            rows = list(txn.entries(self.name))
            deltas = list(txn.entries(self._delta_name)) if self._delta else []
        if row is None:
            raise damaged(store, f"the budget {self.name!r} disappeared")
        try:
            verify_budget_chain(meta["ledger_id"], row, rows)
        except ChainError as err:
            raise damaged(store, str(err)) from None
        full = entries_frame(rows)
        frame = pd.DataFrame({"id": full["id"], "time": full["time"], "budget": full["budget"],
                              "method": full["method"], "columns": full["columns"],
                              self._total.parameter: full["amount"], "params": full["params"],
                              "status": full["status"], "measure": full["measure"]})
        if self._delta:
            by_time = {e.time: float(Fraction(e.amount)) for e in deltas}
            frame["delta"] = [by_time.get(e.time, 0.0) for e in rows]
        return frame.reset_index(drop=True)

    def verify(self) -> None:
        """Re-verify this budget's whole chain in its ledger (LedgerError on any mismatch)."""
        verify_budget(self._open(), self.name)

    # -- charging --------------------------------------------------------------------------------------------
    def _probe(self) -> Posting:
        zero = self._total.zero()
        return self._posting(zero, zero, kind="charge", method="", columns="", params="{}")

    def _label(self) -> str:
        return f"budget {self.name!r}" if self.name else "the active budget"

    def _posting(self, asked: PrivacyLoss, amount: PrivacyLoss, *, kind: str, method: str, columns: str,
                 params: str, status: str = "charged") -> Posting:
        differs = asked.measure != amount.measure
        requested = json.dumps(asked.describe(), sort_keys=True)
        shown = f"{asked.parameter}={float(asked.amount)!r} charged as {amount.measure}" if differs else ""
        return Posting(budget=self.name, label=self._label(), kind=kind, amount=amount.amount,
                       parameter=amount.parameter, requested=requested, requested_text=shown, method=method,
                       columns=columns, params=params, status=status, genesis=self._genesis)

    def _plan(self, loss: Any, kind: str, method: Any, columns: Any, params: Any,
              status: str) -> tuple[PrivacyLoss, list["Budget"], list[Posting]]:
        asked = _as_loss(loss)
        if not isinstance(method, str):
            raise ParameterError(f"The 'method' of a charge must be a string. Got {type(method).__name__}.")
        method_text = entry_text(method, "method", limit=200)
        columns_entry, params_entry = columns_text(columns), params_text(params)
        chain = self._chain()
        postings = [b._posting(asked, asked.charged_as(b.measure), kind=kind, method=method_text,
                               columns=columns_entry, params=params_entry, status=status) for b in chain]
        if asked.delta:
            for b in list(chain):
                if not b._delta:
                    raise ParameterError(
                        f"This release needs delta={float(asked.delta)!r} (approximate DP) but {b._label()} has no "
                        f"delta, so nothing was charged. Open the budget with one, e.g. pandas_dp.budget("
                        f"{b._total.parameter}={float(b._total.amount)!r}, delta=1e-6), or use a release that "
                        f"needs no delta.")
                chain.append(b)
                # A reservation's delta is charged outright (never returned): a "charge" entry.
                postings.append(Posting(
                    budget=b._delta_name, label=b._label(), kind="charge", amount=asked.delta, parameter="delta",
                    requested=json.dumps(asked.describe(), sort_keys=True), requested_text="", method=method_text,
                    columns=columns_entry, params=params_entry, status="charged" if kind == "reserve" else status,
                    genesis=b._delta_genesis))
        return asked, chain, postings

    def check(self, loss: PrivacyLoss | float | Fraction) -> None:
        """Raise exactly what :meth:`spend` would raise for ``loss``, recording nothing.

        Release drivers call ``active_budget().check(loss)`` before reading private
        rows (boundary rule), then :meth:`spend` after counting.

        Raises
        ------
        ParameterError
            ``loss`` is not a loss, or a rho release meets a pure budget of the chain.
        BudgetExceededError
            A budget of the chain has less left than the loss costs there.
        LedgerError
            A ledger of the chain cannot be read or fails verification.
        """
        _, chain, postings = self._plan(loss, "charge", "check", (), None, "charged")
        by_store: dict[str, tuple[Store, list[Posting]]] = {}
        for b, p in zip(chain, postings):
            by_store.setdefault(b._open().key, (b._store, []))[1].append(p)
        for key in sorted(by_store):
            store, group = by_store[key]
            with store.read() as txn:
                meta = read_meta(store, txn)
                check_remaining(store, txn, meta["ledger_id"], group, lock=False)

    def fit(self, loss: PrivacyLoss | float | Fraction) -> PrivacyLoss:
        """The loss a release asking for ``loss`` is charged: ``loss``, or exactly what is left.

        A request that exceeds what a budget of the chain has left by float rounding only, at
        most :data:`ROUNDING_SLACK` (one part in 2**30) of the request, is lowered to the largest
        amount every budget of the chain can pay: ``budget(rho=0.05)`` pays 28 releases of
        ``rho=0.05 / 28`` although the 28 float shares add up to a hair more than 0.05. Any
        other request is returned unchanged (:meth:`check` then refuses one that does not fit).

        Releases call this before they plan their noise, so the noise is calibrated to the amount
        charged (never to more than is charged), and the ledger records that amount. A release
        charged to a zCDP budget with ``epsilon=`` is lowered to the largest rational
        ``epsilon`` (to 2**-64) whose ``epsilon**2 / 2`` fits. The delta part is never lowered.
        Code that calibrates its own noise and then calls :meth:`spend` calls ``fit`` first and
        calibrates to what it returns: :meth:`spend` itself charges exactly what it is given.

        Parameters
        ----------
        loss : PrivacyLoss, or a positive number read as a pure epsilon
            What the release asks for.

        Returns
        -------
        PrivacyLoss
            ``loss``, or the same measure and delta with the lowered amount. Reading the budgets
            fails silently here (``loss`` comes back unchanged): :meth:`check` reports it.

        Examples
        --------
        >>> import pandas_dp as pdp
        >>> with pdp.budget(epsilon=0.05) as b:
        ...     for _ in range(28):
        ...         _ = b.spend(b.fit(0.05 / 28), method="one of 28 tables")
        >>> b.remaining_exact
        Fraction(0, 1)
        """
        asked = _as_loss(loss)
        amount = asked.amount
        try:
            for b in self._chain():
                left = b.remaining_exact
                if asked.charged_as(b.measure).amount > left:
                    amount = min(amount, left if b.measure == asked.measure else _largest_epsilon(left))
        except PandasDPError:
            return asked
        if amount == asked.amount or amount <= 0 or asked.amount - amount > asked.amount * ROUNDING_SLACK:
            return asked
        return asked._with(amount, asked.delta)

    def spend(self, loss: PrivacyLoss | float | Fraction, *, method: str, columns: Sequence[str] = (),
              params: Mapping[str, Any] | None = None) -> Charge:
        """Check and record ``loss`` here and in every budget enclosing this one in the current context.

        Atomic per ledger: either every budget of the chain has room and records
        the charge, or nothing is recorded. Budgets on one ledger file are checked
        and recorded in one transaction; on several files, one transaction each,
        committed in a fixed order (if a later commit fails, the earlier ones keep
        the charge and no release happens: conservative). Library releases call
        this after counting and before drawing any noise.

        Parameters
        ----------
        loss : PrivacyLoss, or a positive number read as a pure epsilon
            The release's privacy loss; each budget is charged
            ``loss.charged_as(budget.measure)``.
        method, columns, params
            What the ledger records about the release (public information only).

        Returns
        -------
        Charge
            With ``ledger_id``, the row of this budget's ledger, and ``finish(status)``.

        Raises
        ------
        ParameterError, BudgetExceededError, LedgerError
            As :meth:`check`; nothing is recorded.
        """
        asked, chain, postings = self._plan(loss, "charge", method, columns, params, "charged")
        ids, head = record(chain, postings)
        return Charge(asked, ids[0][0], tuple((b, i) for b, (i, _) in zip(chain, ids)), ids[0][1], head)

    def reserve(self, loss: PrivacyLoss | float | Fraction, *, method: str = "reserve",
                columns: Sequence[str] = (), params: Mapping[str, Any] | None = None) -> "Reservation":
        """Prepay ``loss`` from this budget (and its chain) in one transaction; return it as a budget.

        Releases inside ``with reservation:`` charge only the reservation (up to
        its total), each with its own ledger row; leaving the block closes it and
        returns the unused part to the budgets that paid for it. A process that
        dies holding a reservation keeps it spent (conservative). Two runs that
        each need a whole plan's budget cannot both start: the second
        reservation fails with :class:`BudgetExceededError` before anything is
        released.

        Examples
        --------
        >>> import pandas_dp as pdp
        >>> b = pdp.budget(epsilon=1.0)
        >>> with b.reserve(0.5) as plan:
        ...     _ = plan.spend(0.25, method="first table")
        >>> b.spent
        0.25
        """
        asked = _as_loss(loss)
        name = f"{self.name or 'budget'}/reservation-{os.urandom(6).hex()}"
        asked, chain, postings = self._plan(asked, "reserve", method, columns, dict(params or {}, reservation=name),
                                            "reserved")
        own = asked.charged_as(self.measure)
        ids, _ = record(chain, postings, reservation=(self, name, own))
        funding = tuple((b, p.amount, i) for b, p, (i, _) in zip(chain, postings, ids) if p.kind == "reserve")
        return Reservation(self, name, own._with(own.amount, Fraction(0)), funding, delta=own.delta)

    def __repr__(self) -> str:
        name = f" name={self.name!r}" if self.name else ""
        p = self._total.parameter
        try:
            state = f" spent={self.spent!r} remaining={self.remaining!r}"
            if self._delta:
                state += f" delta_spent={self.delta_spent!r} delta_remaining={self.delta_remaining!r}"
        except LedgerError:
            state = " (ledger unreadable)"
        total = f" delta={float(self._delta)!r}" if self._delta else ""
        return f"<Budget{name} {p}={float(self._total.amount)!r}{total}{state}>"


def budget(epsilon: Any = None, *, rho: Any = None, delta: Any = None, ledger: Any = None,
           name: str | None = None) -> Budget:
    """Open a privacy budget; use it as ``with pandas_dp.budget(epsilon=1.0) as b:``.

    Parameters
    ----------
    epsilon : float, int, Fraction or Decimal, optional
        Total pure-DP loss allowed inside the block (exact rational accounting).
    rho : float, int, Fraction or Decimal, optional
        Total zCDP loss instead (exactly one of ``epsilon`` and ``rho``).
    delta : float, Fraction or Decimal, optional
        The approximate part, ``0 < delta < 1`` (read exactly): ``(epsilon, delta)``-DP or
        delta-approximate rho-zCDP. Only releases that need it (``categories="discover"``)
        spend delta; a release needing delta in a budget without it is refused before any charge.
    ledger : str, path, postgresql:// URL or Ledger, optional
        An existing ledger (create it once with :meth:`pandas_dp.Ledger.create`)
        that durably records every charge before its noise is drawn.
    name : str, optional
        The budget's name in the ledger; reopening the same ledger and name resumes it.

    Returns
    -------
    Budget

    Raises
    ------
    ParameterError
        Neither or both of ``epsilon``/``rho``, a bad amount or name, or a
        ledger budget of that name with another measure or total.
    LedgerError
        The ledger is missing, empty, damaged, read-only or not a ledger, or
        the location is not a path or URL.

    Examples
    --------
    >>> import pandas_dp as pdp
    >>> with pdp.budget(epsilon=1.0) as b:
    ...     pass
    >>> b.remaining
    1.0
    >>> pdp.budget(rho=0.5).measure
    'zcdp'
    """
    return Budget(epsilon, rho=rho, delta=delta, ledger=ledger, name=name)


def active_budget() -> Budget:
    """Return the innermost active budget or raise :class:`NoActiveBudgetError`."""
    stack = ACTIVE_BUDGETS.get()
    if not stack:
        raise NoActiveBudgetError(
            "No privacy budget is active. Every release spends privacy budget, so wrap it in a "
            "budget block:\n\n    with pandas_dp.budget(epsilon=1.0):\n"
            "        df.dp.histogram(\"age\", bins=range(0, 121), epsilon=0.1)\n"
        )
    return stack[-1]


class Reservation(Budget):
    """A prepaid share of a budget (see :meth:`Budget.reserve`): a budget of its own, closed on leaving ``with``.

    Releases inside ``with reservation:`` charge the reservation only, each
    with its own entry (``Charge.ledger_id``) in the ledger of the budget it was
    reserved from. :meth:`close` (called when the ``with`` block ends) records
    the close and returns the unused part to every budget that paid for it, in
    one transaction per ledger. A reserved delta is charged outright to the
    budget's delta when reserving (never returned) and held in the
    reservation's own companion budget (``"<name>#delta"``), which its
    releases spend.
    """

    _barrier = True

    def __init__(self, owner: Budget, name: str, total: PrivacyLoss,
                 funding: tuple[tuple[Budget, Fraction, int], ...], *, delta: Fraction = Fraction(0)) -> None:
        self._total = total
        self._delta = delta  # charged outright to the owner's delta when reserved; never returned
        self.name = name
        self._store = owner._store
        self._durable = owner._durable
        self._owner_name = owner.name
        self._funding = funding
        self._closed = False
        self._opened = True  # created and verified in the reserving transaction
        self._charges: list[Charge] = []

    def _parent_name(self) -> str | None:
        return self._owner_name

    @property
    def charges(self) -> tuple[Charge, ...]:
        """The charges made through this object (in this process), oldest first: one per release."""
        return tuple(self._charges)

    @property
    def closed(self) -> bool:
        """Whether the reservation was closed (its unused part returned)."""
        return self._closed

    def spend(self, loss: PrivacyLoss | float | Fraction, *, method: str, columns: Sequence[str] = (),
              params: Mapping[str, Any] | None = None) -> Charge:
        """As :meth:`Budget.spend`, charging the reservation only; the charge is kept in :attr:`charges`."""
        charge = super().spend(loss, method=method, columns=columns, params=params)
        self._charges.append(charge)
        return charge

    @property
    def reserved_entry(self) -> int:
        """The id of the reservation's entry in the ledger of the budget it was reserved from."""
        return self._funding[0][2]

    def __enter__(self) -> "Reservation":
        if self._closed:
            raise BudgetError(f"The reservation {self.name!r} is closed; make a new one with budget.reserve(...).")
        super().__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        self.close()

    @classmethod
    def reopen(cls, owner: Budget, name: str) -> "Reservation":
        """The open reservation ``name`` of ``owner``, made by another (perhaps killed) process.

        Its charges go on inside it; closing it returns the unused part to
        ``owner`` (only: a reservation funded by budgets of other ledgers too
        returns to them only from the process that made it).

        Raises
        ------
        BudgetError
            When ``owner``'s ledger has no such reservation of ``owner``, or it is closed.
        LedgerError
            When the ledger does not verify.
        """
        store = owner._open()
        with store.read() as txn:
            read_meta(store, txn)
            row = txn.budget(name)
            companion = txn.budget(name + DELTA_SUFFIX)
            reserve = [e for e in txn.entries(owner.name) if e.kind == "reserve" and _names(e.params) == name]
            last = txn.last_entry(name)
        if row is None or row.parent != owner.name or len(reserve) != 1:
            raise BudgetError(f"The ledger {store.display} has no reservation {name!r} of budget {owner.name!r}.")
        if last is not None and last.kind == "close":
            raise BudgetError(f"The reservation {name!r} is closed: its run finished or was cancelled.")
        total = loss_of(row.measure, Fraction(row.total))
        made = cls(owner, name, total, ((owner, Fraction(reserve[0].amount), reserve[0].id),),
                   delta=Fraction(companion.total) if companion is not None else Fraction(0))
        made._opened = False
        made._open()  # verify its chain now
        return made

    def close(self, *, method: str = "close") -> PrivacyLoss:
        """Close the reservation and return its unused part to the budgets that paid for it.

        ``method`` labels the close and return entries (``"cancel"`` for an
        explicit cancellation). Returns the unused part (in the reservation's
        measure). Idempotent.
        """
        if self._closed:
            return self._total.zero()
        funders = [b for b, _, _ in self._funding]
        for b in funders:
            b._open()
        stores = [self._store] + [b._store for b in funders]
        returned: list[PrivacyLoss] = []

        def work(txns: dict[str, Txn]) -> None:
            txn = txns[self._store.key]
            meta = read_meta(self._store, txn)
            state = check_remaining(self._store, txn, meta["ledger_id"], [self._probe()], lock=True)
            used = loss_of(self.measure, state[self.name][1])
            close = self._posting(used.zero(), used.zero(), kind="close", method=method, columns="",
                                  params=json.dumps({"reservation": self.name}), status="closed")
            post(self._store, txn, [close])
            returned.append(self._total - used)
            for b, paid, _ in self._funding:
                back = paid - used.charged_as(b.measure).amount
                if back > 0:
                    amount = loss_of(b.measure, back)
                    p = b._posting(amount, amount, kind="return", method="return" if method == "close" else method,
                                   columns="",
                                   params=json.dumps({"reservation": self.name}), status="returned")
                    post(b._store, txns[b._store.key], [replace(p, amount=-back)])

        transact(stores, work)
        self._closed = True
        return returned[0]


def _largest_epsilon(left: Fraction) -> Fraction:
    """The largest epsilon on a grid of 2**-64 whose zCDP cost ``epsilon**2 / 2`` is at most ``left``.

    A pure epsilon is the one loss charged in another measure than its own (zCDP), so this is the
    largest such loss a zCDP budget with ``left`` can pay: ``floor(sqrt(2 left) 2**64) / 2**64``.
    """
    scaled = 2 * left * 2**128
    return Fraction(math.isqrt(scaled.numerator // scaled.denominator), 2**64)


def _names(params: str) -> object:
    """The reservation a reserve entry's params name (None when unreadable)."""
    try:
        found = json.loads(params)
    except ValueError:
        return None
    return found.get("reservation") if isinstance(found, dict) else None
