"""Table sets on the Dask engine: every partition counts every maximal marginal in one pass.

Each partition codes every workload column once and counts every maximal
marginal of the closure (the pandas engine's
:func:`~pandas_dp.engines.pandas.marginals.marginal_counts` on one pandas
partition); the per-partition tables are summed in a reduction tree, and only
the summed tables (their public shapes) reach the client, which sums them down,
measures and reconstructs. A value is coded by the column's public dimension
whatever the partition's dtype (int64, float64 or object), so partitions of
different dtypes give the counts of the concatenated rows.

With a privacy unit the coded rows are shuffled on the unit's hash, as for
histograms (:mod:`pandas_dp.engines.dask.bounding`), and each partition bounds
its units and counts: the same rows are kept as on the pandas engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.algorithms.marginals.counting import closure_marginals
from pandas_dp.algorithms.marginals.workload import Marginal, Workload
from pandas_dp.domain.grid import Grid
from pandas_dp.engines.dask.bounding import shuffled
from pandas_dp.engines.dask.counts import (check_known_categories, compute_private, dask_module, partitions, share,
                                           tree_sum)
from pandas_dp.engines.pandas.bounding import bound_codes, unit_codes, unit_hashes
from pandas_dp.engines.pandas.marginals import add_tables, attribute_codes, in_domain, marginal_counts as pandas_counts
from pandas_dp.privacy.units import UnitBounds

__all__ = ["marginal_counts", "DaskCodedMarginalRows", "coded_marginal_rows"]


@dataclass(frozen=True)
class _Public:
    """The public inputs every partition needs, shared as one object (a distributed scheduler scatters a
    tuple item by item)."""

    dims: tuple[Grid, ...]
    workload: Workload


def _columns(dims: Sequence[Grid]) -> list[Any]:
    return [dim.columns[0] for dim in dims]


def _partition_tables(part: pd.DataFrame, public: _Public) -> dict[Marginal, np.ndarray]:
    """Exact counts of every maximal marginal of one pandas partition (runs on a worker)."""
    return pandas_counts(part, public.dims, public.workload)


def marginal_counts(frame: Any, dims: Sequence[Grid], workload: Workload) -> dict[Marginal, np.ndarray]:
    """Exact int64 counts of every maximal marginal of a Dask ``frame`` (equal to the pandas engine's)."""
    dask = dask_module()
    for dim in dims:
        check_known_categories(frame, dim)
    parts = partitions(frame[_columns(dims)])
    shared = share(_Public(tuple(dims), workload))
    count = dask.delayed(_partition_tables, pure=True)
    total = tree_sum([count(p, shared) for p in parts], combine=add_tables)
    return {a: np.asarray(t, dtype=np.int64) for a, t in compute_private(total).items()}


def _code_partition(part: pd.DataFrame, public: _Public, column: Any, offset: int) -> pd.DataFrame:
    codes = attribute_codes(part, public.dims)
    out = {f"c{i}": c for i, c in enumerate(codes)}
    out["unit"] = unit_hashes(part[column])
    out["pos"] = np.arange(offset, offset + len(part), dtype=np.uint64)
    return pd.DataFrame(out)


def _bounded_tables(part: pd.DataFrame, workload: Workload, bounds: UnitBounds,
                    key: bytes) -> dict[Marginal, np.ndarray]:
    codes = [part[f"c{i}"].to_numpy(dtype=np.int64) for i in range(len(workload.sizes))]
    hashes = part["unit"].to_numpy(dtype=np.uint64)
    live = np.where(in_domain(codes, workload.sizes), 0, -1).astype(np.int64)
    kept = bound_codes(live, unit_codes(hashes), bounds, key, positions=part["pos"].to_numpy(dtype=np.uint64),
                       unit_hashes=hashes) >= 0
    if not codes:
        return {a: np.zeros(workload.shape(a), dtype=np.int64) for a in workload.maximal}
    return closure_marginals([np.where(kept, c, -1) for c in codes], workload, only=workload.maximal)


class DaskCodedMarginalRows:
    """The rows of a Dask frame coded by attribute and unit, shuffled by unit (lazily; private)."""

    def __init__(self, frame: Any, dims: Sequence[Grid], workload: Workload, bounds: UnitBounds) -> None:
        dask = dask_module()
        for dim in dims:
            check_known_categories(frame, dim)
        self.workload = workload
        shared = share(_Public(tuple(dims), workload))
        code = dask.delayed(_code_partition, pure=True)
        read = [*_columns(dims), bounds.column]  # the unit is never a released column (unit_bounds' reserved)
        meta = pd.DataFrame({**{f"c{i}": np.array([], dtype=np.int64) for i in range(len(dims))},
                             "unit": np.array([], dtype=np.uint64), "pos": np.array([], dtype=np.uint64)})
        self.shuffled = shuffled(frame, read, lambda p, offset: code(p, shared, bounds.column, offset), meta=meta)

    def marginals(self, bounds: UnitBounds, key: bytes) -> dict[Marginal, np.ndarray]:
        """Exact counts of every maximal marginal after bounding every unit (summed on the workers)."""
        dask = dask_module()
        count = dask.delayed(_bounded_tables, pure=True)
        parts = partitions(self.shuffled)
        total = tree_sum([count(p, self.workload, bounds, key) for p in parts], combine=add_tables)
        return {a: np.asarray(t, dtype=np.int64) for a, t in compute_private(total).items()}


def coded_marginal_rows(frame: Any, dims: Sequence[Grid], workload: Workload,
                        bounds: UnitBounds) -> DaskCodedMarginalRows:
    """Code the rows of a Dask frame by attribute and unit (lazy; the graph is guarded like every count)."""
    return DaskCodedMarginalRows(frame, dims, workload, bounds)
