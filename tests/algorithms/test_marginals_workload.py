"""Workloads of marginals: validation of public inputs, the downward closure, maximal sets."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pandas_dp.algorithms.marginals.workload import downward_closure, make_workload
from pandas_dp.errors import ParameterError


def test_closure_of_two_overlapping_tables() -> None:
    w = make_workload([2, 3, 4], [(1, 0), (2, 1)])
    assert w.tables == ((0, 1), (1, 2))
    assert w.closure == ((), (0,), (1,), (2,), (0, 1), (1, 2))
    assert w.maximal == ((0, 1), (1, 2))
    assert w.attributes == (0, 1, 2)
    assert w.cells((0, 1)) == 6 and w.shape((1, 2)) == (3, 4)


def test_repeated_tables_kept_once_and_nested_tables_not_maximal() -> None:
    w = make_workload([2, 2, 2], [(0, 1), (1, 0), (0,), (0, 1, 2)])
    assert w.tables == ((0, 1), (0,), (0, 1, 2))
    assert w.maximal == ((0, 1, 2),)
    assert len(w.closure) == 8


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 5), min_size=0, max_size=4, unique=True), min_size=1, max_size=5))
def test_closure_is_every_subset_of_every_table(tables) -> None:
    closure = downward_closure(tuple(t) for t in tables)
    expected = {tuple(sorted(s)) for t in tables for k in range(len(t) + 1) for s in itertools.combinations(t, k)}
    assert set(closure) == expected and len(closure) == len(expected)
    assert closure[0] == ()
    assert list(closure) == sorted(closure, key=lambda a: (len(a), a))


@pytest.mark.parametrize("sizes,tables,fragment", [
    ([2, 0], [(0,)], "at least 1"),
    ([2, 1.5], [(0,)], "positive integer"),
    ([2, True], [(0,)], "positive integer"),
    ([2, 3], [(0, 2)], "not an attribute index"),
    ([2, 3], [(0, -1)], "not an attribute index"),
    ([2, 3], [(0, 0)], "repeats an attribute"),
    ([2, 3], [], "empty"),
])
def test_invalid_public_inputs_raise(sizes, tables, fragment) -> None:
    with pytest.raises(ParameterError, match=fragment):
        make_workload(sizes, tables)


def test_container_refuses_a_marginal_outside_the_closure() -> None:
    w = make_workload([2, 3, 4], [(0, 1), (2,)])
    assert w.container((1,)) == (0, 1)
    with pytest.raises(ParameterError, match="not in the workload"):
        w.container((0, 2))
