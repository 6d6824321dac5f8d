"""Privacy units: the guarantee protects a person (a rider, a customer, a household), not a row.

With ``privacy_unit="rider_id"``, neighbouring frames differ by **all the rows
of one unit**. The caller bounds each unit's contribution with public numbers,
checked before any charge:

* ``max_rows=k``: at most ``k`` rows per unit are kept (chosen uniformly at
  random, independently per unit, with the release's randomness). A unit then
  changes a histogram by at most ``k`` in L1, and by at most ``k`` in L2 (all
  its rows may fall in one cell): ``Sensitivity(l1=k, l2_squared=k**2)``.
* ``max_cells=c, max_rows_per_cell=r``: at most ``r`` rows per (unit, cell)
  and at most ``c`` distinct cells per unit (both chosen at random): ``L1 =
  c r`` and ``L2 = sqrt(c) r`` for a flat histogram.
* ``max_rows="auto"``: ``k`` is chosen privately with :data:`AUTO_SHARE` of
  the loss: a noisy histogram of the units' numbers of rows on the
  half-octave steps :data:`AUTO_STEPS`, and the smallest step whose noisy
  cumulative share reaches :data:`AUTO_QUANTILE`.

:class:`UnitBounds` is the one small frozen object that carries the unit and
its bounds down the release pipeline; release plans ask it for the
sensitivity of what they measure (a flat histogram, one level of a tree whose
nodes cover ``m`` cells) and never branch on the scheme themselves.

References
----------
K. Amin, A. Kulesza, A. Muñoz Medina, S. Vassilvitskii. "Bounding User
Contributions: A Bias-Variance Trade-off in Differential Privacy", ICML 2019
(contribution bounding; a high quantile of contributions as the bound).
C. Dwork, A. Roth. "The Algorithmic Foundations of Differential Privacy",
2014, Theorem 2.2 (group privacy: a pure epsilon-DP mechanism on rows is
k epsilon-DP on groups of k rows).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from pandas_dp._utils.checks import integer_in
from pandas_dp._utils.rational import safe_repr
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import PrivacyLoss, Sensitivity

__all__ = ["UnitBounds", "UnitArguments", "UNIT_ARGUMENTS", "unit_bounds", "AUTO_SHARE", "AUTO_QUANTILE", "AUTO_MAX_ROWS", "AUTO_STEPS", "MAX_BOUND"]

#: Share of the release's loss spent choosing ``max_rows="auto"``.
AUTO_SHARE = Fraction(1, 20)
#: The bound ``max_rows="auto"`` chooses: this quantile of the units' (noisy) numbers of rows. A high
#: quantile keeps almost every row of most units (little bias) while the noise grows only linearly in
#: the bound (Amin et al. 2019 discuss the trade-off).
AUTO_QUANTILE = 0.9
#: Largest bound ``max_rows="auto"`` may choose (the histogram of rows per unit is capped here).
AUTO_MAX_ROWS = 1024
#: The bounds ``max_rows="auto"`` chooses among: half-octave steps 1, 2, 3, 4, 6, 8, 12, 16, 23, ...,
#: 1024 (21 values). Units are counted per step (a unit with ``j`` rows in the smallest step
#: ``>= j``), so the noisy histogram has 21 cells whatever the data: few cells, little noise.
AUTO_STEPS: tuple[int, ...] = tuple(sorted({min(AUTO_MAX_ROWS, int(math.ceil(2 ** (i / 2)))) for i in range(21)}))
#: Largest public bound accepted (a unit with more rows than this is truncated to it).
MAX_BOUND = 1 << 20


@dataclass(frozen=True)
class UnitBounds:
    """The privacy unit of a release and the public bounds on each unit's contribution.

    Attributes
    ----------
    column : hashable
        The column holding the unit of every row.
    max_rows : int or None
        At most this many rows per unit (``None`` with the cells scheme, or before ``"auto"``
        has chosen it).
    max_cells, max_rows_per_cell : int or None
        At most ``max_cells`` distinct cells per unit and ``max_rows_per_cell`` rows in each.
    auto : bool
        ``max_rows="auto"``: the bound is chosen privately with :data:`AUTO_SHARE` of the loss.
    """

    column: Any
    max_rows: int | None = None
    max_cells: int | None = None
    max_rows_per_cell: int | None = None
    auto: bool = False

    @property
    def scheme(self) -> str:
        """``"rows"`` (``max_rows``) or ``"cells"`` (``max_cells`` and ``max_rows_per_cell``)."""
        return "cells" if self.max_cells is not None else "rows"

    def with_max_rows(self, k: int) -> "UnitBounds":
        """These bounds with ``max_rows`` chosen (after ``"auto"``)."""
        return replace(self, max_rows=int(k))

    @property
    def row_bound(self) -> int:
        """Most rows one unit keeps: ``max_rows``, or ``max_cells * max_rows_per_cell``."""
        if self.scheme == "cells":
            return int(self.max_cells) * int(self.max_rows_per_cell)  # type: ignore[arg-type]
        if self.max_rows is None:
            raise ValueError("max_rows='auto' has not chosen its bound yet")
        return int(self.max_rows)

    def cells_touched(self) -> int:
        """Most distinct cells (groups) one unit's kept rows can touch: ``max_rows``, or ``max_cells``."""
        return int(self.max_cells) if self.scheme == "cells" else self.row_bound  # type: ignore[arg-type]

    def histogram_sensitivity(self) -> Sensitivity:
        """How far one unit moves a flat histogram of the cells."""
        return self.level_sensitivity(1)

    def level_sensitivity(self, cells_per_node: int) -> Sensitivity:
        """How far one unit moves a histogram of nodes that each cover ``cells_per_node`` cells.

        Notes
        -----
        Rows: ``L1 = k`` and ``L2 = k`` (all ``k`` rows may fall in one node).
        Cells: ``L1 = c r``; in L2 the worst case packs the unit's ``c`` cells
        into as few nodes as possible, ``q = c // m`` full nodes of ``m r`` and
        one of ``(c mod m) r``: ``L2**2 = r**2 (q m**2 + (c mod m)**2)``, which
        is ``c r**2`` for a flat histogram (``m = 1``) and ``(c r)**2`` once a
        node covers ``c`` cells.
        """
        if self.scheme == "rows":
            k = self.row_bound
            return Sensitivity(Fraction(k), Fraction(k * k))
        c, r, m = int(self.max_cells), int(self.max_rows_per_cell), max(int(cells_per_node), 1)  # type: ignore[arg-type]
        q, rem = divmod(c, m)
        return Sensitivity(Fraction(c * r), Fraction(r * r * (q * m * m + rem * rem)))

    def per_row_loss(self, loss: PrivacyLoss) -> PrivacyLoss:
        """The loss a row-level mechanism must run at for ``loss`` on units (group privacy).

        A mechanism that is epsilon-DP for one-row neighbours is ``k epsilon``-DP
        for neighbours ``k`` rows apart (Dwork and Roth, Theorem 2.2), and
        ``k**2 rho``-zCDP in zCDP: running it at ``loss / k`` (``/ k**2``) gives
        ``loss`` for units of at most ``k`` rows. Methods whose every
        measurement is a count of disjoint sets (AHP, DPCube, DAWA, the grids)
        get exactly the noise of calibrating each measurement to sensitivity ``k``.
        """
        return loss.for_unit_sensitivity(self.group_sensitivity())

    def group_sensitivity(self) -> Sensitivity:
        """``L1 = k``, ``L2 = k`` for ``k`` = :attr:`row_bound`: what :meth:`per_row_loss` calibrates for.

        A count of a block of cells can move by all ``k`` rows of a unit (its ``c`` cells inside one
        block under ``max_cells``), so this is the sensitivity of a disjoint-count measurement of blocks
        (AHP's clusters, DPCube's partitions, DAWA's buckets, the grids' cells).
        """
        k = self.row_bound
        return Sensitivity(Fraction(k), Fraction(k * k))

    def describe(self) -> dict[str, Any]:
        """JSON-friendly record for results and the ledger."""
        out: dict[str, Any] = {"privacy_unit": str(self.column)}
        if self.scheme == "cells":
            out.update(max_cells=self.max_cells, max_rows_per_cell=self.max_rows_per_cell)
        else:
            out["max_rows"] = "auto" if self.auto and self.max_rows is None else self.max_rows
        if self.auto:
            out.update(max_rows_auto_share=str(AUTO_SHARE), max_rows_auto_quantile=AUTO_QUANTILE)
        return out


