"""``histogram``: releases over a public domain, by any method of :data:`~pandas_dp.releases.methods.METHODS`.

:func:`histogram` dispatches: ``categories="discover"`` to
:func:`~pandas_dp.releases.discover.discover_histogram`, ``by=`` (tables by
geography) to :func:`~pandas_dp.releases.geography.histogram_by_region`, and
everything else to :func:`flat_histogram`, which checks the public inputs in
order, plans the method (:mod:`pandas_dp.releases.methods`) and runs it
through the one pipeline (:func:`~pandas_dp.releases.pipeline.run`) with
:func:`histogram_release`.
"""

from __future__ import annotations

import math

from dataclasses import replace
from fractions import Fraction
from typing import Any, Mapping

import pandas as pd

from pandas_dp.domain.grid import Grid, make_grid
from pandas_dp.errors import ParameterError
from pandas_dp.noise.words import release_key
from pandas_dp.privacy.loss import PrivacyLoss
from pandas_dp.privacy.units import UnitArguments, UnitBounds
from pandas_dp.results.geography import GeographyHistogram
from pandas_dp.results.histogram import Histogram
from pandas_dp.releases.discover import discover_histogram
from pandas_dp.releases.dropped import check_report_dropped, estimate_dropped
from pandas_dp.releases.geography import histogram_by_region
from pandas_dp.releases.geography_arguments import GeographyArguments
from pandas_dp.releases.methods import METHODS, MethodName, method_named, plan_method
from pandas_dp.releases.methods.base import Planned
from pandas_dp.releases.params import PrivacyUnit, check_columns, check_flag, check_rng
from pandas_dp.releases.pipeline import Release, privacy_loss, run
from pandas_dp.releases.shared import choose_max_rows

__all__ = ["histogram", "flat_histogram", "histogram_release", "histogram_loss", "used_sensitivity"]


def histogram(frame: pd.DataFrame, columns: Any, *, bins: Any = None, range: Any = None,
              categories: Any = None, other: Any = None, epsilon: Any = None, rho: Any = None, delta: Any = None,
              method: MethodName = "identity", rng: Any = None, nonnegative: bool = False, privacy_unit: Any = None,
              max_rows: Any = None, max_cells: Any = None, max_rows_per_cell: Any = None, report_dropped: Any = None,
              by: Any = None,
              hierarchy: Any = None, by_categories: Any = None, level_weights: Any = None,
              integer: bool | None = None, public_totals: Any = None,
              **method_params: Any) -> Histogram | GeographyHistogram:
    """Release a DP histogram of ``frame[columns]`` over a public domain (see ``DataFrame.dp.histogram``).

    With ``by=`` (and its public regions), one consistent histogram per region
    (:func:`pandas_dp.releases.geography.histogram_by_region`). With ``categories="discover"``
    (and ``delta=``), the labels whose noisy count passes a threshold
    (:func:`pandas_dp.releases.discover.discover_histogram`).
    """
    if "dropna" in method_params:
        raise ParameterError(_dropna_message(columns))
    unit = PrivacyUnit.gather(privacy_unit, max_rows, max_cells, max_rows_per_cell)
    if isinstance(categories, str) and str.__str__(categories) == "discover":
        extra = {"bins": bins, "range": range, "by": by, "hierarchy": hierarchy, "by_categories": by_categories,
                 "level_weights": level_weights, "integer": integer, "other": other, "report_dropped": report_dropped,
                 "public_totals": public_totals}
        given = sorted(k for k, v in extra.items() if v is not None) + sorted(method_params)
        if given or method != "identity":
            named = given or ["method"]
            raise ParameterError(f"histogram(categories='discover') takes no {', '.join(named)}= (it releases one "
                                 f"column's labels with the identity mechanism). Drop {named[0]}=.")
        return discover_histogram(frame, columns, epsilon=epsilon, rho=rho, delta=delta, rng=rng,
                                  nonnegative=nonnegative, unit=unit)
    if delta is not None:
        raise ParameterError("The 'delta' parameter is used only by histogram(categories='discover') (key "
                             "discovery needs approximate DP); a histogram over public categories or bins is pure "
                             "or zCDP. Drop delta=.")
    geography = GeographyArguments(by, hierarchy, by_categories, level_weights, public_totals)
    if geography.given:
        if report_dropped is not None:
            raise ParameterError("report_dropped= estimates the rows max_rows dropped for a histogram without by=; "
                                 "release the table without by= to get it, or drop report_dropped=.")
        return histogram_by_region(frame, columns, geography, bins=bins, range=range, categories=categories,
                                   other=other, epsilon=epsilon, rho=rho, method=method, rng=rng,
                                   nonnegative=nonnegative, integer=integer, unit_arguments=unit, **method_params)
    if integer is not None:
        method_params["integer"] = integer  # a knob of method="hierarchical"
    return flat_histogram(frame, columns, bins=bins, range=range, categories=categories, other=other,
                          epsilon=epsilon, rho=rho, method=method, rng=rng, nonnegative=nonnegative, unit=unit,
                          knobs=method_params, report_dropped=report_dropped)


