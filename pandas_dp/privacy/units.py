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
  cumulative share reaches :data:`AUTO_QUANTILE`. ``max_rows=AutoMaxRows(share=...,
  quantile=...)`` is the same rule with a public share and quantile of the
  caller's (:class:`AutoMaxRows`): the choice is within one step of its target
  in 90% of seeds only when the units above the quantile number about
  ``ln 9 / (share * epsilon)`` or more, so few units or a small epsilon need a
  larger share (``benchmarks/bench_auto_max_rows.py`` prints the spread).

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
from pandas_dp._utils.rational import safe_repr, to_fraction
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import PrivacyLoss, Sensitivity

__all__ = ["UnitBounds", "UnitArguments", "UNIT_ARGUMENTS", "unit_bounds", "AutoMaxRows", "AUTO_SHARE", "AUTO_QUANTILE",
           "AUTO_MAX_ROWS", "AUTO_STEPS", "MAX_BOUND"]

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
#: Largest share of the loss :class:`AutoMaxRows` may spend choosing the bound (the release needs the rest).
MAX_AUTO_SHARE = Fraction(1, 2)


def _share(value: Any) -> Fraction | None:
    """``value`` as an exact fraction in ``(0, MAX_AUTO_SHARE]`` (:func:`to_fraction`: floats and numpy
    floats by their shortest repr), else None."""
    try:
        share = to_fraction(value, name="share")
    except ParameterError:
        return None
    return share if share <= MAX_AUTO_SHARE else None


@dataclass(frozen=True)
class AutoMaxRows:
    """``max_rows=AutoMaxRows(share=..., quantile=...)``: the bound chosen privately, with the caller's public share.

    ``max_rows="auto"`` is ``AutoMaxRows()``: :data:`AUTO_SHARE` (1/20) of the release's loss buys a
    noisy histogram of the units' numbers of rows on the steps :data:`AUTO_STEPS`, and the bound is
    the smallest step whose noisy cumulative count reaches ``quantile`` of the total. The choice is
    stable (within one step of its target in 90% of seeds) when the units above the quantile number
    about ``ln 9 / (share * epsilon)`` or more (the noise of the steps around the target must be
    below that tail): about 45 units at epsilon 1 and the default share, 450 at epsilon 0.1. With
    fewer, a larger share buys the stability (``benchmarks/bench_auto_max_rows.py`` prints the
    spread for a share and an epsilon), or a public ``max_rows=k`` needs none.

    Parameters
    ----------
    share : number, default 1/20
        Share of the release's loss spent choosing the bound, in ``(0, 1/2]``; exact (a float is read
        by its shortest repr, ``0.2`` is ``1/5``).
    quantile : float, default 0.9
        The quantile of the units' numbers of rows the bound aims at, in ``(0, 1]``.

    Examples
    --------
    >>> import pandas_dp as pdp
    >>> pdp.AutoMaxRows(share=0.2)
    AutoMaxRows(share=Fraction(1, 5), quantile=0.9)
    """

    share: Fraction = AUTO_SHARE
    quantile: float = AUTO_QUANTILE

    def __post_init__(self) -> None:
        share = _share(self.share)
        if share is None:
            raise ParameterError(f"The 'share' of AutoMaxRows must be a number in (0, 1/2]: the share of the "
                                 f"release's loss spent choosing max_rows (the default is 1/20). Got "
                                 f"{safe_repr(self.share)}.")
        quantile = self.quantile
        if isinstance(quantile, bool) or not isinstance(quantile, (int, float)) or not 0 < quantile <= 1:
            raise ParameterError(f"The 'quantile' of AutoMaxRows must be a number in (0, 1] (the default 0.9 "
                                 f"bounds nine units in ten without truncation). Got {safe_repr(quantile)}.")
        object.__setattr__(self, "share", share)
        object.__setattr__(self, "quantile", float(quantile))


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
        ``max_rows="auto"`` (or an :class:`AutoMaxRows`): the bound is chosen privately.
    auto_share : Fraction
        The share of the loss that choice spends (:data:`AUTO_SHARE` for ``"auto"``).
    auto_quantile : float
        The quantile of the units' numbers of rows it aims at (:data:`AUTO_QUANTILE` for ``"auto"``).
    """

    column: Any
    max_rows: int | None = None
    max_cells: int | None = None
    max_rows_per_cell: int | None = None
    auto: bool = False
    auto_share: Fraction = AUTO_SHARE
    auto_quantile: float = AUTO_QUANTILE

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
            out.update(max_rows_auto_share=str(self.auto_share), max_rows_auto_quantile=self.auto_quantile)
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
    max_rows : int, "auto" or AutoMaxRows, optional
        At most this many rows per unit; ``"auto"`` or :class:`AutoMaxRows`: chosen privately.
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
                             f"{float(AUTO_SHARE):.0%} of the loss; AutoMaxRows(share=...) for another share), or "
                             f"max_cells=c with max_rows_per_cell=r.")
    if max_rows is not None:
        if isinstance(max_rows, str) and str.__str__(max_rows) == "auto":  # a str subclass's __eq__ is not called
            return UnitBounds(privacy_unit, auto=True)
        if isinstance(max_rows, AutoMaxRows):
            return UnitBounds(privacy_unit, auto=True, auto_share=max_rows.share, auto_quantile=max_rows.quantile)
        rows = integer_in(max_rows, 1, MAX_BOUND)
        if rows is None:
            raise ParameterError(f"The 'max_rows' parameter must be a positive integer (a public bound on each "
                                 f"unit's rows) of at most {MAX_BOUND:,}, 'auto' (chosen privately with "
                                 f"{float(AUTO_SHARE):.0%} of the loss) or AutoMaxRows(share=...). Got "
                                 f"{safe_repr(max_rows)}.")
        return UnitBounds(privacy_unit, max_rows=rows)
    if max_cells is None or max_rows_per_cell is None:
        raise ParameterError("max_cells and max_rows_per_cell go together: at most max_cells distinct cells per "
                             "unit, max_rows_per_cell rows in each. Pass both.")
    return UnitBounds(privacy_unit, max_cells=_bound(max_cells, "max_cells"),
                      max_rows_per_cell=_bound(max_rows_per_cell, "max_rows_per_cell"))
