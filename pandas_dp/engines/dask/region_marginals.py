"""Table sets by geography on the Dask engine: every partition counts every region's maximal marginals.

Each partition codes its rows by leaf region and attribute with the pandas
engine's rules (:mod:`pandas_dp.engines.pandas.region_marginals`: a row out of
domain is dropped in its partition, silently) and counts every maximal
marginal over (leaf region, cells); the per-partition tables are summed in a
reduction tree and only the sums (public shapes) reach the client. With a
privacy unit the coded rows are shuffled on the unit's hash and bounded per
partition, keeping the same rows as the pandas engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.algorithms.marginals.workload import Marginal, Workload
from pandas_dp.domain.grid import Grid
from pandas_dp.domain.regions import RegionTree
from pandas_dp.engines.dask.bounding import shuffled
from pandas_dp.engines.dask.counts import (check_known_categories, compute_private, dask_module, partitions, share,
                                           tree_sum)
from pandas_dp.engines.dask.marginals import _bounded_tables
from pandas_dp.engines.pandas.bounding import unit_hashes
from pandas_dp.engines.pandas.marginals import add_tables
from pandas_dp.engines.pandas.region_marginals import region_attribute_codes, region_marginal_counts as pandas_counts
from pandas_dp.privacy.units import UnitBounds

__all__ = ["region_marginal_counts", "DaskCodedRegionMarginalRows", "coded_region_marginal_rows"]


@dataclass(frozen=True, eq=False)
class _Public:
    """The public inputs every partition needs, shared as one object."""

    tree: RegionTree
    dims: tuple[Grid, ...]
    workload: Workload


def _read(tree: RegionTree, dims: Sequence[Grid]) -> list[Any]:
    return list(dict.fromkeys([*tree.located, *(dim.columns[0] for dim in dims)]))


def _partition_tables(part: pd.DataFrame, public: _Public) -> dict[Marginal, np.ndarray]:
    return pandas_counts(part, public.tree, public.dims, public.workload)


def region_marginal_counts(frame: Any, tree: RegionTree, dims: Sequence[Grid],
                           workload: Workload) -> dict[Marginal, np.ndarray]:
    """Exact int64 counts of every maximal marginal of a Dask ``frame`` (equal to the pandas engine's)."""
    dask = dask_module()
    for dim in dims:
        check_known_categories(frame, dim)
    parts = partitions(frame[_read(tree, dims)])
    shared = share(_Public(tree, tuple(dims), workload))
    count = dask.delayed(_partition_tables, pure=True)
    total = tree_sum([count(p, shared) for p in parts], combine=add_tables)
    return {a: np.asarray(t, dtype=np.int64) for a, t in compute_private(total).items()}


def _code_partition(part: pd.DataFrame, public: _Public, column: Any, offset: int) -> pd.DataFrame:
    codes = region_attribute_codes(part, public.tree, public.dims)
    out: dict[str, np.ndarray] = {f"c{i}": c for i, c in enumerate(codes)}
    out["unit"] = unit_hashes(part[column])
    out["pos"] = np.arange(offset, offset + len(part), dtype=np.uint64)
    return pd.DataFrame(out)


class DaskCodedRegionMarginalRows:
    """Rows of a Dask frame coded by leaf region, attribute and unit, shuffled by unit (lazily; private)."""

    def __init__(self, frame: Any, tree: RegionTree, dims: Sequence[Grid], workload: Workload,
                 bounds: UnitBounds) -> None:
        dask = dask_module()
        for dim in dims:
            check_known_categories(frame, dim)
        self.workload = workload
        shared = share(_Public(tree, tuple(dims), workload))
        code = dask.delayed(_code_partition, pure=True)
        meta = pd.DataFrame({**{f"c{i}": np.array([], dtype=np.int64) for i in range(len(dims) + 1)},
                             "unit": np.array([], dtype=np.uint64), "pos": np.array([], dtype=np.uint64)})
        read = [*_read(tree, dims), bounds.column]
        self.shuffled = shuffled(frame, read, lambda p, offset: code(p, shared, bounds.column, offset), meta=meta)

    def marginals(self, bounds: UnitBounds, key: bytes) -> dict[Marginal, np.ndarray]:
        """Exact counts of every maximal marginal after bounding every unit (summed on the workers)."""
        dask = dask_module()
        count = dask.delayed(_bounded_tables, pure=True)
        total = tree_sum([count(p, self.workload, bounds, key) for p in partitions(self.shuffled)],
                         combine=add_tables)
        return {a: np.asarray(t, dtype=np.int64) for a, t in compute_private(total).items()}


def coded_region_marginal_rows(frame: Any, tree: RegionTree, dims: Sequence[Grid], workload: Workload,
                               bounds: UnitBounds) -> DaskCodedRegionMarginalRows:
    """Code the rows of a Dask frame by leaf region, attribute and unit (lazy)."""
    return DaskCodedRegionMarginalRows(frame, tree, dims, workload, bounds)