def _dropna_message(columns: Any) -> str:
    """Why ``dropna=`` is refused, and how to count missing values as a cell of their own (public text only)."""
    name = str.__str__(columns) if isinstance(columns, str) else "column"
    fill = f"df[{name!r}].fillna('missing')"
    assign = f"df.assign({name}={fill})" if name.isidentifier() else f"df.assign(**{{{name!r}: {fill}}})"
    return (f"histogram takes no dropna=: missing values (NaN, None, NaT, pd.NA) are never counted, not in a "
            f"category, not in other= and not in a bin, as with pandas' value_counts(dropna=True). To count them as "
            f"a cell of their own, give them a public label and list it: {assign}.dp.histogram({name!r}, "
            f"categories=[..., 'missing'], ...) (a Categorical column needs the category first: "
            f"df[{name!r}].cat.add_categories('missing').fillna('missing')).")


def flat_histogram(frame: pd.DataFrame, columns: Any, *, bins: Any, range: Any, categories: Any, epsilon: Any,
                   rho: Any, method: Any, rng: Any, nonnegative: Any, unit: UnitArguments,
                   knobs: dict[str, Any], other: Any = None, report_dropped: Any = None) -> Histogram:
    """``histogram`` without ``by=``: check the public inputs in order, plan the method, run the pipeline."""
    cols = check_columns(frame, columns)
    loss = privacy_loss(epsilon, rho)
    generator = check_rng(rng)
    nonneg = check_flag(nonnegative, "nonnegative")
    name = method_named(method)
    bounds = unit.bounds(frame.columns, reserved=tuple(cols))
    dropped = check_report_dropped(report_dropped, bounds, loss)
    grid = make_grid(frame, cols, bins=bins, range=range, categories=categories, other=other)
    planned = plan_method(name, grid, histogram_loss(loss, bounds, dropped), knobs, bounds)
    return histogram_release(frame, cols, grid, loss, planned, rng=generator, nonnegative=nonneg, unit=bounds,
                             knobs=knobs, report_dropped=dropped)


