"""Key discovery on the Spark engine: every partition counts its labels, the partial counts merged by label.

Each piece is counted with the pandas engine's rules
(:func:`pandas_dp.engines.pandas.labels.label_counts`); the (label, count) frames, the size of
the labels present, are merged on the driver by the same label-text rules
(:func:`pandas_dp.domain.label_text.labels_and_codes`), so the counts equal the pandas engine's.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pandas_dp.domain.label_text import labels_and_codes
from pandas_dp.engines.pandas.labels import label_counts as pandas_label_counts
from pandas_dp.engines.spark.frame import SparkColumn
from pandas_dp.engines.spark.reduce import reduce_rows

__all__ = ["label_counts", "piece_label_counts", "concat_label_counts", "merged_label_counts"]


def piece_label_counts(piece: pd.Series, public: None = None) -> pd.DataFrame:
    """The labels of one piece and their counts, as a (label, n) frame."""
    labels, counts = pandas_label_counts(piece)
    return pd.DataFrame({"label": pd.Series(labels, dtype=object), "n": counts})


def concat_label_counts(*parts: pd.DataFrame) -> pd.DataFrame:
    """(label, n) frames one after another (merged once, on the driver)."""
    return pd.concat(parts, ignore_index=True)


def merged_label_counts(counts: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """``(labels, counts)``: equal labels (by the label-text rules) add up."""
    labels, codes = labels_and_codes(counts["label"].infer_objects())
    ok = codes >= 0
    total = np.bincount(codes[ok], weights=counts["n"].to_numpy()[ok], minlength=labels.size)
    return labels, np.rint(total).astype(np.int64)


def label_counts(values: SparkColumn) -> tuple[np.ndarray, np.ndarray]:
    """``(labels, counts)`` of one column of a Spark frame."""
    result: tuple[np.ndarray, np.ndarray] = reduce_rows(values, None, piece_label_counts, None,
                                                         concat_label_counts, merged_label_counts)
    return result
