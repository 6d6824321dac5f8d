"""Label domains: a public list of categories, and the coding of a private column against it.

Values are looked up without requiring them to be hashable (an unhashable or
unknown value matches no label, code ``-1``); a ``Categorical`` column is
read through its codes (re-mapped when its categories differ from the
domain's); an int64 column over the labels ``k, k + 1, ...`` is coded by
arithmetic. Nothing about a value raises or warns. A value no label matches as
it is is matched as text or as a number (``"17"`` meets the label 17, 17 meets
``"17"``: the rule of :mod:`pandas_dp.domain.labels` for group ids), so a
column that one odd row turned into text loses that row only.

With an *other* bucket (``other="Other"`` next to the list, DESIGN section 7)
the domain has one more cell, last, labelled ``other``: every value that is
present (not missing in the sense of ``pandas.isna``) and matches no listed
label lands there, whatever it is (an unknown label, a value of another type,
an unhashable object, a value equal to the other label itself). Missing values
are still dropped. The list is looked up exactly as without the bucket, so a
value counts in the same listed cell either way. The cell exists whether or
not any row falls in it: the set of cells is public.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Hashable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.domain.binning import ChunkBuffers, EvenIntegers
from pandas_dp.domain.cached import DerivedCache
from pandas_dp.domain.edges import MAX_CELLS
from pandas_dp.domain.labels import positions, value_classes

_BOOL, _NUMBER, _STRING = 1, 2, 3  # classes of pandas_dp.domain.labels.value_classes
from pandas_dp._utils.public import safe_repr
from pandas_dp.errors import DomainError, ParameterError

__all__ = ["CategoryDomain", "CategoryCodes", "category_dimension", "with_other", "is_hashable"]


@dataclass(frozen=True)
class CategoryCodes:
    """Coder of precomputed label codes (``-1`` = no label), optionally re-mapped through ``mapping``."""

    size: int
    mapping: np.ndarray | None = None
    offset: int = 0

    def codes(self, values: np.ndarray, buffers: ChunkBuffers) -> np.ndarray:
        if self.mapping is None and values.dtype == np.int64:
            return values  # read only by the caller
        out = buffers.int_view(values.size)
        if self.mapping is None:
            np.copyto(out, values, casting="unsafe")
        else:
            np.take(self.mapping, values, out=out)
        return out


@dataclass(frozen=True, eq=False)
class CategoryDomain(DerivedCache):
    """A public list of category labels; bin i is ``categories[i]``.

    With an other bucket, ``listed`` is the public list as given and ``categories`` is that list
    followed by the other label (the last cell counts every present value outside the list).
    """

    column: str
    categories: pd.Index
    listed: pd.Index | None = None

    @property
    def size(self) -> int:
        return int(self.categories.size)

    @property
    def has_other(self) -> bool:
        """Whether the last cell is an other bucket."""
        return self.listed is not None

    @property
    def other(self) -> Any:
        """The other bucket's label (None without one)."""
        return self.categories[-1] if self.listed is not None else None

    @property
    def labels(self) -> pd.Index:
        """The public list of labels itself (without the other label)."""
        return self.listed if self.listed is not None else self.categories

    @cached_property
    def index(self) -> pd.CategoricalIndex:
        """The labels as a ``CategoricalIndex`` (cell i is label i: built from its codes, no label hashed)."""
        dtype = pd.CategoricalDtype(self.categories, ordered=False)
        codes = np.arange(self.size, dtype=np.int64)
        return pd.CategoricalIndex(pd.Categorical.from_codes(codes, dtype=dtype), name=self.column)

    def column_values(self, series: Any) -> Any:
        """The column itself: :meth:`codes` looks its values up (a Categorical through its codes)."""
        return series

    def reader(self, series: pd.Series) -> tuple[np.ndarray, Any]:
        """Codes to slice in chunks and their coder: a Categorical's codes (re-mapped when its categories
        differ), arithmetic for an int64 column over a run of consecutive integer labels, else the lookup."""
        dtype = series.dtype
        if isinstance(dtype, pd.CategoricalDtype):
            raw = np.asarray(series.array.codes)  # a view of the codes, no copy
            if dtype.categories.equals(self.categories) or (self.has_other and dtype.categories.equals(self.labels)):
                return raw, CategoryCodes(self.size)  # code -1 is a missing value: dropped
            found = np.asarray(self._lookup(dtype.categories), dtype=np.int64)
            if self.has_other:
                found[found < 0] = self.size - 1  # a category of the column is a present value
            mapping = np.append(found, -1)
            return raw, CategoryCodes(self.size, mapping)
        if self.has_other:
            return self.codes(series), CategoryCodes(self.size)
        start = self._integer_run()
        if start is not None and dtype == np.int64:
            return series.to_numpy(copy=False), EvenIntegers(start, 1, self.size)
        return self._lookup(series), CategoryCodes(self.size)

    def _integer_run(self) -> int | None:
        """The first label when the labels are the consecutive integers ``start, start + 1, ...``."""
        cats = self.categories
        if cats.dtype != np.int64 or not cats.is_monotonic_increasing:
            return None
        first, last = int(cats[0]), int(cats[-1])
        return first if last - first == cats.size - 1 else None

    def codes(self, values: Any) -> np.ndarray:
        """Position of every value among the categories, ``-1`` for unknown, missing or unhashable values.

        With an other bucket, every present value outside the list gets the last cell instead.
        """
        if isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
            cat = pd.Categorical(values)
            raw = cat.codes.astype(np.int64)
            if cat.categories.equals(self.categories):
                return raw
            mapping = np.asarray(self._lookup(cat.categories), dtype=np.int64)
            if self.has_other:
                mapping[mapping < 0] = self.size - 1
            return np.where(raw >= 0, mapping[np.maximum(raw, 0)], -1)
        found = self._lookup(values)
        if self.has_other:
            outside = found < 0
            if outside.any():
                outside &= ~_missing(values)
                found[outside] = self.size - 1
        return found

    def _lookup(self, values: Any) -> np.ndarray:
        """``labels.get_indexer(values)`` (the public list) that never raises or warns on a value.

        A boolean never matches a number, nor a number a boolean, whatever the column's dtype: in an
        ``object`` column Python says ``True == 1``, in a ``bool`` column pandas does not, and one
        stray row turns the one into the other (a neighbour would move every ``True`` row).
        """
        labels = self.labels
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                found = np.asarray(labels.get_indexer(pd.Index(values)), dtype=np.int64)
            except Exception:  # noqa: BLE001 - a private value's own __hash__/__eq__ may raise anything
                # An unhashable value (a list, a dict...) in an object column: it matches no label.
                arr = np.asarray(pd.Series(values, dtype=object).to_numpy(), dtype=object)
                ok = np.frompyfunc(is_hashable, 1, 1)(arr).astype(bool) if arr.size else np.zeros(0, bool)
                found = np.full(arr.size, -1, dtype=np.int64)
                if ok.any():
                    found[ok] = labels.get_indexer(pd.Index(arr[ok], dtype=object))
                values = arr
        return self._across_text(values, self._same_kind(values, found))

    def _across_text(self, values: Any, found: np.ndarray) -> np.ndarray:
        """``found`` with the values no label matched as they are matched as text or as numbers.

        A number written as text meets the number labels (``"17"`` and ``"17.0"`` are 17) and a
        number meets the text labels through ``str()`` (17 is ``"17"``), the rule of
        :func:`pandas_dp.domain.labels.positions` for group ids and regions. One odd row turns an
        ``int64`` column into ``object``, and Dask (``dataframe.convert-string``) or ``read_csv``
        then hold every value as text: without this, that one row would move every count. A
        value that matches a label as it is keeps that label (``"5"`` next to both ``5`` and
        ``"5"`` is ``"5"``).
        """
        label_classes = self._label_classes
        numbers, texts = np.flatnonzero(label_classes == _NUMBER), np.flatnonzero(label_classes == _STRING)
        if not (numbers.size or texts.size):
            return found
        missed = found < 0
        if not missed.any():
            return found
        dtype = getattr(values, "dtype", None)
        if dtype is not None and dtype != object and not isinstance(dtype, pd.CategoricalDtype):
            numeric = pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
            text = pd.api.types.is_string_dtype(dtype)
            if not ((numeric and texts.size) or (text and numbers.size)):
                return found  # a typed column that holds neither kind the other labels could meet
        where = np.flatnonzero(missed)
        rest = values.iloc[where] if isinstance(values, pd.Series) else np.asarray(values, dtype=object)[where]
        found = found.copy()
        for subset in (numbers, texts):
            if subset.size:
                hit = positions(self.labels[subset], rest)
                ok = hit >= 0
                found[where[ok]] = subset[hit[ok]]
                where, rest = where[~ok], (rest.iloc[np.flatnonzero(~ok)] if isinstance(rest, pd.Series)
                                           else rest[~ok])
        return found

    @cached_property
    def _label_classes(self) -> np.ndarray:
        return value_classes(self.labels)

    def _same_kind(self, values: Any, found: np.ndarray) -> np.ndarray:
        """``found`` with every match of a boolean to a non-boolean (either way) undone (-1)."""
        label_classes = self._label_classes
        if not (label_classes == _BOOL).any() and not (label_classes == _NUMBER).any():
            return found
        hit = found >= 0
        if not hit.any():
            return found
        dtype = getattr(values, "dtype", None)
        if dtype is not None and dtype != object and not isinstance(dtype, pd.CategoricalDtype) \
                and (label_classes != _BOOL).all() and not pd.api.types.is_bool_dtype(dtype):
            return found  # a typed column without booleans against labels without booleans
        classes = value_classes(values)
        matched = label_classes[np.maximum(found, 0)]
        wrong = hit & (classes != matched) & ((classes == _BOOL) | (matched == _BOOL))
        if wrong.any():
            found = found.copy()
            found[wrong] = -1
        return found

    def align(self, low: Any, high: Any) -> tuple[int, int]:
        raise DomainError(
            f"Range queries need numeric bins; column {self.column!r} has categories. "
            f"Sum the categories you need from result.counts instead."
        )