def histogram_release(frame: Any, cols: list[Any], grid: Grid, loss: PrivacyLoss, planned: Planned, *,
                      rng: Any, nonnegative: bool, budget: Any = None, unit: UnitBounds | None = None,
                      knobs: Mapping[str, Any] | None = None, report_dropped: Fraction | None = None) -> Histogram:
    """Run a planned histogram method through the pipeline (count the grid, charge, release).

    With a privacy unit the engine codes the rows by cell and unit, and the mechanism bounds every
    unit's contribution (random rows, with the release's randomness) before counting; with
    ``max_rows="auto"`` it first spends the bounds' ``auto_share`` of the loss on a noisy
    histogram of rows per unit and re-plans the method for the bound it gives (``knobs``: the
    method's knobs as given, for that plan).
    """
    spec = METHODS[planned.method]
    ledger_params = {"shape": list(grid.shape), "nonnegative": nonnegative, **planned.knobs}
    label = f"histogram:{planned.label or planned.method}"
    if unit is None:
        return run(frame, Release(
            loss=loss, method=label, columns=cols, params=ledger_params,
            count=lambda engine: engine.bin_counts(frame, grid),
            mechanism=lambda counts: spec.release(counts, grid, planned, rng=rng, nonnegative=nonnegative,
                                                  loss=loss),
            budget=budget))

    def mechanism(coded: Any) -> Histogram:
        key = release_key(rng)
        chosen, final = unit, planned
        rest = histogram_loss(loss, unit, report_dropped)
        if unit.auto:
            chosen = unit.with_max_rows(choose_max_rows(coded.contributions(), loss.part(unit.auto_share).noise(), rng,
                                                        unit.auto_quantile))
            final = plan_method(planned.method, grid, rest, knobs or {}, chosen)
        dropped: dict[str, Any] = {}
        if report_dropped is not None:   # sequential composition: its share is part of the one charge
            dropped = {"report_dropped": str(report_dropped),
                       **estimate_dropped(coded.kept_and_dropped(chosen.row_bound), chosen.row_bound,
                                          loss.part(report_dropped), rng)}
        result = METHODS[final.method].release(coded.counts(chosen, key), grid, final, rng=rng,
                                               nonnegative=nonnegative, loss=rest)
        return replace(result, epsilon=loss.pure_epsilon, loss=loss,
                       params={**result.params, **used_sensitivity(result.params, chosen, grid,
                                                                group=not METHODS[final.method].unit_aware),
                               **chosen.describe(),
                               "unit_sensitivity": chosen.histogram_sensitivity().describe(), **dropped})

    extra = {} if report_dropped is None else {"report_dropped": str(report_dropped)}
    return run(frame, Release(
        loss=loss, method=label, columns=cols, params={**ledger_params, **unit.describe(), **extra},
        count=lambda engine: engine.coded_rows(frame, grid, unit), mechanism=mechanism, budget=budget))


def used_sensitivity(params: Mapping[str, Any], unit: UnitBounds, grid: Grid, *,
                     group: bool = False) -> dict[str, Any]:
    """The sensitivities a unit release's noise is calibrated for, replacing the row-level ``1`` of its method.

    A flat measurement (``"sensitivity"``) sees the unit's histogram sensitivity; a tree's level
    (``"sensitivity_per_level"``, with ``"branching"``) what the unit can do to a node of that level
    (:meth:`~pandas_dp.privacy.units.UnitBounds.level_sensitivity`). Methods run at the group-privacy
    loss (``group=True``: not unit-aware) calibrate every disjoint count to
    :meth:`~pandas_dp.privacy.units.UnitBounds.group_sensitivity` (``L2**2 = k**2``: under
    ``max_cells`` a block of cells can hold all of a unit's rows, which zCDP's Gaussian noise pays for).
    """
    out: dict[str, Any] = {}
    flat = (unit.group_sensitivity() if group else unit.histogram_sensitivity()).describe()
    if "sensitivity" in params:
        out["sensitivity"] = flat
    if "sensitivity_per_level" in params:
        if group and "height" in params:      # a tree chosen by "auto", run at the group-privacy loss
            out["sensitivity_per_level"] = [flat] * (int(params["height"]) + 1)
        elif "branching" in params and "height" in params:
            b = int(params["branching"])
            out["sensitivity_per_level"] = [
                unit.level_sensitivity(math.prod(min(b ** k, n) for n in grid.shape)).describe()
                for k in range(int(params["height"]) + 1)]
        else:
            out["sensitivity_per_level"] = flat
    return out


def histogram_loss(loss: PrivacyLoss, bounds: UnitBounds | None, dropped: Fraction | None) -> PrivacyLoss:
    """What the histogram itself runs at: the loss less ``max_rows="auto"``'s and ``report_dropped``'s shares."""
    rest = loss
    if bounds is not None and bounds.auto:
        rest = rest - loss.part(bounds.auto_share)
    if dropped is not None:
        rest = rest - loss.part(dropped)
    return rest
