"""The conformance suite over the Dask engine: every histogram method, same release as on pandas.

``METHODS`` is the conformance suite's own list, so a method registered
there is checked here too: with the same seeded ``rng`` a Dask frame and the
equivalent pandas frame give equal results (every dataclass field) and the
budget is charged once. The checks of tests/test_conformance.py themselves run
on both engines there.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")

import pandas_dp as pdp  # noqa: E402
from test_conformance import METHODS, release  # noqa: E402


@pytest.fixture(autouse=True)
def sync():
    with dask.config.set(scheduler="sync"):
        yield


@pytest.fixture
def dask_ages(ages):
    return dd.from_pandas(ages, npartitions=4)


def assert_same_value(a, b, where: str) -> None:
    if isinstance(a, pd.Series):
        pd.testing.assert_series_equal(a, b, obj=where)
    elif isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b, obj=where)
    elif isinstance(a, pd.Index):
        assert a.equals(b), where
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif dataclasses.is_dataclass(a):
        assert_same_release(a, b, where)
    elif hasattr(a, "index") and hasattr(a, "shape") and not isinstance(a, (int, float)):
        # Public domains (Grid) compare by their cells.
        assert a.index.equals(b.index) and a.shape == b.shape, where
    elif isinstance(a, (list, tuple)) and a and not isinstance(a[0], (int, float, str)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_value(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


def assert_same_release(a, b, where: str = "release") -> None:
    """Every field of two result dataclasses is equal (Series/arrays exactly)."""
    assert type(a) is type(b), where
    for f in dataclasses.fields(a):
        assert_same_value(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")


@pytest.mark.parametrize("method,kwargs", METHODS)
def test_same_release_as_pandas(ages, dask_ages, method, kwargs):
    with pdp.budget(2.0) as b:
        a = release(ages, method, kwargs, seed=21)
        c = release(dask_ages, method, kwargs, seed=21)
    assert_same_release(a, c)
    assert b.spent == 1.0
    ledger = b.ledger
    assert list(ledger["status"]) == ["ok", "ok"] and ledger.loc[0, "method"] == ledger.loc[1, "method"]


@pytest.mark.parametrize("method", ["auto", "dpcube", "identity", "hierarchical"])
def test_two_dimensional_and_auto_same_release(ages, dask_ages, method):
    """d-dim grids (and method="auto", which chooses from public sizes only) give the pandas release."""
    domain = dict(bins={"age": 16}, range={"age": (0, 128)}, categories={"state": ["CA", "NY", "TX", "WA"]})
    with pdp.budget(2.0):
        a = ages.dp.histogram(["age", "state"], **domain, epsilon=0.5, method=method,
                              rng=np.random.default_rng(13))
        c = dask_ages.dp.histogram(["age", "state"], **domain, epsilon=0.5, method=method,
                                   rng=np.random.default_rng(13))
    assert_same_release(a, c)
    assert a.method == c.method
