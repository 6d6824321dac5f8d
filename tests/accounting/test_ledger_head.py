"""The ledger head: it commits to every charge, and a rolled-back ledger is refused or proven short.

A rollback is an older copy put back (a file copy, a dump restored) or a chain
rewritten consistently: every record verifies, but charges are gone and the
budget would be spent again. The tests make both on real SQLite files and a
real PostgreSQL server, then check that the process that saw the later head
refuses the ledger, and that an auditor holding a later head proves the loss
(``verify(heads=...)``) in a process that saw nothing.
"""

from __future__ import annotations

import shutil
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.accounting.ledger import _ops
from pandas_dp.accounting.ledger._records import parse_head
from pandas_dp.errors import LedgerError

from _ledger_backends import backend, forget_connections  # noqa: F401  (backend is a fixture)

TABLES = ("pandas_dp_meta", "pandas_dp_budgets", "pandas_dp_entries")


def spend(location: str, n: int, *, method: str = "m", total: float = 2.0) -> list[str]:
    """``n`` charges of 1/10 on budget 'census'; the head printed after each."""
    b = pdp.budget(total, ledger=location, name="census")
    return [b.spend(Fraction(1, 10), method=f"{method}:{i}").ledger_head for i in range(n)]


def snapshot(backend, location: str) -> dict[str, list[tuple]]:
    return {t: backend.sql(location, f"SELECT * FROM {t}") for t in TABLES}


def restore(backend, location: str, rows: dict[str, list[tuple]]) -> None:
    """Put back an older copy of every table (what restoring a dump or a file copy does), in one transaction."""
    forget_connections()
    if backend.kind == "sqlite":
        import sqlite3

        conn = sqlite3.connect(location)
        mark = "?"
    else:
        import psycopg

        conn = psycopg.connect(location)
        mark = "%s"
    with conn:
        for t in TABLES:
            conn.execute(f"DELETE FROM {t}")
            for r in rows[t]:
                conn.execute(f"INSERT INTO {t} VALUES ({', '.join(mark for _ in r)})", tuple(r))
    conn.close()


@pytest.fixture
def other_process(monkeypatch):
    """Forget the heads this process has seen and followed, as a process started afresh would."""
    def forget() -> None:
        forget_connections()
        monkeypatch.setattr(_ops, "_SEEN", {})
        monkeypatch.setattr(_ops, "_POINTS", {})
    return forget


def test_the_head_commits_to_every_charge_and_is_printed_with_each(backend):
    location = backend.create()
    root = pdp.Ledger(location).verify().head
    assert parse_head(root) is not None and root.startswith("0:")
    heads = spend(location, 3)
    assert [parse_head(h)[0] for h in heads] == [1, 2, 3] and len(set(heads)) == 3
    summary = pdp.Ledger(location).verify(heads=[root, *heads])
    assert summary.head == heads[-1] and summary.entries == 3 and summary.budgets_head
    # A reservation's charges move the same head (the reserve, each charge, the close and return entries).
    b = pdp.budget(2.0, ledger=location, name="census")
    with b.reserve(0.5) as plan:
        inside = plan.spend(0.25, method="inside").ledger_head
    assert parse_head(inside)[0] == 5
    assert parse_head(pdp.Ledger(location).verify(heads=[inside]).head)[0] == 7  # + close, + return
    # A release records the head after its charge in its params.
    frame = pd.DataFrame({"age": np.arange(50) % 90})
    with pdp.budget(1.0, ledger=location, name="tables"):
        result = frame.dp.histogram("age", bins=[0, 30, 60, 90], epsilon=0.5, rng=np.random.default_rng(0))
    assert result.params["ledger_head"] == pdp.Ledger(location).verify().head
    with pdp.budget(1.0):  # an in-memory budget has no head
        plain = frame.dp.histogram("age", bins=[0, 30, 60, 90], epsilon=0.5, rng=np.random.default_rng(0))
        assert "ledger_head" not in plain.params


