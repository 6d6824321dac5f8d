"""The ``.dp`` accessor on Dask frames: identical releases, counting on the workers, metadata-only validation.

A real ``LocalCluster`` (2 worker processes) runs the end-to-end releases;
the synchronous scheduler runs the fast cases. Identity of releases is the
main property: the Dask engine's counts equal the pandas engine's counts
exactly, so the same seeded ``rng`` draws the same noise and every estimate,
variance and parameter is equal.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

import pandas_dp as pdp  # noqa: E402
from pandas_dp.domain.grid import make_grid  # noqa: E402
import pandas_dp.engines.dask.graph as dask_graph  # noqa: E402
from pandas_dp.engines import engine_for  # noqa: E402
from pandas_dp.engines.dask import DASK_ENGINE, DaskEngine  # noqa: E402
from pandas_dp.engines.pandas import PandasEngine  # noqa: E402
import pandas_dp.engines.pandas.counts as pandas_engine  # noqa: E402


@pytest.fixture(scope="module")
def client():
    """A real 2-process LocalCluster for the module; closed at the end."""
    # dashboard_address=":0": a free port (None still binds 8787, which another cluster may hold).
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", silence_logs=50)
    cl = distributed.Client(cluster, set_as_default=False)
    try:
        yield cl
    finally:
        cl.close()
        cluster.close()


@pytest.fixture
def on_cluster(client):
    with dask.config.set(scheduler=client):
        yield client


@pytest.fixture
def sync():
    with dask.config.set(scheduler="sync"):
        yield


@pytest.fixture
def people() -> pd.DataFrame:
    rng = np.random.default_rng(2024)
    n = 4_000
    frame = pd.DataFrame({
        "age": rng.integers(-5, 140, n),
        "income": rng.gamma(2.0, 20_000.0, n),
        "state": rng.choice(["CA", "NY", "TX", "WA"], n),
        "sex": pd.Categorical(rng.choice(["F", "M"], n), categories=["F", "M", "X"]),
    })
    frame.loc[::37, "income"] = np.nan
    return frame


def seeded(seed: int = 11) -> np.random.Generator:
    return np.random.default_rng(seed)


def assert_same_histogram(a: pdp.Histogram, b: pdp.Histogram) -> None:
    pd.testing.assert_series_equal(a.counts, b.counts)
    pd.testing.assert_series_equal(a.variance, b.variance)
    assert a.epsilon == b.epsilon and a.method == b.method and a.params == b.params


HISTOGRAM_CASES = [
    pytest.param(["age"], dict(bins=64, range=(0, 128)), id="int-equal-width"),
    pytest.param(["income"], dict(bins=[0, 1e4, 2.5e4, 5e4, 1e5, 1e6]), id="float-edges-nan"),
    pytest.param(["state"], dict(categories=["CA", "NY", "TX", "OR"]), id="string-categories"),
    pytest.param(["sex"], dict(categories="dtype"), id="known-categorical"),
    pytest.param(["age", "state", "sex"], dict(bins={"age": 8}, range={"age": (0, 120)},
                                               categories={"state": ["CA", "NY", "TX", "WA"], "sex": "dtype"}),
                 id="3-d"),
]


@pytest.mark.parametrize("columns,domain", HISTOGRAM_CASES)
def test_histogram_identical_to_pandas_sync(people, sync, columns, domain):
    ddf = dd.from_pandas(people, npartitions=7)
    with pdp.budget(2.0) as b:
        a = people.dp.histogram(columns, **domain, epsilon=0.5, rng=seeded())
        c = ddf.dp.histogram(columns, **domain, epsilon=0.5, rng=seeded())
    assert_same_histogram(a, c)
    assert b.spent == 1.0 and list(b.ledger["status"]) == ["ok", "ok"]


@pytest.mark.parametrize("columns,domain", HISTOGRAM_CASES[:3])
def test_histogram_identical_to_pandas_on_cluster(people, on_cluster, columns, domain):
    ddf = dd.from_pandas(people, npartitions=5)
    with pdp.budget(2.0):
        a = people.dp.histogram(columns, **domain, epsilon=0.5, rng=seeded(5))
        c = ddf.dp.histogram(columns, **domain, epsilon=0.5, rng=seeded(5))
    assert_same_histogram(a, c)


def test_series_accessor_identical(people, sync):
    ddf = dd.from_pandas(people, npartitions=3)
    with pdp.budget(1.0):
        a = people["age"].dp.histogram(bins=range(0, 121, 10), epsilon=0.5, rng=seeded())
        c = ddf["age"].dp.histogram(bins=range(0, 121, 10), epsilon=0.5, rng=seeded())
    assert_same_histogram(a, c)
    assert c.counts.index.name == "age"


def test_accessor_is_the_pandas_accessor(people):
    """Same methods, signatures and docs: the Dask accessor classes are the pandas ones."""
    ddf = dd.from_pandas(people, npartitions=2)
    assert isinstance(ddf.dp, type(people.dp)) and isinstance(ddf["age"].dp, type(people["age"].dp))
    public = {m for m in dir(people.dp) if not m.startswith("_")}
    assert public == {m for m in dir(ddf.dp) if not m.startswith("_")}
    assert isinstance(engine_for(ddf), DaskEngine) and isinstance(engine_for(people), PandasEngine)


@pytest.mark.parametrize("split_every", [2, 3, 8])
def test_tree_reduction_exact(people, sync, split_every):
    """Summing 23 partitions' counts in trees of any fan-in equals the single-pass pandas count."""
    ddf = dd.from_pandas(people, npartitions=23)
    grid = make_grid(people, ["age", "sex"], bins={"age": 16}, range={"age": (0, 128)}, categories={"sex": "dtype"})
    expected = pandas_engine.bin_counts(people, grid)
    got = DaskEngine(split_every=split_every).bin_counts(ddf, grid)
    assert got.dtype == np.int64 and got.shape == (16, 3)
    np.testing.assert_array_equal(got, expected)


