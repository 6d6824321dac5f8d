"""Synthetic rows drawn from a released histogram (post-processing: free of privacy cost).

Every function here reads only released (noisy, post-processed) estimates and
the public domain, never the private data, so its output is covered by the
release's privacy guarantee and spends no budget. The randomness used to draw
rows is not a privacy mechanism: ``rng=None`` uses
``numpy.random.default_rng()`` (seeded from operating-system entropy), and a
predictable generator would reveal nothing beyond the release itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.domain.grid import BinDomain, Grid
from pandas_dp._utils.checks import integer_in
from pandas_dp._utils.rational import safe_repr
from pandas_dp.errors import ParameterError
from pandas_dp.results._checks import MAX_SAMPLE_ROWS, check_count, check_rows

__all__ = ["sampling_rng", "cell_counts", "draw_cells", "grid_rows", "persons_rows", "group_sizes_rows"]


def sampling_rng(rng: Any) -> np.random.Generator:
    """The generator used to draw synthetic rows: ``rng`` or a fresh OS-seeded one."""
    if rng is None:
        return np.random.default_rng()
    if isinstance(rng, np.random.Generator):
        return rng
    raise ParameterError(f"The 'rng' parameter of sample() must be None or a numpy.random.Generator. "
                         f"Got {type(rng).__name__}; pass e.g. rng=numpy.random.default_rng(0).")


def cell_counts(estimates: Any) -> np.ndarray:
    """Released estimates as non-negative integer counts: missing -> 0, clipped at 0, rounded."""
    x = np.nan_to_num(np.asarray(estimates, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    return np.rint(np.clip(x, 0.0, None)).astype(np.int64)


def _check_n(n: Any) -> int | None:
    if n is None:
        return None
    if integer_in(n, 0) is None:
        raise ParameterError(f"The 'n' parameter of sample() must be a non-negative integer or None "
                             f"(None: the released total). Got {safe_repr(n)}.")
    return check_count(n, "n", "sample()", high=MAX_SAMPLE_ROWS)


def draw_cells(counts: np.ndarray, n: Any, rng: np.random.Generator) -> np.ndarray:
    """Cell index of every synthetic row, in random order.

    Parameters
    ----------
    counts : ndarray of int64
        Non-negative count per cell (see :func:`cell_counts`).
    n : int or None
        ``None``: exactly ``counts[c]`` rows of every cell ``c`` (the released
        table itself). An integer: ``n`` independent draws with
        ``P(cell c) = counts[c] / counts.sum()``.
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of int64

    Notes
    -----
    Draws are exact integer arithmetic: a uniform integer ``u`` in
    ``[0, total)`` falls in cell ``c`` when ``C[c-1] <= u < C[c]`` with ``C``
    the cumulative counts, so ``P(c) = counts[c] / total`` exactly.
    """
    size = _check_n(n)
    if size is None:
        check_rows(int(counts.sum(dtype=np.float64)), "sample() of the released table")
        codes = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
        return rng.permutation(codes)
    if counts.sum(dtype=np.float64) >= 2.0**62:  # int64 cumulative counts would overflow
        raise ParameterError("Cannot sample from this release: its released counts add up to more than 2**62 (a "
                             "loss far too small for the data). Sample from a release with a larger loss.")
    total = int(counts.sum())
    if total == 0 and size > 0:
        raise ParameterError(f"Cannot draw n={size} rows: every released estimate is 0 after clipping "
                             f"negatives, so there is no distribution to sample. Use n=0 or a release "
                             f"with more budget.")
    if size == 0:
        return np.zeros(0, dtype=np.int64)
    cum = np.cumsum(counts)
    return np.searchsorted(cum, rng.integers(0, total, size=size), side="right").astype(np.int64)


def _bin_values(dim: BinDomain, idx: np.ndarray, rng: np.random.Generator) -> Any:
    """Values uniform in ``[low, high)`` of each drawn bin: floats, or dates / durations of the domain's unit."""
    if dim.kind != "number":
        keys = dim.keys
        drawn = rng.integers(keys[idx], keys[idx + 1]) if idx.size else np.zeros(0, dtype=np.int64)
        unit = dim.unit
        if dim.kind == "timedelta":
            return pd.TimedeltaIndex(drawn.astype(np.int64).view(f"m8[{unit}]"))
        stamps = pd.DatetimeIndex(drawn.astype(np.int64).view(f"M8[{unit}]"))
        return stamps.tz_localize("UTC").tz_convert(dim.tz) if dim.tz is not None else stamps
    lo, hi = dim.edges[idx], dim.edges[idx + 1]
    lo = np.where(np.isfinite(lo), lo, hi)  # an open-ended bin gives its finite edge
    hi = np.where(np.isfinite(hi), hi, lo)
    return lo + (hi - lo) * rng.random(idx.size)


