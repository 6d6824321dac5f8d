"""Ledgers: explicit creation, bad locations, the hash chain, damage, O(1) charges, nesting, both backends.

Every damage case must end in ``LedgerError`` or in an exact resume (the same
spent amount and the same entries), never in a lower spend: that is the
property that keeps a damaged ledger from silently restarting at zero.
"""

from __future__ import annotations

import os
import pickle
import re
import shutil
import sqlite3
import stat
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import pytest

import pandas_dp as pdp
from pandas_dp.errors import LedgerError

from _ledger_backends import backend, forget_connections  # noqa: F401  (backend is a fixture)


def charged(location: str, *, n: int = 10, eps: str = "1/10", total: float = 2.0,
            name: str = "census") -> pdp.Budget:
    b = pdp.budget(total, ledger=location, name=name)
    with b:
        for i in range(n):
            b.spend(Fraction(eps), method=f"histogram:{i}", columns=["age"], params={"i": i}).finish("ok")
    return b


# -- creating and opening ---------------------------------------------------------------------------------


def test_budget_opens_only_a_created_ledger(tmp_path):
    path = tmp_path / "new.sqlite"
    with pytest.raises(LedgerError, match=r"does not exist.*Ledger\.create"):
        pdp.budget(1.0, ledger=path)
    assert not path.exists()  # never created implicitly
    ledger = pdp.Ledger.create(path)
    assert path.is_file() and ledger.location == str(path)
    b = pdp.budget(1.0, ledger=path)
    assert b.name == "default" and b.spent == 0 and list(b.ledger.columns)[-1] == "measure"
    with pytest.raises(LedgerError, match="never overwritten"):
        pdp.Ledger.create(path)


@pytest.mark.parametrize("case", ["missing folder", "directory", "read-only file", "read-only folder", "empty",
                                  "memory", "number", "bytes", "nul", "garbage", "foreign sqlite", "old format",
                                  "surrogate", "none"])
def test_bad_locations_raise_ledger_error_naming_the_fix(tmp_path, case):
    good = tmp_path / "good.sqlite"
    pdp.Ledger.create(good)
    location: object
    if case == "missing folder":
        location = tmp_path / "nope" / "l.sqlite"
    elif case == "directory":
        location = tmp_path
    elif case == "read-only file":
        location = tmp_path / "ro.sqlite"
        pdp.Ledger.create(location)
        os.chmod(location, stat.S_IRUSR)
    elif case == "read-only folder":
        folder = tmp_path / "ro"
        folder.mkdir()
        location = folder / "l.sqlite"
        pdp.Ledger.create(location)
        os.chmod(folder, stat.S_IRUSR | stat.S_IXUSR)
        if os.access(folder, os.W_OK):  # root ignores permission bits on folders
            os.chmod(folder, stat.S_IRWXU)
            pytest.skip("running as root: a folder without write bits is still writable")
    elif case == "empty":
        location = ""
    elif case == "memory":
        location = ":memory:"
    elif case == "number":
        location = 123
    elif case == "bytes":
        location = b"\xff\xfe"
    elif case == "nul":
        location = str(tmp_path / "a\x00b")
    elif case == "garbage":
        location = tmp_path / "garbage.sqlite"
        location.write_bytes(os.urandom(5000))
    elif case == "foreign sqlite":
        location = tmp_path / "foreign.sqlite"
        with sqlite3.connect(location) as conn:
            conn.execute("CREATE TABLE t (x)")
    elif case == "old format":
        location = tmp_path / "old.sqlite"
        with sqlite3.connect(location) as conn:
            conn.execute("CREATE TABLE budgets (name TEXT PRIMARY KEY, total TEXT, created TEXT)")
            conn.execute("CREATE TABLE charges (id INTEGER PRIMARY KEY, budget TEXT, epsilon TEXT)")
    elif case == "surrogate":
        location = str(tmp_path / "bad\udcff.sqlite")
    else:
        location = None
    if case != "none":
        with pytest.raises(LedgerError) as info:
            pdp.budget(1.0, ledger=location)
        message = str(info.value)
        assert "ledger" in message.lower() and len(message) > 40
        if case == "old format":
            assert "pandas_dp 0.1" in message
        if case in ("garbage", "foreign sqlite"):
            assert "not a" in message
    if case not in ("directory", "read-only file", "garbage", "foreign sqlite", "old format"):
        with pytest.raises(LedgerError):
            pdp.Ledger.create(location)  # type: ignore[arg-type]
    if case == "read-only file":
        os.chmod(location, stat.S_IRUSR | stat.S_IWUSR)