def test_count_graph_is_a_tree(people):
    """Partitions are counted separately and combined by at most split_every at a time."""
    ddf = dd.from_pandas(people, npartitions=20)
    parts = [dask.delayed(np.ones)(3, dtype=np.int64) for _ in range(20)]
    total = dask_graph.tree_sum(parts, split_every=4)
    graph = dict(total.__dask_graph__())
    sums = [t for k, t in graph.items() if "sum_arrays" in str(k)]
    # 20 leaves -> 5 -> 2 -> 1: eight combining tasks, none with more than four inputs.
    assert len(sums) == 8
    np.testing.assert_array_equal(total.compute(scheduler="sync"), np.full(3, 20))
    assert ddf.npartitions == 20


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.one_of(st.integers(-20, 140), st.none()), min_size=0, max_size=200),
       npartitions=st.integers(1, 9), bins=st.integers(1, 40))
def test_counts_equal_pandas_for_any_partitioning(sync, values, npartitions, bins):
    frame = pd.DataFrame({"v": pd.array(values, dtype="Int64")})
    ddf = dd.from_pandas(frame, npartitions=npartitions, sort=False)
    grid = make_grid(frame, ["v"], bins=bins, range=(0, 120))
    np.testing.assert_array_equal(DASK_ENGINE.bin_counts(ddf, grid), pandas_engine.bin_counts(frame, grid))


def test_unknown_categories_need_categories(people, sync):
    ddf = dd.from_pandas(people, npartitions=3)
    unknown = ddf.assign(state=ddf["state"].astype("category"))
    assert not unknown["state"].cat.known
    with pdp.budget(1.0) as b:
        with pytest.raises(pdp.DomainError, match="categories="):
            unknown.dp.histogram("state", epsilon=0.5)
        with pytest.raises(pdp.DomainError, match="categories="):
            unknown["sex"].cat.as_unknown().dp.histogram(epsilon=0.5)
        with pytest.raises(pdp.DomainError, match="categories="):
            unknown["sex"].cat.as_unknown().dp.histogram(categories="dtype", epsilon=0.5)
        assert b.spent == 0 and len(b.ledger) == 0
        cats = ["CA", "NY", "TX", "WA"]
        a = people.dp.histogram("state", categories=cats, epsilon=0.5, rng=seeded())
        c = unknown.dp.histogram("state", categories=cats, epsilon=0.5, rng=seeded())
    assert_same_histogram(a, c)


