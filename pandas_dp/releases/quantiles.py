"""``quantiles``: quantiles of one column from one release, with intervals.

The mechanism (one charge): the column's values are clipped to the public ``bounds`` and rounded to a
public grid of :data:`QUANTILE_STEPS` equal steps between them (the engine counts the rows at every grid
value, ``engine.value_steps``: a value outside the bounds counts at the nearest bound, as every DP
quantile clamps, and a missing or non-numeric value is dropped); a hierarchical histogram (the tree of
Hay et al. and Qardaji et al. with its least-squares consistency, branching chosen for the least average
range variance) is released over those steps; the quantiles are read from its monotone CDF and their
intervals by inverting its range intervals (:mod:`pandas_dp.results.quantiles`). All of the tree's
answers are consistent, so every ``q`` asked shares the one release: many quantiles cost what one does.

**By geography** (``by=``, ``hierarchy=`` or ``by_categories=``): every region's quantiles are the quantile
statistics of ``aggregate`` by geography (:func:`~pandas_dp.releases.aggregate.aggregate_release`, recorded as
``quantiles``): the rows of every leaf region in :data:`~pandas_dp.algorithms.aggregate.CELL_STEPS` equal
sub-bins of the bounds (sensitivity 1 per row), released on every level of the public region tree with an
equal part of the loss per level and made consistent by exact GLS (a parent's sub-bins are the sum of its
children's); each region's CDF is its sub-bins' prefixes made monotone, the quantile linear inside its
sub-bin and its interval's ends sub-bin edges. ``to_frame()`` is tidy: ``level, region, q, estimate, ci_low,
ci_high, confidence_level``. Regions of a level are disjoint, so they share their level's part of the loss
(parallel composition); ``q`` must lie strictly between 0 and 1.

Why the tree: it answers every prefix (the CDF) with error polylogarithmic in the number of steps, at
once, with exact variances for the intervals, on every engine; a quantile's rank error is then that of
one prefix. The tree runs for many ``q``'s; for fewer the exponential mechanism (one ``q``) or its
recursive form (several) runs on the same counts instead: :mod:`pandas_dp.releases.quantile_mechanisms`
chooses from public inputs and says why.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp._utils.rational import safe_repr
from pandas_dp.algorithms.aggregate import ValueColumn
from pandas_dp.domain.grid import BinDomain, Grid
from pandas_dp.domain.timevalues import UNITS
from pandas_dp.engines.pandas.values import ValueGrid
from pandas_dp.errors import ParameterError
from pandas_dp.noise.words import release_key
from pandas_dp.privacy.units import UnitArguments
from pandas_dp.releases.methods import METHODS, plan_method
from pandas_dp.releases.params import check_columns, check_rng
from pandas_dp.releases.aggregate import aggregate_release
from pandas_dp.releases.pipeline import Release, privacy_loss, run
from pandas_dp.releases.quantile_mechanisms import MECHANISMS, choose_mechanism, describe_mechanism, exponential_result
from pandas_dp.releases.value_bounds import grid_of_steps
from pandas_dp.results.aggregate import Aggregate
from pandas_dp.results.quantiles import Quantiles, check_q, region_table

__all__ = ["quantiles", "QUANTILE_STEPS", "CONFIDENCE_LEVEL"]

#: Equal steps of the public grid between the bounds (the tree's leaves, plus one).
QUANTILE_STEPS = 4096
#: The level of the intervals in ``to_frame()`` (``result.quantile(q, confidence_level=...)`` for others).
CONFIDENCE_LEVEL = 0.95
#: The tree's knobs: its defaults (branching chosen for the least average range variance, consistent).
_TREE = {"branching": "auto", "budget_split": "uniform", "include_root": False, "consistent": True,
         "integer": False}


def quantiles(frame: pd.DataFrame, column: Any, q: Any, *, bounds: Any, epsilon: Any = None, rho: Any = None,
              privacy_unit: Any = None, max_rows: Any = None, by: Any = None, hierarchy: Any = None,
              by_categories: Any = None, rng: Any = None) -> Quantiles:
    """Release the ``q``-quantiles of one column (see ``DataFrame.dp.quantiles``)."""
    if isinstance(column, (list, tuple)):
        raise ParameterError(f"quantiles releases the quantiles of one column; got {safe_repr(list(column))}. Pass "
                             f"a single column name.")
    cols = check_columns(frame, column, name="column")
    probs, _ = check_q(q)
    if any(v is not None for v in (by, hierarchy, by_categories)):
        return _by_geography(frame, cols[0], probs, bounds=bounds, epsilon=epsilon, rho=rho,
                             privacy_unit=privacy_unit, max_rows=max_rows, by=by, hierarchy=hierarchy,
                             by_categories=by_categories, rng=rng)
    loss = privacy_loss(epsilon, rho)
    generator = check_rng(rng)
    unit = UnitArguments(privacy_unit, max_rows).bounds(frame.columns, reserved=tuple(cols))
    if unit is not None and unit.auto:
        raise ParameterError("max_rows='auto' is not available for quantiles yet; pass a public max_rows=k "
                             "(e.g. max_rows=1 when each person has one row).")
    value = grid_of_steps(cols[0], bounds, QUANTILE_STEPS)
    bins = BinDomain(cols[0], _edges(value), equal_width=False)
    grid = Grid((bins,))
    max_rows_ = unit.max_rows if unit is not None and unit.max_rows is not None else 1
    chosen = choose_mechanism(int(np.unique(probs).size), loss, grid.size, max_rows_)
    planned = plan_method("hierarchical", grid, loss, _TREE, unit) if chosen == "tree" else None
    spec = METHODS["hierarchical"]
    value_grid = ValueGrid(value.column, value.low, value.high, value.resolution, value.kind, value.unit,
                           value.tz is not None)
    knobs = planned.knobs if planned is not None else describe_mechanism(chosen, int(np.unique(probs).size), loss)
    params: dict[str, Any] = {"mechanism": MECHANISMS[chosen],
              "q": [float(p) for p in probs], "bounds": [str(bins.edge_value(0)), str(bins.edge_value(bins.size))],
              "steps": grid.size, **knobs, **(unit.describe() if unit is not None else {})}

    def mechanism(exact: Any) -> Quantiles:
        counts = exact.steps(unit, release_key(generator), value_grid) if unit is not None else exact
        if planned is None:
            return exponential_result(counts, probs, bins, loss, max_rows_, chosen, params, cols[0], generator,
                                      grid_values(value) if value.kind == "number" else None)
        tree = spec.release(counts, grid, planned, rng=generator, nonnegative=False, loss=loss)
        found = tree.quantile(probs, confidence_level=CONFIDENCE_LEVEL)
        record = dict(params)
        shown = ("branching", "height", "noise", "level_noise_scales", "level_epsilons", "sensitivity_per_level")
        record.update({k: v for k, v in tree.params.items() if k in shown})
        return Quantiles(estimates=found, histogram=tree, epsilon=loss.pure_epsilon, params=record, loss=loss,
                         column=cols[0])

    if unit is None:
        count = lambda engine: engine.value_steps(frame, value_grid)  # noqa: E731
    else:
        count = lambda engine: engine.coded_value_rows(frame, Grid(()), [value_grid], unit)  # noqa: E731
    return run(frame, Release(loss=loss, method="quantiles", columns=list(cols), params=params, count=count,
                              mechanism=mechanism))


def _by_geography(frame: pd.DataFrame, column: Any, probs: np.ndarray, *, bounds: Any, **arguments: Any) -> Quantiles:
    """Every region's quantiles: the quantile statistics of ``aggregate`` by geography (see the module notes)."""
    if ((probs <= 0) | (probs >= 1)).any():
        raise ParameterError(f"quantiles by geography take q strictly between 0 and 1 (a region's minimum or maximum "
                             f"has no useful private estimate from sub-bins); got {[float(p) for p in probs]}.")
    value = grid_of_steps(column, bounds, QUANTILE_STEPS)        # bounds checked as for one release
    step: Any = value.resolution
    if value.kind != "number":
        step = pd.Timedelta(int(round(value.resolution * UNITS[value.unit])), unit="ns")
    asked = list(dict.fromkeys(float(p) for p in probs))

    def finish(found: Aggregate) -> Quantiles:
        estimates = region_table(found, column, asked, CONFIDENCE_LEVEL)
        params = {**found.params, "mechanism": "sub-bin CDF of every region (aggregate's quantile statistics), "
                                               "consistent across the geography", "q": asked}
        return Quantiles(estimates=estimates, histogram=found, epsilon=found.epsilon, params=params, loss=found.loss,
                         column=column)

    return aggregate_release(frame, [], {column: [("quantile", p) for p in asked]}, bounds={column: bounds},
                             resolution={column: step}, method="quantiles", finish=finish, **arguments)


