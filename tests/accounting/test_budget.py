"""Budget: exact accounting, nesting, threads, the SQLite ledger and two real processes."""

from __future__ import annotations

import asyncio
import contextvars
import multiprocessing as mp
import pickle
import threading
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.accounting.budget import active_budget
from pandas_dp.privacy.loss import ZCDP, PureDP


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
    from pandas_dp.privacy.loss import DiscreteLaplace

    def boom(*args, **kwargs):
        raise RuntimeError("noise source failed")

    monkeypatch.setattr(DiscreteLaplace, "sample", boom)
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
    from pandas_dp.privacy.loss import DiscreteLaplace

    path = tmp_path / "ledger.sqlite"
    pdp.Ledger.create(path)
    seen = []
    real = DiscreteLaplace.sample

    def spy(*args, **kwargs):
        seen.append(pdp.budget(1.0, ledger=path, name="x").spent)
        return real(*args, **kwargs)

    monkeypatch.setattr(DiscreteLaplace, "sample", spy)
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


@pytest.mark.slow  # a kill/concurrency test with real processes: the slow step runs it
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


# -- measures: pure epsilon and zCDP rho ---------------------------------------------------------------------


def test_rho_budget_charges_pure_releases_their_implied_rho():
    z = pdp.budget(rho=0.5)
    assert z.measure == "zcdp" and z.rho == 0.5 and z.total == ZCDP(Fraction(1, 2))
    with pytest.raises(pdp.ParameterError, match="zCDP budget"):
        z.epsilon
    assert not hasattr(z, "epsilon") and hasattr(z, "rho")
    with z:
        z.spend(PureDP(Fraction(1, 2)), method="laplace")  # epsilon 1/2 implies rho (1/2)**2 / 2 = 1/8
        charge = z.spend(ZCDP(Fraction(1, 4)), method="gaussian")
        assert z.spent_exact == Fraction(3, 8) and charge.ledger_id == 2
        with pytest.raises(pdp.BudgetExceededError, match=r"rho=0\.18.*epsilon=0\.6 charged as zcdp"):
            z.spend(PureDP(Fraction(3, 5)), method="too much")
    assert z.ledger["rho"].tolist() == [0.125, 0.25] and "epsilon" not in z.ledger.columns
    assert z.ledger["measure"].tolist() == ["zcdp", "zcdp"]


def test_rho_release_under_a_pure_budget_is_refused_before_any_record():
    outer = pdp.budget(epsilon=1.0)
    with outer:
        with pdp.budget(rho=1.0) as inner:
            for call in (inner.spend, inner.check):
                with pytest.raises(pdp.ParameterError, match=r"rho= \(zcdp\) cannot be charged to a pure budget"):
                    call(ZCDP(Fraction(1, 10)), **({"method": "gaussian"} if call == inner.spend else {}))
            inner.spend(PureDP(Fraction(1, 2)), method="laplace")  # fine in both: 1/2 here, 1/8 inside
    assert inner.spent_exact == Fraction(1, 8) and outer.spent_exact == Fraction(1, 2)
    assert not hasattr(outer, "rho") and outer.epsilon == 1.0 and outer.measure == "pure"


@pytest.mark.parametrize("kwargs", [{}, {"epsilon": 1.0, "rho": 1.0}, {"rho": None}])
def test_exactly_one_of_epsilon_or_rho(kwargs):
    with pytest.raises(pdp.ParameterError, match="exactly one of epsilon= .* or rho="):
        pdp.budget(**kwargs)


# -- check() raises what spend() would, recording nothing -------------------------------------------------------------


def _outcome(call):
    try:
        call()
    except pdp.PandasDPError as err:
        return type(err), str(err)
    return None


def test_check_raises_exactly_what_spend_raises():
    outer = pdp.budget(1.0, name="outer")
    with outer:
        outer.spend(0.75, method="first")
        with pdp.budget(rho=2, name="inner") as inner:
            for loss in (PureDP(Fraction(1, 2)), ZCDP(Fraction(1, 10)), "0.1", -1, PureDP(Fraction(1, 5))):
                checked = _outcome(lambda: inner.check(loss))
                recorded = (outer.spent_exact, inner.spent_exact, len(outer.ledger))
                assert recorded == (Fraction(3, 4), 0, 1)  # check recorded nothing
                spent = _outcome(lambda: inner.spend(loss, method="m"))
                assert checked == spent, loss
    assert [len(outer.ledger), len(inner.ledger)] == [2, 1]  # only the last loss fitted everywhere


# -- the chain of parents belongs to each entry into a block ---------------------------------------------------------


def test_one_budget_under_two_parents_in_two_threads_charges_the_right_chain():
    shared = pdp.budget(100.0, name="shared")
    parents = {"a": pdp.budget(0.5, name="a"), "b": pdp.budget(50.0, name="b")}
    barrier = threading.Barrier(2)
    results: dict[str, list[bool]] = {"a": [], "b": []}

    def run(key: str) -> None:
        with parents[key], shared:
            for _ in range(10):
                barrier.wait()  # the two threads charge the same object in lock step, under different parents
                try:
                    shared.spend(0.1, method=key)
                    results[key].append(True)
                except pdp.BudgetExceededError as err:
                    assert "budget 'a'" in str(err) and key == "a"
                    results[key].append(False)

    threads = [threading.Thread(target=run, args=(k,)) for k in parents]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results["a"] == [True] * 5 + [False] * 5 and results["b"] == [True] * 10
    assert parents["a"].spent_exact == Fraction(1, 2) and parents["b"].spent_exact == 1
    assert shared.spent_exact == Fraction(3, 2)
    assert set(parents["a"].ledger["method"]) == {"a"} and set(parents["b"].ledger["method"]) == {"b"}


