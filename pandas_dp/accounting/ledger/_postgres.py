"""The PostgreSQL ledger: the same records and the same transactions as SQLite, for teams on several hosts.

A charge is one transaction (``READ COMMITTED``) that locks the budget rows
it charges with ``SELECT ... FOR UPDATE`` (in name order, so writers never
deadlock), checks the running state against the last entry, appends the
entries and moves the running totals. PostgreSQL's default
``synchronous_commit = on`` makes the commit durable before it returns.
A lock wait longer than 60 s fails the charge (nothing charged) instead of
hanging.

Bounded waits: no write transaction (a charge, a status update, a
reservation) waits longer than ``WRITE_BOUND_S`` (120 s) in all. The server
ends any statement of a write after ``STATEMENT_TIMEOUT_MS`` (60 s, locks
included) and a session idle inside a transaction after 120 s (so a stalled
client frees its locks); TCP keepalives find a dead network within about 35 s;
and a watchdog thread shuts the connection's socket if the server itself
stalls (a stopped or hung server answers nothing, not even a cancel). Each
raises :class:`~pandas_dp.errors.LedgerError`. Reads (``verify``) are not
bounded: they may take long on a long ledger, and never hold a lock a charge
needs. Tables are created in the connection's current schema
(``search_path``; set it with ``?options=-csearch_path%3Dname`` in the URL).
Needs the ``postgres`` extra (psycopg 3).
"""

from __future__ import annotations

import os
import socket
import threading
from contextlib import contextmanager
from typing import Any, Iterator, TypeGuard
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pandas_dp.errors import BudgetError, BudgetExceededError, LedgerError
from pandas_dp.accounting.ledger import _guard_sql as guard
from pandas_dp.accounting.ledger._ops import NO_BLIND_RESTORE, damaged, exceeded_message
from pandas_dp.accounting.ledger._pool import IdleConnections
from pandas_dp.accounting.ledger._records import BudgetRow, parse_rational, rational_text
from pandas_dp.accounting.ledger._sql import POSTGRES, SQLTxn, TABLES
from pandas_dp.accounting.ledger._store import Store, Txn
from pandas_dp.accounting.ledger._witness import refuse_below
from pandas_dp._utils.optional import import_optional, MissingDependencyError

__all__ = ["PostgresStore", "is_postgres_url", "mask_url"]

SCHEMES = ("postgresql://", "postgres://")
LOCK_TIMEOUT_MS = 60_000
#: Longest a statement of a write transaction runs on the server (waiting for locks included).
STATEMENT_TIMEOUT_MS = 60_000
#: Longest a write transaction takes in all before its connection is shut and LedgerError raised.
WRITE_BOUND_S = 120.0
#: TCP keepalives: first probe after 15 s of silence, then every 5 s, the connection dropped after 4 unanswered.
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 15, "keepalives_interval": 5, "keepalives_count": 4}


def is_postgres_url(location: object) -> TypeGuard[str]:
    """Whether ``location`` names a PostgreSQL ledger."""
    return isinstance(location, str) and location.lower().startswith(SCHEMES)


