"""Key discovery, the pandas kernel: every label present in a column and its exact count.

The labels are the column's distinct values under the label-text rules of
:mod:`pandas_dp.domain.label_text` (one label per value class, numbers spelt one way);
missing, non-scalar and unhashable values are out of domain, dropped and uncounted.
With a privacy unit, the engine bounds every unit on the labels found
(:meth:`~pandas_dp.engines.features.CountingEngine.label_counts`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pandas_dp.domain.label_text import labels_and_codes

__all__ = ["label_counts"]


def label_counts(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """``(labels, counts)``: the distinct labels of ``values`` and their exact int64 counts."""
    labels, codes = labels_and_codes(values)
    return labels, np.bincount(codes[codes >= 0], minlength=labels.size).astype(np.int64)
