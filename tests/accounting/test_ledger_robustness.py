"""Ledgers (SQLite and PostgreSQL) under SIGKILL and concurrency.

A child process makes releases against a shared ledger; each release reads a
column renamed to a unique tag, so the ledger row of every release is known
(its ``columns`` field). After the child gets a release back it appends the
tag to a file and fsyncs it. The parent kills the child with SIGKILL at a
random moment, restarts it on the same ledger, and checks: the ledger opens
and reads; every tag the child got back has its charge row (no release
without its charge); no row ever disappears (no charge lost); the amount
spent equals the rows' sum and never exceeds the total. Two processes
charging at once never spend more than the total together; nor do threads.
Every test runs against both backends; the long kill loop is ``slow``, one
kill test and the concurrency tests run by default.
"""

from __future__ import annotations

import contextvars
import os
import random
import signal
import subprocess
import sys
import threading
import time
from fractions import Fraction
from pathlib import Path

import pytest

import pandas_dp as pdp

from _ledger_backends import Backend, backend, forget_connections  # noqa: F401  (backend is a fixture)

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX SIGKILL")

CHILD = r"""
import os, sys, time
from fractions import Fraction
import numpy as np, pandas as pd, pandas_dp as pdp

ledger, name, total, eps, out, ready, go, prefix, n = sys.argv[1:10]
df = pd.DataFrame({"x": np.arange(200) % 10})
with pdp.budget(Fraction(total), ledger=ledger, name=name):
    open(ready, "w").close()
    while not os.path.exists(go):
        time.sleep(0.002)
    fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    for i in range(int(n)):
        tag = f"{prefix}{i}"
        try:
            df.rename(columns={"x": tag}).dp.histogram(tag, bins=range(11), epsilon=Fraction(eps))
        except pdp.BudgetExceededError:
            break
        os.write(fd, (tag + "\n").encode())
        os.fsync(fd)
    os.close(fd)
"""


#: Children started by the running test (:func:`_start`); :func:`_reap` ends those still running when it ends.
_STARTED: list[subprocess.Popen] = []


def _start(tmp: Path, ledger: Path | str, *, name: str, total: str, eps: str, prefix: str, n: int,
           go: Path) -> tuple[subprocess.Popen, Path, Path]:
    out, ready = tmp / f"{prefix}.returned", tmp / f"{prefix}.ready"
    with open(tmp / f"{prefix}.stderr", "wb") as err:
        proc = subprocess.Popen([sys.executable, "-c", CHILD, str(ledger), name, total, eps, str(out), str(ready),
                                 str(go), prefix, str(n)], stdout=subprocess.DEVNULL, stderr=err,
                                cwd=Path(__file__).resolve().parents[2])
    proc.stderr_path = tmp / f"{prefix}.stderr"  # type: ignore[attr-defined]
    _STARTED.append(proc)
    return proc, out, ready


def _reap() -> None:
    """Kill and wait for the children a failed test left running (else a later test meets their ResourceWarning)."""
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            proc.kill()
        proc.wait()


@pytest.fixture(autouse=True)
def _no_child_outlives_its_test():
    yield
    _reap()


def _stderr(proc: subprocess.Popen) -> str:
    return proc.stderr_path.read_text()[-2000:]  # type: ignore[attr-defined]


def _wait_ready(proc: subprocess.Popen, ready: Path, timeout: float = 120.0) -> None:
    start = time.monotonic()
    while not ready.exists():
        if proc.poll() is not None:
            raise AssertionError(f"child exited early: {_stderr(proc)}")
        if time.monotonic() - start > timeout:
            proc.kill()
            raise AssertionError("child never became ready")
        time.sleep(0.01)


def _returned(out: Path) -> set[str]:
    if not out.exists():
        return set()
    return {line for line in out.read_text().split("\n")[:-1] if line}  # a line is complete once it ends


def _ledger_rows(backend: Backend, ledger: str, name: str) -> list[tuple[str, str, str]]:
    """Rows (columns, amount, status) of a budget's charges, read with plain SQL; the ledger verifies."""
    assert pdp.Ledger(ledger).verify().entries >= 0
    return [tuple(r) for r in backend.sql(
        ledger, "SELECT columns, amount, status FROM pandas_dp_entries WHERE budget = ? AND kind = 'charge'",
        (name,))]


