"""A Polars frame as the releases see it: a lazy query and its schema, with the metadata of a pandas frame.

Releases read a frame's metadata only (its column labels, a column's dtype: whether it is
``Categorical`` and with which categories); :class:`PolarsFrame` answers those from the
query's schema (``LazyFrame.collect_schema``), never from rows, and carries the lazy query
the engine streams. A Polars ``Enum`` has public categories in its dtype (the codebook it was
declared with), so it shows as a pandas ``CategoricalDtype`` of those categories; a Polars
``Categorical`` builds its categories from the data, so it shows as a ``CategoricalDtype`` of
one placeholder, refused as a domain (:func:`check_known_categories`) like Dask's unknown
categories. Importing this module does not import Polars (:func:`polars_module` loads it on
first use), so the accessor's registration, which runs when Polars is imported, never meets a
half-imported engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp._utils.optional import import_optional
from pandas_dp.domain.categories import CategoryDomain
from pandas_dp.domain.grid import Grid
from pandas_dp.errors import DomainError

__all__ = ["PolarsFrame", "PolarsColumn", "pandas_dtype", "check_known_categories", "UNKNOWN_CATEGORIES",
           "polars_module", "selected"]


def polars_module() -> Any:
    """The ``polars`` module (imported on first use: importing the engine does not import Polars)."""
    return import_optional("polars", extra="polars", purpose="Releasing a Polars frame")


#: The one category a Polars ``Categorical`` column shows (its categories come from the data).
UNKNOWN_CATEGORIES = "__UNKNOWN_CATEGORIES__"


def pandas_dtype(dtype: Any) -> Any:
    """The pandas dtype a Polars column of ``dtype`` reads as (metadata only; the categories of an ``Enum``)."""
    pl = polars_module()
    if isinstance(dtype, pl.Enum):
        return pd.CategoricalDtype(pd.Index(list(dtype.categories), dtype=object), ordered=False)
    if isinstance(dtype, pl.Categorical):
        return pd.CategoricalDtype([UNKNOWN_CATEGORIES], ordered=False)
    empty = pl.Series("x", [], dtype=dtype)
    try:
        return empty.to_pandas().dtype
    except Exception:  # noqa: BLE001 - a dtype pandas has no form for (nested types...): read as objects
        return np.dtype(object)


class PolarsColumn:
    """One column of a :class:`PolarsFrame` (its label and dtype; the engine streams its values)."""

    def __init__(self, frame: PolarsFrame, name: Any) -> None:
        self.frame, self.name = frame, name

    @property
    def dtype(self) -> Any:
        return pandas_dtype(self.frame.schema[self.name])

    @property
    def polars_dtype(self) -> Any:
        return self.frame.schema[self.name]


class PolarsFrame:
    """A ``polars.LazyFrame`` (or a ``DataFrame``, made lazy) with the metadata releases read.

    Parameters
    ----------
    data : polars.LazyFrame or polars.DataFrame
        The private rows (a ``DataFrame`` is queried in place, not copied).
    """

    def __init__(self, data: Any, parts: list[Any] | None = None) -> None:
        pl = polars_module()
        self.lazy = data.lazy() if isinstance(data, pl.DataFrame) else data
        self.schema = self.lazy.collect_schema()
        self.columns = pd.Index(list(self.schema.names()), dtype=object)
        #: The queries read one after the other (one, or one per file of a scan whose files' types disagree).
        self.parts = parts if parts is not None else [self.lazy]

    @property
    def dtypes(self) -> pd.Series:
        return pd.Series({name: pandas_dtype(t) for name, t in self.schema.items()}, dtype=object)

    def __getitem__(self, key: Any) -> Any:
        pl = polars_module()
        if isinstance(key, (list, tuple)):
            return PolarsFrame(self.lazy.select([pl.col(k) for k in key]),
                               [part.select([pl.col(k) for k in key]) for part in self.parts])
        if key not in self.schema:
            raise KeyError(key)
        return PolarsColumn(self, key)

    def __repr__(self) -> str:
        return f"PolarsFrame(columns={list(self.columns)[:20]})"


def check_known_categories(frame: Any, grid: Grid) -> None:
    """Raise DomainError when a dimension took a Polars ``Categorical`` column's placeholder as its domain."""
    pl = polars_module()
    if not isinstance(frame, PolarsFrame):
        return
    for dim in grid.dims:
        if not isinstance(dim, CategoryDomain) or dim.column not in frame.schema:
            continue
        if isinstance(frame.schema[dim.column], pl.Categorical) and list(map(str, dim.labels)) == [UNKNOWN_CATEGORIES]:
            raise DomainError(
                f"Column {dim.column!r} of the Polars frame is Categorical, whose categories come from the data, so "
                f"its dtype holds no public domain. Pass categories=[...] with every possible label (public "
                f"knowledge), or cast the column to a pl.Enum(codebook) built from a public codebook.")


def selected(frame: Any, columns: Sequence[Any] | None) -> list[Any]:
    """The queries of ``frame`` (a :class:`PolarsFrame` or :class:`PolarsColumn`) reading only ``columns``
    (all of a frame's for None), one per part, in order."""
    pl = polars_module()
    if isinstance(frame, PolarsColumn):
        return [part.select(pl.col(frame.name)) for part in frame.frame.parts]
    if columns is None:
        return list(frame.parts)
    return [part.select([pl.col(c) for c in dict.fromkeys(columns)]) for part in frame.parts]
