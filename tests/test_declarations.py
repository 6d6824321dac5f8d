"""One declaration per entry: the registry's parameter tables are what the accessors and the docs show.

For every entry of :data:`pandas_dp.releases.registry.ENTRIES`, the ``DataFrame.dp`` method, the
``Series.dp`` method (without the column), the Dask accessors' and the release function have the
signature of the entry's :class:`~pandas_dp.releases.params.ParamTable` (names, kinds, defaults); the
``method`` Literal is the set of registered histogram methods; and the API reference (the docstrings
as mkdocstrings renders them, read by griffe's inspector and numpy parser) names every parameter, every
registered method and every knob.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import pkgutil
import typing
from pathlib import Path

import pandas as pd
import pytest

import pandas_dp  # noqa: F401  (registers the accessors)
from pandas_dp.accessors.pandas import DataFrameDPAccessor, DPAccessorBase, SeriesDPAccessor
from pandas_dp.privacy.units import UNIT_ARGUMENTS, UnitArguments, UnitBounds
import pandas_dp.releases.methods as method_modules
from pandas_dp.releases.methods import METHODS, MethodName
from pandas_dp.releases.methods.base import HistogramMethod
from pandas_dp.releases.params import UNIT_PARAMS, VAR_KEYWORD, PrivacyUnit
from pandas_dp.releases.registry import ENTRIES, histogram_methods

griffe = pytest.importorskip("griffe")


def _shape(sig: inspect.Signature, skip: int = 0) -> list[tuple[str, object, object]]:
    """Names, kinds and defaults of a signature (annotations are the functions' own business)."""
    return [(p.name, p.kind, p.default) for p in list(sig.parameters.values())[skip:]]


def _table(name: str) -> list[tuple[str, object, object]]:
    return _shape(ENTRIES[name].params.signature())


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_accessor_signature_equals_release_signature_equals_the_table(name):
    entry = ENTRIES[name]
    accessor = inspect.signature(getattr(DPAccessorBase, name))
    release = inspect.signature(entry.function)
    assert list(accessor.parameters)[0] == "self" and list(release.parameters)[0] == "frame"
    assert _shape(accessor, 1) == _table(name)
    assert _shape(release, 1) == _table(name)
    assert entry.params.names[0] == entry.column
    # Bound on a frame (what users and help() see).
    assert _shape(inspect.signature(getattr(pd.DataFrame({"x": [1]}).dp, name))) == _table(name)


@pytest.mark.parametrize("name", sorted(n for n, e in ENTRIES.items() if e.on_series))
def test_series_signature_is_the_table_without_the_column(name):
    series = inspect.signature(getattr(SeriesDPAccessor, name))
    assert _shape(series, 1) == _table(name)[1:]
    assert not hasattr(SeriesDPAccessor, name) or ENTRIES[name].on_series


def test_series_offers_exactly_the_entries_on_series():
    offered = {n for n in ENTRIES if hasattr(SeriesDPAccessor, n)}
    assert offered == {n for n, e in ENTRIES.items() if e.on_series}


def test_dask_accessors_derive_from_the_pandas_ones():
    pytest.importorskip("dask.dataframe")
    from pandas_dp.accessors.dask import DaskDataFrameDPAccessor, DaskSeriesDPAccessor

    for name, entry in ENTRIES.items():
        assert _shape(inspect.signature(getattr(DaskDataFrameDPAccessor, name)), 1) == _table(name)
        if entry.on_series:
            assert _shape(inspect.signature(getattr(DaskSeriesDPAccessor, name)), 1) == _table(name)[1:]


def test_method_literal_is_the_registered_methods():
    assert list(typing.get_args(MethodName)) == list(METHODS)
    assert set(METHODS) == {"identity", "hierarchical", "ahp", "dpcube", "auto", "dawa", "ugrid", "agrid"}
    for name, extra in (("histogram", set()), ("range_query", {"auto"})):
        hints = typing.get_type_hints(getattr(DataFrameDPAccessor, name))
        assert set(typing.get_args(hints["method"])) == set(METHODS) | extra
        assert set(ENTRIES[name].params["method"].constraint.choices) == set(METHODS) | extra  # type: ignore[union-attr]



def test_every_method_module_is_one_page_and_in_the_one_table():
    """Each module of releases/methods/ (but the shared base and auto's rule) is a docs/methods page, and every
    HistogramMethod they define is listed in METHODS: a method module missing from the table is caught here."""
    docs = Path(__file__).resolve().parents[1] / "docs" / "methods"
    defined: list[HistogramMethod] = []
    for info in pkgutil.iter_modules(method_modules.__path__):
        module = importlib.import_module(f"{method_modules.__name__}.{info.name}")
        if info.name not in ("base", "auto_rule"):
            assert (docs / f"{info.name}.md").is_file(), info.name
        defined += [v for v in vars(module).values() if isinstance(v, HistogramMethod)]
    assert {id(m) for m in defined} == {id(m) for m in METHODS.values()}

def test_knob_tables_are_parts_of_the_entry_tables():
    """An entry's own knobs and the privacy unit are the very Param objects of the entry's table."""
    for entry in ENTRIES.values():
        params = entry.params.params
        if entry.knobs is not None:
            assert all(any(p is q for q in params) for p in entry.knobs)
        unit = [p for p in params if isinstance(p.constraint, PrivacyUnit)]
        assert unit == [] or (tuple(unit) == UNIT_PARAMS and tuple(p.name for p in unit) == UNIT_ARGUMENTS)
    assert sum(1 for e in ENTRIES.values() if "max_rows" in e.params.names) == 7
    # marginals, aggregate and quantiles take a row bound only (no cells scheme, no "auto"): their releases check them.
    for name in ("marginals", "aggregate", "quantiles"):
        assert [n for n in ENTRIES[name].params.names if n in UNIT_ARGUMENTS] == ["privacy_unit", "max_rows"]


def test_the_unit_arguments_build_their_bounds_once():
    frame_columns = ["x", "rider"]
    args = PrivacyUnit.gather("rider", 3)
    assert args == UnitArguments(privacy_unit="rider", max_rows=3)
    assert args.bounds(frame_columns) == UnitBounds("rider", max_rows=3)
    assert UnitArguments().bounds(frame_columns) is None
    assert PrivacyUnit.gather("rider", None, 2, 4).bounds(frame_columns) == UnitBounds("rider", max_cells=2,
                                                                                      max_rows_per_cell=4)


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_the_one_dispatch_passes_every_argument_as_declared(name):
    """``Entry.call``: positional parameters by position, the others by keyword, ``**`` spread."""
    entry = ENTRIES[name]
    seen: dict[str, object] = {}

    def record(frame, *args, **kwargs):
        seen.update(frame=frame, args=args, kwargs=kwargs)
        return "released"

    arguments = {p.name: ({"knob": 1} if p.kind is VAR_KEYWORD else f"<{p.name}>") for p in entry.params}
    fake = type(entry)(entry.name, record, entry.column, entry.on_series, entry.params, entry.knobs)
    assert fake.call("frame", {"self": None, **arguments}) == "released"
    positional = [p.name for p in entry.params if p.kind is p.kind.POSITIONAL_OR_KEYWORD]
    assert seen["args"] == tuple(f"<{n}>" for n in positional)
    expected = {p.name: f"<{p.name}>" for p in entry.params if p.name not in positional and p.kind is not VAR_KEYWORD}
    if any(p.kind is VAR_KEYWORD for p in entry.params):
        expected["knob"] = 1
    assert seen["kwargs"] == expected


# ------------------------------------------------------------------------------------ the API reference

ROOT = Path(__file__).parents[1]


@pytest.fixture(scope="module")
def rendered():
    """The accessor's docstrings as the API reference renders them: griffe (static, with the extension
    mkdocs.yml names), numpy style."""
    logging.getLogger("griffe").setLevel(logging.ERROR)
    mkdocs = (ROOT / "mkdocs.yml").read_text()
    extension = "tools/griffe_runtime_docstrings.py:RuntimeDocstrings"
    assert extension in mkdocs
    package = griffe.load("pandas_dp", search_paths=[str(ROOT)], docstring_parser="numpy",
                          extensions=griffe.load_extensions(str(ROOT / extension)))
    out = {}
    for name in ENTRIES:
        docstring = package["accessors.pandas.DPAccessorBase"].members[name].docstring
        params = next(s for s in docstring.parsed if s.kind.value == "parameters").value
        out[name] = (docstring.value, {n.strip().lstrip("*") for p in params for n in p.name.split(",")})
    return out


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_every_parameter_is_documented(rendered, name):
    _, documented = rendered[name]
    assert set(ENTRIES[name].params.names) <= documented, set(ENTRIES[name].params.names) - documented
    assert documented <= set(ENTRIES[name].params.names), documented - set(ENTRIES[name].params.names)


@pytest.mark.parametrize("name", ["histogram", "range_query"])
def test_every_registered_method_and_knob_is_in_the_api_docs(rendered, name):
    text, _ = rendered[name]
    for method, table in histogram_methods().items():
        assert f'"{method}"' in text.split("rng")[0], method  # in the method list
        for knob in table:
            assert f'``method="{method}"``' in text or not table.params
            assert f"``{knob.name}``" in text, (method, knob.name)


def test_knob_paragraphs_come_from_the_tables(rendered):
    """The tree's knobs, count-of-counts' knobs and the privacy unit are the tables' own paragraphs."""
    for entry_name, names in (("hierarchical_histogram", ENTRIES["hierarchical_histogram"].knobs.names),
                              ("count_of_counts", ENTRIES["count_of_counts"].knobs.names),
                              ("histogram", UNIT_ARGUMENTS), ("unattributed_histogram", UNIT_ARGUMENTS)):
        doc = inspect.getdoc(getattr(DPAccessorBase, entry_name))
        assert doc is not None
        for knob in names:
            paragraph = ENTRIES[entry_name].params[knob].paragraph()
            assert paragraph in doc, (entry_name, knob)
        assert "{" + " ".join(names) not in doc  # no marker left


def test_the_reference_renders_the_accessor():
    api = (ROOT / "docs" / "reference" / "api.md").read_text()
    assert "::: pandas_dp.accessors.pandas.DPAccessorBase" in api


SERIES_CALLS = {
    "histogram": ((), {"bins": 4, "range": (0, 8)}),
    "hierarchical_histogram": ((), {"bins": 8, "range": (0, 8)}),
    "range_query": (([(0, 4), (2, 8)],), {"bins": 8, "range": (0, 8)}),
    "unattributed_histogram": ((), {"groups": list(range(8))}),
    "quantiles": (([0.25, 0.5],), {"bounds": (0, 8)}),
}


@pytest.mark.parametrize("name", sorted(SERIES_CALLS))
def test_series_and_frame_methods_release_the_same(name):
    """Both accessors reach the entry through the one dispatch: same seed, same release."""
    import numpy as np

    assert set(SERIES_CALLS) == {n for n, e in ENTRIES.items() if e.on_series}
    s = pd.Series([0, 1, 1, 2, 3, 5, 5, 5, 7], name="v")
    args, kwargs = SERIES_CALLS[name]
    with pandas_dp.budget(epsilon=2.0):
        a = getattr(s.dp, name)(*args, epsilon=1.0, rng=np.random.default_rng(3), **kwargs)
        b = getattr(s.to_frame().dp, name)("v", *args, epsilon=1.0, rng=np.random.default_rng(3), **kwargs)
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b)
    elif not hasattr(a, "counts"):
        pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())
    else:
        pd.testing.assert_series_equal(a.counts, b.counts)
