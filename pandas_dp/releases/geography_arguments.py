"""Tables by geography: the five arguments that ask for them, gathered once and checked at their points.

``histogram``, ``marginals`` (and ``count_of_counts``'s ``level_weights``) take
the geography as ``by`` (the frame's region columns, coarse to fine),
``hierarchy`` (the public table of regions) or ``by_categories`` (the labels of
one ``by`` column), ``level_weights`` (each level's share of the loss) and
``public_totals`` (published totals per region). The release's entry gathers
them into one :class:`GeographyArguments` and hands it down; as
:class:`~pandas_dp.privacy.units.UnitArguments` does for the privacy unit, the
object checks each of them once, where the release knows what it is checked
against: :meth:`~GeographyArguments.tree` (the public regions, from the frame's
column labels), :meth:`~GeographyArguments.shares` (the levels' shares of the
loss) and :meth:`~GeographyArguments.totals` (the public totals). The checks
are public: nothing here reads a row.

Public totals change the neighbouring relation. Under add/remove-one-row no
two neighbours agree with a published total, so a release with
``public_totals`` is calibrated for :data:`HELD_TOTALS_NEIGHBOURS`: one
record's attributes change (its cells, and its region below the finest level
with totals, within its totalled region) while every total stays; one unit's
records with a ``privacy_unit``. A count query's vector then moves by
``x' - x`` with ``x, x'`` the record's (unit's) non-negative contributions, so
L1 at most twice and squared L2 at most twice the add/remove bound
(``|x - x'|**2 <= |x|**2 + |x'|**2``): :func:`held_totals_sensitivity`,
attained by one record moving between two cells.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import pandas as pd

from pandas_dp._utils.rational import safe_repr, to_fraction
from pandas_dp.algorithms.geography.release import disagreeing_levels
from pandas_dp.algorithms.geography.layout import RegionLayout
from pandas_dp.domain.labels import positions
from pandas_dp.domain.geography import RegionTree, region_tree
from pandas_dp.errors import DomainError, ParameterError
from pandas_dp.privacy.loss import Sensitivity

__all__ = ["GEOGRAPHY_KEYWORDS", "HELD_TOTALS_NEIGHBOURS", "GeographyArguments", "geography_tree", "level_weight",
           "level_shares", "check_public_totals", "held_totals_sensitivity"]

#: The neighbouring relation of a release with ``public_totals`` (recorded in its params and ledger row).
HELD_TOTALS_NEIGHBOURS = "change one record (public totals held)"

#: The release arguments that ask for tables by geography, in signature order.
GEOGRAPHY_KEYWORDS = ("by", "hierarchy", "by_categories", "level_weights", "public_totals")


@dataclass(frozen=True)
class GeographyArguments:
    """The geography arguments of a release call as the caller gave them (public, not yet checked).

    The release's entry function gathers its five keyword arguments (:data:`GEOGRAPHY_KEYWORDS`) into
    this one object and hands it down; each is checked once, by the method that needs it, at the point
    of the release that knows what to check it against.
    """

    by: Any = None
    hierarchy: Any = None
    by_categories: Any = None
    level_weights: Any = None
    public_totals: Any = None

    @property
    def given(self) -> bool:
        """Whether the call asks for tables by geography (any of the five arguments given)."""
        return any(getattr(self, name) is not None for name in GEOGRAPHY_KEYWORDS)

    @property
    def flat(self) -> bool:
        """One level of groups (``by_categories``): the whole loss goes to the groups by default."""
        return self.by_categories is not None

    def check_by(self) -> None:
        """Refuse the geography's other arguments without ``by=`` (the first check of a release by geography)."""
        if self.by is None:
            given = [name for name in GEOGRAPHY_KEYWORDS[1:] if getattr(self, name) is not None]
            raise ParameterError(f"{', '.join(given)} apply to tables by geography: pass by= too (the frame's "
                                 f"geography columns, coarse to fine), e.g. by=['state', 'county'].")

    def tree(self, columns: Any) -> RegionTree:
        """The public region tree (:func:`geography_tree`), from the frame's column labels."""
        return geography_tree(columns, self.by, hierarchy=self.hierarchy, by_categories=self.by_categories)

    def shares(self, levels: tuple[str, ...]) -> tuple[Fraction, ...]:
        """Each level's exact share of the loss from ``level_weights`` (:func:`level_shares`)."""
        return level_shares(self.level_weights, levels, flat=self.flat)

    def totals(self, tree: RegionTree, layout: RegionLayout) -> dict[int, np.ndarray]:
        """``{level position: totals in region order}`` from ``public_totals`` (:func:`check_public_totals`)."""
        return check_public_totals(self.public_totals, tree, layout)


