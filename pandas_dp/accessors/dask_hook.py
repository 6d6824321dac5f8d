"""Register the ``.dp`` accessor on Dask and Polars frames when ``dask.dataframe`` or ``polars`` is imported.

Importing dask costs about a second, so ``import pandas_dp`` does not import
it (nor Polars). For each library of :data:`TARGETS`: if it is already imported,
its accessor module is imported at once (which registers the accessor);
otherwise a one-shot import hook imports it right after the library finishes
importing, whichever of the two is imported first.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import Any, Sequence

#: Library -> the accessor module that registers ``.dp`` on its frames (loaded once the user imports the library).
TARGETS = {"dask.dataframe": "pandas_dp.accessors.dask", "polars": "pandas_dp.accessors.polars"}


def _register(target: str) -> None:
    importlib.import_module(TARGETS[target])


class _RegisteringLoader(importlib.abc.Loader):
    """Wraps dask.dataframe's loader: run it, then register the accessor."""

    def __init__(self, inner: importlib.abc.Loader, target: str) -> None:
        self._inner, self._target = inner, target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        _register(self._target)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _DaskFinder(importlib.abc.MetaPathFinder):
    """The one-shot hook of one library of :data:`TARGETS`."""

    def __init__(self, target: str = "dask.dataframe") -> None:
        self.target = target

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.target:
            return None
        sys.meta_path.remove(self)  # one shot, and the lookup below must not find us again
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _RegisteringLoader(spec.loader, self.target)
        return spec


def install() -> None:
    """Register now for every library of :data:`TARGETS` that is loaded, else when it is."""
    for target in TARGETS:
        if target in sys.modules:
            try:
                _register(target)
            except ImportError:  # a broken or partial install: no accessor, pandas still works
                pass
            continue
        if not any(isinstance(finder, _DaskFinder) and finder.target == target for finder in sys.meta_path):
            sys.meta_path.insert(0, _DaskFinder(target))
