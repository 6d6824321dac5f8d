"""What a caller observes of one call: outcome class, exception, result structure, warnings, charge.

The boundary rule (DESIGN section 6) says everything a release lets its
caller observe depends on the private rows only through the noisy output.
:class:`Outcome` records those observables of one call in a comparable,
hashable form; :func:`capture` runs a call and builds it. The values of a
release (its noisy numbers) are not part of an outcome: the DP tester tests
them statistically, the outcome comparator ignores them.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import pandas as pd

__all__ = ["IndexKey", "Outcome", "capture", "error_outcome", "structure_of", "type_name"]

#: Attributes of a result object whose structure is observable (dataclass fields only, never computed properties).
RESULT_PARTS = ("counts", "levels", "regions")
_MAX_ITEMS = 64  # items of a tuple/list/dict described one by one (the rest only counted)
_PREVIEW = 3  # labels shown at each end of an index
_TEXT = 200  # characters of a value shown in a description


def type_name(obj: Any) -> str:
    """``module.QualName`` of ``obj``'s type (builtins without the module)."""
    cls = obj if isinstance(obj, type) else type(obj)
    module = getattr(cls, "__module__", "")
    return cls.__qualname__ if module in ("builtins", "") else f"{module}.{cls.__qualname__}"


def _short(text: str, limit: int = _TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception as err:  # a repr that fails is itself described, never raised
        return f"<{type_name(value)}: repr failed with {type(err).__name__}>"


@dataclass(frozen=True, eq=False)
class IndexKey:
    """A pandas ``Index`` compared by labels, dtype and names (``Index.equals`` plus dtype and names).

    The hash uses only the dtype, names, length and end labels, so building a
    key is O(1); equal hashes are confirmed with ``Index.equals`` (vectorized).
    """

    index: pd.Index

    @property
    def _head(self) -> tuple[str, tuple[str, ...], int]:
        idx = self.index
        return str(idx.dtype), tuple(map(_safe_repr, idx.names)), len(idx)

    def __hash__(self) -> int:
        idx = self.index
        ends = (_safe_repr(idx[0]), _safe_repr(idx[-1])) if len(idx) else ()
        return hash((self._head, ends))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IndexKey):
            return NotImplemented
        if other.index is self.index:
            return True
        if self._head != other._head:
            return False
        try:
            a, b = self.index, other.index
            if isinstance(a, pd.IntervalIndex) and isinstance(b, pd.IntervalIndex):
                # IntervalIndex.equals is ~20x slower than comparing its two bound arrays
                return bool(a.closed == b.closed and a.left.equals(b.left) and a.right.equals(b.right))
            return bool(a.equals(b))
        except Exception:  # labels that cannot be compared: compare their reprs
            return list(map(_safe_repr, self.index)) == list(map(_safe_repr, other.index))

    def describe(self) -> str:
        """``5 labels ['a', 'b', ..., 'e'] (dtype str)``."""
        idx = self.index
        n = len(idx)
        if n <= 2 * _PREVIEW:
            shown = ", ".join(_short(_safe_repr(v), 40) for v in idx)
        else:
            shown = ", ".join([*(_short(_safe_repr(v), 40) for v in idx[:_PREVIEW]), "...",
                               *(_short(_safe_repr(v), 40) for v in idx[-_PREVIEW:])])
        names = f", names {list(idx.names)}" if any(x is not None for x in idx.names) else ""
        return f"{n} label{'s' if n != 1 else ''} [{shown}] (dtype {idx.dtype}{names})"


Part = tuple[str, Any]


def _describe_part(value: Any) -> str:
    if isinstance(value, IndexKey):
        return value.describe()
    if isinstance(value, str):
        return _short(value)
    return _short(_safe_repr(value))


def _series_parts(prefix: str, s: pd.Series) -> list[Part]:
    return [(f"{prefix}index", IndexKey(s.index)), (f"{prefix}dtype", str(s.dtype)),
            (f"{prefix}name", _safe_repr(s.name))]


def _frame_parts(prefix: str, f: pd.DataFrame) -> list[Part]:
    return [(f"{prefix}columns", IndexKey(f.columns)), (f"{prefix}index", IndexKey(f.index)),
            (f"{prefix}dtypes", tuple(str(t) for t in f.dtypes))]


