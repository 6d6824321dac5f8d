"""A step of the caller's own query (a Dask graph, a Polars query, a Spark plan) whose failure is withheld.

Counting never raises on a private value, but the caller's query upstream of it can (files whose
columns have different types, a file that cannot be read, a function of the frame that raises), and
that error's message may quote a private value. :func:`withheld` runs such a step and replaces any
failure by :class:`~pandas_dp.errors.DataSourceError` with a fixed text naming the engine: nothing
has been charged at this step (every engine counts before the charge), and the original error is
not even kept as the exception's context. Such a frame cannot be released at all: running it fails
with or without pandas_dp.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pandas_dp.errors import DataSourceError

__all__ = ["Source", "withheld"]


@dataclass(frozen=True)
class Source:
    """How one engine names the caller's query in the withheld error's fixed text."""

    #: What failed, e.g. ``"Computing the Dask frame"``.
    action: str
    #: Where, e.g. ``"inside its own graph"``.
    where: str
    #: Typical causes, e.g. ``"a file that cannot be read"``.
    examples: str
    #: How the caller sees the original error, e.g. ``"compute the frame outside pandas_dp"``.
    remedy: str


def withheld(step: Callable[[], Any], source: Source) -> Any:
    """``step()``; any failure becomes :class:`~pandas_dp.errors.DataSourceError` with ``source``'s fixed text."""
    try:
        return step()
    except Exception:  # noqa: BLE001 - any failure of the caller's query
        pass
    # Raised outside the handler, so the original error is not even kept as the context.
    raise DataSourceError(
        f"{source.action} failed {source.where} (for example {source.examples}). Its error is withheld because "
        f"its text may quote private values; {source.remedy} to see it. Nothing was charged.")
