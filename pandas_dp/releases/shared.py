"""What several release kinds check or compute alike (histograms, tables by geography, table sets).

``max_rows="auto"``'s choice of the bound (:func:`choose_max_rows`: flat
histograms and histograms by geography); a table set's workload, its public
dimensions, its weights and its cached plan (:func:`workload_columns`,
:func:`dimensions`, :func:`workload_weights`, :func:`cached_plan`: ``marginals``
and ``marginals`` by geography). The geography's own arguments are in
:mod:`pandas_dp.releases.geography_arguments`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp._utils.rational import safe_repr
from pandas_dp.algorithms.marginals.alone import plan_no_worse_than_alone
from pandas_dp.algorithms.marginals.ordered import MAX_ORDERED_SIZE, AttributeQueries
from pandas_dp.algorithms.marginals.plan import Objective, ResidualPlan
from pandas_dp.algorithms.marginals.workload import Workload
from pandas_dp.domain.grid import BinDomain, Grid, make_grid, other_labels
from pandas_dp.errors import DomainError, ParameterError
from pandas_dp.privacy.loss import Noise, PrivacyLoss, Sensitivity
from pandas_dp.privacy.units import AUTO_QUANTILE, AUTO_STEPS
from pandas_dp.releases.params import check_columns

__all__ = ["choose_max_rows", "MAX_SUBSETS", "workload_columns", "dimensions", "workload_weights", "cached_plan"]


def choose_max_rows(contributions: np.ndarray, noise: Noise, rng: Any, quantile: float = AUTO_QUANTILE) -> int:
    """``max_rows="auto"``: the ``quantile`` (:data:`~pandas_dp.privacy.units.AUTO_QUANTILE`) of the units' noisy rows.

    ``contributions[i]`` is the number of units whose rows in the domain fall in step ``i`` of
    :data:`~pandas_dp.privacy.units.AUTO_STEPS`; one unit moves one cell by one, so ``noise`` (calibrated
    to sensitivity 1) makes the histogram DP. The bound is post-processing of the noisy
    histogram: its cumulative sums made non-decreasing (running maximum), then the smallest step
    whose cumulative count reaches ``quantile`` of the total (the first step when the noisy
    total is not positive).
    """
    noisy = noise.add(np.asarray(contributions, dtype=np.int64), rng).astype(np.float64)
    cum = np.maximum.accumulate(np.cumsum(noisy))
    if cum[-1] <= 0:
        return AUTO_STEPS[0]
    return AUTO_STEPS[int(np.searchsorted(cum, quantile * cum[-1], side="left"))]


#: Largest sum over the workload's tables of ``2**columns`` (a bound on the closure's size, checked
#: before the closure is built).
MAX_SUBSETS = 1 << 20


def workload_columns(frame: Any, workload: Any) -> tuple[list[Any], list[tuple[Any, ...]]]:
    """The attributes (in order of first appearance) and the workload's tables as tuples of labels."""
    hint = "Pass a list of tuples of column names, e.g. [('age', 'sex'), ('sex', 'race')]."
    if isinstance(workload, (str, bytes)) or not isinstance(workload, (list, tuple)):
        raise ParameterError(f"The 'workload' parameter must be a list of tables, each a tuple of column names. "
                             f"Got {safe_repr(workload)}. {hint}")
    if not workload:
        raise ParameterError(f"The 'workload' parameter is empty. {hint}")
    tables: list[tuple[Any, ...]] = []
    for table in workload:
        if isinstance(table, (str, bytes)) or not isinstance(table, (list, tuple)):
            raise ParameterError(f"Every table of the 'workload' parameter must be a tuple of column names. Got "
                                 f"{safe_repr(table)}. {hint} A one-column table is written ('age',).")
        if not table:
            raise ParameterError(f"A table of the 'workload' parameter is empty: every table names at least one "
                                 f"column. {hint}")
        checked = tuple(check_columns(frame, list(table), name="workload"))
        if any({(type(c), c) for c in t} == {(type(c), c) for c in checked} for t in tables):
            raise ParameterError(f"The 'workload' parameter repeats the table {safe_repr(checked)} (its columns in "
                                 f"some order). Pass each table once.")
        tables.append(checked)
    attrs: list[Any] = []
    seen: set[tuple[type, Any]] = set()
    for table in tables:
        for c in table:
            if (type(c), c) not in seen:
                seen.add((type(c), c))
                attrs.append(c)
    return attrs, tables


