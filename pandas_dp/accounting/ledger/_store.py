"""Where ledger records live: the store protocol, and the in-memory store of budgets without a file.

A :class:`Store` hands out transactions. ``write()`` is exclusive for the
budget rows it locks (SQLite: the whole file; PostgreSQL: the rows locked
``FOR UPDATE``; memory: the store's lock) and commits only if its block
returns; ``read()`` sees one consistent snapshot. The ledger logic
(:mod:`pandas_dp.accounting.ledger._ops`) is written once against :class:`Txn` and
runs on every store.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from contextlib import contextmanager
from typing import Any, Iterator

from pandas_dp.accounting.ledger._records import BudgetRow, EntryRow

__all__ = ["Store", "Txn", "MemoryStore"]


class Txn(ABC):
    """One transaction on a store."""

    #: ``(ledger id, entries, head hash)`` after this transaction's last entry, noted once it commits.
    written_head: "tuple[str, int, str] | None" = None
    #: The ledger's witness (see :mod:`pandas_dp.accounting.ledger._witness`), appended to once this commits.
    witness: Any = None
    #: A guarded PostgreSQL ledger: entries and budgets are written only through its functions
    #: (:meth:`post_guarded`, :meth:`add_budget_guarded`), which lock, check and chain on the server.
    guarded: bool = False

    def post_guarded(self, store: "Store", postings: Any) -> tuple[list[tuple[int, str]], int, str]:
        """Append ``postings`` through the server's function: ((entry id, hash)s, entries, head hash)."""
        raise NotImplementedError  # pragma: no cover - only guarded transactions are asked

    def add_budget_guarded(self, store: "Store", name: str, measure: str, total: str,
                           parent: str | None) -> BudgetRow:
        """Append a budget through the server's function (or return the one another session made)."""
        raise NotImplementedError  # pragma: no cover - only guarded transactions are asked

    @abstractmethod
    def meta(self) -> dict[str, str]:
        """Every ``meta`` key and value (empty when the store holds no ledger)."""

    @abstractmethod
    def set_meta(self, key: str, value: str) -> None:
        """Insert or replace one ``meta`` value."""

    @abstractmethod
    def budget(self, name: str) -> BudgetRow | None:
        """The budget row named ``name`` (not locked)."""

    @abstractmethod
    def lock_budgets(self, names: list[str]) -> dict[str, BudgetRow]:
        """Lock and return the budget rows named (in sorted order, so two writers never deadlock)."""

    @abstractmethod
    def lock_budget_list(self) -> None:
        """Lock the chain of budgets (``meta``'s head) before a budget is added."""

    @abstractmethod
    def lock_head(self) -> dict[str, str]:
        """Lock the ledger head (every writer of entries takes it, after its budget rows); return ``meta`` afresh."""

    @abstractmethod
    def budgets(self) -> list[BudgetRow]:
        """Every budget row, in creation order."""

    @abstractmethod
    def insert_budget(self, row: BudgetRow) -> None:
        """Add a budget row."""

    @abstractmethod
    def update_budget(self, row: BudgetRow) -> None:
        """Write a budget's running state (``spent``, ``entries``, ``head``)."""

    @abstractmethod
    def last_entry(self, name: str) -> EntryRow | None:
        """The budget's entry with the highest ``seq``."""

    @abstractmethod
    def entries(self, name: str | None = None) -> Iterator[EntryRow]:
        """A budget's entries by ``seq`` (or every entry by id)."""

    @abstractmethod
    def entries_from(self, after_id: int, limit: int) -> list[EntryRow]:
        """Up to ``limit`` entries whose id is above ``after_id``, by id (the order they were written)."""

    @abstractmethod
    def entries_after(self, name: str, seq: int) -> Iterator[EntryRow]:
        """A budget's entries whose ``seq`` is above ``seq``, in order."""

    @abstractmethod
    def entry(self, entry_id: int) -> EntryRow | None:
        """The entry with this id."""

    @abstractmethod
    def new_entry_id(self) -> int:
        """A fresh entry id, unique in the store."""

    @abstractmethod
    def insert_entry(self, row: EntryRow) -> None:
        """Add an entry row."""

    @abstractmethod
    def set_status(self, entry_id: int, status: str, expected: str) -> None:
        """Set an entry's status if it is ``expected`` (status is outside the hash)."""


class Store(ABC):
    """A place that holds one ledger."""

    #: Identity of the ledger (the same file or database gives the same key); also the locking order.
    key: str
    #: How messages name it (passwords masked).
    display: str
    #: Whether records survive the process (a file or a database).
    durable: bool

    @abstractmethod
    def write(self) -> Any:
        """Context manager yielding an exclusive :class:`Txn`, committed when the block returns."""

    @abstractmethod
    def read(self) -> Any:
        """Context manager yielding a consistent read-only :class:`Txn`."""

    @abstractmethod
    def create(self, meta: dict[str, str]) -> None:
        """Create the ledger's tables and ``meta`` (LedgerError if one exists)."""

    def location(self) -> object:
        """What a pickle keeps to find this store again."""
        return self.key


