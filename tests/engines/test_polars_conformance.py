"""The Polars engine gives the pandas release: every histogram method, every release kind, with units, seeded.

``METHODS`` and ``KINDS`` are the conformance suite's own lists, so a method or kind registered
there is checked here too. Beyond the releases: the counts pushed into Polars equal the counts
streamed through the pandas kernels for every dtype and domain the push-down takes (and the ones
it leaves to the kernels), a frame read in many small batches equals one batch, and a Parquet scan
whose files disagree on a column's type (int, float, text) releases what pandas releases from the
same rows: the odd file's words drop, its numbers count, nothing raises.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pl = pytest.importorskip("polars")

import pandas_dp as pdp  # noqa: E402
from pandas_dp.domain.grid import make_grid  # noqa: E402
from pandas_dp.errors import DataSourceError  # noqa: E402
from pandas_dp.engines.pandas import PANDAS_ENGINE  # noqa: E402
from pandas_dp.engines.polars import PolarsEngine, polars_frame  # noqa: E402
from pandas_dp.privacy.units import UnitArguments  # noqa: E402
from test_conformance import KINDS, METHODS, _groups_frame, release  # noqa: E402
from engines.test_dask_conformance import assert_same_release  # noqa: E402  (the field-by-field comparison)


@pytest.mark.parametrize("method,kwargs", METHODS)
def test_same_release_as_pandas(ages, method, kwargs):
    with pdp.budget(2.0) as b:
        a = release(ages, method, kwargs, seed=21)
        c = release(pl.from_pandas(ages).lazy(), method, kwargs, seed=21)
    assert_same_release(a, c)
    assert b.spent == 1.0 and list(b.ledger["status"]) == ["ok", "ok"]


UNITS = {
    "histogram": lambda f, rng, u: f.dp.histogram("age", bins=10, range=(0, 100), epsilon=0.5, rng=rng, **u),
    "histogram 2-D": lambda f, rng, u: f.dp.histogram(["age", "state"], bins={"age": [0, 30, 60, 100]},
                                                      categories={"state": ["A", "B"]}, epsilon=0.5, rng=rng, **u),
    "marginals": lambda f, rng, u: f.dp.marginals([("age", "hh")], bins={"age": [0, 18, 65, 100]},
                                                  categories={"hh": list(range(20))}, epsilon=0.5, rng=rng,
                                                  **{k: v for k, v in u.items() if k != "max_cells"
                                                     and k != "max_rows_per_cell"}),
    "marginals ordered": lambda f, rng, u: f.dp.marginals([("age", "hh")], bins={"age": [0, 18, 65, 100]},
                                                          categories={"hh": list(range(20))}, epsilon=0.5, rng=rng,
                                                          ordered={"age": "prefix"},
                                                          **{k: v for k, v in u.items() if k != "max_cells"
                                                             and k != "max_rows_per_cell"}),
    "aggregate": lambda f, rng, u: f.dp.aggregate("hh", {"age": ["count", "sum", "mean"]}, categories=list(range(20)),
                                                  bounds={"age": (0, 100)}, epsilon=0.5, rng=rng,
                                                  **{k: v for k, v in u.items() if k in ("privacy_unit", "max_rows")}),
    "quantiles": lambda f, rng, u: f.dp.quantiles("age", [0.25, 0.5], bounds=(0, 100), epsilon=0.5, rng=rng,
                                                  **{k: v for k, v in u.items() if k in ("privacy_unit", "max_rows")}),
    "unattributed": lambda f, rng, u: f.dp.unattributed_histogram("hh", epsilon=0.5, rng=rng, **u),
    "discover": lambda f, rng, u: f.dp.histogram("hh", categories="discover", epsilon=0.5, delta=1e-3, rng=rng,
                                                 **{k: v for k, v in u.items() if k in ("privacy_unit", "max_rows")}),
}
SCHEMES = {"none": {}, "max_rows": dict(privacy_unit="person", max_rows=2),
           "max_cells": dict(privacy_unit="person", max_cells=2, max_rows_per_cell=1)}


def _unit_frame() -> pd.DataFrame:
    frame = _groups_frame()
    frame["person"] = frame["person"] % 23   # units with several rows
    return frame


def _observable(result):
    out = result.to_frame() if hasattr(result, "to_frame") else result
    return out.reset_index() if isinstance(out, pd.DataFrame) else out


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_same_release_as_pandas(kind):
    frame = _groups_frame()
    with pdp.budget(1.0):
        a = KINDS[kind](frame, 0.25, np.random.default_rng(9))
        c = KINDS[kind](pl.from_pandas(frame).lazy(), 0.25, np.random.default_rng(9))
    pd.testing.assert_frame_equal(_observable(a), _observable(c), check_exact=True)


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
@pytest.mark.parametrize("kind", sorted(UNITS))
def test_privacy_units_same_release_as_pandas(kind, scheme):
    frame = _unit_frame()
    with pdp.budget(epsilon=10.0, delta=1e-2) as b:
        try:
            a = UNITS[kind](frame, np.random.default_rng(5), SCHEMES[scheme])
        except pdp.ParameterError:
            pytest.skip("a scheme the release does not take")
        c = UNITS[kind](pl.from_pandas(frame), np.random.default_rng(5), SCHEMES[scheme])   # a DataFrame, eager
    left, right = _observable(a), _observable(c)
    if kind == "unattributed":   # no public ids: the groups come back in no particular order
        left, right = (x.sort_values(list(x.columns)).reset_index(drop=True) for x in (left, right))
    pd.testing.assert_frame_equal(left, right, check_exact=True)
    assert list(b.ledger["status"]) == ["ok", "ok"]


def _typed() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    n = 3000
    ints = rng.integers(-20, 150, n)
    floats = rng.normal(50, 40, n)
    floats[::17] = np.nan
    words = rng.choice(["CA", "NY", "TX", "zz", ""], n).astype(object)
    words[::13] = None
    return pd.DataFrame({"i": ints, "f": floats, "i_null": pd.array(np.where(ints % 7 == 0, None, ints), dtype="Int64"),
                         "s": words, "i32": ints.astype(np.int32), "big": ints * (2**40) + 3,
                         "e": pd.Categorical(rng.choice(["a", "b", "c"], n), categories=["a", "b", "c"]),
                         "c": pd.Categorical(rng.choice(["a", "b", "c", None], n), categories=["a", "b", "c"])})


DOMAINS = [
    ("i", dict(bins=64, range=(0, 128))),                # integer even edges: arithmetic
    ("i", dict(bins=[-5, 0, 1.5, 18, 65, 99.5])),        # uneven, non-integral edges
    ("i", dict(bins=7, range=(0, 100))),                 # even non-integral edges on int64
    ("f", dict(bins=64, range=(0, 128))),
    ("f", dict(bins=7, range=(-3.3, 101))),
    ("f", dict(bins=[-5, 0, 1.5, 18, 65, 99.5])),
    ("i_null", dict(bins=[0, 18, 65, 100])),
    ("i32", dict(bins=10, range=(0, 100))),
    ("big", dict(bins=5, range=(0, 2**47))),
    ("s", dict(categories=["CA", "NY", "TX"])),
    ("s", dict(categories=["CA", "NY", "TX"], other="Other")),
    ("i", dict(categories=[3, 5, 7, 100, -1])),
    ("e", dict(categories=["a", "c"])),
    ("e", dict(categories=["a", "c"], other="Other")),
    ("e", dict(categories=["a", "b", "c"])),             # the Enum's own codebook: grouped by its codes
    ("c", dict(categories=["c", "a"], other="Other")),   # a polars Categorical with missing values
]


@pytest.mark.parametrize("column,domain", DOMAINS)
def test_pushed_down_counts_are_the_pandas_counts(column, domain):
    frame = _typed()
    lazy = pl.from_pandas(frame).lazy()
    if column == "e":
        lazy = lazy.with_columns(pl.col("e").cast(pl.String).cast(pl.Enum(["a", "b", "c"])))
    grid = make_grid(frame, [column], **domain)
    want = PANDAS_ENGINE.bin_counts(frame, grid)
    for engine in (PolarsEngine(), PolarsEngine(batch_rows=500, push_down=False)):
        np.testing.assert_array_equal(engine.bin_counts(polars_frame(lazy), grid), want)
    axis = "f" if column == "i32" else "i32"   # and as the second axis of a 2-D grid
    spec = {"bins": {axis: 10}, "range": {axis: (0, 100)}}
    for k, v in domain.items():
        spec.setdefault(k, {})[column] = v
    two = make_grid(frame, [axis, column], **spec)
    np.testing.assert_array_equal(PolarsEngine().bin_counts(polars_frame(lazy), two),
                                  PANDAS_ENGINE.bin_counts(frame, two))


def test_unit_rows_in_many_batches_keep_the_pandas_rows():
    frame = _unit_frame()
    grid = make_grid(frame, ["age"], bins=10, range=(0, 100))
    bounds = UnitArguments("person", 2).bounds(frame.columns)
    key = bytes(range(32))
    want = PANDAS_ENGINE.coded_rows(frame, grid, bounds).counts(bounds, key)
    got = PolarsEngine(batch_rows=7).coded_rows(polars_frame(pl.from_pandas(frame)), grid, bounds).counts(bounds, key)
    np.testing.assert_array_equal(got, want)


def test_parquet_files_of_different_types_release_like_pandas(tmp_path):
    """An int file, a float file and a file whose numbers one word made text: no error, the word dropped."""
    files = [pd.DataFrame({"age": [1, 40, 70], "pid": [1, 2, 2]}),
             pd.DataFrame({"age": [1.5, 80.0], "pid": [3.0, 1.0]}),
             pd.DataFrame({"age": ["forty", "7"], "pid": ["2", "4"]})]
    for i, part in enumerate(files):
        part.to_parquet(tmp_path / f"part{i}.parquet")
    scan = pl.scan_parquet(str(tmp_path / "*.parquet"))
    rows = pd.concat([f.astype(object) for f in files], ignore_index=True).infer_objects()
    for unit in ({}, dict(privacy_unit="pid", max_rows=1)):
        with pdp.budget(2.0) as b:
            a = rows.dp.histogram("age", bins=[0, 18, 65, 100], epsilon=0.5, rng=np.random.default_rng(2), **unit)
            c = scan.dp.histogram("age", bins=[0, 18, 65, 100], epsilon=0.5, rng=np.random.default_rng(2), **unit)
        assert_same_release(a, c)
        assert b.spent == 1.0


def test_a_failing_query_is_reported_without_its_text_and_charges_nothing(tmp_path):
    pd.DataFrame({"age": [1, 2]}).to_parquet(tmp_path / "a.parquet")
    pd.DataFrame({"age": ["secret-token"]}).to_parquet(tmp_path / "b.parquet")
    odd = pl.scan_parquet(str(tmp_path / "*.parquet")).filter(pl.col("age").is_not_null())  # not a plain scan
    with pdp.budget(1.0) as b:
        with pytest.raises(DataSourceError) as err:
            odd.dp.histogram("age", bins=[0, 10], epsilon=0.5)
    assert "secret" not in str(err.value) and b.spent == 0 and len(b.ledger) == 0


def test_categorical_columns_have_no_public_domain():
    lazy = pl.LazyFrame({"s": ["a", "b"]}).with_columns(pl.col("s").cast(pl.Categorical))
    with pdp.budget(1.0) as b:
        with pytest.raises(pdp.DomainError, match="Categorical"):
            lazy.dp.histogram("s", categories="dtype", epsilon=0.5)
        enum = pl.LazyFrame({"s": ["a", "b", "a"]}).with_columns(pl.col("s").cast(pl.Enum(["a", "b", "c"])))
        h = enum.dp.histogram("s", categories="dtype", epsilon=0.5, rng=np.random.default_rng(0))
    assert list(h.counts.index) == ["a", "b", "c"] and b.spent == 0.5


# -- the boundary rule on Parquet files: one file's odd row (and the type it gives its column) changes nothing
from test_boundary_histograms import BASE, CALLS  # noqa: E402
from pandas_dp.testing import assert_same_outcome  # noqa: E402

ODD_VALUES = ["forty", 1e300, float("nan"), -(2**62), True, b"\xff\x00", None, "CA ", "17"]


#: Calls run by default (the pushed-down cells and table path, labels, the streamed tree); the rest with --runslow.
QUICK_CALLS = ("histogram identity", "2-D other", "float edges", "range_query")


@pytest.mark.parametrize("value", ODD_VALUES, ids=repr)
@pytest.mark.parametrize("name", [n if n in QUICK_CALLS else pytest.param(n, marks=pytest.mark.slow)
                                  for n in sorted(CALLS) if n != "series histogram"])
def test_an_odd_file_changes_nothing_observable(tmp_path, name, value):
    """D: the rows in one file; D': the same file and one more whose row holds an odd value, which gives the
    file's column another type (text, float, boolean, binary, null): same outcome class, index, warnings,
    charge; seeded, out of domain, the same release."""
    column = {str: "age", float: "state", int: "income", bool: "age", bytes: "state"}.get(type(value), "age")
    BASE.to_parquet(tmp_path / "a.parquet")
    odd = BASE.iloc[:1].astype(object)
    odd[column] = [value]
    odd.infer_objects().to_parquet(tmp_path / "b.parquet")
    d = pl.scan_parquet(str(tmp_path / "a.parquet"))
    d_prime = pl.scan_parquet(str(tmp_path / "*.parquet"))
    a, b = assert_same_outcome(CALLS[name], d, d_prime)
    assert a.kind == "returned" and not a.warnings, a.describe(full=True)
    assert_same_outcome(CALLS[name], d, d_prime, budget=None)
