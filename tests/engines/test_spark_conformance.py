"""The Spark engine gives the pandas engine's releases: every release kind, with and without privacy units.

With the same seeded ``rng`` a Spark frame and the pandas frame it was built from give equal
results (every field), charged once each, for every histogram method of the conformance suite and
every other release kind (key discovery, geography, count-of-counts with and without a Groups
table, statistics per cell, quantiles, table sets), with privacy units on the unit path. The
boundary: a column whose values do not fit the domain (text in a numeric histogram, a frame of
another dtype) is dropped exactly as on pandas, never raising. Slow (a local Spark session).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from _spark import spark_session, to_spark
from pandas_dp.errors import DataSourceError
from test_conformance import METHODS, release

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def session():
    return spark_session()


def _same(a, b, where: str) -> None:
    if isinstance(a, pd.Series):
        pd.testing.assert_series_equal(a, b, obj=where)
    elif isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b, obj=where)
    elif isinstance(a, pd.Index):
        assert a.equals(b), where
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif dataclasses.is_dataclass(a) and not isinstance(a, type):
        assert type(a) is type(b), where
        for f in dataclasses.fields(a):
            _same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            _same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)) and a and not isinstance(a[0], (int, float, str)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif hasattr(a, "index") and hasattr(a, "shape") and not isinstance(a, (int, float)):
        assert a.index.equals(b.index) and a.shape == b.shape, where
    else:
        assert a == b, where


def assert_same(a, b) -> None:
    """Two releases are equal: their tidy frames, and every dataclass field."""
    left, right = (x.to_frame() if hasattr(x, "to_frame") else x for x in (a, b))
    if isinstance(left, pd.DataFrame):
        pd.testing.assert_frame_equal(left, right)
    _same(a, b, "release")


@pytest.fixture(scope="module")
def ages_spark(session, ages_frame):
    return to_spark(ages_frame, partitions=3)


@pytest.fixture(scope="module")
def ages_frame():
    rng = np.random.default_rng(12345)
    n = 500
    frame = pd.DataFrame({"age": rng.integers(0, 100, n), "income": rng.gamma(2.0, 20_000.0, n),
                          "state": rng.choice(["CA", "NY", "TX"], n)})
    frame.loc[::50, "income"] = np.nan
    return frame


@pytest.mark.parametrize("method,kwargs", METHODS)
def test_every_histogram_method_same_release_as_pandas(ages_frame, ages_spark, method, kwargs):
    with pdp.budget(2.0) as b:
        a = release(ages_frame, method, kwargs, seed=21)
        c = release(ages_spark, method, kwargs, seed=21)
    assert_same(a, c)
    assert b.spent == 1.0 and list(b.ledger["status"]) == ["ok", "ok"]


def _people() -> pd.DataFrame:
    rng = np.random.default_rng(4)
    n = 400
    hh = rng.integers(0, 30, n)
    return pd.DataFrame({"person": rng.integers(0, 120, n), "hh": hh, "age": rng.integers(0, 100, n),
                         "pay": np.round(rng.gamma(2.0, 20.0, n), 1), "sex": rng.choice(["F", "M"], n),
                         "state": np.where(hh < 15, "A", "B"), "county": np.where(hh % 2 == 0, "x", "y")})


GROUPS = pd.DataFrame({"hh": np.arange(30), "state": np.where(np.arange(30) < 15, "A", "B")})
HIERARCHY = pd.DataFrame({"state": ["A", "A", "B", "B"], "county": ["x", "y", "x2", "y2"]})
STATES = pd.DataFrame({"state": ["A", "B"]})
UNIT = dict(privacy_unit="person", max_rows=2)

#: One release of every kind (and the unit path of each), as (frame, rng) -> result.
KINDS = {
    "histogram": lambda f, rng: f.dp.histogram(["age", "sex"], bins={"age": 10}, range={"age": (0, 100)},
                                               categories={"sex": ["F", "M"]}, epsilon=0.25, rng=rng),
    "histogram-unit": lambda f, rng: f.dp.histogram("age", bins=10, range=(0, 100), epsilon=0.25, rng=rng, **UNIT),
    "histogram-cells": lambda f, rng: f.dp.histogram("age", bins=10, range=(0, 100), epsilon=0.25, rng=rng,
                                                     privacy_unit="person", max_cells=2, max_rows_per_cell=1),
    "histogram-auto": lambda f, rng: f.dp.histogram("age", bins=10, range=(0, 100), epsilon=0.25, rng=rng,
                                                    privacy_unit="person", max_rows="auto"),
    "discover": lambda f, rng: f.dp.histogram("sex", categories="discover", epsilon=0.25, delta=1e-6, rng=rng),
    "discover-unit": lambda f, rng: f.dp.histogram("sex", categories="discover", epsilon=0.25, delta=1e-6,
                                                   rng=rng, **UNIT),
    "geography": lambda f, rng: f.dp.histogram("sex", categories=["F", "M"], by=["state", "county"],
                                               hierarchy=HIERARCHY, epsilon=0.25, rng=rng),
    "geography-unit": lambda f, rng: f.dp.histogram("sex", categories=["F", "M"], by=["state", "county"],
                                                    hierarchy=HIERARCHY, epsilon=0.25, rng=rng, **UNIT),
    "hierarchical_histogram": lambda f, rng: f.dp.hierarchical_histogram("age", bins=16, range=(0, 128),
                                                                         epsilon=0.25, rng=rng, **UNIT),
    "range_query": lambda f, rng: f.dp.range_query("age", [(0, 50), (50, 100)], bins=10, range=(0, 100),
                                                   epsilon=0.25, rng=rng),
    "marginals": lambda f, rng: f.dp.marginals([("age", "sex"), ("sex",)], bins={"age": [0, 18, 65, 100]},
                                               categories={"sex": ["F", "M"]}, epsilon=0.25, rng=rng),
    "marginals-unit": lambda f, rng: f.dp.marginals([("age", "sex")], bins={"age": [0, 18, 65, 100]},
                                                    categories={"sex": ["F", "M"]}, epsilon=0.25, rng=rng, **UNIT),
    "marginals-geography": lambda f, rng: f.dp.marginals([("sex",)], categories={"sex": ["F", "M"]},
                                                         by=["state", "county"], hierarchy=HIERARCHY,
                                                         epsilon=0.25, rng=rng, **UNIT),
    "aggregate": lambda f, rng: f.dp.aggregate("sex", {"pay": ["count", "sum", "mean"]}, categories=["F", "M"],
                                               bounds={"pay": (0, 200)}, epsilon=0.25, rng=rng),
    "aggregate-unit": lambda f, rng: f.dp.aggregate("sex", {"pay": ["sum", "mean"]}, categories=["F", "M"],
                                                    bounds={"pay": (0, 200)}, epsilon=0.25, rng=rng, **UNIT),
    "quantiles": lambda f, rng: f.dp.quantiles("pay", [0.25, 0.5], bounds=(0, 200), epsilon=0.25, rng=rng),
    "quantiles-unit": lambda f, rng: f.dp.quantiles("pay", [0.5], bounds=(0, 200), epsilon=0.25, rng=rng, **UNIT),
    "count_of_counts": lambda f, rng: f.dp.count_of_counts("hh", "state", groups=GROUPS, max_size=40,
                                                           epsilon=0.25, rng=rng),
    "count_of_counts-ids": lambda f, rng: f.dp.count_of_counts("hh", ["state", "county"], hierarchy=HIERARCHY,
                                                               max_size=40, epsilon=0.25, rng=rng),
    "count_of_counts-group": lambda f, rng: f.dp.count_of_counts("hh", "state", max_size=40, epsilon=0.25,
                                                                 hierarchy=STATES, rng=rng, privacy_unit="group"),
    "unattributed_histogram": lambda f, rng: f.dp.unattributed_histogram("hh", groups=GROUPS, epsilon=0.25,
                                                                         rng=rng),
    "unattributed-ids": lambda f, rng: f.dp.unattributed_histogram("hh", epsilon=0.25, rng=rng),
    "unattributed-unit": lambda f, rng: f.dp.unattributed_histogram("hh", groups=GROUPS, epsilon=0.25, rng=rng,
                                                                    **UNIT),
}


@pytest.fixture(scope="module")
def people_spark(session):
    return to_spark(_people(), partitions=3)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_same_release_as_pandas(people_spark, kind):
    with pdp.budget(1.0, delta=1e-5) as b:
        a = KINDS[kind](_people(), np.random.default_rng(9))
        c = KINDS[kind](people_spark, np.random.default_rng(9))
    assert_same(a, c)
    assert list(b.ledger["status"]) == ["ok", "ok"] and b.spent == 0.5


def test_text_in_a_numeric_column_drops_as_on_pandas(session):
    """A column of another dtype (text among numbers) is read as pandas reads it: odd values are dropped."""
    frame = pd.DataFrame({"age": ["3", "15", "n/a", "70", None, "200", "x"] * 20,
                          "person": np.arange(140) % 9})
    spark = to_spark(frame, partitions=2)
    with pdp.budget(1.0):
        for kwargs in ({}, UNIT):
            a = frame.dp.histogram("age", bins=4, range=(0, 100), epsilon=0.1, rng=np.random.default_rng(2), **kwargs)
            c = spark.dp.histogram("age", bins=4, range=(0, 100), epsilon=0.1, rng=np.random.default_rng(2), **kwargs)
            assert_same(a, c)


def test_rows_outside_the_domain_change_nothing(people_spark, session):
    """Neighbouring frames: adding rows out of the domain gives the byte-identical seeded release."""
    more = pd.concat([_people(), pd.DataFrame({"person": [1, 2], "hh": [-5, 99], "age": [300, -1], "pay": [1.0, 2.0],
                                               "sex": ["?", None], "state": ["Z", None], "county": ["q", "q"]})],
                     ignore_index=True)
    wider = to_spark(more, partitions=3)
    with pdp.budget(2.0):
        for kind in ("histogram", "marginals", "count_of_counts"):
            a = KINDS[kind](people_spark, np.random.default_rng(5))
            c = KINDS[kind](wider, np.random.default_rng(5))
            assert_same(a, c)


def test_an_empty_frame_gives_the_domain(session):
    frame = _people().iloc[:0]
    spark = to_spark(frame)
    with pdp.budget(1.0):
        a = frame.dp.histogram("age", bins=10, range=(0, 100), epsilon=0.2, rng=np.random.default_rng(1), **UNIT)
        c = spark.dp.histogram("age", bins=10, range=(0, 100), epsilon=0.2, rng=np.random.default_rng(1), **UNIT)
        assert_same(a, c)


def test_metadata_only_before_the_charge(people_spark):
    """Bad public input raises before any charge; categories='dtype' has no Spark categorical to read."""
    with pdp.budget(1.0) as b:
        with pytest.raises(pdp.ParameterError):
            people_spark.dp.histogram("nope", bins=4, range=(0, 100), epsilon=0.1)
        with pytest.raises(pdp.DomainError):
            people_spark.dp.histogram("sex", categories="dtype", epsilon=0.1)
    assert b.spent == 0 and len(b.ledger) == 0


def test_a_failing_plan_is_reported_without_its_text(session):
    from pyspark.sql import functions as F

    frame = to_spark(pd.DataFrame({"age": [1, 2, 3]}))
    broken = frame.withColumn("age", F.raise_error(F.lit("secret 42")))
    with pdp.budget(1.0):
        with pytest.raises(DataSourceError) as err:
            broken.dp.histogram("age", bins=4, range=(0, 100), epsilon=0.1)
    assert "secret" not in str(err.value)


def test_counts_pushed_down_to_spark_equal_the_pandas_counts(session):
    """Numeric bins counted by Spark SQL: values on every edge, between, NaN, infinities and nulls, even and
    uneven edges, one and two dimensions, integer and float columns: the pandas engine's exact counts."""
    from pandas_dp.domain.grid import make_grid
    from pandas_dp.engines.pandas import PANDAS_ENGINE
    from pandas_dp.engines.spark import SPARK_ENGINE, SparkFrame
    from pandas_dp.engines.spark.pushdown import pushable

    rng = np.random.default_rng(3)
    edges = np.linspace(-1.0, 1.0, 8)
    x = np.concatenate([edges, np.nextafter(edges, np.inf), np.nextafter(edges, -np.inf), rng.uniform(-2, 2, 300),
                        [np.nan, np.inf, -np.inf]])
    frame = pd.DataFrame({"x": x, "k": rng.integers(-5, 105, x.size), "m": pd.array(
        rng.integers(0, 100, x.size), dtype="Int64")})
    frame.loc[::7, "m"] = pd.NA
    spark = SparkFrame(to_spark(frame, partitions=2))
    specs = [(["x"], dict(bins=7, range=(-1.0, 1.0))), (["x"], dict(bins={"x": [-1.0, -0.3, 0.0, 0.01, 1.0]})),
             (["k"], dict(bins=10, range=(0, 100))), (["k", "x"], dict(bins=[10, 3], range=[(0, 100), (-1, 1)])),
             (["m"], dict(bins={"m": [0, 10, 50, 100]})), (["x"], dict(bins=100, range=(-1.0, 1.0)))]
    for columns, kwargs in specs:
        grid = make_grid(frame, columns, **kwargs)
        assert pushable(spark, grid)
        np.testing.assert_array_equal(SPARK_ENGINE.bin_counts(spark, grid), PANDAS_ENGINE.bin_counts(frame, grid),
                                      err_msg=str((columns, kwargs)))
