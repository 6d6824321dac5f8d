"""Contribution bounding: at most ``k`` rows per privacy unit, chosen at random (pandas engine).

A release with a privacy unit codes every row (its cell on the public grid,
and its unit), then keeps, for every unit, a uniformly random subset of its
rows within the public bounds, then counts. Rows outside the domain and rows
whose unit is missing or not a plain scalar are dropped first, silently; how
many rows anything dropped is never revealed.

Randomness. Each row gets a 64-bit key ``AES-256_K(position)`` where ``K`` is
drawn once per release from the release's randomness (the secure source by
default) and ``position`` is the row's position in the frame: a pseudorandom
function of the row's position, so the pandas and Dask engines (which see the
rows in partitions) draw the same key for the same row. A unit keeps its rows
of smallest keys: a uniformly random subset, independent of row order and of
other units (keys collide with probability below ``2**-40`` per release;
collisions are broken by the sort). The cells scheme also ranks each unit's
(unit, cell) pairs by a key of the pair (``AES-256_K'`` of a hash of the unit's
value and the cell) and keeps the ``max_cells`` smallest.

Everything is vectorized: one factorization of the units, one sort of the
rows of the units that are over their bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.domain.labels import factorize, positions
from pandas_dp.domain.grid import Grid
from pandas_dp.engines.pandas.counts import cell_codes
from pandas_dp.domain.unit_values import canonical_unit_hashes
from pandas_dp.privacy.units import AUTO_STEPS, UnitBounds

__all__ = ["CodedRows", "coded_rows", "coded_group_rows", "group_cells", "row_keys", "bound_codes", "contribution_histogram",
           "unit_hashes", "unit_codes"]


_CHUNK = 1 << 21  # positions per AES call (32 MiB of keystream)


def row_keys(key: bytes, positions: np.ndarray, *, tweak: int = 0) -> np.ndarray:
    """The first 64 bits of ``AES-256_key(tweak * 2**64 + position)`` for every position (uint64).

    The block is the 128-bit big-endian integer ``tweak * 2**64 + position``. Sorted positions that
    cover most of their span are computed as one AES-CTR keystream per chunk (the same blocks,
    faster); others block by block (ECB). Either way the key of a position does not depend on the
    other positions asked for.
    """
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    pos = np.asarray(positions, dtype=np.uint64)
    out = np.empty(pos.size, dtype=np.uint64)
    if pos.size == 0:
        return out
    lo, hi = int(pos.min()), int(pos.max())
    if hi - lo < 2 * pos.size and bool(np.all(pos[1:] >= pos[:-1])):
        for start in range(lo, hi + 1, _CHUNK):
            stop = min(start + _CHUNK, hi + 1)
            nonce = ((tweak << 64) | start).to_bytes(16, "big")
            stream = Cipher(algorithms.AES(key), modes.CTR(nonce)).encryptor().update(bytes(16 * (stop - start)))
            words = np.frombuffer(stream, dtype=np.uint64)[0::2]
            a, b = np.searchsorted(pos, [start, stop])
            out[a:b] = words[(pos[a:b] - np.uint64(start)).astype(np.int64)]
        return out
    blocks = np.empty((pos.size, 2), dtype=">u8")
    blocks[:, 0] = tweak
    blocks[:, 1] = pos
    encrypted = Cipher(algorithms.AES(key), modes.ECB()).encryptor().update(blocks.tobytes())
    return np.frombuffer(encrypted, dtype=np.uint64)[0::2].copy()


def _exact_keep(groups: np.ndarray, keys: np.ndarray, limit: int) -> np.ndarray:
    """Keep the ``limit`` smallest full 64-bit keys of every group (a lexicographic sort; ties by position)."""
    order = np.lexsort((np.arange(groups.size), keys, groups))
    sorted_groups = groups[order]
    rank = np.empty(groups.size, dtype=np.int64)
    rank[order] = np.arange(groups.size) - np.searchsorted(sorted_groups, sorted_groups, side="left")
    return rank < limit


def _keep_at_most(groups: np.ndarray, limit: int, keys_of: Any) -> np.ndarray:
    """Boolean mask keeping, in every group, the ``limit`` members of smallest key.

    Only the members of groups over their limit get keys (``keys_of(members)``). The members are
    ranked by one sort of (group, key) packed in a 64-bit word: the ``limit``-th smallest packed
    value of each group is its threshold. Packing drops low bits of the keys, so members can tie
    at a threshold: the (rare) groups that would keep too many are re-ranked on the full keys.
    """
    keep = np.ones(groups.size, dtype=bool)
    if groups.size == 0:
        return keep
    sizes = np.bincount(groups)
    over = np.flatnonzero(sizes[groups] > limit)
    if over.size == 0:
        return keep
    g = groups[over]
    keys = keys_of(over)
    bits = max(int(g.max()).bit_length(), 1)
    if bits > 40:
        keep[over[~_exact_keep(g, keys, limit)]] = False
        return keep
    packed = (g.astype(np.uint64) << np.uint64(64 - bits)) | (keys >> np.uint64(bits))
    ranked = np.sort(packed)
    heavy = np.flatnonzero(sizes > limit)
    first = np.concatenate([[0], np.cumsum(sizes[heavy])[:-1]])  # each heavy group's start in the sort
    threshold = np.zeros(sizes.size, dtype=np.uint64)
    threshold[heavy] = ranked[first + limit - 1]
    kept = packed <= threshold[g]
    del packed, ranked
    tied = np.flatnonzero(np.bincount(g[kept], minlength=sizes.size) > limit)
    if tied.size:  # ties at a threshold (probability about limit * 2**-(64-bits) per group)
        rows = np.flatnonzero(np.isin(g, tied))
        kept[rows] = _exact_keep(g[rows], keys[rows], limit)
    keep[over[~kept]] = False
    return keep


def bound_codes(cells: np.ndarray, units: np.ndarray, bounds: UnitBounds, key: bytes, *,
                positions: np.ndarray | None = None, unit_hashes: np.ndarray | None = None,
                cell_ids: np.ndarray | None = None) -> np.ndarray:
    """Cell codes with every row beyond its unit's bounds set to -1 (out of domain).

    Parameters
    ----------
    cells : ndarray of int64
        Cell code of every row, -1 outside the domain.
    units : ndarray of int64
        Unit code of every row (``0..``), -1 when the unit is missing or odd.
    bounds : UnitBounds
        ``max_rows`` chosen, or the cells scheme.
    key : bytes
        The release's 32-byte key (:func:`pandas_dp.noise.words.release_key`).
    positions : ndarray, optional
        Each row's position in the frame (default ``0..n-1``).
    unit_hashes : ndarray of uint64, optional
        A hash of every row's unit value (cells scheme: keys of (unit, cell) pairs).
    cell_ids : ndarray, optional
        A stable identity of every row's cell for those keys when ``cells`` are local codes
        (groups without public ids: their hash); default the cell codes themselves.
    """
    n = cells.size
    pos = np.arange(n, dtype=np.uint64) if positions is None else np.asarray(positions, dtype=np.uint64)
    out = np.where(units >= 0, cells, -1)
    live = np.flatnonzero(out >= 0)
    if bounds.scheme == "rows":
        keep = _keep_at_most(units[live], bounds.row_bound, lambda idx: row_keys(key, pos[live[idx]]))
        out[live[~keep]] = -1
        return out
    if live.size == 0:
        return out
    # Cells scheme: at most r rows in each (unit, cell) pair, then at most c pairs per unit.
    pair_of_row, pairs = pd.factorize(units[live].astype(np.int64) * np.int64(cells.max() + 2) + cells[live])
    keep = _keep_at_most(pair_of_row.astype(np.int64), int(bounds.max_rows_per_cell),  # type: ignore[arg-type]
                         lambda idx: row_keys(key, pos[live[idx]]))
    first_row = np.full(pairs.size, -1, dtype=np.int64)
    first_row[pair_of_row[::-1]] = live[::-1]       # one row of every pair (any one)
    pair_unit = units[first_row]
    hashes = unit_hashes[first_row] if unit_hashes is not None else pair_unit.astype(np.uint64)
    ids = cells if cell_ids is None else cell_ids
    pair_key_input = hashes ^ (ids[first_row].astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    keep_pair = _keep_at_most(pair_unit, int(bounds.max_cells),  # type: ignore[arg-type]
                              lambda idx: row_keys(key, pair_key_input[idx], tweak=1))
    keep &= keep_pair[pair_of_row]
    out[live[~keep]] = -1
    return out


def contribution_histogram(cells: np.ndarray, units: np.ndarray, steps: tuple[int, ...] = AUTO_STEPS) -> np.ndarray:
    """``C[i]``: the number of units whose rows in the domain are at most ``steps[i]`` and above ``steps[i-1]``.

    The last cell also holds every unit above the last step. One unit falls in one cell: adding
    or removing a unit moves this histogram by 1 (L1 and L2).
    """
    live = units[(cells >= 0) & (units >= 0)]
    rows = np.bincount(live) if live.size else np.zeros(0, dtype=np.int64)
    rows = rows[rows > 0]
    cell = np.minimum(np.searchsorted(np.asarray(steps), rows, side="left"), len(steps) - 1)
    return np.bincount(cell, minlength=len(steps)).astype(np.int64)


@dataclass(frozen=True)
class CodedRows:
    """The private rows of a frame coded on a public grid and by unit (never leaves the release)."""

    cells: np.ndarray
    units: np.ndarray
    unit_hashes: np.ndarray | None
    size: int
    positions: np.ndarray | None = None
    cell_ids: np.ndarray | None = None

    def counts(self, bounds: UnitBounds, key: bytes) -> np.ndarray:
        """Exact counts per cell after bounding every unit's contribution."""
        kept = bound_codes(self.cells, self.units, bounds, key, positions=self.positions,
                           unit_hashes=self.unit_hashes, cell_ids=self.cell_ids)
        return np.bincount(kept + 1, minlength=self.size + 1)[1:].astype(np.int64)

    def contributions(self) -> np.ndarray:
        """Units per step of rows in the domain (for ``max_rows="auto"``, :data:`~pandas_dp.privacy.units.AUTO_STEPS`)."""
        return contribution_histogram(self.cells, self.units)