def test_an_older_copy_put_back_is_refused_and_proven_short(backend, other_process):
    location = backend.create()
    early = spend(location, 3)[-1]
    old = snapshot(backend, location)
    later = spend(location, 3, method="later")[-1]
    b = pdp.budget(2.0, ledger=location, name="census")
    assert b.spent_exact == Fraction(6, 10)
    restore(backend, location, old)  # every record of the copy verifies: spent 0.5, ten charges forgotten
    with pytest.raises(LedgerError, match="rolled back") as err:
        b.spend(0.1, method="again")
    assert later in str(err.value) and "older copy" in str(err.value)
    for action in (lambda: pdp.budget(2.0, ledger=location, name="census"), lambda: pdp.Ledger(location).verify()):
        with pytest.raises(LedgerError, match="rolled back"):
            action()
    assert len(backend.sql(location, "SELECT id FROM pandas_dp_entries")) == 3  # nothing was charged
    # A process that saw nothing cannot tell from the ledger alone, but the auditor's later head proves it.
    other_process()
    assert pdp.Ledger(location).verify(heads=[early]).head == early
    other_process()
    with pytest.raises(LedgerError, match="does not hold head 6:.*dropped"):
        pdp.Ledger(location).verify(heads=[later])


def test_a_rewritten_history_with_as_many_entries_is_refused(backend, other_process):
    location = backend.create()
    spend(location, 5)
    old = snapshot(backend, location)
    later = spend(location, 5, method="first history")[-1]
    seen = dict(_ops._SEEN)
    restore(backend, location, old)
    other_process()
    rewritten = spend(location, 5, method="second history")[-1]  # another process spends on the old copy
    assert parse_head(rewritten)[0] == parse_head(later)[0] and rewritten != later
    forget_connections()
    _ops._SEEN.update(seen)  # back in the process that saw the first history
    with pytest.raises(LedgerError, match="rolled back"):
        pdp.budget(2.0, ledger=location, name="census")
    other_process()
    with pytest.raises(LedgerError, match="another history"):
        pdp.Ledger(location).verify(heads=[later])


def test_a_sqlite_file_copy_put_back_is_refused(tmp_path):
    path = tmp_path / "l.sqlite"
    pdp.Ledger.create(path)
    spend(str(path), 2)
    shutil.copyfile(path, tmp_path / "backup.sqlite")
    b = pdp.budget(2.0, ledger=path, name="census")
    with b:
        b.spend(0.5, method="after the backup")
    shutil.copyfile(tmp_path / "backup.sqlite", path)
    with b, pytest.raises(LedgerError, match="rolled back"):
        b.spend(0.5, method="spent again")


def test_a_ledger_without_a_head_gets_one_and_cannot_drop_it(backend, other_process):
    """A ledger written before heads existed is chained once on its next charge; deleting a head is refused."""
    location = backend.create()
    spend(location, 3)
    head = pdp.Ledger(location).verify().head
    backend.sql(location, "DELETE FROM pandas_dp_meta WHERE key IN ('entries', 'entries_head')")
    with pytest.raises(LedgerError, match="rolled back.*no head"):  # this process saw a head
        pdp.budget(2.0, ledger=location, name="census")
    other_process()
    assert pdp.Ledger(location).verify(heads=[head]).head == head  # the head is recomputed from the entries
    after = spend(location, 1)[-1]
    assert parse_head(after)[0] == 4 and pdp.Ledger(location).verify(heads=[head]).head == after
    assert backend.sql(location, "SELECT value FROM pandas_dp_meta WHERE key = 'entries'") == [("4",)]


@pytest.mark.parametrize("bad", ["", "10", "3:abc", "x:" + "0" * 64, "-1:" + "0" * 64])
def test_a_malformed_head_is_a_ledger_error(tmp_path, bad):
    path = tmp_path / "l.sqlite"
    pdp.Ledger.create(path)
    with pytest.raises(LedgerError, match="is not a ledger head"):
        pdp.Ledger(path).verify(heads=[bad])


def test_damage_messages_never_suggest_a_blind_restore(tmp_path):
    path = tmp_path / "l.sqlite"
    pdp.Ledger.create(path)
    spend(str(path), 2)
    forget_connections()
    import sqlite3

    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE pandas_dp_entries SET amount = '1/1000' WHERE seq = 2")
    with pytest.raises(LedgerError) as err:
        pdp.Ledger(path).verify()
    text = str(err.value)
    assert "Restore it from a backup" not in text and "--head" in text and "older copy" in text


