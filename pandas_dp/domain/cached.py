"""Derived values of public domains (coders, indexes) are caches, not state."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

__all__ = ["DerivedCache"]


class DerivedCache:
    """Mixin of frozen dataclasses: attributes that are not fields are caches (``functools.cached_property``).

    They are left out when pickling (rebuilt on first use, e.g. on a Dask worker) and never compared.
    """

    def __getstate__(self) -> dict[str, Any]:
        names = {f.name for f in fields(self)}  # type: ignore[arg-type]
        return {k: v for k, v in self.__dict__.items() if k in names}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
