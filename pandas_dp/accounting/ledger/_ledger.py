"""The public :class:`Ledger`: create, open, verify and read a ledger file or database."""

from __future__ import annotations

import os
import threading
import weakref
from fractions import Fraction
from typing import Any, NamedTuple, Sequence, Union

import pandas as pd

from pandas_dp.errors import LedgerError
from pandas_dp.accounting.ledger._ops import (LedgerSummary, budget_list, check_witness, damaged, follow_head, new_meta,
                                              read_meta, verify_budget, verify_ledger)
from pandas_dp.accounting.ledger._postgres import PostgresStore, is_postgres_url
from pandas_dp.accounting.ledger._records import ChainError, parse_rational, verify_budget_chain
from pandas_dp.accounting.ledger._sqlite import SQLiteStore, sqlite_path
from pandas_dp.accounting.ledger._store import Store
from pandas_dp.accounting.ledger._guard_sql import DEFAULT_ROLES, GUARD_MEASURES, WITNESS_TABLE, check_role
from pandas_dp.accounting.ledger._witness import TABLE_PREFIX, create_witness, remove_witness, witness_location

__all__ = ["Ledger", "LedgerSummary", "BudgetState", "store_for", "LedgerLocation"]

#: What names a ledger: a file path, a ``postgresql://`` URL, or a :class:`Ledger`.
LedgerLocation = Union[str, "os.PathLike[str]", "Ledger"]

#: One store per ledger and process while something (a Budget, a Ledger) uses it; dropped stores close their
#: idle connections.
_STORES: "weakref.WeakValueDictionary[str, Store]" = weakref.WeakValueDictionary()
_STORES_LOCK = threading.Lock()


def store_for(location: object) -> Store:
    """The store of a ledger location (no connection is made; LedgerError for an unusable location).

    One store object per ledger and process, so its idle connections are shared.
    """
    if isinstance(location, Ledger):
        return location._store
    store: Store = PostgresStore(location) if is_postgres_url(location) else SQLiteStore(sqlite_path(location))
    with _STORES_LOCK:
        existing = _STORES.get(store.key)
        if existing is not None:
            return existing
        _STORES[store.key] = store
        return store


def check_exists(store: Store) -> None:
    """The location holds something to open (missing, empty, read-only... raise LedgerError)."""
    store.check_existing()  # type: ignore[attr-defined]


def open_store(store: Store) -> dict[str, str]:
    """Check that the store holds a ledger and read its ``meta`` (LedgerError otherwise)."""
    check_exists(store)
    try:
        with store.read() as txn:
            return read_meta(store, txn)
    except LedgerError as err:
        hint = store.describe_foreign() if isinstance(store, SQLiteStore) else None
        if hint:
            raise LedgerError(f"{err} {hint}") from None
        raise


class BudgetState(NamedTuple):
    """A budget as its ledger records it (after a full verification of its chain)."""

    name: str
    measure: str
    total: Fraction
    spent: Fraction
    entries: int

    @property
    def remaining(self) -> Fraction:
        """Exact amount left."""
        return self.total - self.spent


