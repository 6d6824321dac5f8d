"""The ledger's tables and one transaction class for both SQL backends (SQLite and PostgreSQL).

The two backends differ in four small ways, held by a :class:`Dialect`:
the parameter placeholder, how a row is locked (PostgreSQL ``FOR UPDATE``;
SQLite needs nothing because ``BEGIN IMMEDIATE`` locks the whole file), how a
fresh entry id is drawn, and the column types of the schema.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Iterator

from pandas_dp.accounting.ledger._records import BudgetRow, EntryRow
from pandas_dp.accounting.ledger._store import Txn

__all__ = ["Dialect", "SQLITE", "POSTGRES", "SQLTxn", "TABLES"]

TABLES = ("pandas_dp_meta", "pandas_dp_budgets", "pandas_dp_entries")
_BUDGET_COLS = [f.name for f in fields(BudgetRow)]
_ENTRY_COLS = [f.name for f in fields(EntryRow)]


def _quoted(cols: list[str]) -> str:
    return ", ".join(f'"{c}"' for c in cols)


_SCHEMA = """
CREATE TABLE pandas_dp_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE pandas_dp_budgets (
    "name" TEXT PRIMARY KEY, "position" {int} NOT NULL UNIQUE, "measure" TEXT NOT NULL, "total" TEXT NOT NULL,
    "created" TEXT NOT NULL, "parent" TEXT, "prev" TEXT NOT NULL, "genesis" TEXT NOT NULL,
    "spent" TEXT NOT NULL, "entries" {int} NOT NULL, "head" TEXT NOT NULL
);
CREATE TABLE pandas_dp_entries (
    "id" {id}, "budget" TEXT NOT NULL, "seq" {int} NOT NULL, "time" TEXT NOT NULL, "kind" TEXT NOT NULL,
    "method" TEXT NOT NULL, "columns" TEXT NOT NULL, "params" TEXT NOT NULL, "requested" TEXT NOT NULL,
    "measure" TEXT NOT NULL, "amount" TEXT NOT NULL, "spent" TEXT NOT NULL, "prev" TEXT NOT NULL,
    "hash" TEXT NOT NULL, "status" TEXT NOT NULL,
    UNIQUE ("budget", "seq")
);
"""


@dataclass(frozen=True)
class Dialect:
    """What differs between the SQL backends."""

    placeholder: str
    lock: str
    new_id: str
    int_type: str
    id_type: str

    def schema(self) -> list[str]:
        text = _SCHEMA.format(int=self.int_type, id=self.id_type)
        return [s.strip() for s in text.split(";") if s.strip()]

    def sql(self, text: str) -> str:
        return text.replace("?", self.placeholder)


SQLITE = Dialect(placeholder="?", lock="", new_id="SELECT COALESCE(MAX(id), 0) + 1 FROM pandas_dp_entries",
                 int_type="INTEGER", id_type="INTEGER PRIMARY KEY")
POSTGRES = Dialect(placeholder="%s", lock=" FOR UPDATE",
                   new_id="SELECT nextval(pg_get_serial_sequence('pandas_dp_entries', 'id'))",
                   int_type="BIGINT", id_type="BIGSERIAL PRIMARY KEY")


class SQLTxn(Txn):
    """A transaction on a DB-API connection of either backend (the caller begins and ends it)."""

    def __init__(self, conn: Any, dialect: Dialect, guarded: bool = False) -> None:
        self.conn = conn
        self.d = dialect
        self.guarded = guarded
        # A guarded ledger is written only through its functions, which take the locks themselves (analysts
        # may not lock rows FOR UPDATE): reads before the call are a preflight.
        self.lock = "" if guarded else dialect.lock

    def _rows(self, text: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        cur = self.conn.execute(self.d.sql(text), args)
        return list(cur.fetchall())

    def _run(self, text: str, args: tuple[Any, ...] = ()) -> None:
        self.conn.execute(self.d.sql(text), args)

    def meta(self) -> dict[str, str]:
        return {str(k): v for k, v in self._rows("SELECT key, value FROM pandas_dp_meta")}

    def set_meta(self, key: str, value: str) -> None:
        self._run("INSERT INTO pandas_dp_meta (key, value) VALUES (?, ?) "
                  "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, value))

    def budget(self, name: str) -> BudgetRow | None:
        rows = self._rows(f"SELECT {_quoted(_BUDGET_COLS)} FROM pandas_dp_budgets WHERE name = ?", (name,))
        return BudgetRow(*rows[0]) if rows else None

    def lock_budgets(self, names: list[str]) -> dict[str, BudgetRow]:
        found: dict[str, BudgetRow] = {}
        for name in sorted(set(names)):  # one fixed order for every writer: no deadlock
            rows = self._rows(f"SELECT {_quoted(_BUDGET_COLS)} FROM pandas_dp_budgets WHERE name = ?{self.lock}",
                              (name,))
            if rows:
                found[name] = BudgetRow(*rows[0])
        return found

    def lock_budget_list(self) -> None:
        if self.lock:
            self._rows(f"SELECT value FROM pandas_dp_meta WHERE key = 'budgets_head'{self.lock}")

    def lock_head(self) -> dict[str, str]:
        # The 'format' row exists in every ledger: locking it orders the writers of entries, so entry ids (drawn
        # after it) follow the order of the ledger head's chain.
        if self.lock:
            self._rows(f"SELECT value FROM pandas_dp_meta WHERE key = 'format'{self.lock}")
        return self.meta()

    def budgets(self) -> list[BudgetRow]:
        rows = self._rows(f'SELECT {_quoted(_BUDGET_COLS)} FROM pandas_dp_budgets ORDER BY "position"')
        return [BudgetRow(*r) for r in rows]

    def insert_budget(self, row: BudgetRow) -> None:
        marks = ", ".join("?" for _ in _BUDGET_COLS)
        self._run(f"INSERT INTO pandas_dp_budgets ({_quoted(_BUDGET_COLS)}) VALUES ({marks})",
                  tuple(getattr(row, c) for c in _BUDGET_COLS))

    def update_budget(self, row: BudgetRow) -> None:
        self._run('UPDATE pandas_dp_budgets SET "spent" = ?, "entries" = ?, "head" = ? WHERE "name" = ?',
                  (row.spent, row.entries, row.head, row.name))

    def last_entry(self, name: str) -> EntryRow | None:
        rows = self._rows(f'SELECT {_quoted(_ENTRY_COLS)} FROM pandas_dp_entries WHERE "budget" = ? '
                          f'ORDER BY "seq" DESC LIMIT 1', (name,))
        return EntryRow(*rows[0]) if rows else None

    def entries(self, name: str | None = None) -> Iterator[EntryRow]:
        if name is None:
            cur = self.conn.execute(f'SELECT {_quoted(_ENTRY_COLS)} FROM pandas_dp_entries ORDER BY "id"')
        else:
            cur = self.conn.execute(self.d.sql(f'SELECT {_quoted(_ENTRY_COLS)} FROM pandas_dp_entries '
                                               f'WHERE "budget" = ? ORDER BY "seq"'), (name,))
        while True:
            batch = cur.fetchmany(2048)
            if not batch:
                return
            for r in batch:
                yield EntryRow(*r)

    def entries_from(self, after_id: int, limit: int) -> list[EntryRow]:
        rows = self._rows(f'SELECT {_quoted(_ENTRY_COLS)} FROM pandas_dp_entries WHERE "id" > ? ORDER BY "id" '
                          f'LIMIT ?', (after_id, limit))
        return [EntryRow(*r) for r in rows]

    def entries_after(self, name: str, seq: int) -> Iterator[EntryRow]:
        cur = self.conn.execute(self.d.sql(f'SELECT {_quoted(_ENTRY_COLS)} FROM pandas_dp_entries '
                                           f'WHERE "budget" = ? AND "seq" > ? ORDER BY "seq"'), (name, seq))
        while True:
            batch = cur.fetchmany(2048)
            if not batch:
                return
            for r in batch:
                yield EntryRow(*r)

    def entry(self, entry_id: int) -> EntryRow | None:
        rows = self._rows(f'SELECT {_quoted(_ENTRY_COLS)} FROM pandas_dp_entries WHERE "id" = ?', (entry_id,))
        return EntryRow(*rows[0]) if rows else None

    def new_entry_id(self) -> int:
        return int(self._rows(self.d.new_id)[0][0])

    def insert_entry(self, row: EntryRow) -> None:
        marks = ", ".join("?" for _ in _ENTRY_COLS)
        self._run(f"INSERT INTO pandas_dp_entries ({_quoted(_ENTRY_COLS)}) VALUES ({marks})",
                  tuple(getattr(row, c) for c in _ENTRY_COLS))

    def set_status(self, entry_id: int, status: str, expected: str) -> None:
        if self.guarded:
            self._run("SELECT pandas_dp_set_status(?, ?, ?)", (entry_id, status, expected))
            return
        self._run('UPDATE pandas_dp_entries SET "status" = ? WHERE "id" = ? AND "status" = ?',
                  (status, entry_id, expected))