def _missing(values: Any) -> np.ndarray:
    """Which values are missing (``pandas.isna``, decided value by value; never raises on a value)."""
    try:
        return np.asarray(pd.isna(values if isinstance(values, (pd.Series, pd.Index, np.ndarray))
                                  else pd.Series(values, dtype=object)), dtype=bool).reshape(-1)
    except Exception:  # noqa: BLE001 - a hostile private value: decided one value at a time
        arr = pd.Series(values, dtype=object).to_numpy()
        return np.fromiter((_is_missing(v) for v in arr), dtype=bool, count=arr.size)


def _is_missing(value: Any) -> bool:
    try:
        return bool(pd.isna(value)) if not isinstance(value, (list, tuple, dict, set, np.ndarray)) else False
    except Exception:  # noqa: BLE001 - a private value's own methods may raise anything
        return False


def is_hashable(value: Any) -> bool:
    """Whether a private value can be a label: hashable, and its ``__hash__`` does not raise."""
    if not isinstance(value, Hashable):
        return False
    try:
        hash(value)
    except Exception:  # noqa: BLE001 - a private value's __hash__ may raise anything
        return False
    return True


def category_dimension(column: str, categories: Any, other: Any = None) -> CategoryDomain:
    """The label domain of ``column``: the public list ``categories``, and an other bucket labelled ``other``."""
    domain = _listed_dimension(column, categories)
    return domain if other is None else with_other(domain, other)


