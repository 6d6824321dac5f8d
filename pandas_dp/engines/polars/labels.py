"""Key discovery on the Polars engine: every batch counts its labels, the partial counts merged by label.

Each batch is counted with the pandas engine's rules
(:func:`pandas_dp.engines.pandas.labels.label_counts`); the per-batch (label, count) lists, the
size of the labels present, are merged by the same label-text rules
(:func:`pandas_dp.domain.label_text.labels_and_codes`), so the counts equal the pandas engine's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.domain.label_text import labels_and_codes
from pandas_dp.engines.pandas.labels import label_counts as pandas_label_counts
from pandas_dp.engines.polars.frame import selected
from pandas_dp.engines.polars.stream import stream_reduce

__all__ = ["label_counts"]


def _batch_counts(piece: pd.Series, public: None) -> pd.DataFrame:
    labels, counts = pandas_label_counts(piece)
    return pd.DataFrame({"label": pd.Series(labels, dtype=object), "n": counts})


def _stack(*parts: pd.DataFrame) -> pd.DataFrame:
    """The partial (label, count) lists, merged by the label-text rules (equal labels add up)."""
    both = pd.concat(parts, ignore_index=True)
    labels, codes = labels_and_codes(both["label"].infer_objects())
    ok = codes >= 0
    counts = np.zeros(labels.size, dtype=np.int64)
    np.add.at(counts, codes[ok], both["n"].to_numpy(dtype=np.int64)[ok])
    return pd.DataFrame({"label": pd.Series(labels, dtype=object), "n": counts})


def label_counts(values: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(labels, counts)`` of a Polars column: one counting pass per batch, the partial counts merged."""
    merged = _stack(stream_reduce(selected(values, None), _batch_counts, None, _stack, series=True))
    labels, codes = labels_and_codes(merged["label"].infer_objects())
    ok = codes >= 0
    counts = np.zeros(labels.size, dtype=np.int64)
    np.add.at(counts, codes[ok], merged["n"].to_numpy(dtype=np.int64)[ok])
    return labels, counts
