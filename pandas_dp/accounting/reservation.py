"""A reservation: a prepaid share of a budget, itself a budget, closed (and its unused part returned) on exit."""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction
from typing import Any, Mapping, Sequence

from pandas_dp.accounting.budget import Budget
from pandas_dp.errors import BudgetError
from pandas_dp.accounting.ledger.internal import Charge, Txn, check_remaining, loss_of, post, read_meta, transact
from pandas_dp.privacy.loss import PrivacyLoss

__all__ = ["Reservation"]


class Reservation(Budget):
    """A prepaid share of a budget (see :meth:`Budget.reserve`): a budget of its own, closed on leaving ``with``.

    Releases inside ``with reservation:`` charge the reservation only, each
    with its own entry (``Charge.ledger_id``) in the ledger of the budget it was
    reserved from. :meth:`close` (called when the ``with`` block ends) records
    the close and returns the unused part to every budget that paid for it, in
    one transaction per ledger.
    """

    _barrier = True

    def __init__(self, owner: Budget, name: str, total: PrivacyLoss,
                 funding: tuple[tuple[Budget, Fraction, int], ...]) -> None:
        self._total = total
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

    def close(self) -> PrivacyLoss:
        """Close the reservation and return its unused part to the budgets that paid for it.

        Returns the unused part (in the reservation's measure). Idempotent.
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
            close = self._posting(used.zero(), used.zero(), kind="close", method="close", columns="",
                                  params=json.dumps({"reservation": self.name}), status="closed")
            post(self._store, txn, [close])
            returned.append(self._total - used)
            for b, paid, _ in self._funding:
                back = paid - used.charged_as(b.measure).amount
                if back > 0:
                    amount = loss_of(b.measure, back)
                    p = b._posting(amount, amount, kind="return", method="return", columns="",
                                   params=json.dumps({"reservation": self.name}), status="returned")
                    post(b._store, txns[b._store.key], [replace(p, amount=-back)])

        transact(stores, work)
        self._closed = True
        return returned[0]