def _dimension_specs(value: Any, name: str, attrs: list[Any]) -> Mapping[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ParameterError(f"The '{name}' parameter of marginals must be a dict keyed by column, e.g. "
                             f"{name}={{'age': [0, 18, 65, 120]}} or categories={{'sex': ['F', 'M']}}. Got "
                             f"{safe_repr(value)}.")
    keys = {(type(c), c) for c in attrs}
    try:
        unknown = [k for k in value if (type(k), k) not in keys]
    except Exception as err:  # noqa: BLE001 - a key whose __hash__/__eq__ raises
        raise ParameterError(f"The '{name}' dict must be keyed by column labels of the workload "
                             f"{safe_repr(attrs)}.") from err
    if unknown:
        raise ParameterError(f"The '{name}' dict names columns {safe_repr(unknown)} that are not in the workload "
                             f"{safe_repr(attrs)}. Remove them or add a table with them.")
    return value


def dimensions(frame: Any, attrs: list[Any], bins: Any, categories: Any, other: Any = None) -> list[Grid]:
    """One public one-column grid per attribute (``histogram``'s domain rules without ``range=``, from the
    arguments only)."""
    bins_of = _dimension_specs(bins, "bins", attrs)
    cats_of = _dimension_specs(categories, "categories", attrs)
    other_of = dict(zip(attrs, other_labels(other, attrs, [cats_of.get(c) is not None for c in attrs])))
    dims = []
    for c in attrs:
        b = bins_of.get(c)
        k = cats_of.get(c)
        dims.append(make_grid(frame, [c], bins=None if b is None else {c: b},
                              categories=None if k is None else {c: k}, other=other_of[c], ranged=False))
    return dims


def workload_weights(weights: Any, tables: int) -> list[Any] | None:
    """The ``weights`` argument as a list of one value per table (each checked by the plan), or None."""
    if weights is None:
        return None
    if not isinstance(weights, (list, tuple, np.ndarray, pd.Series)):
        raise ParameterError(f"The 'weights' parameter must be a list of positive numbers, one per workload table "
                             f"({tables}). Got {safe_repr(weights)}.")
    values = list(np.asarray(weights, dtype=object).ravel()) if isinstance(weights, (np.ndarray, pd.Series)) \
        else list(weights)
    if len(values) != tables:
        raise ParameterError(f"The 'weights' parameter must give one positive weight per workload table ({tables}). "
                             f"Got {len(values)}: {safe_repr(values)}.")
    return values


@functools.lru_cache(maxsize=32)
def cached_plan(work: Workload, privacy: PrivacyLoss, objective: Objective, sensitivity: Sensitivity,
                public_totals: bool = False) -> ResidualPlan:
    """The default plan of an unweighted workload (no table worse than measured alone with an even split:
    :func:`~pandas_dp.algorithms.marginals.alone.plan_no_worse_than_alone`; ``public_totals``: by geography
    with public totals). Public inputs only, so the same inputs reuse one solve."""
    return plan_no_worse_than_alone(work, loss=privacy, objective=objective, sensitivity=sensitivity,
                                    public_totals=public_totals)


def ordered_queries(ordered: Any, attrs: list[Any], dims: list[Grid]) -> list[AttributeQueries | None]:
    """The ``ordered=`` argument: per workload column, the ranges asked of it (None: its cells).

    ``{column: "prefix" | "ranges" | [(low, high), ...]}``; a list names ranges of a binned column by
    bin edges, half-open ``[low, high)`` as ``range_query`` does, and of a column with categories by
    labels, inclusive. Public inputs only; raises ``ParameterError`` naming the column and the fix.
    """
    out: list[AttributeQueries | None] = [None] * len(attrs)
    if ordered is None:
        return out
    if not isinstance(ordered, dict) or not ordered:
        raise ParameterError(f"ordered= must be a dict keyed by workload column: {{'age': 'ranges'}}, 'prefix' or a "
                             f"list of (low, high) ranges per column. Got {safe_repr(ordered)}.")
    position = {(type(c), c): i for i, c in enumerate(attrs)}
    for column, spec in ordered.items():
        k = position.get((type(column), column))
        if k is None:
            raise ParameterError(f"ordered= names {safe_repr(column)}, which is not a column of the workload "
                                 f"{safe_repr(list(attrs))}. Key ordered= by workload columns.")
        dim = dims[k].dims[0]
        size = dims[k].size
        if size > MAX_ORDERED_SIZE:
            raise DomainError(f"ordered[{safe_repr(column)}]: the column has {size:,} values; an ordered column "
                              f"may have at most {MAX_ORDERED_SIZE:,}. Use coarser bins.")
        if isinstance(dim, BinDomain) and not isinstance(spec, str) and hasattr(spec, "__iter__"):
            pairs = [tuple(p) if hasattr(p, "__iter__") and not isinstance(p, (str, bytes)) else (p,)
                     for p in spec]
            if any(len(p) != 2 for p in pairs) or not pairs:
                raise ParameterError(f"ordered[{safe_repr(column)}] lists ranges as (low, high) pairs of bin edges "
                                     f"(half-open, as range_query). Got {safe_repr(spec)}.")
            try:
                i, j = dim.align([p[0] for p in pairs], [p[1] for p in pairs])
            except DomainError as exc:
                raise ParameterError(f"ordered[{safe_repr(column)}]: {exc}") from None
            if np.any(np.asarray(j) <= np.asarray(i)):
                raise ParameterError(f"ordered[{safe_repr(column)}]: every range (low, high) must hold at least one "
                                     f"bin (low < high). Got {safe_repr(spec)}.")
            spec = [(int(a), int(b) - 1) for a, b in zip(np.asarray(i), np.asarray(j))]
            out[k] = AttributeQueries.parse(spec, size, column)
        else:
            labels = None if isinstance(dim, BinDomain) else list(dims[k].index)
            out[k] = AttributeQueries.parse(spec, size, column, labels)
    return out