def with_other(domain: CategoryDomain, other: Any) -> CategoryDomain:
    """``domain`` with one more cell, last, labelled ``other``, counting every present value outside its list.

    ``other`` is public: a plain scalar label (a string, number, date...) that is not missing and not
    already one of the labels; anything else is a :class:`ParameterError` naming the argument.
    """
    column = domain.column
    box = np.empty(1, dtype=object)
    box[0] = other
    if isinstance(other, (bool, np.bool_)) or value_classes(box)[0] <= 0:
        raise ParameterError(f"The 'other' parameter for column {column!r} must be the label of the other cell: a "
                             f"string, number or date that is not missing. Got {safe_repr(other)}. Pass e.g. "
                             f"other=\"Other\".")
    labels = domain.labels
    try:
        cells = labels.append(pd.Index([other], dtype=object if labels.dtype == object else None))
        clash = bool(cells.has_duplicates)
    except Exception as err:  # noqa: BLE001 - a public label whose __hash__/__eq__ raises
        raise ParameterError(f"The 'other' parameter for column {column!r} must be a plain label. Got "
                             f"{safe_repr(other)}.") from err
    if clash:
        raise ParameterError(f"The 'other' label {safe_repr(other)} for column {column!r} is already one of its "
                             f"categories; the other cell counts the values outside the list, so it needs a label of "
                             f"its own. Pass another label (e.g. other=\"Other\") or drop it from categories.")
    if cells.size > MAX_CELLS:
        raise DomainError(f"{labels.size:,} categories and the other cell for column {column!r} are above the limit "
                          f"of {MAX_CELLS:,} (2**26) cells. Group the labels into fewer categories.")
    return CategoryDomain(column, cells, labels)


def _listed_dimension(column: str, categories: Any) -> CategoryDomain:
    if isinstance(categories, (str, bytes)) or not hasattr(categories, "__iter__"):
        raise ParameterError(f"The 'categories' parameter for column {column!r} must be a list of labels. "
                             f"Got {safe_repr(categories)}.")
    # Refused from its size before anything is built: 2**26 + 1 labels would take seconds and gigabytes to hash.
    try:
        size = len(categories)
    except Exception:  # noqa: BLE001 - an iterator (read below, at most one label past the limit) or a bad __len__
        size = None
    cut = size is None
    if size is None:
        try:
            categories = list(itertools.islice(iter(categories), MAX_CELLS + 1))
        except Exception as err:  # noqa: BLE001 - an iterable whose iteration raises
            raise ParameterError(f"The 'categories' parameter for column {column!r} must be a list of labels. "
                                 f"Got {safe_repr(categories)}.") from err
        size = len(categories)
    if size > MAX_CELLS:
        raise DomainError(f"{f'More than {MAX_CELLS:,}' if cut else f'{size:,}'} categories for column "
                          f"{column!r} are above the limit of {MAX_CELLS:,} (2**26) cells, as every category gets "
                          f"its own noisy count. Group the labels into fewer categories.")
    # An Index (e.g. a CategoricalDtype's categories) is kept as is: it is immutable, and its uniqueness,
    # once known, is not computed again (each check below hashes every label).
    try:
        if type(categories) is pd.Index:
            index = categories if categories.name is None else categories.rename(None)
        else:
            index = pd.Index(list(categories))
        if isinstance(index, pd.MultiIndex):
            raise TypeError("tuples")
        duplicated, missing = index.has_duplicates, index.hasnans
        if not duplicated and index.dtype == object:
            # Python objects: hash and compare every label now (a label whose __hash__/__eq__ raises is a
            # public error); numbers, strings and dates of a typed Index cannot raise, and their hash
            # table is the one has_duplicates just built.
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
