"""Frozen means frozen: nothing done to what a result hands out changes what it answers.

The walk is by introspection, not a hand-kept list: every public attribute,
property and argument-free method of every result (and, recursively, of the
dataclasses, tuples and mappings they return: ``detail``, ``domain``, ...)
is read, and every value reached is mutated in every way that applies
(``[...] =``, ``.iloc``/``.loc``, in-place numpy ops, ``.update``, dict/list
mutation, ``setattr``). Afterwards the result answers exactly as before,
and its stored state equals a pickled snapshot taken before the attack.
"""

from __future__ import annotations

import dataclasses
import inspect
import pickle
import warnings
from collections.abc import Mapping
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from results_zoo import answers, assert_same_answers, every_result

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

RELEASES = sorted(k for k, v in every_result().items() if not isinstance(v, (pd.DataFrame, pdp.RangeAnswer)))
SKIP_METHODS = {"plot"}   # draws a figure (covered by tests/test_plots.py); it returns an Axes, not release data
#: Methods that publish a new result from this one: walked once, not again on what they return (a published
#: table set's own nonnegative()/integer()/sample() would re-publish at every depth, for nothing new).
ONCE_METHODS = ("nonnegative", "integer", "sample")


def _public(obj: Any) -> list[str]:
    return [n for n in dir(obj) if not n.startswith("_")]


def _argument_free(method: Callable) -> bool:
    try:
        sig = inspect.signature(method)
    except (TypeError, ValueError):
        return False
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in sig.parameters.values())


def reachable(obj: Any, path: str, depth: int = 0) -> Iterator[tuple[str, Any]]:
    """Every value a caller can reach from ``obj`` through public names (depth-limited)."""
    yield path, obj
    if depth >= 5:
        return
    if isinstance(obj, Mapping):
        for key, value in obj.items():
            yield from reachable(value, f"{path}[{key!r}]", depth + 1)
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            yield from reachable(value, f"{path}[{i}]", depth + 1)
    elif isinstance(obj, (pdp.results._base.FrozenRelease)) or (
            dataclasses.is_dataclass(obj) and not isinstance(obj, type)):
        for name in _public(obj):
            try:
                value = getattr(obj, name)
            except Exception:    # a property that does not apply (e.g. 1-D only): nothing handed out
                continue
            if inspect.ismethod(value) or inspect.isfunction(value):
                if name in SKIP_METHODS or not _argument_free(value):
                    continue
                if name in ONCE_METHODS and any(f".{m}()" in path for m in ONCE_METHODS):
                    continue
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        value = value()
                except Exception:  # not applicable to this release (e.g. range queries on categories)
                    continue
                yield from reachable(value, f"{path}.{name}()", depth + 1)
            elif not callable(value):
                yield from reachable(value, f"{path}.{name}", depth + 1)


def _attempts(value: Any) -> list[Callable[[], Any]]:
    """Every way to mutate ``value`` in place that applies to its type."""
    out: list[Callable[[], Any]] = []
    if isinstance(value, pd.Series) and len(value):
        first = value.index[0]
        out += [lambda: value.iloc.__setitem__(0, -999), lambda: value.iloc.__setitem__(slice(None), -999),
                lambda: value.__setitem__(first, -999), lambda: value.loc.__setitem__(first, -999),
                lambda: value.update(pd.Series(-999, index=value.index)), lambda: value.__iadd__(1),
                lambda: value.array.__setitem__(0, value.array[-1]),
                lambda: np.asarray(value.array).__setitem__(0, -999),
                lambda: value.values.__setitem__(0, -999), lambda: value.to_numpy().__setitem__(0, -999),
                lambda: setattr(value, "name", "mutated"), lambda: setattr(value.index, "name", "mutated"),
                lambda: value.attrs.__setitem__("mutated", True),
                lambda: setattr(value, "index", pd.RangeIndex(len(value))),
                lambda: value.drop(first, inplace=True), lambda: value.sort_values(inplace=True)]
    elif isinstance(value, pd.DataFrame) and value.size:
        col = value.columns[0]
        out += [lambda: value.iloc.__setitem__((0, j), -999) for j in range(value.shape[1])]
        out += [lambda: value.__setitem__(col, -999), lambda: value.loc.__setitem__(value.index[0], -999),
                lambda: value.insert(0, "mutated", 1), lambda: value.pop(col),
                lambda: setattr(value, "columns", [f"c{i}" for i in range(value.shape[1])]),
                lambda: setattr(value, "index", pd.RangeIndex(len(value))),
                lambda: value.update(pd.DataFrame(-999, index=value.index, columns=value.columns)),
                lambda: value.values.__setitem__((0, 0), -999),
                lambda: value.attrs.__setitem__("mutated", True),
                lambda: value.drop(columns=col, inplace=True),
                lambda: value.sort_values(col, ascending=False, inplace=True)]
        out += [lambda c=c: value[c].array.__setitem__(0, value[c].array[-1]) for c in value.columns]
    elif isinstance(value, pd.Index) and len(value):
        out += [lambda: setattr(value, "name", "mutated"), lambda: value.array.__setitem__(0, value[-1]),
                lambda: setattr(value, "names", [f"m{i}" for i in range(value.nlevels)])]
    elif isinstance(value, np.ndarray) and value.size:
        out += [lambda: value.__setitem__(..., -1), lambda: value.__iadd__(1),
                lambda: np.negative(value, out=value), lambda: value.fill(0), lambda: value.sort(axis=None),
                lambda: setattr(value.flags, "writeable", True), lambda: value.__setitem__(..., 0)]
    elif isinstance(value, dict):
        key = next(iter(value), "k")
        out += [lambda: value.__setitem__(key, "mutated"), lambda: value.__setitem__("new", 1),
                lambda: value.update(mutated=1), lambda: value.pop(key), lambda: value.popitem(),
                lambda: value.setdefault("new", 1), lambda: value.__delitem__(key), lambda: value.__ior__({"x": 1}),
                lambda: value.clear()]
    elif isinstance(value, list):
        out += [lambda: value.append("mutated"), lambda: value.extend([1]), lambda: value.insert(0, 1),
                lambda: value.__setitem__(0, "mutated"), lambda: value.__delitem__(0), lambda: value.__iadd__([1]),
                lambda: value.reverse(), lambda: value.sort(), lambda: value.pop(), lambda: value.clear()]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out += [lambda f=f: setattr(value, f.name, None) for f in dataclasses.fields(value)]
    return out