def structure_of(result: Any, prefix: str = "", depth: int = 0) -> tuple[Part, ...]:
    """The observable structure of a returned value, without its (noisy) numbers.

    Series: index (labels, dtype, names), dtype and name. DataFrame: columns,
    index and dtypes. ndarray: shape and dtype. Result objects: their type
    and the structure of their ``counts``, ``levels`` and ``regions`` fields.
    Tuples, lists and dicts: length (keys) and each item's type and
    structure. Other values: their type only.
    """
    parts: list[Part] = []
    if isinstance(result, pd.Series):
        parts += _series_parts(prefix, result)
    elif isinstance(result, pd.DataFrame):
        parts += _frame_parts(prefix, result)
    elif isinstance(result, pd.Index):
        parts.append((f"{prefix}labels", IndexKey(result)))
    elif isinstance(result, np.ndarray):
        parts += [(f"{prefix}shape", tuple(result.shape)), (f"{prefix}dtype", str(result.dtype))]
    elif depth < 3 and isinstance(result, (tuple, list)):
        parts.append((f"{prefix}len", len(result)))
        for i, item in enumerate(result[:_MAX_ITEMS]):
            parts.append((f"{prefix}[{i}]", type_name(item)))
            parts += structure_of(item, f"{prefix}[{i}].", depth + 1)
    elif depth < 3 and isinstance(result, Mapping):
        keys = list(result.keys())
        parts.append((f"{prefix}keys", tuple(_safe_repr(k) for k in keys[:_MAX_ITEMS])))
        for k in keys[:_MAX_ITEMS]:
            parts.append((f"{prefix}[{_safe_repr(k)}]", type_name(result[k])))
            parts += structure_of(result[k], f"{prefix}[{_safe_repr(k)}].", depth + 1)
    elif depth < 3 and dataclasses.is_dataclass(result) and not isinstance(result, type):
        names = {f.name for f in dataclasses.fields(result)}
        for name in RESULT_PARTS:
            if name in names:
                value = getattr(result, name)
                if isinstance(value, (pd.Series, pd.DataFrame, pd.Index, np.ndarray)):
                    parts += structure_of(value, f"{prefix}{name}.", depth + 1)
                elif isinstance(value, (tuple, list)):
                    parts.append((f"{prefix}{name}", tuple(
                        IndexKey(v) if isinstance(v, pd.Index) else _safe_repr(v) for v in value)))
    return tuple(parts)


def _chain(err: BaseException) -> tuple[tuple[str, str], ...]:
    """``(type, message)`` of the exceptions chained to ``err`` (``raise ... from``, or raised while handling)."""
    out: list[tuple[str, str]] = []
    node: BaseException = err
    seen = {id(err)}
    while len(out) < 5:
        nxt = node.__cause__ if node.__cause__ is not None else (
            None if node.__suppress_context__ else node.__context__)
        if nxt is None or id(nxt) in seen:
            break
        seen.add(id(nxt))
        out.append((type_name(nxt), str(nxt)))
        node = nxt
    return tuple(out)


def _attributes(err: BaseException) -> tuple[tuple[str, str], ...]:
    """Public attributes of an exception (e.g. ``SchemaError.failure_cases``), as reprs."""
    return tuple(sorted((k, _safe_repr(v)) for k, v in vars(err).items() if not k.startswith("_")))


