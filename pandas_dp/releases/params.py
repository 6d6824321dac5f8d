"""Parameter rules as data: what every release method accepts, checked in one place.

Each release method declares its knobs as a :class:`ParamTable` of :class:`Param`
entries (name, constraint, default, one-line help), in the spirit of
scikit-learn's parameter-constraint tables. The table checks a call's keyword
arguments (unknown names, types, ranges) before any budget is charged, and the
same table is read by the command line (allowed keys per method), the
documentation and the conformance suite, so a knob is declared once.

The shared checks of every release (columns, rng, flags, choices) live here too.
"""

from __future__ import annotations

import inspect
import math
import numbers
import textwrap
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd

from pandas_dp.errors import PandasDPError, ParameterError
from pandas_dp.noise.csprng import SecureRandom
from pandas_dp.privacy.units import UnitArguments
from pandas_dp._utils.checks import check_flag, integer_in
from pandas_dp._utils.rational import safe_repr

__all__ = ["Constraint", "Options", "Flag", "Integer", "Real", "AutoOr", "PrivacyUnit", "Param", "ParamTable",
           "POSITIONAL", "KEYWORD", "VAR_KEYWORD", "REQUIRED", "UNIT_PARAMS", "COLUMN_SHAPES", "fill_doc",
           "check_rng", "check_flag", "check_choice", "check_columns"]

#: Kinds of a parameter in a release's signature (those of :class:`inspect.Parameter`).
POSITIONAL = inspect.Parameter.POSITIONAL_OR_KEYWORD
KEYWORD = inspect.Parameter.KEYWORD_ONLY
VAR_KEYWORD = inspect.Parameter.VAR_KEYWORD


class Constraint:
    """A rule for one parameter's value; ``check`` returns the normalised value or raises."""

    def check(self, value: Any, name: str) -> Any:  # pragma: no cover - interface
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - interface
        raise NotImplementedError


@dataclass(frozen=True)
class Options(Constraint):
    """One of a fixed set of strings."""

    choices: tuple[str, ...]

    def check(self, value: Any, name: str) -> str:
        return check_choice(value, name, self.choices)

    def describe(self) -> str:
        return " | ".join(repr(c) for c in self.choices)


@dataclass(frozen=True)
class Flag(Constraint):
    """``True`` or ``False`` (numpy booleans accepted)."""

    def check(self, value: Any, name: str) -> bool:
        return check_flag(value, name)

    def describe(self) -> str:
        return "bool"


@dataclass(frozen=True)
class Integer(Constraint):
    """An integer (not a bool) of at least ``low`` (and at most ``high``)."""

    low: int
    high: int | None = None
    hint: str = ""

    def check(self, value: Any, name: str) -> int:
        number = integer_in(value, self.low, self.high)
        if number is None:
            span = f">= {self.low}" if self.high is None else f"in [{self.low}, {self.high}]"
            raise ParameterError(f"The '{name}' parameter must be an integer {span}. Got {safe_repr(value)}."
                                 f"{self.hint}")
        return number

    def describe(self) -> str:
        return f"int >= {self.low}" if self.high is None else f"int in [{self.low}, {self.high}]"


@dataclass(frozen=True)
class Real(Constraint):
    """A real number in a range; exact rationals are kept, other numbers become floats."""

    low: float
    high: float | None = None
    low_open: bool = False
    allow_inf: bool = False

    def check(self, value: Any, name: str) -> float | Fraction:
        if isinstance(value, (bool, np.bool_, np.timedelta64)) or not isinstance(value, numbers.Real):
            raise ParameterError(f"The '{name}' parameter must be a number. Got {safe_repr(value)}.")
        try:
            v = float(value)
        except (OverflowError, ValueError) as err:
            raise ParameterError(f"The '{name}' parameter must be a finite number. Got {safe_repr(value)}.") from err
        bad = math.isnan(v) or (math.isinf(v) and not self.allow_inf) or v < self.low \
            or (self.low_open and v == self.low) or (self.high is not None and v >= self.high)
        if bad:
            raise ParameterError(f"The '{name}' parameter must be a finite number {self.describe()}. "
                                 f"Got {safe_repr(value)}.")
        return value if isinstance(value, Fraction) else v

    def describe(self) -> str:
        if self.high is not None:
            return f"({self.low}, {self.high})"
        return f"> {self.low}" if self.low_open else f">= {self.low}"


@dataclass(frozen=True)
class AutoOr(Constraint):
    """The string ``"auto"`` or a value of another constraint (whose message is replaced by ``message``)."""

    inner: Constraint
    message: str = ""

    def check(self, value: Any, name: str) -> Any:
        if isinstance(value, str) and value == "auto":
            return "auto"
        try:
            return self.inner.check(value, name)
        except ParameterError as err:
            if not self.message:
                raise
            raise ParameterError(self.message.format(name=name, value=safe_repr(value))) from err

    def describe(self) -> str:
        return f"'auto' | {self.inner.describe()}"


