"""Ledger logic written once against :class:`~pandas_dp.accounting.ledger._store.Txn`: create, open, verify, post.

Every write goes through :func:`transact`, which opens one exclusive
transaction per store in a fixed order (the stores' keys, so two processes
charging nested budgets on the same files never deadlock), runs the work,
and commits. :func:`post` appends entries to budgets in one transaction: it
locks their rows, verifies each budget's running state against its last
entry (constant work: one budget row and one entry per budget, whatever the
ledger's length), checks the amounts, then appends and moves the running
totals. Before it appends, and on every open and read, :func:`follow_head`
follows the entries written since this process last looked (writing order) to
the ledger head: the budget rows must be the state their chains have there,
and the witness's head must lie on that chain.
"""

from __future__ import annotations

import json
import threading
import uuid
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass
from datetime import datetime, timezone
from fractions import Fraction
from typing import Any, Callable, Iterator, Sequence, TypeVar

from pandas_dp.errors import BudgetError, BudgetExceededError, LedgerError, ParameterError
from pandas_dp.accounting.ledger._records import (FORMAT, VERSION, BudgetRow, ChainError, EntryRow, budget_genesis,
                                                 check_budget_definition, check_budget_state, entry_hash, head_root,
                                                 head_step, head_text, verify_entry,
                                                 ledger_root, parse_head, parse_rational, rational_text,
                                                 verify_budget_chain, verify_budget_list)
from pandas_dp.accounting.ledger._store import Store, Txn
from pandas_dp.privacy.loss import ZCDP, PrivacyLoss, PureDP
from pandas_dp.accounting.ledger import _checkpoint as checkpoint
from pandas_dp.accounting.ledger._witness import witness_of

__all__ = ["now", "new_meta", "read_meta", "open_budget", "verify_budget", "verify_ledger", "Posting", "post",
           "transact", "check_remaining", "exceeded_message", "damaged", "loss_of", "LedgerSummary",
           "add_budgets", "budget_list", "note_head", "seen_head", "NO_BLIND_RESTORE", "check_witness",
           "follow_head"]

T = TypeVar("T")


