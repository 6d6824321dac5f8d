"""Immutability of released results: read-only storage, protected hand-outs, value equality.

A release is a fact about the private data that has already been paid for:
nothing a caller does to what a result hands out may change what the result
answers afterwards. Every field of a result is therefore

* **stored frozen** (:func:`freeze`): numpy arrays read-only, pandas objects
  rebuilt over read-only arrays, mappings as :class:`FrozenDict`, lists as
  :class:`FrozenList`, nested frozen dataclasses (the algorithm's ``detail``,
  the public ``domain``) frozen field by field; and
* **handed out protected** (:func:`hand_out`): pandas objects as shallow
  copies (pandas copy-on-write copies their data on the first write), arrays
  as read-only views (a view of a read-only array cannot be made writeable
  again), nested dataclasses as shallow clones holding such views.

Freezing copies only what a result does not own. A release hands its own
fresh arrays over with :func:`lock_in_place` (made read-only where they are,
then shared, never copied: a constant column can stay a read-only broadcast
view of one value), and a Series over the cells of a domain is stored as a
:class:`SeriesOnIndex`: its frozen values on a plain ``RangeIndex`` and the
domain, whose index (an ``IntervalIndex`` of ``2**20`` bins is two arrays of
that size) is built when the Series is first handed out, not during the release.

Stored values survive ``pickle``/``joblib`` (the containers pickle by value
and unpickled fields are frozen again on the way in) and compare by value
(:func:`same`).
"""

from __future__ import annotations

import dataclasses
import math
import weakref
from dataclasses import dataclass, field
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Callable, TypeVar

import numpy as np
import pandas as pd

__all__ = ["FrozenDict", "FrozenList", "SeriesOnIndex", "freeze", "hand_out", "lock_in_place", "same",
           "stored_fields"]

T = TypeVar("T")


def _read_only(kind: str) -> Callable[..., Any]:
    def refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"A {type(self).__name__} of a released result is read-only: {kind} cannot change it. "
                        f"Copy it first, e.g. {'dict' if isinstance(self, dict) else 'list'}(value), "
                        f"and edit the copy.")
    return refuse


class FrozenDict(dict):
    """A read-only ``dict`` (the ``params`` of a release, and mappings nested in it).

    It is a ``dict`` subclass, so ``json.dumps``, ``dict(params)`` and
    ``{**params}`` work as usual (exact numbers are ``Fraction``s:
    ``json.dumps(params, default=str)`` writes them as ``"200/19"``); every
    mutating method raises ``TypeError``.
    It pickles by value (unlike ``types.MappingProxyType``).
    """

    __slots__ = ()
    __setitem__ = _read_only("item assignment")
    __delitem__ = _read_only("item deletion")
    __ior__ = _read_only("'|='")
    clear = _read_only("clear()")
    pop = _read_only("pop()")
    popitem = _read_only("popitem()")
    setdefault = _read_only("setdefault()")
    update = _read_only("update()")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (dict(self),))

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict) -> FrozenDict:
        return self


class FrozenList(list):
    """A read-only ``list`` (lists nested in a release's ``params``).

    Compares equal to a list with the same items, serializes to JSON as a
    list; every mutating method raises ``TypeError``.
    """

    __slots__ = ()
    __setitem__ = _read_only("item assignment")
    __delitem__ = _read_only("item deletion")
    __iadd__ = _read_only("'+='")
    __imul__ = _read_only("'*='")
    append = _read_only("append()")
    extend = _read_only("extend()")
    insert = _read_only("insert()")
    pop = _read_only("pop()")
    remove = _read_only("remove()")
    clear = _read_only("clear()")
    sort = _read_only("sort()")
    reverse = _read_only("reverse()")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (list(self),))

    def __copy__(self) -> FrozenList:
        return self

    def __deepcopy__(self, memo: dict) -> FrozenList:
        return self


#: Arrays locked by a result (their data are the results' own): a new result may share them.
_LOCKED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def _owner(array: np.ndarray) -> Any:
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _is_locked(array: np.ndarray) -> bool:
    owner = _owner(array)
    return _LOCKED.get(id(owner)) is owner


