"""Cost of one ledger charge as the ledger grows (target: at 10^5 rows within 1.5x of the cost at 10^2).

Run: ``python -m benchmarks.bench_ledger [--sizes 100 10000 100000] [--charges 40] [--postgres URL]``.

For each size a fresh SQLite ledger is filled with that many chained
entries (in one bulk transaction, through the same code that appends every
entry), then ``Budget.spend`` is timed one charge at a time, the sizes taking
turns so that load from other processes falls on all of them alike; the
median per size is reported with its ratio to the smallest size. Each charge
is a full transaction: lock, verify the budget row against its last entry,
append, move the running total, commit durably (``synchronous=FULL``).

Two ways keep every commit in the main file; both are timed on the same
workload: the rollback journal pandas_dp uses (``journal_mode=DELETE``) and WAL
mode with a ``wal_checkpoint(TRUNCATE)`` after every commit. The time to open
(fully verify) each budget is printed too: that part is linear on purpose.
``--postgres URL`` (an empty database) times the PostgreSQL backend the same way.
Timings on a shared machine are noisy: compare the ratios, and rerun.

``--open`` measures instead, for each of ``--sizes`` (``100000``, then ``1000000``)
on one ``--backend`` (``sqlite``, or ``postgres``: a throwaway server started
like the tests' when ``--postgres`` is not given): the first open of a budget
of that many entries in a process that saw nothing (no in-process state, an
empty checkpoint folder: the whole chain is verified), then the first open of
a new process that finds the durable checkpoint the first left (100 entries
added since), and the longest and median stall of a charge made every 10 ms
while another process runs ``ledger verify`` on the ledger (with no verify
running, and charging another ledger during the verify: the machine's load
without a shared lock), at ``--stall-at`` entries. The entries are written in
bulk with the exact hashes and head the charge path computes (the open verifies
them). ``python -m benchmarks.bench_ledger --open --sizes 100000 --backend
sqlite`` (then ``--sizes 1000000``, then both with ``--backend postgres``):
each run under two minutes here.
"""

from __future__ import annotations

import argparse
import hashlib
import sqlite3
import statistics
import tempfile
import time
from fractions import Fraction
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit, urlunsplit

import pandas_dp as pdp
from pandas_dp.accounting.ledger import _ledger
from pandas_dp.accounting.ledger._ops import post, transact
from pandas_dp.accounting.ledger._sqlite import SQLiteStore
from pandas_dp.privacy.loss import PureDP


class WalCheckpointStore(SQLiteStore):
    """The alternative: WAL mode, and a checkpoint after every commit so the main file holds it."""

    journal_mode = "wal"

    def after_commit(self, conn: sqlite3.Connection) -> None:
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            raise RuntimeError("checkpoint blocked by a reader: the charge is not in the main file yet")


def filled(location: str, rows: int, store_class: type[SQLiteStore] | None = None) -> tuple[pdp.Budget, float]:
    """A ledger whose budget holds ``rows`` entries; the budget (reopened) and its open time in seconds."""
    pdp.Ledger.create(location)
    if store_class is not None:
        path = Path(location)
        _ledger._STORES[str(path.resolve())] = store_class(path)
    b = pdp.budget(10**9, ledger=location, name="bench")
    tenth = PureDP(Fraction(1, 10))
    posting = b._posting(tenth, tenth, kind="charge", method="histogram:identity", columns="age",
                         params='{"shape": [120]}')
    store = b._store
    for start in range(0, rows, 20_000):
        batch = [posting] * min(20_000, rows - start)
        transact([store], lambda txns, batch=batch: post(store, txns[store.key], batch))
    begin = time.perf_counter()
    reopened = pdp.budget(10**9, ledger=location, name="bench")  # full verification of the chain
    return reopened, time.perf_counter() - begin


def charge_medians(budgets: dict[int, pdp.Budget], charges: int) -> dict[int, float]:
    """Median seconds of one charge per size, sizes taking turns."""
    times: dict[int, list[float]] = {n: [] for n in budgets}
    for b in budgets.values():
        b.spend(Fraction(1, 10), method="warm-up")
    for _ in range(charges):
        for n, b in budgets.items():
            start = time.perf_counter()
            b.spend(Fraction(1, 10), method="histogram:identity", columns=["age"], params={"shape": [120]})
            times[n].append(time.perf_counter() - start)
    return {n: statistics.median(t) for n, t in times.items()}


def report(title: str, medians: dict[int, float], opens: dict[int, float]) -> None:
    base = medians[min(medians)]
    print(f"\n{title}")
    print(f"{'rows':>8} {'charge ms':>10} {'ratio':>6} {'open s':>8}")
    for n in sorted(medians):
        print(f"{n:>8} {medians[n] * 1e3:>10.3f} {medians[n] / base:>6.2f} {opens.get(n, float('nan')):>8.2f}")