def test_reopening_resumes_exactly_and_refuses_another_total_or_measure(backend):
    location = backend.create()
    charged(location, n=3, eps="1/10")
    forget_connections()
    again = pdp.budget(2.0, ledger=location, name="census")
    assert again.spent_exact == Fraction(3, 10) and len(again.ledger) == 3
    with pytest.raises(pdp.ParameterError, match="already holds a budget named 'census'.*new name="):
        pdp.budget(3.0, ledger=location, name="census")
    with pytest.raises(pdp.ParameterError, match=r"rho=.*\(zcdp\)"):
        pdp.budget(rho=2.0, ledger=location, name="census")
    z = pdp.budget(rho=0.5, ledger=location, name="zcdp")
    with z:
        z.spend(Fraction(1, 2), method="pure release")  # epsilon 1/2 costs rho 1/8
    assert pdp.budget(rho=0.5, ledger=location, name="zcdp").spent_exact == Fraction(1, 8)
    assert list(z.ledger.columns)[5] == "rho" and z.ledger["measure"].tolist() == ["zcdp"]
    summary = pdp.Ledger.open(location).verify()
    assert (summary.budgets, summary.entries) == (2, 4)


def test_every_charge_is_in_the_main_file_when_spend_returns(tmp_path):
    path = tmp_path / "l.sqlite"
    pdp.Ledger.create(path)
    b = pdp.budget(1.0, ledger=path, name="x")
    with b:
        b.spend(0.25, method="m")
        # No journal or WAL file remains: the main file alone holds the charge.
        assert sorted(p.name for p in tmp_path.iterdir()) == ["l.sqlite"]
        copy = tmp_path / "copy" / "l.sqlite"
        copy.parent.mkdir()
        shutil.copyfile(path, copy)
    assert pdp.budget(1.0, ledger=copy, name="x").spent_exact == Fraction(1, 4)
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "delete"


# -- the hash chain and its verification ---------------------------------------------------------------------