def _read_only_view(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


def _locked(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array``'s data that no holder of the view can make writeable.

    An array that owns its memory is locked in place (the release owns it);
    a view of someone else's memory, or a memory map, is copied first, unless
    it views data a result has already locked.
    """
    if array.base is None and type(array) is np.ndarray:
        owner = array
    elif _is_locked(array):
        return _read_only_view(array)
    elif array.size > 1 and not any(array.strides) and type(array) is np.ndarray:
        # One value broadcast to a shape (a constant column): copy the value, not the shape.
        return lock_in_place(np.broadcast_to(np.array(array[(0,) * array.ndim]), array.shape))
    else:
        owner = np.array(array, copy=True)
    owner.flags.writeable = False
    _LOCKED[id(owner)] = owner
    return owner.view()


def lock_in_place(array: np.ndarray) -> np.ndarray:
    """Hand ``array``'s memory over to a result: made read-only where it is, then shared, never copied.

    The array's owner (the end of its ``base`` chain) becomes read-only and is
    registered as locked, so :func:`freeze` stores views of it instead of a
    copy. Only for memory nothing else holds or writes: a release's own fresh
    arrays (its noisy counts, a read-only broadcast view of one constant).
    Returns ``array`` (now read-only).
    """
    link = array
    while True:  # views made before the lock keep their own flag: lock every link down to the owner
        link.flags.writeable = False
        if not isinstance(link.base, np.ndarray):
            break
        link = link.base
    _LOCKED[id(link)] = link
    return array


class SeriesOnIndex:
    """A stored Series whose index is built on first hand-out: frozen values and the object indexing them.

    ``series`` holds the values (and the name) on a plain ``RangeIndex``;
    ``source.index`` (a :class:`~pandas_dp.domain.grid.Grid`'s cached index) labels
    them. :func:`hand_out` returns ``series`` as a shallow copy (copy-on-write)
    carrying a view of that index, so the handed-out Series is the one
    ``pd.Series(values, index=source.index, name=name)`` would give, and its
    index can be renamed without touching the source's.
    """

    __slots__ = ("series", "source")

    def __init__(self, series: pd.Series, source: Any) -> None:
        self.series = series
        self.source = source

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.series, self.source))

    def __len__(self) -> int:
        return len(self.series)

    def materialize(self) -> pd.Series:
        """The Series with its index (a new shallow copy each call; the index is built once by the source)."""
        out = self.series.copy(deep=False)
        out.index = self.source.index.view()
        return out


def _in_memory_index(index: pd.Index) -> pd.Index:
    """A copy of ``index`` whose data are plain in-memory arrays (no memory maps)."""
    if isinstance(index, pd.RangeIndex):
        return index.copy()
    if isinstance(index, pd.MultiIndex):
        levels: list[Any] = [_in_memory_index(level) for level in index.levels]
        codes: list[Any] = [np.array(c) for c in index.codes]
        return pd.MultiIndex(levels=levels, codes=codes, names=list(index.names))
    if isinstance(index, pd.CategoricalIndex):
        cat = pd.Categorical.from_codes(np.array(index.codes), categories=_in_memory_index(index.categories),
                                        ordered=index.ordered)
        return pd.CategoricalIndex(cat, name=index.name)
    if isinstance(index, pd.IntervalIndex):
        return pd.IntervalIndex.from_arrays(_in_memory_index(index.left), _in_memory_index(index.right),
                                            closed=index.closed, name=index.name)
    if isinstance(index.dtype, np.dtype):
        return pd.Index(np.array(index.to_numpy()), dtype=index.dtype, name=index.name)
    return index.copy(deep=True)


#: Immutable scalars: stored as they are (the checks below would all fall through for them).
_ATOMS = frozenset({str, int, float, bool, complex, bytes, type(None), Fraction})

#: Frozen dataclasses whose fields are frozen already (frozen in place, so a later pass has nothing to do).
_FROZEN: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


@dataclass
class _Freezing:
    """One freezing pass: objects already frozen, and whether values come from unpickling."""

    loaded: bool = False
    seen: set[int] = field(default_factory=set)

    def index(self, index: pd.Index) -> pd.Index:
        # Index data are immutable: a new Index object (its name is settable) is enough, except
        # after unpickling, when joblib's mmap_mode may have left memory maps inside.
        return _in_memory_index(index) if self.loaded else index.copy()

    def series(self, series: pd.Series) -> pd.Series:
        if isinstance(series.dtype, np.dtype):
            data: Any = np.asarray(series.array)
            # Data a result locked already is shared (e.g. dataclasses.replace of a result); any other is copied.
            data = _read_only_view(data) if _is_locked(data) else _locked(np.array(data, copy=True))
        else:  # extension arrays: a private copy (copy-on-write protects it from the shallow copies handed out)
            data = series.array.copy()
        return pd.Series(data, index=self.index(series.index), name=series.name, copy=False)

    def frame(self, frame: pd.DataFrame) -> pd.DataFrame:
        columns = {i: self.series(frame.iloc[:, i]) for i in range(frame.shape[1])}
        out = pd.DataFrame(columns, index=self.index(frame.index), copy=False)
        out.columns = self.index(frame.columns)
        return out

    def dataclass(self, obj: Any) -> Any:
        """Freeze the fields of a frozen dataclass instance in place (it belongs to the release)."""
        if id(obj) in self.seen:
            return obj
        self.seen.add(id(obj))
        if not self.loaded and _FROZEN.get(id(obj)) is obj:
            return obj  # frozen in place by an earlier pass (a release's domain is stored by several fields)
        for name in _field_names(type(obj)):
            value = obj.__dict__.get(name, None) if hasattr(obj, "__dict__") else getattr(obj, name)
            object.__setattr__(obj, name, self(value))
        try:
            _FROZEN[id(obj)] = obj
        except TypeError:  # no weak references (__slots__): frozen again next time, as before
            pass
        return obj

    def __call__(self, value: Any) -> Any:
        if type(value) in _ATOMS:
            return value
        if isinstance(value, np.ndarray):
            return _locked(value)
        if isinstance(value, SeriesOnIndex):
            return SeriesOnIndex(self.series(value.series), self(value.source))
        if isinstance(value, pd.Series):
            return self.series(value)
        if isinstance(value, pd.DataFrame):
            return self.frame(value)
        if isinstance(value, pd.Index):
            return self.index(value)
        if isinstance(value, (FrozenDict, FrozenList)):
            return value
        if isinstance(value, Mapping):
            return FrozenDict({k: self(v) for k, v in value.items()})
        if isinstance(value, tuple) and not hasattr(value, "_fields"):
            return tuple(self(v) for v in value)
        if isinstance(value, list):
            return FrozenList(self(v) for v in value)
        if isinstance(value, (set, frozenset)):
            return frozenset(value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            params = getattr(type(value), "__dataclass_params__", None)
            if params is not None and params.frozen and not isinstance(value, Released):
                return self.dataclass(value)
        return value


def freeze(value: Any, *, loaded: bool = False) -> Any:
    """The frozen form of ``value`` to store in a result (see the module notes).

    ``loaded=True`` for values fresh from unpickling: their indexes are also
    brought into memory (joblib's ``mmap_mode`` loads arrays as memory maps).
    """
    return _Freezing(loaded)(value)


def hand_out(value: Any) -> Any:
    """What a result gives its caller for a stored (frozen) ``value``: a protected view or copy."""
    if isinstance(value, SeriesOnIndex):
        return value.materialize()
    if isinstance(value, (pd.Series, pd.DataFrame)):
        return value.copy(deep=False)
    if isinstance(value, pd.Index):
        return value.copy()
    if isinstance(value, np.ndarray):
        return value.view()
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(hand_out(v) for v in value)
    if (dataclasses.is_dataclass(value) and not isinstance(value, (type, Released))
            and hasattr(value, "__dict__")):
        clone = object.__new__(type(value))
        clone.__dict__.update({k: hand_out(v) for k, v in value.__dict__.items()})
        return clone
    return value


def same(a: Any, b: Any) -> bool:
    """Value equality of stored result fields (exact; missing values equal each other)."""
    if a is b:
        return True
    if isinstance(a, SeriesOnIndex) or isinstance(b, SeriesOnIndex):
        return same(hand_out(a) if isinstance(a, SeriesOnIndex) else a,
                    hand_out(b) if isinstance(b, SeriesOnIndex) else b)
    if isinstance(a, pd.Index):
        return (type(a) is type(b) and a.equals(b) and list(a.names) == list(b.names)
                and a.dtype == b.dtype)
    if isinstance(a, pd.Series):
        return (isinstance(b, pd.Series) and type(a) is type(b) and a.equals(b) and same(a.index, b.index)
                and a.name == b.name and a.dtype == b.dtype)
    if isinstance(a, pd.DataFrame):
        return (isinstance(b, pd.DataFrame) and type(a) is type(b) and a.equals(b) and same(a.index, b.index)
                and same(a.columns, b.columns) and bool((a.dtypes == b.dtypes).all()))
    if isinstance(a, np.ndarray):
        if not isinstance(b, np.ndarray) or a.shape != b.shape or a.dtype != b.dtype:
            return False
        try:
            return bool(np.array_equal(a, b, equal_nan=True))
        except TypeError:
            return bool(np.array_equal(a, b))
    if isinstance(a, Mapping):
        return isinstance(b, Mapping) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return (isinstance(b, (list, tuple)) and isinstance(a, tuple) == isinstance(b, tuple)
                and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b)))
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and all(same(getattr(a, f.name), getattr(b, f.name))
                                          for f in dataclasses.fields(a))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


class Released:
    """Marker base of result classes (a result nested in a value is shared, never cloned)."""


class _StoredField:
    """Data descriptor of one result field: stores :func:`freeze` (value), returns :func:`hand_out` (value).

    The frozen dataclass ``__setattr__`` refuses assignment on instances; the
    dataclass ``__init__`` (and unpickling) go through ``__set__``.
    """

    def __init__(self, name: str, default: Any = dataclasses.MISSING) -> None:
        self.name = name
        self.default = default

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            if self.default is dataclasses.MISSING:
                raise AttributeError(f"{self.name!r} is an attribute of each release, not of the class")
            return self.default
        try:
            return hand_out(obj.__dict__[self.name])
        except KeyError:
            raise AttributeError(self.name) from None

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.name] = freeze(value)


def stored_fields(cls: type[T]) -> type[T]:
    """Store every dataclass field of ``cls`` frozen and hand it out protected (a :class:`_StoredField` each).

    Apply above ``@dataclass(frozen=True, repr=False, eq=False)``: equality
    and ``repr`` are the result's own (value equality from
    :class:`~pandas_dp.results._base.FrozenRelease`, a custom ``__repr__``).
    """
    if not dataclasses.is_dataclass(cls) or not cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        raise TypeError(f"stored_fields applies to frozen dataclasses; {cls.__name__} is not one")
    for f in dataclasses.fields(cls):
        if isinstance(_static(cls, f.name), _StoredField):
            continue
        setattr(cls, f.name, _StoredField(f.name, f.default))
    return cls


def _static(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None