def _attack(value: Any) -> None:
    for attempt in _attempts(value):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                attempt()
            except Exception:  # refusing the mutation is one way to stay frozen
                pass


@pytest.mark.parametrize("reload", [False, True], ids=["fresh", "unpickled"])
@pytest.mark.parametrize("name", RELEASES)
def test_mutating_everything_reachable_changes_no_answer(name, reload):
    result = every_result()[name]
    if reload:
        result = pickle.loads(pickle.dumps(result))
    before = answers(result)
    snapshot = pickle.dumps(result)
    reached = list(reachable(result, name))
    kinds = {type(v).__name__ for _, v in reached}
    assert {"Series", "FrozenDict"} <= kinds or {"DataFrame", "FrozenDict"} <= kinds, kinds
    for _, value in reached[1:]:
        _attack(value)
    assert_same_answers(answers(result), before)
    assert result == pickle.loads(snapshot)   # the whole stored state, not only the answers


@pytest.mark.parametrize("name", RELEASES)
def test_setattr_and_delattr_on_the_result_raise(name):
    result = every_result()[name]
    names = [n for n in _public(result) if not inspect.ismethod(getattr(result, n, None))]
    assert {f.name for f in dataclasses.fields(result)} <= set(names)
    for attr in names + ["new_attribute"]:
        with pytest.raises(AttributeError):
            setattr(result, attr, None)
    for f in dataclasses.fields(result):
        with pytest.raises(AttributeError):
            delattr(result, f.name)


@pytest.mark.parametrize("name", RELEASES)
def test_handed_out_data_is_read_only_or_a_copy(name):
    result = every_result()[name]
    for path, value in reachable(result, name):
        if isinstance(value, np.ndarray) and value.size and path.count(".") <= 3:
            # arrays held by the release are read-only views that cannot be made writeable again
            stored_like = not path.endswith("()") and "(" not in path
            if stored_like and not value.flags.writeable:
                with pytest.raises(ValueError):
                    value.flags.writeable = True
    first = next(iter(result.params))
    with pytest.raises(TypeError, match="read-only"):
        result.params[first] = None
    series = result.frame if isinstance(result, pdp.CountOfCounts) else result.counts
    assert series is not (result.frame if isinstance(result, pdp.CountOfCounts) else result.counts)


def test_histogram_counts_example_from_the_issue():
    h = every_result()["identity"]
    frame, ranges = h.to_frame(), h.range_query([(0, 50), (50, 100)])
    counts = h.counts
    counts[...] = -999
    counts.iloc[3] = -5
    assert (counts == -5).any()                    # the caller's copy changed ...
    pd.testing.assert_frame_equal(h.to_frame(), frame)   # ... the release did not
    pd.testing.assert_frame_equal(h.range_query([(0, 50), (50, 100)]), ranges)


def test_nested_params_are_frozen_too():
    t = every_result()["hierarchical"]
    levels = t.params["level_epsilons"]
    assert levels == list(levels) and isinstance(levels, list)   # still compares as a list
    with pytest.raises(TypeError, match="read-only"):
        levels.append("1")
    with pytest.raises(TypeError, match="read-only"):
        levels[0] = "1"
    mutable = dict(t.params)                # the documented way to edit a copy
    mutable["branching"] = 99
    assert t.params["branching"] != 99