def test_a_witness_refuses_an_older_copy_in_a_process_that_saw_nothing(backend, other_process, tmp_path):
    location = backend.new()
    witness = tmp_path / "witness" / "ledger.witness"
    witness.parent.mkdir()
    pdp.Ledger.create(location, witness=witness)
    old = snapshot(backend, location)
    later = spend(location, 3)[-1]
    assert witness.read_text().splitlines()[-1] == later.replace(":", " ")
    restore(backend, location, old)
    other_process()  # a fresh process: only the witness knows
    for action in (lambda: pdp.budget(2.0, ledger=location, name="census"), lambda: pdp.Ledger.open(location),
                   lambda: pdp.Ledger(location).verify()):
        with pytest.raises(LedgerError, match=f"witness .* records head {later}"):
            action()
    # A witness is never overwritten, never optional once named, and belongs to one ledger.
    with pytest.raises(LedgerError, match="the path exists"):
        pdp.Ledger.create(backend.new(), witness=witness)
    witness.unlink()
    other_process()
    with pytest.raises(LedgerError, match="is missing"):
        pdp.budget(2.0, ledger=location, name="census")


def test_a_witness_of_another_ledger_or_a_failed_create_leaves_nothing(tmp_path):
    first, second = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    pdp.Ledger.create(first, witness=tmp_path / "a.witness")
    pdp.Ledger.create(second, witness=tmp_path / "b.witness")
    spend(str(second), 1)
    shutil.copyfile(tmp_path / "a.witness", tmp_path / "b.witness")
    forget_connections()
    with pytest.raises(LedgerError, match="another ledger"):
        pdp.Ledger(second).verify()
    with pytest.raises(LedgerError, match="the path exists"):  # the ledger path is taken: no witness is left
        pdp.Ledger.create(first, witness=tmp_path / "c.witness")
    assert not (tmp_path / "c.witness").exists()


def test_reopening_verifies_from_the_checkpoint_and_still_sees_damage(backend, monkeypatch):
    from pandas_dp.accounting.ledger import _sql

    location = backend.create()
    spend(location, 4)
    pdp.budget(2.0, ledger=location, name="census")  # verified in full: the checkpoint is entry #4
    spend(location, 2, method="more")
    read: list[int] = []
    real = _sql.SQLTxn.entries_after

    def counted(self, name, seq):
        for e in real(self, name, seq):
            read.append(e.seq)
            yield e

    monkeypatch.setattr(_sql.SQLTxn, "entries", lambda *a, **k: pytest.fail("the whole chain was read"))
    monkeypatch.setattr(_sql.SQLTxn, "entries_after", counted)
    read.clear()
    assert pdp.budget(2.0, ledger=location, name="census").spent_exact == Fraction(6, 10)
    assert read == [4, 5, 6]  # the checkpoint entry, then what followed it
    monkeypatch.undo()
    # An edit after the checkpoint is caught on open; one before it by a full verification.
    backend.sql(location, "UPDATE pandas_dp_entries SET amount = '1/100' WHERE seq = 6")
    with pytest.raises(LedgerError, match="does not match its hash"):
        pdp.budget(2.0, ledger=location, name="census")
    backend.sql(location, "UPDATE pandas_dp_entries SET amount = '1/10' WHERE seq = 6")
    backend.sql(location, "UPDATE pandas_dp_entries SET amount = '1/100' WHERE seq = 2")
    pdp.budget(2.0, ledger=location, name="census")  # the suffix verifies: the spent amount is anchored there
    with pytest.raises(LedgerError, match="does not match its hash"):
        pdp.budget(2.0, ledger=location, name="census").verify()


