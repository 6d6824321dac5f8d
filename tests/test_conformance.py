"""Conformance suite: every release kind of the registry must pass these checks, on every engine.

``METHODS`` is read from the registry (every histogram method with its default
knobs, plus configurations that exercise knobs), so a newly registered method
is checked without editing this file; each entry makes a valid 1-D release of
``ages["age"]`` over 64 public bins. ``KINDS`` does the same for the other
accessor methods of :data:`pandas_dp.releases.registry.ENTRIES`. The ``engine``
fixture runs each check on the pandas frame, on a Dask frame of it (skipped
without dask) and on a Polars LazyFrame of it (skipped without polars), the ``any_engine``
fixture of the other kinds on a Spark frame too (slow; skipped without pyspark or Java);
tests/engines/test_dask_conformance.py, tests/engines/test_polars_conformance.py and
tests/engines/test_spark_conformance.py add that every engine gives the pandas release.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from _spark import to_spark
from pandas_dp.releases.registry import ENTRIES, histogram_methods

#: Every registered method with its defaults, then knob settings worth their own run.
METHODS: list[tuple[str, dict]] = [(name, {}) for name in histogram_methods()] + [
    ("hierarchical", {"branching": 4, "budget_split": "optimal", "include_root": True}),
    ("auto", {"workload": "bins", "expected_total": 500}),
]

BINS = dict(bins=64, range=(0, 128))
#: The 2-D domain of 64 cells used for methods that release 2-D grids only.
BINS_2D = dict(bins={"age": 8}, range={"age": (0, 128)}, categories={"state": ["CA", "NY", "TX", "WA",
                                                                              "AZ", "NV", "OR", "UT"]})


def two_dimensional_only(method: str, kwargs: dict) -> bool:
    """Whether the method's plan refuses the 1-D domain of the suite (asked from public inputs only)."""
    from pandas_dp.domain.grid import make_grid
    from pandas_dp.privacy.loss import pure
    from pandas_dp.releases.methods import plan_method

    try:
        plan_method(method, make_grid(pd.DataFrame({"age": [0]}), ["age"], **BINS), pure(0.5), kwargs)
    except pdp.ParameterError:
        return True
    return False


def _engine(name: str):
    """Turns a pandas frame into the frame the engine ``name`` counts."""
    if name == "pandas":
        yield lambda frame: frame
        return
    if name == "polars":
        pl = pytest.importorskip("polars")
        yield lambda frame: pl.from_pandas(frame).lazy()
        return
    if name == "spark":
        yield lambda frame: to_spark(frame, partitions=3)
        return
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    with dask.config.set(scheduler="sync"):
        yield lambda frame: dd.from_pandas(frame, npartitions=3)


@pytest.fixture(params=["pandas", "dask", "polars"])
def engine(request):
    """Turns a pandas frame into the frame the engine under test counts."""
    yield from _engine(request.param)


@pytest.fixture(params=["pandas", "dask", "polars", pytest.param("spark", marks=pytest.mark.slow)])
def any_engine(request):
    """:func:`engine`, and Spark (slow: a local session; every histogram method's equality with pandas is
    tests/engines/test_spark_conformance.py's)."""
    yield from _engine(request.param)


def release(frame: pd.DataFrame, method: str, kwargs: dict, *, epsilon: float = 0.5, seed: int = 0):
    if two_dimensional_only(method, kwargs):
        return frame.dp.histogram(["age", "state"], **BINS_2D, epsilon=epsilon, method=method,
                                  rng=np.random.default_rng(seed), **kwargs)
    return frame.dp.histogram("age", **BINS, epsilon=epsilon, method=method, rng=np.random.default_rng(seed),
                              **kwargs)


@pytest.mark.parametrize("method,kwargs", METHODS)
def test_shape_and_index(ages, engine, method, kwargs):
    with pdp.budget(1.0):
        h = release(engine(ages), method, kwargs)
    assert isinstance(h, pdp.Histogram)
    assert isinstance(h.counts, pd.Series) and len(h.counts) == 64
    if two_dimensional_only(method, kwargs):
        assert isinstance(h.counts.index, pd.MultiIndex)
        assert h.counts.index[0] == (pd.Interval(0.0, 16.0, closed="left"), "CA")
    else:
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
    two_d = two_dimensional_only(method, kwargs)
    cols, domain = (["age", "state"], BINS_2D) if two_d else ("age", BINS)
    with pdp.budget(1.0) as b:
        with pytest.raises(pdp.DomainError):
            frame.dp.histogram("age", bins=64, epsilon=0.5, method=method, **kwargs)  # no range: data-derived
        with pytest.raises(pdp.ParameterError):
            frame.dp.histogram("nope", **BINS, epsilon=0.5, method=method, **kwargs)
        with pytest.raises(pdp.ParameterError):
            frame.dp.histogram(cols, **domain, epsilon=-1, method=method, **kwargs)
        with pytest.raises(pdp.BudgetExceededError):
            frame.dp.histogram(cols, **domain, epsilon=2.0, method=method, **kwargs)
        if two_d:  # the refused shape is a public input: refused before any charge
            with pytest.raises(pdp.ParameterError, match="2-D"):
                frame.dp.histogram("age", **BINS, epsilon=0.5, method=method, **kwargs)
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