class Ledger:
    """A durable, tamper-evident record of every charge of its budgets: a SQLite file or a PostgreSQL database.

    A ledger is created once, explicitly (:meth:`create`); budgets then open
    it by location, ``pandas_dp.budget(epsilon=..., ledger=path, name=...)``,
    and never create it, so a deleted or emptied ledger cannot silently
    restart at zero.

    Every budget row keeps its exact running total and the hash of its last
    entry; every entry stores the hash of the previous entry of its budget and
    of its own content (SHA-256 over a canonical encoding). Opening a budget
    verifies its whole chain; every charge verifies the budget row against its
    last entry (constant work) before appending. Both follow the entries written
    since this process last looked to the ledger head, and refuse budget rows
    that are not the state their chains have there.

    Parameters
    ----------
    location : str, path or Ledger
        Use :meth:`create` or :meth:`open` rather than the constructor.

    Examples
    --------
    >>> import tempfile, pathlib, pandas_dp as pdp
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "releases.ledger.sqlite"
    >>> ledger = pdp.Ledger.create(path)
    >>> with pdp.budget(epsilon=1.0, ledger=ledger, name="census") as b:
    ...     _ = b.spend(0.25, method="example")
    >>> ledger.verify().budgets, float(ledger.budgets().loc[0, "spent"])
    (1, 0.25)
    """

    def __init__(self, location: LedgerLocation) -> None:
        self._store = store_for(location)

    # -- making and opening -----------------------------------------------------------------------------
    @classmethod
    def create(cls, location: LedgerLocation, *, witness: "str | os.PathLike[str] | None" = None,
               roles: "bool | tuple[str, str]" = False) -> "Ledger":
        """Create a new, empty ledger at ``location`` (a file path or a ``postgresql://`` URL).

        Parameters
        ----------
        location : str or path
            Where the ledger goes (nothing may exist there yet).
        witness : str or path, optional
            A new file, kept apart from the ledger (another disk or host, another
            owner, append-only), to which every charge appends the ledger's head.
            The ledger records it; opening the ledger, every charge and
            :meth:`verify` refuse a ledger whose head is below the witness's (an
            older copy put back, a chain rolled back) or missing its witness.
        roles : bool or (str, str), PostgreSQL only
            ``True`` (roles ``pandas_dp_owner`` and ``pandas_dp_analyst``) or
            ``(owner, analyst)``: the guarded setup. The owner role owns the
            tables; the analyst role (grant it to the analysts' login roles) may
            read them and charge only through server functions that run the same
            checks and chain as this library (no overspend), and cannot UPDATE,
            DELETE or TRUNCATE. Every charge appends the ledger head to a witness
            table (``pandas_dp_witness``) that opening checks. Needs a role that
            may create roles (a superuser, or CREATEROLE and the schema's owner).

        Raises
        ------
        LedgerError
            If something exists there already (a ledger or witness is never
            overwritten), the folder is missing or not writable, or the location
            is not a path or URL.
        """
        store = store_for(location)
        made = None
        pair = _roles(store, roles, witness)
        if pair is not None:
            meta = new_meta(witness=TABLE_PREFIX + WITNESS_TABLE)
            meta["guard"] = "functions"
            meta["guard_measures"] = GUARD_MEASURES
            assert isinstance(store, PostgresStore)
            store.create(meta, pair)
            return cls(store_location(store))
        meta = new_meta(witness=None if witness is None else witness_location(witness))
        if witness is not None:
            if isinstance(store, SQLiteStore):
                store.check_new()
            made = create_witness(meta["witness"], meta["ledger_id"], meta["entries_head"])
        try:
            store.create(meta)
        except BaseException:
            if made is not None:
                remove_witness(made)
            raise
        return cls(store_location(store))

    @classmethod
    def open(cls, location: LedgerLocation) -> "Ledger":
        """Open an existing ledger, checking that it is one and that its chain of budgets verifies.

        Raises
        ------
        LedgerError
            If the ledger is missing, empty, garbled, not a ledger, or fails verification.
        """
        ledger = cls(location)
        open_store(ledger._store)
        with ledger._store.read() as txn:
            meta = read_meta(ledger._store, txn)
            top = check_witness(ledger._store, meta)
            budget_list(ledger._store, txn, meta)
            follow_head(ledger._store, txn, meta, (), [(top, "its witness")])
        return ledger

    @property
    def location(self) -> str:
        """The file path, or the URL without its password."""
        loc = self._store.location()
        return self._store.key if isinstance(self._store, PostgresStore) else str(loc)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Ledger, (store_location(self._store),))

    def __repr__(self) -> str:
        return f"Ledger({self.location!r})"

    # -- auditing ------------------------------------------------------------------------------------------
    def verify(self, *, heads: Sequence[str] = ()) -> LedgerSummary:
        """Verify every record: the chain of budgets, each budget's entries and running total, reservations.

        Parameters
        ----------
        heads : sequence of str
            Ledger heads printed earlier (``"<entries>:<hash>"``: a result's
            ``params["ledger_head"]``, a manifest's ``ledger_head``, an earlier
            :meth:`verify`). Each must be a head this ledger passed through:
            every entry it covers is still there, unchanged and in order, so
            nothing recorded up to it was dropped (an older copy or a rolled-back
            chain fails).

        Returns
        -------
        LedgerSummary
            Number of budgets and entries, and the ledger head (keep it: a later
            copy that does not pass ``verify(heads=[head])`` lost charges).

        Raises
        ------
        LedgerError
            Naming the first record that does not verify, or the first head the
            ledger does not hold.
        """
        open_store(self._store)
        if isinstance(self._store, SQLiteStore):
            self._store.integrity_check()
        return verify_ledger(self._store, heads)

    def budget_state(self, name: str) -> BudgetState | None:
        """The budget named ``name`` after verifying its whole chain, or None when the ledger has none.

        Reads only: a preflight uses it to check a budget without creating its row.

        Raises
        ------
        LedgerError
            When the ledger or that budget's chain does not verify.
        """
        open_store(self._store)
        with self._store.read() as txn:
            found = txn.budget(name) if isinstance(name, str) else None
        if found is None:
            return None
        row, count, spent = verify_budget(self._store, name)
        return BudgetState(name, row.measure, parse_rational(row.total, "total"), spent, count)

    def budgets(self) -> pd.DataFrame:
        """One row per budget: name, measure, total, spent, remaining, entries, created, reservation_of.

        ``total``, ``spent`` and ``remaining`` are floats in the budget's own measure (epsilon or rho).
        """
        open_store(self._store)
        with self._store.read() as txn:
            rows = txn.budgets()
        try:
            records = [{"name": b.name, "measure": b.measure, "total": float(parse_rational(b.total, "total")),
                        "spent": float(parse_rational(b.spent, "spent")),
                        "remaining": float(parse_rational(b.total, "total") - parse_rational(b.spent, "spent")),
                        "entries": int(b.entries), "created": b.created, "reservation_of": b.parent}
                       for b in rows]
        except ChainError as err:
            raise damaged(self._store, str(err)) from None
        frame = pd.DataFrame(records, columns=["name", "measure", "total", "spent", "remaining", "entries", "created",
                                               "reservation_of"])
        try:
            frame["created"] = pd.to_datetime(frame["created"], utc=True, format="ISO8601")
        except (ValueError, TypeError):
            raise damaged(self._store, "a budget's creation time is not a time") from None
        return frame

    def entries(self, budget: str | None = None) -> pd.DataFrame:
        """Every entry (or one budget's), oldest first, with exact amounts as text and floats.

        Columns: ``id, time, budget, seq, kind, method, columns, measure, amount, amount_exact, spent_exact,
        params, status, hash``. ``kind`` is ``charge``, ``reserve``, ``return`` or ``close``.
        """
        open_store(self._store)
        with self._store.read() as txn:
            rows = list(txn.entries(budget))
        try:
            return entries_frame(rows)
        except (ValueError, TypeError):
            raise damaged(self._store, "an entry's time is not a time") from None


