"""``aggregate``: counts, sums and means of value columns per cell, in one release and one charge.

:func:`aggregate` checks the public inputs in order (the cells as for ``histogram``, ``aggs``,
``bounds``, ``resolution``, the loss, the privacy unit), plans the measurements
(:func:`pandas_dp.algorithms.aggregate.plan_aggregate`: what is measured, its sensitivity, the
loss split equally), and runs them through the one pipeline: one pass over the rows
(``engine.value_sums``, or ``engine.coded_value_rows`` with a privacy unit), one charge, the
noise, and an :class:`~pandas_dp.results.aggregate.Aggregate`.

By geography (``by=``, ``hierarchy=`` or ``by_categories=``, ``level_weights=``), the engine sums every
(leaf region, cell) and every measured vector is released on every level of the public region tree and
made consistent by exact GLS (:func:`pandas_dp.algorithms.aggregate.measure_geography`); each vector's part
of the loss is split across the levels by the level weights. ``public_totals=`` is refused: totals count
rows, while a value column's count leaves out its missing values, so a total does not hold the counts the
release measures.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp._utils.public import float_array
from pandas_dp._utils.rational import fraction_text, safe_repr
from pandas_dp.algorithms.aggregate import (STATISTICS, AggregatePlan, ValueColumn, estimate, measure,
                                            measure_geography, plan_aggregate)
from pandas_dp.domain.geography import RegionTree
from pandas_dp.domain.grid import Grid, make_grid
from pandas_dp.engines.pandas.values import ValueGrid
from pandas_dp.errors import PandasDPError, ParameterError
from pandas_dp.noise.words import release_key
from pandas_dp.privacy.loss import Sensitivity
from pandas_dp.privacy.units import UnitArguments, UnitBounds
from pandas_dp.releases.geography import check_size
from pandas_dp.releases.geography_arguments import GeographyArguments
from pandas_dp.releases.params import check_columns, check_rng
from pandas_dp.releases.pipeline import Release, privacy_loss, run
from pandas_dp.releases.value_bounds import check_value_grids, same_label
from pandas_dp.results.aggregate import Aggregate, as_duration, as_time
from pandas_dp.results.geography_layout import RESERVED_NAMES, geography_index

__all__ = ["aggregate", "aggregate_release", "check_aggs", "check_value_grids"]

_NAMES = "'count', 'sum', 'mean', 'median' or ('quantile', q) with q in (0, 1)"


def aggregate(frame: pd.DataFrame, columns: Any, aggs: Any, *, bounds: Any, resolution: Any = None, bins: Any = None,
              categories: Any = None, other: Any = None, epsilon: Any = None, rho: Any = None,
              privacy_unit: Any = None, max_rows: Any = None, by: Any = None, hierarchy: Any = None,
              by_categories: Any = None, level_weights: Any = None, public_totals: Any = None,
              rng: Any = None) -> Aggregate:
    """Release counts, sums and means of value columns per cell (see ``DataFrame.dp.aggregate``)."""
    result: Aggregate = aggregate_release(frame, columns, aggs, bounds=bounds, resolution=resolution, bins=bins,
                             categories=categories, other=other, epsilon=epsilon, rho=rho, privacy_unit=privacy_unit,
                             max_rows=max_rows, by=by, hierarchy=hierarchy, by_categories=by_categories,
                             level_weights=level_weights, public_totals=public_totals, rng=rng)
    return result


def aggregate_release(frame: pd.DataFrame, columns: Any, aggs: Any, *, bounds: Any, resolution: Any = None,
                      bins: Any = None, categories: Any = None, other: Any = None, epsilon: Any = None,
                      rho: Any = None, privacy_unit: Any = None, max_rows: Any = None, by: Any = None,
                      hierarchy: Any = None, by_categories: Any = None, level_weights: Any = None,
                      public_totals: Any = None, rng: Any = None, method: str = "aggregate",
                      finish: Callable[[Aggregate], Any] | None = None) -> Any:
    """:func:`aggregate` recorded (ledger, result) as ``method``, its result handed to ``finish`` when given: the
    release another release of the folder is made of (``quantiles`` by geography: its quantile statistics)."""
    geography = GeographyArguments(by, hierarchy, by_categories, level_weights, public_totals)
    if geography.given:
        geography.check_by()
        if geography.public_totals is not None:
            raise ParameterError("aggregate does not take public_totals= yet: a public total counts rows, while a "
                                 "value column's count leaves out its missing values, so the totals do not hold "
                                 "what the release measures. Drop public_totals= (the counts and sums are still "
                                 "consistent across the levels).")
    cols = [] if _no_cells(columns) else check_columns(frame, columns)
    asked = check_aggs(frame, aggs)
    clash = [c for c, _ in asked if any(c is d or same_label(c, d) for d in cols)]
    if clash:
        raise ParameterError(f"The column {safe_repr(clash[0])} is both a cell column (columns=) and a value "
                             f"column (aggs=); a column is either the cells or what is summed in them.")
    loss = privacy_loss(epsilon, rho)
    generator = check_rng(rng)
    tree = geography.tree(frame.columns) if geography.given else None
    located = () if tree is None else tree.located
    if tree is not None:
        _check_geography_columns(cols, asked, located)
    unit = UnitArguments(privacy_unit, max_rows).bounds(frame.columns,
                                                        reserved=(*cols, *(c for c, _ in asked), *located))
    if unit is not None and unit.auto:
        raise ParameterError("max_rows='auto' is not available for aggregate yet; pass a public max_rows=k "
                             "(e.g. max_rows=1 when each person has one row).")
    values = check_value_grids(asked, bounds, resolution)
    grid = make_grid(frame, cols, bins=bins, categories=categories, other=other)
    if tree is not None:
        check_size(tree, grid)
    unit_change = unit.histogram_sensitivity() if unit is not None else Sensitivity()
    if tree is None:
        plan = plan_aggregate(values, loss, unit_change)
    else:
        plan = plan_aggregate(values, loss, unit_change, geography.shares(tree.level_names), tree.level_names)
    value_grids = [ValueGrid(v.column, v.low, v.high, v.resolution, v.kind, v.unit, v.tz is not None, v.steps)
                   for v in values]
    params = _params(plan, grid, unit, tree)

    def mechanism(exact: Any) -> Any:
        sums = exact.tables(unit, release_key(generator)) if unit is not None else exact
        measured = measure(sums, plan, generator) if tree is None else measure_geography(sums, plan, tree, generator)
        result = _wrap(estimate(measured, plan), plan, grid, loss, params, tree)
        return result if finish is None else finish(result)

    if unit is None:
        count = lambda engine: engine.value_tables(frame, grid, value_grids, tree)  # noqa: E731
    else:
        count = lambda engine: engine.coded_value_rows(frame, grid, value_grids, unit, tree)  # noqa: E731
    used = [*cols, *(c for c in located if c not in cols), *(c for c, _ in asked)]
    return run(frame, Release(loss=loss, method=method, columns=used, params=params, count=count,
                              mechanism=mechanism))


def _check_geography_columns(cols: list[Any], asked: list[tuple[Any, tuple[str, ...]]],
                             located: tuple[Any, ...]) -> None:
    """Refuse a geography column among the value columns, and cell columns named like the result's columns."""
    both = [c for c, _ in asked if any(c is d or same_label(c, d) for d in located)]
    if both:
        raise ParameterError(f"The column {safe_repr(both[0])} is both a geography column (by=) and a value "
                             f"column (aggs=); drop it from aggs=.")
    reserved = [c for c in cols if isinstance(c, str) and c in RESERVED_NAMES]
    if reserved:
        raise ParameterError(f"Column(s) {reserved} share a name with the result's columns {list(RESERVED_NAMES)}; "
                             f"rename them (df.rename(columns=...)) first.")


