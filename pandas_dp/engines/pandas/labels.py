"""Key discovery on the pandas engine: every label present in a column and its exact count.

The labels are the column's distinct values under the label-text rules of
:mod:`pandas_dp.domain.label_text` (one label per value class, numbers spelt one way);
missing, non-scalar and unhashable values are out of domain, dropped and uncounted.
With a privacy unit, the present labels in their public order become an internal
domain (never shown) on which the engine bounds every unit as for a histogram
(:func:`bounded_label_counts`), so every engine keeps the same rows for the same key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.domain.categories import CategoryDomain
from pandas_dp.domain.grid import Grid
from pandas_dp.domain.label_text import labels_and_codes, public_order
from pandas_dp.privacy.units import UnitBounds

__all__ = ["label_counts", "bounded_label_counts"]


def label_counts(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """``(labels, counts)``: the distinct labels of ``values`` and their exact int64 counts."""
    labels, codes = labels_and_codes(values)
    return labels, np.bincount(codes[codes >= 0], minlength=labels.size).astype(np.int64)


def bounded_label_counts(frame: Any, column: Any, labels: np.ndarray, bounds: UnitBounds, key: bytes,
                         coded_rows: Callable[[Any, Grid, UnitBounds], Any]) -> tuple[np.ndarray, np.ndarray]:
    """``(labels, counts)`` after bounding every unit: ``labels`` (the present ones) put in their public
    order become a one-column domain, coded and bounded by the engine's ``coded_rows``."""
    labels = labels[public_order(labels)]
    if labels.size == 0:
        return labels, np.zeros(0, dtype=np.int64)
    domain = CategoryDomain(column, pd.Index(labels, dtype=labels.dtype, tupleize_cols=False))
    coded = coded_rows(frame, Grid((domain,)), bounds)
    return labels, np.asarray(coded.counts(bounds, key), dtype=np.int64)