@pytest.mark.parametrize("method,kwargs", METHODS)
def test_an_other_cell_on_a_label_domain(ages, method, kwargs):
    """``other=``: one more cell, last, that a row with an unseen label lands in; the same cells and charge."""
    two_d = two_dimensional_only(method, kwargs)
    cols = ["age", "state"] if two_d else "state"
    listed = BINS_2D["categories"]["state"][:7] if two_d else ["CA", "NY"]
    domain = dict(bins={"age": 8}, range={"age": (0, 128)}, categories={"state": listed}) if two_d \
        else dict(categories=listed)
    unseen = pd.concat([ages, pd.DataFrame({"age": [5], "income": [0.0], "state": ["rare-label"]})],
                       ignore_index=True)
    seen = []
    for frame in (ages, unseen):
        with pdp.budget(1.0) as b:
            h = frame.dp.histogram(cols, **domain, other="Other", epsilon=0.5, method=method,
                                   rng=np.random.default_rng(0), **kwargs)
        labels = h.counts.index.get_level_values("state") if two_d else h.counts.index
        assert list(pd.unique(np.asarray(labels))) == [*listed, "Other"]
        assert len(h.counts) == (64 if two_d else 3)
        seen.append((tuple(h.counts.index), b.spent, len(b.ledger)))
    assert seen[0] == seen[1] and seen[0][1:] == (0.5, 1)


# ------------------------------------------------------------------ the other release kinds

GROUPS = pd.DataFrame({"hh": np.arange(20), "state": np.where(np.arange(20) < 10, "A", "B")})


def _groups_frame() -> pd.DataFrame:
    rng = np.random.default_rng(4)
    hh = rng.integers(0, 20, 60)
    return pd.DataFrame({"person": np.arange(60), "hh": hh, "age": rng.integers(0, 100, 60),
                         "state": np.where(hh < 10, "A", "B")})  # the household's state, as in GROUPS



#: How to make a valid release of each non-histogram accessor method on ``_groups_frame()``.
KINDS = {
    "range_query": lambda f, e, rng: f.dp.range_query("age", [(0, 50), (50, 100)], bins=10, range=(0, 100),
                                                      epsilon=e, rng=rng),
    "count_of_counts": lambda f, e, rng: f.dp.count_of_counts(
        "hh", "state", groups=GROUPS, max_size=8, epsilon=e, rng=rng),
    "unattributed_histogram": lambda f, e, rng: f.dp.unattributed_histogram("hh", groups=GROUPS, epsilon=e,
                                                                            rng=rng),
    "histogram": lambda f, e, rng: f.dp.histogram("age", bins=10, range=(0, 100), epsilon=e, rng=rng),
    "hierarchical_histogram": lambda f, e, rng: f.dp.hierarchical_histogram("age", bins=10, range=(0, 100),
                                                                            epsilon=e, rng=rng),
    "marginals": lambda f, e, rng: f.dp.marginals([("age", "hh"), ("hh",)], bins={"age": [0, 18, 65, 100]},
                                                  categories={"hh": list(range(20))}, epsilon=e, rng=rng),
    "aggregate": lambda f, e, rng: f.dp.aggregate("hh", {"age": ["count", "sum", "mean"]}, categories=list(range(20)),
                                                  bounds={"age": (0, 100)}, epsilon=e, rng=rng),
    "quantiles": lambda f, e, rng: f.dp.quantiles("age", [0.25, 0.5], bounds=(0, 100), epsilon=e, rng=rng),
    # forms of an entry that take another path (issue 46: ordered columns measured through trees)
    "marginals:ordered": lambda f, e, rng: f.dp.marginals([("age", "hh"), ("hh",)], bins={"age": [0, 18, 65, 100]},
                                                          categories={"hh": list(range(20))}, epsilon=e, rng=rng,
                                                          ordered={"age": "ranges"}),
}


def test_every_entry_of_the_registry_is_in_the_suite():
    assert {k.split(":")[0] for k in KINDS} == set(ENTRIES)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_charges_once_and_is_reproducible(any_engine, kind):
    frame = any_engine(_groups_frame())
    with pdp.budget(1.0) as b:
        a = KINDS[kind](frame, 0.25, np.random.default_rng(9))
        c = KINDS[kind](frame, 0.25, np.random.default_rng(9))
    assert b.spent == 0.5 and list(b.ledger["status"]) == ["ok", "ok"]
    assert list(b.ledger["epsilon"]) == [0.25, 0.25]
    left, right = (x.to_frame() if hasattr(x, "to_frame") else x for x in (a, c))
    pd.testing.assert_frame_equal(left, right)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_refuses_before_any_charge(any_engine, kind):
    frame = any_engine(_groups_frame())
    with pytest.raises(pdp.NoActiveBudgetError):
        KINDS[kind](frame, 0.25, None)
    with pdp.budget(1.0) as b:
        for bad in (-1, 0, float("nan"), "0.5"):
            with pytest.raises(pdp.ParameterError):
                KINDS[kind](frame, bad, None)
        with pytest.raises(pdp.BudgetExceededError):
            KINDS[kind](frame, 2.0, None)
    assert b.spent == 0 and len(b.ledger) == 0


@pytest.mark.parametrize("name", sorted(n for n, e in ENTRIES.items() if e.on_series))
def test_series_methods_are_the_frame_methods_without_the_column(name):
    import inspect

    frame_sig = inspect.signature(getattr(pd.DataFrame({"x": [1]}).dp, name))
    series_sig = inspect.signature(getattr(pd.Series([1], name="x").dp, name))
    column = ENTRIES[name].column
    assert list(frame_sig.parameters)[0] == column
    assert [p for p in frame_sig.parameters.values() if p.name != column] == list(series_sig.parameters.values())