def now() -> str:
    """The current UTC time as ISO 8601 text (microseconds)."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


#: What to do with a lost or damaged ledger: never put back an older copy blindly (it forgets the charges made
#: after it and the budget would be spent again).
NO_BLIND_RESTORE = (
    "Do not put back an older copy blindly: a copy older than the last charge forgets charges, and the budget "
    "would be spent again. Take the most recent copy and check that it holds every charge made: `python -m "
    "pandas_dp ledger verify LOCATION --head H` with the last head H a release printed (a result's "
    "params['ledger_head'], a manifest's 'ledger_head'), or `--manifest manifest.json`")


def damaged(store: Store, why: str) -> LedgerError:
    """The error for a ledger whose records do not verify."""
    return LedgerError(
        f"The ledger {store.display} fails verification: {why}. It was damaged or edited, so the amount it "
        f"records as spent cannot be trusted and nothing was charged. {NO_BLIND_RESTORE}; do not start a new "
        f"ledger for the same data without accounting for what was already released.")


#: The highest ledger head this process has seen, by ledger id: a ledger whose head is lower was rolled back.
_SEEN: dict[str, tuple[int, str]] = {}
_SEEN_LOCK = threading.Lock()


def seen_head(ledger_id: str) -> tuple[int, str] | None:
    """The highest ``(entries, head hash)`` this process has seen for the ledger ``ledger_id``."""
    with _SEEN_LOCK:
        return _SEEN.get(ledger_id)


_NOW = object()


def note_head(store: Store, ledger_id: str, count: int | None, digest: str | None, *, check: bool = True,
              against: Any = _NOW) -> None:
    """Record a ledger head seen by this process; LedgerError when it is below (or beside) one seen before.

    ``count is None`` is a ledger without a head (written before heads existed): refused once a head was seen.
    ``check=False`` only raises the mark (a head this process just committed: another thread may have committed
    and noted a later one meanwhile). ``against`` checks against a mark read earlier (:func:`seen_head`) instead
    of the current one: a head read from a snapshot taken after that mark was read must not be below it, but other
    threads may have committed and noted later heads since the snapshot was taken.
    """
    if not store.durable:
        return  # an in-memory ledger cannot be restored from a copy
    with _SEEN_LOCK:
        current = _SEEN.get(ledger_id)
        seen = current if against is _NOW else against
        below = seen is not None and (count is None or count < seen[0] or (count == seen[0] and digest != seen[1]))
        if check and seen is not None and below:
            now_at = "no head" if count is None else f"head {head_text(count, digest or '')}"
            raise LedgerError(
                f"The ledger {store.display} was rolled back: this process already saw it at head "
                f"{head_text(*seen)} ({seen[0]} entries) and it now has {now_at}. An older copy was put back or "
                f"its chain was rewritten, which forgets charges. Nothing was charged. Find the copy that holds "
                f"every charge: `python -m pandas_dp ledger verify LOCATION --head {head_text(*seen)}` passes "
                f"on it.")
        if count is not None and digest is not None and (current is None or count > current[0]):
            _SEEN[ledger_id] = (count, digest)


def check_witness(store: Store, meta: dict[str, str]) -> tuple[int, str] | None:
    """Refuse a ledger below the highest head its witness (if it names one) holds; return that head (or None)."""
    witness = witness_of(meta, store)
    if witness is None:
        return None
    for attempt in (meta, None):
        # The witness first, then (second attempt) a snapshot taken after it: heads it holds were committed.
        top = witness.highest(meta["ledger_id"])
        current = attempt if attempt is not None else _fresh_meta(store)
        head = _meta_head(store, current)
        if head is None:
            raise damaged(store, "it names a witness but records no ledger head")
        try:
            witness.check(store.display, meta["ledger_id"], *head, top=top)
            return top
        except LedgerError:
            if attempt is None or current.get("ledger_id") != meta["ledger_id"]:
                raise
    return None  # pragma: no cover - the second attempt returns or raises


def _meta_head(store: Store, meta: dict[str, str]) -> tuple[int, str] | None:
    """``(entries, head hash)`` recorded in ``meta``; None for a ledger written before heads existed."""
    if "entries" not in meta and "entries_head" not in meta:
        return None
    found = parse_head(f"{meta.get('entries')}:{meta.get('entries_head')}")
    if found is None:
        raise damaged(store, "its ledger head (entries, entries_head) is garbled")
    return found


def new_meta(witness: str | None = None) -> dict[str, str]:
    """``meta`` of a new, empty ledger (its witness, if any, sealed into both roots)."""
    ledger_id = uuid.uuid4().hex
    meta = {"format": FORMAT, "version": VERSION, "ledger_id": ledger_id, "created": now(), "budgets": "0",
            "budgets_head": ledger_root(ledger_id, witness), "entries": "0",
            "entries_head": head_root(ledger_id, witness)}
    if witness is not None:
        meta["witness"] = witness
    return meta


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
            f"what was spent. {NO_BLIND_RESTORE}.")
    _note_or_confirm(store, meta)
    return meta


def _note_or_confirm(store: Store, meta: dict[str, str]) -> None:
    """Note the head ``meta`` records; an apparent rollback is confirmed on a fresh snapshot before refusing.

    A read snapshot (PostgreSQL's REPEATABLE READ) can predate a commit another
    thread or process made, and noted, while it was being taken: only a fresh
    read that is still below proves a rollback. The fresh read is checked against
    the mark as it was before it was taken (every head noted by then was
    committed by then); other threads may commit and note later heads while it
    runs, and those prove nothing about it.
    """
    head = _meta_head(store, meta)
    try:
        note_head(store, meta["ledger_id"], *(head if head is not None else (None, None)))
    except LedgerError:
        before = seen_head(meta["ledger_id"])
        fresh = _fresh_meta(store)
        if fresh.get("ledger_id") != meta["ledger_id"]:
            raise
        head = _meta_head(store, fresh)
        note_head(store, meta["ledger_id"], *(head if head is not None else (None, None)), against=before)


def _fresh_meta(store: Store) -> dict[str, str]:
    """``meta`` read in a new transaction (a snapshot taken now)."""
    with store.read() as txn:
        return txn.meta()


@dataclass
class _Point:
    """How far this process followed a ledger's entries in writing order, and what every budget's chain was there.

    ``states`` holds each budget's (entries, last hash, spent, closed) at ledger head ``count``; ``recent`` the
    ledger head hash at the last :data:`RECENT` positions (to check a witness head a little behind).
    """

    count: int
    digest: str
    last_id: int
    defs: dict[str, tuple[BudgetRow, Fraction]]
    states: dict[str, tuple[int, str, Fraction, bool]]
    recent: dict[int, str]


#: The point each ledger was followed to by this process, by (store key, ledger id).
_POINTS: dict[tuple[str, str], _Point] = {}
_POINTS_LOCK = threading.RLock()
#: Ledger head hashes kept for the positions last followed.
RECENT = 4096


def follow_head(store: Store, txn: Txn, meta: dict[str, str], rows: Sequence[BudgetRow] = (),
                marks: Sequence[tuple[tuple[int, str] | None, str]] = (), *, keep: bool = True) -> None:
    """Check that ``rows`` hold the state the ledger's own chain gives them at its head; O(entries added since).

    The entries written since this process last followed the ledger (all of them the first time) are read in
    writing order and verified against each budget's chain, and the ledger head is chained through them: it
    must reach ``meta``'s head exactly, with no entry beyond it. Each of ``marks`` (a head and who recorded it:
    the witness, an auditor) and the highest head this process has seen must lie on that chain: the entry at
    its number gives its hash (a longer ledger that does not extend them is an older copy charged past them).
    Then each budget row must equal its chain's state at the head: a budget whose last entries were deleted
    and whose row was set back to an earlier entry is refused, whatever ``meta`` says.

    Nothing is checked for an in-memory ledger, a ledger written before heads existed (its next charge gives it
    one), or a snapshot older than the point this process reached (:func:`read_meta` confirmed it is no
    rollback; the charge itself checks at the locked head). ``keep=False`` follows a copy and keeps nothing (a
    transaction that already wrote entries, which may still roll back).
    """
    head = _meta_head(store, meta) if store.durable else None
    if head is None:
        return
    ledger_id = meta["ledger_id"]
    root = head_root(ledger_id, meta.get("witness"))
    wanted: dict[int, list[tuple[str, str]]] = {}
    for mark, who in [*marks, (seen_head(ledger_id), "this process")]:
        if mark is not None and mark[0] <= head[0]:
            wanted.setdefault(mark[0], []).append((mark[1], who))
    key = (store.key, ledger_id)
    with _POINTS_LOCK:
        point = _POINTS.get(key)
        if point is not None and point.count > head[0]:
            return
        if point is not None and any(n < point.count and n not in point.recent and n > 0 for n in wanted):
            point = None  # a head too far behind to check from here: follow the ledger from its start again
        try:
            if point is not None:
                _check_anchor(store, txn, point)
                if not keep:
                    point = _Point(point.count, point.digest, point.last_id, dict(point.defs), dict(point.states),
                                   dict(point.recent))
            if point is None:
                found = checkpoint.load_point(ledger_id)
                if found is not None and found[0] <= head[0] and all(n == 0 or n >= found[0] for n in wanted):
                    # The point an earlier process of this user followed the ledger to (ledgers of DURABLE_MIN
                    # entries or more): its last entry must still be there, then only what follows is read.
                    point = _Point(found[0], found[1], found[2], {}, dict(found[3]), {found[0]: found[1]})
                    _check_anchor(store, txn, point)
                else:
                    point = _Point(0, root, 0, {}, {}, {0: root})
                if keep:
                    _POINTS[key] = point
            for n, marked in wanted.items():
                if n <= point.count:
                    _check_mark(store, n, point.recent.get(n, root if n == 0 else ""), marked)
            start = point.count
            _walk(store, txn, ledger_id, point, head[0], wanted)
            for n in range(max(1, start - RECENT + 1), point.count - RECENT + 1):
                point.recent.pop(n, None)
            if point.digest != head[1]:
                raise ChainError(f"its ledger head records {head[0]} entries ending at another hash than its "
                                 f"entries chain to (entries were deleted, added or changed since)")
            if txn.entries_from(point.last_id, 1):
                raise ChainError(f"it holds entries beyond the {head[0]} its ledger head records")
            for row in rows:
                _check_at_head(row, point)
        except ChainError as err:
            raise damaged(store, str(err)) from None


def _keep_point(store: Store, ledger_id: str) -> None:
    """Save the point this process followed the ledger to, for its later processes (long ledgers only)."""
    with _POINTS_LOCK:
        point = _POINTS.get((store.key, ledger_id))
        if point is None or point.count < checkpoint.DURABLE_MIN:
            return
        states = dict(point.states)
        where = (point.count, point.digest, point.last_id)
    checkpoint.save_point(ledger_id, *where, states)


def _check_anchor(store: Store, txn: Txn, point: _Point) -> None:
    """The last entry this process followed is still there, unchanged (else the ledger was rolled back)."""
    if point.last_id == 0:
        return
    entry = txn.entry(point.last_id)
    state = point.states.get(entry.budget) if entry is not None else None
    if entry is None or state is None or entry.hash != state[1]:
        raise LedgerError(
            f"The ledger {store.display} was rolled back: its entry number {point.count} (id {point.last_id}), "
            f"which this process verified at head {head_text(point.count, point.digest)}, is gone or changed. An "
            f"older copy was put back or its chain was rewritten, which forgets charges. Nothing was charged. Find "
            f"the copy that passes `python -m pandas_dp ledger verify LOCATION --head "
            f"{head_text(point.count, point.digest)}`.")


def _check_mark(store: Store, n: int, digest: str, marked: list[tuple[str, str]]) -> None:
    """LedgerError unless the ledger's head at entry number ``n`` is every head recorded there."""
    for expected, who in marked:
        if digest != expected:
            raise LedgerError(
                f"The ledger {store.display} was rolled back: it does not pass through head "
                f"{head_text(n, expected)}, which {who} recorded; its entry number {n} has another history. An older "
                f"copy was put back (and charged past that head) or its chain was rewritten, which forgets charges. "
                f"Nothing was charged. Find the copy that passes `python -m pandas_dp ledger verify LOCATION --head "
                f"{head_text(n, expected)}`.")


