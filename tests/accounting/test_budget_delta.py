"""Approximate DP in the budget: exact (epsilon | rho, delta) accounting, refusals, and delta in the ledger."""

from __future__ import annotations

from fractions import Fraction as F

import pytest

import pandas_dp as pdp
from pandas_dp.privacy.loss import ZCDP, PureDP

from _ledger_backends import backend, forget_connections  # noqa: F401  (fixture)


def test_losses_add_both_parts_exactly_and_keep_delta_when_converted():
    a, b = PureDP(F(1, 2), F(1, 10)), PureDP(F(1, 4), F(1, 5))
    assert a + b == PureDP(F(3, 4), F(3, 10)) and (a + b) - b == a
    assert a.part(F(1, 2)) == PureDP(F(1, 4), F(1, 20))
    assert a.charged_as("zcdp") == ZCDP(F(1, 8), F(1, 10))
    assert PureDP(F(1, 2)) == PureDP(F(1, 2), F(0)) and PureDP(F(1, 2)).delta == 0
    assert repr(a) == "PureDP(epsilon=0.5, delta=0.1)" and a.describe()["delta"] == "1/10"
    assert "delta" not in PureDP(F(1, 2)).describe()


def test_ten_deltas_of_a_tenth_fill_the_budget_exactly_and_the_next_is_refused():
    with pdp.budget(epsilon=10, delta=F(1, 10**6)) as b:
        for _ in range(10):
            b.spend(PureDP(F(1, 2), F(1, 10**7)), method="t")
        assert b.delta_spent_exact == F(1, 10**6) and b.delta_remaining == 0 and b.spent_exact == 5
        with pytest.raises(pdp.BudgetExceededError, match=r"delta=1e-07.*remaining=0\.0"):
            b.spend(PureDP(F(1, 2), F(1, 10**7)), method="t")
        assert b.spent_exact == 5 and len(b.ledger) == 10  # the epsilon part was not charged either
        b.spend(PureDP(F(1, 2)), method="pure")  # a pure release still runs: it spends no delta
    assert b.delta_spent_exact == F(1, 10**6) and b.spent_exact == F(11, 2)
    assert b.ledger["delta"].tolist() == [1e-7] * 10 + [0.0]
    assert "delta=1e-06" in repr(b) and "delta_spent=1e-06" in repr(b)


@pytest.mark.parametrize("outer_delta", [None, 1e-6])
def test_a_release_needing_delta_is_refused_before_any_charge_by_any_budget_without_delta(outer_delta):
    outer = pdp.budget(epsilon=1, delta=outer_delta)
    inner = pdp.budget(epsilon=1, delta=None if outer_delta else 1e-6)
    with outer, inner:
        with pytest.raises(pdp.ParameterError, match=r"needs delta=1e-07.*has no delta.*nothing was charged.*delta=1e-6"):
            inner.check(PureDP(F(1, 2), F(1, 10**7)))
        with pytest.raises(pdp.ParameterError, match=r"has no delta"):
            inner.spend(PureDP(F(1, 2), F(1, 10**7)), method="t")
    for b in (outer, inner):
        assert b.spent_exact == 0 and b.delta_spent_exact == 0 and len(b.ledger) == 0


def test_a_rho_budget_with_delta_charges_pure_releases_their_zcdp_and_their_delta():
    with pdp.budget(rho=1, delta=F(1, 10**6)) as b:
        b.spend(PureDP(F(1, 2), F(1, 10**7)), method="t")
    assert b.spent_exact == F(1, 8) and b.delta_spent_exact == F(1, 10**7)


def test_epsilon_delta_adds_the_approximate_parts():
    b = pdp.budget(rho=F(1, 2), delta=F(1, 10**7))
    # delta-approximate rho-zCDP is (eps(rho, D - delta), D)-DP: the conversion runs at the difference.
    assert b.epsilon_delta(1e-6) == ZCDP(F(1, 2)).epsilon_delta(9e-7)
    assert b.epsilon_delta(1e-6) > pdp.budget(rho=F(1, 2)).epsilon_delta(1e-6)
    assert b.epsilon_delta(1e-6, spent=True) == 0.0
    with pytest.raises(pdp.ParameterError, match="above the delta already spent"):
        b.epsilon_delta(1e-7)
    p = pdp.budget(epsilon=2, delta=F(1, 10**7))
    assert p.epsilon_delta(1e-7) == 2.0 and p.epsilon_delta(1e-3) == 2.0
    with pytest.raises(pdp.ParameterError, match="above the delta already spent"):
        p.epsilon_delta(1e-8)


@pytest.mark.parametrize("bad", [0, 1, -1e-6, 1.5, float("nan"), "1e-6"])
def test_a_bad_budget_delta_is_refused(bad):
    with pytest.raises(pdp.ParameterError, match="'delta' parameter of budget must be a number strictly between"):
        pdp.budget(epsilon=1, delta=bad)


def test_the_companion_name_is_reserved():
    with pytest.raises(pdp.ParameterError, match="may not end with '#delta'"):
        pdp.budget(epsilon=1, name="x#delta")


