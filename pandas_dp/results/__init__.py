"""Result objects of releases (frozen dataclasses)."""

from __future__ import annotations

from pandas_dp.results.adaptive import DAWAHistogram, GridHistogram
from pandas_dp.results.count_of_counts import CountOfCounts
from pandas_dp.results.data_dependent import AHPHistogram, DPCubeHistogram
from pandas_dp.results.geography import GeographyHistogram
from pandas_dp.results.marginals import MarginalHistogram, MarginalTables, PublishedTables
from pandas_dp.results.geography_marginals import GeographyPublishedTables
from pandas_dp.results.hierarchical import HierarchicalHistogram
from pandas_dp.results.histogram import Histogram, RangeAnswer
from pandas_dp.results.unattributed import UnattributedHistogram

__all__ = ["Histogram", "RangeAnswer", "HierarchicalHistogram", "AHPHistogram", "DPCubeHistogram",
           "DAWAHistogram", "GridHistogram", "CountOfCounts", "UnattributedHistogram", "GeographyHistogram",
           "MarginalTables", "MarginalHistogram", "PublishedTables", "GeographyPublishedTables"]
