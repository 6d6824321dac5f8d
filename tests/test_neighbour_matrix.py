"""The neighbour matrix: every release kind x every unit scheme x every engine and input path (issue 24, item 6).

The kinds are DERIVED from the registry (:data:`pandas_dp.releases.registry.ENTRIES`, one kind per
histogram method of :data:`~pandas_dp.releases.methods.METHODS`, plus the geography form of the
methods that take ``by=``), and the unit schemes from each entry's declared arguments: ``none``
always, ``max_rows`` and ``max_cells`` where the entry takes them, ``group`` where its
``privacy_unit`` has no row bounds (count-of-counts). A release kind added to the registry is in
the matrix the day it lands: it is called with a generic histogram-like call (columns, bins,
categories), and this file fails, naming it, if that call is refused, until a call is added to
``CALLS``.

For every cell of the matrix:

* an out-of-domain row (an age that is a word, a missing unit id and group id: the unit column
  turns float64 or object) leaves the seeded release byte-identical, with the same charge;
* one more in-domain unit (several rows) gives the same observable outcome (class, structure,
  warnings, charge, ledger rows; :func:`pandas_dp.testing.assert_same_outcome`);
* the Dask engine, on partitions whose unit column is int64, float64 and object, gives the pandas
  release byte for byte;
* the Polars engine gives it too, on a LazyFrame of D and on a Parquet scan of files whose unit
  column is int64, float64 and text plus a file holding the odd row (the files' types disagree);
* the Spark engine (slow; one scheme per kind) gives the pandas release byte for byte, and the odd row
  (its word in a numeric column makes the column text, as a Spark reader types it) changes nothing;
* the CLI, reading the CSV of each frame, writes byte-identical tables for D and D + the odd line.

The default suite runs the pandas and Polars cells of one scheme per kind (a few seconds); the rest is
slow (``--runslow``: pandas, Dask and Polars 38 cells each, Spark one cell per kind, the CLI 4 runs of two
files).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from _spark import to_spark
from pandas_dp.errors import ParameterError
from pandas_dp.releases.geography import GEOGRAPHY_METHODS
from pandas_dp.releases.registry import ENTRIES, cli_keys, histogram_methods
from pandas_dp.testing import assert_same_outcome

# -- data ---------------------------------------------------------------------------------------------------
COUNTIES = [("A", "A-0"), ("A", "A-1"), ("B", "B-0")]
HIERARCHY = pd.DataFrame({"state": [s for s, _ in COUNTIES], "county": [c for _, c in COUNTIES]})


def _persons() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    rows = rng.integers(1, 5, 40)
    pid = np.repeat(np.arange(40, dtype=np.int64), rows)
    hh = pid // 3
    where = np.array(COUNTIES, dtype=object)[hh % 3]
    return pd.DataFrame({"pid": pid, "hh": hh, "age": rng.integers(0, 90, pid.size),
                         "income": rng.uniform(0, 1000, pid.size).round(2),
                         "state": where[:, 0], "county": where[:, 1]})


D = _persons()


def _with(frame: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """``frame`` plus ``rows``, every column re-typed as pandas infers it (as a file reader would)."""
    both = pd.concat([frame.astype(object), rows.astype(object)], ignore_index=True)
    return both.infer_objects()


#: Out of domain for every kind: a word for an age, an income beyond every range, no unit and no household.
ODD = pd.DataFrame({"pid": [None], "hh": [None], "age": ["forty"], "income": [1e9], "state": ["A"],
                    "county": ["nowhere"]})
#: One more unit, in domain everywhere: three rows of person 1000 in household 500 (county A-0).
UNIT = pd.DataFrame({"pid": [1000] * 3, "hh": [500] * 3, "age": [10, 40, 70], "income": [5.0, 500.0, 900.0],
                     "state": ["A"] * 3, "county": ["A-0"] * 3})

# -- the kinds, from the registry ----------------------------------------------------------------------------
AGE = dict(bins=[0, 30, 60, 90])
TWO_D = dict(columns=["age", "income"], bins=[3, 2], range=[(0, 90), (0, 1000)])

#: Calls of the entries that are not histogram-like (keyword arguments besides epsilon, rng and the unit).
CALLS: dict[str, dict[str, Any]] = {
    "hierarchical_histogram": dict(columns="age", bins=8, range=(0, 96)),
    "range_query": dict(column="age", ranges=[(0, 36), (12, 60)], bins=8, range=(0, 96)),
    "count_of_counts": dict(group="hh", location=["state", "county"], hierarchy=HIERARCHY, max_size=6,
                            progress=False),
    "unattributed_histogram": dict(group="hh"),
    "aggregate": dict(columns="county", aggs={"income": ["count", "sum", "mean"], "age": "mean"},
                      categories={"county": ["A-0", "A-1", "B-0"]}, bounds={"income": (0, 1000), "age": (0, 90)}),
    "quantiles": dict(column="age", q=[0.25, 0.5, 0.9], bounds=(0, 90)),   # ODD's age is a word: no value
    "marginals": dict(workload=[("age", "state"), ("state", "county")], bins={"age": [0, 30, 60, 90]},
                      categories={"state": ["A", "B"], "county": ["A-0", "A-1", "B-0"]}),
}
#: The generic call of a histogram-like release kind that has no entry in CALLS.
GENERIC = dict(columns=["age", "state"], bins={"age": [0, 30, 60, 90]},
               categories={"state": ["A", "B"]})


def _kinds() -> dict[str, tuple[str, dict[str, Any]]]:
    """``{kind: (entry name, keyword arguments)}`` for every entry and histogram method of the registry."""
    kinds: dict[str, tuple[str, dict[str, Any]]] = {}
    for name, entry in ENTRIES.items():
        if name == "histogram":
            for method in sorted(histogram_methods()):
                kinds[f"histogram:{method}"] = (name, dict(columns="age", method=method, **AGE))
                if method in GEOGRAPHY_METHODS and "by" in entry.arguments:
                    kinds[f"histogram:{method}:by"] = (name, dict(columns="age", method=method, by=["state", "county"],
                                                                  hierarchy=HIERARCHY, **AGE))
        else:
            kinds[name] = (name, dict(CALLS.get(name, GENERIC)))
            if name == "marginals" and "by" in entry.arguments:  # the table set of every region
                kinds["marginals:by"] = (name, dict(workload=[("age",)], bins={"age": [0, 30, 60, 90]},
                                                    by=["state", "county"], hierarchy=HIERARCHY))
            if name == "aggregate" and "by" in entry.arguments:  # statistics of every region
                kinds["aggregate:by"] = (name, dict(columns="age", aggs={"income": ["count", "sum", "mean"]},
                                                    bounds={"income": (0, 1000)}, by=["state", "county"],
                                                    hierarchy=HIERARCHY, **AGE))
    # published table sets: the projection, the record model and the rounding behind integer=True
    kinds["marginals:integer"] = ("marginals", dict(CALLS["marginals"], integer=True))
    # an ordered column measured through a tree (issue 46)
    kinds["marginals:ordered"] = ("marginals", dict(CALLS["marginals"], ordered={"age": "ranges"}))
    if "marginals:by" in kinds:
        kinds["marginals:ordered:by"] = ("marginals", dict(kinds["marginals:by"][1], ordered={"age": "prefix"}))
    if "marginals:by" in kinds:   # and by geography: the top-down joints and their controlled rounding
        kinds["marginals:integer:by"] = ("marginals", dict(kinds["marginals:by"][1], integer=True))
    return kinds


KINDS = _kinds()


def _schemes(entry: str) -> list[str]:
    args = ENTRIES[entry].arguments
    if "max_rows" in args:  # marginals take a row bound only
        return ["none", "max_rows", "max_cells"] if "max_cells" in args else ["none", "max_rows"]
    if "privacy_unit" in args:
        return ["none", "group"]
    return ["none"]


SCHEME_KWARGS = {"none": {}, "max_rows": dict(privacy_unit="pid", max_rows=2),
                 "max_cells": dict(privacy_unit="pid", max_cells=2, max_rows_per_cell=1),
                 "group": dict(privacy_unit="group")}
MATRIX = [(kind, scheme) for kind, (entry, _) in KINDS.items() for scheme in _schemes(entry)]
#: The default suite: one unit scheme per kind (the last: max_cells, whose pair keys hash the unit; group for
#: count-of-counts; else none), on pandas.
DEFAULT = {kind: _schemes(entry)[-1] for kind, (entry, _) in KINDS.items()
           if kind != "marginals:integer:by"}   # the slow matrix only (tests/releases and tests/results cover it by default)


def _call(kind: str, scheme: str, seed: int = 3) -> Callable[[Any], Any]:
    entry, kwargs = KINDS[kind]
    kwargs = dict(kwargs, **SCHEME_KWARGS[scheme])
    accessor = ENTRIES[entry].name

    def call(frame: Any) -> Any:
        return getattr(frame.dp, accessor)(epsilon=1.0, rng=np.random.default_rng(seed), **kwargs)
    return call


def _two_d(kind: str) -> None:
    """Methods whose public checks refuse one column (a 2-D grid) get the 2-D domain instead (decided once)."""
    entry, kwargs = KINDS[kind]
    if entry != "histogram" or "by" in kwargs:
        return
    try:
        with pdp.budget(epsilon=10.0):
            _call(kind, "none")(D.head(0))
    except ParameterError as err:
        if "dimension" in str(err):
            KINDS[kind] = (entry, {**kwargs, **TWO_D})


for _kind in list(KINDS):
    _two_d(_kind)


def _observable(result: Any) -> tuple[pd.DataFrame, str]:
    """The released numbers and labels, and the parameters (as JSON), of a result."""
    frame = result.to_frame() if hasattr(result, "to_frame") else result
    params = getattr(result, "params", None)
    if params is None and isinstance(result, pd.DataFrame):
        params = {k: repr(v) for k, v in result.attrs.items()}
    return frame.reset_index(), json.dumps(params, sort_keys=True, default=str)


def _released(call: Callable[[Any], Any], frame: Any) -> tuple[tuple[pd.DataFrame, str], float]:
    with pdp.budget(epsilon=100.0) as b:
        result = call(frame)
    return _observable(result), b.spent


def _assert_identical(a: tuple[tuple[pd.DataFrame, str], float], b: tuple[tuple[pd.DataFrame, str], float],
                      *, sort: bool = False) -> None:
    (fa, pa), sa = a
    (fb, pb), sb = b
    if sort:  # groups without public ids come back in no particular order on Dask
        fa = fa.sort_values(list(fa.columns)).reset_index(drop=True)
        fb = fb.sort_values(list(fb.columns)).reset_index(drop=True)
    pd.testing.assert_frame_equal(fa, fb, check_exact=True)
    assert pa == pb and sa == sb


def _check_pandas(kind: str, scheme: str) -> None:
    call = _call(kind, scheme)
    clean = _released(call, D)
    _assert_identical(clean, _released(call, _with(D, ODD)))      # out of domain: byte-identical
    assert_same_outcome(call, D, _with(D, UNIT))                   # one more unit: the same outcome


def _split(frame: pd.DataFrame) -> list[pd.DataFrame]:
    return [frame.iloc[idx].copy() for idx in np.array_split(np.arange(len(frame)), 3)]


def _pid_kinds(frame: pd.DataFrame) -> list[pd.DataFrame]:
    """Three partitions whose unit column is int64, float64 and object."""
    parts = _split(frame)
    parts[0]["pid"] = parts[0]["pid"].astype(np.int64)
    parts[1]["pid"] = parts[1]["pid"].astype(np.float64)
    parts[2]["pid"] = parts[2]["pid"].astype(object)
    return parts


def _dask_frame(parts: list[pd.DataFrame]) -> Any:
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    return dd.from_delayed([dask.delayed(lambda p: p)(p) for p in parts], meta=parts[0].iloc[:0],
                           verify_meta=False)


def _check_dask(kind: str, scheme: str) -> None:
    dask = pytest.importorskip("dask")
    call = _call(kind, scheme)
    unordered = kind in ("unattributed_histogram",) and scheme != "none"
    with dask.config.set(scheduler="synchronous"):
        want = _released(call, D)
        got = _released(call, _dask_frame(_pid_kinds(D)))
        _assert_identical(want, got, sort=unordered)
        odd = _with(D, ODD)
        odd_parts = _split(odd)   # the odd row makes its partition's pid float64 (or object)
        _assert_identical(got, _released(call, _dask_frame(odd_parts)), sort=unordered)


def _check_spark(kind: str, scheme: str) -> None:
    call = _call(kind, scheme)
    unordered = kind in ("unattributed_histogram",) and scheme != "none"
    got = _released(call, to_spark(D, partitions=3))
    _assert_identical(_released(call, D), got, sort=unordered)
    _assert_identical(got, _released(call, to_spark(_with(D, ODD), partitions=3)), sort=unordered)


@pytest.mark.parametrize("kind", sorted(DEFAULT))
def test_every_release_kind_on_pandas(kind):
    _check_pandas(kind, DEFAULT[kind])


def _parquet_scan(parts: list[pd.DataFrame], folder: Path) -> Any:
    """A Parquet scan of ``parts``, one file each, every column in the type pandas inferred in its file
    (a column that one odd row made mixed is written as text: its numbers parse back, its word does not)."""
    pl = pytest.importorskip("polars")
    folder.mkdir()
    for i, part in enumerate(parts):
        part = part.infer_objects()
        mixed = [c for c in part.columns if part[c].dtype == object and part[c].map(type).nunique() > 1]
        part.astype({c: str for c in mixed}).where(part.notna(), None).to_parquet(folder / f"part{i}.parquet")
    return pl.scan_parquet(str(folder / "*.parquet"))


def _check_polars(kind: str, scheme: str, folder: Path) -> None:
    pl = pytest.importorskip("polars")
    call = _call(kind, scheme)
    unordered = kind in ("unattributed_histogram",) and scheme != "none"
    want = _released(call, D)
    _assert_identical(want, _released(call, pl.from_pandas(D).lazy()), sort=unordered)
    # Files whose unit column is int64, float64 and text, and a file holding the odd row.
    parts = _pid_kinds(D)
    parts[2]["pid"] = parts[2]["pid"].astype(str)
    scan = _parquet_scan([*parts, ODD.copy()], folder)
    _assert_identical(want, _released(call, scan), sort=unordered)


@pytest.mark.parametrize("kind", sorted(DEFAULT))
def test_every_release_kind_on_polars_with_files_of_mixed_types(kind, tmp_path):
    _check_polars(kind, DEFAULT[kind], tmp_path / "files")


@pytest.mark.slow
@pytest.mark.parametrize("kind,scheme", MATRIX)
def test_the_matrix_on_polars_with_files_of_mixed_types(kind, scheme, tmp_path):
    _check_polars(kind, scheme, tmp_path / "files")


@pytest.mark.slow
@pytest.mark.parametrize("kind,scheme", MATRIX)
def test_the_matrix_on_pandas(kind, scheme):
    _check_pandas(kind, scheme)


@pytest.mark.slow
@pytest.mark.parametrize("kind,scheme", MATRIX)
def test_the_matrix_on_dask_with_mixed_partition_dtypes(kind, scheme):
    _check_dask(kind, scheme)


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(DEFAULT))
def test_every_release_kind_on_spark(kind):
    _check_spark(kind, DEFAULT[kind])


def test_the_matrix_is_derived_from_the_registry():
    # Every entry and every histogram method is a kind; every entry that takes row bounds has all schemes.
    entries = {entry for entry, _ in KINDS.values()}
    assert entries == set(ENTRIES)
    assert {k.split(":")[1] for k in KINDS if k.startswith("histogram:")} == set(histogram_methods())
    assert all(len(_schemes(e)) == 2 + ("max_cells" in ENTRIES[e].arguments) for e in ENTRIES
               if "max_rows" in ENTRIES[e].arguments)
    # The CLI's release kinds are the registry's too.
    assert set(cli_keys()) <= {k.split(":")[1] for k in KINDS if k.startswith("histogram:")} | {
        "count_of_counts", "unattributed", "marginals", "aggregate", "quantiles"}


# -- the CLI, from CSV ----------------------------------------------------------------------------------------
def _cli_spec(scheme: str, hierarchy: str) -> str:
    """One release per CLI method (from the registry's cli_keys) that takes this scheme."""
    lines = ['seed = 9', '[budget]', 'epsilon = 100.0', 'ledger = "ledger.sqlite"', '[input]',
             'path = "persons.csv"', '[output]', 'dir = "released"']
    unit = {"none": "", "max_rows": 'privacy_unit = "pid"\nmax_rows = 2',
            "max_cells": 'privacy_unit = "pid"\nmax_cells = 2\nmax_rows_per_cell = 1',
            "group": 'privacy_unit = "group"'}[scheme]
    for method, keys in sorted(cli_keys().items()):
        if scheme in ("max_rows", "max_cells") and scheme not in keys:
            continue
        if scheme == "group" and ("max_rows" in keys or "privacy_unit" not in keys):
            continue
        if method == "count_of_counts":
            body = (f'group = "hh"\nlocation = ["state", "county"]\nhierarchy = "{hierarchy}"\n'
                    f'max_size = 6')
        elif method == "unattributed":
            body = 'group = "hh"'
        elif method == "marginals":
            body = ('workload = [["age", "state"], ["state", "county"]]\nbins = {age = [0, 30, 60, 90]}\n'
                    'categories = {state = ["A", "B"], county = ["A-0", "A-1", "B-0"]}')
        elif method == "aggregate":
            body = ('columns = "age"\nbins = [0, 30, 60, 90]\naggs = {income = ["count", "sum", "mean"]}\n'
                    'bounds = {income = [0, 1000]}\nresolution = 0.01')
        elif method == "quantiles":  # of age: the odd row's word for an age is no value (dropped)
            body = 'column = "age"\nq = [0.25, 0.5]\nbounds = [0, 90]'
        elif method in ("agrid", "ugrid"):
            body = 'columns = ["age", "income"]\nbins = {age = [0, 30, 60, 90], income = [0, 500, 1000]}'
        else:
            body = 'columns = "age"\nbins = [0, 30, 60, 90]'
        lines += ["[[release]]", f'name = "{method}"', f'method = "{method}"', "epsilon = 1.0", body]
        if unit:
            lines.append(unit)
    return "\n".join(lines) + "\n"


def _cli_run(folder: Path, frame_csv: str, spec: str) -> tuple[int, dict[str, bytes]]:
    folder.mkdir()
    (folder / "persons.csv").write_text(frame_csv)
    HIERARCHY.to_csv(folder / "hierarchy.csv", index=False)
    (folder / "spec.toml").write_text(spec)
    pdp.Ledger.create(folder / "ledger.sqlite")
    from _cli import run  # python -m pandas_dp (in-process by default: tests/_cli.py)

    done = run("release", str(folder / "spec.toml"), cwd=Path.cwd())
    out = {f.name: f.read_bytes() for f in sorted((folder / "released").glob("*")) if f.name != "manifest.json"}
    return done.returncode, out


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["none", "max_rows", "max_cells", "group"])
def test_the_matrix_through_the_cli_from_csv(tmp_path, scheme):
    spec = _cli_spec(scheme, "hierarchy.csv")
    lines = D.to_csv(index=False).splitlines()
    clean_csv = "\n".join(lines) + "\n"
    # Out of domain (no unit, no household, a word for an age) and a stray quote mid-file: both dropped.
    odd = lines[:40] + ['"1001,3,40,5.0,A,A-0'] + lines[40:] + [",,forty,5.0,A,A-0"]
    odd_csv = "\n".join(odd) + "\n"
    code_a, a = _cli_run(tmp_path / "clean", clean_csv, spec)
    code_b, b = _cli_run(tmp_path / "odd", odd_csv, spec)
    assert code_a == 0 and code_a == code_b
    assert a and a == b