def _kill_rounds(backend: Backend, tmp_path: Path, rounds: int, seed: int) -> None:
    ledger, name, total, eps = backend.create(), "census", "1000", "1/100"
    go = tmp_path / "go"
    go.touch()
    rnd = random.Random(seed)
    seen_rows: set[str] = set()
    returned_all: set[str] = set()
    kills = 0
    for round_ in range(rounds):
        proc, out, ready = _start(tmp_path, ledger, name=name, total=total, eps=eps, prefix=f"r{round_}_",
                                  n=10**6, go=go)
        _wait_ready(proc, ready)
        time.sleep(rnd.uniform(0.05, 1.5))  # a random point inside the stream of releases
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        kills += proc.returncode == -signal.SIGKILL
        returned = _returned(out)
        returned_all |= returned
        # After the restart the ledger opens through the library, verifies and reads.
        forget_connections()
        b = pdp.budget(Fraction(total), ledger=ledger, name=name)
        frame = b.ledger
        rows = _ledger_rows(backend, ledger, name)
        tags = {r[0] for r in rows}
        assert len(frame) == len(rows)
        assert returned_all <= tags, f"releases returned without a charge: {sorted(returned_all - tags)[:5]}"
        assert seen_rows <= tags, "a charge recorded before the kill disappeared"
        seen_rows = tags
        assert b.spent_exact == sum(Fraction(r[1]) for r in rows) == Fraction(eps) * len(rows)
        assert b.spent_exact <= Fraction(total)
        # Every returned release finished ("ok"); rows without a returned release are at most the one
        # in flight at the kill (charged before its noise, kept: conservative).
        status = {r[0]: r[2] for r in rows}
        assert all(status[t] == "ok" for t in returned)
        assert len(tags - returned_all) <= round_ + 1
    assert kills == rounds
    assert len(returned_all) > 4 * rounds  # the kills did land among many releases


@pytest.mark.slow  # a kill/concurrency test with real processes: the slow step runs it
def test_sigkill_once_loses_no_charge(backend, tmp_path):
    _kill_rounds(backend, tmp_path, rounds=1, seed=20261123)


@pytest.mark.slow
def test_sigkill_at_random_points_loses_no_charge(backend, tmp_path):
    _kill_rounds(backend, tmp_path, rounds=8, seed=20261122)


@pytest.mark.slow  # a kill/concurrency test with real processes: the slow step runs it
def test_two_processes_never_overspend_together(backend, tmp_path):
    ledger, name, total, eps = backend.create(), "shared", "1", "1/50"
    go = tmp_path / "go"
    procs = [_start(tmp_path, ledger, name=name, total=total, eps=eps, prefix=p, n=1000, go=go) for p in "ab"]
    for proc, _, ready in procs:
        _wait_ready(proc, ready)
    go.touch()  # both start charging at once
    for proc, _, _ in procs:
        proc.wait(timeout=300)
        assert proc.returncode == 0, _stderr(proc)
    returned = [_returned(out) for _, out, _ in procs]
    rows = _ledger_rows(backend, ledger, name)
    assert sum(Fraction(r[1]) for r in rows) == Fraction(total)  # exactly filled, never more
    assert len(rows) == 50 and len(returned[0]) + len(returned[1]) == 50
    assert returned[0] and returned[1]  # both processes did charge
    b = pdp.budget(Fraction(total), ledger=ledger, name=name)
    assert b.remaining_exact == 0
    with b, pytest.raises(pdp.BudgetExceededError):
        b.spend(Fraction(eps), method="probe")


@pytest.mark.slow  # a kill/concurrency test with real processes: the slow step runs it
def test_concurrent_charging_with_a_kill(backend, tmp_path):
    ledger, name, total, eps = backend.create(), "mixed", "1", "1/40"
    go = tmp_path / "go"
    (a, out_a, ready_a), (b_, out_b, ready_b) = (
        _start(tmp_path, ledger, name=name, total=total, eps=eps, prefix=p, n=1000, go=go) for p in "ab")
    _wait_ready(a, ready_a)
    _wait_ready(b_, ready_b)
    go.touch()
    time.sleep(random.Random(7).uniform(0.0, 0.3))
    os.kill(a.pid, signal.SIGKILL)
    a.wait()
    b_.wait(timeout=300)
    rows = _ledger_rows(backend, ledger, name)
    tags = {r[0] for r in rows}
    assert (_returned(out_a) | _returned(out_b)) <= tags
    spent = sum(Fraction(r[1]) for r in rows)
    assert spent <= Fraction(total)
    assert spent == Fraction(total)  # the survivor spent whatever the killed process left


def test_threads_sharing_one_ledger_budget_never_overspend(backend):
    """Eight threads, each with its own connection, race on one budget: exactly the total is spent."""
    ledger = backend.create()
    b = pdp.budget(1, ledger=ledger, name="threads")
    ok: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(8):
            try:
                b.spend(Fraction(1, 40), method="thread")
            except pdp.BudgetExceededError:
                continue
            with lock:
                ok.append(1)

    threads = [threading.Thread(target=contextvars.copy_context().run, args=(worker,)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ok) == 40 and b.remaining_exact == 0
    assert pdp.Ledger(ledger).verify().entries == 40


def _forked_charge(b: pdp.Budget, queue) -> None:
    with b:
        b.spend(Fraction(1, 10), method="child")
    queue.put(str(b.spent_exact))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_charges_without_disturbing_the_parents_connections(backend):
    import multiprocessing as mp

    ledger = backend.create()
    b = pdp.budget(1, ledger=ledger, name="forked")
    with b:
        b.spend(Fraction(1, 10), method="parent")  # the parent now holds pooled connections
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_forked_charge, args=(b, queue))
    child.start()
    seen = queue.get(timeout=120)
    child.join(timeout=60)
    assert child.exitcode == 0 and seen == "1/5"
    with b:
        b.spend(Fraction(1, 10), method="parent again")  # the parent's connections still work
    assert b.spent_exact == Fraction(3, 10) and pdp.Ledger(ledger).verify().entries == 3