def _walk(store: Store, txn: Txn, ledger_id: str, point: _Point, count: int,
          wanted: dict[int, list[tuple[str, str]]]) -> None:
    """Follow ``point`` (in place) to ``count`` entries; ChainError or LedgerError naming the first that fails.

    On an error ``point`` is put back where it was (what this process verified stays its reference).
    """
    where = (point.count, point.digest, point.last_id)
    old_states: dict[str, tuple[int, str, Fraction, bool] | None] = {}
    old_defs: set[str] = set()
    try:
        _walk_on(store, txn, ledger_id, point, count, wanted, old_states, old_defs)
    except BaseException:
        for n in range(where[0] + 1, point.count + 1):
            point.recent.pop(n, None)
        point.count, point.digest, point.last_id = where
        for name, state in old_states.items():
            if state is None:
                point.states.pop(name, None)
            else:
                point.states[name] = state
        for name in old_defs:
            point.defs.pop(name, None)
        raise


def _walk_on(store: Store, txn: Txn, ledger_id: str, point: _Point, count: int,
             wanted: dict[int, list[tuple[str, str]]], old_states: dict[str, tuple[int, str, Fraction, bool] | None],
             old_defs: set[str]) -> None:
    while point.count < count:
        chunk = txn.entries_from(point.last_id, min(VERIFY_CHUNK, count - point.count))
        if not chunk:
            raise ChainError(f"it holds {point.count} entries but its ledger head records {count} (entries were "
                             f"deleted)")
        for e in chunk:
            found = point.defs.get(e.budget)
            if found is None:
                row = txn.budget(e.budget)
                if row is None:
                    raise ChainError(f"entry {e.id} belongs to no budget of the ledger (a budget row was deleted)")
                check_budget_definition(ledger_id, row)
                found = point.defs[e.budget] = (row, parse_rational(row.total, f"the total of budget {row.name!r}"))
                old_defs.add(e.budget)
            row, total = found
            seq, prev, spent, closed = point.states.get(e.budget) or (0, row.genesis, Fraction(0), False)
            if closed:
                raise ChainError(f"budget {row.name!r} has entries after its close")
            spent = verify_entry(e, row, prev, spent, seq + 1, total)
            if e.budget not in old_states:
                old_states[e.budget] = point.states.get(e.budget)
            point.states[e.budget] = (seq + 1, e.hash, spent, e.kind == "close")
            point.count += 1
            point.digest = head_step(ledger_id, point.count, point.digest, e.hash)
            point.last_id = e.id
            point.recent[point.count] = point.digest
            if point.count in wanted:
                _check_mark(store, point.count, point.digest, wanted[point.count])