def test_one_budget_under_two_parents_in_two_asyncio_tasks():
    shared = pdp.budget(100.0, name="shared")
    a, b = pdp.budget(0.3, name="a"), pdp.budget(5.0, name="b")

    async def task(parent: pdp.Budget, label: str) -> int:
        done = 0
        with parent, shared:
            for _ in range(6):
                await asyncio.sleep(0)  # hand over to the other task between charges
                try:
                    active_budget().spend(0.1, method=label)
                    done += 1
                except pdp.BudgetExceededError:
                    pass
        return done

    async def main() -> list[int]:
        return list(await asyncio.gather(task(a, "a"), task(b, "b")))

    assert asyncio.run(main()) == [3, 6]
    assert a.spent_exact == Fraction(3, 10) and b.spent_exact == Fraction(3, 5) and shared.spent_exact == Fraction(9, 10)


def test_budget_nested_once_then_entered_alone_charges_only_itself():
    outer, inner = pdp.budget(1.0, name="outer"), pdp.budget(1.0, name="inner")
    with outer, inner:
        charge(inner, 0.25)
    with inner:
        charge(inner, 0.25)
    assert outer.spent_exact == Fraction(1, 4) and inner.spent_exact == Fraction(1, 2)
    assert "_parent" not in vars(inner)
    assert not any(isinstance(v, threading.local) for v in vars(inner).values())


def test_entering_the_same_budget_twice_in_one_chain_is_an_error(tmp_path):
    b = pdp.budget(1.0, name="b")
    with b:
        with pytest.raises(pdp.BudgetError, match="already active"):
            with b:
                pass
        with pdp.budget(0.5), pytest.raises(pdp.BudgetError, match="charge it twice"):
            b.__enter__()
        charge(b, 0.5)
    assert b.spent_exact == Fraction(1, 2) and active_budget.__module__ == "pandas_dp.accounting.budget"
    path = tmp_path / "l.sqlite"
    pdp.Ledger.create(path)
    first, second = pdp.budget(1.0, ledger=path, name="x"), pdp.budget(1.0, ledger=path, name="x")
    with first, pytest.raises(pdp.BudgetError, match="Budget 'x' is already active"):
        second.__enter__()


# -- pickling ----------------------------------------------------------------------------------------------------


def test_in_memory_budget_pickles_with_its_entries():
    b = pdp.budget(1.0, name="memo")
    with b:
        charge(b, 0.25)
    copy = pickle.loads(pickle.dumps(b))
    assert copy.spent_exact == Fraction(1, 4) and copy.name == "memo"
    pd.testing.assert_frame_equal(copy.ledger, b.ledger)
    with copy:
        charge(copy, 0.5)  # the copy is its own budget
    assert b.spent_exact == Fraction(1, 4) and copy.spent_exact == Fraction(3, 4)


def test_ledger_budget_pickles_without_its_connection_and_reopens_on_use(tmp_path):
    joblib = pytest.importorskip("joblib")
    path = tmp_path / "l.sqlite"
    pdp.Ledger.create(path)
    b = pdp.budget(rho=1.0, ledger=path, name="census")
    with b:
        charge(b, 0.5)  # rho 1/8
    data = pickle.dumps(b)
    assert b"sqlite3" not in data and str(path).encode() in data
    joblib.dump(b, tmp_path / "b.joblib")
    via_joblib = joblib.load(tmp_path / "b.joblib")
    copy = pickle.loads(data)
    with copy:
        charge(copy, 0.5)  # the same ledger budget: both see both charges
    assert b.spent_exact == copy.spent_exact == via_joblib.spent_exact == Fraction(1, 4)
    moved = tmp_path / "moved.sqlite"
    path.rename(moved)
    gone = pickle.loads(data)  # unpickling opens nothing ...
    with pytest.raises(pdp.LedgerError, match="deleted|does not exist"):
        gone.spent  # ... the first use does, and finds the ledger gone


# -- reservations --------------------------------------------------------------------------------------------------


def test_reservation_prepays_and_returns_the_unused_part():
    b = pdp.budget(1.0, name="b")
    with b:
        plan = b.reserve(0.6, method="plan")
        assert b.spent_exact == Fraction(3, 5)
        with pytest.raises(pdp.BudgetExceededError):
            b.reserve(0.5, method="a second plan")  # cannot both half-finish
        with plan:
            assert active_budget() is plan
            first = active_budget().spend(0.2, method="t1")
            second = active_budget().spend(0.3, method="t2")
            with pytest.raises(pdp.BudgetExceededError, match="reservation"):
                active_budget().spend(0.2, method="t3")
        assert b.spent_exact == Fraction(1, 2) and plan.spent_exact == Fraction(1, 2)
        with pytest.raises(pdp.BudgetError, match="closed"):
            plan.spend(0.01, method="late")
        with pytest.raises(pdp.BudgetError, match="closed"):
            plan.__enter__()
    assert first.ledger_id != second.ledger_id
    assert b.ledger["method"].tolist() == ["plan", "return"] and b.ledger["epsilon"].sum() == pytest.approx(0.5)
    assert plan.ledger["method"].tolist() == ["t1", "t2", "close"]


def test_reservation_in_a_zcdp_chain_returns_the_implied_rho():
    outer = pdp.budget(rho=1.0, name="outer")
    with outer, pdp.budget(1.0, name="inner") as inner:
        with inner.reserve(Fraction(1, 2)) as plan:  # outer pays (1/2)**2 / 2 = 1/8
            assert outer.spent_exact == Fraction(1, 8)
            plan.spend(Fraction(1, 5), method="t")
    # the plan used epsilon 1/5, which costs rho 1/50 in the outer budget
    assert inner.spent_exact == Fraction(1, 5) and outer.spent_exact == Fraction(1, 50)
