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
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from fractions import Fraction
from pathlib import Path
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 10_000, 100_000])
    parser.add_argument("--charges", type=int, default=40, help="timed charges per size")
    parser.add_argument("--postgres", default=None, help="URL of an empty PostgreSQL database to time as well")
    args = parser.parse_args(argv)
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
