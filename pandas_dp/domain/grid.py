"""Public domains: numeric, date and duration bins, categories and d-dimensional grids.

A domain always comes from the caller's arguments, never from the data: not
from its values and not from its dtype (a stray token turns a numeric column
into an ``object`` one; ``astype("category")`` builds categories from the
values). A pandas ``Categorical`` column's own categories are used only when
the caller says so with ``categories="dtype"`` (for a dtype built from a public
codebook, ``pd.CategoricalDtype(codebook)``).

Values are mapped to bin codes by the coder a domain picks once for its edges
(:mod:`pandas_dp.domain.binning`): integer arithmetic for evenly spaced integer
edges, exact float arithmetic for evenly spaced integer-valued edges on float
columns, corrected arithmetic for other evenly spaced edges, ``searchsorted``
on the values' own dtype for uneven edges, and codes for categories. Mapping
never raises or warns because of a value: numeric bins read any column
through a coercion that turns anything that is not a real number (strings
that do not parse, unhashable objects, dates, ``NaN``, ``inf``) into a missing
value, date and duration bins read their kind of value only
(:mod:`pandas_dp.domain.timevalues`), and label domains look values up without
requiring them to be hashable. Values outside the domain and missing values
are dropped without revealing how many there were (the boundary rule,
DESIGN section 6).

Bins are half-open, ``[low, high)``, including the last one: with
``bins=120, range=(0, 120)`` the value 120 is outside the domain.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Sequence

import numpy as np
import pandas as pd

from pandas_dp.domain.binning import CHUNK_ROWS, ChunkBuffers, Coder, coder_for_edges
from pandas_dp.domain.cached import DerivedCache
from pandas_dp.domain.categories import CategoryDomain, category_dimension, with_other
from pandas_dp.domain.edges import MAX_CELLS, parse_bins
from pandas_dp.domain.numeric_values import numeric_values
from pandas_dp.domain.timevalues import NAT, convert_unit, datetime_keys, timedelta_keys
from pandas_dp._utils.public import float_array, safe_repr
from pandas_dp.errors import DomainError, ParameterError

#: A numeric range bound this many units in the last place of the edges' scale from an edge is that edge
#: (:meth:`BinDomain.align`): float rounding, as between ``np.linspace`` and the release's edges.
EDGE_ULPS = 4

__all__ = ["BinDomain", "CategoryDomain", "Grid", "make_grid", "numeric_values", "MAX_CELLS"]


@dataclass(frozen=True, eq=False)
class BinDomain(DerivedCache):
    """Bins given by increasing edges; bin i is ``[edges[i], edges[i+1])``.

    ``edges`` is a float64 array for numbers, a ``DatetimeIndex`` (naive or
    tz-aware) for dates, a ``TimedeltaIndex`` for durations; ``equal_width``
    says whether they are evenly spaced (then values are binned arithmetically).
    """

    column: str
    edges: Any
    equal_width: bool

    # -- what the domain is ------------------------------------------------------
    @property
    def size(self) -> int:
        return int(len(self.edges) - 1)

    @property
    def kind(self) -> str:
        """``"number"``, ``"datetime"`` or ``"timedelta"``."""
        if isinstance(self.edges, pd.DatetimeIndex):
            return "datetime"
        if isinstance(self.edges, pd.TimedeltaIndex):
            return "timedelta"
        return "number"

    @property
    def keys(self) -> np.ndarray:
        """The edges as binned: float64 numbers, or int64 counts of :attr:`unit` (UTC for tz-aware dates)."""
        if self.kind == "number":
            return np.asarray(self.edges)
        return self.edges.asi8

    @property
    def unit(self) -> str | None:
        """Resolution of date and duration keys (``"s"``, ``"ms"``, ``"us"``, ``"ns"``); None for numbers."""
        return None if self.kind == "number" else str(self.edges.unit)

    @property
    def tz(self) -> Any:
        """Time zone of a tz-aware date domain (None otherwise)."""
        return getattr(self.edges, "tz", None)

    @cached_property
    def coder(self) -> Coder:
        """The chunk coder picked once for these edges (see :mod:`pandas_dp.domain.binning`)."""
        return coder_for_edges(self.keys, even=self.equal_width)

    @cached_property
    def index(self) -> pd.IntervalIndex:
        """The bins as an ``IntervalIndex`` (closed on the left), built on first use and kept."""
        return interval_index(self.edges, self.column)

    def edge_values(self, positions: Any) -> Any:
        """Edges at ``positions`` as public values: a float64 array, or a ``DatetimeIndex`` / ``TimedeltaIndex``."""
        if self.kind == "number":
            return np.asarray(self.edges)[positions]
        return self.edges[positions]

    def edge_value(self, position: int) -> Any:
        """One edge as a public scalar: a float, a Timestamp or a Timedelta."""
        value = self.edges[int(position)]
        return float(value) if self.kind == "number" else value

    # -- private values to codes ---------------------------------------------------
    def column_values(self, series: Any) -> np.ndarray:
        """A column's values as the keys this domain bins (never raises or warns).

        Numbers: int64/float64 from :func:`numeric_values`; dates and durations:
        int64 keys of :attr:`unit` (:mod:`pandas_dp.domain.timevalues`), ``NAT`` for
        anything out of domain.
        """
        if self.kind == "datetime":
            return datetime_keys(series, aware=self.tz is not None, unit=str(self.unit))
        if self.kind == "timedelta":
            return timedelta_keys(series, unit=str(self.unit))
        return numeric_values(series if isinstance(series, pd.Series) else pd.Series(series))

    def reader(self, series: pd.Series) -> tuple[np.ndarray, Coder]:
        """Values to slice in chunks and the coder that codes each chunk."""
        return self.column_values(series), self.coder

    def codes(self, values: Any) -> np.ndarray:
        """Bin code of every value, ``-1`` outside ``[edges[0], edges[-1])`` or missing.

        ``values`` is what :meth:`column_values` returns (numbers may also be any
        numeric array; a date domain also converts datetime arrays). No value
        makes this raise or warn.
        """
        arr = np.asarray(values)
        if self.kind == "number" and arr.dtype.kind not in "if":
            arr = numeric_values(pd.Series(arr))
        elif self.kind != "number" and arr.dtype != np.int64:
            arr = self.column_values(pd.Series(values))
        return normalised_codes(arr, self.coder)

    # -- range queries --------------------------------------------------------------
    def bound_keys(self, name: str, value: Any) -> np.ndarray:
        """Public range bounds as keys comparable with :attr:`keys` (raises DomainError on a bad bound)."""
        if self.kind == "number":
            converted = float_array(value)
            if converted is None:
                raise DomainError(f"Range bounds must be numbers. Got {name}={safe_repr(value)}.")
            arr = np.atleast_1d(converted)
            if arr.ndim != 1:
                raise DomainError(f"Range bounds must be numbers: one bound, or one per range. Got "
                                  f"{name}={safe_repr(value)}.")
            if not np.all(np.isfinite(arr)):
                raise DomainError(f"Range bounds must be finite numbers. Got {name}={safe_repr(value)}.")
            return arr
        what = "dates (Timestamps)" if self.kind == "datetime" else "durations (Timedeltas)"
        try:
            items = np.atleast_1d(np.asarray(value, dtype=object)).ravel()
            if self.kind == "datetime":
                bounds: Any = pd.DatetimeIndex([_bound_stamp(v, self.tz) for v in items])
                if (bounds.tz is None) != (self.tz is None):
                    raise TypeError("naive and tz-aware")
            else:
                bounds = pd.TimedeltaIndex([pd.Timedelta(v) for v in items])
            own = bounds.asi8  # UTC for tz-aware bounds, in their own unit
            keys = convert_unit(own, str(bounds.unit), str(self.unit))
            # A bound finer than the bins' unit is exact only if it converts back unchanged.
            exact = convert_unit(keys, str(self.unit), str(bounds.unit)) == own
        except Exception as err:  # noqa: BLE001 - a public bound whose conversion raises anything
            aware = "tz-aware" if self.tz is not None else "naive"
            raise DomainError(f"Range bounds on column {self.column!r} must be {what}"
                              f"{' (' + aware + ', like the bins)' if self.kind == 'datetime' else ''}. "
                              f"Got {name}={safe_repr(value)}.") from err
        if np.any(keys == NAT):
            raise DomainError(f"Range bounds on column {self.column!r} must be {what}, not NaT. "
                              f"Got {name}={safe_repr(value)}.")
        if not np.all(exact):
            raise DomainError(f"Range {name}={safe_repr(value)} on column {self.column!r} does not fall on a bin edge: it is "
                              f"finer than the bins' unit ({self.unit}). Ranges start and end on bin edges.")
        return keys

    def align(self, low: Any, high: Any) -> tuple[np.ndarray, np.ndarray]:
        """Bin indices ``(i, j)`` such that ``[low, high)`` is bins ``i..j-1`` (vectorized).

        Raises :class:`DomainError` naming the nearest edges when a bound is
        not a bin edge, and when ``low > high``.
        """
        keys = self.keys
        bounds = []
        for name, value in (("low", low), ("high", high)):
            arr = self.bound_keys(name, value)
            pos = np.searchsorted(keys, arr)
            clipped = np.minimum(pos, keys.size - 1)
            if self.kind == "number":
                pos, off = self._snap(keys, arr, pos)
                bad = np.flatnonzero(off)
            else:  # integer time keys: exact
                bad = np.flatnonzero(keys[clipped] != arr)
            if bad.size:
                k = bad[0]
                shown = float(arr[k]) if self.kind == "number" else self.key_value(arr[k])
                left, right = self.edge_value(max(pos[k] - 1, 0)), self.edge_value(clipped[k])
                raise DomainError(
                    f"Range {name}={shown!r} on column {self.column!r} does not fall on a bin edge. "
                    f"The nearest edges are {_text(left)} and {_text(right)}. Ranges are half-open [low, high) "
                    f"and must start and end on bin edges within [{_text(self.edge_value(0))}, "
                    f"{_text(self.edge_value(self.size))}]."
                )
            bounds.append(pos.astype(np.int64))
        i, j = np.broadcast_arrays(*bounds)
        reversed_ = np.flatnonzero(i > j)
        if reversed_.size:
            k = reversed_[0]
            raise DomainError(f"Range low={_text(self.edge_value(i[k]))} is above "
                              f"high={_text(self.edge_value(j[k]))}; pass low <= high.")
        return i, j

    @staticmethod
    def _snap(keys: np.ndarray, arr: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each numeric bound's edge index, a bound within float rounding of an edge being that edge.

        Within float rounding: at most :data:`EDGE_ULPS` units in the last place of the edges' scale (the
        larger magnitude of the first and last edge) from the nearest edge, and at most a quarter of the
        distance between that edge and its neighbour on the bound's side. ``np.linspace(0, 6.4, 257)[58]`` is
        ``1.4500000000000002``, one unit from the edge ``1.45`` of ``bins=256, range=(0, 6.4)``. Returns the
        indices (``searchsorted``'s, moved to the matched edge) and whether each bound is off every edge.
        """
        tolerance = EDGE_ULPS * float(np.spacing(max(abs(float(keys[0])), abs(float(keys[-1])))))
        last = keys.size - 1
        right = np.minimum(pos, last)
        left = np.maximum(pos - 1, 0)
        nearest = np.where(np.abs(keys[right] - arr) <= np.abs(arr - keys[left]), right, left)
        gap = np.abs(arr - keys[nearest])
        neighbour = np.clip(np.where(arr >= keys[nearest], nearest + 1, nearest - 1), 0, last)
        width = np.abs(keys[neighbour] - keys[nearest])
        within = (gap == 0) | ((gap <= tolerance) & ((width == 0) | (gap <= width / 4)))
        return np.where(within, nearest, pos), ~within

    def key_value(self, key: Any) -> Any:
        """The public value of one key: a float, or a Timestamp (in the domain's time zone) / Timedelta."""
        if self.kind == "number":
            return float(key)
        unit = str(self.unit)
        if self.kind == "timedelta":
            return pd.Timedelta(int(key), unit=unit)
        stamp = pd.Timestamp(int(key), unit=unit)
        return stamp.tz_localize("UTC").tz_convert(self.tz) if self.tz is not None else stamp