def test_errors_before_charge_match_pandas(people, sync):
    ddf = dd.from_pandas(people, npartitions=3)
    calls = [
        (pdp.DomainError, dict(columns="age", bins=10)),
        (pdp.DomainError, dict(columns="state")),
        (pdp.ParameterError, dict(columns="nope", bins=10, range=(0, 1))),
        (pdp.ParameterError, dict(columns="age", bins=10, range=(0, 100), method="nope")),
        (pdp.ParameterError, dict(columns="age", bins=10, range=(0, 100), rng=3)),
        (pdp.BudgetExceededError, dict(columns="age", bins=10, range=(0, 100), epsilon=5.0)),
    ]
    with pdp.budget(1.0) as b:
        for error, kwargs in calls:
            kwargs = {"epsilon": 0.5, **kwargs}
            columns = kwargs.pop("columns")
            with pytest.raises(error) as on_pandas:
                people.dp.histogram(columns, **kwargs)
            with pytest.raises(error) as on_dask:
                ddf.dp.histogram(columns, **kwargs)
            assert type(on_pandas.value) is type(on_dask.value)
            # Same message, except that Dask reads strings as 'string' where pandas 3 says 'str'.
            assert str(on_pandas.value).replace("dtype str)", "dtype string)") == str(on_dask.value)
    assert b.spent == 0 and len(b.ledger) == 0
    with pytest.raises(pdp.NoActiveBudgetError):
        ddf.dp.histogram("age", bins=10, range=(0, 100), epsilon=0.5)


def test_no_rows_reach_the_client(people, sync, monkeypatch):
    """Validation reads metadata only and the release computes only the count graph, never the frame."""
    ddf = dd.from_pandas(people, npartitions=4)
    collection = type(ddf)

    def forbidden(*args, **kwargs):
        raise AssertionError("the Dask frame was materialized on the client")

    for name in ("compute", "persist", "__array__", "__len__", "head", "tail"):
        monkeypatch.setattr(collection, name, forbidden, raising=False)
        monkeypatch.setattr(type(ddf["age"]), name, forbidden, raising=False)
    with pdp.budget(2.0):
        h = ddf.dp.histogram(["age", "state"], bins={"age": 12}, range={"age": (0, 120)},
                             categories={"state": ["CA", "NY", "TX", "WA"]}, epsilon=0.5, rng=seeded())
        with pytest.raises(pdp.DomainError):
            ddf.dp.histogram("age", bins=10, epsilon=0.5)
    assert h.counts.shape == (48,)


def test_count_result_is_only_the_domain(people, sync):
    """The single delayed object computed by the engine holds grid.size integers."""
    ddf = dd.from_pandas(people, npartitions=6)
    grid = make_grid(people, ["age"], bins=128, range=(0, 128))
    computed = []
    from dask.delayed import Delayed

    original = Delayed.compute

    def spy(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        computed.append(out)
        return out

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Delayed, "compute", spy)
        DASK_ENGINE.bin_counts(ddf, grid)
    assert len(computed) == 1
    assert isinstance(computed[0], np.ndarray) and computed[0].size == 128


def test_parquet_partitions_on_cluster(people, on_cluster, tmp_path):
    """Counting Parquet partitions on the workers (column projection) gives the pandas release."""
    path = tmp_path / "people"
    dd.from_pandas(people.drop(columns="sex"), npartitions=4).to_parquet(path, write_index=False)
    ddf = dd.read_parquet(path)
    assert ddf.npartitions >= 2
    with pdp.budget(1.0):
        a = people.dp.histogram(["age", "state"], bins={"age": 16}, range={"age": (0, 128)},
                                categories={"state": ["CA", "NY", "TX", "WA"]}, epsilon=0.5, rng=seeded(9))
        c = ddf.dp.histogram(["age", "state"], bins={"age": 16}, range={"age": (0, 128)},
                             categories={"state": ["CA", "NY", "TX", "WA"]}, epsilon=0.5, rng=seeded(9))
    assert_same_histogram(a, c)


