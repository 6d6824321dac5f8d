"""Dask is optional: without it, pandas_dp imports and works; with it, importing registers ``.dp`` on Dask."""

from __future__ import annotations

import subprocess
import sys

import pytest

WITHOUT_DASK = """
import sys
sys.modules["dask"] = None          # any 'import dask...' now raises ImportError
sys.modules["dask.dataframe"] = None
import numpy as np, pandas as pd, pandas_dp as pdp
assert "pandas_dp.accessors.dask" not in sys.modules
with pdp.budget(1.0):
    h = pd.DataFrame({"a": [1, 2, 3]}).dp.histogram("a", bins=3, range=(0, 3), epsilon=1.0,
                                                    rng=np.random.default_rng(0))
print(len(h.counts))
"""


def test_import_without_dask():
    out = subprocess.run([sys.executable, "-c", WITHOUT_DASK], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "3"


def test_import_registers_dask_accessor():
    dd = pytest.importorskip("dask.dataframe")
    import pandas as pd

    import pandas_dp  # noqa: F401
    from pandas_dp.accessors.dask import DaskDataFrameDPAccessor, DaskSeriesDPAccessor

    ddf = dd.from_pandas(pd.DataFrame({"a": [1, 2, 3]}), npartitions=1)
    assert isinstance(ddf.dp, DaskDataFrameDPAccessor) and isinstance(ddf["a"].dp, DaskSeriesDPAccessor)