def interval_index(edges: Any, name: Any) -> pd.IntervalIndex:
    """``IntervalIndex.from_breaks(edges, closed="left", name=name)`` for edges this module validated.

    ``from_breaks`` re-checks every interval (``left <= right``, missing
    values on both sides): 4 ms for 2**20 bins, a third of counting 10**7 rows
    at that size. The edges were checked once when the domain was built
    (finite, strictly increasing), so the index is assembled from the two
    shifted views directly; any pandas that refuses the shortcut gets
    ``from_breaks``.

    Numeric edges that are all whole numbers (``bins=range(14, 50, 2)``) give
    an ``int64`` index, printed ``[14, 16)`` rather than ``[14.0, 16.0)``; the
    bins and every lookup (``index.get_loc(14.5)``) are the same.
    """
    edges = _integral_edges(edges)
    try:
        from pandas.core.arrays.interval import IntervalArray

        breaks = pd.Index(edges)
        dtype = pd.IntervalDtype(breaks.dtype, closed="left")
        left, right = breaks[:-1], breaks[1:]
        if isinstance(breaks, (pd.DatetimeIndex, pd.TimedeltaIndex)):
            left, right = left.array, right.array
        else:
            left, right = left.to_numpy(), right.to_numpy()
        array = IntervalArray._simple_new(left, right, dtype)
        index = pd.IntervalIndex._simple_new(array, name=name)
        if len(index) == len(breaks) - 1 and index.dtype == dtype:
            return index
    except Exception:  # noqa: BLE001 - a pandas without these internals: the public constructor
        pass
    return pd.IntervalIndex.from_breaks(edges, closed="left", name=name)


