"""Rollbacks that keep ``meta`` or pad past the witness, and a witness that cannot be written (issue 41, 1-3).

Each attack is made with plain SQL on a real SQLite file and a real PostgreSQL
database, each ledger with a witness file, and must be refused by a live
process (one that saw the later spend), by a fresh one (nothing but the ledger
and its witness), and by ``ledger verify``, without any ``--head``:

1. a budget's last entries deleted and its row set back to an earlier entry,
   ``meta`` (the ledger head) left alone: the ledger's own chain of entries no
   longer reaches its head, and the budget row is not what that chain gives it;
2. an older copy put back and padded past the witness with valid entries
   (chained as docs/guide/budget.md describes): the ledger is longer than the
   witness but does not pass through the witness's head;
3. a witness that cannot be written (``chattr +i`` stops root too) refuses the
   charge before anything is written, so a release fails before its noise.
"""

from __future__ import annotations

import subprocess
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.accounting.ledger import _ops, _witness
from pandas_dp.accounting.ledger._records import entry_hash, head_step, parse_head, rational_text
from pandas_dp.errors import LedgerError

from _ledger_backends import backend, forget_connections  # noqa: F401  (backend is a fixture)
from test_ledger_head import TABLES, restore, snapshot


@pytest.fixture
def fresh_process(monkeypatch):
    """Forget every head this process has seen or followed, as a process started afresh would."""
    def forget() -> None:
        forget_connections()
        monkeypatch.setattr(_ops, "_SEEN", {})
        monkeypatch.setattr(_ops, "_POINTS", {})
        monkeypatch.setattr(_ops, "_CHECKPOINTS", {})
    return forget


def witnessed(backend, tmp_path: Path) -> tuple[str, Path]:
    location = backend.new()
    witness = tmp_path / "apart" / "ledger.witness"
    witness.parent.mkdir(exist_ok=True)
    pdp.Ledger.create(location, witness=witness)
    return location, witness


def count(backend, location: str) -> int:
    return len(backend.sql(location, "SELECT id FROM pandas_dp_entries"))


def set_back(backend, location: str, name: str, keep: int) -> None:
    """Delete a budget's entries after number ``keep`` and copy that entry's state into the budget row."""
    spent, digest = backend.sql(location, "SELECT spent, hash FROM pandas_dp_entries WHERE budget = ? AND seq = ?",
                                (name, keep))[0]
    backend.sql(location, "DELETE FROM pandas_dp_entries WHERE budget = ? AND seq > ?", (name, keep))
    backend.sql(location, "UPDATE pandas_dp_budgets SET spent = ?, head = ?, entries = ? WHERE name = ?",
                (spent, digest, keep, name))


def pad(backend, location: str, name: str, n: int) -> None:
    """Append ``n`` valid entries of 1e-6 to budget ``name`` with plain SQL, chained and headed as documented."""
    meta = dict(backend.sql(location, "SELECT key, value FROM pandas_dp_meta"))
    measure, spent_text, seq, prev = backend.sql(
        location, "SELECT measure, spent, entries, head FROM pandas_dp_budgets WHERE name = ?", (name,))[0]
    spent, seq = Fraction(spent_text), int(seq)
    entries, head = int(meta["entries"]), meta["entries_head"]
    next_id = int(backend.sql(location, "SELECT COALESCE(MAX(id), 0) + 1 FROM pandas_dp_entries")[0][0])
    for i in range(n):
        spent += Fraction(1, 10**6)
        seq += 1
        fields = (next_id + i, name, seq, "2026-01-01T00:00:00.000000+00:00", "charge", "padding", "", "{}",
                  '{"epsilon": "1/1000000", "measure": "pure"}', measure, "1/1000000", rational_text(spent), prev)
        prev = entry_hash(*fields)
        backend.sql(location, f"INSERT INTO pandas_dp_entries VALUES ({', '.join('?' * 15)})", (*fields, prev, "ok"))
        entries += 1
        head = head_step(meta["ledger_id"], entries, head, prev)
    backend.sql(location, "UPDATE pandas_dp_budgets SET spent = ?, entries = ?, head = ? WHERE name = ?",
                (rational_text(spent), seq, prev, name))
    backend.sql(location, "UPDATE pandas_dp_meta SET value = ? WHERE key = 'entries'", (str(entries),))
    backend.sql(location, "UPDATE pandas_dp_meta SET value = ? WHERE key = 'entries_head'", (head,))
    if backend.kind == "postgres":  # the id sequence moved past the padding, as a careful forger would
        backend.sql(location, "SELECT setval(pg_get_serial_sequence('pandas_dp_entries', 'id'), "
                              "(SELECT max(id) FROM pandas_dp_entries))")


