"""The pandas engine: the primitives on an in-memory ``pandas.DataFrame``, and the kernels every engine counts with.

:class:`PandasEngine` is the :class:`~pandas_dp.engines.Engine` that
:func:`~pandas_dp.engines.engine_for` returns for a ``pandas.DataFrame``: the features
written once (:class:`~pandas_dp.engines.features.CountingEngine`) over
:class:`PandasPrimitives`, for which the whole frame is one piece. The modules of this
package are the pandas kernels that code and count one pandas frame (a whole frame, or a
partition of another engine): :mod:`.counts` (cells, groups), :mod:`.bounding` (units,
row keys, contribution bounding), :mod:`.geography_counts`, :mod:`.marginals`,
:mod:`.geography_marginals`, :mod:`.groups` (count-of-counts) and :mod:`.labels` (key discovery).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.domain.grid import Grid
from pandas_dp.domain.geography import RegionTree
from pandas_dp.engines.features import CountingEngine
from pandas_dp.engines.pandas import groups, labels
from pandas_dp.engines.pandas.bounding import units_of
from pandas_dp.engines.primitives import Piece

__all__ = ["PandasEngine", "PandasPrimitives", "PANDAS_ENGINE"]


@dataclass(frozen=True)
class WholeFrame:
    """A pandas frame's coded rows: one piece, every unit's rows in it (private)."""

    piece: Piece

    def reduce(self, step: Callable[..., Any], args: tuple[Any, ...], combine: Callable[..., Any],
               finish: Callable[[Any], Any] | None = None) -> Any:
        out = step(self.piece, *args)
        return out if finish is None else finish(out)


class PandasPrimitives:
    """The primitives on a ``pandas.DataFrame``: the frame is one piece, read in place (no copy, no projection)."""

    name = "pandas"

    def check_domain(self, frame: pd.DataFrame, grid: Grid) -> None:
        return None  # a pandas frame's categories are always known

    def reduce(self, data: Any, columns: Sequence[Any] | None, count: Callable[[Any, Any], Any], public: Any,
               combine: Callable[..., Any], finish: Callable[[Any], Any] | None = None) -> Any:
        out = count(data, public)
        return out if finish is None else finish(out)

    def unit_rows(self, frame: pd.DataFrame, columns: Sequence[Any], code: Callable[[Any, Any], Sequence[np.ndarray]],
                  public: Any, unit: Any, *, hashes: bool, n_codes: int) -> WholeFrame:
        codes = tuple(code(frame, public))
        units, unit_hash = units_of(frame[unit], hashes=hashes)
        return WholeFrame(Piece(codes, units, unit_hash, None))

    def label_counts(self, values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
        return labels.label_counts(values)

    def count_groups(self, persons: pd.DataFrame, tree: RegionTree, *, group_unit: bool = False) -> groups.GroupTables:
        return groups.count_groups(persons, tree, group_unit=group_unit)


class PandasEngine(CountingEngine):
    """Every operation a release asks of an engine, on a ``pandas.DataFrame`` (:class:`~pandas_dp.engines.Engine`)."""

    def __init__(self) -> None:
        super().__init__(PandasPrimitives())

    def __repr__(self) -> str:
        return "PandasEngine()"


#: The one pandas engine (stateless).
PANDAS_ENGINE = PandasEngine()
