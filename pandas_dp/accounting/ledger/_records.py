"""Rows of a ledger, their canonical encoding, and the hash chain that binds them.

A ledger holds three kinds of record:

* ``meta``: the format marker, the ledger's random id, the head of the
  chain of budgets (``budgets``, ``budgets_head``), and the **ledger head**
  (``entries``, ``entries_head``): the number of entries and a hash chained
  through every entry's hash in the order they were written (``head_step``),
  so the head commits to every charge of every budget;
* one **budget row** per budget: its immutable definition (position, name,
  measure, exact total, creation time, the reservation it belongs to if any,
  the previous budget's hash) sealed by ``genesis = H(definition)``, and its
  mutable state: the running total ``spent``, the number of entries and the
  ``head`` (hash of its last entry, or its genesis);
* one **entry row** per charge, reservation, return or close: its content
  (id, budget, position ``seq`` in the budget's chain, time, kind, method,
  columns, parameters, the loss as requested, the measure, the exact signed
  ``amount``, the running total ``spent`` after it) and ``prev`` (the hash of
  the budget's previous entry, or its genesis), sealed by
  ``hash = H(prev, content)``.

``H`` is SHA-256 over a canonical encoding: a JSON array of strings and
integers (ASCII, no spaces) that starts with the format tag and the record
kind. The ``status`` column of an entry (``charged`` -> ``ok``/``failed``,
written after the release) is the one mutable field of an entry and is left
out of its hash on purpose: status never changes an amount, and keeping it out
lets the status update be a plain one-row update. Verification checks that
it is one of the allowed values.

Exact amounts are stored as canonical rational text (``"3/10"``, ``"1"``,
``"-1/4"``); anything else is damage.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Iterable

__all__ = ["FORMAT", "VERSION", "BudgetRow", "EntryRow", "ChainError", "rational_text", "parse_rational",
           "budget_genesis", "entry_hash", "verify_entry", "verify_budget_chain", "verify_budget_list",
           "KINDS", "STATUSES", "head_root", "head_step", "head_text", "parse_head"]

FORMAT = "pandas_dp ledger"
VERSION = "1"
#: Kinds of entry: a release's charge, a reservation (prepaid share), the return of its unused part, and the
#: close of a reservation's own chain.
KINDS = ("charge", "reserve", "return", "close")
STATUSES = ("charged", "ok", "failed", "reserved", "returned", "closed")
_RATIONAL = re.compile(r"-?[0-9]+(/[0-9]+)?")
_HASH = re.compile(r"[0-9a-f]{64}")


class ChainError(Exception):
    """A record does not match its hash, its chain or its running total (the message says which)."""


def rational_text(value: Fraction) -> str:
    """Canonical exact text of a rational: ``"3/10"``, ``"2"``, ``"-1/4"``."""
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def parse_rational(text: object, what: str) -> Fraction:
    """The rational of canonical text ``text`` (ChainError for anything else)."""
    value = _parse(text) if isinstance(text, str) and len(text) <= 2000 else None
    if value is None:
        raise ChainError(f"{what} is not an exact rational in canonical form: {str(text)[:40]!r}")
    return value


@functools.lru_cache(maxsize=4096)
def _parse(text: str) -> Fraction | None:
    if not _RATIONAL.fullmatch(text):
        return None
    value = Fraction(text)
    return value if rational_text(value) == text else None


def _digest(*parts: str | int | None) -> str:
    payload = json.dumps([FORMAT, VERSION, *parts], ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode("ascii")).hexdigest()


@dataclass(frozen=True)
class BudgetRow:
    """One budget: definition (sealed by ``genesis``) and running state (checked against its last entry)."""

    name: str
    position: int
    measure: str
    total: str
    created: str
    parent: str | None
    prev: str
    genesis: str
    spent: str
    entries: int
    head: str

    def definition_hash(self, ledger_id: str) -> str:
        return budget_genesis(ledger_id, self.position, self.name, self.measure, self.total, self.created,
                              self.parent, self.prev)

    def with_state(self, spent: Fraction, entries: int, head: str) -> "BudgetRow":
        return replace(self, spent=rational_text(spent), entries=entries, head=head)


@dataclass(frozen=True)
class EntryRow:
    """One entry of a budget's chain (``status`` is outside the hash)."""

    id: int
    budget: str
    seq: int
    time: str
    kind: str
    method: str
    columns: str
    params: str
    requested: str
    measure: str
    amount: str
    spent: str
    prev: str
    hash: str
    status: str

    def content_hash(self) -> str:
        return entry_hash(self.id, self.budget, self.seq, self.time, self.kind, self.method, self.columns,
                          self.params, self.requested, self.measure, self.amount, self.spent, self.prev)


def budget_genesis(ledger_id: str, position: int, name: str, measure: str, total: str, created: str,
                   parent: str | None, prev: str) -> str:
    """Hash of a budget's definition; also the ``prev`` of its first entry."""
    return _digest("budget", ledger_id, position, name, measure, total, created, parent, prev)


def entry_hash(id_: int, budget: str, seq: int, time: str, kind: str, method: str, columns: str, params: str,
               requested: str, measure: str, amount: str, spent: str, prev: str) -> str:
    """Hash of an entry's content and its predecessor's hash."""
    return _digest("entry", id_, budget, seq, time, kind, method, columns, params, requested, measure, amount,
                   spent, prev)


def ledger_root(ledger_id: str, witness: str | None = None) -> str:
    """The ``prev`` of a ledger's first budget.

    A ledger's witness (``meta["witness"]``) is sealed into it: every budget's
    genesis, hence every entry hash and head, depends on it, so pointing the
    ledger at another witness (or none) breaks its chain of budgets, which
    every open verifies.
    """
    return _digest("ledger", ledger_id) if witness is None else _digest("ledger", ledger_id, "witness", witness)


