"""The Dask unit-rows primitive: rows coded where they live, shuffled so that each unit's rows meet in one partition.

Every partition codes its rows with the feature's pandas function, adds the canonical
64-bit hash of every row's unit and the row's global position, and the coded rows are
shuffled on the unit hash. Each shuffled partition is then one
:class:`~pandas_dp.engines.primitives.Piece`: the feature's step bounds its units and
counts, and the partial counts are combined in a reduction tree; only they reach the client.
Row keys are a pseudorandom function of the global position and units are identified by
the same hash as on pandas, so the same rows are kept as on the pandas engine. The global
positions need each partition's length: they are computed on the workers and used only to
number the rows; nothing else about the rows reaches the client.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.engines.dask.graph import SPLIT_EVERY, compute_private, dask_module, partitions, share, tree_sum
from pandas_dp.engines.pandas.bounding import unit_codes, unit_hashes
from pandas_dp.engines.primitives import Piece

__all__ = ["DaskUnitRows"]


def _length(part: pd.DataFrame) -> int:
    return len(part)


def _stack(*lengths: int) -> np.ndarray:
    return np.asarray(lengths, dtype=np.int64)


def _code_partition(part: pd.DataFrame, code: Callable[[Any, Any], Sequence[np.ndarray]], public: Any,
                    unit: Any, offset: int) -> pd.DataFrame:
    """One partition's rows as (c0.., unit hash, global position) (runs on a worker)."""
    out: dict[str, np.ndarray] = {f"c{i}": np.asarray(c, dtype=np.int64) for i, c in enumerate(code(part, public))}
    out["unit"] = unit_hashes(part[unit])
    out["pos"] = np.arange(offset, offset + len(part), dtype=np.uint64)
    return pd.DataFrame(out)


def _piece_step(part: pd.DataFrame, n_codes: int, step: Callable[..., Any], *args: Any) -> Any:
    """``step`` on one shuffled partition, as a :class:`Piece` (runs on a worker)."""
    hashes = part["unit"].to_numpy(dtype=np.uint64)
    piece = Piece(tuple(part[f"c{i}"].to_numpy(dtype=np.int64) for i in range(n_codes)), unit_codes(hashes),
                  hashes, part["pos"].to_numpy(dtype=np.uint64))
    return step(piece, *args)


class DaskUnitRows:
    """The rows of a Dask frame coded and shuffled by unit (lazily; private)."""

    def __init__(self, frame: Any, columns: Sequence[Any], code: Callable[[Any, Any], Sequence[np.ndarray]],
                 public: Any, unit: Any, n_codes: int, split_every: int = SPLIT_EVERY) -> None:
        dask = dask_module()
        import dask.dataframe as dd

        self.n_codes, self.split_every = n_codes, split_every
        parts = partitions(frame[list(columns)])
        lengths = compute_private(dask.delayed(_stack, pure=True)(
            *[dask.delayed(_length, pure=True)(p) for p in parts]))
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        shared = share(public)
        coder = dask.delayed(_code_partition, pure=True)
        coded = [coder(p, code, shared, unit, int(o)) for p, o in zip(parts, offsets)]
        meta = pd.DataFrame({**{f"c{i}": np.array([], dtype=np.int64) for i in range(n_codes)},
                             "unit": np.array([], dtype=np.uint64), "pos": np.array([], dtype=np.uint64)})
        self.shuffled = dd.from_delayed(coded, meta=meta, verify_meta=False).shuffle(on="unit")

    def reduce(self, step: Callable[..., Any], args: tuple[Any, ...], combine: Callable[..., Any],
               finish: Callable[[Any], Any] | None = None) -> Any:
        """``finish(combine(step(piece, *args) for every shuffled partition))``, computed on the workers."""
        dask = dask_module()
        run = dask.delayed(_piece_step, pure=True)
        total = tree_sum([run(p, self.n_codes, step, *args) for p in partitions(self.shuffled)],
                         split_every=self.split_every, combine=combine)
        if finish is not None:
            total = dask.delayed(finish, pure=True)(total)
        return compute_private(total)
