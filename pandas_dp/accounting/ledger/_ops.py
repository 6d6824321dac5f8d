"""Ledger logic written once against :class:`~pandas_dp.accounting.ledger._store.Txn`: create, open, verify, post.

Every write goes through :func:`transact`, which opens one exclusive
transaction per store in a fixed order (the stores' keys, so two processes
charging nested budgets on the same files never deadlock), runs the work,
and commits. :func:`post` appends entries to budgets in one transaction: it
locks their rows, verifies each budget's running state against its last
entry (constant work: one budget row and one entry per budget, whatever the
ledger's length), checks the amounts, then appends and moves the running
totals.
"""

from __future__ import annotations

import json
import uuid
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime, timezone
from fractions import Fraction
from typing import Callable, Iterator, Sequence, TypeVar

from pandas_dp.errors import BudgetError, BudgetExceededError, LedgerError, ParameterError
from pandas_dp.accounting.ledger._records import (FORMAT, VERSION, BudgetRow, ChainError, EntryRow, budget_genesis, check_budget_definition,
                       entry_hash, ledger_root, parse_rational, rational_text, verify_budget_chain,
                       verify_budget_list)
from pandas_dp.accounting.ledger._store import Store, Txn
from pandas_dp.privacy.loss import ZCDP, PrivacyLoss, PureDP

__all__ = ["now", "new_meta", "read_meta", "open_budget", "verify_budget", "verify_ledger", "Posting", "post",
           "transact", "check_remaining", "exceeded_message", "damaged", "loss_of", "LedgerSummary",
           "add_budget", "budget_list"]

T = TypeVar("T")