def _check_at_head(row: BudgetRow, point: _Point) -> None:
    """The budget row holds the state its chain has at the ledger head ``point`` (ChainError otherwise)."""
    seq, digest, spent, _ = point.states.get(row.name) or (0, row.genesis, Fraction(0), False)
    if row.entries != seq or row.head != digest or row.spent != rational_text(spent):
        raise ChainError(
            f"the budget {row.name!r} records {row.entries} entries and running total {str(row.spent)[:40]}, but the "
            f"ledger's chain of entries gives it {seq} entries and {rational_text(spent)} at the ledger head "
            f"({point.count} entries): entries of it were deleted or its row was set back")


def budget_list(store: Store, txn: Txn, meta: dict[str, str]) -> list[BudgetRow]:
    budgets = txn.budgets()
    try:
        verify_budget_list(meta["ledger_id"], budgets, meta.get("budgets", ""), meta.get("budgets_head", ""),
                           meta.get("witness"))
    except ChainError as err:
        raise damaged(store, str(err)) from None
    return budgets


def add_budgets(store: Store, txn: Txn, rows: Sequence[tuple[str, str, Fraction, str | None]], *,
                existing_ok: bool = False) -> list[BudgetRow]:
    """Append budgets ``(name, measure, total, parent)`` to the chain of budgets, in the caller's write transaction.

    On a guarded ledger the server's function does it: it locks the chain of budgets (an analyst cannot) and
    returns a budget another session made meanwhile. Otherwise the chain is locked first, then ``meta`` and the
    budget rows are read: read before the lock, ``meta`` could predate another process's new budget that the
    rows read after it hold (READ COMMITTED on PostgreSQL), a mismatch refused as damage. ``existing_ok``
    returns a budget of that name another process made meanwhile instead of appending one.
    """
    if txn.guarded:
        return [txn.add_budget_guarded(store, name, measure, rational_text(total), parent)
                for name, measure, total, parent in rows]
    txn.lock_budget_list()
    meta = read_meta(store, txn)
    budgets = budget_list(store, txn, meta)
    out = []
    for row in rows:
        found = next((b for b in budgets if b.name == row[0]), None) if existing_ok else None
        out.append(found if found is not None else _append_budget(store, txn, meta, budgets, *row))
    return out


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
        top = check_witness(store, meta)
        budgets = budget_list(store, txn, meta)
        row = next((b for b in budgets if b.name == name), None)
        if row is not None:
            _same_definition(store, row, measure, total, parameter, parent)
            _verify_from_checkpoint(store, txn, meta["ledger_id"], row)
        follow_head(store, txn, meta, [row] if row is not None else [], [(top, "its witness")])
        _keep_point(store, meta["ledger_id"])
        if row is not None:
            return row
    if not create:
        raise LedgerError(f"The ledger {store.display} has no budget named {name!r}.")
    with store.write() as txn:
        # Another process may have created it meanwhile (it has no entries yet or they verify).
        row = add_budgets(store, txn, [(name, measure, total, parent)], existing_ok=True)[0]
        _same_definition(store, row, measure, total, parameter, parent)
    return row


