"""Conformance suite: every histogram method must pass these checks, on every engine.

Each entry of ``METHODS`` names a method and the keyword arguments that make
a valid 1-D release of ``ages["age"]`` over 64 public bins. The ``engine``
fixture runs each check on the pandas frame and on a Dask frame of it (skipped
without dask); tests/test_dask_conformance.py adds that both engines give the
same release.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp

METHODS: list[tuple[str, dict]] = [
    ("identity", {}),
    ("ahp", {}),
    ("dpcube", {}),
    ("hierarchical", {}),
    ("hierarchical", {"branching": 4, "budget_split": "optimal", "include_root": True}),
]

BINS = dict(bins=64, range=(0, 128))


@pytest.fixture(params=["pandas", "dask"])
def engine(request):
    """Turns a pandas frame into the frame the engine under test counts."""
    if request.param == "pandas":
        yield lambda frame: frame
        return
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    with dask.config.set(scheduler="sync"):
        yield lambda frame: dd.from_pandas(frame, npartitions=3)


def release(frame: pd.DataFrame, method: str, kwargs: dict, *, epsilon: float = 0.5, seed: int = 0):
    return frame.dp.histogram("age", **BINS, epsilon=epsilon, method=method, rng=np.random.default_rng(seed),
                              **kwargs)


@pytest.mark.parametrize("method,kwargs", METHODS)
def test_shape_and_index(ages, engine, method, kwargs):
    with pdp.budget(1.0):
        h = release(engine(ages), method, kwargs)
    assert isinstance(h, pdp.Histogram)
    assert isinstance(h.counts, pd.Series) and len(h.counts) == 64
    assert isinstance(h.counts.index, pd.IntervalIndex)
    assert h.counts.index[0] == pd.Interval(0.0, 2.0, closed="left")
    assert h.variance.index.equals(h.counts.index)
    assert (h.variance > 0).all()
    assert h.epsilon == 0.5
    assert h.to_frame().shape[0] == 64


@pytest.mark.parametrize("method,kwargs", METHODS)
def test_charges_exactly_once(ages, engine, method, kwargs):
    with pdp.budget(1.0) as b:
        release(engine(ages), method, kwargs, epsilon=0.3)
    assert b.spent == pytest.approx(0.3, abs=0)
    ledger = b.ledger
    assert len(ledger) == 1
    assert ledger.loc[0, "status"] == "ok"
    assert ledger.loc[0, "epsilon"] == 0.3


@pytest.mark.parametrize("method,kwargs", METHODS)
def test_invalid_input_charges_nothing(ages, engine, method, kwargs):
    frame = engine(ages)
    with pdp.budget(1.0) as b:
        with pytest.raises(pdp.DomainError):
            frame.dp.histogram("age", bins=64, epsilon=0.5, method=method, **kwargs)  # no range: data-derived
        with pytest.raises(pdp.ParameterError):
            frame.dp.histogram("nope", **BINS, epsilon=0.5, method=method, **kwargs)
        with pytest.raises(pdp.ParameterError):
            frame.dp.histogram("age", **BINS, epsilon=-1, method=method, **kwargs)
        with pytest.raises(pdp.BudgetExceededError):
            frame.dp.histogram("age", **BINS, epsilon=2.0, method=method, **kwargs)
    assert b.spent == 0 and len(b.ledger) == 0


@pytest.mark.parametrize("method,kwargs", METHODS)
def test_domain_not_derived_from_data(ages, engine, method, kwargs):
    """The index is the public domain whatever the data: shifting all values changes no label."""
    shifted = ages.assign(age=ages["age"] + 1000)
    with pdp.budget(2.0):
        a = release(engine(ages), method, kwargs)
        b = release(engine(shifted), method, kwargs)
    assert a.counts.index.equals(b.counts.index)


@pytest.mark.parametrize("method,kwargs", METHODS)
def test_rng_reproducible(ages, engine, method, kwargs):
    with pdp.budget(2.0):
        a = release(engine(ages), method, kwargs, seed=7)
        b = release(engine(ages), method, kwargs, seed=7)
    pd.testing.assert_series_equal(a.counts, b.counts)


@pytest.mark.parametrize("method,kwargs", METHODS)
def test_rows_outside_domain_change_nothing(ages, engine, method, kwargs):
    outside = pd.DataFrame({"age": [-5, 128, 500, 10**9], "income": 0.0, "state": "CA"})
    with_nan = pd.concat([ages, outside, pd.DataFrame({"age": [np.nan], "income": 0.0, "state": "CA"})],
                         ignore_index=True)
    with pdp.budget(2.0):
        a = release(ages, method, kwargs, seed=3)
        b = release(engine(with_nan), method, kwargs, seed=3)
    np.testing.assert_array_equal(a.counts.to_numpy(), b.counts.to_numpy())