def _bound_stamp(value: Any, tz: Any) -> pd.Timestamp:
    """A public range bound as a Timestamp of the domain's kind.

    ISO text on a tz-aware domain is read in the domain's zone: ``"2024-03-01"``
    is midnight there (as frequency bins are), ``"2024-03-01T00:00-05:00"`` the
    instant it names. Timestamps and datetimes keep their own (naive or aware)
    kind, so a naive Timestamp on a tz-aware domain is still refused.
    """
    stamp = pd.Timestamp(value)
    if tz is not None and isinstance(value, str):
        return stamp.tz_localize(tz) if stamp.tzinfo is None else stamp.tz_convert(tz)
    if tz is not None and stamp.tzinfo is not None:
        return stamp.tz_convert(tz)  # one zone for the index: bounds may come in several
    return stamp


def _integral_edges(edges: Any) -> Any:
    """Float edges that are all whole numbers below 2**53 as int64 (exact); any other edges unchanged."""
    # Up to 2**16 bins only: a person reads those; larger domains keep their float edges shared, uncopied.
    if isinstance(edges, np.ndarray) and edges.dtype == np.float64 and 0 < edges.size <= 2**16 + 1:
        with np.errstate(invalid="ignore"):
            if np.abs(edges).max() < 2.0**53 and np.array_equal(edges, np.floor(edges)):
                return edges.astype(np.int64)
    return edges