#: The last entry of each budget this process verified in full: (seq, hash, spent, closed) by (store, ledger id,
#: genesis). Opening the budget again verifies only the entries after it (constant work when nothing was added).
_CHECKPOINTS: dict[tuple[str, str, str], tuple[int, str, Fraction, bool]] = {}
_CHECKPOINTS_LOCK = threading.Lock()


def _verify_from_checkpoint(store: Store, txn: Txn, ledger_id: str, row: BudgetRow) -> None:
    """Verify a budget's chain when it is opened: from a checkpoint if there is one, else in full.

    The checkpoint is this process's (the point it last verified the budget
    to) or, the first time a process sees the budget, the durable one this
    user's earlier processes kept (:mod:`~pandas_dp.accounting.ledger._checkpoint`,
    budgets of at least ``DURABLE_MIN`` entries). The entries up to a checkpoint
    were verified before; the one at the checkpoint must still be there with
    the same hash, content and running total (a chain rewritten or cut below it
    fails), and every entry after it is verified in order. A full verification
    is always a call away (``Budget.verify``, ``Ledger.verify``, ``ledger verify``).
    """
    key = (store.key, ledger_id, row.genesis)
    with _CHECKPOINTS_LOCK:
        start = _CHECKPOINTS.get(key)
    who = "this process"
    if start is None and store.durable:
        found = checkpoint.load(ledger_id, row.genesis)
        if found is not None:
            start = (*found, False)
            who = f"an earlier process of this user (checkpoint folder {str(checkpoint.folder())!r})"
    try:
        if start is not None and start[0] > 0:
            anchor = next(iter(txn.entries_after(row.name, start[0] - 1)), None)
            if row.entries < start[0] or anchor is None or anchor.seq != start[0] or anchor.hash != start[1]:
                raise ChainError(f"the entry #{start[0]} of budget {row.name!r}, which {who} verified, is "
                                 f"gone or changed (the ledger was rolled back or rewritten)")
            if anchor.content_hash() != anchor.hash or anchor.spent != rational_text(start[2]):
                raise ChainError(f"entry {anchor.id} (#{anchor.seq} of budget {row.name!r}) does not match its hash "
                                 f"(its content was changed)")
            start = (start[0], start[1], start[2], anchor.kind == "close")
            count, spent = verify_budget_chain(ledger_id, row, txn.entries_after(row.name, start[0]), start=start)
        else:
            count, spent = verify_budget_chain(ledger_id, row, txn.entries(row.name))
    except ChainError as err:
        raise damaged(store, str(err)) from None
    if store.durable:
        with _CHECKPOINTS_LOCK:
            _CHECKPOINTS[key] = (count, row.head, spent, False)
        checkpoint.save(ledger_id, row.genesis, count, row.head, spent)


