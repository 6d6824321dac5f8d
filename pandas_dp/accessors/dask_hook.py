"""Register the ``.dp`` accessor on Dask frames when ``dask.dataframe`` is imported.

Importing dask costs about a second, so ``import pandas_dp`` does not import
it. If ``dask.dataframe`` is already imported, the accessor is registered
at once; otherwise a one-shot import hook registers it right after
``dask.dataframe`` finishes importing, whichever of the two is imported first.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import Any, Sequence

_TARGET = "dask.dataframe"


def _register() -> None:
    import pandas_dp.accessors.dask  # noqa: F401  (local: lazy dask, loaded once the user imports it)


class _RegisteringLoader(importlib.abc.Loader):
    """Wraps dask.dataframe's loader: run it, then register the accessor."""

    def __init__(self, inner: importlib.abc.Loader) -> None:
        self._inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        _register()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _DaskFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != _TARGET:
            return None
        sys.meta_path.remove(self)  # one shot, and the lookup below must not find us again
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _RegisteringLoader(spec.loader)
        return spec


def install() -> None:
    """Register now if dask.dataframe is loaded, else when it is."""
    if _TARGET in sys.modules:
        try:
            _register()
        except ImportError:  # a broken or partial dask install: no accessor, pandas still works
            pass
        return
    if not any(isinstance(finder, _DaskFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _DaskFinder())
