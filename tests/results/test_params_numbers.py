"""A result's noise parameters are numbers, exact ones as Fractions (issue 44, item 7a).

``params["noise_scale"]`` was the string ``'200/19'``; it is now ``Fraction(200, 19)``. The ledger and
the command line's files still write the exact text (``"200/19"``), as before.
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pandas as pd

import pandas_dp as pdp

RIDES = pd.DataFrame({"rider": np.arange(300) % 40, "hour": np.arange(300) % 24, "fare": np.linspace(1, 30, 300)})


def test_the_noise_scale_is_an_exact_number():
    with pdp.budget(epsilon=1.0):
        h = RIDES.dp.histogram("hour", bins=24, range=(0, 24), privacy_unit="rider", max_rows=10, epsilon=0.95,
                               rng=np.random.default_rng(0))
    assert h.params["noise_scale"] == Fraction(200, 19) and isinstance(h.params["noise_scale"], Fraction)
    assert float(h.params["noise_scale"]) * 0.95 == 10.0


def test_sigma2_is_an_exact_number():
    with pdp.budget(rho=1.0):
        h = RIDES.dp.histogram("hour", bins=24, range=(0, 24), rho=0.3, rng=np.random.default_rng(0))
    assert h.params["sigma2"] == Fraction(5, 3) and isinstance(h.params["sigma2"], Fraction)


def test_the_ledger_writes_the_exact_text():
    with pdp.budget(epsilon=1.0) as b:
        a = RIDES.dp.aggregate("hour", {"fare": ["sum"]}, bounds={"fare": (0, 30)}, bins={"hour": range(0, 25, 6)},
                               epsilon=0.95, rng=np.random.default_rng(0))
    written = json.loads(b.ledger["params"].iloc[0])
    assert {m["noise_scale"] for m in written["measurements"]} == {str(m["noise_scale"])
                                                                   for m in a.params["measurements"]}
    assert all(isinstance(m["noise_scale"], Fraction) for m in a.params["measurements"])
    assert "Fraction(" not in b.ledger["params"].iloc[0]
