"""Engines: where exact counting happens (pandas by default, Dask for larger-than-memory frames).

Release functions ask :func:`engine_for` for the engine of the frame they got;
algorithms, the budget and results never see the engine.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

__all__ = ["engine_for"]


def engine_for(frame: Any) -> ModuleType:
    """The engine module that counts the rows of ``frame`` (``engines.pandas`` or ``engines.dask``)."""
    if type(frame).__module__.split(".")[0] == "dask":
        from . import dask as dask_engine

        return dask_engine
    from . import pandas as pandas_engine

    return pandas_engine
