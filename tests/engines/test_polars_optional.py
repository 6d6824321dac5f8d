"""Polars is optional: without it pandas_dp imports and works; importing either first registers ``.dp`` on Polars."""

from __future__ import annotations

import subprocess
import sys

import pytest

WITHOUT_POLARS = """
import sys
sys.modules["polars"] = None          # any 'import polars' now raises ImportError
import numpy as np, pandas as pd, pandas_dp as pdp
assert "pandas_dp.accessors.polars" not in sys.modules
with pdp.budget(1.0):
    h = pd.DataFrame({"a": [1, 2, 3]}).dp.histogram("a", bins=3, range=(0, 3), epsilon=1.0,
                                                    rng=np.random.default_rng(0))
print(len(h.counts))
"""

#: pandas_dp first, then polars (the one-shot hook registers), and the other way round.
ORDERS = {
    "pandas_dp first": "import pandas_dp\nassert 'polars' not in sys.modules\nimport polars as pl",
    "polars first": "import polars as pl\nimport pandas_dp",
    # the engine's modules import no Polars: the registration, run when Polars imports, finds them whole
    "engine first": "import pandas_dp.engines.polars\nassert 'polars' not in sys.modules\nimport polars as pl",
}
CHECK = """
import sys
{imports}
from pandas_dp.accessors.polars import PolarsDataFrameDPAccessor, PolarsLazyFrameDPAccessor
frame = pl.DataFrame({{"a": [1, 2, 3]}})
assert isinstance(frame.dp, PolarsDataFrameDPAccessor) and isinstance(frame.lazy().dp, PolarsLazyFrameDPAccessor)
print("ok")
"""


def test_import_without_polars():
    out = subprocess.run([sys.executable, "-c", WITHOUT_POLARS], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "3"


@pytest.mark.parametrize("order", sorted(ORDERS))
def test_import_registers_the_polars_namespace(order):
    pytest.importorskip("polars")
    out = subprocess.run([sys.executable, "-W", "error", "-c", CHECK.format(imports=ORDERS[order])],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