def test_verify_reads_in_chunks_so_a_charge_commits_meanwhile(backend, monkeypatch):
    """verify holds no transaction across chunks: a charge made halfway commits at once and is left for later."""
    location = backend.create()
    spend(location, 10)
    b = pdp.budget(2.0, ledger=location, name="census")
    monkeypatch.setattr(_ops, "VERIFY_CHUNK", 3)
    real = _ops.head_step
    charged: list[str] = []

    def step(ledger_id, position, prev, entry):
        if position == 4 and not charged:  # between two chunks: no transaction of the verify is open
            charged.append(b.spend(Fraction(1, 10), method="during the verify").ledger_head)
        return real(ledger_id, position, prev, entry)

    monkeypatch.setattr(_ops, "head_step", step)
    first = pdp.Ledger(location).verify()
    monkeypatch.undo()
    assert first.entries == 10 and parse_head(charged[0])[0] == 11  # the verify covered its snapshot only
    assert pdp.Ledger(location).verify(heads=[first.head]).head == charged[0]


def test_the_witness_location_is_sealed_into_the_chain(backend, other_process, tmp_path):
    """Pointing the ledger at another witness (a forged one below its head) or at none is refused on open."""
    location = backend.new()
    witness = tmp_path / "ledger.witness"
    pdp.Ledger.create(location, witness=witness)
    spend(location, 3)
    lines = witness.read_text().splitlines()
    forged = tmp_path / "forged.witness"
    forged.write_text("\n".join(lines[:2]) + "\n")  # the same ledger id, only the empty head: "below" nothing
    for edit in (f"UPDATE pandas_dp_meta SET value = '{forged}' WHERE key = 'witness'",
                 "DELETE FROM pandas_dp_meta WHERE key = 'witness'"):
        original = backend.sql(location, "SELECT key, value FROM pandas_dp_meta WHERE key = 'witness'")
        backend.sql(location, edit)
        other_process()
        for action in (lambda: pdp.budget(2.0, ledger=location, name="census"), lambda: pdp.Ledger.open(location),
                       lambda: pdp.Ledger(location).verify()):
            with pytest.raises(LedgerError, match="fails verification.*witness was changed"):
                action()
        backend.sql(location, "DELETE FROM pandas_dp_meta WHERE key = 'witness'")
        backend.sql(location, "INSERT INTO pandas_dp_meta (key, value) VALUES (?, ?)", original[0])
        other_process()
        assert pdp.Ledger(location).verify().entries == 3  # put back: it verifies again


def test_a_durable_checkpoint_lets_a_new_process_verify_only_what_follows_it(backend, monkeypatch, tmp_path):
    """The checkpoint outlives the process; the chain after it is verified, a rewrite before it caught in full."""
    from pandas_dp.accounting.ledger import _checkpoint, _sql

    monkeypatch.setenv("PANDAS_DP_CHECKPOINTS", str(tmp_path / "checkpoints"))
    monkeypatch.setattr(_checkpoint, "DURABLE_MIN", 4)

    def new_process() -> None:
        forget_connections()
        monkeypatch.setattr(_ops, "_SEEN", {})
        monkeypatch.setattr(_ops, "_CHECKPOINTS", {})

    location = backend.create()
    spend(location, 3)
    old = snapshot(backend, location)
    spend(location, 2, method="more")
    new_process()
    pdp.budget(2.0, ledger=location, name="census")  # verified in full; the checkpoint is entry #5, on disk
    assert len(list((tmp_path / "checkpoints").glob("*.json"))) == 1
    spend(location, 2, method="after the checkpoint")
    new_process()
    read: list[int] = []
    real = _sql.SQLTxn.entries_after

    def counted(self, name, seq):
        for e in real(self, name, seq):
            read.append(e.seq)
            yield e

    with monkeypatch.context() as m:
        m.setattr(_sql.SQLTxn, "entries", lambda *a, **k: pytest.fail("the whole chain was read"))
        m.setattr(_sql.SQLTxn, "entries_after", counted)
        assert pdp.budget(2.0, ledger=location, name="census").spent_exact == Fraction(7, 10)
    assert read == [5, 6, 7]  # the checkpoint entry, then what followed it
    # The chain after the checkpoint (now #7) is still verified by a new process; so is the checkpoint entry.
    spend(location, 1, method="after the second checkpoint")
    for seq in (8, 7):
        backend.sql(location, f"UPDATE pandas_dp_entries SET amount = '1/100' WHERE seq = {seq}")
        new_process()
        with pytest.raises(LedgerError, match="does not match its hash"):
            pdp.budget(2.0, ledger=location, name="census")
        backend.sql(location, f"UPDATE pandas_dp_entries SET amount = '1/10' WHERE seq = {seq}")
    # A rewrite before the checkpoint: the open trusts the anchored prefix; a full verify catches it.
    backend.sql(location, "UPDATE pandas_dp_entries SET amount = '1/100' WHERE seq = 2")
    new_process()
    assert pdp.budget(2.0, ledger=location, name="census").spent_exact == Fraction(8, 10)  # anchored at #7
    from pandas_dp.cli.ledger import add_parser, run
    import argparse

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    assert run(parser.parse_args(["ledger", "verify", location])) == 2
    # An older copy (3 entries) put back is refused by a new process, without a witness: the checkpoint knows.
    restore(backend, location, old)
    new_process()
    with pytest.raises(LedgerError, match="entry #8 .* which an earlier process of this user .* verified, is gone"):
        pdp.budget(2.0, ledger=location, name="census")



