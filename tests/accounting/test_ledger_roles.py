"""A guarded PostgreSQL ledger: analysts charge through the server's functions and cannot change the tables.

Every test runs against a real server (the session's ``postgres_server``):
the ledger is created by the server's superuser with ``roles=True`` (or
``ledger init URL --roles``), and the library then connects as ``alice``, a
login role granted ``pandas_dp_analyst``. The server's function must chain
exactly as the Python path does (the Python ``verify`` passes on what it
wrote, non-ASCII text included), refuse what the Python path refuses even
when called directly, and keep a witness table that refuses an older copy of
the ledger tables put back by the owner.
"""

from __future__ import annotations

import uuid
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.accounting.ledger import _ops
from pandas_dp.errors import LedgerError
from pandas_dp.privacy.loss import PureDP

from _ledger_backends import forget_connections

psycopg = pytest.importorskip("psycopg")
TABLES = ("pandas_dp_meta", "pandas_dp_budgets", "pandas_dp_entries", "pandas_dp_witness")


@pytest.fixture(autouse=True)
def _no_child_outlives_its_test():
    from test_ledger_robustness import _reap

    yield
    _reap()


@pytest.fixture
def guarded(postgres_server):
    """(owner URL, analyst URL) of a new guarded ledger; the analyst is a fresh login role."""
    import _postgres_server

    url = _postgres_server.new_database(postgres_server, f"g{uuid.uuid4().hex[:12]}")
    pdp.Ledger.create(url, roles=True)
    login = f"alice_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {login} LOGIN IN ROLE pandas_dp_analyst")
    return url, url.replace("postgresql://postgres@", f"postgresql://{login}@")


def raw(url: str, statement: str, args: tuple = ()) -> list[tuple]:
    forget_connections()
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(statement, args)
        return cur.fetchall() if cur.description else []


