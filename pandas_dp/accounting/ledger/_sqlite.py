"""The SQLite ledger file: location checks, connections, durable transactions, error translation.

Journal: a rollback journal (``journal_mode=DELETE``) with
``synchronous=FULL``. A commit returns only after the main database file
holds it (journal written and synced, pages written and synced, journal
deleted), so the file alone always holds every committed charge: there is no ``-wal``
file whose loss could drop charges. ``benchmarks/bench_ledger.py`` measures
this against WAL mode with a checkpoint after every commit (the other way to
get the same guarantee); the two cost about the same per charge here, and
the rollback journal does not depend on a checkpoint that a reader holding the
file open could block.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import tempfile
import urllib.parse
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from pandas_dp._utils.rational import safe_repr
from pandas_dp.errors import LedgerError
from pandas_dp.accounting.ledger._ops import NO_BLIND_RESTORE
from pandas_dp.accounting.ledger._pool import IdleConnections
from pandas_dp.accounting.ledger._sql import SQLITE, SQLTxn, TABLES
from pandas_dp.accounting.ledger._store import Store, Txn

__all__ = ["SQLiteStore", "sqlite_path"]

#: What SQLite raises on a bad file: its own errors, and UnicodeDecodeError when a garbled schema puts bytes that
#: are not UTF-8 into an error message or a text column.
_ERRORS = (sqlite3.Error, UnicodeDecodeError)

#: Seconds a writer waits for another process's transaction on the same file.
BUSY_TIMEOUT = 60.0


def sqlite_path(location: object) -> Path:
    """The path of a SQLite ledger location (LedgerError for anything that is not a usable path)."""
    if isinstance(location, os.PathLike):
        try:
            location = os.fspath(location)
        except Exception as err:  # a hostile __fspath__
            raise LedgerError(f"The ledger location {type(location).__name__} object is not a path: {err}. "
                              f"Pass the path of a ledger file as a str or pathlib.Path.") from None
    if isinstance(location, bytes):
        try:
            location = os.fsdecode(location)
        except (UnicodeDecodeError, ValueError):
            location = None
    if not isinstance(location, str):
        raise LedgerError(f"The ledger location must be the path of a ledger file (str or pathlib.Path) or a "
                          f"postgresql:// URL. Got {safe_repr(location)} of type {type(location).__name__}.")
    if location.strip() == "" or location == ":memory:" or location.startswith("file:"):
        raise LedgerError(f"The ledger location {location!r} is not a file path. A ledger must be a file that "
                          f"outlives the process: pass a path such as 'releases.ledger.sqlite' (create it once "
                          f"with pandas_dp.Ledger.create), or ledger=None for an in-memory budget.")
    if "\x00" in location:
        raise LedgerError(f"The ledger location {location!r} contains a NUL character. Pass a valid file path.")
    try:
        location.encode("utf-8")
        os.fsencode(location)
    except (UnicodeEncodeError, ValueError):
        raise LedgerError(f"The ledger location {location!r} cannot be encoded as a file name on this system. "
                          f"Pass a path made of valid characters.") from None
    return Path(location)


def _canonical(path: Path) -> str:
    try:
        return os.path.realpath(os.path.abspath(path))
    except (OSError, ValueError) as err:
        raise LedgerError(f"The ledger path {str(path)!r} cannot be resolved: {err}.") from None


class SQLiteStore(IdleConnections[tuple[sqlite3.Connection, tuple[int, int]]], Store):
    """One SQLite ledger file."""

    durable = True
    #: The journal mode every connection checks (``benchmarks/bench_ledger.py`` times a WAL variant).
    journal_mode = "delete"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.key = _canonical(path)
        self.display = repr(str(path))
        self._init_idle()

    def location(self) -> object:
        return str(self.path)

    # -- checks before connecting -------------------------------------------------------------------------
    def check_new(self) -> None:
        """The path can take a new ledger: its folder exists and is writable, and nothing is there yet."""
        folder = self.path.parent if str(self.path.parent) else Path(".")
        if os.path.lexists(self.path):
            raise LedgerError(f"Cannot create a ledger at {self.display}: the path exists. A ledger is never "
                              f"overwritten; open it with pandas_dp.budget(..., ledger=...), or pick a new path.")
        if not folder.is_dir():
            raise LedgerError(f"Cannot create a ledger at {self.display}: the folder {str(folder)!r} does not "
                              f"exist. Create the folder first, or pick another path.")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise LedgerError(f"Cannot create a ledger at {self.display}: the folder {str(folder)!r} is not "
                              f"writable. Pick a writable folder.")

    def check_existing(self) -> None:
        """The path holds a non-empty, regular, writable file in a writable folder."""
        fix = ("Create the ledger once with pandas_dp.Ledger.create(path) or `python -m pandas_dp ledger init "
               "PATH`; a missing ledger is never recreated silently, because that would forget what was spent.")
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            raise LedgerError(f"The ledger {self.display} does not exist. {fix} If it existed before: "
                              f"{NO_BLIND_RESTORE}.") from None
        except (OSError, ValueError) as err:
            raise LedgerError(f"The ledger {self.display} cannot be read: {err}. Check the path.") from None
        if stat.S_ISDIR(info.st_mode):
            raise LedgerError(f"The ledger location {self.display} is a folder, not a ledger file. Pass the "
                              f"path of the ledger file inside it.")
        if not stat.S_ISREG(info.st_mode):
            raise LedgerError(f"The ledger location {self.display} is not a regular file. Pass a ledger file.")
        if info.st_size == 0:
            raise LedgerError(f"The ledger {self.display} is empty (0 bytes): it was truncated or never "
                              f"initialized, so what it recorded as spent is lost. {NO_BLIND_RESTORE}. {fix}")
        if not info.st_mode & 0o222 or not os.access(self.path, os.R_OK | os.W_OK):
            raise LedgerError(f"The ledger {self.display} is read-only. A budget must record its charges: "
                              f"make the file writable (chmod u+w), or inspect it with `python -m pandas_dp "
                              f"ledger show`.")
        folder = self.path.parent if str(self.path.parent) else Path(".")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise LedgerError(f"The folder of the ledger {self.display} is not writable; SQLite needs it for "
                              f"its journal while a charge commits. Make the folder writable.")

    # -- connections --------------------------------------------------------------------------------------
    def _identity(self) -> tuple[int, int]:
        """(device, inode) of the file now at the path (LedgerError when it is gone)."""
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            raise LedgerError(f"The ledger {self.display} was deleted. Nothing was charged; a deleted ledger "
                              f"is never recreated silently. {NO_BLIND_RESTORE}.") from None
        except (OSError, ValueError) as err:
            raise LedgerError(f"The ledger {self.display} cannot be read: {err}.") from None
        return info.st_dev, info.st_ino

    def _connect(self) -> sqlite3.Connection:
        return self._connect_to(self.path)

    def _connect_to(self, path: Path) -> sqlite3.Connection:
        # mode=rw: SQLite must never create a missing ledger file (that would restart its spend at zero).
        uri = "file:" + urllib.parse.quote(os.path.abspath(path)) + "?mode=rw"
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT, isolation_level=None,
                                   check_same_thread=False)
        except _ERRORS as err:
            raise self.error(err) from None
        try:
            conn.execute("PRAGMA trusted_schema=OFF")
            conn.execute("PRAGMA cell_size_check=ON")
            conn.execute("PRAGMA synchronous=FULL")
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() != self.journal_mode:
                mode = conn.execute(f"PRAGMA journal_mode={self.journal_mode}").fetchone()[0]
                if str(mode).lower() != self.journal_mode:
                    raise LedgerError(f"The ledger {self.display} is in journal mode {mode!r} and another "
                                      f"process holds it; pandas_dp keeps ledgers in rollback-journal mode so "
                                      f"that the file alone holds every charge. Close the other process.")
        except _ERRORS as err:
            conn.close()
            raise self.error(err) from None
        except BaseException:
            conn.close()
            raise
        return conn

    def _take(self) -> tuple[sqlite3.Connection, tuple[int, int]]:
        ident = self._identity()
        with self._lock:
            idle = self._idle_here()
            while idle:
                conn, seen = idle.pop()
                if seen == ident:
                    return conn, ident
                conn.close()  # the file at the path was replaced: never write to the old one
        conn = self._connect()
        if self._identity() != ident:
            conn.close()
            raise LedgerError(f"The ledger {self.display} was replaced while it was being opened. Retry.")
        return conn, ident

    def _give(self, conn: sqlite3.Connection, ident: tuple[int, int]) -> None:
        self._keep_idle((conn, ident))

    def _close_item(self, item: tuple[sqlite3.Connection, tuple[int, int]]) -> None:
        item[0].close()

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[Txn]:
        conn, ident = self._take()
        try:
            conn.execute(begin)
        except _ERRORS as err:
            conn.close()
            raise self.error(err) from None
        ok = broken = False
        try:
            yield SQLTxn(conn, SQLITE)
            conn.execute("COMMIT")
            self.after_commit(conn)
            ok = True
        except _ERRORS as err:
            broken = True
            raise self.error(err) from None
        finally:
            if not ok and not broken:
                try:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                except _ERRORS:
                    broken = True
            if broken:
                try:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                except _ERRORS:
                    pass
                conn.close()
            else:
                self._give(conn, ident)

    def after_commit(self, conn: sqlite3.Connection) -> None:
        """Hook run after every commit (nothing: a rollback-journal commit is already in the main file)."""

    def write(self) -> Any:
        return self._transaction("BEGIN IMMEDIATE")

    def read(self) -> Any:
        return self._transaction("BEGIN")

    def create(self, meta: dict[str, str]) -> None:
        """Build the ledger in a hidden file next to the path, then link it into place (atomic, never overwrites).

        A process killed while creating leaves at most the hidden file: the
        path holds a complete ledger or nothing, so creating again works.
        """
        self.check_new()
        folder = self.path.parent if str(self.path.parent) else Path(".")
        try:
            fd, temp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".creating", dir=folder)
        except OSError as err:
            raise LedgerError(f"Cannot create a ledger at {self.display}: {err.strerror}. Pick a writable "
                              f"path.") from None
        os.close(fd)
        try:
            conn = self._connect_to(Path(temp))
            try:
                conn.execute("BEGIN IMMEDIATE")
                for statement in SQLITE.schema():
                    conn.execute(statement)
                txn = SQLTxn(conn, SQLITE)
                for key, value in meta.items():
                    txn.set_meta(key, value)
                conn.execute("COMMIT")
            finally:
                conn.close()
            with open(temp, "rb+") as f:
                os.fsync(f.fileno())
            try:
                os.link(temp, self.path)  # fails if anything is at the path: a ledger is never overwritten
            except FileExistsError:
                raise LedgerError(f"Cannot create a ledger at {self.display}: the path exists. Pick a new "
                                  f"path.") from None
            except OSError as err:
                raise LedgerError(f"Cannot create a ledger at {self.display}: {err.strerror}. Pick a writable "
                                  f"path on a file system with hard links.") from None
            _sync_folder(folder)
        except _ERRORS as err:
            raise self.error(err) from None
        finally:
            _remove(Path(temp))

    def integrity_check(self) -> None:
        """SQLite's own check of every page of the file (LedgerError naming the first problem).

        The check reads the whole file (about 0.5 s per 10^5 entries here). It
        runs on a private copy, taken under a read lock (a file copy, about 10x
        faster than the check), so a charge waits for the copy at most, never
        for the check; the copy is a hidden file next to the ledger, removed
        afterwards.
        """
        folder = self.path.parent if str(self.path.parent) else Path(".")
        try:
            fd, temp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".verifying", dir=folder)
        except OSError as err:
            raise LedgerError(f"The ledger {self.display}: cannot write the copy its check reads in its folder "
                              f"({err.strerror}). Make the folder writable.") from None
        os.close(fd)
        try:
            with self.read() as txn:
                txn.conn.execute("SELECT count(*) FROM pandas_dp_meta").fetchone()  # holds the read lock
                try:
                    shutil.copyfile(self.path, temp)
                except OSError as err:
                    raise LedgerError(f"The ledger {self.display}: cannot copy it for its check ({err.strerror}). "
                                      f"Free space in its folder and retry.") from None
            conn = sqlite3.connect(temp, isolation_level=None)
            try:
                found = [r[0] for r in conn.execute("PRAGMA integrity_check(5)").fetchall()]
            except _ERRORS as err:
                raise self.error(err) from None
            finally:
                conn.close()
        finally:
            _remove(Path(temp))
        if found != ["ok"]:
            raise LedgerError(f"The ledger {self.display} fails SQLite's integrity check ({'; '.join(found)[:300]}): "
                              f"the file is damaged. {NO_BLIND_RESTORE}.")

    def describe_foreign(self) -> str | None:
        """A hint when the file is a SQLite database but not a ledger of this format."""
        try:
            with self.read() as txn:
                names = {r[0] for r in txn.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except LedgerError:
            return None
        if {"budgets", "charges"} <= names and not set(TABLES) & names:
            return ("It is a ledger written by pandas_dp 0.1 (no hash chain). Create a new ledger with "
                    "pandas_dp.Ledger.create and record the old one's spent amount in your release plan.")
        return None

    # -- errors ------------------------------------------------------------------------------------------
    def error(self, err: Exception) -> LedgerError:
        """A LedgerError that says what went wrong with the file and what to do."""
        text = str(err)
        low = text.lower()
        if isinstance(err, UnicodeDecodeError):
            why = (f"it is not a readable pandas_dp ledger (bytes that are not UTF-8 where SQLite expects text): it "
                   f"is garbled. {NO_BLIND_RESTORE}")
        elif "locked" in low or "busy" in low:
            why = (f"another process held it for more than {BUSY_TIMEOUT:g} s ({text}). Nothing was charged; "
                   f"retry when the other process has finished")
        elif "readonly" in low or "read-only" in low:
            why = f"it cannot be written ({text}). Make the file and its folder writable"
        elif "not a database" in low or "malformed" in low or "corrupt" in low or "no such table" in low:
            why = (f"it is not a readable pandas_dp ledger ({text}): it is garbled, truncated or another kind of "
                   f"file. {NO_BLIND_RESTORE}; or create a ledger with pandas_dp.Ledger.create")
        elif "unable to open" in low:
            why = f"it cannot be opened ({text}). Check that the path and its folder exist and are accessible"
        elif "disk i/o" in low or "full" in low:
            why = f"the disk failed or is full ({text}). Nothing was charged by the failed step; free space and retry"
        else:
            why = f"SQLite failed: {text}"
        return LedgerError(f"The ledger {self.display}: {why}.")


def _sync_folder(folder: Path) -> None:
    """fsync a folder so a new name in it survives a crash (best effort)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove(path: Path) -> None:
    for suffix in ("", "-journal"):
        try:
            os.unlink(f"{path}{suffix}")
        except OSError:
            pass
