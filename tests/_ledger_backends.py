"""Ledger backends for the tests: fresh SQLite files or fresh PostgreSQL databases, and raw SQL to damage them."""

from __future__ import annotations

import sqlite3
import uuid
from dataclasses import dataclass
from typing import Callable

import pytest

import pandas_dp as pdp
from pandas_dp.accounting.ledger import _ledger


@dataclass
class Backend:
    """Makes fresh ledger locations and runs raw SQL on them (to damage them on purpose)."""

    kind: str
    new: Callable[[], str]

    def create(self) -> str:
        location = self.new()
        pdp.Ledger.create(location)
        return location

    def sql(self, location: str, statement: str, args: tuple = ()) -> list[tuple]:
        forget_connections()
        if self.kind == "sqlite":
            conn = sqlite3.connect(location, isolation_level=None)
            try:
                return conn.execute(statement, args).fetchall()
            finally:
                conn.close()
        import psycopg

        with psycopg.connect(location, autocommit=True) as conn:
            cur = conn.execute(statement.replace("?", "%s"), args)
            return cur.fetchall() if cur.description else []


def forget_connections() -> None:
    """Close every pooled connection of this process, so the next read goes to the file or server afresh."""
    for store in list(_ledger._STORES.values()):
        store.close()  # type: ignore[attr-defined]
    _ledger._STORES.clear()


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request, tmp_path) -> Backend:
    if request.param == "sqlite":
        return Backend("sqlite", lambda: str(tmp_path / f"l{uuid.uuid4().hex[:8]}.sqlite"))
    server = request.getfixturevalue("postgres_server")
    import _postgres_server

    return Backend("postgres", lambda: _postgres_server.new_database(server, f"l{uuid.uuid4().hex[:12]}"))


