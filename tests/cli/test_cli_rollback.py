"""The command line meets a rolled-back ledger (issue 41, items 1 and 2): ``release`` and ``ledger verify`` refuse.

The ledger (SQLite file or PostgreSQL database, with a witness file) is
attacked with plain SQL as in ``tests/accounting/test_ledger_rollback.py``;
each command then runs as a new process would (``_cli.run`` forgets what this
process saw), without ``--head``: a release must not go through and print a
spent amount below what was released, and ``ledger verify`` exits 2.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path


import pandas_dp as pdp
from pandas_dp.accounting.ledger._records import entry_hash, head_step, rational_text

from _cli import run
from _ledger_backends import backend, forget_connections  # noqa: F401  (backend is a fixture)

TABLES = ("pandas_dp_meta", "pandas_dp_budgets", "pandas_dp_entries")


def _spec(tmp_path: Path, location: str) -> None:
    (tmp_path / "persons.csv").write_text("age\n" + "\n".join(str(a % 90) for a in range(200)) + "\n")
    (tmp_path / "spec.toml").write_text(
        f'[budget]\nepsilon = 1.0\nledger = {json.dumps(location)}\nname = "census"\n[input]\npath = "persons.csv"\n'
        '[output]\ndir = "released"\n[[release]]\nname = "ages"\nmethod = "identity"\ncolumns = "age"\n'
        'bins = [0, 30, 60, 90]\nepsilon = 0.5\n')


def _refused(tmp_path: Path, location: str, phrase: str) -> None:
    released = run("release", "spec.toml", cwd=tmp_path)
    assert released.returncode != 0 and phrase in released.stderr, released.stdout + released.stderr
    assert "Spent" not in released.stdout and not (tmp_path / "released" / "ages.csv").exists()
    verified = run("ledger", "verify", location, cwd=tmp_path)
    assert verified.returncode == 2 and "FAILED" in verified.stderr and phrase in verified.stderr


def test_a_release_on_a_budget_set_back_with_meta_kept_is_refused(backend, tmp_path):
    location = backend.new()
    pdp.Ledger.create(location, witness=tmp_path / "ledger.witness")
    census, other = pdp.budget(1, ledger=location, name="census"), pdp.budget(1, ledger=location, name="other")
    for i in range(20):
        census.spend(Fraction(1, 20), method=f"census:{i}")
        other.spend(Fraction(1, 100), method=f"other:{i}")
    spent, digest = backend.sql(location, "SELECT spent, hash FROM pandas_dp_entries WHERE budget = 'census' "
                                          "AND seq = 10")[0]
    backend.sql(location, "DELETE FROM pandas_dp_entries WHERE budget = 'census' AND seq > 10")
    backend.sql(location, "UPDATE pandas_dp_budgets SET spent = ?, head = ?, entries = 10 WHERE name = 'census'",
                (spent, digest))
    forget_connections()
    _spec(tmp_path, location)
    _refused(tmp_path, location, "fails verification")


def test_a_release_on_an_older_copy_padded_past_the_witness_is_refused(backend, tmp_path):
    location = backend.new()
    pdp.Ledger.create(location, witness=tmp_path / "ledger.witness")
    census = pdp.budget(1, ledger=location, name="census")
    pdp.budget(1, ledger=location, name="other").spend(Fraction(1, 10), method="other")
    for i in range(5):
        census.spend(Fraction(1, 20), method=f"before:{i}")
    old = {t: backend.sql(location, f"SELECT * FROM {t}") for t in TABLES}
    for i in range(5):
        census.spend(Fraction(1, 10), method=f"after:{i}")  # 11 entries; census has spent 3/4
    for t in TABLES:  # the copy put back (every table, one statement each)
        backend.sql(location, f"DELETE FROM {t}")
        for r in old[t]:
            backend.sql(location, f"INSERT INTO {t} VALUES ({', '.join('?' * len(r))})", tuple(r))
    # padded with six valid entries on 'other', chained and headed as documented: 12 entries, the witness has 11
    meta = dict(backend.sql(location, "SELECT key, value FROM pandas_dp_meta"))
    spent, seq, prev = backend.sql(location, "SELECT spent, entries, head FROM pandas_dp_budgets "
                                             "WHERE name = 'other'")[0]
    spent, seq, count, head = Fraction(spent), int(seq), int(meta["entries"]), meta["entries_head"]
    for i in range(6):
        spent, seq, count = spent + Fraction(1, 10**6), seq + 1, count + 1
        fields = (count, "other", seq, "2026-01-01T00:00:00.000000+00:00", "charge", "padding", "", "{}",
                  '{"epsilon": "1/1000000", "measure": "pure"}', "pure", "1/1000000", rational_text(spent), prev)
        prev = entry_hash(*fields)
        backend.sql(location, f"INSERT INTO pandas_dp_entries VALUES ({', '.join('?' * 15)})", (*fields, prev, "ok"))
        head = head_step(meta["ledger_id"], count, head, prev)
    backend.sql(location, "UPDATE pandas_dp_budgets SET spent = ?, entries = ?, head = ? WHERE name = 'other'",
                (rational_text(spent), seq, prev))
    backend.sql(location, "UPDATE pandas_dp_meta SET value = ? WHERE key = 'entries'", (str(count),))
    backend.sql(location, "UPDATE pandas_dp_meta SET value = ? WHERE key = 'entries_head'", (head,))
    if backend.kind == "postgres":  # the id sequence moved past the padding, as a careful forger would
        backend.sql(location, "SELECT setval(pg_get_serial_sequence('pandas_dp_entries', 'id'), "
                              "(SELECT max(id) FROM pandas_dp_entries))")
    forget_connections()
    _spec(tmp_path, location)
    _refused(tmp_path, location, "rolled back")
