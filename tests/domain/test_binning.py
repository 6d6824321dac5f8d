"""Counting at the floor (issue 18): every coder equals a brute-force reference, at chunk boundaries too."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pandas_dp.domain.binning import (CHUNK_ROWS, EvenFloats, EvenIntegers, IntegralFloats, SortedEdges,
                                coder_for_edges)
from pandas_dp.domain.grid import make_grid
from pandas_dp.engines.pandas.counts import bin_counts, cell_codes

I64 = np.iinfo(np.int64)


def reference_codes(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Brute force on exact comparisons: bin i iff edges[i] <= v < edges[i+1] (-1 otherwise).

    Integers are compared as Python ints (no float rounding), floats as floats.
    """
    out = np.full(len(values), -1)
    for k, v in enumerate(values.tolist()):
        if v != v:  # NaN
            continue
        for i in range(len(edges) - 1):
            if edges[i] <= v < edges[i + 1]:
                out[k] = i
                break
    return out


def grid_codes(values: np.ndarray, **domain) -> np.ndarray:
    frame = pd.DataFrame({"x": values})
    return cell_codes(frame, make_grid(frame, ["x"], **domain))


@pytest.mark.parametrize("bins,expected", [
    (dict(bins=8, range=(0, 8)), IntegralFloats),
    (dict(bins=np.arange(0, 17, 2)), IntegralFloats),
    (dict(bins=10, range=(0, 1)), EvenFloats),
    (dict(bins=[0, 1, 5, 100]), SortedEdges),
])
def test_the_coder_is_picked_once_from_the_edges(bins, expected):
    frame = pd.DataFrame({"x": [1.0]})
    dim = make_grid(frame, ["x"], **bins).dims[0]
    assert isinstance(dim.coder, expected)
    assert dim.coder is dim.coder  # cached


def test_integer_edges_bin_int64_without_floats_at_the_extremes():
    # u = (x - lo) mod 2**64 is exact: no int64 wraps onto the domain, however far it is.
    edges = np.array([-5, -2, 1, 4, 7], dtype=np.int64)
    coder = coder_for_edges(edges, even=True)
    assert isinstance(coder, EvenIntegers)
    values = np.array([I64.min, I64.min + 1, -6, -5, -3, -2, 0, 6, 7, 8, I64.max - 1, I64.max], dtype=np.int64)
    frame = pd.DataFrame({"x": values})
    got = cell_codes(frame, make_grid(frame, ["x"], bins=edges.tolist()))
    np.testing.assert_array_equal(got, reference_codes(values, edges.tolist()))


@settings(max_examples=80, deadline=None)
@given(values=st.lists(st.integers(I64.min, I64.max) | st.integers(-40, 80), min_size=1, max_size=120),
       start=st.integers(-30, 30), width=st.integers(1, 9), n=st.integers(1, 12))
def test_even_integer_edges_on_int64_match_brute_force(values, start, width, n):
    arr = np.asarray(values, dtype=np.int64)
    edges = list(range(start, start + width * n + 1, width))
    np.testing.assert_array_equal(grid_codes(arr, bins=n, range=(start, start + width * n)),
                                  reference_codes(arr, edges))
    np.testing.assert_array_equal(grid_codes(arr, bins=edges), reference_codes(arr, edges))


@settings(max_examples=80, deadline=None)
@given(values=st.lists(st.floats(allow_nan=True, allow_infinity=True) | st.floats(-40, 80)
                       | st.sampled_from([-0.0, 0.0, -1e-300, 5e-324, 2.0**52, 2.0**53 + 2]), min_size=1, max_size=120),
       start=st.integers(-30, 30), width=st.integers(1, 9), n=st.integers(1, 12))
def test_integral_edges_on_floats_match_brute_force(values, start, width, n):
    # floor(x) is exact and e <= x iff e <= floor(x) for an integer edge e: no correction needed.
    arr = np.asarray(values, dtype=np.float64)
    edges = [float(e) for e in range(start, start + width * n + 1, width)]
    np.testing.assert_array_equal(grid_codes(arr, bins=n, range=(start, start + width * n)),
                                  reference_codes(arr, edges))


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.floats(allow_nan=True) | st.integers(-10**6, 10**6).map(float), min_size=1, max_size=100),
       ints=st.lists(st.integers(I64.min, I64.max) | st.integers(-1001, 1001), min_size=1, max_size=100),
       # no subnormal edges: an edge within 2 ulps of a decimal is that decimal (5e-324 is 0), tested below
       edges=st.lists(st.floats(-1e6, 1e6, allow_subnormal=False) | st.integers(-1000, 1000).map(float), min_size=2,
                      max_size=15, unique=True).map(sorted),
       as_int=st.booleans())