@dataclass(frozen=True)
class Outcome:
    """Everything a caller can observe of one call, except the released numbers.

    Attributes
    ----------
    kind : {"returned", "raised"}
        Outcome class.
    error_type, error_message : str
        Qualified exception type and ``str(exception)`` (empty when the call returned).
    error_detail : tuple
        Exceptions chained to it (``raise ... from``) as ``(type, message)``,
        then its public attributes as ``(name, repr)``.
    result_type : str
        Qualified type of the returned value (empty when the call raised).
    structure : tuple of (name, value)
        What the returned value looks like: index labels, shape, dtypes,
        levels and regions (see :func:`structure_of`); never its numbers.
    warnings : frozenset of (category, message)
        Warnings emitted during the call.
    charged : Fraction or None
        Budget spent by the call (exact); ``None`` when no budget was open.
    ledger : tuple
        The budget's ledger rows written by the call, without their time stamp.
    """

    kind: Literal["returned", "raised"]
    error_type: str = ""
    error_message: str = ""
    error_detail: tuple[tuple[str, str], ...] = ()
    result_type: str = ""
    structure: tuple[Part, ...] = ()
    warnings: frozenset[tuple[str, str]] = field(default_factory=frozenset)
    charged: Fraction | None = None
    ledger: tuple[tuple[tuple[str, str], ...], ...] = ()

    @property
    def raised(self) -> bool:
        """The call raised an exception."""
        return self.kind == "raised"

    def _what(self) -> str:
        if self.raised:
            short = self.error_type.rsplit(".", 1)[-1]
            return f"raises {short}({_short(self.error_message)!r})"
        short = self.result_type.rsplit(".", 1)[-1]
        article = "an" if short[:1].lower() in "aeiou" or short == "ndarray" else "a"
        return f"returns {article} {short}"

    def describe(self, *, full: bool = False) -> str:
        """One line: ``raises SchemaError('...')`` or ``returns a Histogram``, then warnings and charge.

        With ``full=True`` also the result's structure, the chained
        exceptions and the ledger rows.
        """
        text = self._what()
        if full and self.structure:
            text += " (" + "; ".join(f"{k}: {_describe_part(v)}" for k, v in self.structure) + ")"
        if full and self.error_detail:
            text += " (" + "; ".join(f"{k}: {_short(v)}" for k, v in self.error_detail) + ")"
        if self.warnings:
            shown = ", ".join(f"{c.rsplit('.', 1)[-1]}({_short(m, 80)!r})" for c, m in sorted(self.warnings))
            text += f" with warnings {shown}"
        if self.charged:
            text += f", charging {_fraction_text(self.charged)}"
        if full and self.ledger:
            text += f", ledger rows {[dict(r) for r in self.ledger]}"
        return text

    def describe_against(self, other: Outcome) -> str:
        """One line for this outcome that names what sets it apart from ``other``."""
        text = self._what()
        mine, theirs = dict(self.structure), dict(other.structure)
        if self.kind == other.kind and self.result_type == other.result_type:
            parts = [f"{k}: {_describe_part(v)}" for k, v in self.structure if theirs.get(k, "(absent)") != v]
            parts += [f"no {k}" for k in theirs if k not in mine]
            if parts:
                text += " (" + "; ".join(parts) + ")"
        if self.warnings != other.warnings:
            shown = ", ".join(f"{c.rsplit('.', 1)[-1]}({_short(m, 80)!r})" for c, m in sorted(self.warnings))
            text += f" with warnings {shown}" if shown else " without warnings"
        if self.charged != other.charged:
            text += f", charging {_fraction_text(self.charged)}"
        return text

    def differences(self, other: Outcome) -> list[str]:
        """Readable list of what differs between two outcomes (empty when they are the same)."""
        out: list[str] = []
        same_class = self.kind == other.kind and self.error_type == other.error_type and \
            self.result_type == other.result_type
        if not same_class:
            out.append(f"outcome: {self._what()} vs {other._what()}")
        elif self.error_message != other.error_message:
            out.append(f"exception message: {_short(self.error_message)!r} vs {_short(other.error_message)!r}")
        if same_class and self.error_detail != other.error_detail:
            out.append(f"chained exceptions / attributes: {_short(str(self.error_detail))} vs "
                       f"{_short(str(other.error_detail))}")
        mine, theirs = dict(self.structure), dict(other.structure)
        for key in (list(mine) + [k for k in theirs if k not in mine]) if same_class else ():
            a, b = mine.get(key, "(absent)"), theirs.get(key, "(absent)")
            if a != b:
                out.append(f"{key}: {_describe_part(a)} vs {_describe_part(b)}")
        if self.warnings != other.warnings:
            out.append(f"warnings: {sorted(self.warnings)} vs {sorted(other.warnings)}")
        if self.charged != other.charged:
            out.append(f"budget charged: {_fraction_text(self.charged)} vs {_fraction_text(other.charged)}")
        if self.ledger != other.ledger:
            out.append(f"ledger rows: {[dict(r) for r in self.ledger]} vs {[dict(r) for r in other.ledger]}")
        return out


def _fraction_text(value: Fraction | None) -> str:
    if value is None:
        return "nothing (no budget open)"
    return str(value) if value.denominator == 1 else f"{value} (= {float(value):.6g})"


def error_outcome(err: BaseException, caught: list[warnings.WarningMessage], charged: Fraction | None
                  ) -> Outcome:
    """The outcome of a call that raised ``err``."""
    return Outcome(kind="raised", error_type=type_name(err), error_message=str(err),
                   error_detail=_chain(err) + _attributes(err), warnings=_warning_set(caught),
                   charged=charged)


def _warning_set(caught: list[warnings.WarningMessage]) -> frozenset[tuple[str, str]]:
    return frozenset((type_name(w.category), str(w.message)) for w in caught)


def result_outcome(result: Any, caught: list[warnings.WarningMessage], charged: Fraction | None) -> Outcome:
    """The outcome of a call that returned ``result``."""
    return Outcome(kind="returned", result_type=type_name(result), structure=structure_of(result),
                   warnings=_warning_set(caught), charged=charged)


def capture(call: Callable[[], Any], spent: Callable[[], Fraction] | None = None, *,
            before: Fraction | None = None
            ) -> tuple[Any, BaseException | None, list[warnings.WarningMessage], Fraction | None]:
    """Run ``call()`` recording every warning (filter ``"always"``) and any ``Exception`` it raises.

    Returns ``(result, error, warnings, charged)``: ``result`` is ``None``
    when the call raised; ``charged`` is the change of ``spent()`` across the
    call (``None`` without ``spent``). ``before``, when given, is ``spent()``
    as already read just before the call (a loop of runs passes the previous
    run's reading: one ledger read a run instead of two). ``KeyboardInterrupt``
    and ``SystemExit`` are not captured.
    """
    if before is None:
        before = spent() if spent is not None else None
    result: Any = None
    error: BaseException | None = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = call()
        except Exception as err:  # every exception is an observation of the call
            error = err
    charged = spent() - before if spent is not None and before is not None else None
    return result, error, caught, charged
