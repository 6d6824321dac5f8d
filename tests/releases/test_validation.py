"""Input validation under hypothesis: every call either releases (and is charged exactly once)
or raises a documented PandasDPError subclass and charges nothing."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pandas_dp as pdp

DOCUMENTED = (pdp.DomainError, pdp.ParameterError, pdp.BudgetExceededError, pdp.SchemaError)

columns = st.sampled_from(["i", "f", "s", "c", "b", "n", "missing"])
epsilons = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-3, 3),
    st.sampled_from([0, -0.0, 1e-300, 1e300, "0.5", None, True, np.float64(0.25), np.nan]),
)
bins_specs = st.one_of(
    st.none(),
    st.integers(-2, 50),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=6),
    st.lists(st.integers(-10, 10), max_size=6),
    st.sampled_from(["ten", True, 3.5]),
)
ranges = st.one_of(
    st.none(),
    st.tuples(st.floats(allow_nan=True, allow_infinity=True), st.floats(allow_nan=True, allow_infinity=True)),
    st.sampled_from([(0, 10), (10, 0), (0,), "0-10", (0, 1, 2)]),
)
categories = st.one_of(st.none(), st.lists(st.sampled_from(["a", "b", "c", None, 1]), max_size=4))


@st.composite
def frames(draw: st.DrawFn) -> pd.DataFrame:
    n = draw(st.integers(0, 30))
    values = draw(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=n, max_size=n))
    ints = draw(st.lists(st.integers(-(2**62), 2**62), min_size=n, max_size=n))
    labels = draw(st.lists(st.sampled_from(["a", "b", "c", None]), min_size=n, max_size=n))
    return pd.DataFrame({
        "i": np.asarray(ints, dtype=np.int64),
        "f": np.asarray(values, dtype=np.float64),
        "s": pd.Series(labels, dtype=object),
        "c": pd.Categorical(labels, categories=["a", "b", "c"]),
        "b": np.asarray([v > 0 for v in ints], dtype=bool),
        "n": pd.array([None if k % 3 == 0 else k for k in range(n)], dtype="Int64"),
    })


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frame=frames(), column=columns, epsilon=epsilons, bins=bins_specs, rng_range=ranges, cats=categories)
def test_histogram_either_releases_or_raises_documented_error_without_charge(frame, column, epsilon, bins,
                                                                              rng_range, cats):
    with pdp.budget(1.0) as b:
        try:
            h = frame.dp.histogram(column, bins=bins, range=rng_range, categories=cats, epsilon=epsilon,
                                   rng=np.random.default_rng(0))
        except DOCUMENTED:
            assert b.spent == 0 and len(b.ledger) == 0
            return
    assert isinstance(h, pdp.Histogram)
    assert len(b.ledger) == 1 and b.spent == h.epsilon
    assert len(h.counts) == len(h.counts.index) > 0


@settings(max_examples=100, deadline=None)
@given(frame=frames(), epsilon=st.floats(0.01, 1.0))
def test_release_on_any_frame_has_the_public_domain(frame, epsilon):
    with pdp.budget(1.0):
        h = frame.dp.histogram("f", bins=8, range=(-1e6, 1e6), epsilon=epsilon, rng=np.random.default_rng(1))
    assert len(h.counts) == 8