def test_edges_of_any_spacing_search_the_values_dtype(values, ints, edges, as_int):
    arr = np.asarray(values, dtype=np.float64)
    if as_int:  # integer values search integer edges, rounded up: x >= e iff x >= ceil(e)
        arr = np.asarray(ints, dtype=np.int64)
    np.testing.assert_array_equal(grid_codes(arr, bins=edges), reference_codes(arr, edges))


@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.integers(-100, 400), min_size=1, max_size=80), n=st.integers(1, 30),
       low=st.integers(-20, 20), span=st.integers(31, 300))
def test_int_values_on_non_integral_even_edges(values, n, low, span):
    arr = np.asarray(values, dtype=np.int64)
    frame = pd.DataFrame({"x": arr})
    grid = make_grid(frame, ["x"], bins=n, range=(low, low + span / 7))
    edges = grid.dims[0].edges.tolist()
    np.testing.assert_array_equal(cell_codes(frame, grid), reference_codes(arr.astype(float), edges))


@pytest.mark.parametrize("domain", [dict(bins=1000, range=(0, 1000)), dict(bins=1000, range=(0.0, 1.0)),
                                    dict(bins=np.sort(np.random.default_rng(3).random(1001)) * 1000)])
def test_chunked_counts_equal_one_bincount_across_chunk_boundaries(domain):
    rng = np.random.default_rng(11)
    rows = 3 * CHUNK_ROWS + 17
    values = rng.normal(500, 300, rows)
    values[rng.integers(0, rows, 50)] = np.nan
    frame = pd.DataFrame({"x": values, "i": rng.integers(-5, 1005, rows)})
    for column in ("x", "i"):
        grid = make_grid(frame, [column], **domain)
        codes = cell_codes(frame, grid)
        expected = np.bincount(codes[codes >= 0], minlength=grid.size)
        np.testing.assert_array_equal(bin_counts(frame, grid), expected)
        np.testing.assert_array_equal(bin_counts(frame, grid, chunk_rows=1000), expected)
        edges = grid.dims[0].edges
        reference = np.searchsorted(edges, frame[column].to_numpy(dtype=float), side="right") - 1
        reference[(reference >= grid.size) | np.isnan(frame[column].to_numpy(dtype=float))] = -1
        np.testing.assert_array_equal(codes, reference)


def test_two_dimensional_cells_across_chunks_match_crosstab():
    rng = np.random.default_rng(2)
    rows = 2 * CHUNK_ROWS + 5
    frame = pd.DataFrame({"a": rng.integers(-1, 11, rows), "s": rng.choice(["p", "q", "r", "z"], rows)})
    grid = make_grid(frame, ["a", "s"], bins={"a": range(0, 11)}, categories={"s": ["p", "q", "r"]})
    expected = pd.crosstab(frame["a"], frame["s"]).reindex(index=range(10), columns=["p", "q", "r"], fill_value=0)
    np.testing.assert_array_equal(bin_counts(frame, grid), expected.to_numpy())
    np.testing.assert_array_equal(cell_codes(frame, grid), grid.codes([frame["a"].to_numpy(), frame["s"]]))


@pytest.mark.parametrize("dtype", ["int64", "category-same", "category-other", "object"])
def test_category_paths_agree_with_get_indexer(dtype):
    rng = np.random.default_rng(4)
    raw = rng.integers(-3, 40, 5000)
    cats = list(range(0, 32))
    if dtype == "int64":
        col = pd.Series(raw)
    elif dtype == "category-same":
        col = pd.Series(pd.Categorical.from_codes(np.where((raw >= 0) & (raw < 32), raw, -1), categories=cats))
    elif dtype == "category-other":
        col = pd.Series(pd.Categorical(raw, categories=sorted(set(raw.tolist()))[::-1]))
    else:
        col = pd.Series(raw.astype(object))
    frame = pd.DataFrame({"c": col})
    grid = make_grid(frame, ["c"], categories=cats)
    expected = pd.Index(cats).get_indexer(pd.Index(col.astype(object).where(col.notna(), None)))
    np.testing.assert_array_equal(cell_codes(frame, grid), expected)
    np.testing.assert_array_equal(bin_counts(frame, grid), np.bincount(expected[expected >= 0], minlength=32))


