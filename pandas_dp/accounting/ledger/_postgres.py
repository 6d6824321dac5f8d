"""The PostgreSQL ledger: the same records and the same transactions as SQLite, for teams on several hosts.

A charge is one transaction (``READ COMMITTED``) that locks the budget rows
it charges with ``SELECT ... FOR UPDATE`` (in name order, so writers never
deadlock), checks the running state against the last entry, appends the
entries and moves the running totals. PostgreSQL's default
``synchronous_commit = on`` makes the commit durable before it returns.
A lock wait longer than 60 s fails the charge (nothing charged) instead of
hanging. Tables are created in the connection's current schema
(``search_path``; set it with ``?options=-csearch_path%3Dname`` in the URL).
Needs the ``postgres`` extra (psycopg 3).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, TypeGuard
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pandas_dp.errors import LedgerError
from pandas_dp.accounting.ledger._ops import NO_BLIND_RESTORE
from pandas_dp.accounting.ledger._pool import IdleConnections
from pandas_dp.accounting.ledger._sql import POSTGRES, SQLTxn
from pandas_dp.accounting.ledger._store import Store, Txn

__all__ = ["PostgresStore", "is_postgres_url", "mask_url"]

SCHEMES = ("postgresql://", "postgres://")
LOCK_TIMEOUT_MS = 60_000


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


def _psycopg() -> Any:
    from pandas_dp._utils.optional import MissingDependencyError, import_optional

    try:
        return import_optional("psycopg", extra="postgres", purpose="A PostgreSQL ledger")
    except MissingDependencyError as err:
        raise LedgerError(str(err)) from None


class PostgresStore(IdleConnections[Any], Store):
    """One ledger in a PostgreSQL database."""

    durable = True

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
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=30)
            conn.execute(f"SET lock_timeout = {LOCK_TIMEOUT_MS}")
            conn.execute("SET synchronous_commit = on")
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
    def _transaction(self, begin: str) -> Iterator[Txn]:
        psycopg = _psycopg()
        conn = self._take()
        ok = broken = False
        try:
            conn.execute(begin)
            yield SQLTxn(conn, POSTGRES)
            conn.execute("COMMIT")
            ok = True
        except psycopg.Error as err:
            broken = True
            raise self.error(err) from None
        finally:
            if not ok:
                try:
                    conn.execute("ROLLBACK")
                except psycopg.Error:
                    broken = True
            if broken:
                conn.close()
            else:
                self._give(conn)

    def write(self) -> Any:
        return self._transaction("BEGIN ISOLATION LEVEL READ COMMITTED")

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

    def create(self, meta: dict[str, str]) -> None:
        psycopg = _psycopg()
        if self.exists():
            raise LedgerError(f"Cannot create a ledger in {self.display}: the database already holds one. A "
                              f"ledger is never overwritten; open it with pandas_dp.budget(..., ledger=url).")
        conn = self._take()
        try:
            conn.execute("BEGIN")
            for statement in POSTGRES.schema():
                conn.execute(statement)
            txn = SQLTxn(conn, POSTGRES)
            for key, value in meta.items():
                txn.set_meta(key, value)
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
        elif isinstance(err, psycopg.OperationalError):
            why = f"cannot reach the server ({text}). Check the URL, the server and the network"
        else:
            why = f"PostgreSQL failed: {text}"
        return LedgerError(f"The ledger {self.display}: {why}.")
