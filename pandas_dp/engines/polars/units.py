"""The Polars unit-rows primitive: rows coded batch by batch, then every unit's rows in one piece.

The query (the released columns and the unit column) is streamed in batches
(:mod:`.stream`); every batch is coded with the feature's pandas function and every row's unit
with its canonical 64-bit hash (:func:`pandas_dp.engines.pandas.bounding.unit_hashes`, the same
for 17, 17.0 and "17" in any batch). The coded batches, a few bytes per row and no private
value, are concatenated into one :class:`~pandas_dp.engines.primitives.Piece` whose units are
numbered from the hashes over all rows (units in one integer column: by their values, as the pandas
engine numbers an integer column's units), and whose rows keep their order in the query: a row's
position is its position in the frame, so its key (``AES_K(position)``) and hence the rows every
unit keeps are the pandas engine's. Memory: the codes (4 or 8 bytes per code and row) and the
unit hashes (8 bytes per row); the rows themselves are read a batch at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.engines.pandas.bounding import index_dtype, unit_codes, unit_hashes
from pandas_dp.engines.polars.frame import polars_module, selected
from pandas_dp.engines.polars.stream import BATCH_ROWS, polars_batches, to_pandas
from pandas_dp.engines.primitives import Piece

__all__ = ["PolarsUnitRows", "coded_piece"]


_INTEGERS = ("Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32")


def _by_value(frame: Any, unit: Any, hashes: bool) -> bool:
    """Whether units are numbered by their integer values: one integer column (equal values, equal units)
    and no hash asked for; else by their canonical hashes (any type, or files of different types)."""
    return not hashes and len(frame.parts) == 1 and type(frame.schema[unit]).__name__ in _INTEGERS


def _joined(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays) if len(arrays) > 1 else arrays[0]


def _numbered(values: np.ndarray, missing: np.ndarray) -> np.ndarray:
    """Unit codes of integer unit values (-1: missing): ``value - min`` when the values span a range not much
    larger than the rows (no hashing; the bounding needs equal codes for equal units, not consecutive ones),
    else by ``pandas.factorize``."""
    present = values[~missing] if missing.any() else values
    if present.size:
        lo, hi = int(present.min()), int(present.max())
        if hi - lo < min(max(4 * values.size, 1 << 16), 2**31 - 2):
            numbered = (values - lo).astype(np.int32)
            numbered[missing] = -1
            return numbered
    numbered = pd.factorize(values)[0]
    numbered[missing] = -1
    return numbered.astype(index_dtype(numbered.size), copy=False)


def coded_piece(frame: Any, columns: Sequence[Any], code: Callable[[Any, Any], Sequence[np.ndarray]], public: Any,
                unit: Any, *, hashes: bool, n_codes: int, batch_rows: int = BATCH_ROWS) -> Piece:
    """Every row of ``frame[columns]`` coded and with its unit (one piece: every unit's rows are in it)."""
    pl = polars_module()
    parts: list[list[np.ndarray]] = [[] for _ in range(n_codes)]
    units: list[np.ndarray] = []
    missing: list[np.ndarray] = []
    by_value = _by_value(frame, unit, hashes)
    for batch in polars_batches(selected(frame, [*columns, unit]), batch_rows=batch_rows):
        for i, c in enumerate(code(to_pandas(batch, False), public)):
            parts[i].append(np.asarray(c))
        if by_value:  # the integers themselves, read from Arrow (a null: 0, and flagged)
            values = batch[unit].cast(pl.Int64)
            units.append(values.fill_null(0).to_numpy())
            missing.append(values.is_null().to_numpy())
        else:
            units.append(unit_hashes(batch[unit].to_pandas()))
    codes = tuple(_joined(p) for p in parts)
    if by_value:
        return Piece(codes, _numbered(_joined(units), _joined(missing)), None, None)
    unit_hash = _joined(units)
    return Piece(codes, unit_codes(unit_hash), unit_hash if hashes else None, None)


class PolarsUnitRows:
    """A Polars frame's rows coded by cell and unit, in one piece (private)."""

    def __init__(self, piece: Piece) -> None:
        self.piece = piece

    def reduce(self, step: Callable[..., Any], args: tuple[Any, ...], combine: Callable[..., Any],
               finish: Callable[[Any], Any] | None = None) -> Any:
        out = step(self.piece, *args)
        return out if finish is None else finish(out)