def entries_frame(rows: list[Any]) -> pd.DataFrame:
    """The auditor's table of entries."""
    columns = ["id", "time", "budget", "seq", "kind", "method", "columns", "measure", "amount", "amount_exact",
               "spent_exact", "params", "status", "hash"]
    records = []
    for e in rows:
        try:
            amount = float(Fraction(e.amount))
        except (ValueError, ZeroDivisionError, TypeError):
            amount = float("nan")
        records.append({"id": e.id, "time": e.time, "budget": e.budget, "seq": e.seq, "kind": e.kind,
                        "method": e.method, "columns": e.columns, "measure": e.measure, "amount": amount,
                        "amount_exact": e.amount, "spent_exact": e.spent, "params": e.params, "status": e.status,
                        "hash": e.hash})
    frame = pd.DataFrame(records, columns=columns)
    frame["id"] = frame["id"].astype("int64")
    frame["amount"] = frame["amount"].astype("float64")
    frame["time"] = pd.to_datetime(frame["time"], utc=True, format="ISO8601")
    return frame


def _roles(store: Store, roles: object, witness: object) -> tuple[str, str] | None:
    """The (owner, analyst) roles of a guarded ledger to create, or None (LedgerError for a misuse)."""
    if roles is False or roles is None:
        return None
    if not isinstance(store, PostgresStore):
        raise LedgerError("roles= applies to a PostgreSQL ledger only (a SQLite file's protection is its file "
                          "permissions). Pass a postgresql:// URL, or leave roles out.")
    if witness is not None:
        raise LedgerError("A guarded PostgreSQL ledger (roles=) has its own witness table; leave witness= out.")
    if roles is True:
        return DEFAULT_ROLES
    if (not isinstance(roles, tuple) or len(roles) != 2) or roles[0] == roles[1]:
        raise LedgerError(f"roles= must be True or a pair of two role names (owner, analyst). Got {roles!r}.")
    return check_role(roles[0], "owner"), check_role(roles[1], "analyst")


def store_location(store: Store) -> Any:
    """What reopens ``store`` (a path or URL)."""
    return store.location()


def verify_entries(store: Store, ledger_id: str, row: Any, entries: list[Any]) -> None:
    """Verify a budget's entries as read for a frame."""
    try:
        verify_budget_chain(ledger_id, row, entries)
    except ChainError as err:
        raise damaged(store, str(err)) from None

