"""Public domains: numeric bins, categories and d-dimensional grids.

A domain always comes from the caller's arguments, never from the data: not
from its values and not from its dtype (a stray token turns a numeric column
into an ``object`` one; ``astype("category")`` builds categories from the
values). A pandas ``Categorical`` column's own categories are used only when
the caller says so with ``categories="dtype"`` (for a dtype built from a public
codebook, ``pd.CategoricalDtype(codebook)``).

Values are mapped to bin codes with vectorized arithmetic (equal-width bins)
or ``searchsorted`` (arbitrary edges). Mapping never raises or warns because of
a value: numeric bins read any column through a coercion that turns anything
that is not a real number (strings that do not parse, unhashable objects,
dates, ``NaN``, ``inf``) into a missing value, and label domains look values up
without requiring them to be hashable. Values outside the domain and missing
values get code ``-1`` and are dropped without revealing how many there were
(the boundary rule, DESIGN section 6).

Bins are half-open, ``[low, high)``, including the last one: with
``bins=120, range=(0, 120)`` the value 120 is outside the domain.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ._public import float_array, safe_repr
from .errors import DomainError, ParameterError

__all__ = ["BinDomain", "CategoryDomain", "Grid", "make_grid", "numeric_values", "MAX_CELLS"]

#: Largest number of cells of a release: each cell holds a count and draws noise (2**26 int64 = 512 MiB).
MAX_CELLS = 2**26


@dataclass(frozen=True, eq=False)
class BinDomain:
    """Numeric bins given by increasing edges; bin i is ``[edges[i], edges[i+1])``."""

    column: str
    edges: np.ndarray
    equal_width: bool

    @property
    def size(self) -> int:
        return int(self.edges.size - 1)

    @property
    def index(self) -> pd.IntervalIndex:
        return pd.IntervalIndex.from_breaks(self.edges, closed="left", name=self.column)

    def codes(self, values: np.ndarray) -> np.ndarray:
        """Bin code of every value, ``-1`` outside ``[edges[0], edges[-1])`` or missing.

        ``values`` is a numeric array (see :func:`numeric_values`); no value makes
        this warn (over/underflow and invalid operations are ignored: their
        results fall outside the domain).
        """
        with np.errstate(all="ignore"):
            return self._codes(np.asarray(values))

    def _codes(self, values: np.ndarray) -> np.ndarray:
        lo, hi, n = self.edges[0], self.edges[-1], self.size
        if values.dtype.kind in "iu" and self.equal_width and _integral(self.edges):
            width = int(self.edges[1] - self.edges[0])
            shifted = values.astype(np.int64, copy=False) - int(lo)
            codes = shifted // width if width != 1 else shifted.copy()
            codes[(shifted < 0) | (codes >= n)] = -1
            return codes
        x = values.astype(np.float64, copy=False)
        if self.equal_width:
            with np.errstate(invalid="ignore"):
                raw = np.floor((x - lo) * (n / (hi - lo)))
            inside = (x >= lo) & (x < hi)
            codes = np.where(inside, raw, -1).astype(np.int64)
            np.clip(codes, -1, n - 1, out=codes)
            # Arithmetic may land one bin off next to an edge: correct against the exact edges.
            below = inside & (x < self.edges[np.maximum(codes, 0)])
            codes[below] -= 1
            above = inside & (x >= self.edges[np.minimum(codes + 1, n)])
            codes[above] += 1
            return codes
        codes = np.searchsorted(self.edges, x, side="right").astype(np.int64) - 1
        codes[~((x >= lo) & (x < hi))] = -1
        return codes

    def align(self, low: Any, high: Any) -> tuple[np.ndarray, np.ndarray]:
        """Bin indices ``(i, j)`` such that ``[low, high)`` is bins ``i..j-1`` (vectorized).

        Raises :class:`DomainError` naming the nearest edges when a bound is
        not a bin edge, and when ``low > high``.
        """
        bounds = []
        for name, value in (("low", low), ("high", high)):
            converted = float_array(value)
            if converted is None:
                raise DomainError(f"Range bounds must be numbers. Got {name}={safe_repr(value)}.")
            arr = np.atleast_1d(converted)
            if not np.all(np.isfinite(arr)):
                raise DomainError(f"Range bounds must be finite numbers. Got {name}={safe_repr(value)}.")
            pos = np.searchsorted(self.edges, arr)
            clipped = np.minimum(pos, self.edges.size - 1)
            bad = np.flatnonzero(self.edges[clipped] != arr)
            if bad.size:
                k = bad[0]
                left = float(self.edges[max(pos[k] - 1, 0)])
                right = float(self.edges[clipped[k]])
                raise DomainError(
                    f"Range {name}={float(arr[k])!r} on column {self.column!r} does not fall on a bin edge. "
                    f"The nearest edges are {left!r} and {right!r}. Ranges are half-open [low, high) and "
                    f"must start and end on bin edges within [{float(self.edges[0])!r}, {float(self.edges[-1])!r}]."
                )
            bounds.append(pos.astype(np.int64))
        i, j = np.broadcast_arrays(*bounds)
        reversed_ = np.flatnonzero(i > j)
        if reversed_.size:
            k = reversed_[0]
            raise DomainError(f"Range low={float(self.edges[i[k]])!r} is above high={float(self.edges[j[k]])!r}; "
                              f"pass low <= high.")
        return i, j


@dataclass(frozen=True, eq=False)
class CategoryDomain:
    """A public list of category labels; bin i is ``categories[i]``."""

    column: str
    categories: pd.Index

    @property
    def size(self) -> int:
        return int(self.categories.size)

    @property
    def index(self) -> pd.CategoricalIndex:
        return pd.CategoricalIndex(self.categories, categories=self.categories, ordered=False, name=self.column)

    def codes(self, values: Any) -> np.ndarray:
        """Position of every value among the categories, ``-1`` for unknown, missing or unhashable values."""
        if isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
            cat = pd.Categorical(values)
            raw = cat.codes.astype(np.int64)
            if cat.categories.equals(self.categories):
                return raw
            mapping = np.asarray(self._lookup(cat.categories), dtype=np.int64)
            return np.where(raw >= 0, mapping[raw], -1)
        return self._lookup(values)

    def _lookup(self, values: Any) -> np.ndarray:
        """``categories.get_indexer(values)`` that never raises or warns on a value."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return np.asarray(self.categories.get_indexer(pd.Index(values)), dtype=np.int64)
            except Exception:  # noqa: BLE001 - a private value's own __hash__/__eq__ may raise anything
                # An unhashable value (a list, a dict...) in an object column: it matches no label.
                arr = np.asarray(pd.Series(values, dtype=object).to_numpy(), dtype=object)
                ok = np.frompyfunc(_hashable, 1, 1)(arr).astype(bool) if arr.size else np.zeros(0, bool)
                out = np.full(arr.size, -1, dtype=np.int64)
                if ok.any():
                    out[ok] = self.categories.get_indexer(pd.Index(arr[ok], dtype=object))
                return out

    def align(self, low: Any, high: Any) -> tuple[int, int]:
        raise DomainError(
            f"Range queries need numeric bins; column {self.column!r} has categories. "
            f"Sum the categories you need from result.counts instead."
        )


