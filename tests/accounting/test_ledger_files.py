"""Ledger files that are garbled in ways SQLite reports oddly, and a creation killed midway."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

import pandas_dp as pdp
from pandas_dp.__main__ import main
from pandas_dp.errors import LedgerError

from _ledger_backends import backend, forget_connections  # noqa: F401  (backend is a fixture)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def ledger(tmp_path) -> Path:
    path = tmp_path / "l.sqlite"
    pdp.Ledger.create(path)
    b = pdp.budget(1.0, ledger=path, name="census")
    for i in range(3):
        b.spend(Fraction(1, 10), method=f"m:{i}")
    forget_connections()
    return path


def test_bytes_that_are_not_utf8_in_the_schema_are_a_ledger_error(ledger, capsys):
    data = bytearray(ledger.read_bytes())
    data[data.index(b"CREATE TABLE pandas_dp_meta") + 8] = 0xFF  # SQLite's error message is then not UTF-8
    ledger.write_bytes(bytes(data))
    for action in (lambda: pdp.Ledger(ledger).verify(), lambda: pdp.budget(1.0, ledger=ledger, name="census"),
                   lambda: pdp.Ledger(ledger).entries()):
        with pytest.raises(LedgerError, match="not UTF-8"):
            action()
    assert main(["ledger", "verify", str(ledger)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("FAILED: ") and "not UTF-8" in err and "Traceback" not in err


def test_a_garbled_time_in_a_listing_is_a_ledger_error(ledger):
    with sqlite3.connect(ledger) as conn:
        conn.execute("UPDATE pandas_dp_entries SET time = '2026-11-26\x0313:07' WHERE seq = 2")
        conn.execute("UPDATE pandas_dp_budgets SET created = 'then'")
    with pytest.raises(LedgerError, match="time is not a time"):
        pdp.Ledger(ledger).entries()
    with pytest.raises(LedgerError, match="creation time is not a time"):
        pdp.Ledger(ledger).budgets()


KILLED_CREATE = r"""
import os, sys
import pandas_dp as pdp
from pandas_dp.accounting.ledger import _sql
_sql.SQLTxn.set_meta = lambda *a: os._exit(0)  # dies while the ledger's tables are being written
pdp.Ledger.create(sys.argv[1])
"""


@pytest.mark.slow  # a kill/concurrency test with real processes: the slow step runs it
def test_a_create_killed_midway_leaves_the_path_free(tmp_path):
    path = tmp_path / "l.sqlite"
    subprocess.run([sys.executable, "-c", KILLED_CREATE, str(path)], check=True, timeout=120, cwd=ROOT)
    assert not path.exists()  # at most a hidden '.l.sqlite.*.creating' file is left
    assert all(p.name.startswith(".l.sqlite.") for p in tmp_path.iterdir())  # and its journal
    pdp.Ledger.create(path)
    assert pdp.Ledger(path).verify().entries == 0
    with pytest.raises(LedgerError, match="the path exists"):
        pdp.Ledger.create(path)
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == ["l.sqlite"]


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_a_stalled_postgresql_server_raises_a_ledger_error_within_the_bound(backend, monkeypatch):
    import os
    import signal

    from pandas_dp.accounting.ledger import _postgres

    location = backend.create()
    b = pdp.budget(1.0, ledger=location, name="census")
    b.spend(Fraction(1, 10), method="before")
    store = b._store
    conn = store._take()  # the pooled connection the next charge uses, and the server process behind it
    pid = conn.info.backend_pid
    store._give(conn)
    monkeypatch.setattr(_postgres, "WRITE_BOUND_S", 1.0)
    os.kill(pid, signal.SIGSTOP)  # the server stalls: it answers nothing, not even a cancel
    try:
        with pytest.raises(LedgerError, match="did not answer within 1 s"):
            b.spend(Fraction(1, 10), method="stalled")
    finally:
        os.kill(pid, signal.SIGCONT)
    b.spend(Fraction(1, 10), method="after")  # a fresh connection
    assert b.spent_exact == Fraction(2, 10) and pdp.Ledger(location).verify().entries == 2