def _append_budget(store: Store, txn: Txn, meta: dict[str, str], budgets: list[BudgetRow], name: str,
                   measure: str, total: Fraction, parent: str | None) -> BudgetRow:
    """Append a new budget row to the locked chain of budgets (:func:`add_budgets`, unguarded)."""
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
    """What a full verification found.

    Attributes
    ----------
    budgets, entries : int
        Number of budgets and of entries.
    head : str
        The ledger head, ``"<entries>:<hash>"``: a hash chained through every
        entry in the order they were written. Keep it: a later copy that does
        not pass ``ledger verify --head`` with it lost or changed entries.
    budgets_head : str
        The head hash of the chain of budget definitions.
    """

    budgets: int
    entries: int
    head: str
    budgets_head: str = ""


def verify_ledger(store: Store, heads: Sequence[str] = ()) -> LedgerSummary:
    """Verify everything: the chain of budgets, every budget's chain, the reservations' returns, the ledger head.

    Each of ``heads`` (printed heads ``"<entries>:<hash>"``) must be a head the
    ledger passed through: its entries are all still there, unchanged, in order.
    """
    wanted: dict[int, set[str]] = {}
    for text in heads:
        found = parse_head(text)
        if found is None:
            raise LedgerError(f"{str(text)[:80]!r} is not a ledger head. A head reads '<entries>:<64 hex digits>', "
                              f"as `python -m pandas_dp ledger verify` prints it.")
        wanted.setdefault(found[0], set()).add(found[1])
    with store.read() as txn:
        meta = read_meta(store, txn)
        budgets = budget_list(store, txn, meta)
        recorded = _meta_head(store, meta)
    if recorded is not None:
        # The witness's highest head and this process's must lie on the chain too (a longer ledger that does not
        # pass through them is an older copy charged past them); a witness ahead is left to check_witness below.
        witness = witness_of(meta, store)
        marks: dict[int, list[tuple[str, str]]] = {}
        for mark, who in ((witness.highest(meta["ledger_id"]) if witness is not None else None, "its witness"),
                          (seen_head(meta["ledger_id"]), "this process")):
            if mark is not None and mark[0] <= recorded[0]:
                marks.setdefault(mark[0], []).append((mark[1], who))
        listed, digest = _verify_in_chunks(store, meta, budgets, recorded[0], wanted, marks)
        if (listed, digest) != recorded:
            raise damaged(store, f"its ledger head records {recorded[0]} entries but it holds {listed}, or the "
                                 f"entries differ from those the head was chained through")
        check_witness(store, meta)
        beyond = [n for n in wanted if n > listed]
        if beyond:
            raise LedgerError(_not_passed(store, beyond[0], sorted(wanted[beyond[0]])[0], "dropped"))
        note_head(store, meta["ledger_id"], listed, digest, check=False)  # read_meta checked the snapshot
        return LedgerSummary(len(budgets), listed, head_text(listed, digest), meta["budgets_head"])
    with store.read() as txn:  # a ledger written before heads existed: in one snapshot
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
        except ChainError as err:
            raise damaged(store, str(err)) from None
        listed, digest = 0, head_root(meta["ledger_id"], meta.get("witness"))
        for e in txn.entries():
            listed += 1
            digest = head_step(meta["ledger_id"], listed, digest, e.hash)
            if listed in wanted and wanted[listed] != {digest}:
                raise LedgerError(_not_passed(store, listed, sorted(wanted[listed] - {digest})[0], "changed"))
        if listed != total_entries:
            raise damaged(store, f"it holds {listed} entries but its budgets' chains account for {total_entries}")
        recorded = _meta_head(store, meta)
        if recorded is not None and recorded != (listed, digest):
            raise damaged(store, f"its ledger head records {recorded[0]} entries but it holds {listed}, or the "
                                 f"entries differ from those the head was chained through")
        check_witness(store, meta)
        beyond = [n for n in wanted if n > listed]
        if beyond:
            raise LedgerError(_not_passed(store, beyond[0], sorted(wanted[beyond[0]])[0], "dropped"))
    return LedgerSummary(len(budgets), total_entries, head_text(listed, digest), meta["budgets_head"])