EDITS = {
    "amount": ("UPDATE pandas_dp_entries SET amount = '1/100' WHERE seq = 3", "does not match its hash"),
    "time": ("UPDATE pandas_dp_entries SET time = '2001-01-01T00:00:00+00:00' WHERE seq = 5",
             "does not match its hash"),
    "delete last": ("DELETE FROM pandas_dp_entries WHERE seq = 10", "running total"),
    "delete middle": ("DELETE FROM pandas_dp_entries WHERE seq = 4", "out of place"),
    "lower spent": ("UPDATE pandas_dp_budgets SET spent = '0'", "running total"),
    "raise total": ("UPDATE pandas_dp_budgets SET total = '100'", "definition was changed"),
    "delete budget": ("DELETE FROM pandas_dp_budgets WHERE name = 'census'", "budget"),
    "meta count": ("UPDATE pandas_dp_meta SET value = '5' WHERE key = 'budgets'", "records 5 budgets"),
    "no meta": ("DELETE FROM pandas_dp_meta", "not a pandas_dp ledger"),
    "bad status": ("UPDATE pandas_dp_entries SET status = 'refunded' WHERE seq = 2", "status"),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_edits_fail_verification(backend, edit):
    location = backend.create()
    charged(location)
    statement, phrase = EDITS[edit]
    backend.sql(location, statement)
    if edit == "delete budget":
        backend.sql(location, "DELETE FROM pandas_dp_entries WHERE budget = 'census'")
    with pytest.raises(LedgerError) as info:
        b = pdp.budget(2.0, ledger=location, name="census")
        b.spend(0.1, method="after the edit")
    assert phrase in str(info.value), str(info.value)
    with pytest.raises(LedgerError):
        pdp.Ledger(location).verify()


def test_status_is_outside_the_hash_and_a_charge_rechecks_its_budget(backend):
    location = backend.create()
    b = charged(location, n=2)
    backend.sql(location, "UPDATE pandas_dp_entries SET status = 'failed' WHERE seq = 1")
    assert pdp.Ledger(location).verify().entries == 2  # status may change: ok/failed is informational
    assert b.ledger["status"].tolist() == ["failed", "ok"]
    # A charge verifies the budget row against its last entry (constant work) before appending.
    backend.sql(location, "UPDATE pandas_dp_budgets SET spent = '1/10' WHERE name = 'census'")
    with b, pytest.raises(LedgerError, match="running state"):
        b.spend(0.1, method="x")


def test_copying_entries_between_ledgers_is_detected(tmp_path):
    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    pdp.Ledger.create(a)
    pdp.Ledger.create(b)
    charged(str(a))
    pdp.budget(2.0, ledger=b, name="census")
    forget_connections()
    with sqlite3.connect(b) as conn:  # graft a's budget and entries onto b (a different ledger id)
        conn.execute("ATTACH ? AS other", (str(a),))
        conn.execute("DELETE FROM pandas_dp_budgets")
        conn.execute("INSERT INTO pandas_dp_budgets SELECT * FROM other.pandas_dp_budgets")
        conn.execute("INSERT INTO pandas_dp_entries SELECT * FROM other.pandas_dp_entries")
    with pytest.raises(LedgerError):
        pdp.budget(2.0, ledger=b, name="census")


# -- damage to the file ------------------------------------------------------------------------------------------


def _outcome(path: Path) -> object:
    """What reopening gives: 'LedgerError', or (spent, number of entries, hashes)."""
    forget_connections()
    try:
        b = pdp.budget(2.0, ledger=path, name="census")
        frame = pdp.Ledger(path).entries("census")
        return b.spent_exact, len(b.ledger), tuple(frame["hash"])
    except LedgerError:
        return "LedgerError"


@pytest.fixture
def damaged_copy(tmp_path):
    """A ledger spent 1.0 of 2.0 in ten charges, and the exact outcome of reopening it undamaged."""
    path = tmp_path / "ledger.sqlite"
    pdp.Ledger.create(path)
    charged(str(path))
    intact = _outcome(path)
    assert intact != "LedgerError" and intact[0] == 1 and intact[1] == 10
    return path, intact


def test_deleted_ledger_is_never_recreated(damaged_copy):
    path, _ = damaged_copy
    b = pdp.budget(2.0, ledger=path, name="census")
    path.unlink()
    with b, pytest.raises(LedgerError, match="deleted"):  # a live budget does not write to the deleted file
        b.spend(0.1, method="x")
    assert _outcome(path) == "LedgerError" and not path.exists()


@pytest.mark.parametrize("keep", [0, 100, 4096, "half", "minus one page"])
def test_truncated_ledger(damaged_copy, keep):
    path, intact = damaged_copy
    size = path.stat().st_size
    keep = {"half": size // 2, "minus one page": size - 4096}.get(keep, keep)  # type: ignore[arg-type]
    with open(path, "r+b") as f:
        f.truncate(keep)
    assert _outcome(path) in ("LedgerError", intact)
    if keep == 0:
        assert _outcome(path) == "LedgerError"


def test_garbled_bytes_anywhere(damaged_copy):
    """32 bytes of noise at 60 offsets across the file, each on a fresh copy."""
    path, intact = damaged_copy
    original = path.read_bytes()
    rng = __import__("random").Random(12)
    outcomes = []
    for offset in sorted(rng.sample(range(len(original) - 32), 60)):
        damaged = bytearray(original)
        damaged[offset:offset + 32] = bytes(rng.getrandbits(8) for _ in range(32))
        path.write_bytes(bytes(damaged))
        outcome = _outcome(path)
        assert outcome in ("LedgerError", intact), (offset, outcome)
        outcomes.append(outcome == "LedgerError")
    assert any(outcomes)  # some of the noise hit live records and was caught


@pytest.mark.parametrize("suffix", ["-wal", "-journal", "-shm"])
@pytest.mark.parametrize("content", ["garbage", "empty"])
def test_stray_journal_or_wal_files(damaged_copy, suffix, content):
    path, intact = damaged_copy
    Path(f"{path}{suffix}").write_bytes(os.urandom(8192) if content == "garbage" else b"")
    assert _outcome(path) in ("LedgerError", intact)


CRASH_MID_TRANSACTION = r"""
import os, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA cache_size=1")  # spill uncommitted pages into the main file early
conn.execute("BEGIN IMMEDIATE")
conn.execute("UPDATE pandas_dp_budgets SET spent = '0'")  # a lower spend, never committed
for i in range(3000):
    conn.execute("INSERT INTO pandas_dp_entries VALUES (?, 'junk', ?, 't', 'charge', 'm', 'c', '{}', '{}', 'pure', "
                 "'1', '1', 'p', 'h', 'ok')", (100000 + i, 100000 + i))
os._exit(0)  # dies holding the transaction: a hot journal is left next to the file
"""


@pytest.mark.parametrize("journal", ["kept", "deleted", "garbled"])
def test_crash_mid_transaction_then_the_journal_is_kept_deleted_or_garbled(damaged_copy, journal):
    path, intact = damaged_copy
    forget_connections()
    subprocess.run([sys.executable, "-c", CRASH_MID_TRANSACTION, str(path)], check=True, timeout=120)
    hot = Path(f"{path}-journal")
    assert hot.exists() and hot.stat().st_size > 0
    if journal == "deleted":
        hot.unlink()
    elif journal == "garbled":
        data = bytearray(hot.read_bytes())
        data[100:400] = os.urandom(300)
        hot.write_bytes(bytes(data))
    outcome = _outcome(path)
    assert outcome in ("LedgerError", intact)
    if journal == "kept":
        assert outcome == intact  # SQLite rolls the hot journal back


HOLDER = r"""
import sys, time
from fractions import Fraction
import pandas_dp as pdp
path, ready = sys.argv[1:3]
b = pdp.budget(2.0, ledger=path, name="census")
with b:
    for i in range(5):
        b.spend(Fraction(1, 10), method=f"held:{i}")
    open(ready, "w").close()
    time.sleep(60)
"""


def test_copy_only_backup_while_another_process_holds_the_ledger(damaged_copy, tmp_path):
    path, _ = damaged_copy
    ready, errors = tmp_path / "ready", tmp_path / "stderr"
    with open(errors, "wb") as err:
        child = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), str(ready)], stdout=subprocess.DEVNULL,
                                 stderr=err, cwd=Path(__file__).resolve().parents[2])
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert child.poll() is None, errors.read_text()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        backup = tmp_path / "backup" / "ledger.sqlite"
        backup.parent.mkdir()
        shutil.copyfile(path, backup)  # the main file only, while the holder keeps its connection open
    finally:
        child.kill()
        child.wait()
    restored = pdp.budget(2.0, ledger=backup, name="census")
    assert restored.spent_exact == Fraction(3, 2) and len(restored.ledger) == 15


