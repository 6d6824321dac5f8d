"""Recording a charge: the text a ledger entry keeps, the Charge handle, and the one-transaction-per-store write."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np
import pandas as pd

from pandas_dp._utils.rational import fraction_text, safe_repr
from pandas_dp.errors import LedgerError, ParameterError
from pandas_dp.accounting.ledger._ops import Posting, add_budgets, post, transact
from pandas_dp.accounting.ledger._records import head_text
from pandas_dp.accounting.ledger._store import Txn

if TYPE_CHECKING:
    from pandas_dp.accounting.budget import Budget
    from pandas_dp.privacy.loss import PrivacyLoss

__all__ = ["Charge", "record", "entry_text", "columns_text", "params_text", "STATUSES", "DELTA_SUFFIX"]

STATUSES = ("ok", "failed")
#: Suffix of the companion budget that holds a budget's (or a reservation's) delta.
DELTA_SUFFIX = "#delta"


def entry_text(value: object, what: str, *, limit: int = 2000) -> str:
    """Public text for the ledger: str() of it, with anything SQLite or PostgreSQL cannot store escaped."""
    try:
        text = value if isinstance(value, str) else str(value)
    except Exception:
        raise ParameterError(f"The '{what}' cannot be turned into text.") from None
    text = text.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")
    return text[:limit]


def columns_text(columns: object) -> str:
    if columns is None:
        return ""
    if isinstance(columns, str):
        return entry_text(columns, "columns")
    if not isinstance(columns, (Sequence, np.ndarray, pd.Index)):
        raise ParameterError(f"The 'columns' of a charge must be a sequence of column labels. Got "
                             f"{type(columns).__name__}.")
    return ",".join(entry_text(c, "columns") for c in list(columns))


def _exact_text(value: object) -> str:
    """How the ledger writes a value JSON has no type for: an exact rational as its text (``"200/19"``), else repr."""
    return fraction_text(value) if isinstance(value, Fraction) else repr(value)


def params_text(params: object) -> str:
    if params is None:
        return "{}"
    if not isinstance(params, Mapping):
        raise ParameterError(f"The 'params' of a charge must be a mapping (a dict). Got {type(params).__name__}.")
    try:
        return json.dumps({entry_text(k, "params"): v for k, v in params.items()}, default=_exact_text, sort_keys=True,
                          ensure_ascii=True)
    except (TypeError, ValueError, RecursionError) as err:
        raise ParameterError(f"The 'params' of a charge cannot be recorded as JSON: {err}.") from None


@dataclass(frozen=True)
class Charge:
    """Handle of one recorded charge: where it was recorded, and its ledger row id.

    Attributes
    ----------
    loss : PrivacyLoss
        The loss as the release asked for it.
    ledger_id : int
        The entry id of the charge in the ledger of the budget it was spent on
        (the innermost budget of the chain); for an in-memory budget, its entry
        number.
    entries : tuple
        ``(budget, entry id)`` for every budget of the chain that recorded it.
    ledger_hash : str
        The hash of that entry (SHA-256, hex): an auditor holding it can tell
        whether the entry was later changed or removed.
    ledger_head : str
        The head of that ledger right after this charge, ``"<entries>:<hash>"``
        (a hash chained through every entry of the ledger): ``python -m
        pandas_dp ledger verify LOCATION --head H`` passes on a copy only if it
        still holds this charge and every entry before it. Empty for an
        in-memory budget.
    """

    loss: PrivacyLoss
    ledger_id: int
    entries: tuple[tuple["Budget", int], ...]
    ledger_hash: str = ""
    ledger_head: str = ""

    @property
    def epsilon(self) -> Fraction:
        """The exact epsilon of a pure-DP charge."""
        return self.loss.amount

    def finish(self, status: str) -> bool:
        """Mark the charge ``"ok"`` or ``"failed"`` in every budget it was recorded in.

        Status is informational (it never changes an amount), so a ledger that
        cannot be written at this point does not undo a release that was paid
        for: the status stays ``charged`` and ``False`` is returned.
        """
        if status not in STATUSES:
            raise ParameterError(f"A charge's status must be one of {list(STATUSES)}. Got {safe_repr(status)}.")
        done = True
        for owner, entry_id in self.entries:
            try:
                with owner._store.write() as txn:
                    txn.set_status(entry_id, status, "charged")
            except LedgerError:
                done = False
        return done


def record(chain: list["Budget"], postings: list[Posting],
           reservation: tuple["Budget", str, "PrivacyLoss"] | None = None) -> tuple[list[tuple[int, str]], str]:
    """Post each budget's entry in its store, one transaction per store.

    Returns the (id, hash)s in chain order and the head of the first budget's
    ledger after the charge ("" for an in-memory budget).
    """
    for b in chain:
        b._open()
    stores = [b._store for b in chain]
    if reservation is not None:
        # A reserve entry in another ledger than the reservation's names that ledger: a guarded ledger then knows
        # why the reservation is not among its budgets (a return to one that exists nowhere is refused).
        home = reservation[0]._store
        postings = [p if p.kind != "reserve" or s.key == home.key else
                    replace(p, params=_with_ledger(p.params, getattr(home, "ledger_id", "") or home.display))
                    for p, s in zip(postings, stores)]
    head: list[str] = []

    def work(txns: dict[str, Txn]) -> list[tuple[int, str]]:
        ids: dict[int, tuple[int, str]] = {}
        for key, txn in txns.items():
            mine = [i for i, b in enumerate(chain) if b._store.key == key]
            new = post(stores[mine[0]], txn, [postings[i] for i in mine])
            ids.update(zip(mine, new))
            if reservation is not None and reservation[0]._store.key == key:
                owner, name, own = reservation
                rows: list[tuple[str, str, Fraction, str | None]] = [(name, own.measure, own.amount, owner.name)]
                if own.delta:  # the reservation's delta, charged outright to the owner's companion above
                    rows.append((name + DELTA_SUFFIX, "delta", own.delta, None))
                add_budgets(owner._store, txn, rows)
        written = txns[stores[0].key].written_head
        head[:] = [head_text(written[1], written[2]) if written is not None and stores[0].durable else ""]
        return [ids[i] for i in range(len(chain))]

    return transact(stores, work), head[0]


def _with_ledger(params: str, ledger: str) -> str:
    """A reserve entry's params with the id of the ledger that holds its reservation."""
    found = json.loads(params)
    found["reservation_ledger"] = ledger
    return json.dumps(found, sort_keys=True, ensure_ascii=True)