def test_a_fresh_read_overtaken_by_other_threads_is_not_a_rollback(backend, monkeypatch):
    """A stale snapshot is confirmed on a fresh one; while the fresh read runs, other threads may commit and note
    later heads. Those prove nothing about it: it is held to the mark as it was before it was taken (eight threads
    raced here under load: a fresh head of 17 against a mark of 20 noted meanwhile)."""
    from pandas_dp.accounting.ledger._ledger import store_for

    location = backend.create()
    heads = [parse_head(h) for h in spend(location, 4)]
    store = store_for(location)
    with store.read() as txn:
        now = txn.meta()
    ledger_id = now["ledger_id"]
    stale = dict(now, entries=str(heads[2][0]), entries_head=heads[2][1])   # a snapshot taken before the 4th
    real_fresh = _ops._fresh_meta

    def fresh_then_overtaken(store):
        meta = real_fresh(store)                                             # the fresh snapshot: head 4
        _ops.note_head(store, ledger_id, 6, "f" * 64, check=False)           # meanwhile: two more charges, noted
        return meta

    monkeypatch.setattr(_ops, "_fresh_meta", fresh_then_overtaken)
    _ops._SEEN[ledger_id] = heads[3]
    _ops._note_or_confirm(store, stale)                   # stale 3 < 4: confirmed on the fresh read (4), not refused
    assert _ops.seen_head(ledger_id) == (6, "f" * 64)     # the later mark stays
    # A fresh read below the mark as it was before it is a rollback.
    _ops._SEEN[ledger_id] = (5, "e" * 64)
    with pytest.raises(LedgerError, match="rolled back.*head 5:"):
        _ops._note_or_confirm(store, stale)


def test_a_witness_read_before_the_fresh_snapshot_is_what_the_snapshot_is_held_to(backend, monkeypatch, tmp_path):
    """The witness check, like the head check, confirms a stale snapshot on a fresh one: the witness is read
    first, so every head it holds was committed before the fresh snapshot; heads appended while that snapshot is
    taken (other writers) prove nothing about it. A fresh snapshot below the witness read before it is refused."""
    from pandas_dp.accounting.ledger._ledger import store_for
    from pandas_dp.accounting.ledger._witness import witness_of

    location = backend.new()
    path = tmp_path / "ledger.witness"
    pdp.Ledger.create(location, witness=path)
    heads = [parse_head(h) for h in spend(location, 4)]
    store = store_for(location)
    with store.read() as txn:
        now = txn.meta()
    stale = dict(now, entries=str(heads[2][0]), entries_head=heads[2][1])
    real_fresh = _ops._fresh_meta

    def fresh_then_appended(store):
        meta = real_fresh(store)                          # the fresh snapshot: head 4
        witness_of(now, store).append(6, "f" * 64)        # meanwhile another writer commits and appends a head
        return meta

    monkeypatch.setattr(_ops, "_fresh_meta", fresh_then_appended)
    _ops.check_witness(store, stale)                      # stale 3 < 4: confirmed on the fresh snapshot, not refused
    with pytest.raises(LedgerError, match="witness .* records head 6:"):
        _ops.check_witness(store, stale)                  # now the witness read first already holds 6 > 4