def test_empty_file_is_refused(tmp_path):
    path = tmp_path / "l.sqlite"
    path.touch()
    with pytest.raises(LedgerError, match="empty"):
        pdp.budget(1.0, ledger=path)


# -- charges: constant cost, nesting on one file and on several ---------------------------------------------------


def test_a_charge_reads_a_constant_number_of_rows(tmp_path, monkeypatch):
    """The statements of a charge are the same on a short and a long ledger, and none scans the entries."""
    from pandas_dp.accounting.ledger import _sql, _sqlite

    def grow(path: Path, n: int) -> None:
        from pandas_dp.accounting.ledger._ops import post, transact

        b = pdp.budget(10**6, ledger=path, name="census")
        store = b._store
        postings = [b._posting(pdp.privacy.loss.PureDP(Fraction(1, 10)), pdp.privacy.loss.PureDP(Fraction(1, 10)), kind="charge",
                               method="bulk", columns="x", params="{}")] * n
        transact([store], lambda txns: post(store, txns[store.key], postings))

    statements: list[str] = []
    real = _sqlite.SQLiteStore._connect

    def traced(self):
        conn = real(self)
        conn.set_trace_callback(statements.append)
        return conn

    monkeypatch.setattr(_sqlite.SQLiteStore, "_connect", traced)
    monkeypatch.setattr(_sql.SQLTxn, "entries", lambda *a, **k: pytest.fail("a charge iterated the entries"))
    shapes = {}
    for n in (20, 3000):
        path = tmp_path / f"l{n}.sqlite"
        pdp.Ledger.create(path)
        monkeypatch.undo()  # grow (and open) with the real methods
        grow(path, n)
        b = pdp.budget(10**6, ledger=path, name="census")
        monkeypatch.setattr(_sqlite.SQLiteStore, "_connect", traced)
        monkeypatch.setattr(_sql.SQLTxn, "entries", lambda *a, **k: pytest.fail("a charge iterated the entries"))
        forget_connections()
        statements.clear()
        b.spend(0.5, method="probe")
        shapes[n] = [re.sub(r"'[^']*'|\b[0-9]+\b", "?", s) for s in statements]
        plans = []
        conn = sqlite3.connect(path)
        for s in statements:
            if s.startswith(("SELECT", "UPDATE", "INSERT")) and "pandas_dp_meta" not in s:
                plans += [row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + s)]
        conn.close()
        assert not [p for p in plans if p.startswith("SCAN") and "pandas_dp_entries" in p], plans
    assert shapes[20] == shapes[3000]