@dataclass(frozen=True)
class PrivacyUnit(Constraint):
    """The privacy unit and its public bounds: one constraint over the four arguments of
    :data:`~pandas_dp.privacy.units.UNIT_ARGUMENTS`.

    The release's entry function gathers them into one
    :class:`~pandas_dp.privacy.units.UnitArguments`, whose ``bounds(columns, reserved)`` checks them and
    builds the :class:`~pandas_dp.privacy.units.UnitBounds` once (they are checked together, against
    the frame's column labels, so no single value is checked here).
    """

    def check(self, value: Any, name: str) -> Any:
        return value

    def describe(self) -> str:
        return "a privacy unit column and its public bounds"

    @staticmethod
    def gather(privacy_unit: Any = None, max_rows: Any = None, max_cells: Any = None,
               max_rows_per_cell: Any = None) -> UnitArguments:
        """The one object that carries the four arguments down the release."""
        return UnitArguments(privacy_unit, max_rows, max_cells, max_rows_per_cell)


#: The default of a required parameter (it has none).
REQUIRED: Any = inspect.Parameter.empty
_NO_DEFAULT = REQUIRED

#: How a parameter's value names columns of the frame (:attr:`Param.names`): ``"label"`` one column label;
#: ``"labels"`` one label or a list of labels; ``"tables"`` a list of tables, each a list of labels;
#: ``"keys"`` a dict keyed by column labels (any other value names no column).
COLUMN_SHAPES = ("label", "labels", "tables", "keys")


@dataclass(frozen=True)
class Param:
    """One parameter: its name, rule, default and a one-line help.

    ``kind`` is its kind in the release's signature (keyword-only for knobs); ``type`` and ``doc``
    are its numpydoc paragraph (type line and description), which the accessors' docstrings are
    generated from (:func:`fill_doc`); ``help`` is the one-line version. ``names`` says how its value
    names columns of the frame (one of :data:`COLUMN_SHAPES`; empty: it names none): the command line
    checks every column a spec names against the input's header before any charge, reading which
    arguments name columns from this declaration (:meth:`columns_in`).
    """

    name: str
    constraint: Constraint | None
    default: Any = _NO_DEFAULT
    help: str = ""
    #: Checked against the public domain afterwards (``None``: accepted as is).
    optional: bool = False
    kind: inspect._ParameterKind = KEYWORD
    type: str = ""
    doc: str = ""
    names: str = ""

    def __post_init__(self) -> None:
        if self.names and self.names not in COLUMN_SHAPES:
            raise ValueError(f"Param {self.name!r}: names={self.names!r} is not one of {COLUMN_SHAPES}")

    def columns_in(self, value: Any) -> list[Any]:
        """The column labels ``value`` names, read by its declared shape (:attr:`names`); ``[]`` when none.

        Values of another shape name no column (the release's own check reports them).

        Examples
        --------
        >>> Param("workload", None, names="tables").columns_in([["age", "sex"], ["sex", "state"]])
        ['age', 'sex', 'sex', 'state']
        >>> Param("by", None, names="labels").columns_in("state")
        ['state']
        >>> Param("other", None, names="keys").columns_in("Other")
        []
        """
        if not self.names or value is None:
            return []
        if self.names == "keys":
            return list(value) if isinstance(value, Mapping) else []
        if self.names == "tables":
            tables = value if isinstance(value, (list, tuple)) else []
            return [c for t in tables if isinstance(t, (list, tuple)) for c in t]
        if isinstance(value, (list, tuple)):
            return list(value) if self.names == "labels" else []
        return [] if isinstance(value, (Mapping, set)) else [value]

    def paragraph(self, indent: str = "") -> str:
        """The numpydoc paragraph of this parameter (``name : type`` and its description)."""
        head = f"**{self.name}" if self.kind is VAR_KEYWORD else self.name
        if self.type:
            head += f" : {self.type}"
        body = textwrap.dedent(self.doc).strip() or (self.help[:1].upper() + self.help[1:] + ".")
        lines = [indent + head] + [indent + "    " + line if line else "" for line in body.splitlines()]
        return "\n".join(lines)

    @property
    def required(self) -> bool:
        return self.default is _NO_DEFAULT

    def check(self, value: Any) -> Any:
        if value is None and self.optional:
            return None
        if self.constraint is None:
            return value
        try:
            return self.constraint.check(value, self.name)
        except PandasDPError:
            raise
        except Exception as err:  # noqa: BLE001 - the value's own __float__, __lt__, __eq__... raised
            raise ParameterError(f"The '{self.name}' parameter must be {self.constraint.describe()}; its value "
                                 f"could not be read ({type(err).__name__} from the value itself). Got "
                                 f"{safe_repr(value)}.") from err