def test_hierarchical_histogram_identical(people, sync):
    from test_dask_conformance import assert_same_release

    ddf = dd.from_pandas(people, npartitions=5)
    with pdp.budget(3.0):
        for kwargs in (dict(branching="auto"), dict(branching=4, budget_split="geometric", include_root=True)):
            a = people.dp.hierarchical_histogram("age", bins=128, range=(0, 128), epsilon=0.5, rng=seeded(2),
                                                 **kwargs)
            c = ddf.dp.hierarchical_histogram("age", bins=128, range=(0, 128), epsilon=0.5, rng=seeded(2),
                                              **kwargs)
            assert_same_release(a, c)
            assert a.range_query(10, 60) == c.range_query(10, 60)
        s = ddf["age"].dp.hierarchical_histogram(bins=128, range=(0, 128), epsilon=0.5, rng=seeded(3))
        assert_same_release(people["age"].dp.hierarchical_histogram(bins=128, range=(0, 128), epsilon=0.5,
                                                                    rng=seeded(3)), s)


def test_range_query_identical(people, sync):
    ddf = dd.from_pandas(people, npartitions=3)
    ranges = [(18, 25), (26, 64), (0, 120)]
    with pdp.budget(2.0) as b:
        a = people.dp.range_query("age", ranges, bins=120, range=(0, 120), epsilon=0.5, rng=seeded(8))
        c = ddf.dp.range_query("age", ranges, bins=120, range=(0, 120), epsilon=0.5, rng=seeded(8))
        d = ddf["age"].dp.range_query(ranges, bins=120, range=(0, 120), epsilon=0.5, rng=seeded(8))
    pd.testing.assert_frame_equal(a, c)
    pd.testing.assert_frame_equal(a, d)
    assert b.spent == 1.5


def test_count_of_counts_on_cluster(on_cluster):
    """The distributed count-of-counts engine on real worker processes gives the pandas release."""
    from pandas_dp.data import load_households, load_persons

    persons, households = load_persons(), load_households()
    ddf = dd.from_pandas(persons, npartitions=6)
    with pdp.budget(1.0):
        a = persons.dp.count_of_counts("household_id", ["state", "county"], epsilon=0.5, groups=households,
                                       rng=seeded(6))
        c = ddf.dp.count_of_counts("household_id", ["state", "county"], epsilon=0.5, groups=households,
                                   rng=seeded(6))
    pd.testing.assert_frame_equal(a.to_frame(), c.to_frame())


@pytest.mark.parametrize("public_ids", [True, False])
def test_unattributed_histogram_identical(sync, monkeypatch, public_ids):
    edges = pd.DataFrame({"src": np.random.default_rng(1).zipf(2.0, 3_000) % 200})
    ddf = dd.from_pandas(edges, npartitions=4)
    ids = np.arange(200) if public_ids else None
    with pdp.budget(1.0):
        a = edges.dp.unattributed_histogram("src", epsilon=0.5, groups=ids, rng=seeded(1))
        monkeypatch.setattr(type(ddf["src"]), "__array__", lambda *a, **k: (_ for _ in ()).throw(
            AssertionError("rows pulled to the client")), raising=False)
        c = ddf.dp.unattributed_histogram("src", epsilon=0.5, groups=ids, rng=seeded(1))
    pd.testing.assert_series_equal(a.counts, c.counts)


@pytest.mark.parametrize("public_ids", [True, False])
def test_group_counts_engine(people, sync, public_ids):
    """The Dask engine's rows-per-group count (for unattributed histograms) equals pandas' exactly."""
    ddf = dd.from_pandas(people, npartitions=5)
    if public_ids:
        ids = pd.Index(np.arange(-5, 100))
        expected = np.bincount(ids.get_indexer(people["age"])[ids.get_indexer(people["age"]) >= 0],
                               minlength=len(ids))
        np.testing.assert_array_equal(DaskEngine(split_every=2).group_counts(ddf["age"], ids), expected)
    else:
        expected = np.sort(people["state"].value_counts().to_numpy())
        np.testing.assert_array_equal(np.sort(DASK_ENGINE.group_counts(ddf["state"], None)), expected)
