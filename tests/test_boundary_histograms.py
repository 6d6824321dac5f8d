"""The boundary rule for histogram releases (issue 11): private rows never steer an error, a warning or a domain.

Neighbour pairs D, D' = D + one adversarial row, for every histogram method (from the registry),
hierarchical histograms and range queries, on pandas and on Dask: the same outcome class, the same
index, the same warnings (none), the same budget charged; with no budget both raise
NoActiveBudgetError; and an out-of-domain row leaves a seeded release byte-identical.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.errors import DataSourceError


def test_a_failing_dask_graph_never_quotes_its_error():
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")

    def part(i: int) -> pd.DataFrame:
        if i == 1:
            raise ValueError("could not convert string to float: 'patient-4711'")
        return pd.DataFrame({"x": np.arange(3, dtype=np.int64)})

    meta = pd.DataFrame({"x": np.array([], dtype=np.int64)})
    frame = dd.from_delayed([dask.delayed(part)(i) for i in range(3)], meta=meta)
    with dask.config.set(scheduler="sync"), pdp.budget(epsilon=1.0) as b:
        with pytest.raises(DataSourceError) as info, warnings.catch_warnings():
            warnings.simplefilter("error")
            frame.dp.histogram("x", bins=4, range=(0, 4), epsilon=0.5)
    assert "4711" not in str(info.value) and info.value.__cause__ is None and info.value.__context__ is None
    assert b.spent == 0
