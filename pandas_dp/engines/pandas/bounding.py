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

from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.domain.labels import positions
from pandas_dp.domain.unit_values import canonical_unit_hashes
from pandas_dp.privacy.units import AUTO_STEPS, UnitBounds

__all__ = ["group_cells", "row_keys", "bound_codes", "bounded_cell_counts", "contribution_histogram",
           "kept_and_dropped", "unit_hashes", "unit_codes", "units_of", "index_dtype"]


_CHUNK = 1 << 19  # positions per AES call (8 MiB of keystream)


def _ascending(values: np.ndarray) -> bool:
    """Whether ``values`` never decrease (checked a chunk at a time: no temporary of the full size)."""
    windows = (values[a:a + _CHUNK + 1] for a in range(0, values.size, _CHUNK))  # overlapping by one
    return all(bool(np.all(w[1:] >= w[:-1])) for w in windows)


def row_keys(key: bytes, positions: np.ndarray, *, tweak: int = 0) -> np.ndarray:
    """The first 64 bits of ``AES-256_key(tweak * 2**64 + position)`` for every position (uint64).

    The block is the 128-bit big-endian integer ``tweak * 2**64 + position``. Sorted positions that
    cover most of their span are computed as one AES-CTR keystream per chunk (the same blocks,
    faster); others block by block (ECB), a chunk at a time. Either way the key of a position does
    not depend on the other positions asked for. ``positions`` are non-negative integers of any
    integer dtype (int32 row positions are read in place, never widened as a whole).
    """
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    pos = np.asarray(positions)
    if pos.dtype.kind not in "iu":
        pos = pos.astype(np.uint64)
    out = np.empty(pos.size, dtype=np.uint64)
    if pos.size == 0:
        return out
    lo, hi = int(pos.min()), int(pos.max())
    if hi - lo < 2 * pos.size and _ascending(pos):
        # Bounds in the positions' own dtype: searchsorted would otherwise widen all of them to int64.
        bound = pos.dtype if hi + 1 <= np.iinfo(pos.dtype).max else np.dtype(np.uint64)
        for start in range(lo, hi + 1, _CHUNK):
            stop = min(start + _CHUNK, hi + 1)
            nonce = ((tweak << 64) | start).to_bytes(16, "big")
            stream = Cipher(algorithms.AES(key), modes.CTR(nonce)).encryptor().update(bytes(16 * (stop - start)))
            words = np.frombuffer(stream, dtype=np.uint64)[0::2]
            a, b = (int(i) for i in np.searchsorted(pos, np.array([start, stop], dtype=bound)))
            sub = pos[a:b]
            offset = (sub - np.uint64(start)) if sub.dtype == np.uint64 else (sub.astype(np.int64) - start)
            out[a:b] = words[offset.astype(np.int64, copy=False)]
        return out
    encryptor = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    for a in range(0, pos.size, _CHUNK):
        sub = pos[a:a + _CHUNK]
        blocks = np.empty((sub.size, 2), dtype=">u8")
        blocks[:, 0] = tweak
        blocks[:, 1] = sub
        out[a:a + sub.size] = np.frombuffer(encryptor.update(blocks.tobytes()), dtype=np.uint64)[0::2]
    return out


def _exact_keep(groups: np.ndarray, keys: np.ndarray, limit: int) -> np.ndarray:
    """Keep the ``limit`` smallest full 64-bit keys of every group (a lexicographic sort; ties by position)."""
    order = np.lexsort((np.arange(groups.size), keys, groups))
    sorted_groups = groups[order]
    rank = np.empty(groups.size, dtype=np.int64)
    rank[order] = np.arange(groups.size) - np.searchsorted(sorted_groups, sorted_groups, side="left")
    return rank < limit


_ROWS = 1 << 20  # rows per chunk of the passes over every row (their temporaries stay this small)


def index_dtype(n: int) -> np.dtype[Any]:
    """int32 for positions and codes below ``n`` when they fit (half the memory per row), else int64."""
    return np.dtype(np.int32) if n < 2**31 - 1 else np.dtype(np.int64)


