"""Result objects of releases (frozen dataclasses)."""

from __future__ import annotations

from .adaptive import DAWAHistogram, GridHistogram
from .count_of_counts import CountOfCounts
from .data_dependent import AHPHistogram, DPCubeHistogram
from .geography import GeographyHistogram
from .hierarchical import HierarchicalHistogram
from .histogram import Histogram, RangeAnswer
from .unattributed import UnattributedHistogram

__all__ = ["Histogram", "RangeAnswer", "HierarchicalHistogram", "AHPHistogram", "DPCubeHistogram",
           "DAWAHistogram", "GridHistogram", "CountOfCounts", "UnattributedHistogram", "GeographyHistogram"]