#: Entries read per transaction by :func:`verify_ledger`: a charge waits for one chunk, never the whole ledger.
VERIFY_CHUNK = 2_000


def _verify_in_chunks(store: Store, meta: dict[str, str], budgets: list[BudgetRow], count: int,
                      wanted: dict[int, set[str]],
                      marks: dict[int, list[tuple[str, str]]] | None = None) -> tuple[int, str]:
    """Verify the first ``count`` entries (those ``meta``'s head covers) by id, one short read per chunk.

    Entries are append-only and their ids follow the order they were written,
    so the entries a snapshot's head covers are the ``count`` first by id,
    whatever is appended meanwhile; ``budgets`` (read with ``meta``) hold the
    running state those entries must end at. Only ``status``, which is outside
    the hashes, can change between chunks. Returns (entries read, head hash).
    """
    ledger_id = meta["ledger_id"]
    by_name = {b.name: b for b in budgets}
    state = {b.name: (0, b.genesis, Fraction(0), False) for b in budgets}
    reservations: list[EntryRow] = []
    listed, digest, after = 0, head_root(ledger_id, meta.get("witness")), 0
    try:
        totals = {b.name: parse_rational(b.total, f"the total of budget {b.name!r}") for b in budgets}
        while listed < count:
            with store.read() as txn:
                chunk = txn.entries_from(after, min(VERIFY_CHUNK, count - listed))
            if not chunk:
                break
            for e in chunk:
                b = by_name.get(e.budget)
                if b is None:
                    raise ChainError(f"entry {e.id} belongs to no budget of the ledger (a budget row was deleted)")
                seq, prev, spent, closed = state[e.budget]
                if closed:
                    raise ChainError(f"budget {b.name!r} has entries after its close")
                spent = verify_entry(e, b, prev, spent, seq + 1, totals[b.name])
                state[e.budget] = (seq + 1, e.hash, spent, e.kind == "close")
                if e.kind in ("reserve", "return"):
                    reservations.append(e)
                listed += 1
                digest = head_step(ledger_id, listed, digest, e.hash)
                if listed in wanted and wanted[listed] != {digest}:
                    raise LedgerError(_not_passed(store, listed, sorted(wanted[listed] - {digest})[0], "changed"))
                if marks and listed in marks:
                    _check_mark(store, listed, digest, marks[listed])
            after = chunk[-1].id
        for b in budgets:
            seq, prev, spent, _ = state[b.name]
            check_budget_state(b, seq, spent, prev)
        _verify_reservations(by_name, {name: st[2] for name, st in state.items()}, reservations)
    except ChainError as err:
        raise damaged(store, str(err)) from None
    return listed, digest