def _no_cells(columns: Any) -> bool:
    """``columns=[]`` (or ``()``): one row for all rows (the container's own length, not an override's)."""
    return (isinstance(columns, list) and list.__len__(columns) == 0) or (
        isinstance(columns, tuple) and tuple.__len__(columns) == 0)


def check_aggs(frame: Any, aggs: Any) -> list[tuple[Any, tuple[str, ...]]]:
    """``aggs`` as ``[(value column, statistics)]``: a mapping of frame columns to a statistic or a list of them.

    Raises
    ------
    ParameterError
        For anything else (a quantile needs one q strictly between 0 and 1), before any charge.
    """
    example = "aggs={'income': ['sum', 'mean'], 'hours': 'mean'}"
    if not isinstance(aggs, Mapping):
        raise ParameterError(f"The 'aggs' parameter must be a dict of value column -> statistic(s), as for pandas' "
                             f"agg: {example}. Got {safe_repr(aggs)}.")
    try:
        items = list(dict.items(aggs)) if isinstance(aggs, dict) else list(aggs.items())
    except Exception as err:  # noqa: BLE001 - a hostile mapping's own items() raised
        raise ParameterError(f"The 'aggs' parameter could not be read as a dict; pass a plain dict: {example}.") \
            from err
    if not items:
        raise ParameterError(f"The 'aggs' parameter is empty; name at least one value column: {example}.")
    labels = check_columns(frame, [k for k, _ in items], name="aggs")
    out = []
    for label, spec in zip(labels, (s for _, s in items)):
        try:
            stats = _statistics(spec, label)
        except PandasDPError:
            raise
        except Exception as err:  # noqa: BLE001 - a hostile sequence's own __len__, __iter__, __getitem__
            raise ParameterError(f"aggs[{safe_repr(label)}] could not be read; pass a statistic or a plain list of "
                                 f"them from {_NAMES}.") from err
        out.append((label, stats))
    return out