def _decimal(units: np.ndarray, value: ValueColumn, per: int) -> np.ndarray:
    """``units / per`` grid steps in data units, each the float nearest its exact decimal: the step's shortest
    decimal ``num / den`` times the integer ``units``, divided once (a round grid value such as -5 is -5.0,
    not the -5.000000000000001 of ``-50 * 0.1``)."""
    num, den = Fraction(repr(float(value.resolution))).as_integer_ratio()
    return np.asarray(units, dtype=np.float64) * float(num) / float(den * per)


def grid_values(value: ValueColumn) -> np.ndarray:
    """Every grid value ``low..high`` in data units (keys of ``unit`` for dates and durations), exact decimals."""
    return _decimal(np.arange(value.low, value.high + 1), value, 1)


def _edges(value: ValueColumn) -> Any:
    """The public bins of the grid values ``low..high``: centred on each, the outer ones ending at the bounds."""
    keys = _decimal(np.concatenate([[2 * value.low], 2 * np.arange(value.low, value.high) + 1, [2 * value.high]]),
                    value, 2)
    if value.kind == "number":
        return keys
    ns = np.rint(keys * UNITS[value.unit]).astype(np.int64)
    if value.kind == "timedelta":
        return pd.TimedeltaIndex(ns.view("m8[ns]"))
    stamps = pd.DatetimeIndex(ns.view("M8[ns]"))
    return stamps.tz_localize("UTC").tz_convert(value.tz) if value.tz is not None else stamps
