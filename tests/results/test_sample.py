"""Synthetic rows drawn from releases: ``result.sample(n=None, rng=None)``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pandas_dp as pdp
from pandas_dp.data import load_households, load_persons
from pandas_dp.errors import ParameterError
from pandas_dp.results._sampling import cell_counts, draw_cells


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


@pytest.fixture(scope="module")
def persons() -> pd.DataFrame:
    return load_persons()


def test_cell_counts_clip_round_and_missing():
    assert cell_counts([-3.2, 0.4, 0.5, 1.5, 2.6, np.nan]).tolist() == [0, 0, 0, 2, 3, 0]


def test_n_none_reproduces_the_released_table(persons):
    with pdp.budget(epsilon=1.0) as b:
        h = persons.dp.histogram("age", bins=range(0, 101, 10), epsilon=0.5, rng=_rng())
        spent = b.spent
        rows = h.sample(rng=_rng(1))
        assert b.spent == spent  # post-processing is free
    expected = cell_counts(h.counts.to_numpy())
    got = pd.cut(rows["age"], bins=np.arange(0, 101, 10), right=False).value_counts(sort=False).to_numpy()
    assert got.tolist() == expected.tolist()
    assert len(rows) == expected.sum()
    # uniform within the bin: every value inside [0, 100)
    assert rows["age"].between(0, 100, inclusive="left").all()


def test_negative_estimates_are_never_sampled():
    df = pd.DataFrame({"x": np.zeros(0)})
    with pdp.budget(epsilon=1.0):
        h = df.dp.histogram("x", bins=50, range=(0, 50), epsilon=0.1, rng=_rng(3))
    rows = h.sample(n=5000, rng=_rng(4))
    codes = np.floor(rows["x"].to_numpy()).astype(int)
    assert np.all(h.counts.to_numpy()[codes] >= 0.5)  # only cells whose rounded count is positive


def test_n_draws_match_the_cell_probabilities():
    counts = np.array([0, 10, 30, 60], dtype=np.int64)
    codes = draw_cells(counts, 100_000, _rng(7))
    freq = np.bincount(codes, minlength=4) / 100_000
    # binomial std of a frequency is sqrt(p(1-p)/n) <= 0.0016; 5 sigma = 0.008
    assert np.allclose(freq, counts / 100, atol=0.008)
    assert freq[0] == 0


def test_uniform_within_bins_statistically():
    df = pd.DataFrame({"v": np.full(20_000, 5.0)})
    with pdp.budget(epsilon=1.0):
        h = df.dp.histogram("v", bins=[0.0, 4.0, 8.0, 12.0], epsilon=1.0, rng=_rng())
    rows = h.sample(rng=_rng(2))
    inside = rows["v"][(rows["v"] >= 4) & (rows["v"] < 8)]
    # Uniform on [4, 8): mean 6, sd 4/sqrt(12) = 1.155; with ~2e4 draws the mean's sd is 0.008, 5 sigma 0.04
    assert abs(inside.mean() - 6.0) < 0.04
    assert abs(inside.std() - 4 / np.sqrt(12)) < 0.03


def test_categories_and_two_dimensions(persons):
    with pdp.budget(epsilon=1.0):
        h = persons.dp.histogram(["state", "age"], bins={"age": range(0, 101, 25)},
                                 categories={"state": "dtype"}, epsilon=1.0, rng=_rng())
    rows = h.sample(n=2000, rng=_rng(5))
    assert list(rows.columns) == ["state", "age"]
    assert isinstance(rows["state"].dtype, pd.CategoricalDtype)
    assert list(rows["state"].cat.categories) == list(persons["state"].cat.categories)
    full = h.sample(rng=_rng(6))
    grid = full.groupby(["state", pd.cut(full["age"], np.arange(0, 101, 25), right=False)],
                        observed=False).size()
    assert grid.to_numpy().tolist() == cell_counts(h.counts.to_numpy()).tolist()


def test_same_seed_same_rows_and_bad_arguments(persons):
    with pdp.budget(epsilon=1.0):
        h = persons.dp.histogram("age", bins=range(0, 101, 10), epsilon=1.0, rng=_rng())
    pd.testing.assert_frame_equal(h.sample(n=50, rng=_rng(9)), h.sample(n=50, rng=_rng(9)))
    assert len(h.sample(n=0)) == 0 and len(h.sample(n=10)) == 10  # secure-entropy default rng
    with pytest.raises(ParameterError, match="'n'"):
        h.sample(n=-1)
    with pytest.raises(ParameterError, match="'n'"):
        h.sample(n=2.5)
    with pytest.raises(ParameterError, match="'rng'"):
        h.sample(rng=42)


def test_hierarchical_and_data_dependent_releases_sample(persons):
    with pdp.budget(epsilon=3.0):
        t = persons.dp.hierarchical_histogram("income", bins=64, range=(0, 512_000), epsilon=1.0, rng=_rng())
        a = persons.dp.histogram("age", bins=range(0, 101), epsilon=1.0, method="ahp", rng=_rng())
        c = persons.dp.histogram("age", bins=range(0, 101), epsilon=1.0, method="dpcube", rng=_rng())
    for result, column in ((t, "income"), (a, "age"), (c, "age")):
        rows = result.sample(rng=_rng(1))
        assert len(rows) == cell_counts(result.counts.to_numpy()).sum()
        assert list(rows.columns) == [column]


def test_count_of_counts_persons_table_matches_every_level(persons):
    households = load_households()
    with pdp.budget(epsilon=1.0):
        coc = persons.dp.count_of_counts("household_id", ["state", "county"], epsilon=1.0, groups=households,
                                         max_size=16, rng=_rng())
    synth = coc.sample(rng=_rng(3), hierarchy=households)
    assert list(synth.columns) == ["group", "state", "county"]
    sizes = synth.groupby("group").size()
    # National count-of-counts of the synthetic table = the release (sizes > 0; size-0 groups have no person)
    released = coc.at("national")
    released = released[released.index > 0]
    assert sizes.value_counts().sort_index().to_numpy().tolist() == released.to_numpy().tolist()
    # Every state's histogram matches too (the table is consistent with each level)
    by_state = synth.groupby(["group", "state"]).size().reset_index(name="n")
    for state in households["state"].cat.categories:
        want = coc.at("state", state)
        want = want[want.index > 0]
        got = by_state.loc[by_state["state"] == state, "n"].value_counts().sort_index()
        assert got.to_numpy().tolist() == want.to_numpy().tolist()
    # counties sit under the right state
    truth = households.drop_duplicates("county").set_index("county")["state"].astype(str)
    assert (synth["state"].to_numpy() == truth.reindex(synth["county"]).to_numpy()).all()
    # n groups drawn
    assert synth.pipe(lambda f: f["group"].max() + 1) <= coc.totals("national").iloc[0]
    drawn = coc.sample(n=500, rng=_rng(4), hierarchy=households)
    assert drawn["group"].max() < 500


def test_count_of_counts_without_hierarchy_says_what_to_pass(persons):
    households = load_households()
    with pdp.budget(epsilon=1.0):
        coc = persons.dp.count_of_counts("household_id", ["state", "county"], epsilon=1.0, groups=households,
                                         max_size=16, rng=_rng())
    if coc.parents is not None:
        assert list(coc.sample(rng=_rng()).columns) == ["group", "state", "county"]
    else:
        with pytest.raises(ParameterError, match="hierarchy="):
            coc.sample(rng=_rng())


def test_unattributed_sample_gives_group_sizes():
    edges = pd.DataFrame({"src": np.repeat(np.arange(50), np.arange(50) % 7)})
    with pdp.budget(epsilon=1.0):
        u = edges.dp.unattributed_histogram("src", epsilon=1.0, groups=np.arange(50), rng=_rng())
    every = u.sample(rng=_rng(1))
    assert sorted(every["size"].tolist()) == sorted(u.counts.tolist())
    assert every["group"].tolist() == list(range(50))
    some = u.sample(n=1000, rng=_rng(2))
    assert len(some) == 1000 and set(some["size"]) <= set(u.counts.tolist())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=-50, max_value=50) | st.just(float("nan")), min_size=1, max_size=30),
       st.integers(min_value=0, max_value=2**32 - 1))
def test_n_none_draws_exactly_the_clipped_rounded_counts(estimates, seed):
    counts = cell_counts(estimates)
    assert (counts >= 0).all()
    codes = draw_cells(counts, None, np.random.default_rng(seed))
    assert np.bincount(codes, minlength=len(estimates)).tolist() == counts.tolist()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=20), min_size=1, max_size=30).filter(lambda c: sum(c) > 0),
       st.integers(min_value=0, max_value=200), st.integers(min_value=0, max_value=2**32 - 1))
def test_n_draws_only_cells_with_positive_counts(counts, n, seed):
    counts = np.asarray(counts, dtype=np.int64)
    codes = draw_cells(counts, n, np.random.default_rng(seed))
    assert codes.size == n and (counts[codes] > 0).all()
