"""Public domains: bin codes against a reference, categories, grids, data-derived domains refused."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pandas_dp as pdp
from pandas_dp.domain.grid import make_grid
from pandas_dp.engines.pandas.counts import bin_counts


def reference_codes(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Brute force: bin i iff edges[i] <= v < edges[i+1]."""
    out = np.full(values.size, -1)
    for i in range(edges.size - 1):
        out[(values >= edges[i]) & (values < edges[i + 1])] = i
    return out


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.floats(-50, 150) | st.just(float("nan")) | st.integers(-50, 150).map(float), min_size=1,
                    max_size=200),
    n=st.integers(1, 40),
    low=st.floats(-20, 20, allow_nan=False),
    width=st.floats(0.5, 130),
)
def test_equal_width_codes_match_brute_force(values, n, low, width):
    frame = pd.DataFrame({"x": values})
    grid = make_grid(frame, ["x"], bins=n, range=(low, low + width))
    got = grid.codes([frame["x"].to_numpy()])
    np.testing.assert_array_equal(got, reference_codes(np.asarray(values), grid.dims[0].edges))


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.integers(-10, 300), min_size=1, max_size=200), step=st.integers(1, 7),
       start=st.integers(-5, 5))
def test_integer_fast_path_matches_brute_force(values, step, start):
    frame = pd.DataFrame({"x": np.asarray(values, dtype=np.int64)})
    edges = list(range(start, 200, step))
    grid = make_grid(frame, ["x"], bins=edges)
    got = grid.codes([frame["x"].to_numpy()])
    np.testing.assert_array_equal(got, reference_codes(np.asarray(values, dtype=float), np.asarray(edges, float)))


def test_uneven_edges_use_searchsorted():
    frame = pd.DataFrame({"x": [0.0, 0.9, 1.0, 4.99, 5.0, 100.0, np.nan, -1.0]})
    grid = make_grid(frame, ["x"], bins=[0, 1, 5, 100])
    np.testing.assert_array_equal(bin_counts(frame, grid), [2, 2, 1])


def test_nullable_and_bool_columns():
    frame = pd.DataFrame({"x": pd.array([1, None, 3, 3], dtype="Int64"), "b": [True, False, True, True]})
    np.testing.assert_array_equal(bin_counts(frame, make_grid(frame, ["x"], bins=[0, 2, 4])), [1, 2])
    np.testing.assert_array_equal(bin_counts(frame, make_grid(frame, ["b"], bins=[0, 1, 2])), [1, 3])


def test_categories_and_categorical_dtype():
    frame = pd.DataFrame({"s": ["a", "b", "zz", None, "a"]})
    grid = make_grid(frame, ["s"], categories=["a", "b", "c"])
    np.testing.assert_array_equal(bin_counts(frame, grid), [2, 1, 0])
    frame["c"] = pd.Categorical(["x", "y", "x", None, "y"], categories=["y", "x", "w"])
    with pytest.raises(pdp.DomainError, match="categories='dtype'"):
        make_grid(frame, ["c"])  # a dtype's categories are used only when the caller says so
    grid = make_grid(frame, ["c"], categories="dtype")
    assert list(grid.index) == ["y", "x", "w"]
    np.testing.assert_array_equal(bin_counts(frame, grid), [2, 2, 0])
    # explicit categories re-map the Categorical's codes
    grid = make_grid(frame, ["c"], categories=["x", "y"])
    np.testing.assert_array_equal(bin_counts(frame, grid), [2, 2])


def test_grid_counts_match_crosstab():
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"a": rng.integers(0, 10, 400), "s": rng.choice(["p", "q", "r"], 400)})
    grid = make_grid(frame, ["a", "s"], bins={"a": range(0, 11)}, categories={"s": ["p", "q", "r"]})
    expected = pd.crosstab(frame["a"], frame["s"]).reindex(index=range(10), columns=["p", "q", "r"], fill_value=0)
    np.testing.assert_array_equal(bin_counts(frame, grid), expected.to_numpy())
    assert isinstance(grid.index, pd.MultiIndex) and len(grid.index) == 30


