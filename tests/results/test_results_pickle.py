"""Every result keeps: pickle (every protocol), joblib and deepcopy round trips answer the same."""

from __future__ import annotations

import copy
import importlib
import io
import json
import pickle

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.domain.grid import BinDomain, CategoryDomain, Grid
from pandas_dp.results._base import FrozenDict, FrozenList
from results_zoo import answers, assert_same_answers, every_result

joblib = pytest.importorskip("joblib")
matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

NAMES = sorted(every_result())
PROTOCOLS = range(pickle.HIGHEST_PROTOCOL + 1)


def _same_release(a, b) -> None:
    if isinstance(a, pd.DataFrame):
        assert list(a.columns) == list(b.columns)
        np.testing.assert_array_equal(a.to_numpy(), b.to_numpy())   # (a may hold joblib memory maps)
        a, b = a.attrs["release"], b.attrs["release"]
    assert type(a) is type(b) and a == b


@pytest.fixture(scope="module")
def expected() -> dict[str, dict]:
    return {name: answers(result, pictures=True) for name, result in every_result().items()}


@pytest.mark.parametrize("name", NAMES)
def test_pickle_every_protocol_answers_the_same(name, expected):
    result = every_result()[name]
    for protocol in PROTOCOLS:
        back = pickle.loads(pickle.dumps(result, protocol=protocol))
        _same_release(back, result)
    # The last round trip (highest protocol) answers exactly as the original, pictures included.
    assert_same_answers(answers(back, pictures=True), expected[name])


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("mmap_mode", [None, "r"])
def test_joblib_dump_load_answers_the_same(name, mmap_mode, expected, tmp_path):
    result = every_result()[name]
    path = tmp_path / f"{name}.joblib"
    joblib.dump(result, path)
    back = joblib.load(path, mmap_mode=mmap_mode)
    _same_release(back, result)
    assert_same_answers(answers(back), {k: v for k, v in expected[name].items() if not k.endswith("plot")})


@pytest.mark.parametrize("name", NAMES)
def test_deepcopy_and_copy(name):
    result = every_result()[name]
    if isinstance(result, pd.DataFrame):
        # A derived frame deep-copies attrs: the release rides along unchanged (shared: it is immutable).
        derived = copy.deepcopy(result)
        assert derived.attrs["release"] is result.attrs["release"]
        assert result.head(1).attrs["release"] is result.attrs["release"]
        return
    assert copy.deepcopy(result) == result and copy.copy(result) == result


def test_unpickled_results_are_still_frozen():
    for name, result in every_result().items():
        if isinstance(result, (pd.DataFrame, pdp.RangeAnswer)):
            continue
        back = pickle.loads(pickle.dumps(result))
        for key, value in vars(back).items():   # stored arrays are read-only again after loading
            arrays = [value] if isinstance(value, np.ndarray) else \
                [value.to_numpy()] if isinstance(value, pd.Series) else []
            for array in arrays:
                with pytest.raises(ValueError, match="read-only"):
                    np.asarray(array)[...] = 0
        with pytest.raises(TypeError):
            back.params["method"] = "changed"
        with pytest.raises(AttributeError):
            back.epsilon = 0.0


def test_range_answer_frame_keeps_its_release_through_pickle():
    frame = every_result()["range_frame"]
    back = pickle.loads(pickle.dumps(frame))
    release = back.attrs["release"]
    assert isinstance(release, pdp.HierarchicalHistogram) and release == frame.attrs["release"]
    # More ranges answered from the unpickled release agree with the original's.
    more = [(0, 8_000), (8_000, 512_000)]
    pd.testing.assert_frame_equal(release.range_query(more), frame.attrs["release"].range_query(more))


def test_domain_objects_pickle():
    grid = Grid((BinDomain("age", np.array([0.0, 18.0, 65.0, 120.0]), False),
                 CategoryDomain("state", pd.Index(["A", "B", "C"]))))
    for protocol in PROTOCOLS:
        back = pickle.loads(pickle.dumps(grid, protocol=protocol))
        assert back.columns == grid.columns and back.shape == grid.shape
        assert back.index.equals(grid.index)
        np.testing.assert_array_equal(back.codes([np.array([5, 70]), np.array(["C", "A"])]),
                                      grid.codes([np.array([5, 70]), np.array(["C", "A"])]))


def test_frozen_containers_pickle_and_serialize():
    params = FrozenDict({"a": FrozenList([1, 2]), "b": FrozenDict({"c": "d"})})
    for protocol in PROTOCOLS:
        back = pickle.loads(pickle.dumps(params, protocol=protocol))
        assert back == params and type(back) is FrozenDict and type(back["a"]) is FrozenList
    assert json.loads(json.dumps(params)) == {"a": [1, 2], "b": {"c": "d"}}
    assert params["a"] == [1, 2] and dict(params) == {"a": [1, 2], "b": {"c": "d"}}


@pytest.mark.parametrize("module, name, home", [
    ("pandas_dp.results.published", "PublishedTables", "pandas_dp.results.marginals"),
    ("pandas_dp.results.published", "PublishedHistogram", "pandas_dp.results.marginals"),
    ("pandas_dp.results.geography_published", "GeographyPublishedTables", "pandas_dp.results.geography_marginals"),
    ("pandas_dp.accounting.reservation", "Reservation", "pandas_dp.accounting.budget"),
])
def test_pickles_naming_a_former_module_path_still_load(module, name, home):
    """A class that moved beside the class it subclasses is found at its former path too: a pickle written by
    an earlier release names that path, and unpickling must give the same class."""
    found = pickle.Unpickler(io.BytesIO(b"")).find_class(module, name)
    assert found is getattr(importlib.import_module(home), name)
    assert found.__module__ == home