def refused_everywhere(location: str, total: float, match: str) -> None:
    """Opening the budget, Ledger.open and a full verify refuse the ledger."""
    for action in (lambda: pdp.budget(total, ledger=location, name="census"), lambda: pdp.Ledger.open(location),
                   lambda: pdp.Ledger(location).verify()):
        with pytest.raises(LedgerError, match=match):
            action()


# -- 1. a budget's last entries deleted, its row set back, meta left alone -------------------------------------

def _spent_to_one(location: str) -> pdp.Budget:
    """20 charges of 1/20 on 'census' (total 1), each followed by one on 'other': census has spent 1."""
    b, other = pdp.budget(1, ledger=location, name="census"), pdp.budget(1, ledger=location, name="other")
    for i in range(20):
        b.spend(Fraction(1, 20), method=f"census:{i}")
        other.spend(Fraction(1, 100), method=f"other:{i}")
    assert b.spent_exact == 1
    return b


def test_a_budget_set_back_with_meta_left_alone_is_refused_by_a_live_process(backend, tmp_path):
    location, witness = witnessed(backend, tmp_path)
    live = _spent_to_one(location)
    lines, before = witness.read_text(), count(backend, location)
    set_back(backend, location, "census", 10)
    forget_connections()  # the same process, new connections: it still knows what it followed
    for action in (lambda: live.spent_exact, lambda: live.spend(0.5, method="again"),
                   lambda: live.check(0.5), lambda: pdp.budget(1, ledger=location, name="census")):
        with pytest.raises(LedgerError, match="fails verification"):
            action()
    assert count(backend, location) == before - 10 and witness.read_text() == lines  # nothing was charged


def test_a_budget_set_back_with_meta_left_alone_is_refused_by_a_fresh_process_and_verify(backend, tmp_path,
                                                                                        fresh_process):
    location, witness = witnessed(backend, tmp_path)
    _spent_to_one(location)
    lines = witness.read_text()
    set_back(backend, location, "census", 10)
    fresh_process()
    refused_everywhere(location, 1, "fails verification")
    fresh_process()
    with pytest.raises(LedgerError, match="fails verification"):  # the other budget's charges stop too
        pdp.budget(1, ledger=location, name="other").spend(Fraction(1, 100), method="m")
    assert witness.read_text() == lines


# -- 2. an older copy put back and padded past the witness ------------------------------------------------------

def _copy_after_six(backend, location: str) -> tuple[pdp.Budget, dict, str]:
    """Six entries (five on 'census', one on 'other'), the copy, five more on 'census'; the head after 11."""
    b = pdp.budget(2, ledger=location, name="census")
    pdp.budget(1, ledger=location, name="other").spend(Fraction(1, 10), method="other")
    for i in range(5):
        b.spend(Fraction(1, 10), method=f"before:{i}")
    old = snapshot(backend, location)
    heads = [b.spend(Fraction(1, 10), method=f"after:{i}").ledger_head for i in range(5)]
    assert parse_head(heads[-1])[0] == 11 and b.spent_exact == 1
    return b, old, heads[-1]


def test_an_older_copy_padded_past_the_witness_is_refused(backend, tmp_path, fresh_process):
    location, witness = witnessed(backend, tmp_path)
    live, old, head = _copy_after_six(backend, location)
    restore(backend, location, old)
    pad(backend, location, "other", 6)  # 12 entries, more than the witness's 11; every record verifies
    assert parse_head(witness.read_text().splitlines()[-1].replace(" ", ":")) == parse_head(head)
    before = count(backend, location)
    assert before == 12
    forget_connections()
    for action in (lambda: live.spend(0.5, method="again"), lambda: live.spent_exact):  # the live process
        with pytest.raises(LedgerError, match="rolled back"):
            action()
    fresh_process()
    refused_everywhere(location, 2, f"rolled back: it does not pass through head {head}, which its witness")
    fresh_process()
    from _cli import run

    verified = run("ledger", "verify", location)
    assert verified.returncode == 2 and f"does not pass through head {head}" in verified.stderr
    assert count(backend, location) == before


def test_verify_checks_the_witness_head_on_the_chain_it_walks(backend, tmp_path, fresh_process):
    """A ledger longer than its witness passes verify only if it passes through the witness's head."""
    location, witness = witnessed(backend, tmp_path)
    _copy_after_six(backend, location)
    pdp.budget(2, ledger=location, name="census").spend(Fraction(1, 10), method="twelfth")
    fresh_process()
    assert pdp.Ledger(location).verify().entries == 12  # an honest ledger ahead of nothing: fine
    lines = witness.read_text().splitlines()
    witness.write_text("\n".join(lines[:-1]) + "\n")  # the witness one head behind: still on the chain
    fresh_process()
    assert pdp.Ledger(location).verify().entries == 12
    assert pdp.budget(2, ledger=location, name="census").spent_exact == Fraction(11, 10)


