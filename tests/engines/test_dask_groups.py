"""Count-of-counts on Dask: the distributed engine gives the pandas engine's exact tables and releases.

The exact run-length histograms of every region (the only private input of
the release) are compared array by array with the pandas engine's, for any
partitioning and number of hash buckets; then whole releases are compared
with the same seeded ``rng``. Persons that do not fit the public tables
are dropped on both engines alike (nothing raises), and the custodian's
``check_persons`` lists them.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")

import pandas_dp as pdp  # noqa: E402
from pandas_dp.data import load_households, load_persons  # noqa: E402
import pandas_dp.engines.dask.groups as dask_groups  # noqa: E402
import pandas_dp.engines.pandas.groups as pandas_groups  # noqa: E402
from pandas_dp.domain.persons_check import check_persons  # noqa: E402

GROUP, LEVELS = "household_id", ["state", "county"]


@pytest.fixture(autouse=True)
def sync():
    with dask.config.set(scheduler="sync"):
        yield


@pytest.fixture(scope="module")
def persons() -> pd.DataFrame:
    return load_persons()


@pytest.fixture(scope="module")
def households() -> pd.DataFrame:
    return load_households()


def assert_same_tables(a: pandas_groups.GroupTables, b: pandas_groups.GroupTables) -> None:
    assert a.level_names == b.level_names and a.groups_public == b.groups_public
    assert a.max_size == b.max_size
    for ra, rb in zip(a.regions, b.regions):
        assert ra.equals(rb)
    for pa_, pb in zip(a.parents[1:], b.parents[1:]):
        np.testing.assert_array_equal(pa_, pb)
    assert len(a.exact) == len(b.exact)
    for level, (ea, eb) in enumerate(zip(a.exact, b.exact)):
        assert ea.n_nodes == eb.n_nodes, level
        for field in ("node", "size", "groups", "var"):
            np.testing.assert_array_equal(getattr(ea, field), getattr(eb, field), err_msg=f"{level}.{field}")
            assert getattr(ea, field).dtype == getattr(eb, field).dtype


@pytest.mark.parametrize("npartitions,buckets", [(1, 1), (5, 1), (7, 3), (12, None)])
@pytest.mark.parametrize("public", ["groups", "groups-sparse", "hierarchy"])
def test_exact_tables_equal_pandas_engine(persons, households, npartitions, buckets, public, monkeypatch):
    if public == "groups-sparse":  # the hashed sparse aggregates used for very large Groups tables
        monkeypatch.setattr(dask_groups, "DENSE_MAX_GROUPS", 0)
    kwargs = {"groups": households} if public.startswith("groups") else {
        "hierarchy": households[LEVELS].drop_duplicates()}
    expected = pandas_groups.prepare_groups(persons, GROUP, LEVELS, **kwargs)
    ddf = dd.from_pandas(persons, npartitions=npartitions)
    got = dask_groups.prepare_groups(ddf, GROUP, LEVELS, buckets=buckets, split_every=3, **kwargs)
    assert_same_tables(expected, got)


@pytest.mark.parametrize("dense", [True, False])
def test_empty_groups_of_the_public_table_are_counted(persons, households, dense, monkeypatch):
    """Groups without persons are size-0 groups of their leaf (public totals), as on pandas."""
    if not dense:
        monkeypatch.setattr(dask_groups, "DENSE_MAX_GROUPS", 0)
    extra = pd.DataFrame({GROUP: [10**9 + i for i in range(25)],
                          "state": households["state"].iloc[:25].to_numpy(),
                          "county": households["county"].iloc[:25].to_numpy()})
    groups = pd.concat([households, extra], ignore_index=True)
    expected = pandas_groups.prepare_groups(persons, GROUP, LEVELS, groups=groups)
    got = dask_groups.prepare_groups(dd.from_pandas(persons, npartitions=4), GROUP, LEVELS, groups=groups)
    assert_same_tables(expected, got)
    root = got.exact[0]
    assert root.groups[root.size == 0].sum() >= 25
    assert root.totals()[0] == len(groups)


@pytest.mark.parametrize("kwargs", [
    dict(method="hc"), dict(method="hg"), dict(method="naive", max_size=12), dict(merge="average"),
])
def test_release_identical_to_pandas(persons, households, kwargs):
    ddf = dd.from_pandas(persons, npartitions=6)
    with pdp.budget(2.0) as b:
        a = persons.dp.count_of_counts(GROUP, LEVELS, epsilon=0.5, groups=households,
                                       rng=np.random.default_rng(17), **kwargs)
        c = ddf.dp.count_of_counts(GROUP, LEVELS, epsilon=0.5, groups=households,
                                   rng=np.random.default_rng(17), **kwargs)
    pd.testing.assert_frame_equal(a.to_frame(), c.to_frame())
    assert a.params == c.params and a.levels == c.levels and a.epsilon == c.epsilon
    assert b.spent == 1.0 and list(b.ledger["status"]) == ["ok", "ok"]


def test_release_without_groups_table_identical(persons, households):
    hierarchy = households[LEVELS].drop_duplicates()
    ddf = dd.from_pandas(persons, npartitions=5)
    with pdp.budget(1.0):
        a = persons.dp.count_of_counts(GROUP, "county", epsilon=0.5, hierarchy=hierarchy,
                                       rng=np.random.default_rng(4))
        c = ddf.dp.count_of_counts(GROUP, "county", epsilon=0.5, hierarchy=hierarchy,
                                   rng=np.random.default_rng(4))
    pd.testing.assert_frame_equal(a.to_frame(), c.to_frame())


def broken_cases(persons: pd.DataFrame, households: pd.DataFrame) -> dict[str, tuple[pd.DataFrame, dict, list]]:
    """Frames with out-of-domain persons, the public tables, and the rows that are out of domain."""
    nulls = persons.assign(household_id=persons[GROUP].astype("float64"))
    nulls.loc[[3, 400], GROUP] = np.nan
    unknown = persons.copy()
    unknown.loc[[5, 6, 900], GROUP] = -1
    moved = persons.copy()
    other = households.set_index(GROUP)["county"]
    rows = [10, 20]
    moved.loc[rows, "county"] = [c + "-elsewhere" if isinstance(c, str) else -1
                                 for c in other.loc[moved.loc[rows, GROUP]]]
    odd = persons.astype({GROUP: object})
    odd.at[7, GROUP] = [1, 2]
    odd.at[8, GROUP] = {"household": 1}
    odd.at[9, GROUP] = pd.Timestamp("2020-01-01")
    return {
        "null group ids": (nulls, dict(groups=households.assign(household_id=households[GROUP].astype("float64"))),
                           [3, 400]),
        "group not in Groups": (unknown, dict(groups=households), [5, 6, 900]),
        "county differs from Groups": (moved, dict(groups=households), rows),
        "unhashable and odd ids": (odd, dict(groups=households), [7, 8, 9]),
    }


@pytest.mark.parametrize("dense", [True, False])
@pytest.mark.parametrize("case", ["null group ids", "group not in Groups", "county differs from Groups",
                                  "unhashable and odd ids"])
def test_out_of_domain_rows_are_dropped_as_on_pandas(persons, households, case, dense, monkeypatch):
    """Persons that do not fit the public tables are dropped on both engines; nothing raises; one charge each."""
    if not dense:
        monkeypatch.setattr(dask_groups, "DENSE_MAX_GROUPS", 0)
    frame, kwargs, bad = broken_cases(persons, households)[case]
    clean = pandas_groups.prepare_groups(frame.drop(index=bad), GROUP, LEVELS, **kwargs)
    assert_same_tables(clean, pandas_groups.prepare_groups(frame, GROUP, LEVELS, **kwargs))
    assert_same_tables(clean, dask_groups.prepare_groups(dd.from_pandas(frame, npartitions=4), GROUP, LEVELS,
                                                         buckets=3, split_every=2, **kwargs))
    with pdp.budget(1.0) as b:
        a = frame.dp.count_of_counts(GROUP, LEVELS, epsilon=0.5, rng=np.random.default_rng(5), **kwargs)
        c = dd.from_pandas(frame, npartitions=4).dp.count_of_counts(GROUP, LEVELS, epsilon=0.5,
                                                                    rng=np.random.default_rng(5), **kwargs)
    pd.testing.assert_frame_equal(a.to_frame(), c.to_frame())
    assert b.spent == 1.0 and list(b.ledger["status"]) == ["ok", "ok"]
    # The custodian's (non-private) check lists exactly those rows.
    assert set(check_persons(frame, GROUP, LEVELS, **kwargs)["index"]) == set(bad)


def test_group_spanning_two_leaves_without_groups_table(persons, households):
    """Without a Groups table a group id in two counties is two groups, on both engines (nothing raises)."""
    hierarchy = households[LEVELS].drop_duplicates()
    frame = persons.copy()
    gid = frame[GROUP].iloc[0]
    members = frame.index[frame[GROUP] == gid]
    assert len(members) >= 2
    other_county = hierarchy.loc[hierarchy["county"] != frame.loc[members[0], "county"]].iloc[0]
    frame.loc[members[-1], ["state", "county"]] = other_county[["state", "county"]].to_numpy()
    renamed = frame.copy()
    renamed.loc[members[-1], GROUP] = -gid           # the moved person as a group of its own
    expected = pandas_groups.prepare_groups(renamed, GROUP, LEVELS, hierarchy=hierarchy)
    assert_same_tables(expected, pandas_groups.prepare_groups(frame, GROUP, LEVELS, hierarchy=hierarchy))
    for buckets in (1, 3):
        got = dask_groups.prepare_groups(dd.from_pandas(frame, npartitions=3), GROUP, LEVELS, hierarchy=hierarchy,
                                         buckets=buckets, split_every=2)
        assert_same_tables(expected, got)
    cases = check_persons(frame, GROUP, LEVELS, hierarchy=hierarchy)
    assert set(cases["check"]) == {f"functional dependency {GROUP}->county"}
    assert set(cases["index"]) == set(members)


def test_parameter_and_domain_errors_match_pandas(persons, households):
    ddf = dd.from_pandas(persons, npartitions=2)
    calls = [
        (pdp.ParameterError, dict(group="nope", location=LEVELS, groups=households)),
        (pdp.DomainError, dict(group=GROUP, location=LEVELS)),
        (pdp.ParameterError, dict(group=GROUP, location=LEVELS, groups=households[[GROUP, "state"]])),
        (pdp.ParameterError, dict(group=GROUP, location=LEVELS, groups=households, method="nope")),
    ]
    with pdp.budget(1.0) as b:
        for error, kwargs in calls:
            with pytest.raises(error) as on_pandas:
                persons.dp.count_of_counts(epsilon=0.5, **kwargs)
            with pytest.raises(error) as on_dask:
                ddf.dp.count_of_counts(epsilon=0.5, **kwargs)
            assert str(on_pandas.value) == str(on_dask.value)
    assert b.spent == 0


def test_no_rows_reach_the_client(persons, households, monkeypatch):
    ddf = dd.from_pandas(persons, npartitions=4)

    def forbidden(*args, **kwargs):
        raise AssertionError("the Dask frame was materialized on the client")

    for cls in (type(ddf), type(ddf[GROUP])):
        for name in ("compute", "persist", "__array__", "__len__", "head", "tail"):
            monkeypatch.setattr(cls, name, forbidden, raising=False)
    with pdp.budget(1.0):
        coc = ddf.dp.count_of_counts(GROUP, LEVELS, epsilon=0.5, groups=households, rng=np.random.default_rng(0))
    assert int(coc.at("national").sum()) == len(households)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(0, 6), min_size=1, max_size=30), leaves=st.integers(1, 4),
       npartitions=st.integers(1, 6), buckets=st.integers(1, 3), seed=st.integers(0, 2**16),
       dense=st.booleans())
def test_any_partitioning_gives_the_exact_tables(sizes, leaves, npartitions, buckets, seed, dense):
    rng = np.random.default_rng(seed)
    groups = pd.DataFrame({"g": np.arange(len(sizes)) * 7 + 3,
                           "region": rng.integers(0, leaves, len(sizes)) // 2,
                           "leaf": rng.integers(0, leaves, len(sizes))})
    groups["region"] = groups["leaf"] // 2
    persons = pd.DataFrame({"g": np.repeat(groups["g"].to_numpy(), sizes)}).sample(frac=1.0, random_state=seed)
    if persons.empty:
        return
    expected = pandas_groups.prepare_groups(persons, "g", ["region", "leaf"], groups=groups)
    ddf = dd.from_pandas(persons, npartitions=npartitions, sort=False)
    with mock.patch.object(dask_groups, "DENSE_MAX_GROUPS", 1 << 23 if dense else 0):
        got = dask_groups.prepare_groups(ddf, "g", ["region", "leaf"], groups=groups, buckets=buckets,
                                         split_every=2)
    assert_same_tables(expected, got)


@pytest.mark.parametrize("convert_string", [True, False])
def test_mixed_ids_across_partitions_group_as_on_pandas(convert_string):
    """Ids whose dtype differs by partition (one odd row makes a partition ``object``) merge by value and
    class: True is not 1 (as in typed columns), 2.0 is 2, lists are dropped."""
    import pandas_dp.engines.pandas.counts as pandas_engine
    from pandas_dp.engines.dask import DaskEngine

    dask_engine = DaskEngine(split_every=2)

    ids = pd.Series([1, 1, 2, True, True, 2.0, [1], None, "a", "a", 3, True], dtype=object)
    frame = pd.DataFrame({"hh": ids, "county": ["a", "a", "b", "a", "a", "b", "a", "a", "b", "b", "a", "b"]})
    hierarchy = pd.DataFrame({"county": ["a", "b"]})
    with dask.config.set({"dataframe.convert-string": convert_string}):
        for parts in (1, 3, 5):
            ddf = dd.from_pandas(frame, npartitions=parts)
            if not convert_string:  # Dask keeps the objects: exactly the pandas engine's groups
                assert_same_tables(pandas_groups.prepare_groups(frame, "hh", "county", hierarchy=hierarchy),
                                   dask_groups.prepare_groups(ddf, "hh", "county", hierarchy=hierarchy, buckets=2,
                                                              split_every=2))
                np.testing.assert_array_equal(np.sort(pandas_engine.group_counts(ids, None)),
                                              np.sort(dask_engine.group_counts(ddf["hh"], None)))
            got = np.sort(dask_engine.group_counts(ddf["hh"], pd.Index([1, 2, 3])))
            np.testing.assert_array_equal(got, [1, 2, 2])  # ids 1, 2 (and 2.0), 3; never True