def _live(groups: np.ndarray, cells: np.ndarray | None, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``a:b``: their groups and which of them count (a group, and a cell when cells are given)."""
    g = groups[a:b]
    live = g >= 0
    if cells is not None:
        live &= cells[a:b] >= 0
    return g, live


def _live_bincount(codes: np.ndarray, groups: np.ndarray, cells: np.ndarray | None, minlength: int) -> np.ndarray:
    """``np.bincount(codes[live])`` (int64) for the live rows of :func:`_live`, a chunk at a time.

    ``np.bincount`` widens its input to intp: on the whole array that is a copy of 8 bytes per row.
    """
    out = np.zeros(minlength, dtype=np.int64)
    for a in range(0, codes.size, _ROWS):
        g, live = _live(groups, cells, a, a + _ROWS)
        part = np.bincount(codes[a:a + _ROWS][live], minlength=minlength)
        if part.size > out.size:
            part[:out.size] += out
            out = part
        else:
            out[:part.size] += part
    return out


def _dropped_rows(groups: np.ndarray, cells: np.ndarray | None, limit: int, keys_of: Any) -> np.ndarray:
    """Ascending positions of the rows that the ``limit`` members of smallest key of their group leave out.

    A row is a member of its group ``groups[i]`` when it is live (a group ``>= 0`` and, when ``cells``
    are given, a cell ``>= 0``); other rows are never dropped. Only the members of groups over their
    limit get keys (``keys_of(positions)``). They are ranked by one sort of (group, key) packed in a
    64-bit word: the ``limit``-th smallest packed value of each group is its threshold. Packing drops
    low bits of the keys, so members can tie at a threshold: the (rare) groups that would keep too
    many are re-ranked on the full keys.

    Memory: the positions of the members of groups over their limit (4 bytes each below ``2**31``
    rows) and two 64-bit words each (the packed keys and their sorted copy); the group of a member
    is read back from its packed word, and every pass over all rows goes a chunk at a time.
    """
    n = groups.size
    index = index_dtype(n)
    none = np.zeros(0, dtype=index)
    if n == 0 or int(groups.max()) < 0:
        return none
    sizes = _live_bincount(groups, groups, cells, int(groups.max()) + 1)
    heavy = np.flatnonzero(sizes > limit).astype(index)
    if heavy.size == 0:
        return none
    is_heavy = np.zeros(sizes.size + 1, dtype=bool)   # the extra last entry is read by group -1: False
    is_heavy[heavy] = True
    member = np.empty(n, dtype=bool)
    for a in range(0, n, _ROWS):
        g, live = _live(groups, cells, a, a + _ROWS)
        np.logical_and(is_heavy[g], live, out=member[a:a + _ROWS])
    over = np.empty(int(np.count_nonzero(member)), dtype=index)
    filled = 0
    for a in range(0, n, _ROWS):
        rows = np.flatnonzero(member[a:a + _ROWS])
        over[filled:filled + rows.size] = rows + a
        filled += rows.size
    del member, is_heavy
    bits = max(int(heavy[-1]).bit_length(), 1)
    if bits > 40:
        return over[~_exact_keep(groups[over], keys_of(over), limit)]
    # Each heavy group's limit-th member in the sort: its start (the members of the groups before it) + limit - 1.
    at = np.cumsum(sizes[heavy], dtype=index)
    at -= sizes[heavy].astype(index)
    at += limit - 1
    groups_size = sizes.size
    del sizes
    shift = np.uint64(64 - bits)
    packed = keys_of(over)                              # becomes (group, key) packed, in place
    for a in range(0, over.size, _ROWS):
        part = packed[a:a + _ROWS]
        part >>= np.uint64(bits)
        part |= groups[over[a:a + _ROWS]].astype(np.uint64) << shift
    ranked = np.sort(packed)
    at_limit = ranked[at]
    # A tie at a threshold (probability about limit * 2**-(64-bits) per group) shows as the next member of
    # the group (every heavy group has one) sorting equal to it: that group would keep too many.
    at += 1
    tied = heavy[ranked[at] == at_limit]
    del ranked, at
    threshold = np.zeros(groups_size, dtype=np.uint64)
    threshold[heavy] = at_limit
    del at_limit
    kept = np.empty(over.size, dtype=bool)
    for a in range(0, over.size, _ROWS):
        part = packed[a:a + _ROWS]
        np.less_equal(part, threshold[(part >> shift).astype(np.intp)], out=kept[a:a + _ROWS])
    if tied.size:
        rows = np.flatnonzero(np.isin((packed >> shift).astype(np.intp), tied))
        kept[rows] = _exact_keep(groups[over[rows]], keys_of(over[rows]), limit)
    del packed
    return over[~kept]


def _rows_keys(key: bytes, positions: np.ndarray | None) -> Any:
    """``keys_of`` of the rows scheme: the key of each row's position in the frame."""
    if positions is None:
        return lambda rows: row_keys(key, rows)
    return lambda rows: row_keys(key, positions[rows])


def bound_codes(cells: np.ndarray, units: np.ndarray, bounds: UnitBounds, key: bytes, *,
                positions: np.ndarray | None = None, unit_hashes: np.ndarray | None = None,
                cell_ids: np.ndarray | None = None) -> np.ndarray:
    """Cell codes with every row beyond its unit's bounds set to -1 (out of domain).

    Parameters
    ----------
    cells : ndarray of int32 or int64
        Cell code of every row, -1 outside the domain.
    units : ndarray of int32 or int64
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
    pos = None if positions is None else np.asarray(positions, dtype=np.uint64)
    out = np.where(units >= 0, cells, -1)
    if bounds.scheme == "rows":
        out[_dropped_rows(units, cells, bounds.row_bound, _rows_keys(key, pos))] = -1
    else:
        out[_cells_dropped_rows(cells, units, bounds, key, pos, unit_hashes, cell_ids)] = -1
    return out


def _live_positions(units: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Ascending positions of the rows with a unit and a cell (4 bytes each below ``2**31`` rows)."""
    n = cells.size
    mask = np.empty(n, dtype=bool)
    for a in range(0, n, _ROWS):
        np.logical_and(units[a:a + _ROWS] >= 0, cells[a:a + _ROWS] >= 0, out=mask[a:a + _ROWS])
    live = np.empty(int(np.count_nonzero(mask)), dtype=index_dtype(n))
    filled = 0
    for a in range(0, n, _ROWS):
        rows = np.flatnonzero(mask[a:a + _ROWS])
        live[filled:filled + rows.size] = rows + a
        filled += rows.size
    return live


def _cells_dropped_rows(cells: np.ndarray, units: np.ndarray, bounds: UnitBounds, key: bytes,
                        positions: np.ndarray | None, unit_hashes: np.ndarray | None,
                        cell_ids: np.ndarray | None) -> np.ndarray:
    """Ascending positions of the rows the cells scheme drops: at most r rows in each (unit, cell) pair
    (random rows), then at most c pairs per unit (random pairs). See :func:`bound_codes`."""
    live = _live_positions(units, cells)
    if live.size == 0:
        return live
    width = np.int64(int(cells.max()) + 2)
    pair_value = np.empty(live.size, dtype=np.int64)
    for a in range(0, live.size, _ROWS):
        rows = live[a:a + _ROWS]
        np.multiply(units[rows].astype(np.int64), width, out=pair_value[a:a + _ROWS])
        pair_value[a:a + _ROWS] += cells[rows]
    codes, pairs = pd.factorize(pair_value)
    del pair_value
    pair_of_row = codes.astype(index_dtype(pairs.size), copy=False)
    del codes
    pair_count = pairs.size
    del pairs
    dropped_in_pair = _dropped_rows(pair_of_row, None, int(bounds.max_rows_per_cell),  # type: ignore[arg-type]
                                    _rows_keys(key, live if positions is None else positions[live]))
    first_row = np.full(pair_count, -1, dtype=np.int64)
    first_row[pair_of_row[::-1]] = live[::-1]       # one row of every pair (any one)
    pair_unit = units[first_row]
    hashes = unit_hashes[first_row] if unit_hashes is not None else pair_unit.astype(np.uint64)
    ids = cells if cell_ids is None else cell_ids
    pair_key_input = hashes ^ (ids[first_row].astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    dropped_pairs = _dropped_rows(pair_unit, None, int(bounds.max_cells),  # type: ignore[arg-type]
                                  lambda idx: row_keys(key, pair_key_input[idx], tweak=1))
    pair_dropped = np.zeros(pair_count, dtype=bool)
    pair_dropped[dropped_pairs] = True
    drop = np.zeros(live.size, dtype=bool)
    drop[dropped_in_pair] = True
    for a in range(0, live.size, _ROWS):
        drop[a:a + _ROWS] |= pair_dropped[pair_of_row[a:a + _ROWS]]
    return live[drop]


def contribution_histogram(cells: np.ndarray, units: np.ndarray, steps: tuple[int, ...] = AUTO_STEPS) -> np.ndarray:
    """``C[i]``: the number of units whose rows in the domain are at most ``steps[i]`` and above ``steps[i-1]``.

    The last cell also holds every unit above the last step. One unit falls in one cell: adding
    or removing a unit moves this histogram by 1 (L1 and L2).
    """
    rows = _live_bincount(units, units, cells, 0)
    rows = rows[rows > 0]
    cell = np.minimum(np.searchsorted(np.asarray(steps), rows, side="left"), len(steps) - 1)
    return np.bincount(cell, minlength=len(steps)).astype(np.int64)


def kept_and_dropped(cells: np.ndarray, units: np.ndarray, k: int) -> np.ndarray:
    """``[sum_u min(r_u, k), sum_u min(max(r_u - k, 0), k)]`` over the units' rows ``r_u`` in the domain (int64).

    The rows ``max_rows=k`` keeps, and the rows it drops with each unit's count capped at ``k``. One
    unit with ``r`` rows moves the pair by ``(min(r, k), min(max(r - k, 0), k))``: at most ``k`` each
    and ``min(r, 2k) <= 2k`` in L1, so the pair has sensitivity ``L1 = 2k`` and ``L2**2 = 2k**2``.
    """
    rows = _live_bincount(units, units, cells, 0)
    rows = rows[rows > 0].astype(np.int64)
    return np.array([np.minimum(rows, k).sum(), np.clip(rows - k, 0, k).sum()], dtype=np.int64)


def bounded_cell_counts(cells: np.ndarray, units: np.ndarray, bounds: UnitBounds, key: bytes, size: int, *,
                        positions: np.ndarray | None = None, unit_hashes: np.ndarray | None = None) -> np.ndarray:
    """Exact counts per cell (``size`` cells) after bounding every unit's contribution (see :func:`bound_codes`).

    The live rows' counts less those of the rows the bounds drop (no array of kept codes; the passes
    over every row go a chunk at a time).
    """
    pos = None if positions is None else np.asarray(positions, dtype=np.uint64)
    if bounds.scheme == "rows":
        drop = _dropped_rows(units, cells, bounds.row_bound, _rows_keys(key, pos))
    else:
        drop = _cells_dropped_rows(cells, units, bounds, key, pos, unit_hashes, None)
    counts = _live_bincount(cells, units, cells, size)
    for a in range(0, drop.size, _ROWS):
        counts -= np.bincount(cells[drop[a:a + _ROWS]], minlength=size)
    return counts


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
    codes = np.full(hashes.size, -1, dtype=index_dtype(hashes.size))
    ok = hashes != 0
    if ok.all():
        codes[...] = pd.factorize(hashes)[0]
    elif ok.any():
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


def units_of(values: pd.Series, *, hashes: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """Unit codes of every row (-1: no unit), and their hashes when asked (the cells scheme's pair keys).

    A numeric column groups by value directly (one hash-table pass; the same grouping as by
    :func:`unit_hashes`, but for 64-bit collisions); other columns group by the hash of each value.
    """
    dtype = values.dtype
    if not hashes and isinstance(dtype, np.dtype) and dtype.kind in "ib":
        codes = pd.factorize(values.to_numpy(), use_na_sentinel=True)[0]
        return codes.astype(index_dtype(codes.size), copy=False), None
    unit_hash = unit_hashes(values)
    return unit_codes(unit_hash), unit_hash