def _not_passed(store: Store, count: int, digest: str, how: str) -> str:
    why = ("it holds fewer entries: an older copy, or a chain rolled back" if how == "dropped"
           else "it holds another history: a rewritten chain, or another ledger")
    return (f"The ledger {store.display} does not hold head {head_text(count, digest)}: entries up to number "
            f"{count} were {how} since that head was printed ({why}). The amount it records as spent can be lower "
            f"than what was released. {NO_BLIND_RESTORE}.")


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
    if not lock:  # a write follows the head in post, once it holds the ledger head's lock
        meta = txn.meta()
        top = check_witness(store, meta) if store.durable else None
        follow_head(store, txn, meta, [r for r in rows.values() if r is not None], [(top, "its witness")])
    state: dict[str, tuple[BudgetRow, Fraction]] = {}
    for name in sorted(set(names)):
        row = rows.get(name)
        if row is None:
            raise damaged(store, f"the budget {name!r} disappeared")
        expected = {p.genesis for p in postings if p.budget == name and p.genesis}
        if expected and expected != {row.genesis}:
            raise LedgerError(
                f"The budget {name!r} of the ledger {store.display} is not the one this process opened: it was "
                f"deleted and made again, forgetting what was spent. Nothing was charged. {NO_BLIND_RESTORE}.")
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
    ledger_id = meta["ledger_id"]
    if txn.guarded:
        # The server's function locks, checks (the same checks, raised as the same errors), chains and appends to
        # the witness table. No preflight in this transaction: unlocked reads of a budget row and its last entry,
        # one statement apart, can straddle another session's commit. The ledger is followed to its head in a
        # snapshot of its own first (the budget rows at the head, the witness table's head on the chain), unless
        # this transaction already wrote (a snapshot cannot see that yet; its first write was checked so).
        with store.read() if txn.written_head is None else nullcontext() as snap:
            if snap is None:
                return _post_guarded(store, txn, postings, ledger_id)
            now_meta = read_meta(store, snap)
            top = check_witness(store, now_meta)
            rows = [r for r in (snap.budget(name) for name in sorted({p.budget for p in postings})) if r is not None]
            follow_head(store, snap, now_meta, rows, [(top, "its witness table")])
        return _post_guarded(store, txn, postings, ledger_id)
    state = check_remaining(store, txn, meta["ledger_id"], postings, lock=True)
    current = {name: (row, spent) for name, (row, spent) in state.items()}
    meta = txn.lock_head()  # after the budget rows (one order for every writer), before drawing entry ids
    head = _meta_head(store, meta)
    note_head(store, ledger_id, *(head if head is not None else (None, None)))
    count, head_digest = head if head is not None else _walk_head(ledger_id, txn, meta.get("witness"))
    txn.witness = witness_of(meta, store)
    top = None
    if txn.witness is not None:
        top = txn.witness.highest(ledger_id)
        txn.witness.check(store.display, ledger_id, count, head_digest, top=top)
        txn.witness.probe(store.display)  # an unwritable witness refuses the charge before anything is written
    follow_head(store, txn, meta, [row for row, _ in current.values()], [(top, "its witness")],
                keep=txn.written_head is None)
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
        count, head_digest = count + 1, head_step(ledger_id, count + 1, head_digest, digest)
    txn.set_meta("entries", str(count))
    txn.set_meta("entries_head", head_digest)
    txn.written_head = (ledger_id, count, head_digest)
    return ids


def _post_guarded(store: Store, txn: Txn, postings: Sequence[Posting], ledger_id: str) -> list[tuple[int, str]]:
    written, count, head_digest = txn.post_guarded(store, postings)
    txn.written_head = (ledger_id, count, head_digest)
    return written


def _walk_head(ledger_id: str, txn: Txn, witness: str | None) -> tuple[int, str]:
    """The head of a ledger written before heads existed, from its entries in writing order (once)."""
    count, digest = 0, head_root(ledger_id, witness)
    for e in txn.entries():
        count += 1
        digest = head_step(ledger_id, count, digest, e.hash)
    return count, digest


def transact(stores: Sequence[Store], work: Callable[[dict[str, Txn]], T]) -> T:
    """Run ``work`` with one write transaction per distinct store (opened in key order), then commit all.

    Stores are committed one after the other: if a later commit fails, the
    earlier ones stay (a charge recorded without its release: conservative).
    """
    unique = {s.key: s for s in stores}
    with ExitStack() as stack:
        txns = {key: stack.enter_context(unique[key].write()) for key in sorted(unique)}
        out = work(txns)
    failed: list[LedgerError] = []
    for key, txn in txns.items():  # committed: this process has seen these heads
        if txn.written_head is not None:
            note_head(unique[key], *txn.written_head, check=False)
            if txn.witness is not None:
                try:
                    txn.witness.append(*txn.written_head[1:], unique[key].display)
                except LedgerError as err:  # the charge stays counted; the caller releases nothing
                    failed.append(err)
    if failed:
        raise failed[0]
    return out
