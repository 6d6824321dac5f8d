"""The primitives every engine implements: the few ways of reading private rows that every count needs.

An engine is a :class:`~pandas_dp.engines.features.CountingEngine` (the methods releases
call, written once) over one object implementing :class:`Primitives` (mypy checks each
engine's primitives against it). Every primitive reads private rows, hands a public
function pieces of them (pandas frames or Series: the whole frame on pandas, a partition
on Dask), and returns only what the public function computes from them: exact counts on
a public domain, never rows. None raises, warns or reports because of a private value.

* :meth:`Primitives.reduce` -- code and count every piece with a pandas function, combine the
  partial counts (a tree on Dask: only the combined counts reach the client);
* :meth:`Primitives.unit_rows` -- code every row with a pandas function, with its unit's hash and its
  position in the frame, and gather each unit's rows in one piece (:class:`Piece`), on which a
  function bounds every unit and counts (:class:`UnitRows`);
* :meth:`Primitives.label_counts` -- count the labels present in a column (key discovery);
* :meth:`Primitives.count_groups` -- the exact count-of-counts tables of a region tree (group sizes
  keyed by group id, counted where the rows are: no id reaches the client);
* :meth:`Primitives.check_domain` -- refuse a public domain the frame's metadata cannot serve
  (Dask's unknown categories); metadata only, never rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from pandas_dp.domain.grid import Grid
from pandas_dp.domain.geography import RegionTree

if TYPE_CHECKING:  # the tables' class lives with the pandas kernels that build them
    from pandas_dp.engines.pandas.groups import GroupTables

__all__ = ["Piece", "UnitRows", "Primitives"]


@dataclass(frozen=True)
class Piece:
    """Coded rows in which every unit's rows all sit (the whole frame on pandas; a shuffled partition on Dask).

    Attributes
    ----------
    codes : tuple of numpy.ndarray
        What the coding function returned for these rows, one array per code (``-1``: out of domain).
    units : numpy.ndarray
        Unit code of every row (``0..`` within the piece), ``-1`` when the unit is missing or odd.
    hashes : numpy.ndarray or None
        The canonical 64-bit hash of every row's unit (:func:`pandas_dp.engines.pandas.bounding.unit_hashes`),
        when asked for (the cells scheme) or carried anyway (Dask gathers units by it).
    positions : numpy.ndarray or None
        Every row's position in the frame (unsigned integers); None: ``0..n-1`` (the whole frame).
    """

    codes: tuple[np.ndarray, ...]
    units: np.ndarray
    hashes: np.ndarray | None
    positions: np.ndarray | None


class UnitRows(Protocol):
    """A frame's rows coded, with each unit's rows in one :class:`Piece` (private; never leaves the release)."""

    def reduce(self, step: Callable[..., Any], args: tuple[Any, ...], combine: Callable[..., Any],
               finish: Callable[[Any], Any] | None = None) -> Any:
        """``finish(combine(step(piece, *args) for every piece))`` (``finish`` None: the combined value).

        ``step``, ``combine`` and ``finish`` are module-level functions (Dask ships them to workers).
        """


class Primitives(Protocol):
    """What an engine must implement; every count a release asks for is written once above these."""

    #: The engine's name (``"pandas"``, ``"dask"``).
    name: str

    def check_domain(self, frame: Any, grid: Grid) -> None:
        """Raise :class:`~pandas_dp.errors.DomainError` when the frame's metadata cannot serve ``grid``."""

    def reduce(self, data: Any, columns: Sequence[Any] | None, count: Callable[[Any, Any], Any], public: Any,
               combine: Callable[..., Any], finish: Callable[[Any], Any] | None = None) -> Any:
        """``finish(combine(count(piece, public) for every piece of data[columns]))``.

        ``data`` is a frame (``columns``: the ones read) or a Series (``columns`` None). One piece
        needs no ``combine``. ``count``, ``combine`` and ``finish`` are module-level functions.
        """

    def unit_rows(self, frame: Any, columns: Sequence[Any], code: Callable[[Any, Any], Sequence[np.ndarray]],
                  public: Any, unit: Any, *, hashes: bool, n_codes: int) -> UnitRows:
        """Rows coded by ``code(piece, public)`` (``n_codes`` integer arrays) and by the unit column ``unit``.

        ``hashes``: the pieces must carry the unit hashes (the cells scheme keys (unit, cell) pairs by them).
        """

    def label_counts(self, values: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(labels, counts)``: every label present in ``values`` and its exact int64 count."""

    def count_groups(self, persons: Any, tree: RegionTree, *, group_unit: bool = False) -> GroupTables:
        """Exact count-of-counts tables of every region of ``tree`` (see :meth:`Engine.count_groups
        <pandas_dp.engines.Engine.count_groups>`)."""