def bulk_ledger(location: str, rows: int) -> None:
    """A new ledger whose budget 'bench' (total 10^9) holds ``rows`` charges of 1, chained as the charge path does."""
    from pandas_dp.accounting.ledger._ops import now
    from pandas_dp.accounting.ledger._records import entry_hash, head_step

    pdp.Ledger.create(location)
    b = pdp.budget(10**9, ledger=location, name="bench")
    store = b._store
    with store.read() as txn:
        ledger_id, head = txn.meta()["ledger_id"], txn.meta()["entries_head"]
        row = txn.budget("bench")
    assert row is not None
    prev, stamp, batch = row.genesis, now(), []
    postgres = location.startswith("postgresql://")
    cols = ("id, budget, seq, time, kind, method, columns, params, requested, measure, amount, spent, prev, hash, "
            "status")
    _ledger._STORES.clear()
    if postgres:
        import psycopg

        conn: object = psycopg.connect(location)
    else:
        conn = sqlite3.connect(location, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")

    def flush() -> None:
        if postgres:
            with conn.cursor() as cur, cur.copy(f"COPY pandas_dp_entries ({cols}) FROM STDIN") as copy:  # type: ignore[attr-defined]
                for r in batch:
                    copy.write_row(r)
        else:
            conn.executemany(f"INSERT INTO pandas_dp_entries ({cols}) VALUES ({', '.join('?' * 15)})",  # type: ignore[attr-defined]
                             batch)
        batch.clear()

    requested = '{"epsilon": "1"}'
    # The canonical encoding of these ASCII-only records, written out (3x faster than json.dumps per entry); the
    # first entry is checked against the library's own hashes, and the open that follows verifies every one.
    entry_text = ('["pandas_dp ledger","1","entry",{i},"bench",{i},"' + stamp + '","charge","histogram:identity",'
                  '"age","{{}}","{{\\"epsilon\\": \\"1\\"}}","pure","1","{i}","{prev}"]')
    head_text = '["pandas_dp ledger","1","head","' + ledger_id + '",{i},"{prev}","{entry}"]'
    sha = hashlib.sha256
    for i in range(1, rows + 1):
        digest = sha(entry_text.format(i=i, prev=prev).encode()).hexdigest()
        if i == 1:
            assert digest == entry_hash(1, "bench", 1, stamp, "charge", "histogram:identity", "age", "{}", requested,
                                        "pure", "1", "1", prev)
        batch.append((i, "bench", i, stamp, "charge", "histogram:identity", "age", "{}", requested, "pure", "1",
                      str(i), prev, digest, "ok"))
        new_head = sha(head_text.format(i=i, prev=head, entry=digest).encode()).hexdigest()
        if i == 1:
            assert new_head == head_step(ledger_id, 1, head, digest)
        head, prev = new_head, digest
        if len(batch) == 50_000:
            flush()
    flush()
    mark = "%s" if postgres else "?"
    run = conn.execute  # type: ignore[attr-defined]
    run(f"UPDATE pandas_dp_budgets SET spent = {mark}, entries = {mark}, head = {mark} WHERE name = 'bench'",
        (str(rows), rows, prev))
    run(f"UPDATE pandas_dp_meta SET value = {mark} WHERE key = 'entries'", (str(rows),))
    run(f"UPDATE pandas_dp_meta SET value = {mark} WHERE key = 'entries_head'", (head,))
    if postgres:
        run("SELECT setval(pg_get_serial_sequence('pandas_dp_entries', 'id'), %s)", (rows,))
    run("COMMIT") if not postgres else conn.commit()  # type: ignore[attr-defined]
    conn.close()  # type: ignore[attr-defined]


def fresh_process(checkpoints: str) -> None:
    """Forget what this process saw of every ledger (as a new process would), with ``checkpoints`` as the cache."""
    import os

    from pandas_dp.accounting.ledger import _ops

    os.environ["PANDAS_DP_CHECKPOINTS"] = checkpoints
    for store in list(_ledger._STORES.values()):
        store.close()  # type: ignore[attr-defined]
    _ledger._STORES.clear()
    _ops._SEEN.clear()
    _ops._CHECKPOINTS.clear()


def charge_stalls(location: str, seconds: float | None, verify: str | None) -> tuple[float, float, float]:
    """(longest, 99th percentile charge in seconds, verify seconds): a charge every 10 ms while ``verify`` is verified.

    Charging another ledger than the one verified is the control: the same load on the machine, no lock shared.
    """
    import subprocess
    import sys

    b = pdp.budget(10**9, ledger=location, name="bench")
    b.spend(1, method="warm-up")
    proc = None
    if verify is not None:
        proc = subprocess.Popen([sys.executable, "-m", "pandas_dp", "ledger", "verify", verify],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    begin, times = time.perf_counter(), []
    while (proc.poll() is None) if proc is not None else (time.perf_counter() - begin < (seconds or 5.0)):
        start = time.perf_counter()
        b.spend(1, method="during")
        times.append(time.perf_counter() - start)
        time.sleep(0.01)
    took = time.perf_counter() - begin
    if proc is not None and proc.returncode != 0:
        raise RuntimeError(f"ledger verify failed: {proc.stderr.read().decode()[-500:] if proc.stderr else ''}")
    return max(times), statistics.quantiles(times, n=100)[98], took


def open_costs(location_of: Callable[[int], str], sizes: list[int], folder: str, title: str,
               stall_at: int) -> None:
    print(f"\n{title}")
    print(f"{'entries':>9} {'fill s':>7} {'open (full) s':>14} {'open (checkpoint) s':>20} {'verify s':>9} "
          f"{'charge max/p99 ms':>18} {'control max/p99':>16} {'idle max/p99':>13}")
    small = location_of(0)
    pdp.Ledger.create(small)
    for n in sizes:
        location = location_of(n)
        start = time.perf_counter()
        bulk_ledger(location, n)
        fill = time.perf_counter() - start
        fresh_process(f"{folder}/checkpoints-{n}")
        start = time.perf_counter()
        pdp.budget(10**9, ledger=location, name="bench")  # no checkpoint: the whole chain
        full = time.perf_counter() - start
        b = pdp.budget(10**9, ledger=location, name="bench")
        for _ in range(100):
            b.spend(1, method="after the checkpoint")
        fresh_process(f"{folder}/checkpoints-{n}")
        start = time.perf_counter()
        pdp.budget(10**9, ledger=location, name="bench")  # the checkpoint the first open left: 101 entries
        cached = time.perf_counter() - start
        if n != stall_at:  # a verify reads in chunks: the stall does not grow with the ledger
            print(f"{n:>9} {fill:>7.1f} {full:>14.2f} {cached:>20.3f}")
            continue
        quiet = charge_stalls(location, 5.0, None)
        during = charge_stalls(location, None, location)
        control = charge_stalls(small, None, location)
        print(f"{n:>9} {fill:>7.1f} {full:>14.2f} {cached:>20.3f} {during[2]:>9.1f} "
              + " ".join(f"{f'{t[0] * 1e3:.0f}/{t[1] * 1e3:.0f}':>{w}}" for t, w in ((during, 18), (control, 16),
                                                                                       (quiet, 13))))
    print("open (full): first open of a process with no checkpoint (the whole chain verified); open (checkpoint): "
          "first open of a new process finding the durable checkpoint (100 entries since). charge max/p99: a "
          "charge every 10 ms while another process runs `ledger verify` on the same ledger; control: charging "
          "another ledger during the same verify (the machine's load, no lock shared); idle: no verify running.")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 10_000, 100_000])
    parser.add_argument("--charges", type=int, default=40, help="timed charges per size")
    parser.add_argument("--postgres", default=None, help="URL of an empty PostgreSQL database to time as well")
    parser.add_argument("--open", action="store_true", help="time opens and charge stalls during a verify instead")
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite", help="with --open")
    parser.add_argument("--stall-at", type=int, default=100_000, help="with --open: the size charges are timed at "
                        "during a verify (a verify reads in chunks, so the stall does not grow with the ledger)")
    args = parser.parse_args(argv)
    if args.open:
        with tempfile.TemporaryDirectory(prefix="bench_ledger_") as folder:
            if args.backend == "sqlite":
                open_costs(lambda n: f"{folder}/open-{n}.sqlite", args.sizes, folder, "SQLite", args.stall_at)
                return
            server = None
            base = args.postgres
            if base is None:
                import sys

                sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
                import _postgres_server

                started = _postgres_server.start()
                if isinstance(started, str):
                    raise SystemExit(started)
                server, base = started, started.url()
            try:
                import psycopg

                parts = urlsplit(base)
                names = {n: f"bench_open_{n}_{time.time_ns() % 10**9}" for n in [0, *args.sizes]}
                with psycopg.connect(base, autocommit=True) as conn:
                    for name in names.values():
                        conn.execute(f'CREATE DATABASE "{name}"')
                open_costs(lambda n: urlunsplit((parts.scheme, parts.netloc, f"/{names[n]}", parts.query, "")),
                           args.sizes, folder, "PostgreSQL", args.stall_at)
            finally:
                fresh_process(folder)
                if server is not None:
                    server.stop()
        return
    with tempfile.TemporaryDirectory(prefix="bench_ledger_") as folder:
        for title, store_class in (("SQLite, rollback journal (pandas_dp's choice)", None),
                                   ("SQLite, WAL + checkpoint after every commit", WalCheckpointStore)):
            budgets, opens = {}, {}
            for n in args.sizes:
                budgets[n], opens[n] = filled(f"{folder}/{store_class is not None}-{n}.sqlite", n, store_class)
            report(title, charge_medians(budgets, args.charges), opens)
    if args.postgres:
        import psycopg

        budgets, opens = {}, {}
        with psycopg.connect(args.postgres, autocommit=True) as conn:
            for n in args.sizes:
                conn.execute(f'CREATE DATABASE "bench_ledger_{n}"')
        parts = urlsplit(args.postgres)
        for n in args.sizes:
            url = urlunsplit((parts.scheme, parts.netloc, f"/bench_ledger_{n}", parts.query, ""))
            budgets[n], opens[n] = filled(url, n)
        report("PostgreSQL", charge_medians(budgets, args.charges), opens)
    print("\nratio: median charge cost / the cost at the smallest size (target at 10^5 rows: <= 1.5)")


if __name__ == "__main__":
    main()