Dimension = BinDomain | CategoryDomain


@dataclass(frozen=True, eq=False)
class Grid:
    """The public domain of a release: one dimension per column, cells in C order."""

    dims: tuple[Dimension, ...]
    columns: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", tuple(d.column for d in self.dims))

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(d.size for d in self.dims)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.dims)

    @property
    def index(self) -> pd.Index:
        if self.ndim == 1:
            return self.dims[0].index
        return pd.MultiIndex.from_product([d.index for d in self.dims], names=list(self.columns))

    def codes(self, arrays: Sequence[Any]) -> np.ndarray:
        """Flat cell code per row, ``-1`` when any coordinate is outside its dimension."""
        codes = self.dims[0].codes(arrays[0])
        for dim, values in zip(self.dims[1:], arrays[1:]):
            sub = dim.codes(values)
            valid = (codes >= 0) & (sub >= 0)
            codes = np.where(valid, codes * dim.size + sub, -1)
        return codes


def _hashable(value: Any) -> bool:
    if not isinstance(value, Hashable):
        return False
    try:
        hash(value)
    except Exception:  # noqa: BLE001 - a private value's __hash__ may raise anything
        return False
    return True


def numeric_values(series: Any) -> np.ndarray:
    """A column's values as an int64 or float64 numpy array, ``NaN`` where a value is not a real number.

    Never raises and never warns, whatever the values: numeric dtypes are read
    as they are (booleans as 0/1, unsigned integers above ``2**63 - 1`` as
    floats, complex numbers with a non-zero imaginary part as ``NaN``); dates,
    durations and categoricals are not numbers (all ``NaN``); any other column
    goes through ``pandas.to_numeric(errors="coerce")`` (so the strings of a CSV
    column that pandas could not read as numbers still count where they parse).

    Parameters
    ----------
    series : pandas.Series
        The column (private data).

    Returns
    -------
    numpy.ndarray
        ``int64`` or ``float64`` values aligned with the rows.
    """
    dtype = series.dtype
    if isinstance(dtype, np.dtype):
        kind = dtype.kind
        if kind in "if":
            return series.to_numpy(copy=False)
        if kind == "b":
            return series.to_numpy(dtype=np.int64)
        if kind == "u":
            arr = series.to_numpy(copy=False)
            return arr.astype(np.int64) if dtype.itemsize < 8 else arr.astype(np.float64)
        if kind == "c":
            arr = series.to_numpy(copy=False)
            return np.where(arr.imag == 0, arr.real, np.nan)
        if kind in "mM":
            return np.full(len(series), np.nan)
    elif isinstance(dtype, pd.CategoricalDtype):
        return np.full(len(series), np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            converted = pd.to_numeric(series, errors="coerce")
        except Exception:  # noqa: BLE001 - a private value may break the converter: element by element
            converted = pd.Series([_real_or_nan(v) for v in series.to_numpy(dtype=object)], dtype=np.float64)
        if isinstance(converted.dtype, np.dtype):
            if converted.dtype.kind in "mMO":
                return np.full(len(series), np.nan)
            return numeric_values(converted)
        try:
            return converted.to_numpy(dtype=np.float64, na_value=np.nan)
        except Exception:  # noqa: BLE001
            return np.full(len(series), np.nan)


def _real_or_nan(value: Any) -> float:
    try:
        out = float(value) if isinstance(value, (int, float, np.number, str, bytes)) else math.nan
    except Exception:  # noqa: BLE001
        return math.nan
    return out


def _integral(edges: np.ndarray) -> bool:
    return bool(np.all(np.isfinite(edges)) and np.all(edges == np.round(edges)) and np.abs(edges).max() < 2**52)


def _is_categorical(series: pd.Series) -> bool:
    return isinstance(series.dtype, pd.CategoricalDtype)


def _is_spec_list(value: Any, n: int, element_ok: Any) -> bool:
    return isinstance(value, (list, tuple)) and len(value) == n and all(v is None or element_ok(v) for v in value)


def _per_column(value: Any, columns: Sequence[str], name: str, element_ok: Any) -> list[Any]:
    """Spread a per-dimension argument over the columns.

    A dict is keyed by column; with one column the value is its spec; with
    several, a list aligned with the columns (each element passing
    ``element_ok``, or None) gives one spec each, anything else is shared.
    """
    if isinstance(value, dict):
        unknown = [k for k in value if k not in columns]
        if unknown:
            raise ParameterError(f"The '{name}' dict names columns {unknown} that are not among the "
                                 f"released columns {list(columns)}.")
        return [value.get(c) for c in columns]
    if len(columns) == 1:
        return [value]
    if _is_spec_list(value, len(columns), element_ok):
        return list(value)
    return [value] * len(columns)


def _is_sequence(v: Any) -> bool:
    return hasattr(v, "__iter__") and not isinstance(v, (str, bytes))


def _is_dtype_keyword(v: Any) -> bool:
    return isinstance(v, str) and str.__str__(v) == "dtype"  # a str subclass's own __eq__ is not called


def _is_bins_spec(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) or _is_sequence(v)


def _bin_dimension(column: str, bins: Any, rng: Any) -> BinDomain:
    if isinstance(bins, (bool, np.bool_)):
        raise ParameterError(f"The 'bins' parameter for column {column!r} must be an int or a sequence of edges. "
                             f"Got {safe_repr(bins)}.")
    if isinstance(bins, (int, np.integer)):
        if rng is None:
            raise DomainError(
                f"The 'bins' parameter of histogram must be a sequence of edges or an int with range=. "
                f"Got bins={int(bins)} without range for column {column!r}. Deriving the range from the data "
                f"would leak it: pass range=(low, high) from public knowledge."
            )
        if bins < 1:
            raise ParameterError(f"The 'bins' parameter for column {column!r} must be at least 1. Got {int(bins)}.")
        if bins > MAX_CELLS:
            raise DomainError(f"bins={int(bins):,} for column {column!r} is above the limit of {MAX_CELLS:,} "
                              f"cells (2**26): every cell gets its own noisy count. Use coarser bins.")
        pair = None if isinstance(rng, (str, bytes, dict, set)) else float_array(rng)
        if pair is None or pair.shape != (2,):
            raise ParameterError(f"The 'range' parameter for column {column!r} must be a pair (low, high). "
                                 f"Got {safe_repr(rng)}.")
        low, high = float(pair[0]), float(pair[1])
        # high - low must be finite too: np.linspace over (-1e308, 1e308) overflows to inf edges.
        if not (math.isfinite(low) and math.isfinite(high) and math.isfinite(high - low)) or not low < high:
            raise DomainError(f"The 'range' for column {column!r} must be finite with low < high (and high - low "
                              f"below about 1.8e308). Got {safe_repr(rng)}.")
        edges = np.linspace(low, high, int(bins) + 1)
        if np.any(np.diff(edges) <= 0):
            raise DomainError(f"range={safe_repr(rng)} is too narrow for bins={int(bins)} on column {column!r}.")
        return BinDomain(column, edges, True)
    if rng is not None:
        raise ParameterError(f"Pass either explicit bin edges or bins=int with range=, not both "
                             f"(column {column!r} got bins={safe_repr(bins)} and range={safe_repr(rng)}).")
    try:
        listed = list(bins)
    except Exception:  # noqa: BLE001 - an iterable whose iteration raises
        listed = None
    edges = None if listed is None else float_array(listed)
    if edges is None:
        raise ParameterError(f"The 'bins' parameter for column {column!r} must be an int with range= or an "
                             f"increasing sequence of numeric edges. Got {safe_repr(bins)}.")
    if edges.ndim != 1 or edges.size < 2:
        raise DomainError(f"Bin edges for column {column!r} need at least two values. Got {safe_repr(bins)}.")
    if not np.all(np.isfinite(edges)):
        raise DomainError(f"Bin edges for column {column!r} must be finite. Got {safe_repr(bins)}.")
    if np.any(np.diff(edges) <= 0):
        raise DomainError(f"Bin edges for column {column!r} must be strictly increasing. Got {safe_repr(bins)}.")
    widths = np.diff(edges)
    equal = bool(np.allclose(widths, widths[0], rtol=0, atol=0))
    return BinDomain(column, edges, equal)


def _category_dimension(column: str, categories: Any) -> CategoryDomain:
    if isinstance(categories, (str, bytes)) or not hasattr(categories, "__iter__"):
        raise ParameterError(f"The 'categories' parameter for column {column!r} must be a list of labels. "
                             f"Got {safe_repr(categories)}.")
    try:
        index = pd.Index(list(categories))
        if isinstance(index, pd.MultiIndex):
            raise TypeError("tuples")
        duplicated, missing = index.has_duplicates, index.hasnans
        if not duplicated:  # build the hash table values are looked up in (every label hashed), as counting will
            index.get_indexer(pd.Index([object()], dtype=object))
    except Exception as err:  # noqa: BLE001 - unhashable labels, tuples, a label whose __hash__/__eq__ raises
        raise ParameterError(f"The 'categories' parameter for column {column!r} must be a list of hashable, scalar "
                             f"labels (strings, numbers, dates). Got {safe_repr(categories)}.") from err
    if index.size == 0:
        raise DomainError(f"The 'categories' for column {column!r} are empty; pass at least one label.")
    if duplicated:
        dup = safe_repr(index[index.duplicated()].unique().tolist(), 200)
        raise DomainError(f"The 'categories' for column {column!r} repeat labels {dup}; pass each label once.")
    if missing:
        raise DomainError(f"The 'categories' for column {column!r} contain a missing value; pass real labels.")
    return CategoryDomain(column, index)


def make_grid(frame: pd.DataFrame, columns: Sequence[str], *, bins: Any = None, range: Any = None,
              categories: Any = None) -> Grid:
    """Build the public domain of a release from the caller's arguments (never from the data).

    Parameters
    ----------
    frame : DataFrame
        Only its column labels are read, and whether a column is ``Categorical``
        (its categories are used only with ``categories="dtype"``).
    columns : sequence of str
        Columns released, one dimension each.
    bins, range, categories
        One spec for every column, a list aligned with ``columns``, or a dict keyed by column.

    Raises
    ------
    DomainError
        When a domain would have to be derived from the data.
    """
    bins_per = _per_column(bins, columns, "bins", _is_bins_spec)
    range_per = _per_column(range, columns, "range", _is_sequence)
    cats_per = _per_column(categories, columns, "categories",
                           lambda v: _is_dtype_keyword(v) or _is_sequence(v))
    dims: list[Dimension] = []
    for column, b, r, c in zip(columns, bins_per, range_per, cats_per):
        categorical = _is_categorical(frame[column])
        if _is_dtype_keyword(c):
            if b is not None or r is not None:
                raise ParameterError(f"Column {column!r}: pass either categories= or bins=/range=, not both.")
            if not categorical:
                raise DomainError(
                    f"categories='dtype' for column {column!r} needs a pandas Categorical column whose "
                    f"categories are a public codebook (pd.CategoricalDtype(codebook)). Pass categories=[...] "
                    f"with every possible label instead.")
            dims.append(_category_dimension(column, frame[column].dtype.categories))
        elif c is not None:
            if b is not None or r is not None:
                raise ParameterError(f"Column {column!r}: pass either categories= or bins=/range=, not both.")
            dims.append(_category_dimension(column, c))
        elif b is not None:
            if categorical:
                raise ParameterError(f"Column {column!r} is Categorical: its categories are its domain. "
                                     f"Drop bins=/range= (or pass categories= to override).")
            dims.append(_bin_dimension(column, b, r))
        else:
            raise DomainError(
                f"Column {column!r} needs a public domain: pass bins= (edges, or an int with range=(low, high)) "
                f"for numbers, or categories=[...] with every possible label (categories='dtype' uses a "
                f"Categorical column's own categories, when its dtype was built from a public codebook). "
                f"The library never derives the domain from the data."
            )
    grid = Grid(tuple(dims))
    if grid.size > MAX_CELLS:
        raise DomainError(
            f"The domain has {grid.size:,} cells ({' x '.join(f'{n:,}' for n in grid.shape)}); the limit is "
            f"{MAX_CELLS:,} (2**26), as every cell gets its own noisy count. Use coarser bins."
        )
    return grid
