"""What the guarded PostgreSQL functions check beyond the amounts (issue 41, items 1, 2 and 10).

An analyst calls ``pandas_dp_post`` directly: params and requested must be
JSON objects, the loss requested must be the amount charged, and a return must
name a reservation that exists. The owner (or a superuser) writes the tables
around the functions: a budget set back with ``meta`` left alone, or an older
copy padded past the witness table, is refused by the function itself, with
the same SQLSTATEs the library maps to its errors.
"""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

import pandas_dp as pdp
from pandas_dp.errors import LedgerError

from test_ledger_roles import TABLES, guarded, raw  # noqa: F401  (guarded is a fixture)
from test_ledger_rollback import pad, set_back
from _ledger_backends import Backend

psycopg = pytest.importorskip("psycopg")


def _post(analyst: str, genesis: str, kind: str, amount: str, status: str, params: str, requested: str) -> None:
    raw(analyst, "SELECT * FROM pandas_dp_post(%s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (["census"], [kind], ["m"], [""], [params], [requested], [amount], [status], [genesis]))


def _asked(epsilon: str) -> str:
    return json.dumps({"epsilon": epsilon, "measure": "pure"}, sort_keys=True)


def test_the_function_refuses_what_an_entry_cannot_record(guarded):
    owner, analyst = guarded
    b = pdp.budget(1.0, ledger=analyst, name="census")
    b.spend(Fraction(1, 10), method="first")
    genesis = raw(owner, "SELECT genesis FROM pandas_dp_budgets WHERE name = 'census'")[0][0]
    before = raw(owner, "SELECT count(*) FROM pandas_dp_entries")
    cases = [("charge", "1/10", "charged", "not json", _asked("1/10")),                     # params not JSON
             ("charge", "1/10", "charged", "[1, 2]", _asked("1/10")),                       # params not an object
             ("charge", "1/10", "charged", "{}", "{epsilon"),                               # requested not JSON
             ("charge", "1/1000", "charged", "{}", _asked("1000")),                         # 1000 asked, 1/1000 paid
             ("charge", "1/10", "charged", "{}", json.dumps({"measure": "zcdp", "rho": "1/10"}))]  # no pure implied
    for kind, amount, status, params, requested in cases:
        with pytest.raises(psycopg.Error) as err:
            _post(analyst, genesis, kind, amount, status, params, requested)
        assert err.value.sqlstate == "PD004", (params, requested, err.value)
    # A reserve for a reservation made nowhere, then its return: the return is refused.
    _post(analyst, genesis, "reserve", "1/10", "reserved", '{"reservation": "ghost"}', _asked("1/10"))
    with pytest.raises(psycopg.Error) as err:
        _post(analyst, genesis, "return", "-1/10", "returned", '{"reservation": "ghost"}', _asked("1/10"))
    assert err.value.sqlstate == "PD004" and "does not exist" in str(err.value)
    assert raw(owner, "SELECT count(*) FROM pandas_dp_entries")[0][0] == before[0][0] + 1  # the reserve only
    # The library's own charges, reservations and returns pass the same checks.
    with b.reserve(0.25) as plan:
        plan.spend(Fraction(1, 8), method="inside")
    assert b.spent_exact == Fraction(1, 10) + Fraction(1, 10) + Fraction(1, 8)
    assert pdp.Ledger(analyst).verify().entries == before[0][0] + 5


def test_a_reservation_funded_from_another_guarded_ledger_returns_its_unused_part(postgres_server):
    """A reserve entry in the outer budget's ledger names the ledger that holds the reservation."""
    import uuid

    import _postgres_server

    urls = []
    for _ in range(2):
        url = _postgres_server.new_database(postgres_server, f"x{uuid.uuid4().hex[:12]}")
        pdp.Ledger.create(url, roles=True)
        urls.append(url)
    outer = pdp.budget(1, ledger=urls[0], name="outer")
    inner = pdp.budget(1, ledger=urls[1], name="inner")
    with outer, inner:
        with inner.reserve(0.5) as plan:
            plan.spend(Fraction(1, 8), method="inside")
    assert outer.spent_exact == inner.spent_exact == Fraction(1, 8)
    reserve = pdp.Ledger(urls[0]).entries().query("kind == 'reserve'")["params"].iloc[0]
    assert json.loads(reserve)["reservation_ledger"]


def test_the_function_refuses_a_budget_set_back_by_the_owner(guarded):
    owner, analyst = guarded
    b = pdp.budget(1.0, ledger=analyst, name="census")
    for i in range(12):
        b.spend(Fraction(1, 20), method=f"m{i}")
    genesis = raw(owner, "SELECT genesis FROM pandas_dp_budgets WHERE name = 'census'")[0][0]
    set_back(Backend("postgres", lambda: owner), owner, "census", 6)
    with pytest.raises(psycopg.Error) as err:
        _post(analyst, genesis, "charge", "1/20", "charged", "{}", _asked("1/20"))
    assert err.value.sqlstate == "PD002" and "set back" in str(err.value)
    with pytest.raises(LedgerError, match="fails verification|rolled back"):  # the library refuses first
        b.spend(Fraction(1, 20), method="again")


def test_the_function_refuses_an_older_copy_padded_past_the_witness_table(guarded):
    owner, analyst = guarded
    b = pdp.budget(1.0, ledger=analyst, name="census")
    pdp.budget(1.0, ledger=analyst, name="other").spend(Fraction(1, 10), method="other")
    b.spend(Fraction(1, 10), method="before")
    old = {t: raw(owner, f"SELECT * FROM {t}") for t in TABLES[:3]}
    for i in range(3):
        b.spend(Fraction(1, 10), method=f"after:{i}")
    with psycopg.connect(owner) as conn:
        for t in TABLES[:3]:
            conn.execute(f"DELETE FROM {t}")
            for r in old[t]:
                conn.execute(f"INSERT INTO {t} VALUES ({', '.join('%s' for _ in r)})", r)
    pad(Backend("postgres", lambda: owner), owner, "other", 4)  # 6 entries, more than the witness table's 5
    genesis = old["pandas_dp_budgets"][0][7]
    with pytest.raises(psycopg.Error) as err:
        _post(analyst, genesis, "charge", "1/10", "charged", "{}", _asked("1/10"))
    assert err.value.sqlstate == "PD003"
    with pytest.raises(LedgerError, match="rolled back"):
        b.spend(Fraction(1, 10), method="again")