def now() -> str:
    """The current UTC time as ISO 8601 text (microseconds)."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def damaged(store: Store, why: str) -> LedgerError:
    """The error for a ledger whose records do not verify."""
    return LedgerError(
        f"The ledger {store.display} fails verification: {why}. It was damaged or edited, so the amount it "
        f"records as spent cannot be trusted and nothing was charged. Restore it from a backup (copying the "
        f"file is a complete backup), check it with `python -m pandas_dp ledger verify`, and do not start a "
        f"new ledger for the same data without accounting for what was already released.")


def new_meta() -> dict[str, str]:
    """``meta`` of a new, empty ledger."""
    ledger_id = uuid.uuid4().hex
    return {"format": FORMAT, "version": VERSION, "ledger_id": ledger_id, "created": now(), "budgets": "0",
            "budgets_head": ledger_root(ledger_id)}


def read_meta(store: Store, txn: Txn) -> dict[str, str]:
    """``meta`` of a ledger (LedgerError when the store holds no pandas_dp ledger of this version)."""
    meta = txn.meta()
    if meta.get("format") != FORMAT:
        raise LedgerError(
            f"{store.display} is not a pandas_dp ledger (no ledger format marker). Create a ledger with "
            f"pandas_dp.Ledger.create(...) or `python -m pandas_dp ledger init PATH`, and pass its location.")
    if meta.get("version") != VERSION:
        raise LedgerError(f"The ledger {store.display} has format version {meta.get('version')!r}; this pandas_dp "
                          f"reads version {VERSION!r}. Open it with the pandas_dp version that wrote it.")
    if not isinstance(meta.get("ledger_id"), str) or len(meta["ledger_id"]) != 32:
        raise damaged(store, "its ledger id is missing")
    seen = getattr(store, "ledger_id", None)
    if seen is None:
        store.ledger_id = meta["ledger_id"]  # type: ignore[attr-defined]
    elif seen != meta["ledger_id"]:
        raise LedgerError(
            f"The ledger {store.display} was replaced by another ledger while this process was using it (its "
            f"ledger id changed). Nothing was charged. A ledger that was deleted and created again has forgotten "
            f"what was spent: restore the original from a backup.")
    return meta


def budget_list(store: Store, txn: Txn, meta: dict[str, str]) -> list[BudgetRow]:
    budgets = txn.budgets()
    try:
        verify_budget_list(meta["ledger_id"], budgets, meta.get("budgets", ""), meta.get("budgets_head", ""))
    except ChainError as err:
        raise damaged(store, str(err)) from None
    return budgets


def open_budget(store: Store, name: str, measure: str, total: Fraction, parameter: str, *,
                parent: str | None = None, create: bool = True) -> BudgetRow:
    """The budget row named ``name`` after a full verification of its chain; created when missing.

    Raises
    ------
    ParameterError
        When the budget exists with another measure or total, or is a reservation opened by name.
    LedgerError
        When the ledger or the budget's chain does not verify.
    """
    with store.read() as txn:
        meta = read_meta(store, txn)
        budgets = budget_list(store, txn, meta)
        row = next((b for b in budgets if b.name == name), None)
        if row is not None:
            _same_definition(store, row, measure, total, parameter, parent)
            try:
                verify_budget_chain(meta["ledger_id"], row, txn.entries(name))
            except ChainError as err:
                raise damaged(store, str(err)) from None
            return row
    if not create:
        raise LedgerError(f"The ledger {store.display} has no budget named {name!r}.")
    with store.write() as txn:
        txn.lock_budget_list()
        meta = read_meta(store, txn)
        budgets = budget_list(store, txn, meta)
        row = next((b for b in budgets if b.name == name), None)
        if row is not None:  # another process created it meanwhile (it has no entries yet or they verify)
            _same_definition(store, row, measure, total, parameter, parent)
            return row
        row = add_budget(store, txn, meta, budgets, name, measure, total, parent)
    return row


def add_budget(store: Store, txn: Txn, meta: dict[str, str], budgets: list[BudgetRow], name: str, measure: str,
               total: Fraction, parent: str | None) -> BudgetRow:
    """Append a new budget row to the chain of budgets (in the caller's write transaction)."""
    position = len(budgets) + 1
    created = now()
    prev = meta["budgets_head"]
    total_text = rational_text(total)
    genesis = budget_genesis(meta["ledger_id"], position, name, measure, total_text, created, parent, prev)
    row = BudgetRow(name=name, position=position, measure=measure, total=total_text, created=created,
                    parent=parent, prev=prev, genesis=genesis, spent="0", entries=0, head=genesis)
    txn.insert_budget(row)
    txn.set_meta("budgets", str(position))
    txn.set_meta("budgets_head", genesis)
    meta.update(budgets=str(position), budgets_head=genesis)
    budgets.append(row)
    return row


def _same_definition(store: Store, row: BudgetRow, measure: str, total: Fraction, parameter: str,
                     parent: str | None) -> None:
    if row.parent is not None and parent is None:
        raise ParameterError(
            f"The budget {row.name!r} of the ledger {store.display} is a reservation of budget {row.parent!r}, "
            f"not a budget to open by name. Open {row.parent!r} instead.")
    stored_total = parse_rational(row.total, "total") if isinstance(row.total, str) else None
    if row.measure != measure or stored_total != total:
        stored_param = {"pure": "epsilon", "zcdp": "rho"}.get(row.measure, row.measure)
        shown = float(stored_total) if stored_total is not None else row.total
        raise ParameterError(
            f"The ledger {store.display} already holds a budget named {row.name!r} with total "
            f"{stored_param}={shown!r} ({row.measure}); got {parameter}={float(total)!r} ({measure}). Reopen it "
            f"with the same {stored_param} to resume it, or pass a new name=.")


def verify_budget(store: Store, name: str) -> tuple[BudgetRow, int, Fraction]:
    """Full verification of one budget (its definition, every entry, its running state)."""
    with store.read() as txn:
        meta = read_meta(store, txn)
        row = txn.budget(name)
        if row is None:
            raise damaged(store, f"the budget {name!r} disappeared")
        try:
            count, spent = verify_budget_chain(meta["ledger_id"], row, txn.entries(name))
        except ChainError as err:
            raise damaged(store, str(err)) from None
    return row, count, spent


@dataclass(frozen=True)
class LedgerSummary:
    """What a full verification found."""

    budgets: int
    entries: int
    head: str


def verify_ledger(store: Store) -> LedgerSummary:
    """Verify everything: the chain of budgets, every budget's chain, and the reservations' returns."""
    with store.read() as txn:
        meta = read_meta(store, txn)
        budgets = budget_list(store, txn, meta)
        total_entries = 0
        by_name = {b.name: b for b in budgets}
        spent_of: dict[str, Fraction] = {}
        reservations: list[EntryRow] = []
        try:
            for b in budgets:
                count, spent = verify_budget_chain(meta["ledger_id"], b, _tap(txn.entries(b.name), reservations))
                total_entries += count
                spent_of[b.name] = spent
            _verify_reservations(by_name, spent_of, reservations)
            listed = sum(1 for _ in txn.entries())
        except ChainError as err:
            raise damaged(store, str(err)) from None
        if listed != total_entries:
            raise damaged(store, f"it holds {listed} entries but its budgets' chains account for {total_entries}")
        head = meta["budgets_head"]
    return LedgerSummary(len(budgets), total_entries, head)


def _tap(entries: Iterator[EntryRow], sink: list[EntryRow]) -> Iterator[EntryRow]:
    """Pass entries through, keeping the reservations' reserve and return entries."""
    for e in entries:
        if e.kind in ("reserve", "return"):
            sink.append(e)
        yield e


def _verify_reservations(by_name: dict[str, BudgetRow], spent_of: dict[str, Fraction],
                         rows: list[EntryRow]) -> None:
    """A reserve entry charges exactly its reservation's total; a return gives back exactly what it left."""
    for e in rows:
        try:
            target = json.loads(e.params).get("reservation")
        except (ValueError, AttributeError):
            raise ChainError(f"entry {e.id} ({e.kind}) does not name its reservation") from None
        sub = by_name.get(target) if isinstance(target, str) else None
        if sub is None:
            continue  # a reservation drawn from a budget of another ledger
        own = by_name[e.budget].measure
        reserved_here = loss_of(sub.measure, parse_rational(sub.total, "a reservation total")).charged_as(own).amount
        if e.kind == "reserve" and parse_rational(e.amount, "an amount") != reserved_here:
            raise ChainError(f"entry {e.id} reserves {e.amount} but its reservation {target!r} holds {sub.total}")
        if e.kind == "return":
            used_here = loss_of(sub.measure, spent_of[sub.name]).charged_as(own).amount
            if sub.head == sub.genesis or parse_rational(e.amount, "an amount") != used_here - reserved_here:
                raise ChainError(f"entry {e.id} returns {e.amount}, which is not what reservation {target!r} "
                                 f"left unused")


def loss_of(measure: str, amount: Fraction) -> "PrivacyLoss":
    """The privacy loss of ``amount`` in ``measure`` (any amount, zero included)."""
    try:
        cls = {"pure": PureDP, "zcdp": ZCDP}[measure]
    except KeyError:
        raise ChainError(f"unknown measure {measure!r}") from None
    return cls(amount)


def check_state(store: Store, ledger_id: str, row: BudgetRow, last: EntryRow | None) -> Fraction:
    """Constant-time check of a budget's running state against its last entry; returns the exact spent."""
    try:
        check_budget_definition(ledger_id, row)
        spent = parse_rational(row.spent, f"the running total of budget {row.name!r}")
        if last is None:
            ok = row.entries == 0 and row.head == row.genesis and spent == 0
        else:
            ok = (last.budget == row.name and last.seq == row.entries and last.hash == row.head
                  and last.hash == last.content_hash() and last.spent == row.spent)
        if not ok:
            raise ChainError(f"the running state of budget {row.name!r} does not match its last entry")
    except ChainError as err:
        raise damaged(store, str(err)) from None
    return spent


@dataclass(frozen=True)
class Posting:
    """One entry to append to one budget: the amount is exact, signed, in that budget's measure."""

    budget: str
    label: str
    kind: str
    amount: Fraction
    parameter: str
    requested: str
    requested_text: str
    method: str
    columns: str
    params: str
    status: str
    #: The budget's genesis hash when its process opened it ("" to skip): a budget deleted and made again differs.
    genesis: str = ""


def exceeded_message(p: Posting, total: Fraction, spent: Fraction) -> str:
    """The BudgetExceededError message (the same from ``check`` and ``spend``)."""
    remaining = total - spent
    asked = f"{p.parameter}={float(p.amount)!r}"
    if p.requested_text:
        asked += f" ({p.requested_text})"
    return (f"Requested {asked} but {p.label} has only remaining={float(remaining)!r} of "
            f"{p.parameter}={float(total)!r} (spent {float(spent)!r}). Nothing was charged. Lower "
            f"{p.parameter} or open a larger budget.")


def check_remaining(store: Store, txn: Txn, ledger_id: str, postings: Sequence[Posting], *,
                    lock: bool) -> dict[str, tuple[BudgetRow, Fraction]]:
    """Verify each budget's state and that every positive amount fits; return (row, spent) by name."""
    names = [p.budget for p in postings]
    rows = txn.lock_budgets(names) if lock else {n: txn.budget(n) for n in sorted(set(names))}
    state: dict[str, tuple[BudgetRow, Fraction]] = {}
    for name in sorted(set(names)):
        row = rows.get(name)
        if row is None:
            raise damaged(store, f"the budget {name!r} disappeared")
        expected = {p.genesis for p in postings if p.budget == name and p.genesis}
        if expected and expected != {row.genesis}:
            raise LedgerError(
                f"The budget {name!r} of the ledger {store.display} is not the one this process opened: it was "
                f"deleted and made again, forgetting what was spent. Nothing was charged. Restore the ledger from "
                f"a backup.")
        last = txn.last_entry(name)
        state[name] = (row, check_state(store, ledger_id, row, last))
        if last is not None and last.kind == "close" and any(
                p.budget == name and not (p.kind == "charge" and p.amount == 0) for p in postings):
            raise BudgetError(f"The reservation {name!r} is closed: its unused part went back to its budget. "
                              f"Make a new reservation.")
    added: dict[str, Fraction] = {}
    for p in postings:
        row, spent = state[p.budget]
        total = parse_rational(row.total, "a budget total")
        already = spent + added.get(p.budget, Fraction(0))
        if p.amount > 0 and already + p.amount > total:
            raise BudgetExceededError(exceeded_message(p, total, already))
        added[p.budget] = added.get(p.budget, Fraction(0)) + p.amount
    return state


def post(store: Store, txn: Txn, postings: Sequence[Posting]) -> list[tuple[int, str]]:
    """Check and append ``postings`` in the open write transaction ``txn``; return the new (entry id, hash)s."""
    meta = read_meta(store, txn)
    state = check_remaining(store, txn, meta["ledger_id"], postings, lock=True)
    current = {name: (row, spent) for name, (row, spent) in state.items()}
    stamp = now()
    ids: list[tuple[int, str]] = []
    for p in postings:
        row, spent = current[p.budget]
        after = spent + p.amount
        entry_id = txn.new_entry_id()
        seq = row.entries + 1
        amount, spent_text = rational_text(p.amount), rational_text(after)
        digest = entry_hash(entry_id, p.budget, seq, stamp, p.kind, p.method, p.columns, p.params, p.requested,
                            row.measure, amount, spent_text, row.head)
        txn.insert_entry(EntryRow(id=entry_id, budget=p.budget, seq=seq, time=stamp, kind=p.kind, method=p.method,
                                  columns=p.columns, params=p.params, requested=p.requested, measure=row.measure,
                                  amount=amount, spent=spent_text, prev=row.head, hash=digest, status=p.status))
        row = row.with_state(after, seq, digest)
        txn.update_budget(row)
        current[p.budget] = (row, after)
        ids.append((entry_id, digest))
    return ids


def transact(stores: Sequence[Store], work: Callable[[dict[str, Txn]], T]) -> T:
    """Run ``work`` with one write transaction per distinct store (opened in key order), then commit all.

    Stores are committed one after the other: if a later commit fails, the
    earlier ones stay (a charge recorded without its release: conservative).
    """
    unique = {s.key: s for s in stores}
    with ExitStack() as stack:
        txns = {key: stack.enter_context(unique[key].write()) for key in sorted(unique)}
        return work(txns)
