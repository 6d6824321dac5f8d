"""The published table sets by geography's former module path, kept so pickles written before it moved still load.

``GeographyPublishedTables`` is defined in :mod:`pandas_dp.results.geography_marginals`, beside the
``GeographyMarginalTables`` it subclasses and that returns it; a pickle made by an earlier release of pandas_dp
names this module, and unpickling finds the same class here.
"""

from __future__ import annotations

from pandas_dp.results.geography_marginals import GeographyPublishedTables

__all__ = ["GeographyPublishedTables"]