def test_edges_are_copied_so_results_never_lock_the_callers_array():
    edges = np.arange(0.0, 11.0)
    frame = pd.DataFrame({"x": [1.0, 2.0]})
    grid = make_grid(frame, ["x"], bins=edges)
    assert grid.dims[0].edges is not edges and not np.shares_memory(grid.dims[0].edges, edges)


def test_a_range_of_edges_becomes_an_arange_without_a_python_loop():
    frame = pd.DataFrame({"x": [1, 2]})
    grid = make_grid(frame, ["x"], bins=range(0, 2**20 + 1))
    assert grid.shape == (2**20,) and isinstance(grid.dims[0].coder, IntegralFloats)
    np.testing.assert_array_equal(bin_counts(frame, grid)[:3], [0, 1, 1])


def test_the_interval_index_is_built_once_and_shared():
    frame = pd.DataFrame({"x": [1.0]})
    grid = make_grid(frame, ["x"], bins=4, range=(0, 4))
    assert "index" not in vars(grid.dims[0])  # nothing built until a result needs it
    assert grid.index is grid.index and grid.index is grid.dims[0].index


@pytest.mark.parametrize("edges", [
    np.linspace(0, 10, 11), np.array([0.0, 0.5, 3.0]),
    pd.date_range("2020-01-01", periods=5, freq="MS"),
    pd.date_range("2020-03-28", periods=5, freq="D", tz="Europe/Paris"),
    pd.timedelta_range("0h", periods=4, freq="15min"),
])
def test_the_shortcut_interval_index_equals_from_breaks(edges):
    from pandas_dp.domain.grid import interval_index

    fast = interval_index(edges, "x")
    whole = isinstance(edges, np.ndarray) and np.array_equal(edges, np.floor(edges))
    slow = pd.IntervalIndex.from_breaks(edges.astype(np.int64) if whole else edges, closed="left", name="x")
    assert fast.equals(slow) and fast.dtype == slow.dtype and fast.name == "x"
    assert list(fast) == list(slow) and fast.is_monotonic_increasing and fast.is_non_overlapping_monotonic
    frame = pd.Series(np.arange(len(slow)), index=fast)
    assert frame.loc[slow[1].left] == 1  # lookups work on the shortcut index


@pytest.mark.parametrize("labels", [["b", "a", "c"], [3, 1, 2], list("xyz")])
def test_category_index_from_codes_equals_the_labelled_index(labels):
    frame = pd.DataFrame({"c": pd.Categorical(labels[:2], categories=labels)})
    for categories in (labels, "dtype"):
        index = make_grid(frame, ["c"], categories=categories).index
        expected = pd.CategoricalIndex(labels, categories=labels, ordered=False, name="c")
        assert index.equals(expected) and index.dtype == expected.dtype and list(index) == labels


@settings(max_examples=80, deadline=None)
@given(data=st.data(), start=st.integers(-30, 30), width=st.integers(1, 9), n=st.integers(1, 12))
def test_chunks_wholly_inside_the_domain_take_the_short_path_exactly(data, start, width, n):
    # Every value in [lo, hi): the chunk skips clipping; values just below and on edges must stay exact.
    lo, hi = start, start + width * n
    edges = np.arange(lo, hi + 1, width, dtype=np.float64)
    near = np.concatenate([edges[:-1], np.nextafter(edges[1:], -np.inf), edges[:-1] + 1e-9])
    pool = st.sampled_from(near.tolist()) | st.floats(lo, hi, exclude_max=True) | st.just(0.0 if lo <= 0 < hi else lo)
    values = np.asarray(data.draw(st.lists(pool, min_size=1, max_size=60)), dtype=np.float64)
    if lo <= 0 < hi:
        values = np.append(values, -0.0)
    assert lo <= values.min() and values.max() < hi
    np.testing.assert_array_equal(grid_codes(values, bins=n, range=(lo, hi)), reference_codes(values, edges.tolist()))
    ints = np.floor(values).astype(np.int64)
    np.testing.assert_array_equal(grid_codes(ints, bins=n, range=(lo, hi)), reference_codes(ints, edges.tolist()))