def held_totals_sensitivity(sensitivity: Sensitivity) -> Sensitivity:
    """The sensitivity of a count query under :data:`HELD_TOTALS_NEIGHBOURS`, from its add/remove one.

    One record (unit) changing its attributes removes a non-negative contribution ``x`` and adds
    ``x'``, each within the add/remove bound: ``|x - x'|_1 <= 2 L1`` and
    ``|x - x'|_2**2 <= |x|**2 + |x'|**2 <= 2 L2**2`` (``x . x' >= 0``), both attained by one record
    moving between two cells.

    Examples
    --------
    >>> held_totals_sensitivity(Sensitivity())
    Sensitivity(l1=Fraction(2, 1), l2_squared=Fraction(2, 1))
    """
    return Sensitivity(2 * sensitivity.l1, 2 * sensitivity.l2_squared)


def _by_levels(by: Any) -> list[str]:
    # A str subclass is read as its plain text: its own __eq__/__hash__ are never called.
    if isinstance(by, str) and by:
        return [str.__str__(by)]
    if isinstance(by, (list, tuple)) and by and all(isinstance(c, str) and c for c in by):
        plain = [str.__str__(c) for c in by]
        if len(set(plain)) != len(plain):
            raise ParameterError(f"The 'by' parameter repeats a column: {plain}. List each level once.")
        return plain
    raise ParameterError(f"The 'by' parameter must be a column name or a list of column names, coarse to fine "
                         f"(e.g. by=['state', 'county']). Got {safe_repr(by)}.")


def _category_table(column: str, by_categories: Any) -> pd.DataFrame:
    """The one-level hierarchy table of ``by_categories`` (public labels: checked loudly)."""
    if isinstance(by_categories, (str, bytes, Mapping)) or not hasattr(by_categories, "__len__"):
        raise ParameterError(f"The 'by_categories' parameter must be a list of every group label of column "
                             f"{column!r} (public knowledge). Got {safe_repr(by_categories)}.")
    try:
        listed = list(by_categories)
        labels = pd.Index(listed, dtype=object)
        missing = bool(labels.hasnans)
        repeated = labels[labels.duplicated()].unique().tolist()
    except Exception as err:  # noqa: BLE001 - unhashable labels, a label whose __hash__/__eq__ raises
        raise DomainError(f"The 'by_categories' for column {column!r} must be plain labels (strings, numbers, "
                          f"dates). Got {safe_repr(by_categories)}.") from err
    if len(labels) == 0:
        raise DomainError(f"The 'by_categories' parameter for column {column!r} is empty; list every group label.")
    if missing:
        raise DomainError(f"The 'by_categories' for column {column!r} contain a missing value; pass real labels.")
    if repeated:
        raise DomainError(f"The 'by_categories' for column {column!r} repeat labels {safe_repr(repeated[:5])}; pass "
                          f"each label once.")
    return pd.DataFrame({column: pd.Index(listed)})


def geography_tree(columns: Any, by: Any, *, hierarchy: pd.DataFrame | None = None,
                   by_categories: Any = None) -> RegionTree:
    """The public region tree of a release by geography (the frame's column names only are read).

    Parameters
    ----------
    columns : sequence of labels
        The private frame's column names.
    by : str or list of str
        Geography columns coarse to fine: the levels released below ``"national"``.
    hierarchy : DataFrame, optional
        Public region table: one column per level (others are ignored), one
        row per finest region (rows repeating the same regions are merged, so
        one table of states and counties also serves ``by="state"``).
    by_categories : list, optional
        Every group label of the single ``by`` column (the flat case).

    Raises
    ------
    ParameterError, DomainError, SchemaError
        Before any row is read: wrong arguments, regions that would come from
        the data, failures of the public table (all at once).
    """
    levels = _by_levels(by)
    if hierarchy is not None and by_categories is not None:
        raise ParameterError("Pass either hierarchy= (a public table of regions, one column per level) or "
                             "by_categories= (the labels of one by column), not both.")
    if by_categories is not None:
        if len(levels) != 1:
            raise ParameterError(f"by_categories= lists the groups of one column; got by={levels}. For several "
                                 f"levels pass hierarchy= (one column per level, one row per finest region).")
        hierarchy = _category_table(levels[0], by_categories)
    if hierarchy is None:
        raise DomainError(
            f"A histogram by {levels} needs its regions from public knowledge: pass hierarchy= (a table with "
            f"one column per level {levels}, one row per finest region) or, for one column, by_categories=[...] "
            f"with every label. Regions read from the frame would reveal which ones occur.")
    if not isinstance(hierarchy, pd.DataFrame):
        raise ParameterError(f"The 'hierarchy' parameter must be a pandas DataFrame (one column per level). "
                             f"Got {type(hierarchy).__name__}.")
    cols = list(columns)
    if levels[-1] not in cols:
        raise ParameterError(f"The finest by column {levels[-1]!r} is not a column of the frame; it places every "
                             f"row in its region. Columns: {cols[:20]}.")
    if all(c in hierarchy.columns for c in levels) and list(hierarchy.columns) != levels:
        try:
            hierarchy = hierarchy[levels].drop_duplicates()
        except Exception:  # noqa: BLE001 - unhashable labels (or a __hash__ that raises)
            pass  # unhashable labels: region_tree reports them (SchemaError) with the rest
    return region_tree(cols, None, levels, hierarchy=hierarchy)


