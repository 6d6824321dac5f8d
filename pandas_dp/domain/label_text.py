"""Label text of key discovery: one label per value class, numbers spelt one way, a public order.

Key discovery (``histogram(column, categories="discover")``) releases labels found in the rows,
so how a label is shown must be a function of the label alone, never of the rows' order or of
the dtype one odd row can give a column. :func:`labels_and_codes` turns the values of one column
(a whole column, one partition, or the concatenated partial label lists of partitions) into the
distinct labels and every value's position among them; :func:`public_order` sorts released labels
by a public rule. The engines count with these rules (:mod:`pandas_dp.engines`); nothing here
raises or warns on a value (the boundary rule).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.domain.categories import is_hashable
from pandas_dp.domain.labels import value_classes

__all__ = ["labels_and_codes", "public_order"]


_BOOL_CLASS, _NUMBER_CLASS, _STRING_CLASS = 1, 2, 3  # pandas_dp.domain.labels: -1 missing, 0 not plain, 1 boolean, 2 number, 3 string, 4 other


def _factorize_plain(values: Any) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize`` with every hostile value dropped (a private ``__hash__``/``__eq__`` may raise)."""
    try:
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
    except Exception:  # noqa: BLE001 - a private value's own __hash__/__eq__ may raise anything
        arr = np.asarray(pd.Series(values, dtype=object).to_numpy(), dtype=object)
        ok = np.frompyfunc(is_hashable, 1, 1)(arr).astype(bool) if arr.size else np.zeros(0, bool)
        codes = np.full(arr.size, -1, dtype=np.int64)
        try:
            sub, uniques = pd.factorize(pd.Series(arr[ok], dtype=object), use_na_sentinel=True)
        except Exception:  # noqa: BLE001 - equality that raises between hashable values: count nothing
            return np.array([], dtype=object), codes
        codes[ok] = sub
    return np.asarray(uniques), np.asarray(codes, dtype=np.int64)


def _canonical_numbers(labels: np.ndarray) -> np.ndarray:
    """One spelling per number, whatever the rows: whole numbers as ``int``, other floats as ``float``.

    Equal numbers of different types (``1``, ``1.0``, ``np.int8(1)``, ``Fraction(1, 2)`` and
    ``0.5``) form one label, and which of them came first in the rows must not show; nor may the
    column's dtype, which one odd row can change (an ``int64`` column with one float becomes
    ``float64``). A number a float does not hold exactly (``Decimal("0.1")``, integers past
    2**53) keeps its own spelling; the map is one-to-one, as equal canonical forms would mean
    equal numbers.
    """
    as_float = pd.to_numeric(pd.Series(labels, dtype=object), errors="coerce").to_numpy(dtype=float)
    try:
        exact = np.asarray(np.equal(labels, as_float.astype(object)), dtype=bool)
    except Exception:  # noqa: BLE001 - a number type whose comparison raises: keep every spelling
        return labels
    exact &= np.isfinite(as_float)
    whole = exact & (np.floor(as_float) == as_float) & (np.abs(as_float) < 2.0**53)
    out = labels.copy()
    floats = exact & ~whole
    out[floats] = as_float[floats].tolist()
    out[whole] = as_float[whole].astype(np.int64).tolist()
    return out