def test_two_numeric_dims_with_aligned_lists():
    frame = pd.DataFrame({"lat": [40.1, 40.6, 40.6, 41.5], "lon": [-73.9, -73.2, -73.2, -73.5]})
    grid = make_grid(frame, ["lat", "lon"], bins=[2, 2], range=[(40, 41), (-74, -73)])
    np.testing.assert_array_equal(bin_counts(frame, grid), [[1, 0], [0, 2]])


@pytest.mark.parametrize("kwargs,error,text", [
    (dict(bins=10), pdp.DomainError, "range=\\(low, high\\)"),
    (dict(), pdp.DomainError, "public domain"),
    (dict(bins=[3, 2, 1]), pdp.DomainError, "strictly increasing"),
    (dict(bins=[1, np.inf]), pdp.DomainError, "finite"),
    (dict(bins=10, range=(5, 5)), pdp.DomainError, "low < high"),
    (dict(bins=0, range=(0, 1)), pdp.ParameterError, "at least 1"),
    (dict(bins=[0, 1], range=(0, 1)), pdp.ParameterError, "not both"),
    (dict(bins=10, range=(0, 1), categories=["a"]), pdp.ParameterError, "either categories"),
])
def test_numeric_domain_errors(kwargs, error, text):
    frame = pd.DataFrame({"x": [1.0, 2.0]})
    with pytest.raises(error, match=text):
        make_grid(frame, ["x"], **kwargs)


def test_object_column_needs_categories():
    frame = pd.DataFrame({"s": ["a", "b"]})
    with pytest.raises(pdp.DomainError, match="categories="):
        make_grid(frame, ["s"])
    # Bins on a text column are a numeric domain like any other: the labels fall outside it (the
    # dtype is never read, as one stray token turns a numeric column into text).
    grid = make_grid(frame, ["s"], bins=3, range=(0, 1))
    np.testing.assert_array_equal(bin_counts(frame, grid), [0, 0, 0])
    with pytest.raises(pdp.DomainError, match="repeat"):
        make_grid(frame, ["s"], categories=["a", "a"])


def test_align_ranges_on_edges():
    frame = pd.DataFrame({"x": [1.0]})
    dim = make_grid(frame, ["x"], bins=10, range=(0, 100)).dims[0]
    i, j = dim.align([0, 20], [100, 50])
    np.testing.assert_array_equal(i, [0, 2])
    np.testing.assert_array_equal(j, [10, 5])
    with pytest.raises(pdp.DomainError, match="nearest edges are 20.0 and 30.0"):
        dim.align(25, 50)
    with pytest.raises(pdp.DomainError, match="above"):
        dim.align(50, 20)


def test_domains_above_the_cell_limit_are_refused_before_allocating():
    from pandas_dp.domain.grid import MAX_CELLS

    frame = pd.DataFrame({"x": [1.0], "y": [2.0]})
    with pytest.raises(pdp.DomainError, match="coarser bins"):
        make_grid(frame, ["x"], bins=2**31, range=(0, 1))
    with pytest.raises(pdp.DomainError, match="coarser bins"):
        make_grid(frame, ["x", "y"], bins=[2**14, 2**13], range=[(0, 1), (0, 1)])
    assert MAX_CELLS == 2**26


def test_too_many_categories_are_refused_from_their_size_before_any_label_is_read(monkeypatch):
    class Labels:
        """2**26 + 1 labels that must never be read."""

        def __len__(self) -> int:
            return 2**26 + 1

        def __iter__(self):
            raise AssertionError("a label was read")

    frame = pd.DataFrame({"x": ["a"]})
    with pdp.budget(epsilon=1.0) as b:
        for labels in (Labels(), range(2**26 + 1)):
            with pytest.raises(pdp.DomainError, match=r"67,108,865 categories for column 'x' are above the limit"):
                frame.dp.histogram("x", categories=labels, epsilon=0.5)
        # An iterator has no size: it is read up to one label past the limit (a limit of 10 here, to stay quick).
        monkeypatch.setattr("pandas_dp.domain.categories.MAX_CELLS", 10)
        with pytest.raises(pdp.DomainError, match="More than 10 categories"):
            make_grid(frame, ["x"], categories=iter(range(10**12)))
        assert make_grid(frame, ["x"], categories=iter(range(10))).size == 10
    assert b.spent == 0
