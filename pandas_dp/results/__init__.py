"""Result objects of releases (frozen dataclasses)."""

from __future__ import annotations

from .histogram import Histogram, RangeAnswer

__all__ = ["Histogram", "RangeAnswer"]