def sampled_columns(grid: Grid, codes: np.ndarray, rng: np.random.Generator) -> dict[str, Any]:
    """One column per dimension for rows in cells ``codes``: values drawn in their bin, or category labels."""
    per_dim = np.unravel_index(codes, grid.shape) if codes.size else [codes] * grid.ndim
    data: dict[str, Any] = {}
    for dim, idx in zip(grid.dims, per_dim):
        idx = np.asarray(idx, dtype=np.int64)
        if isinstance(dim, BinDomain):
            data[dim.column] = _bin_values(dim, idx, rng)
        else:
            data[dim.column] = pd.Categorical.from_codes(idx, categories=dim.categories)
    return data


def grid_rows(estimates: Any, grid: Grid, n: Any, rng: Any) -> pd.DataFrame:
    """Synthetic rows of a histogram over a public grid: one column per dimension.

    Numeric bins give values uniform in ``[low, high)`` of their bin (date and
    duration bins: uniform over the whole units of the domain in that bin,
    Timestamps or Timedeltas); categorical dimensions give their labels (a
    ``Categorical`` with the public categories).
    """
    gen = sampling_rng(rng)
    codes = draw_cells(cell_counts(estimates), n, gen)
    return pd.DataFrame(sampled_columns(grid, codes, gen), columns=list(grid.columns))


def persons_rows(leaf: pd.DataFrame, region_columns: dict[str, np.ndarray], n: Any,
                 rng: Any) -> pd.DataFrame:
    """A synthetic Persons table from the finest level of a count-of-counts release.

    Parameters
    ----------
    leaf : DataFrame
        The finest level's rows: ``region`` (position in the level, int),
        ``size`` and ``groups``.
    region_columns : dict of str to ndarray
        For every level below the root, the label of each leaf region's
        ancestor at that level (aligned with the leaf regions' positions).
    n : int or None
        Number of groups to draw; ``None`` reproduces the release exactly.
    rng : numpy.random.Generator or None

    Returns
    -------
    DataFrame
        One row per person: ``group`` (synthetic id, ``0..G-1``) and one
        column per level. Groups of size 0 have no persons.
    """
    gen = sampling_rng(rng)
    cells = draw_cells(cell_counts(leaf["groups"].to_numpy()), n, gen)
    sizes = leaf["size"].to_numpy(dtype=np.int64)[cells]
    region = leaf["region"].to_numpy(dtype=np.int64)[cells]
    person_group = np.repeat(np.arange(cells.size, dtype=np.int64), sizes)
    person_region = region[person_group]
    data: dict[str, Any] = {"group": person_group}
    for name, labels in region_columns.items():
        data[name] = np.asarray(labels, dtype=object)[person_region]
    return pd.DataFrame(data)


def group_sizes_rows(counts: Any, n: Any, rng: Any) -> pd.DataFrame:
    """Synthetic groups of an unattributed histogram: columns ``group`` (id) and ``size``.

    ``n=None`` gives every released group once (in random order); an integer
    draws ``n`` groups uniformly with replacement among the released ones.
    """
    gen = sampling_rng(rng)
    sizes = cell_counts(counts)
    picks = draw_cells(np.ones(sizes.size, dtype=np.int64), n, gen)
    return pd.DataFrame({"group": np.arange(picks.size, dtype=np.int64), "size": sizes[picks]})


def ancestors(parents: Sequence[np.ndarray | None], regions: Sequence[pd.Index]) -> dict[int, np.ndarray]:
    """For every level ``l >= 1``, the position in level ``l`` of each leaf region's ancestor."""
    last = len(regions) - 1
    pos = np.arange(len(regions[last]), dtype=np.int64)
    out = {last: pos}
    for lvl in range(last, 1, -1):
        pos = np.asarray(parents[lvl], dtype=np.int64)[pos]
        out[lvl - 1] = pos
    return out
