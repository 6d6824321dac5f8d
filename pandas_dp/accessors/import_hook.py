"""Import a module of pandas_dp as soon as an optional library's module is imported (the lazy accessors).

Importing Dask, Polars or pyspark costs up to a second or more, so ``import pandas_dp`` imports none
of them. :func:`install` (called by ``import pandas_dp``) does this for every library of
:data:`LAZY_ACCESSORS`.
:func:`when_imported` imports a pandas_dp module (which registers the ``.dp`` accessor and the
engine of that library's frames) at once if the library's module is already loaded; otherwise a
one-shot import hook imports it right after the library's module finishes importing, whichever
of the two is imported first.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import Any, Sequence

__all__ = ["when_imported", "install", "LAZY_ACCESSORS"]

#: Library module -> the accessor module that registers ``.dp`` (and the engine) on its frames.
LAZY_ACCESSORS = {"dask.dataframe": "pandas_dp.accessors.dask", "polars": "pandas_dp.accessors.polars",
                  "pyspark.sql": "pandas_dp.accessors.spark"}


def _register(module: str) -> None:
    importlib.import_module(module)


class _RegisteringLoader(importlib.abc.Loader):
    """Wraps the target's loader: run it, then import the registering module."""

    def __init__(self, inner: importlib.abc.Loader, module: str) -> None:
        self._inner, self._module = inner, module

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        _register(self._module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, target: str, module: str) -> None:
        self.target, self.module = target, module

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.target:
            return None
        sys.meta_path.remove(self)  # one shot, and the lookup below must not find us again
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _RegisteringLoader(spec.loader, self.module)
        return spec


def when_imported(target: str, module: str) -> None:
    """Import ``module`` now if ``target`` is loaded (a broken or partial install: nothing), else when it is."""
    if target in sys.modules:
        try:
            _register(module)
        except ImportError:  # a broken or partial install of the library: no accessor, pandas still works
            pass
        return
    if not any(isinstance(finder, _Finder) and finder.target == target for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder(target, module))


def install() -> None:
    """:func:`when_imported` for every library of :data:`LAZY_ACCESSORS`."""
    for target, module in LAZY_ACCESSORS.items():
        when_imported(target, module)
