"""Budget: exact accounting, nesting, threads, the SQLite ledger and two real processes."""

from __future__ import annotations

import contextvars
import multiprocessing as mp
import threading
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.budget import active_budget


def charge(b: pdp.Budget, eps: float) -> None:
    b.spend(eps, method="test", columns=["x"], params={"k": 1})


def test_ten_charges_of_a_tenth_fill_one_exactly():
    with pdp.budget(1.0) as b:
        for _ in range(10):
            charge(b, 0.1)
        assert b.remaining_exact == 0 and b.spent_exact == 1
        with pytest.raises(pdp.BudgetExceededError) as err:
            charge(b, 0.1)
    assert "requested epsilon=0.1" in str(err.value).lower() and "remaining=0.0" in str(err.value)
    assert len(b.ledger) == 10


def test_overspend_charges_nothing_and_message_states_amounts():
    with pdp.budget(0.5) as b:
        charge(b, 0.2)
        with pytest.raises(pdp.BudgetExceededError, match=r"epsilon=0\.4.*remaining=0\.3"):
            charge(b, 0.4)
    assert b.spent_exact == Fraction(1, 5)


def test_no_active_budget_shows_the_idiom(ages):
    with pytest.raises(pdp.NoActiveBudgetError, match=r"with pandas_dp\.budget\(epsilon="):
        ages.dp.histogram("age", bins=10, range=(0, 100), epsilon=0.1)
    assert issubclass(pdp.NoActiveBudgetError, pdp.BudgetError)
    assert issubclass(pdp.BudgetError, pdp.PandasDPError)


def test_nested_budgets_charge_parents():
    with pdp.budget(1.0) as outer:
        charge(outer, 0.25)
        with pdp.budget(0.5, name="inner") as inner:
            assert active_budget() is inner
            charge(inner, 0.5)
            # the inner budget has nothing left; the outer has 0.25 left
            with pytest.raises(pdp.BudgetExceededError):
                charge(inner, 0.1)
        assert active_budget() is outer
        with pdp.budget(0.5) as other:
            # the parent has only 0.25 left, so the child cannot spend 0.3 even with room of its own
            with pytest.raises(pdp.BudgetExceededError, match="remaining=0.25"):
                charge(other, 0.3)
            assert other.spent == 0
    assert outer.spent_exact == Fraction(3, 4)
    assert inner.spent_exact == Fraction(1, 2)
    assert list(outer.ledger["epsilon"]) == [0.25, 0.5]


def test_budget_object_survives_the_block_and_can_be_reentered():
    b = pdp.budget(1.0)
    with b:
        charge(b, 0.5)
    assert b.remaining == 0.5
    with b:
        charge(b, 0.5)
    assert b.remaining == 0


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "1", None, True])
def test_invalid_budget_epsilon(bad):
    with pytest.raises(pdp.ParameterError, match="epsilon"):
        pdp.budget(bad)


def test_threads_cannot_overspend():
    total = pdp.budget(1.0)
    successes = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(20):
            try:
                charge(total, 0.01)
            except pdp.BudgetExceededError:
                continue
            with lock:
                successes.append(1)

    with total:
        threads = [threading.Thread(target=contextvars.copy_context().run, args=(worker,)) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(successes) == 100  # 160 attempts, exactly 100 fit in 1.0
    assert total.remaining_exact == 0


def test_each_thread_has_its_own_active_budget():
    seen = {}

    def worker(name: str, eps: float) -> None:
        with pdp.budget(eps, name=name) as b:
            seen[name] = active_budget() is b

    threads = [threading.Thread(target=worker, args=(f"b{i}", 0.1 * (i + 1))) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(seen.values()) and len(seen) == 4


def test_failed_release_keeps_charge_and_is_marked(ages, monkeypatch):
    from pandas_dp.releases import flat

    def boom(*args, **kwargs):
        raise RuntimeError("noise source failed")

    monkeypatch.setattr(flat, "discrete_laplace", boom)
    with pdp.budget(1.0) as b:
        with pytest.raises(RuntimeError):
            ages.dp.histogram("age", bins=10, range=(0, 100), epsilon=0.4)
    assert b.spent == 0.4
    assert list(b.ledger["status"]) == ["failed"]


def test_sqlite_ledger_resumes_after_restart(tmp_path, ages):
    path = tmp_path / "ledger.sqlite"
    pdp.Ledger.create(path)
    with pdp.budget(1.0, ledger=path, name="census") as b:
        ages.dp.histogram("age", bins=10, range=(0, 100), epsilon=0.3, rng=np.random.default_rng(0))
    reopened = pdp.budget(1.0, ledger=path, name="census")
    assert reopened.spent_exact == Fraction(3, 10)
    ledger = reopened.ledger
    assert list(ledger.columns) == ["id", "time", "budget", "method", "columns", "epsilon", "params", "status",
                                    "measure"]
    assert ledger.loc[0, "method"] == "histogram:identity" and ledger.loc[0, "status"] == "ok"
    assert ledger.loc[0, "columns"] == "age" and '"shape": [10]' in ledger.loc[0, "params"]
    assert isinstance(ledger.loc[0, "time"], pd.Timestamp)
    with reopened:
        with pytest.raises(pdp.BudgetExceededError):
            ages.dp.histogram("age", bins=10, range=(0, 100), epsilon=0.8)
    other = pdp.budget(2.0, ledger=path, name="survey")
    assert other.spent == 0
    with pytest.raises(pdp.ParameterError, match="same epsilon"):
        pdp.budget(5.0, ledger=path, name="census")


def test_sqlite_charge_is_committed_before_noise(tmp_path, ages, monkeypatch):
    """When the noise is drawn, another connection already sees the charge."""
    from pandas_dp.releases import flat

    path = tmp_path / "ledger.sqlite"
    pdp.Ledger.create(path)
    seen = []
    real = flat.discrete_laplace

    def spy(*args, **kwargs):
        seen.append(pdp.budget(1.0, ledger=path, name="x").spent)
        return real(*args, **kwargs)

    monkeypatch.setattr(flat, "discrete_laplace", spy)
    with pdp.budget(1.0, ledger=path, name="x"):
        ages.dp.histogram("age", bins=10, range=(0, 100), epsilon=0.25)
    assert seen == [0.25]


def _process_worker(path: str, n: int, queue: mp.Queue) -> None:
    import pandas_dp as pdp_child

    ok = 0
    b = pdp_child.budget(1.0, ledger=path, name="shared")
    for _ in range(n):
        try:
            b.spend(Fraction(1, 20), method="test")
            ok += 1
        except pdp_child.BudgetExceededError:
            pass
    queue.put(ok)


def test_two_processes_sharing_a_ledger_cannot_overspend(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    pdp.Ledger.create(path)
    pdp.budget(1.0, ledger=path, name="shared")  # create the budget
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_process_worker, args=(path, 15, queue)) for _ in range(2)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert sum(results) == 20  # 30 attempts of 1/20, exactly 20 fit in 1.0
    assert pdp.budget(1.0, ledger=path, name="shared").spent_exact == 1