def level_weight(value: Any, name: str) -> Fraction:
    """One level's weight as an exact Fraction (a number >= 0; public input, checked loudly)."""
    # np.timedelta64 registers as an Integral (it subclasses np.signedinteger) but is a duration.
    if isinstance(value, (bool, np.bool_, np.timedelta64)) or not isinstance(value, numbers.Real):
        raise ParameterError(f"Level weight {name} must be a number >= 0. Got {safe_repr(value)}.")
    if value == 0:
        return Fraction(0)
    try:
        return to_fraction(value, name=f"level weight {name}")
    except ParameterError as err:
        raise ParameterError(f"Level weight {name} must be a finite number >= 0. Got {safe_repr(value)}.") from err


def level_shares(level_weights: Any, levels: tuple[str, ...] | list[str], *, flat: bool = False,
                 unmeasured: Literal["summed", "dropped"] = "summed") -> tuple[Fraction, ...]:
    """Each level's exact share of the loss from ``level_weights`` (public).

    ``None``: equal shares over every level (``"national"`` included), or for the
    flat case (``by_categories``) the whole loss on the groups. A sequence gives
    one weight per level, coarse to fine with ``"national"`` first; a mapping
    gives them by level name. Weights are non-negative numbers (:func:`level_weight`);
    shares are ``w / sum(w)``, exactly. A level of weight 0 is not measured:

    * ``unmeasured="summed"`` (tables by geography): its tables are the sums of
      its children's, so any level but the finest may have weight 0;
    * ``unmeasured="dropped"`` (count of counts): it is not released either, so
      only the finest levels may (a count-of-counts table of a region cannot be
      estimated from its parent's, and Kuo et al.'s top-down pass needs every
      parent measured), and at least one level is measured.

    Examples
    --------
    >>> level_shares([1, 1, 2], ("national", "state", "county"))
    (Fraction(1, 4), Fraction(1, 4), Fraction(1, 2))
    >>> level_shares(None, ("national", "origin"), flat=True)
    (Fraction(0, 1), Fraction(1, 1))
    >>> level_shares([1, 0, 0], ("national", "state", "county"), unmeasured="dropped")
    (Fraction(1, 1), Fraction(0, 1), Fraction(0, 1))
    >>> level_shares({"national": 1, "state": 3}, ("national", "state"), unmeasured="dropped")
    (Fraction(1, 4), Fraction(3, 4))
    """
    n = len(levels)
    summed = unmeasured == "summed"
    if level_weights is None:
        raw = [Fraction(0)] * (n - 1) + [Fraction(1)] if flat else [Fraction(1)] * n
    else:
        if isinstance(level_weights, Mapping):
            keys = list(level_weights)
            if not all(isinstance(k, str) for k in keys) or set(map(str.__str__, keys)) != set(levels) \
                    or len(keys) != n:
                zero = "0 leaves a level unmeasured" if summed else "0 leaves a fine level out"
                raise ParameterError(f"level_weights= as a mapping must give a weight to every level {list(levels)} "
                                     f"({zero}). Got keys {safe_repr(keys)}.")
            values = [level_weights[name] for name in levels]
        elif isinstance(level_weights, (list, tuple, np.ndarray, pd.Series)) and not isinstance(level_weights, str):
            values = list(level_weights)
            if len(values) != n:
                raise ParameterError(f"level_weights= must give one weight per level {list(levels)} (national "
                                     f"first, {n} in all). Got {len(values)}: {safe_repr(values)}.")
        else:
            default = "uniform" if summed else "equal"
            raise ParameterError(f"The 'level_weights' parameter must be a list of {n} weights (one per level "
                                 f"{list(levels)}), a dict keyed by level, or None ({default}). Got "
                                 f"{safe_repr(level_weights)}.")
        raw = [level_weight(v, repr(name)) for v, name in zip(values, levels)]
    if summed and raw[-1] == 0:
        raise ParameterError(f"The finest level {levels[-1]!r} needs a positive weight: its regions cannot be "
                             f"estimated from their parents alone. Got level_weights={safe_repr(level_weights)}.")
    if not summed:
        measured = [i for i, w in enumerate(raw) if w > 0]
        if not measured:
            raise ParameterError(f"level_weights= needs a positive weight for at least one level {list(levels)}. "
                                 f"Got {safe_repr(level_weights)}.")
        if measured != list(range(len(measured))):
            raise ParameterError(f"level_weights= may give 0 only to the finest levels (they are then not "
                                 f"released): a count-of-counts level is matched to the measured level above it. "
                                 f"Got {safe_repr(level_weights)} for {list(levels)}; e.g. [1, 0, 0] releases the "
                                 f"national table alone.")
    total = sum(raw, Fraction(0))
    return tuple(w / total for w in raw)