def _statistics(spec: Any, label: Any) -> tuple[str, ...]:
    """The statistics of one value column, checked."""
    if isinstance(spec, (str, tuple)) and not _is_list_of_statistics(spec):
        specs: list[Any] = [spec]
    elif isinstance(spec, (list, tuple)):
        specs = list(spec)
    else:
        raise ParameterError(f"aggs[{safe_repr(label)}] must be a statistic or a list of them, from "
                             f"{_NAMES}. Got {safe_repr(spec)}.")
    stats = tuple(_statistic(s, label) for s in specs)
    if not stats or len(set(stats)) != len(stats):
        raise ParameterError(f"aggs[{safe_repr(label)}] must list each statistic once, at least one, from "
                             f"{_NAMES}. Got {safe_repr(spec)}.")
    return stats


def _is_list_of_statistics(spec: Any) -> bool:
    """A tuple of statistics (``("sum", "mean")``) rather than one ``("quantile", q)``."""
    return isinstance(spec, tuple) and not (len(spec) == 2 and isinstance(spec[0], str)
                                            and str.__str__(spec[0]) == "quantile")


def _statistic(value: Any, label: Any) -> str:
    if isinstance(value, tuple) and len(value) >= 1 and isinstance(value[0], str) \
            and str.__str__(value[0]) == "quantile":
        return _quantile_name(value, label)
    if isinstance(value, str):
        name = str.__str__(value)
        if name in STATISTICS and name != "quantile":
            return name
    raise ParameterError(f"aggs[{safe_repr(label)}]: unknown statistic {safe_repr(value)}; aggregate releases "
                         f"{_NAMES}.")


def _quantile_name(value: tuple[Any, ...], label: Any) -> str:
    """``("quantile", q)`` as the statistic ``"quantile(q)"`` (q a probability strictly between 0 and 1)."""
    q = float_array(value[1]) if len(value) == 2 and not isinstance(value[1], (bool, np.bool_, str, bytes)) else None
    if q is None or q.ndim != 0 or not 0 < float(q) < 1:
        raise ParameterError(f"aggs[{safe_repr(label)}]: a quantile is ('quantile', q) with one q strictly between 0 "
                             f"and 1 (e.g. ('quantile', 0.9)); list several as [('quantile', 0.1), ('quantile', "
                             f"0.9)]. Got {safe_repr(value)}.")
    return f"quantile({float(q)!r})"