@dataclass(frozen=True)
class ParamTable:
    """The knobs of one release method, in order."""

    owner: str
    params: tuple[Param, ...] = ()

    def __iter__(self) -> Iterator[Param]:
        return iter(self.params)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.params if not p.required}

    def __getitem__(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def signature(self, first: tuple[inspect.Parameter, ...] = ()) -> inspect.Signature:
        """The signature this table declares (after ``first``, e.g. ``self`` or ``frame``), without annotations."""
        return inspect.Signature([*first, *(inspect.Parameter(p.name, p.kind, default=p.default)
                                            for p in self.params)])

    def paragraphs(self, names: Sequence[str] | None = None, indent: str = "") -> str:
        """The numpydoc paragraphs of ``names`` (default: every parameter), in table order."""
        chosen = [p for p in self.params if names is None or p.name in names]
        return "\n".join(p.paragraph(indent) for p in chosen)

    def validate(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The checked knobs with defaults filled in; unknown names raise first."""
        extra = sorted(set(kwargs) - set(self.names), key=str)
        if extra:
            if not self.params:
                raise ParameterError(f"{self.owner} takes no parameters {extra}. "
                                     f"Remove them or choose a method that uses them.")
            raise ParameterError(f"{self.owner} does not take {extra}; remove them. Its parameters: "
                                 f"{list(self.names)}.")
        out: dict[str, Any] = {}
        for p in self.params:
            if p.name in kwargs:
                out[p.name] = p.check(kwargs[p.name])
            elif p.required:
                raise ParameterError(f"{self.owner} needs the '{p.name}' parameter ({p.help}).")
            else:
                out[p.name] = p.default
        return out


# ----------------------------------------------------------------------- shared checks

def check_rng(rng: Any) -> np.random.Generator | SecureRandom | None:
    """``None`` or a :class:`~pandas_dp.noise.laplace.SecureRandom` (cryptographically secure noise), or a numpy
    Generator (reproducible, not for production)."""
    if rng is None or isinstance(rng, (np.random.Generator, SecureRandom)):
        return rng
    hint = " Pass rng=np.random.default_rng(seed) for a reproducible experiment." if isinstance(
        rng, (int, np.integer)) else ""
    raise ParameterError(
        f"The 'rng' parameter must be None or a pandas_dp.noise.laplace.SecureRandom (secure randomness, for production), "
        f"or a numpy.random.Generator "
        f"(reproducible experiments only). Got {safe_repr(rng)}.{hint}"
    )


def check_choice(value: Any, name: str, choices: Sequence[str]) -> str:
    """One of a fixed set of string options."""
    if not (isinstance(value, str) and _member(str.__str__(value), choices)):
        raise ParameterError(f"The '{name}' parameter must be one of {list(choices)}. Got {safe_repr(value)}.")
    return str.__str__(value)


def _member(value: str, choices: Sequence[str]) -> bool:
    return any(value == c for c in choices)


def _label_ok(label: Any) -> bool:
    try:
        hash(label)
    except Exception:  # noqa: BLE001 - unhashable, or a __hash__ that raises (np.timedelta64 raises ValueError)
        return False
    return True


def _names_one_column(labels: pd.MultiIndex, label: Any) -> bool:
    """Whether ``label`` selects exactly one column of MultiIndex columns as a Series (``frame[label]``).

    A whole tuple does; so does a leading part whose one column has only empty names below it
    (pandas then returns that column, e.g. ``("v", "")`` for ``"v"``). Any other part selects a frame.
    """
    key = label if isinstance(label, tuple) else (label,)
    if len(key) > labels.nlevels:
        return False
    below = [t[len(key):] for t in labels if t[:len(key)] == key]
    return len(below) == 1 and all(part == "" for part in below[0])


def check_columns(frame: Any, columns: Any, *, name: str = "columns") -> list[Any]:
    """The released column labels: one label or a non-empty list of distinct labels present in ``frame``.

    Only the frame's column labels are read (public); a frame whose labels repeat cannot be released
    from, since a label would not name one column. Labels that cannot be hashed or compared (a list, a
    dict, an object whose ``__hash__`` or ``__eq__`` raises) are refused with a :class:`ParameterError`.
    """
    if isinstance(columns, (list, tuple)):
        cols = list(columns)
        if not cols:
            raise ParameterError(f"The '{name}' parameter is empty; pass at least one column of the frame.")
    else:
        cols = [columns]
    bad = [c for c in cols if not _label_ok(c)]
    if bad:
        raise ParameterError(f"The '{name}' parameter must name columns by their labels. Got {safe_repr(bad[0])}, "
                             f"which is not a valid column label.")
    # The frame's own Index when it is one: its hash table (built once per frame) answers ``in``.
    labels = frame.columns if isinstance(frame.columns, pd.Index) else pd.Index(frame.columns)

    def shown_columns() -> str:  # built only for a message
        return safe_repr(list(labels[:20]), 400)

    try:
        missing = [c for c in cols if c not in labels]
        partial = [c for c in cols if isinstance(labels, pd.MultiIndex) and c not in missing
                   and not _names_one_column(labels, c)]
        # Distinct labels: 1, 1.0 and True are different columns of a frame, so the type is part of the key.
        distinct = len({(type(c), c) for c in cols}) == len(cols)
        repeated = [c for c in cols if int((labels == c).sum()) > 1] if not labels.is_unique else []
    except PandasDPError:
        raise
    except Exception as err:  # noqa: BLE001 - a label's own __eq__ raised while compared with the frame's
        raise ParameterError(f"The '{name}' parameter {safe_repr(columns)} cannot be compared with the frame's "
                             f"column labels ({type(err).__name__}); pass the labels as they appear in "
                             f"frame.columns: {shown_columns()}.") from err
    if missing:
        raise ParameterError(
            f"Column(s) {safe_repr(missing, 200)} of '{name}' not in the frame; check spelling. Columns: "
            f"{shown_columns()}."
        )
    if partial:
        raise ParameterError(
            f"The frame's columns are a MultiIndex, and {safe_repr(partial[0], 100)} of '{name}' names a group of "
            f"its columns, not one column. Name each column by its whole tuple (e.g. {name}=[{safe_repr(labels[0])}"
            f"]), or flatten the columns first: frame.columns = ['_'.join(map(str, c)) for c in frame.columns]. "
            f"Columns: {shown_columns()}.")
    if not distinct:
        raise ParameterError(f"The '{name}' parameter repeats a column: {safe_repr(cols, 200)}. Pass each column "
                             f"once.")
    if repeated:
        raise ParameterError(f"Column label(s) {safe_repr(repeated, 200)} appear more than once in the frame, so "
                             f"'{name}' is ambiguous. Rename the duplicate columns (frame.columns) first.")
    return cols


#: The privacy unit and its bounds, as every release but count-of-counts declares them (one constraint).
UNIT_PARAMS: tuple[Param, ...] = tuple(Param(name, PrivacyUnit(), None, kind=KEYWORD, type=type_, doc=doc,
                                             names="label" if name == "privacy_unit" else "")
                                       for name, type_, doc in (
    ("privacy_unit", "column label, optional", """
        The column identifying each person (rider, customer, household): neighbouring
        frames then differ by all the rows of one unit. Default: one row is one unit."""),
    ("max_rows", "int, \"auto\" or AutoMaxRows, optional", """
        With ``privacy_unit``: keep at most this many rows per unit, chosen at random
        (``"auto"`` chooses it privately with 5% of the loss; ``pandas_dp.AutoMaxRows(share=0.2)``
        with another share, for few units or a small epsilon)."""),
    ("max_cells", "int, optional", """
        With ``privacy_unit``, instead of ``max_rows``: at most ``max_cells`` distinct cells
        (groups) per unit, ``max_rows_per_cell`` rows in each (L1 ``c r``, L2 ``sqrt(c) r``)."""),
    ("max_rows_per_cell", "int, optional", """
        With ``max_cells``: at most this many rows of a unit in each of its cells."""),
))


def fill_doc(doc: str | None, table: ParamTable) -> str:
    """``doc`` with every marker line ``{name ...}`` replaced by those parameters' paragraphs from ``table``.

    The accessors' docstrings carry such markers where the paragraphs generated from the parameter
    tables go (the method list, every method's knobs, the tree's knobs, the privacy unit...), indented
    like the marker, so they cannot drift. A name not in ``table`` raises ``KeyError`` at import.
    """
    out: list[str] = []
    for line in (doc or "").splitlines():
        key = line.strip()
        if key.startswith("{") and key.endswith("}") and key[1:-1].replace("_", "").replace(" ", "").isalpha():
            names = key[1:-1].split()
            indent = line[:len(line) - len(line.lstrip())]
            text = "\n".join(table[name].paragraph() for name in names)
            out.extend(indent + part if part else "" for part in text.splitlines())
        else:
            out.append(line)
    return "\n".join(out)


def table_of(owner: str, *params: Param) -> ParamTable:
    """Shorthand for a :class:`ParamTable`."""
    return ParamTable(owner, tuple(params))


Validator = Callable[..., Any]