def test_an_analyst_charges_verifies_and_shows_but_cannot_change_the_tables(guarded, capsys):
    owner, analyst = guarded
    frame = pd.DataFrame({"age": np.arange(60) % 90})
    with pdp.budget(1.0, ledger=analyst, name="census") as b:
        result = frame.dp.histogram("age", bins=[0, 30, 60, 90], epsilon=0.25, rng=np.random.default_rng(0))
        b.spend(Fraction(1, 10), method="naïve 😀 \x7f \"q\" \\ \n", columns=["é"])
        with b.reserve(0.5) as plan:
            plan.spend(0.125, method="inside")
        with pytest.raises(pdp.BudgetExceededError, match="has only remaining=0.525"):
            b.spend(0.6, method="too much")
    assert b.spent_exact == Fraction(1, 4) + Fraction(1, 10) + Fraction(1, 8)
    summary = pdp.Ledger(analyst).verify(heads=[result.params["ledger_head"]])  # the server chained as Python does
    assert summary.entries == 6 and summary.budgets == 2
    assert pdp.Ledger(analyst).entries()["status"].tolist()[0] == "ok"  # finish() went through the function
    assert raw(owner, "SELECT max(entries) FROM pandas_dp_witness") == [(6,)]
    from pandas_dp.cli.ledger import add_parser, run
    import argparse

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    assert run(parser.parse_args(["ledger", "show", analyst])) == 0
    assert summary.head in capsys.readouterr().out
    for table in TABLES:
        column = {"pandas_dp_meta": "value", "pandas_dp_entries": "hash"}.get(table, "head")
        for statement in (f"UPDATE {table} SET {column} = 'x'",
                          f"DELETE FROM {table}", f"TRUNCATE {table}", f"INSERT INTO {table} SELECT * FROM {table}"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                raw(analyst, statement)
    assert pdp.Ledger(analyst).verify().head == summary.head


def test_an_analyst_spends_delta_on_a_guarded_ledger_and_the_server_chains_it(guarded):
    owner, analyst = guarded
    frame = pd.DataFrame({"word": ["a"] * 40 + ["b"] * 3})
    with pdp.budget(epsilon=1, delta=Fraction(1, 10**5), ledger=analyst, name="keys") as b:
        result = frame.dp.histogram("word", categories="discover", epsilon=0.5, delta=Fraction(1, 10**6),
                                    rng=np.random.default_rng(0))
        with b.reserve(PureDP(Fraction(1, 4), Fraction(1, 10**6))) as plan:  # a reservation's delta too
            plan.spend(PureDP(Fraction(1, 8), Fraction(1, 10**6)), method="inside")
    assert b.delta_spent_exact == Fraction(2, 10**6) and b.spent_exact == Fraction(5, 8)  # unused epsilon returned
    summary = pdp.Ledger(analyst).verify(heads=[result.params["ledger_head"]])  # the server chained as Python
    budgets = pdp.Ledger(analyst).budgets()
    assert sorted(budgets.loc[budgets["measure"] == "delta", "name"]) == [
        "keys#delta", [n for n in budgets["name"] if n.startswith("keys/")][0] + "#delta"]
    forget_connections()
    again = pdp.budget(epsilon=1, delta=Fraction(1, 10**5), ledger=analyst, name="keys")
    assert again.delta_spent_exact == Fraction(2, 10**6)
    assert pdp.Ledger(analyst).verify().head == summary.head


def test_a_ledger_guarded_before_delta_refuses_a_budget_with_delta_before_writing(guarded):
    owner, analyst = guarded
    raw(owner, "DELETE FROM pandas_dp_meta WHERE key = 'guard_measures'")  # as an older version created it
    before = raw(owner, "SELECT count(*) FROM pandas_dp_budgets")
    with pytest.raises(pdp.ParameterError, match="holds no deltas .* create a new guarded ledger"):
        pdp.budget(epsilon=1, delta=1e-6, ledger=analyst, name="d")
    assert raw(owner, "SELECT count(*) FROM pandas_dp_budgets") == before
    with pdp.budget(epsilon=1, ledger=analyst, name="d") as b:  # without delta it works as before
        b.spend(0.5, method="t")
    assert b.spent_exact == Fraction(1, 2)


def test_the_functions_refuse_what_the_python_path_refuses_when_called_directly(guarded):
    owner, analyst = guarded
    b = pdp.budget(1.0, ledger=analyst, name="census")
    b.spend(Fraction(1, 2), method="half")
    genesis = raw(owner, "SELECT genesis FROM pandas_dp_budgets")[0][0]

    def post(kind: str, amount: str, status: str, params: str = "{}", requested: str | None = None) -> None:
        asked = requested or '{"epsilon": "%s", "measure": "pure"}' % amount.lstrip("-")
        raw(analyst, "SELECT * FROM pandas_dp_post(%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (["census"], [kind], ["m"], [""], [params], [asked], [amount], [status], [genesis]))

    cases = [("charge", "3/5", "charged", "{}", "PD001"),                       # overspend
             ("charge", "-1/2", "charged", "{}", "PD004"),                      # a negative charge
             ("charge", "2/4", "charged", "{}", "PD004"),                       # not canonical
             ("return", "-1/2", "returned", '{"reservation": "none"}', "PD004"),  # a return nothing reserved
             ("reserve", "1/10", "reserved", "{}", "PD004"),                    # a reserve naming nothing
             ("close", "0", "closed", '{"reservation": "census"}', "PD004")]    # only a reservation closes
    for kind, amount, status, params, code in cases:
        with pytest.raises(psycopg.Error) as err:
            post(kind, amount, status, params)
        assert err.value.sqlstate == code, (kind, amount, err.value)
    with pytest.raises(psycopg.Error) as err:  # a reservation budget without its reserve entry
        raw(analyst, "SELECT * FROM pandas_dp_add_budget('free', 'pure', '10', 'census')")
    assert err.value.sqlstate == "PD004"
    with pytest.raises(psycopg.Error) as err:
        raw(analyst, "SELECT pandas_dp_set_status(1, 'charged', 'ok')")
    assert err.value.sqlstate == "PD004"
    b.spend(Fraction(1, 2), method="the other half")  # the library still charges; nothing was written meanwhile
    with pytest.raises(pdp.BudgetExceededError):
        b.spend(Fraction(1, 100), method="one too many")
    assert pdp.Ledger(analyst).verify().entries == 2


def test_an_older_copy_of_the_tables_put_back_by_the_owner_is_refused(guarded, monkeypatch):
    owner, analyst = guarded
    b = pdp.budget(1.0, ledger=analyst, name="census")
    b.spend(Fraction(1, 10), method="before the backup")
    old = {t: raw(owner, f"SELECT * FROM {t}") for t in TABLES[:3]}
    later = [b.spend(Fraction(1, 10), method=f"after:{i}").ledger_head for i in range(3)][-1]
    with psycopg.connect(owner) as conn:  # the owner restores the ledger tables (not the witness) from the copy
        for t in TABLES[:3]:
            conn.execute(f"DELETE FROM {t}")
            for r in old[t]:
                conn.execute(f"INSERT INTO {t} VALUES ({', '.join('%s' for _ in r)})", r)
    forget_connections()
    monkeypatch.setattr(_ops, "_SEEN", {})  # a fresh process: only the witness table knows
    for action in (lambda: pdp.budget(1.0, ledger=analyst, name="census"), lambda: pdp.Ledger.open(analyst),
                   lambda: pdp.Ledger(analyst).verify()):
        with pytest.raises(LedgerError, match=f"witness table pandas_dp_witness records head {later}") as err:
            action()
        assert "--head" in str(err.value) and "Restore it from a backup" not in str(err.value)
    # The server's function refuses too, whatever the client checked.
    genesis = old["pandas_dp_budgets"][0][7]
    with pytest.raises(psycopg.Error) as raised:
        raw(analyst, "SELECT * FROM pandas_dp_post(%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (["census"], ["charge"], ["m"], [""], ["{}"], ["{}"], ["1/10"], ["charged"], [genesis]))
    assert raised.value.sqlstate == "PD003"
    assert len(raw(owner, "SELECT id FROM pandas_dp_entries")) == 1  # nothing was charged


def test_roles_apply_to_postgresql_only_and_the_cli_sets_them_up(tmp_path, postgres_server, capsys):
    import _postgres_server

    with pytest.raises(LedgerError, match="PostgreSQL ledger only"):
        pdp.Ledger.create(tmp_path / "l.sqlite", roles=True)
    url = _postgres_server.new_database(postgres_server, f"g{uuid.uuid4().hex[:12]}")
    with pytest.raises(LedgerError, match="own witness table"):
        pdp.Ledger.create(url, roles=True, witness=tmp_path / "w")
    with pytest.raises(LedgerError, match="role name"):
        pdp.Ledger.create(url, roles=("Owner; DROP", "x"))
    from pandas_dp.cli.ledger import add_parser, run
    import argparse

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    assert run(parser.parse_args(["ledger", "init", url, "--roles", "own2:ana2"])) == 0
    assert "GRANT ana2 TO" in capsys.readouterr().out
    assert raw(url, "SELECT tableowner FROM pg_tables WHERE tablename = 'pandas_dp_entries'") == [("own2",)]
    assert raw(url, "SELECT has_table_privilege('ana2', 'pandas_dp_entries', 'UPDATE, DELETE, TRUNCATE, INSERT')"
                    ", has_table_privilege('ana2', 'pandas_dp_entries', 'SELECT')") == [(False, True)]


@pytest.mark.slow
def test_two_analyst_processes_never_overspend_together(guarded, tmp_path):
    from test_ledger_robustness import _returned, _start, _stderr, _wait_ready

    owner, analyst = guarded
    go = tmp_path / "go"
    procs = [_start(tmp_path, analyst, name="shared", total="1", eps="1/40", prefix=p, n=1000, go=go) for p in "ab"]
    for proc, _, ready in procs:
        _wait_ready(proc, ready)
    go.touch()  # both start charging at once, each through the server's function
    for proc, _, _ in procs:
        proc.wait(timeout=300)
        assert proc.returncode == 0, _stderr(proc)
    returned = [_returned(out) for _, out, _ in procs]
    rows = raw(owner, "SELECT columns, amount FROM pandas_dp_entries WHERE kind = 'charge'")
    assert sum(Fraction(r[1]) for r in rows) == 1 and len(rows) == 40  # exactly filled, never more
    assert returned[0] and returned[1] and returned[0] | returned[1] == {r[0] for r in rows}
    assert pdp.Ledger(analyst).verify().entries == 40


def test_a_budget_opened_while_another_session_adds_one_is_not_damage(guarded, monkeypatch):
    """An analyst cannot lock the chain of budgets, so the new budget is left to the server's function (which
    locks it): an unlocked read of meta and of the budget rows, one statement apart, straddled another session's
    new budget under load ('records 0 budgets but holds 1'). Here the other session commits exactly there."""
    from pandas_dp.accounting.ledger._sql import SQLTxn

    _, analyst = guarded
    real_lock, real_budgets = SQLTxn.lock_budget_list, SQLTxn.budgets
    fired: list[bool] = []

    def lock_budget_list(self):
        self.writing_budget = True
        return real_lock(self)

    def budgets(self):
        if getattr(self, "writing_budget", False) and not fired:
            fired.append(True)
            pdp.budget(1, ledger=analyst, name="other")       # another session adds a budget and commits
        return real_budgets(self)

    monkeypatch.setattr(SQLTxn, "lock_budget_list", lock_budget_list)
    monkeypatch.setattr(SQLTxn, "budgets", budgets)
    b = pdp.budget(1, ledger=analyst, name="mine")
    b.spend(Fraction(1, 4), method="m")
    monkeypatch.undo()
    assert b.spent_exact == Fraction(1, 4) and pdp.Ledger(analyst).verify().entries == 1


@pytest.mark.parametrize("roles", [False, True], ids=["plain", "guarded"])
def test_a_reservation_made_while_another_session_adds_a_budget_is_not_damage(postgres_server, roles, monkeypatch):
    """A reservation adds its budget in the charge's transaction. Reading meta before locking the chain of budgets
    (or, on a guarded ledger, reading at all: the analyst cannot lock it) let another session's new budget land
    between meta and the budget rows, refused as damage. Here the other session commits exactly there: just
    before the lock, or just before the server's function."""
    import _postgres_server
    from pandas_dp.accounting.ledger._postgres import GuardedTxn
    from pandas_dp.accounting.ledger._sql import SQLTxn

    url = _postgres_server.new_database(postgres_server, f"r{uuid.uuid4().hex[:12]}")
    pdp.Ledger.create(url, roles=roles)
    if roles:
        login = f"bob_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {login} LOGIN IN ROLE pandas_dp_analyst")
        url = url.replace("postgresql://postgres@", f"postgresql://{login}@")
    b = pdp.budget(1, ledger=url, name="mine")
    fired: list[bool] = []

    def other_session_first(real):
        def wrapped(self, *args):
            if not fired:
                fired.append(True)
                pdp.budget(1, ledger=url, name="other")           # another session adds a budget and commits
            return real(self, *args)
        return wrapped

    monkeypatch.setattr(SQLTxn, "lock_budget_list", other_session_first(SQLTxn.lock_budget_list))
    monkeypatch.setattr(GuardedTxn, "add_budget_guarded", other_session_first(GuardedTxn.add_budget_guarded))
    with b.reserve(Fraction(1, 4)) as r:
        r.spend(Fraction(1, 8), method="m")
    monkeypatch.undo()
    assert fired and b.spent_exact == Fraction(1, 8)  # the unused part went back when the reservation closed
    budgets = pdp.Ledger(url).budgets().set_index("name")
    assert {"mine", "other"} <= set(budgets.index) and (budgets["reservation_of"] == "mine").sum() == 1
    assert pdp.Ledger(url).verify().entries == 4   # reserve, the charge inside, its return and the close