def mask_url(url: str) -> str:
    """``url`` without its password (in the user part or the query)."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            user, host = netloc.rsplit("@", 1)
            netloc = f"{user.split(':', 1)[0]}@{host}"
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        query = parts.query if all(k != "password" for k, _ in pairs) else urlencode(
            [(k, v) for k, v in pairs if k != "password"])
        return urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    except ValueError as err:
        raise LedgerError(f"The ledger location is not a valid PostgreSQL URL: {err}. Pass a URL such as "
                          f"'postgresql://user@host:5432/dbname'.") from None


class _Watchdog:
    """Shuts a connection's socket if its transaction outlives ``bound`` seconds (a stalled server answers nothing)."""

    def __init__(self, conn: Any, bound: float) -> None:
        self.fired = False
        self._conn = conn
        self._timer = threading.Timer(bound, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        self.fired = True
        try:
            fd = self._conn.pgconn.socket
            sock = socket.socket(fileno=os.dup(fd))
        except Exception:  # noqa: BLE001 - the connection is already closed
            return
        try:
            sock.shutdown(socket.SHUT_RDWR)  # the blocked wait returns with an error: psycopg raises
        except OSError:
            pass
        finally:
            sock.close()

    def cancel(self) -> None:
        self._timer.cancel()


def _psycopg() -> Any:
    try:
        return import_optional("psycopg", extra="postgres", purpose="A PostgreSQL ledger")
    except MissingDependencyError as err:
        raise LedgerError(str(err)) from None


class GuardedTxn(SQLTxn):
    """A transaction on a guarded ledger: entries and budgets are written by the server's functions."""

    def __init__(self, conn: Any) -> None:
        super().__init__(conn, POSTGRES, guarded=True)

    def _call(self, store: "PostgresStore", text: str, args: tuple[Any, ...],
              postings: Any = ()) -> list[tuple[Any, ...]]:
        psycopg = _psycopg()
        try:
            return list(self.conn.execute(text, args).fetchall())
        except psycopg.Error as err:
            raise _refusal(store, err, postings) from None

    def post_guarded(self, store: Store, postings: Any) -> tuple[list[tuple[int, str]], int, str]:
        assert isinstance(store, PostgresStore)
        cols = ("budget", "kind", "method", "columns", "params", "requested", "amount", "status", "genesis")
        arrays = [[getattr(p, c) if c != "amount" else rational_text(p.amount) for p in postings] for c in cols]
        rows = self._call(store, "SELECT * FROM pandas_dp_post(%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                          tuple(arrays), postings)
        return [(int(r[0]), str(r[1])) for r in rows], int(rows[-1][2]), str(rows[-1][3])

    def add_budget_guarded(self, store: Store, name: str, measure: str, total: str,
                           parent: str | None) -> BudgetRow:
        assert isinstance(store, PostgresStore)
        rows = self._call(store, "SELECT * FROM pandas_dp_add_budget(%s, %s, %s, %s)", (name, measure, total, parent))
        return BudgetRow(*rows[0])


def _refusal(store: "PostgresStore", err: Exception, postings: Any) -> Exception:
    """The error a guarded ledger's function raised, as the Python charge path would raise it."""
    code = getattr(err, "sqlstate", None)
    diag = getattr(err, "diag", None)
    message = str(getattr(diag, "message_primary", "") or "")
    detail = str(getattr(diag, "message_detail", "") or "")
    if code == guard.EXCEEDED:
        name, total, spent = (detail.split("|") + ["", "", ""])[:3]
        p = next((p for p in postings if p.budget == name and p.amount > 0), None)
        if p is not None:
            return BudgetExceededError(exceeded_message(p, parse_rational(total, "total"),
                                                        parse_rational(spent, "spent")))
        return BudgetExceededError(f"The budget {name!r} has too little left. Nothing was charged.")
    if code == guard.DAMAGED:
        return damaged(store, message)
    if code == guard.ROLLED_BACK:
        where = ("the ledger is below it" if message == "below" else
                 "the ledger's head is not it (the tables were written around the ledger's functions: an older "
                 "copy padded past it, or a rewritten chain)")
        return LedgerError(
            f"The ledger {store.display} was rolled back: its witness table {guard.WITNESS_TABLE} records head "
            f"{detail} and {where}. An older copy of the ledger tables was put back, which forgets "
            f"charges. Nothing was charged. Find the copy that passes `python -m pandas_dp ledger verify LOCATION "
            f"--head {detail}`.")
    if code == guard.REFUSED and message == "closed":
        return BudgetError(f"The reservation {detail!r} is closed: its unused part went back to its budget. "
                           f"Make a new reservation.")
    if code == guard.REFUSED and message == "genesis":
        return LedgerError(
            f"The budget {detail!r} of the ledger {store.display} is not the one this process opened: it was "
            f"deleted and made again, forgetting what was spent. Nothing was charged. {NO_BLIND_RESTORE}.")
    if code == guard.REFUSED:
        return LedgerError(f"The ledger {store.display} refused the write: {message}. Nothing was charged.")
    return store.error(err)


class TableWitness:
    """The witness table of a guarded ledger: the heads its function appended, readable by analysts."""

    def __init__(self, store: "PostgresStore") -> None:
        self.store = store
        self.path = guard.WITNESS_TABLE

    def highest(self, ledger_id: str) -> tuple[int, str]:
        """The highest head in the witness table (LedgerError when it is empty)."""
        with self.store.read() as txn:
            assert isinstance(txn, SQLTxn)
            rows = txn._rows(f"SELECT entries, head FROM {guard.WITNESS_TABLE} ORDER BY entries DESC LIMIT 1")
        if not rows:
            raise LedgerError(f"The witness table {guard.WITNESS_TABLE} of the ledger {self.store.display} is "
                              f"empty: it always holds the ledger's first head. It was emptied. Nothing was charged.")
        return int(rows[0][0]), str(rows[0][1])

    def check(self, display: str, ledger_id: str, count: int, digest: str,
              top: tuple[int, str] | None = None) -> None:
        """Refuse a ledger whose head is below the witness's highest (``top``, read now when None), or beside it."""
        refuse_below(display, f"witness table {guard.WITNESS_TABLE}", "an older copy of the ledger tables",
                     self.highest(ledger_id) if top is None else top, count, digest)

    def probe(self, display: str) -> None:
        """Nothing: the server's function appends the head in the charge's own transaction."""

    def append(self, count: int, digest: str, display: str = "") -> None:
        """Nothing: the server's function appends the head in the charge's own transaction."""


class PostgresStore(IdleConnections[Any], Store):
    """One ledger in a PostgreSQL database."""

    durable = True
    #: Whether the ledger is guarded (read from its ``meta`` on first use; fixed when it is created).
    _guarded: bool | None = None

    def __init__(self, url: str) -> None:
        self.url = url
        masked = mask_url(url)
        self.key = masked
        self.display = repr(masked)
        self._init_idle()

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["url"])  # type: ignore[misc]

    def location(self) -> object:
        return self.url

    def _connect(self) -> Any:
        psycopg = _psycopg()
        try:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=30, **KEEPALIVES)
            conn.execute(f"SET lock_timeout = {LOCK_TIMEOUT_MS}")
            conn.execute("SET synchronous_commit = on")
            conn.execute(f"SET idle_in_transaction_session_timeout = {int(WRITE_BOUND_S * 1000)}")
        except psycopg.Error as err:
            raise self.error(err) from None
        return conn

    def _take(self) -> Any:
        with self._lock:
            idle = self._idle_here()
            while idle:
                conn = idle.pop()
                if not conn.closed:
                    return conn
        return self._connect()

    def _give(self, conn: Any) -> None:
        self._keep_idle(conn, reusable=not conn.closed)

    def _close_item(self, item: Any) -> None:
        item.close()

    @contextmanager
    def _transaction(self, begin: str, bound: float | None = None) -> Iterator[Txn]:
        psycopg = _psycopg()
        conn = self._take()
        ok = broken = False
        watchdog = _Watchdog(conn, bound) if bound is not None else None
        try:
            conn.execute(begin)
            if bound is not None:
                conn.execute(f"SET LOCAL statement_timeout = {STATEMENT_TIMEOUT_MS}")
            if self._guarded is None:
                found = conn.execute("SELECT value FROM pandas_dp_meta WHERE key = 'guard'").fetchall()
                self._guarded = found == [("functions",)]
            yield GuardedTxn(conn) if self._guarded else SQLTxn(conn, POSTGRES)
            conn.execute("COMMIT")
            ok = True
        except psycopg.Error as err:
            broken = True
            if watchdog is not None and watchdog.fired:
                raise LedgerError(
                    f"The ledger {self.display}: the server did not answer within {WRITE_BOUND_S:g} s (stalled or "
                    f"unreachable), so the connection was closed. Nothing was released; a charge whose commit was "
                    f"under way may or may not be recorded (`python -m pandas_dp ledger show` tells). Retry when the "
                    f"server answers.") from None
            raise self.error(err) from None
        finally:
            if watchdog is not None:
                watchdog.cancel()
            if not ok and not broken:
                try:
                    conn.execute("ROLLBACK")
                except psycopg.Error:
                    broken = True
            if broken:
                conn.close()
            else:
                self._give(conn)

    def table_witness(self) -> TableWitness:
        """The witness table of this (guarded) ledger."""
        return TableWitness(self)

    def write(self) -> Any:
        return self._transaction("BEGIN ISOLATION LEVEL READ COMMITTED", WRITE_BOUND_S)

    def read(self) -> Any:
        return self._transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")

    def exists(self) -> bool:
        """Whether the database holds the ledger's tables."""
        psycopg = _psycopg()
        conn = self._take()
        try:
            found = conn.execute("SELECT to_regclass('pandas_dp_meta') IS NOT NULL").fetchone()[0]
        except psycopg.Error as err:
            conn.close()
            raise self.error(err) from None
        self._give(conn)
        return bool(found)

    def check_existing(self) -> None:
        """The database holds a ledger (LedgerError with the fix otherwise)."""
        if not self.exists():
            raise LedgerError(f"The database {self.display} holds no pandas_dp ledger. Create it once with "
                              f"pandas_dp.Ledger.create(url) or `python -m pandas_dp ledger init URL`; a missing "
                              f"ledger is never recreated silently, because that would forget what was spent.")

    def create(self, meta: dict[str, str], roles: tuple[str, str] | None = None) -> None:
        """Create the tables and ``meta``; with ``roles = (owner, analyst)`` the guarded setup (module notes)."""
        psycopg = _psycopg()
        if self.exists():
            raise LedgerError(f"Cannot create a ledger in {self.display}: the database already holds one. A "
                              f"ledger is never overwritten; open it with pandas_dp.budget(..., ledger=url).")
        conn = self._take()
        try:
            conn.execute("BEGIN")
            if roles is None:
                for statement in POSTGRES.schema():
                    conn.execute(statement)
            else:
                schema = conn.execute("SELECT quote_ident(current_schema())").fetchone()[0]
                for statement in guard.setup_statements(schema, *roles, POSTGRES.schema()):
                    conn.execute(statement)
            txn = SQLTxn(conn, POSTGRES)
            for key, value in meta.items():
                txn.set_meta(key, value)
            if roles is not None:
                conn.execute(f"INSERT INTO {guard.WITNESS_TABLE} (entries, head) VALUES (%s, %s)",
                             (int(meta["entries"]), meta["entries_head"]))
                for statement in guard.grant_statements(*roles, list(TABLES)):
                    conn.execute(statement)
            conn.execute("COMMIT")
        except psycopg.Error as err:
            conn.close()
            if isinstance(err, psycopg.errors.DuplicateTable):
                raise LedgerError(f"Cannot create a ledger in {self.display}: another process created one "
                                  f"meanwhile. Open it with pandas_dp.budget(..., ledger=url).") from None
            raise self.error(err) from None
        self._give(conn)

    def error(self, err: Exception) -> LedgerError:
        """A LedgerError that says what went wrong with the database and what to do."""
        psycopg = _psycopg()
        text = " ".join(str(err).split())[:300]
        if isinstance(err, psycopg.errors.LockNotAvailable):
            why = (f"another session held the budget for more than {LOCK_TIMEOUT_MS // 1000} s. Nothing was "
                   f"charged; retry when it has finished")
        elif isinstance(err, psycopg.errors.UndefinedTable):
            why = (f"it holds no complete pandas_dp ledger ({text}). Create one with pandas_dp.Ledger.create; "
                   f"{NO_BLIND_RESTORE}")
        elif isinstance(err, psycopg.errors.InsufficientPrivilege):
            why = (f"the role has no right to do this ({text}). Roles that charge a guarded ledger need its "
                   f"analyst role (GRANT pandas_dp_analyst TO the login role); creating one needs a role that may "
                   f"create roles")
        elif isinstance(err, psycopg.OperationalError):
            why = f"cannot reach the server ({text}). Check the URL, the server and the network"
        else:
            why = f"PostgreSQL failed: {text}"
        return LedgerError(f"The ledger {self.display}: {why}.")
