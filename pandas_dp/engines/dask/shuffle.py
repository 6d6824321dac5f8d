"""The Dask unit-rows primitive: rows coded and bounded where they live; only the survivors meet by unit.

Every partition codes its rows with the feature's pandas function and adds the canonical
64-bit hash of every row's unit and the row's global position. Before any row moves, each
partition keeps only the rows the step can still count
(:func:`~pandas_dp.engines.unit_filters.part_survivors`): rows that are live (a cell, a group,
every attribute in its domain) with a unit, and of those only every unit's ``max_rows`` rows of
smallest key *in that partition* (every (unit, cell) pair's ``max_rows_per_cell`` with the cells
scheme; ``min(rows, L)`` rows per unit for the counting steps of ``max_rows="auto"`` and
``report_dropped``). A row beyond its unit's ``k`` smallest keys in its partition has ``k`` rows
of its unit before it in the frame, so the pandas engine never keeps it either; the kept set is
unchanged (the proof is in :mod:`pandas_dp.engines.pandas.local_bounds`). Units whose rows sit
in one partition are then bounded where they are, and at most ``k`` rows per unit and partition
travel.

The survivors are split by unit hash into ``n_buckets`` numpy buckets (no DataFrame shuffle),
each bucket gathers its share of every partition in partition order (so positions ascend, as
on pandas) and is one :class:`~pandas_dp.engines.primitives.Piece`: the feature's step bounds
its units and counts, exactly as on pandas, and the partial counts are combined in a reduction
tree; only they reach the client. Row keys are a pseudorandom function of the global position
and units are identified by the same hash as on pandas, so the same rows are kept as on the
pandas engine. The global positions need each partition's length: they are computed on the
workers and used only to number the rows; nothing else about the rows reaches the client.
The bound and the sensitivity are those of the pandas engine: every unit keeps the same rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.engines.dask.graph import SPLIT_EVERY, compute_private, dask_module, partitions, share, tree_sum
from pandas_dp.engines.pandas.bounding import unit_codes, unit_hashes
from pandas_dp.engines.primitives import Piece
from pandas_dp.engines.unit_filters import part_survivors

__all__ = ["DaskUnitRows", "MAX_BUCKETS"]

#: Most buckets the surviving rows are split into (each partition sends one share to each bucket).
MAX_BUCKETS = 32

Coded = tuple[tuple[np.ndarray, ...], np.ndarray, np.ndarray]   # (codes, unit hashes, positions)


def _length(part: pd.DataFrame) -> int:
    return len(part)


def _stack(*lengths: int) -> np.ndarray:
    return np.asarray(lengths, dtype=np.int64)


def _split(part: pd.DataFrame, code: Callable[[Any, Any], Sequence[np.ndarray]], public: Any, unit: Any,
           offset: int, position_dtype: str, n_buckets: int, step: Callable[..., Any],
           args: tuple[Any, ...]) -> tuple[Coded, ...]:
    """One partition's surviving coded rows, split by unit hash into ``n_buckets`` shares (runs on a worker).

    Positions travel as ``position_dtype`` (uint32 below ``2**32`` rows: 4 bytes a row fewer).
    """
    codes = [np.asarray(c) for c in code(part, public)]
    hashes = unit_hashes(part[unit])
    positions = np.arange(offset, offset + len(part), dtype=np.dtype(position_dtype))
    keep = np.flatnonzero(part_survivors(step, args, codes, hashes, positions))
    bucket = (hashes[keep] % np.uint64(n_buckets)).astype(np.uint8 if n_buckets <= 256 else np.intp)
    order = keep[np.argsort(bucket, kind="stable")]        # by bucket (a radix sort), positions ascending in each
    edges = np.zeros(n_buckets + 1, dtype=np.int64)
    np.cumsum(np.bincount(bucket, minlength=n_buckets), out=edges[1:])
    codes = [c[order] for c in codes]
    hashes, positions = hashes[order], positions[order]
    return tuple((tuple(c[a:b] for c in codes), hashes[a:b], positions[a:b]) for a, b in zip(edges[:-1], edges[1:]))


def _bucket_step(n_codes: int, step: Callable[..., Any], args: tuple[Any, ...], *shares: Coded) -> Any:
    """``step`` on one bucket: every partition's share of it, in partition order, as a :class:`Piece` (a worker)."""
    codes = tuple(np.concatenate([s[0][i] for s in shares]) for i in range(n_codes))
    hashes = np.concatenate([s[1] for s in shares])
    positions = np.concatenate([s[2] for s in shares])
    return step(Piece(codes, unit_codes(hashes), hashes, positions), *args)


class DaskUnitRows:
    """The rows of a Dask frame, coded, filtered and gathered by unit for each step (lazily; private)."""

    def __init__(self, frame: Any, columns: Sequence[Any], code: Callable[[Any, Any], Sequence[np.ndarray]],
                 public: Any, unit: Any, n_codes: int, split_every: int = SPLIT_EVERY) -> None:
        dask = dask_module()
        self.n_codes, self.split_every, self.code, self.unit = n_codes, split_every, code, unit
        self.parts = partitions(frame[list(columns)])
        lengths = compute_private(dask.delayed(_stack, pure=True)(
            *[dask.delayed(_length, pure=True)(p) for p in self.parts]))
        self.offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        self.position_dtype = "uint32" if int(np.sum(lengths)) < 2**32 else "uint64"
        self.public = share(public)

    def reduce(self, step: Callable[..., Any], args: tuple[Any, ...], combine: Callable[..., Any],
               finish: Callable[[Any], Any] | None = None) -> Any:
        """``finish(combine(step(piece, *args) for every bucket))``, computed on the workers."""
        dask = dask_module()
        n_buckets = min(len(self.parts), MAX_BUCKETS)
        split = dask.delayed(_split, pure=True, nout=n_buckets)
        shares = [split(p, self.code, self.public, self.unit, int(o), self.position_dtype, n_buckets, step, args)
                  for p, o in zip(self.parts, self.offsets)]
        run = dask.delayed(_bucket_step, pure=True)
        total = tree_sum([run(self.n_codes, step, args, *(s[b] for s in shares)) for b in range(n_buckets)],
                         split_every=self.split_every, combine=combine)
        if finish is not None:
            total = dask.delayed(finish, pure=True)(total)
        return compute_private(total)
