"""Table sets by geography, the pandas kernel: every region's maximal marginals of one frame in one pass.

The finest region of a row is one more attribute (attribute 0, coded by
:func:`~pandas_dp.engines.pandas.geography_counts.leaf_positions`: ``-1`` when the
region is not in the public tree, missing, or its coarser location columns
disagree with the tree), so the workload with the region in every table
(:func:`~pandas_dp.algorithms.marginals.geography.region_workload`) is counted
by the table-set kernel (:func:`~pandas_dp.algorithms.marginals.counting.closure_marginals`):
one ``bincount`` per maximal marginal over (region, cells), no loop over rows
or regions. A row out of domain in its region or in any workload column is
dropped from every table of every level, silently and uncounted.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from pandas_dp.algorithms.marginals.counting import closure_marginals
from pandas_dp.algorithms.marginals.workload import Marginal, Workload
from pandas_dp.domain.grid import Grid
from pandas_dp.domain.geography import RegionTree
from pandas_dp.engines.pandas.geography_counts import leaf_positions
from pandas_dp.engines.pandas.marginals import BLOCK_ROWS, attribute_codes

__all__ = ["region_attribute_codes", "region_marginal_counts"]


def region_attribute_codes(frame: pd.DataFrame, tree: RegionTree, dims: Sequence[Grid]) -> list[np.ndarray]:
    """The leaf region's position (attribute 0), then every attribute's code; ``-1`` outside the domain."""
    return [leaf_positions(frame, tree), *attribute_codes(frame, dims)]


def region_marginal_counts(frame: pd.DataFrame, tree: RegionTree, dims: Sequence[Grid], workload: Workload, *,
                           block_rows: int = BLOCK_ROWS) -> dict[Marginal, np.ndarray]:
    """Exact int64 counts of every maximal marginal of ``workload`` (attribute 0: the leaf region).

    Returns arrays shaped ``(n_leaves, *cells)`` keyed by maximal marginal.
    """
    total = {a: np.zeros(workload.shape(a), dtype=np.int64) for a in workload.maximal}
    for start in range(0, len(frame), block_rows):
        part = frame.iloc[start:start + block_rows]
        counted = closure_marginals(region_attribute_codes(part, tree, dims), workload, only=workload.maximal)
        for a in workload.maximal:
            total[a] += counted[a]
    return total
