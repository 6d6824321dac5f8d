"""Behaviour shared by every result object."""

from __future__ import annotations

from statistics import NormalDist
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ParameterError

__all__ = ["FrozenRelease", "EstimatesView", "normal_quantile"]


def normal_quantile(confidence_level: float) -> float:
    """Two-sided normal quantile ``z`` of a confidence level, validated."""
    if isinstance(confidence_level, bool) or not isinstance(confidence_level, (int, float)) \
            or not 0 < confidence_level < 1:
        raise ParameterError(f"The 'confidence_level' parameter must be a number in (0, 1). "
                             f"Got {confidence_level!r}; pass e.g. confidence_level=0.95.")
    return NormalDist().inv_cdf(0.5 + confidence_level / 2)


class FrozenRelease:
    """A released result is immutable: its ``params`` are read-only and copies share it.

    Sharing on copy lets a release ride in ``DataFrame.attrs``, which pandas
    deep-copies on every derived frame.
    """

    params: Any

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    def __copy__(self) -> Any:
        return self

    def __deepcopy__(self, memo: dict) -> Any:
        return self


class EstimatesView:
    """Pandas views of a release made of ``counts`` (estimates) and their ``variance``."""

    counts: pd.Series
    variance: pd.Series

    @property
    def std_error(self) -> pd.Series:
        """Standard error of every estimate, ``sqrt(variance)``."""
        return np.sqrt(self.variance).rename("std_error")

    def to_series(self) -> pd.Series:
        """The released estimates as a new Series."""
        return self.counts.copy()

    def to_frame(self) -> pd.DataFrame:
        """One row per estimate: ``estimate``, ``variance``, ``std_error``."""
        return pd.DataFrame({"estimate": self.counts, "variance": self.variance, "std_error": self.std_error})

    def confidence_interval(self, confidence_level: float = 0.95) -> pd.DataFrame:
        """Normal-approximation intervals ``estimate ± z * std_error``: columns ``lower``, ``upper``."""
        half = normal_quantile(confidence_level) * self.std_error
        return pd.DataFrame({"lower": self.counts - half, "upper": self.counts + half})
