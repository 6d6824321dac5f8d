"""Hypothesis fuzz of the budget and ledger API with hostile values for every argument.

Contract: ``budget``, ``Ledger.create``, ``Budget.spend``, ``Budget.check`` and
``to_fraction`` either work or raise a documented :class:`pandas_dp.PandasDPError`
(never a raw ``ValueError``/``TypeError``/``sqlite3`` error, never a warning:
``filterwarnings = error``); a refused charge records nothing, and ``check``
raises exactly what ``spend`` raises.
"""

from __future__ import annotations

import atexit
import math
import shutil
import tempfile
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pandas_dp as pdp
from pandas_dp._utils.rational import to_fraction
from pandas_dp.privacy.loss import ZCDP, PureDP

FUZZ = settings(max_examples=200, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FOLDER = Path(tempfile.mkdtemp(prefix="pandas_dp_fuzz_"))
atexit.register(shutil.rmtree, FOLDER, ignore_errors=True)


class Hostile:
    """An object whose conversions all fail."""

    def __str__(self) -> str:
        raise RuntimeError("no str")

    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    def __float__(self) -> float:
        raise RuntimeError("no float")


HOSTILE = [Decimal("sNaN"), Decimal("NaN"), Decimal("-Infinity"), Decimal("1e-999999"), Decimal("1e999999"),
           10**400, -(10**400), Fraction(1, 10**400), np.timedelta64(1, "s"), np.timedelta64("NaT"),
           np.datetime64("2020-01-01"), pd.Timedelta(1), pd.Timestamp(0), pd.NA, None, "1", "", "0.5", b"1", 1j,
           complex(1, 0), True, False, np.bool_(True), [1], (0.5,), {"epsilon": 1}, {1}, object(), Hostile(),
           math.nan, math.inf, -math.inf, -0.0, 0, -1, 5e-324, np.float16(np.inf), np.float32(np.nan),
           np.array([0.5]), np.int8(-1), Path("x")]
if hasattr(np, "float128"):
    HOSTILE += [np.float128("1e400"), np.float128("1e-4000"), np.float128("0.25")]
AMOUNTS = st.one_of(st.sampled_from(HOSTILE), st.floats(), st.integers(-5, 10**30), st.fractions(),
                    st.decimals(allow_nan=True, allow_infinity=True), st.sampled_from([0.1, 1, Fraction(1, 3)]))
LOSSES = st.one_of(AMOUNTS, st.builds(PureDP, st.fractions()), st.builds(ZCDP, st.fractions()),
                   st.sampled_from([PureDP(Fraction(1, 10)), ZCDP(Fraction(1, 10)), PureDP(Fraction(-1)),
                                    ZCDP(Fraction(0))]))
TEXTS = st.one_of(st.text(max_size=30), st.sampled_from(["", "\x00", "\udcff", "a/b", " ", "é" * 250, "x\n"]))
NAMES = st.one_of(st.none(), TEXTS, st.sampled_from(HOSTILE))
LOCATIONS = st.one_of(st.none(), st.sampled_from(
    ["", ":memory:", "file::memory:", str(FOLDER), str(FOLDER / "missing" / "l.sqlite"), str(FOLDER / "a\x00b"),
     str(FOLDER / "bad\udcff"), "postgresql://user@/db?host=/nonexistent-socket-folder&port=1", "postgres://",
     123, b"\xff", object(), Hostile(), 1.5, True, ["l.sqlite"], Path(FOLDER)]))


def _fails_cleanly(call):
    """Run ``call``; return the PandasDPError it raised (or None). Anything else fails the test."""
    try:
        call()
    except pdp.PandasDPError as err:
        return err
    return None


@FUZZ
@given(value=AMOUNTS, name=st.sampled_from(["epsilon", "rho"]))
def test_to_fraction_returns_a_positive_rational_or_a_parameter_error(value, name):
    try:
        frac = to_fraction(value, name=name)
    except pdp.ParameterError as err:
        assert f"'{name}'" in str(err)
        return
    assert isinstance(frac, Fraction) and frac > 0 and math.isfinite(float(frac))


@FUZZ
@given(epsilon=st.one_of(st.none(), AMOUNTS), rho=st.one_of(st.none(), AMOUNTS), name=NAMES, ledger=LOCATIONS)
def test_fuzz_budget(epsilon, rho, name, ledger):
    err = _fails_cleanly(lambda: pdp.budget(epsilon, rho=rho, name=name, ledger=ledger))
    if err is None:
        b = pdp.budget(epsilon, rho=rho, name=name, ledger=ledger)
        assert b.spent_exact == 0 and b.remaining_exact == b.total.amount > 0


@FUZZ
@given(location=st.one_of(LOCATIONS, TEXTS.map(lambda t: str(FOLDER / "sub" / t))))
def test_fuzz_ledger_create(location):
    err = _fails_cleanly(lambda: pdp.Ledger.create(location))
    if err is not None:
        assert isinstance(err, pdp.LedgerError)


@pytest.fixture(scope="module")
def ledger_path() -> Path:
    path = FOLDER / "fuzz.sqlite"
    if not path.exists():
        pdp.Ledger.create(path)
    return path


@FUZZ
@given(loss=LOSSES, method=st.one_of(TEXTS, st.sampled_from(HOSTILE)),
       columns=st.one_of(st.lists(st.one_of(TEXTS, st.sampled_from(HOSTILE)), max_size=3), st.sampled_from(HOSTILE)),
       params=st.one_of(st.none(), st.dictionaries(st.one_of(TEXTS, st.integers()),
                                                   st.one_of(st.sampled_from(HOSTILE), TEXTS), max_size=3),
                        st.sampled_from(HOSTILE)),
       measure=st.sampled_from(["epsilon", "rho"]), durable=st.booleans())
def test_fuzz_spend_and_check(ledger_path, loss, method, columns, params, measure, durable):
    kwargs = {measure: 1, "ledger": ledger_path if durable else None, "name": f"fuzz-{measure}"}
    b = pdp.budget(**kwargs)
    before = (b.spent_exact, len(b.ledger))
    with b:
        checked = _fails_cleanly(lambda: b.check(loss))
        spent = _fails_cleanly(lambda: b.spend(loss, method=method, columns=columns, params=params))
        if spent is not None:
            assert (b.spent_exact, len(b.ledger)) == before  # a refused charge records nothing
            plain = _fails_cleanly(lambda: b.spend(loss, method="plain"))  # the same loss with plain arguments
            assert (type(checked), str(checked)) == (type(plain), str(plain))
        else:
            assert checked is None and len(b.ledger) == before[1] + 1