@settings(max_examples=60, deadline=None)
@given(data=st.data(), n=st.integers(1, 50), low=st.floats(-1e3, 1e3), width=st.floats(1e-3, 1e4))
def test_non_integral_even_edges_on_chunks_wholly_inside(data, n, low, width):
    # The arithmetic code may be one bin off next to an edge (or n just below hi): corrected exactly.
    frame = pd.DataFrame({"x": [low]})
    grid = make_grid(frame, ["x"], bins=n, range=(low, low + width))
    edges = grid.dims[0].edges
    near = np.concatenate([edges[:-1], np.nextafter(edges[1:], -np.inf), np.nextafter(edges[:-1], np.inf)])
    near = near[(near >= edges[0]) & (near < edges[-1])]
    values = np.asarray(data.draw(st.lists(st.sampled_from(near.tolist()), min_size=1, max_size=80)))
    frame = pd.DataFrame({"x": values})
    np.testing.assert_array_equal(cell_codes(frame, grid), reference_codes(values, edges.tolist()))


def test_whole_number_edges_give_an_integer_index_with_the_same_bins():
    """Issue 29, item 5: bins=range(14, 50, 2) prints [14, 16), not [14.0, 16.0); lookups are unchanged."""
    from pandas_dp.domain.grid import interval_index

    index = interval_index(np.arange(14.0, 50.0, 2.0), "age")
    assert index.dtype == pd.IntervalDtype("int64", closed="left")
    assert str(index[0]) == "[14, 16)" and index.get_loc(14.5) == 0 and index.get_loc(16) == 1
    assert interval_index(np.array([0.0, 0.5, 3.0]), "x").dtype == pd.IntervalDtype("float64", closed="left")
    big = np.array([0.0, 2.0**53, 2.0**54])  # beyond 2**53 floats are whole but not every int: keep float
    assert interval_index(big, "x").dtype == pd.IntervalDtype("float64", closed="left")


@pytest.mark.parametrize("bins, expected", [
    (dict(bins=16, range=(44.88, 44.97)), "[44.88, 44.885625)"),
    (dict(bins=np.linspace(44.88, 44.97, 17)), "[44.88, 44.885625)"),
    (dict(bins=10, range=(0.0, 1.0)), "[0.3, 0.4)"),
    (dict(bins=8, range=(-93.4, -93.0)), "[-93.35, -93.3)"),
])
def test_linspace_edges_read_as_written(bins, expected):
    """Issue 29, item 5: rounding noise of linspace (44.885625000000005, 0.30000000000000004) is removed."""
    from pandas_dp.domain.edges import parse_bins

    edges, _ = parse_bins("x", bins.get("bins"), bins.get("range"))
    labels = [str(i) for i in pd.IntervalIndex.from_breaks(edges, closed="left")]
    assert expected in labels
    assert "0000000" not in " ".join(labels)
    raw = np.linspace(*(bins.get("range") or (44.88, 44.97)), len(edges))
    assert np.all(np.abs(edges - raw) <= 2 * np.abs(np.spacing(raw)))  # at most two ulps from the linspace
    assert edges[0] == raw[0] and edges[-1] == raw[-1]
    third = parse_bins("x", 3, (0.0, 1.0))[0]  # 1/3 has no short decimal: unchanged
    assert third.tolist() == np.linspace(0.0, 1.0, 4).tolist()


@pytest.mark.parametrize("edges", [[0.0, 5e-324], [0.0, 1e-320, 2e-320], [-5e-324, 5e-324]])
def test_edges_a_few_subnormals_apart_code_every_value(edges):
    """Even edges whose scale n / (hi - lo) overflows are searched, not divided: before, 0.0 in [0, 5e-324)
    gave NaN as a cell index, and the engine raised IndexError on a private value."""
    arr = np.array([0.0, -0.0, 5e-324, 1e-320, -1.0, 1.0, np.nan, np.inf])
    np.testing.assert_array_equal(grid_codes(arr, bins=edges), reference_codes(arr, edges))
