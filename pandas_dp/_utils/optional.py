"""Import optional dependencies with an error that names the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from pandas_dp.errors import PandasDPError

__all__ = ["import_optional", "MissingDependencyError"]


class MissingDependencyError(PandasDPError, ImportError):
    """An optional dependency is not installed."""


def import_optional(module: str, *, extra: str, purpose: str) -> ModuleType:
    """Import ``module`` or raise an error telling which pandas-dp extra provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        top = module.split(".")[0]
        raise MissingDependencyError(
            f"{purpose} needs the optional dependency {top!r}, which is not installed. "
            f"Install it with: pip install 'pandas-dp[{extra}]'"
        ) from err