# -- 3. a witness that cannot be written -----------------------------------------------------------------------

@contextmanager
def immutable(path: Path) -> Iterator[None]:
    """``chattr +i`` (refuses writes even to root) for the block; skip where the file system has no such flag."""
    made = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"chattr +i is not supported here: {made.stderr.decode()[:100]}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_an_unwritable_witness_refuses_the_charge_before_any_noise(backend, tmp_path, monkeypatch):
    location, witness = witnessed(backend, tmp_path)
    b = pdp.budget(1, ledger=location, name="census")
    b.spend(Fraction(1, 10), method="first")
    old = snapshot(backend, location)
    b.spend(Fraction(1, 10), method="second")
    lines, before = witness.read_text(), count(backend, location)
    frame = pd.DataFrame({"age": np.arange(50) % 90})
    rng = np.random.default_rng(0)
    untouched = rng.bit_generator.state
    with immutable(witness):
        with pytest.raises(LedgerError, match="cannot be written .* nothing was charged"):
            b.spend(Fraction(1, 10), method="while immutable")
        with b, pytest.raises(LedgerError, match="cannot be written"):
            frame.dp.histogram("age", bins=[0, 30, 60, 90], epsilon=0.1, rng=rng)
        assert rng.bit_generator.state == untouched  # the release failed at its charge: no noise was drawn
        assert count(backend, location) == before and witness.read_text() == lines
    b.spend(Fraction(1, 10), method="writable again")
    assert witness.read_text() != lines and count(backend, location) == before + 1
    # The witness never fell behind, so the copy taken before is still refused.
    restore(backend, location, old)
    forget_connections()
    monkeypatch.setattr(_ops, "_SEEN", {})
    monkeypatch.setattr(_ops, "_POINTS", {})
    with pytest.raises(LedgerError, match="rolled back"):
        pdp.budget(1, ledger=location, name="census")


def test_a_witness_write_failing_after_the_commit_fails_the_charge_and_keeps_it_counted(backend, tmp_path,
                                                                                      monkeypatch):
    location, witness = witnessed(backend, tmp_path)
    b = pdp.budget(1, ledger=location, name="census")
    b.spend(Fraction(1, 10), method="first")
    monkeypatch.setattr(_witness.Witness, "probe", lambda self, display: None)  # it fails only after the commit
    with immutable(witness):
        with pytest.raises(LedgerError, match="could not record head 2:.* stays counted as spent"):
            b.spend(Fraction(1, 10), method="committed")
    assert b.spent_exact == Fraction(1, 5) and count(backend, location) == 2  # conservative: the spend counts
    monkeypatch.undo()
    b.spend(Fraction(1, 10), method="after")  # a witness one head behind is accepted; it catches up
    assert witness.read_text().splitlines()[-1].startswith("3 ")
    assert pdp.Ledger(location).verify().entries == 3


def test_a_new_process_follows_a_long_ledger_from_the_point_an_earlier_one_kept(backend, tmp_path, monkeypatch,
                                                                               fresh_process):
    """Following the ledger costs the entries added since: a new process starts from the point an earlier process
    of this user kept (ledgers of DURABLE_MIN entries or more), whose last entry must still be there."""
    from pandas_dp.accounting.ledger import _checkpoint, _sql

    monkeypatch.setenv("PANDAS_DP_CHECKPOINTS", str(tmp_path / "checkpoints"))
    monkeypatch.setattr(_checkpoint, "DURABLE_MIN", 4)
    location, _ = witnessed(backend, tmp_path)
    b = pdp.budget(1, ledger=location, name="census")
    for i in range(6):
        b.spend(Fraction(1, 20), method=f"m{i}")
    pdp.budget(1, ledger=location, name="census")  # follows to 6 and keeps that point
    b.spend(Fraction(1, 20), method="after the point")
    fresh_process()
    read: list[int] = []
    real = _sql.SQLTxn.entries_from

    def counted(self, after_id, limit):
        found = real(self, after_id, limit)
        read.extend(e.id for e in found)
        return found

    with monkeypatch.context() as m:
        m.setattr(_sql.SQLTxn, "entries_from", counted)
        assert pdp.budget(1, ledger=location, name="census").spent_exact == Fraction(7, 20)
    assert read == [7]  # only the entry after the kept point
    set_back(backend, location, "census", 5)  # below the kept point: its last entry is gone
    fresh_process()
    with pytest.raises(LedgerError, match="rolled back|fails verification"):
        pdp.budget(1, ledger=location, name="census")