def test_nested_budgets_on_one_file_use_one_transaction(backend, monkeypatch):
    location = backend.create()
    outer = pdp.budget(1.0, ledger=location, name="outer")
    inner = pdp.budget(0.5, ledger=location, name="inner")
    store = outer._store
    writes = []
    real = type(store).write
    monkeypatch.setattr(type(store), "write", lambda self: writes.append(1) or real(self))
    start = time.monotonic()
    with outer:
        with inner:
            charge = inner.spend(0.25, method="nested")
            assert len(writes) == 1
            with pytest.raises(pdp.BudgetExceededError, match="budget 'inner'"):
                inner.spend(0.3, method="too much for inner")
        outer.spend(0.6, method="outer alone")
        with inner, pytest.raises(pdp.BudgetExceededError, match="budget 'outer'"):
            inner.spend(0.2, method="too much for outer")
    assert time.monotonic() - start < 10  # no deadlock on the shared file (it used to wait 60 s)
    assert outer.spent_exact == Fraction(17, 20) and inner.spent_exact == Fraction(1, 4)
    assert charge.ledger_id == inner.ledger["id"].iloc[0] and charge.entries[1][0] is outer
    assert pdp.Ledger(location).verify().entries == 3


def test_nested_budgets_on_two_files_all_or_nothing(tmp_path):
    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    pdp.Ledger.create(a)
    pdp.Ledger.create(b)
    with pdp.budget(0.3, ledger=a, name="outer") as outer:
        with pdp.budget(1.0, ledger=b, name="inner") as inner:
            inner.spend(0.2, method="both")
            with pytest.raises(pdp.BudgetExceededError):
                inner.spend(0.2, method="outer is short")
    assert outer.spent_exact == inner.spent_exact == Fraction(1, 5)
    assert len(outer.ledger) == len(inner.ledger) == 1


# -- the command line --------------------------------------------------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    from _cli import run  # python -m pandas_dp (in-process by default: tests/_cli.py)

    return run("ledger", *args)


def test_ledger_init_verify_show(tmp_path):
    path = tmp_path / "l.sqlite"
    done = _cli("init", str(path))
    assert done.returncode == 0 and "Created an empty ledger" in done.stdout
    again = _cli("init", str(path))
    assert again.returncode == 2 and "never overwritten" in again.stderr and "Traceback" not in again.stderr
    charged(str(path), n=3)
    verify = _cli("verify", str(path))
    assert verify.returncode == 0 and verify.stdout.startswith("ok: ") and "3 entries" in verify.stdout
    assert len(verify.stdout.strip().splitlines()) == 1
    show = _cli("show", str(path))
    assert show.returncode == 0 and "census" in show.stdout and "histogram:2" in show.stdout
    forget_connections()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE pandas_dp_entries SET amount = '1/1000' WHERE seq = 2")
    broken = _cli("verify", str(path))
    assert broken.returncode == 2 and broken.stderr.startswith("FAILED: ") and "entry 2" in broken.stderr
    assert _cli("verify", str(tmp_path / "missing.sqlite")).returncode == 2


def test_a_ledger_deleted_and_created_again_is_not_charged_silently(tmp_path):
    path = tmp_path / "l.sqlite"
    pdp.Ledger.create(path)
    live = charged(str(path), n=3)
    saved = pickle.dumps(live)
    path.unlink()
    pdp.Ledger.create(path)  # someone starts over at the same path
    with live, pytest.raises(LedgerError, match="replaced by another ledger"):
        live.spend(0.1, method="x")
    forget_connections()
    fresh = pdp.budget(2.0, ledger=path, name="census")  # a new budget row, as a fresh start would make
    assert fresh.spent == 0
    restored = pickle.loads(saved)
    with pytest.raises(LedgerError, match="deleted and made again"):
        restored.spent