def _text(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def normalised_codes(values: np.ndarray, coder: Coder) -> np.ndarray:
    """Codes of all ``values`` with ``-1`` for every dropped value (chunked, int64)."""
    n, offset = coder.size, coder.offset
    out = np.empty(len(values), dtype=np.int64)
    buffers = ChunkBuffers()
    with np.errstate(all="ignore"):
        for start in range(0, len(values), CHUNK_ROWS):
            part = out[start:start + CHUNK_ROWS]
            part[...] = coder.codes(values[start:start + CHUNK_ROWS], buffers)
            if offset:
                part -= offset
            part[part >= n] = -1
    return out


Dimension = BinDomain | CategoryDomain


@dataclass(frozen=True, eq=False)
class Grid(DerivedCache):
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

    @cached_property
    def index(self) -> pd.Index:
        """The cells' index (built on first use, then shared by every Series of the release)."""
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
    return isinstance(v, (int, np.integer, str)) or _is_sequence(v)


def _check_edges_given(column: str, bins: Any) -> None:
    """Bins of a release without ``range=`` are edges: a number of bins or a frequency has nothing to span."""
    count = isinstance(bins, (int, np.integer)) and not isinstance(bins, (bool, np.bool_, np.timedelta64))
    if count or isinstance(bins, str):
        what, got = ("a number of bins", int(bins)) if count else ("a frequency", str.__str__(bins))
        how = ("For n even bins from low to high, pass numpy.linspace(low, high, n + 1)." if count else
               f"For bins of that frequency, pass pandas.date_range(start, end, freq={got!r}).")
        raise DomainError(
            f"The bins of column {column!r} must be its bin edges, e.g. bins={{{column!r}: [0, 18, 65, 120]}} "
            f"(increasing numbers, dates or durations, from public knowledge): this release takes no low and "
            f"high end to spread {what} over. Got {safe_repr(got)}, {what}. {how}")


def _bin_dimension(column: str, bins: Any, rng: Any) -> BinDomain:
    edges, even = parse_bins(column, bins, rng)
    return BinDomain(column, edges, even)


def other_labels(other: Any, columns: Sequence[str], labelled: Sequence[bool]) -> list[Any]:
    """Spread ``other=`` over the columns: a dict keyed by label column, or one label for every label column.

    ``labelled[i]`` says whether column ``i`` has a list of categories. Raises ParameterError (public
    input, before any charge) for a dict naming an unknown or binned column, a list, or an ``other``
    with no label column to apply to.
    """
    if other is None:
        return [None] * len(columns)
    if isinstance(other, dict):
        unknown = [k for k in other if k not in columns]
        if unknown:
            raise ParameterError(f"The 'other' dict names columns {safe_repr(unknown)} that are not among the "
                                 f"released columns {list(columns)}.")
        binned = [c for c, has in zip(columns, labelled) if not has and other.get(c) is not None]
        if binned:
            raise ParameterError(f"The 'other' dict names columns {binned} that have bins, not categories: an other "
                                 f"cell goes next to a public list of labels. Drop them from other= (values outside "
                                 f"numeric bins are dropped) or pass categories=[...] for them.")
        return [other.get(c) for c in columns]
    if isinstance(other, (list, tuple, set, pd.Index, np.ndarray, pd.Series)):
        raise ParameterError(f"The 'other' parameter must be one label (for every label column) or a dict keyed by "
                             f"column, e.g. other={{'product': 'Other'}}. Got {safe_repr(other)}.")
    if not any(labelled):
        raise ParameterError(f"The 'other' parameter needs a public categories=[...] list: the other cell counts the "
                             f"values outside it. Columns {list(columns)} have bins. Drop other= or pass categories=.")
    return [other if has else None for has in labelled]


def make_grid(frame: pd.DataFrame, columns: Sequence[str], *, bins: Any = None, range: Any = None,
              categories: Any = None, other: Any = None, ranged: bool = True) -> Grid:
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
        ``bins`` is an int (with ``range=(low, high)`` of numbers, Timestamps or
        Timedeltas), a sequence of edges (numbers, Timestamps, Timedeltas), a
        pandas frequency string such as ``"M"`` (with a ``range`` of dates), or an
        ``IntervalIndex`` (see :mod:`pandas_dp.domain.edges`).
    other : label or dict, optional
        The label of an other cell, added last to a label dimension, counting every present
        value outside its list (:func:`~pandas_dp.domain.categories.with_other`): one label for
        every column with categories, or a dict keyed by column.
    ranged : bool
        Whether the release takes ``range=`` (``marginals`` does not: its bins are edges, and its
        messages name the dict forms it takes instead).

    Raises
    ------
    DomainError
        When a domain would have to be derived from the data, or is invalid.
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
            dims.append(category_dimension(column, frame[column].dtype.categories))
        elif c is not None:
            if b is not None or r is not None:
                raise ParameterError(f"Column {column!r}: pass either categories= or bins=/range=, not both.")
            dims.append(category_dimension(column, c))
        elif b is not None:
            if categorical:
                raise ParameterError(f"Column {column!r} is Categorical: its categories are its domain. "
                                     f"Drop bins=/range= (or pass categories= to override).")
            if not ranged:
                _check_edges_given(column, b)
            dims.append(_bin_dimension(column, b, r))
        elif not ranged:
            raise DomainError(
                f"Column {column!r} needs a public domain: pass bins={{{column!r}: [edges]}} (increasing edges "
                f"of numbers, dates or durations) or categories={{{column!r}: [...]}} with every possible label "
                f"(categories={{{column!r}: 'dtype'}} uses a Categorical column's own categories, when its dtype "
                f"was built from a public codebook). The library never derives the domain from the data."
            )
        else:
            raise DomainError(
                f"Column {column!r} needs a public domain: pass bins= (edges, or an int with range=(low, high)) "
                f"for numbers, dates or durations, or categories=[...] with every possible label "
                f"(categories='dtype' uses a Categorical column's own categories, when its dtype was built "
                f"from a public codebook). The library never derives the domain from the data."
            )
    labelled = [isinstance(d, CategoryDomain) for d in dims]
    dims = [d if o is None else with_other(d, o)  # type: ignore[arg-type]
            for d, o in zip(dims, other_labels(other, columns, labelled))]
    grid = Grid(tuple(dims))
    if grid.size > MAX_CELLS:
        raise DomainError(
            f"The domain has {grid.size:,} cells ({' x '.join(f'{n:,}' for n in grid.shape)}); the limit is "
            f"{MAX_CELLS:,} (2**26), as every cell gets its own noisy count. Use coarser bins."
        )
    return grid
