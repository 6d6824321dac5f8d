"""Key discovery on the Dask engine: every partition counts its labels, the partial counts merged by label.

Each partition is counted with the pandas engine's rules
(:func:`pandas_dp.engines.pandas.labels.label_counts`); the per-partition (label, count)
frames, the size of the labels present, are merged on the client by the same label-text rules
(:func:`pandas_dp.domain.label_text.labels_and_codes`), so the counts equal the pandas engine's.
The graph is read and computed as every other Dask count is (:func:`~pandas_dp.engines.dask.graph.compute_private`
over :func:`~pandas_dp.engines.dask.sources.readable`): a token in a numeric column of a CSV read is one dropped
row, and any other failure of the user's graph is reported without its text.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.domain.label_text import labels_and_codes
from pandas_dp.engines.dask.graph import compute_private
from pandas_dp.engines.dask.sources import readable
from pandas_dp.engines.pandas.labels import label_counts as pandas_label_counts

__all__ = ["label_counts"]


def _partition_counts(part: pd.Series) -> pd.DataFrame:
    labels, counts = pandas_label_counts(part)
    return pd.DataFrame({"label": pd.Series(labels, dtype=object), "n": counts})


def label_counts(values: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(labels, counts)`` of a Dask Series: one counting pass per partition, the partial counts merged."""
    meta = pd.DataFrame({"label": pd.Series([], dtype=object), "n": pd.Series([], dtype=np.int64)})
    merged = compute_private(readable(values).map_partitions(_partition_counts, meta=meta))
    labels, codes = labels_and_codes(merged["label"].infer_objects())
    ok = codes >= 0
    counts = np.bincount(codes[ok], weights=merged["n"].to_numpy()[ok], minlength=labels.size)
    return labels, np.rint(counts).astype(np.int64)