def _totals_of(series: Any, name: str, regions: pd.Index) -> np.ndarray:
    """One level's public totals in the tree's region order (public input: checked loudly)."""
    fix = (f"Pass a pandas Series indexed by every region of level {name!r} (each once), of non-negative "
           f"finite numbers (public facts, never computed from the private frame).")
    if not isinstance(series, pd.Series):
        raise ParameterError(f"public_totals[{name!r}] must be a pandas Series. Got {safe_repr(series)}. {fix}")
    if not pd.api.types.is_numeric_dtype(series.dtype) or pd.api.types.is_bool_dtype(series.dtype) \
            or pd.api.types.is_complex_dtype(series.dtype):
        raise ParameterError(f"public_totals[{name!r}] must hold numbers; got dtype {series.dtype}. {fix}")
    values = series.to_numpy(dtype=np.float64, na_value=np.nan)
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ParameterError(f"public_totals[{name!r}] holds a missing, infinite or negative total. {fix}")
    try:
        index = pd.Index(series.index, dtype=object)
        bad = bool(index.hasnans) or not index.is_unique
        if not bad:
            where = positions(index, pd.Series(regions, dtype=object))
    except Exception as err:  # noqa: BLE001 - unhashable labels or a label whose __eq__/__hash__ raises
        raise ParameterError(f"public_totals[{name!r}] must be indexed by region labels. {fix}") from err
    if bad:
        raise ParameterError(f"public_totals[{name!r}] repeats a region or has a missing label. {fix}")
    if len(index) != len(regions) or np.any(where < 0):
        missing = [regions[i] for i in np.flatnonzero(where < 0)[:5]]
        raise ParameterError(f"public_totals[{name!r}] must give one total for each of the {len(regions)} regions "
                             f"of level {name!r}, and nothing else; got {len(index)} labels"
                             f"{', missing ' + safe_repr(missing) if missing else ''}. {fix}")
    return values[where]


def check_public_totals(public_totals: Any, tree: RegionTree, layout: RegionLayout) -> dict[int, np.ndarray]:
    """``{level position: totals in region order}`` from ``public_totals={level name: Series}`` (public input).

    Raises
    ------
    ParameterError
        Not a dict keyed by level names, a Series that misses or adds a region, a value that is not a
        finite non-negative number, or totals of two levels that disagree (a parent's total is not the
        sum of its children's).
    """
    if public_totals is None:
        return {}
    if not isinstance(public_totals, Mapping) or not public_totals:
        raise ParameterError(f"The 'public_totals' parameter must be a dict {{level: Series of totals by region}}, "
                             f"e.g. {{'state': pd.Series({{'A': 120, 'B': 80}})}}. Got {safe_repr(public_totals)}.")
    try:
        items = list(public_totals.items())
    except Exception as err:  # noqa: BLE001 - a mapping whose items() raises
        raise ParameterError("The 'public_totals' parameter must be a plain dict {level: Series}.") from err
    out: dict[int, np.ndarray] = {}
    for key, series in items:
        plain = str.__str__(key) if isinstance(key, str) else None
        lvl = tree.level_names.index(plain) if plain is not None and plain in tree.level_names else None
        if lvl is None:
            raise ParameterError(f"public_totals names level {safe_repr(key)}; the levels are "
                                 f"{list(tree.level_names)}.")
        out[lvl] = _totals_of(series, tree.level_names[lvl], tree.regions[lvl])
    pair = disagreeing_levels(out, layout)
    if pair is not None:
        coarse, fine = pair
        raise ParameterError(f"public_totals of level {tree.level_names[fine]!r} do not add up to those of level "
                             f"{tree.level_names[coarse]!r}: public facts must agree with each other.")
    return out