#: The release arguments that name the privacy unit and bound its contribution, in signature order.
UNIT_ARGUMENTS = ("privacy_unit", "max_rows", "max_cells", "max_rows_per_cell")


@dataclass(frozen=True)
class UnitArguments:
    """The privacy-unit arguments of a release call as the caller gave them (public, not yet checked).

    The release's entry function gathers its four keyword arguments into this one object and hands it
    down; :meth:`bounds` checks them against the frame's column labels and builds the
    :class:`UnitBounds` once, where the release knows which columns the unit may not be.
    """

    privacy_unit: Any = None
    max_rows: Any = None
    max_cells: Any = None
    max_rows_per_cell: Any = None

    def bounds(self, columns: Any, reserved: tuple[Any, ...] = ()) -> UnitBounds | None:
        """The checked :class:`UnitBounds` (``None``: one row is one unit); see :func:`unit_bounds`."""
        return unit_bounds(columns, self.privacy_unit, max_rows=self.max_rows, max_cells=self.max_cells,
                           max_rows_per_cell=self.max_rows_per_cell, reserved=reserved)


def _bound(value: Any, name: str) -> int:
    number = integer_in(value, 1, MAX_BOUND)
    if number is None:
        raise ParameterError(f"The '{name}' parameter must be a positive integer (a public bound on each "
                             f"unit's contribution) of at most {MAX_BOUND:,}. Got {safe_repr(value)}.")
    return number