def unit_hashes(values: pd.Series) -> np.ndarray:
    """A 64-bit hash of every row's unit value; 0 where the unit is missing or not a plain scalar.

    The hash is of one canonical value per unit (:func:`pandas_dp.domain.unit_values.canonical_unit_hashes`),
    never of the value in its column's dtype: 17, 17.0, ``np.int64(17)``, ``"17"`` and ``"17.0"``
    are one unit whether the column holding them is int64, float64, object or string. So the same
    unit gets the same hash whichever engine, partition or file holds the row, and an odd row that
    changes its column's dtype changes no other unit's hash. Units are identified by this hash on
    both engines (two units whose hashes collide, chance about ``n**2 / 2**65``, are bounded
    together: each still contributes at most its bound).
    """
    return canonical_unit_hashes(values)


def unit_codes(hashes: np.ndarray) -> np.ndarray:
    """Unit codes ``0..`` from unit hashes; -1 where there is no unit (hash 0)."""
    codes = np.full(hashes.size, -1, dtype=np.int64)
    ok = hashes != 0
    if ok.any():
        codes[ok] = pd.factorize(hashes[ok])[0]
    return codes


def group_cells(values: pd.Series, ids: pd.Index | None) -> tuple[np.ndarray, np.ndarray]:
    """Group code of every row and a stable identity of its group.

    With public ids: the position among them (-1 for an unknown, missing or odd id), which is its
    own identity. Without: groups are identified by :func:`unit_hashes` of their value, as units
    are, so both engines agree; the code is local (0..), the identity the hash.
    """
    if ids is not None:
        codes = np.asarray(positions(ids, values), dtype=np.int64)
        return codes, codes
    hashes = unit_hashes(values)
    return unit_codes(hashes), hashes