def _params(plan: AggregatePlan, grid: Grid, unit: UnitBounds | None, tree: RegionTree | None) -> dict[str, Any]:
    """The public record of the release (the ledger row and the result's ``params``)."""
    values = {str(v.column): {"statistics": list(v.statistics), **_record(v), "grid_steps": [v.low, v.high]}
              for v in plan.values}
    measurements = []
    for m in plan.measurements:
        entry: dict[str, Any] = {"column": str(plan.values[m.column].column), "kind": m.kind,
                                 "sensitivity": m.sensitivity.describe()}
        if m.level_losses:
            entry["levels"] = [None if p is None or n is None else {"loss": fraction_text(p.amount), **n.describe()}
                               for p, n in zip(m.level_losses, m.level_noises)]
        else:
            entry.update(m.noise.describe())
        measurements.append(entry)
    geography: dict[str, Any] = {}
    if tree is not None:
        geography = {"by": list(tree.level_names[1:]), "levels": list(tree.level_names),
                     "regions_per_level": [len(r) for r in tree.regions],
                     "consistency": "exact GLS across the geography (every parent = sum of its children)"}
    return {"shape": list(grid.shape), "values": values, "split": "equal", "share": fraction_text(plan.share),
            "measurements": measurements, **geography, **(unit.describe() if unit is not None else {})}


def _record(v: ValueColumn) -> dict[str, Any]:
    """The bounds and resolution in data units (dates and durations as ISO 8601 text)."""
    if v.kind == "number":
        return {"bounds": [v.low * v.resolution, v.high * v.resolution], "resolution": v.resolution}
    convert = as_time if v.kind == "datetime" else as_duration
    lo, hi = (convert(np.array([k * v.resolution]), v)[0] for k in (v.low, v.high))
    return {"bounds": [lo.isoformat(), hi.isoformat()], "resolution": as_duration(np.array([v.resolution]),
                                                                                    v)[0].isoformat(),
            "kind": v.kind, "unit": v.unit}


def _index(grid: Grid, tree: RegionTree | None) -> pd.Index:
    """One label per released row: the cells, ``"national"`` for no cells, or ``(level, region, *cells)``."""
    if tree is None:
        return grid.index if grid.ndim else pd.Index(["national"])
    if grid.ndim:
        return geography_index(tree.level_names, tree.regions, grid)
    sizes = np.array([len(r) for r in tree.regions], dtype=np.int64)
    level = np.repeat(np.arange(len(sizes)), sizes)
    labels = np.concatenate([r.to_numpy(dtype=object) for r in tree.regions])
    return pd.MultiIndex.from_arrays([pd.Categorical.from_codes(level, categories=list(tree.level_names)), labels],
                                     names=["level", "region"])


def _wrap(found: Any, plan: AggregatePlan, grid: Grid, loss: Any, params: dict[str, Any],
          tree: RegionTree | None) -> Aggregate:
    index = _index(grid, tree)
    keys = [(i, s) for i, v in enumerate(plan.values) for s in v.statistics]
    columns = pd.MultiIndex.from_tuples([(plan.values[i].column, s) for i, s in keys])
    estimates = pd.DataFrame(np.column_stack([found.estimates[k] for k in keys]), index=index, columns=columns)
    errors = pd.DataFrame(np.column_stack([np.sqrt(found.variances[k]) for k in keys]), index=index,
                          columns=columns)
    counted = sorted(found.counts)
    counts = pd.DataFrame(np.column_stack([found.counts[i] for i in counted]) if counted else
                          np.zeros((len(index), 0)), index=index,
                          columns=pd.Index([plan.values[i].column for i in counted], tupleize_cols=False))
    times = tuple(None if plan.values[i].kind == "number" or s == "count" else plan.values[i] for i, s in keys)
    return Aggregate(estimates=estimates, std_errors=errors, count=counts, epsilon=loss.pure_epsilon,
                     params=params, rules=tuple(found.rules[k] for k in keys), loss=loss,
                     columns=tuple(grid.columns), levels=() if tree is None else tuple(tree.level_names),
                     times=times, bands=tuple(found.bands.get(k) for k in keys))