def _is_label_of(label: Any, labels: list[Any]) -> bool:
    """``label in labels``, False when a comparison raises (pd.NA == 'a' has no truth value)."""
    try:
        return label in labels
    except Exception:  # noqa: BLE001 - a public label whose __eq__ raises or has no truth value
        return False


def unit_bounds(columns: Any, privacy_unit: Any = None, *, max_rows: Any = None, max_cells: Any = None,
                max_rows_per_cell: Any = None, reserved: tuple[Any, ...] = ()) -> UnitBounds | None:
    """Check the privacy-unit arguments of a release (public: the frame's column labels and the bounds).

    Parameters
    ----------
    columns : sequence
        The frame's column labels (never its values).
    privacy_unit : hashable, optional
        The unit column; ``None``: one row is one unit (no bounds may be given).
    max_rows : int or "auto", optional
        At most this many rows per unit.
    max_cells, max_rows_per_cell : int, optional
        Together: at most ``max_cells`` distinct cells per unit, ``max_rows_per_cell`` rows in each.
    reserved : tuple
        Column labels the unit may not be (the released columns themselves).

    Returns
    -------
    UnitBounds or None

    Raises
    ------
    ParameterError
        For a unit column not in the frame, missing or conflicting bounds, or bounds that are
        not positive integers; all before any charge.
    """
    given = {"max_rows": max_rows, "max_cells": max_cells, "max_rows_per_cell": max_rows_per_cell}
    if privacy_unit is None:
        extra = [k for k, v in given.items() if v is not None]
        if extra:
            raise ParameterError(f"{extra} bound each privacy unit's contribution: pass privacy_unit='<column>' "
                                 f"(e.g. privacy_unit='rider_id') with them, or remove them.")
        return None
    try:
        hash(privacy_unit)
    except Exception as err:  # noqa: BLE001 - unhashable, or a __hash__ that raises anything
        raise ParameterError(f"The 'privacy_unit' parameter must name a column of the frame. Got "
                             f"{safe_repr(privacy_unit)}.") from err
    labels = list(columns)
    if not _is_label_of(privacy_unit, labels):
        raise ParameterError(f"The 'privacy_unit' parameter must name a column of the frame (the column that "
                             f"identifies each person). Got {safe_repr(privacy_unit)}; columns are {safe_repr(labels[:20])}.")
    if sum(1 for c in labels if _is_label_of(c, [privacy_unit])) > 1:
        raise ParameterError(f"The 'privacy_unit' column {safe_repr(privacy_unit)} appears more than once among the "
                             f"frame's columns; rename the duplicates so that it names one column.")
    if _is_label_of(privacy_unit, list(reserved)):
        raise ParameterError(f"The 'privacy_unit' column {safe_repr(privacy_unit)} is also a released column (or a region "
                             f"column of by=); a unit's own id is not a public domain. Release other columns, or "
                             f"pass the column that identifies each person as privacy_unit.")
    if max_rows is not None and (max_cells is not None or max_rows_per_cell is not None):
        raise ParameterError("Pass either max_rows=k, or max_cells=c with max_rows_per_cell=r, not both.")
    if max_rows is None and max_cells is None and max_rows_per_cell is None:
        raise ParameterError(f"privacy_unit={safe_repr(privacy_unit)} needs a public bound on each unit's contribution: "
                             f"max_rows=k (e.g. max_rows=5), max_rows='auto' (chosen privately with "
                             f"{float(AUTO_SHARE):.0%} of the loss), or max_cells=c with max_rows_per_cell=r.")
    if max_rows is not None:
        if isinstance(max_rows, str) and str.__str__(max_rows) == "auto":  # a str subclass's __eq__ is not called
            return UnitBounds(privacy_unit, auto=True)
        return UnitBounds(privacy_unit, max_rows=_bound(max_rows, "max_rows"))
    if max_cells is None or max_rows_per_cell is None:
        raise ParameterError("max_cells and max_rows_per_cell go together: at most max_cells distinct cells per "
                             "unit, max_rows_per_cell rows in each. Pass both.")
    return UnitBounds(privacy_unit, max_cells=_bound(max_cells, "max_cells"),
                      max_rows_per_cell=_bound(max_rows_per_cell, "max_rows_per_cell"))
