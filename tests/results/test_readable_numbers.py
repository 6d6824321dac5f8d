"""Issue 29, item 5: numbers as people read them (exact numbers exactly, floats as a person writes them)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd

import pandas_dp as pdp
from pandas_dp._utils.rational import exact_text
from pandas_dp.privacy.loss import PureDP, ZCDP


def test_losses_print_their_exact_amount_as_a_person_writes_it():
    with pdp.budget(rho=0.5) as b:
        assert str(b.total) == "rho=0.5 (zCDP)" and repr(b.total) == "ZCDP(rho=0.5)"
    assert str(PureDP(Fraction(1, 3))) == "epsilon=1/3" and repr(PureDP(Fraction(1, 3))) == "PureDP(epsilon=1/3)"
    assert PureDP(Fraction(1, 2)) == PureDP(Fraction(1, 2)) and hash(ZCDP(Fraction(1, 8))) == hash(ZCDP(Fraction(1, 8)))


def test_exact_text_is_exact():
    for value in [Fraction(1, 2), Fraction(-3, 8), Fraction(29000, 19), Fraction(7), Fraction(1, 2**20),
                  Fraction(0), Fraction(123456789, 1000)]:
        text = exact_text(value)
        assert Fraction(text) == value
        assert "e" not in text and (value.denominator % 3 != 0 and value.denominator % 19 != 0) == ("/" not in text)


def test_integer_bins_print_as_integers_and_html_reads_its_parameters():
    df = pd.DataFrame({"age": np.arange(14, 50)})
    with pdp.budget(epsilon=1.0):
        r = df.dp.histogram("age", bins=range(14, 50, 2), epsilon=0.38, rng=np.random.default_rng(0))
    frame = r.to_frame()
    assert str(frame.index[0]) == "[14, 16)" and frame.index[-1].right == 48
    assert r.params["noise_scale"] == Fraction(50, 19)  # the exact number stays in params (the ledger writes "50/19")
    page = r._repr_html_()
    small = page.split("<small>")[1].split("</small>")[0]
    assert "50/19" not in small and "noise_scale" not in small and "=" not in small
    assert small == "sensitivity: 1 · nonnegative: no"
    assert "t = 2.632" in page  # the noise is stated once, in the heading
