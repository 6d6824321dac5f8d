"""Splitting a budget evenly with floats works to the last release (issue 44, item 4).

``n`` releases of ``total / n`` add up to a hair more than ``total`` in exact arithmetic (floats are read
through their shortest repr); the last one spends exactly what is left (``Budget.fit``), its noise is
calibrated to that amount, and the ledger records it. A request beyond float rounding is still refused,
before any private row is read.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
import pandas_dp.releases.pipeline as pipeline
from pandas_dp.accounting.budget import ROUNDING_SLACK

FRAME = pd.DataFrame({"x": np.arange(200) % 10})


def _read(value: float) -> Fraction:
    """A float as releases read it: through its shortest repr."""
    return Fraction(repr(value))


def _release(b, **loss):
    return FRAME.dp.histogram("x", bins=10, range=(0, 10), rng=np.random.default_rng(0), **loss)


@pytest.mark.parametrize("parameter", ["epsilon", "rho"])
@pytest.mark.parametrize("total", [0.05, 1.0, 0.3])
@pytest.mark.parametrize("n", [3, 7, 28, 100])
def test_an_even_float_split_spends_the_whole_budget(parameter, total, n):
    with pdp.budget(**{parameter: total}) as b:
        results = [_release(b, **{parameter: total / n}) for _ in range(n)]
    share = _read(total / n)
    assert 0 <= b.remaining_exact < share * ROUNDING_SLACK            # n * share may fall short: nothing fitted
    entries = b.ledger
    assert len(entries) == n and (entries["status"] == "ok").all()
    assert b.spent_exact == sum((r.loss.amount for r in results), Fraction(0))   # each charged its result's loss
    assert all(r.loss.amount == share for r in results[:-1])
    last = results[-1]
    assert share * (1 - ROUNDING_SLACK) <= last.loss.amount <= share
    assert last.noise == last.loss.noise()     # the noise is calibrated to the amount charged, never to more


def test_the_28_way_split_of_the_marginals_guide():
    with pdp.budget(rho=0.05) as b:
        for _ in range(28):
            h = _release(b, rho=0.05 / 28)
    assert b.remaining_exact == 0 and b.spent_exact == Fraction(1, 20)
    assert h.loss.amount == Fraction(1, 20) - 27 * _read(0.05 / 28)
    assert h.noise.sigma2 == 1 / (2 * h.loss.amount)   # calibrated to the amount charged
    assert float(h.loss.amount) != 0.05 / 28 and abs(float(h.loss.amount) - 0.05 / 28) < 1e-17


def test_an_epsilon_split_of_a_zcdp_budget_is_fitted_through_its_cost():
    with pdp.budget(rho=0.05) as b:
        for _ in range(28):
            h = _release(b, epsilon=(2 * 0.05 / 28) ** 0.5)
    assert 0 <= b.remaining_exact < Fraction(1, 10**15)
    assert h.loss.amount < _read((2 * 0.05 / 28) ** 0.5)
    assert h.loss.amount ** 2 / 2 == b.spent_exact - 27 * _read((2 * 0.05 / 28) ** 0.5) ** 2 / 2


def test_a_nested_budget_fits_the_tightest_of_its_chain():
    outer = pdp.budget(epsilon=0.05)
    with outer, pdp.budget(epsilon=1.0) as inner:
        for _ in range(7):
            _release(inner, epsilon=0.05 / 7)
    assert outer.remaining_exact == 0 and inner.spent_exact == Fraction(1, 20)


def test_a_request_beyond_float_rounding_is_refused_before_any_row_is_read(monkeypatch):
    reads = []
    real = pipeline.engine_for
    monkeypatch.setattr(pipeline, "engine_for", lambda frame: reads.append(1) or real(frame))
    with pdp.budget(rho=0.05) as b:
        for _ in range(27):
            _release(b, rho=0.05 / 28)
        left = b.remaining_exact
        reads.clear()
        over = float(left * (1 + 4 * ROUNDING_SLACK))
        with pytest.raises(pdp.BudgetExceededError, match="Nothing was charged"):
            _release(b, rho=over)
        with pytest.raises(pdp.BudgetExceededError):
            _release(b, rho=0.05 / 27)
        assert reads == [] and b.remaining_exact == left
        _release(b, rho=float(left * (1 + ROUNDING_SLACK / 2)))   # within rounding: spends what is left
    assert b.remaining_exact == 0 and reads == [1]


def test_spend_charges_exactly_what_it_is_given():
    """Budget.spend does not fit (its caller calibrated noise to the request): fit first, as releases do."""
    with pdp.budget(epsilon=0.05) as b:
        for _ in range(27):
            b.spend(0.05 / 28, method="a table")
        with pytest.raises(pdp.BudgetExceededError):
            b.spend(0.05 / 28, method="the last table")
        b.spend(b.fit(0.05 / 28), method="the last table")
    assert b.remaining_exact == 0
