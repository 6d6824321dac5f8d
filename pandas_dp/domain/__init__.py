"""Public domains: everything a release may count on, built from the caller's arguments and public tables.

A domain is never derived from the private frame. The parts, in the order a release uses them:

* :mod:`~pandas_dp.domain.grid`: ``make_grid`` turns ``bins=``/``range=``/``categories=`` into a
  :class:`Grid` of :class:`BinDomain` and :class:`CategoryDomain` axes (the import path
  ``pandas_dp.domain`` re-exports them);
* :mod:`~pandas_dp.domain.edges`, :mod:`~pandas_dp.domain.timevalues`: numeric and date edges;
* :mod:`~pandas_dp.domain.binning`, :mod:`~pandas_dp.domain.numeric_values`,
  :mod:`~pandas_dp.domain.labels`, :mod:`~pandas_dp.domain.categories`: private values to cell codes,
  never raising on a value (out of domain -> dropped);
* :mod:`~pandas_dp.domain.geography`, :mod:`~pandas_dp.domain.schema`: public geographies and the
  pandera schemas of the public Hierarchy and Groups tables.
"""

from __future__ import annotations

from pandas_dp.domain.grid import MAX_CELLS, BinDomain, CategoryDomain, Grid, make_grid, numeric_values

__all__ = ["BinDomain", "CategoryDomain", "Grid", "make_grid", "numeric_values", "MAX_CELLS"]
