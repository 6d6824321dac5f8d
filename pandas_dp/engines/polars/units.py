"""The Polars unit-rows primitive: rows coded batch by batch, then every unit's rows in one piece.

The query (the released columns and the unit column) is streamed in batches
(:mod:`.stream`); every batch is coded with the feature's pandas function and every row's unit
with its canonical 64-bit hash (:func:`pandas_dp.engines.pandas.bounding.unit_hashes`, the same
for 17, 17.0 and "17" in any batch). The coded batches, a few bytes per row and no private
value, are concatenated into one :class:`~pandas_dp.engines.primitives.Piece` whose units are
numbered from the hashes over all rows, and whose rows keep their order in the query: a row's
position is its position in the frame, so its key (``AES_K(position)``) and hence the rows every
unit keeps are the pandas engine's. Memory: the codes (4 or 8 bytes per code and row) and the
unit hashes (8 bytes per row); the rows themselves are read a batch at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pandas_dp.engines.pandas.bounding import unit_codes, unit_hashes
from pandas_dp.engines.polars.frame import selected
from pandas_dp.engines.polars.stream import batches
from pandas_dp.engines.primitives import Piece

__all__ = ["PolarsUnitRows", "coded_piece"]


def coded_piece(frame: Any, columns: Sequence[Any], code: Callable[[Any, Any], Sequence[np.ndarray]], public: Any,
                unit: Any, *, hashes: bool, n_codes: int) -> Piece:
    """Every row of ``frame[columns]`` coded and with its unit (one piece: every unit's rows are in it)."""
    parts: list[list[np.ndarray]] = [[] for _ in range(n_codes)]
    units: list[np.ndarray] = []
    for batch in batches(selected(frame, [*columns, unit])):
        for i, c in enumerate(code(batch, public)):
            parts[i].append(np.asarray(c))
        units.append(unit_hashes(batch[unit]))
    codes = tuple(np.concatenate(p) if len(p) > 1 else p[0] for p in parts)
    unit_hash = np.concatenate(units) if len(units) > 1 else units[0]
    return Piece(codes, unit_codes(unit_hash), unit_hash if hashes else None, None)


class PolarsUnitRows:
    """A Polars frame's rows coded by cell and unit, in one piece (private)."""

    def __init__(self, piece: Piece) -> None:
        self.piece = piece

    def reduce(self, step: Callable[..., Any], args: tuple[Any, ...], combine: Callable[..., Any],
               finish: Callable[[Any], Any] | None = None) -> Any:
        out = step(self.piece, *args)
        return out if finish is None else finish(out)
