"""What each unit step of :mod:`.pieces` needs of a part of the rows before the units' rows meet.

Every step that bounds units (:func:`~.pieces.bounded_counts`, :func:`~.pieces.bounded_group_counts`,
:func:`~.pieces.bounded_tables`, :func:`~.pieces.bounded_value_steps`, :func:`~.pieces.bounded_value_sums`)
counts only its *live* rows (a cell, a group, every attribute in its domain) that have a unit, and a
unit (rows scheme) or a (unit, cell) pair (cells scheme) keeps its live rows of smallest key. The two
steps that count rows per unit (:func:`~.pieces.contributions` for ``max_rows="auto"`` and
:func:`~.pieces.kept_dropped` for ``report_dropped``) only need ``min(rows, L)`` per unit. So each part
of the frame (a Dask partition) can drop, before any row moves, the rows that are not live and every
group's rows beyond its ``limit`` smallest keys (:func:`~.pandas.local_bounds.local_survivors`, whose
docstring proves the kept set unchanged). :func:`part_survivors` is that filter for one step; a step
it does not know keeps every row with a unit (always exact: rows without a unit are never counted).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pandas_dp.engines import pieces
from pandas_dp.engines.pandas.bounding import row_keys
from pandas_dp.engines.pandas.local_bounds import local_survivors
from pandas_dp.engines.pandas.marginals import in_domain
from pandas_dp.privacy.units import AUTO_STEPS, UnitBounds

__all__ = ["part_survivors"]

#: Keys of the counting steps: any rows of a unit will do, so any fixed pseudorandom keys.
_COUNTING_KEY = bytes(32)
#: Rows per unit the contribution histogram tells apart: every unit above ``AUTO_STEPS[-2]`` rows is in its last cell.
_CONTRIBUTION_ROWS = AUTO_STEPS[-2] + 1


Cells = tuple[np.ndarray, np.ndarray]   # (which rows are live, each row's cell identity)


def _first_code(codes: Sequence[np.ndarray], args: tuple[Any, ...]) -> Cells:
    cells = np.asarray(codes[0], dtype=np.int64)
    return cells >= 0, cells


def _group_hash(codes: Sequence[np.ndarray], args: tuple[Any, ...]) -> Cells:
    hashes = np.asarray(codes[0], dtype=np.int64)
    return hashes != 0, hashes          # the group's hash is its identity; 0: no group


def _table_cell(codes: Sequence[np.ndarray], args: tuple[Any, ...]) -> Cells:
    live = in_domain(codes, args[0].sizes) if codes else np.zeros(0, dtype=bool)
    return live, np.zeros(live.size, dtype=np.int64)   # one cell: the rows in every attribute's domain


#: step -> (its live rows and cells as it bounds them, where its UnitBounds and key sit in its arguments).
_BOUNDED: dict[Callable[..., Any], tuple[Callable[[Sequence[np.ndarray], tuple[Any, ...]], Cells], int]] = {
    pieces.bounded_counts: (_first_code, 0),
    pieces.bounded_group_counts: (_group_hash, 0),
    pieces.bounded_tables: (_table_cell, 1),
    pieces.bounded_value_steps: (_first_code, 0),
    pieces.bounded_value_sums: (_first_code, 0),
}


def _keys(key: bytes, positions: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    return lambda rows: row_keys(key, positions[rows])


def part_survivors(step: Callable[..., Any], args: tuple[Any, ...], codes: Sequence[np.ndarray],
                   hashes: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The rows of one part of the frame that ``step(piece, *args)`` may still count once every unit's rows meet.

    ``codes``, ``hashes`` (uint64, 0: no unit) and ``positions`` (in the frame, ascending) are the part's
    coded rows. Running ``step`` on the union of every part's surviving rows gives what it gives on all
    the rows (see the module docstring).
    """
    if step in _BOUNDED:
        cells_of, at = _BOUNDED[step]
        bounds: UnitBounds = args[at]
        key: bytes = args[at + 1]
        live, cells = cells_of(codes, args)
        if live.size != hashes.size:      # a table step without attributes counts nothing
            return np.zeros(hashes.size, dtype=bool)
        if bounds.scheme == "cells":
            return local_survivors(live, hashes, int(bounds.max_rows_per_cell),  # type: ignore[arg-type]
                                   _keys(key, positions), cells=cells)
        return local_survivors(live, hashes, bounds.row_bound, _keys(key, positions))
    if step is pieces.contributions or step is pieces.kept_dropped:
        limit = _CONTRIBUTION_ROWS if step is pieces.contributions else 2 * int(args[0])
        return local_survivors(np.asarray(codes[0]) >= 0, hashes, limit, _keys(_COUNTING_KEY, positions))
    return hashes != 0
