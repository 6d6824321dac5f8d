"""A reservation: a prepaid share of a budget, itself a budget, closed (and its unused part returned) on exit."""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction
from typing import Any, Mapping, Sequence

from pandas_dp.accounting.budget import Budget
from pandas_dp.errors import BudgetError
from pandas_dp.accounting.ledger.internal import (DELTA_SUFFIX, Charge, Txn, check_remaining, loss_of, post, read_meta,
                                                   transact)
from pandas_dp.privacy.loss import PrivacyLoss

__all__ = ["Reservation"]


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


def _names(params: str) -> object:
    """The reservation a reserve entry's params name (None when unreadable)."""
    try:
        found = json.loads(params)
    except ValueError:
        return None
    return found.get("reservation") if isinstance(found, dict) else None