def test_a_reservation_prepays_its_delta_outright_and_its_releases_spend_it(tmp_path):
    location = str(tmp_path / "r.sqlite")
    pdp.Ledger.create(location)
    b = pdp.budget(epsilon=1, delta=F(1, 10**6), ledger=location, name="run")
    with b.reserve(PureDP(F(1, 2), F(4, 10**7))) as plan:
        assert plan.delta_exact == F(4, 10**7) and b.delta_spent_exact == F(4, 10**7)
        plan.spend(PureDP(F(1, 8), F(3, 10**7)), method="inside")
        with pytest.raises(pdp.BudgetExceededError, match=r"delta=2e-07.*remaining=1e-07"):
            plan.spend(PureDP(F(1, 8), F(2, 10**7)), method="inside")
        with pytest.raises(pdp.BudgetExceededError):
            b.spend(PureDP(F(1, 8), F(7, 10**7)), method="outside")  # 6e-7 left outside
        assert plan.delta_spent_exact == F(3, 10**7)
    # The unused epsilon goes back; the delta stays spent (it is never returned).
    assert b.spent_exact == F(1, 8) and b.delta_spent_exact == F(4, 10**7)
    pdp.Ledger.open(location).verify()
    with pytest.raises(pdp.ParameterError, match="has no delta"):
        with pdp.budget(epsilon=1).reserve(0.5) as no_delta:
            no_delta.spend(PureDP(F(1, 8), F(1, 10**7)), method="inside")


def test_delta_round_trips_through_the_ledger_and_is_sealed_in_its_chain(backend):  # noqa: F811
    location = backend.create()
    with pdp.budget(rho=1, delta=F(1, 1000), ledger=location, name="a") as b:
        b.spend(ZCDP(F(1, 3), F(1, 3000)), method="discover")
        b.spend(ZCDP(F(1, 3)), method="identity")
    forget_connections()
    again = pdp.budget(rho=1, delta=F(1, 1000), ledger=location, name="a")
    assert again.delta_spent_exact == F(1, 3000) and again.spent_exact == F(2, 3)
    summary = pdp.Ledger.open(location).verify()
    assert summary.entries == 3  # two main entries and one delta entry, all in the ledger head
    with pytest.raises(pdp.ParameterError, match="with delta=1/1000; reopen it with the same delta"):
        pdp.budget(rho=1, ledger=location, name="a")
    with pytest.raises(pdp.ParameterError, match="without a delta"):
        pdp.budget(rho=1, ledger=location, name="b")
        pdp.budget(rho=1, delta=1e-6, ledger=location, name="b")
    # An edit of the recorded delta breaks the chain.
    backend.sql(location, "UPDATE pandas_dp_entries SET amount = '1/30000' WHERE budget = 'a#delta'")
    with pytest.raises(pdp.LedgerError, match="fails verification"):
        pdp.Ledger.open(location).verify()


def test_a_ledger_budget_without_delta_opens_and_charges_as_before(tmp_path):
    location = str(tmp_path / "old.sqlite")
    pdp.Ledger.create(location)
    with pdp.budget(epsilon=1, ledger=location, name="old") as b:
        b.spend(0.25, method="t")
    forget_connections()
    again = pdp.budget(epsilon=1, ledger=location, name="old")
    assert again.delta == 0 and again.delta_spent_exact == 0 and again.spent_exact == F(1, 4)
    assert [r.name for r in pdp.Ledger.open(location).budgets().itertuples()] == ["old"]


def test_nested_budgets_on_two_ledgers_each_record_the_delta(tmp_path):
    outer_at, inner_at = str(tmp_path / "outer.sqlite"), str(tmp_path / "inner.sqlite")
    for location in (outer_at, inner_at):
        pdp.Ledger.create(location)
    outer = pdp.budget(epsilon=2, delta=F(1, 10**5), ledger=outer_at, name="org")
    inner = pdp.budget(epsilon=1, delta=F(1, 10**6), ledger=inner_at, name="team")
    with outer, inner:
        inner.spend(PureDP(F(1, 4), F(1, 10**7)), method="t")
        with pytest.raises(pdp.BudgetExceededError, match="delta"):
            inner.spend(PureDP(F(1, 4), F(1, 10**6)), method="t")  # the inner delta is too small: nothing anywhere
    assert outer.delta_spent_exact == inner.delta_spent_exact == F(1, 10**7)
    assert outer.spent_exact == inner.spent_exact == F(1, 4)
    for location in (outer_at, inner_at):
        assert pdp.Ledger.open(location).verify().entries == 2


def test_a_reopened_reservation_keeps_its_delta(tmp_path):
    from pandas_dp.accounting.budget import Reservation

    location = str(tmp_path / "r.sqlite")
    pdp.Ledger.create(location)
    b = pdp.budget(rho=1, delta=F(1, 10**6), ledger=location, name="run")
    plan = b.reserve(ZCDP(F(1, 2), F(5, 10**7)))  # a process that dies holding it
    forget_connections()
    again = Reservation.reopen(pdp.budget(rho=1, delta=F(1, 10**6), ledger=location, name="run"), plan.name)
    with again:
        again.spend(ZCDP(F(1, 4), F(5, 10**7)), method="resumed")
    assert again.delta_spent_exact == F(5, 10**7) and b.delta_spent_exact == F(5, 10**7) and b.spent_exact == F(1, 4)
    assert pdp.Ledger.open(location).verify().entries == 6  # reserve, its delta, the charge and its delta, close, return