def coded_group_rows(frame: pd.DataFrame, group: Any, ids: pd.Index | None, bounds: UnitBounds) -> CodedRows:
    """Rows coded by group (the unattributed histogram's cells) and by unit (pandas engine)."""
    cells, identity = group_cells(frame[group], ids)
    size = len(ids) if ids is not None else (int(cells.max()) + 1 if cells.size else 0)
    hashes = unit_hashes(frame[bounds.column])
    return CodedRows(cells, unit_codes(hashes), hashes, size, cell_ids=identity)


def units_of(values: pd.Series, *, hashes: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """Unit codes of every row (-1: no unit), and their hashes when asked (the cells scheme's pair keys).

    A numeric column groups by value directly (one hash-table pass; the same grouping as by
    :func:`unit_hashes`, but for 64-bit collisions); other columns group by the hash of each value.
    """
    dtype = values.dtype
    if not hashes and isinstance(dtype, np.dtype) and dtype.kind in "ib":
        return pd.factorize(values.to_numpy(), use_na_sentinel=True)[0].astype(np.int64), None
    unit_hash = unit_hashes(values)
    return unit_codes(unit_hash), unit_hash


def coded_rows(frame: pd.DataFrame, grid: Grid, bounds: UnitBounds) -> CodedRows:
    """Code every row of ``frame`` on ``grid`` and by unit (pandas engine); never raises on a value."""
    cells = cell_codes(frame, grid)
    units, hashes = units_of(frame[bounds.column], hashes=bounds.scheme == "cells")
    return CodedRows(np.asarray(cells, dtype=np.int64), units, hashes, grid.size)