def head_root(ledger_id: str, witness: str | None = None) -> str:
    """The ledger head's hash before any entry (the witness sealed in, as :func:`ledger_root`)."""
    return _digest("head", ledger_id) if witness is None else _digest("head", ledger_id, "witness", witness)


def head_step(ledger_id: str, position: int, prev: str, entry: str) -> str:
    """The ledger head's hash after entry number ``position`` (1-based, in writing order) of hash ``entry``."""
    return _digest("head", ledger_id, position, prev, entry)


def head_text(count: int, digest: str) -> str:
    """The printed ledger head: ``"<entries>:<hash>"``."""
    return f"{count}:{digest}"


_HEAD = re.compile(r"([0-9]{1,18}):([0-9a-f]{64})")


def parse_head(text: object) -> tuple[int, str] | None:
    """``(entries, hash)`` of a printed head, or None when ``text`` is not one."""
    found = _HEAD.fullmatch(text.strip()) if isinstance(text, str) else None
    return (int(found.group(1)), found.group(2)) if found else None


def verify_entry(entry: EntryRow, budget: BudgetRow, prev_hash: str, prev_spent: Fraction, seq: int,
                 total: Fraction) -> Fraction:
    """Check one entry against its predecessor; return the running total after it."""
    where = f"entry {entry.id} (#{entry.seq} of budget {budget.name!r})"
    if entry.budget != budget.name or entry.seq != seq:
        raise ChainError(f"{where} is out of place: expected entry #{seq} of budget {budget.name!r}")
    if entry.prev != prev_hash:
        raise ChainError(f"{where} does not follow the previous record (prev hash mismatch)")
    if not isinstance(entry.hash, str) or not _HASH.fullmatch(entry.hash) or entry.hash != entry.content_hash():
        raise ChainError(f"{where} does not match its hash (its content was changed)")
    if entry.kind not in KINDS or entry.measure != budget.measure or entry.status not in STATUSES:
        raise ChainError(f"{where} has an unknown kind, status or a measure other than its budget's")
    amount = parse_rational(entry.amount, f"the amount of {where}")
    kind = entry.kind
    if not (amount > 0 if kind in ("charge", "reserve") else amount < 0 if kind == "return" else amount == 0):
        raise ChainError(f"{where} has amount {entry.amount} not allowed for a {kind!r} entry")
    spent = prev_spent + amount
    if entry.spent != rational_text(spent) or spent < 0 or spent > total:
        raise ChainError(f"{where}: running total {str(entry.spent)[:40]} does not equal the previous total plus "
                         f"{entry.amount} within the budget")
    return spent


def verify_budget_chain(ledger_id: str, budget: BudgetRow, entries: Iterable[EntryRow], *,
                        start: tuple[int, str, Fraction, bool] | None = None) -> tuple[int, Fraction]:
    """Check a budget's definition, every entry in order, and its running state; return (entries, spent).

    ``start = (seq, hash, spent, closed)`` verifies only the entries after a
    checkpoint already verified (``entries`` then holds those only).
    """
    check_budget_definition(ledger_id, budget)
    total = parse_rational(budget.total, f"the total of budget {budget.name!r}")
    seq, prev, spent, closed = start if start is not None else (0, budget.genesis, Fraction(0), False)
    for entry in entries:
        if closed:
            raise ChainError(f"budget {budget.name!r} has entries after its close")
        seq += 1
        spent = verify_entry(entry, budget, prev, spent, seq, total)
        prev, closed = entry.hash, entry.kind == "close"
    check_budget_state(budget, seq, spent, prev)
    return seq, spent


def check_budget_definition(ledger_id: str, budget: BudgetRow) -> None:
    """The budget's definition matches its genesis hash and its total is exact."""
    if budget.genesis != budget.definition_hash(ledger_id):
        raise ChainError(f"budget {budget.name!r} does not match its hash (its definition was changed)")
    if parse_rational(budget.total, f"the total of budget {budget.name!r}") <= 0:
        raise ChainError(f"budget {budget.name!r} has a total that is not positive")


def check_budget_state(budget: BudgetRow, entries: int, spent: Fraction, head: str) -> None:
    """The budget's running state equals what its chain ends with."""
    stored = parse_rational(budget.spent, f"the running total of budget {budget.name!r}")
    if budget.entries != entries or budget.head != head or stored != spent:
        raise ChainError(
            f"budget {budget.name!r} records {budget.entries} entries and running total {budget.spent}, but its "
            f"chain has {entries} entries ending at {rational_text(spent)} (entries missing, added or changed)")


def verify_budget_list(ledger_id: str, budgets: list[BudgetRow], count: str, head: str,
                       witness: str | None = None) -> None:
    """The budgets form one chain in creation order, from the root (witness sealed in), to ``meta``'s head."""
    prev = ledger_root(ledger_id, witness)
    for position, budget in enumerate(budgets, start=1):
        if position == 1 and budget.position == 1 and budget.prev != prev:
            raise ChainError(f"the first budget {budget.name!r} does not start from the ledger's root: its witness "
                             f"was changed (the witness it names is sealed into its chain) or the budget was edited")
        if budget.position != position or budget.prev != prev:
            raise ChainError(f"budget {budget.name!r} is out of place in the chain of budgets "
                             f"(a budget row was deleted, added or reordered)")
        check_budget_definition(ledger_id, budget)
        prev = budget.genesis
    if count != str(len(budgets)) or head != prev:
        raise ChainError(f"the ledger records {count} budgets but holds {len(budgets)} (a budget row was deleted "
                         f"or added), or its witness was changed (the witness it names is sealed into its chain)")
