"""The published table sets' former module path, kept so pickles written before it moved still load.

``PublishedTables`` and ``PublishedHistogram`` are defined in :mod:`pandas_dp.results.marginals`, beside the
``MarginalTables`` they subclass and that return them (``nonnegative()``, ``integer()``); a pickle made by an
earlier release of pandas_dp names this module, and unpickling finds the same classes here.
"""

from __future__ import annotations

from pandas_dp.results.marginals import PublishedHistogram, PublishedTables

__all__ = ["PublishedTables", "PublishedHistogram"]
