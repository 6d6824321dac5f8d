"""Run every docstring example in the package as a doctest (examples use a seeded rng)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import pandas_dp

MODULES = sorted(
    name for _, name, _ in pkgutil.walk_packages(pandas_dp.__path__, prefix="pandas_dp.")
    if not name.endswith("__main__")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest example(s) failed in {name}"