def labels_and_codes(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """``(labels, codes)``: the distinct present labels and every row's position among them (-1: dropped).

    Values are one label when pandas finds them equal and they are of the same class (numbers,
    strings, other), and numbers get one canonical spelling (:func:`_canonical_numbers`), so the
    labels shown never depend on the order of the rows or on the dtype one odd row can give a
    column. Booleans count as the numbers 1 and 0 (as pandas' ``value_counts`` counts an object
    column): a pandas index cannot hold both ``True`` and ``1``, and keeping them apart only when
    both occur would let the rows decide how labels are shown. Text that spells a number as
    Python writes it is that number (:func:`_numbers_in_text`). Missing values,
    non-scalar values and values whose hashing raises are out of domain: dropped, uncounted,
    silently (the boundary rule).
    """
    classes = value_classes(values)
    classes[classes == _BOOL_CLASS] = _NUMBER_CLASS  # booleans are the numbers 1 and 0 here (see above)
    codes = np.full(len(values), -1, dtype=np.int64)
    parts: list[np.ndarray] = []
    offset = 0
    present = classes > 0
    single = np.unique(classes[present])
    if single.size == 1 and present.all():  # one class, nothing missing: no selection needed
        masks = [(int(single[0]), None)]
    else:
        masks = [(int(c), classes == c) for c in single]
    text = (0, 0)  # where the text labels are among the labels
    for cls, mask in masks:  # at most four classes
        sub = values if mask is None else pd.Series(np.asarray(values.to_numpy(dtype=object))[mask], dtype=object)
        if mask is not None and values.dtype != object:
            sub = sub.infer_objects()
        labels, sub_codes = _factorize_plain(sub)
        if cls == _NUMBER_CLASS:
            labels = _canonical_numbers(np.asarray(labels, dtype=object))
        shifted = np.where(sub_codes >= 0, sub_codes + offset, -1)
        if mask is None:
            codes = shifted
        else:
            codes[mask] = shifted
        parts.append(np.asarray(labels, dtype=object))
        if cls == _STRING_CLASS:
            text = (offset, offset + len(labels))
        offset += len(labels)
    labels_all = np.concatenate(parts) if parts else np.array([], dtype=object)
    return _numbers_in_text(labels_all, codes, text)


#: Whole numbers as ``str()`` writes them, up to 15 digits (exact in a float: below ``2**53``).
_WHOLE_TEXT = r"^(?:0|-?[1-9][0-9]{0,14})$"
#: Candidates for a float as ``repr`` writes it (checked by writing the parsed float back).
_FLOAT_TEXT = r"^-?[0-9]+(?:\.[0-9]+)?(?:e[+-][0-9]+)?$"


def _numbers_in_text(labels: np.ndarray, codes: np.ndarray, text: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """The labels with every text label that spells a number as Python writes it made that number.

    ``dd.from_pandas`` (Dask's default ``dataframe.convert-string``) and ``read_csv`` hold an
    ``object`` column as text, and one odd row makes an ``int64`` or ``bool`` column ``object``: a
    neighbour would otherwise turn every released ``5`` into ``"5"``. So ``"5"``, ``"5.0"``,
    ``"-0.0"``, ``"1e+20"`` (``str()`` of a number, exactly; whole numbers of up to 15 digits) and
    ``"True"``/``"False"`` (booleans count as 1 and 0) are the numbers they spell, merged with
    those numbers' own label; text that does not spell a number that way (``"007"``, ``"+5"``,
    ``"1e3"``, ``"nan"``) stays text.
    The same rule lets a label list's number meet its text (:mod:`pandas_dp.domain.categories`).
    Vectorised over the distinct labels; the rows are re-coded with one gather.
    """
    start, stop = text
    if stop == start:
        return labels, codes
    import pyarrow as pa  # local: pyarrow.compute loads a large module, needed only here
    import pyarrow.compute as pc

    words = pa.array(labels[start:stop], type=pa.string())
    # Vectorised regular expressions (RE2) pick the candidates; only they are parsed.
    whole = np.asarray(pc.match_substring_regex(words, _WHOLE_TEXT), dtype=bool)
    spelt = np.asarray(pc.match_substring_regex(words, _FLOAT_TEXT), dtype=bool) & ~whole
    truth = np.asarray(pc.is_in(words, value_set=pa.array(["True", "False"])), dtype=bool)
    if not (whole.any() or spelt.any() or truth.any()):
        return labels, codes
    numbers = np.empty(stop - start, dtype=object)
    numbers[whole] = np.asarray(pc.cast(words.filter(pa.array(whole)), pa.int64())).tolist()
    if spelt.any():
        candidates = pd.Series(labels[start:stop][spelt], dtype=object)
        parsed = pd.to_numeric(candidates, errors="coerce").to_numpy(dtype=float, na_value=np.nan)  # never raises
        again = parsed.astype(str).astype(object) == labels[start:stop][spelt]  # as repr writes it, exactly
        spelt[spelt] = again & np.isfinite(parsed)
        numbers[spelt] = _canonical_numbers(parsed[again & np.isfinite(parsed)].astype(object))
    numbers[truth] = np.asarray(pc.equal(words.filter(pa.array(truth)), "True"), dtype=np.int64).tolist()
    number = whole | spelt | truth
    values = labels.copy()
    values[start:stop][number] = numbers[number]
    # The labels that are not text, with the converted text, are grouped by equality (numbers meet
    # their spelling; a date never equals a number); the text that stays text keeps its own labels.
    joined = np.ones(len(labels), dtype=bool)
    joined[start:stop] = number
    grouped, uniques = pd.factorize(pd.Series(values[joined], dtype=object))
    kept = np.flatnonzero(~joined)
    remap = np.empty(len(labels) + 1, dtype=np.int64)
    remap[np.flatnonzero(joined)] = grouped
    remap[kept] = len(uniques) + np.arange(kept.size)
    remap[-1] = -1
    new_labels = np.concatenate([np.asarray(uniques, dtype=object), values[kept]])
    if np.array_equal(remap[:-1], np.arange(len(labels))):  # nothing merged or moved: the codes stand
        return new_labels, codes
    return new_labels, remap[codes]


def public_order(labels: np.ndarray) -> np.ndarray:
    """Positions that sort released labels by a public rule: natural order, or by (type, text) when mixed."""
    if labels.size == 0:
        return np.arange(0)
    try:
        return np.asarray(pd.Index(labels).argsort(), dtype=np.int64)
    except Exception:  # noqa: BLE001 - labels of types that do not compare (strings and numbers)
        keys = [(type(v).__name__, str(v)) for v in labels.tolist()]
        return np.asarray(sorted(range(len(keys)), key=keys.__getitem__), dtype=np.int64)