class _MemoryTxn(Txn):
    """Writes are staged and applied only on commit, so a failed block changes nothing."""

    def __init__(self, store: "MemoryStore") -> None:
        self.store = store
        self.meta_: dict[str, str] = {}
        self.budgets_: dict[str, BudgetRow] = {}
        self.new_entries: list[EntryRow] = []
        self.status: dict[int, str] = {}

    def meta(self) -> dict[str, str]:
        return {**self.store.meta_, **self.meta_}

    def set_meta(self, key: str, value: str) -> None:
        self.meta_[key] = value

    def budget(self, name: str) -> BudgetRow | None:
        return self.budgets_.get(name, self.store.budgets_.get(name))

    def lock_budgets(self, names: list[str]) -> dict[str, BudgetRow]:
        found = {n: self.budget(n) for n in sorted(set(names))}
        return {n: b for n, b in found.items() if b is not None}

    def lock_budget_list(self) -> None:
        return None  # the store's lock is held for the whole transaction

    def lock_head(self) -> dict[str, str]:
        return self.meta()

    def budgets(self) -> list[BudgetRow]:
        merged = {**self.store.budgets_, **self.budgets_}
        return sorted(merged.values(), key=lambda b: b.position)

    def insert_budget(self, row: BudgetRow) -> None:
        self.budgets_[row.name] = row

    def update_budget(self, row: BudgetRow) -> None:
        self.budgets_[row.name] = row

    def _all(self) -> list[EntryRow]:
        return self.store.entries_ + self.new_entries

    def last_entry(self, name: str) -> EntryRow | None:
        own = [e for e in self.new_entries if e.budget == name]
        if own:
            return own[-1]
        chain = self.store.by_budget.get(name)
        return self._current(self.store.entries_[chain[-1]]) if chain else None

    def _current(self, entry: EntryRow) -> EntryRow:
        status = self.status.get(entry.id, self.store.status.get(entry.id, entry.status))
        return entry if status == entry.status else _with_status(entry, status)

    def entries(self, name: str | None = None) -> Iterator[EntryRow]:
        if name is None:
            rows = self._all()
        else:
            rows = [self.store.entries_[i] for i in self.store.by_budget.get(name, [])]
            rows += [e for e in self.new_entries if e.budget == name]
        return iter([self._current(e) for e in rows])

    def entries_after(self, name: str, seq: int) -> Iterator[EntryRow]:
        return iter([e for e in self.entries(name) if e.seq > seq])

    def entries_from(self, after_id: int, limit: int) -> list[EntryRow]:
        return [e for e in self.entries() if e.id > after_id][:limit]

    def entry(self, entry_id: int) -> EntryRow | None:
        index = entry_id - 1
        rows = self._all()
        return self._current(rows[index]) if 0 <= index < len(rows) else None

    def new_entry_id(self) -> int:
        return len(self.store.entries_) + len(self.new_entries) + 1

    def insert_entry(self, row: EntryRow) -> None:
        self.new_entries.append(row)

    def set_status(self, entry_id: int, status: str, expected: str) -> None:
        current = self.entry(entry_id)
        if current is not None and current.status == expected:
            self.status[entry_id] = status

    def commit(self) -> None:
        store = self.store
        store.meta_.update(self.meta_)
        store.budgets_.update(self.budgets_)
        for row in self.new_entries:
            store.by_budget.setdefault(row.budget, []).append(len(store.entries_))
            store.entries_.append(row)
        store.status.update(self.status)


def _with_status(entry: EntryRow, status: str) -> EntryRow:
    from dataclasses import replace

    return replace(entry, status=status)


class MemoryStore(Store):
    """The ledger of a budget without a file: the same records, kept in the process (and in pickles)."""

    durable = False

    def __init__(self) -> None:
        self.key = f"memory:{id(self):x}"
        self.display = "an in-memory ledger"
        self.meta_: dict[str, str] = {}
        self.budgets_: dict[str, BudgetRow] = {}
        self.entries_: list[EntryRow] = []
        self.by_budget: dict[str, list[int]] = {}
        self.status: dict[int, str] = {}
        self._lock = threading.RLock()

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.key = f"memory:{id(self):x}"
        self._lock = threading.RLock()

    @contextmanager
    def write(self) -> Iterator[Txn]:
        with self._lock:
            txn = _MemoryTxn(self)
            yield txn
            txn.commit()

    read = write  # reads take the same lock: in memory they cost nothing

    def create(self, meta: dict[str, str]) -> None:
        with self._lock:
            self.meta_.update(meta)
