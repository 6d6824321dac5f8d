"""``marginals``: a workload of cross-tabulations measured at once (ResidualPlanner), consistent tables.

Plan (public inputs only, before the budget is checked): the workload's
columns (labels only), the privacy loss, ``rng``, the privacy unit, one public
dimension per column from ``bins=``/``categories=`` (dicts keyed by column,
read as ``histogram`` reads them: never from the data), the workload over those
dimensions, and ResidualPlanner's plan
(:func:`~pandas_dp.algorithms.marginals.plan.plan_residuals`: which marginals
of the closure are measured, each one's part of the loss and its noise,
refused here when a part is too small for the sampler). Pipeline: check the
budget -> count every maximal marginal in one pass (the engine) -> charge the
loss -> sum down, noise every measured marginal, reconstruct by GLS -> wrap a
:class:`~pandas_dp.results.marginals.MarginalTables`.

With ``privacy_unit=`` and ``max_rows=k`` each unit keeps at most ``k`` of its
rows in the domain (random, by the release's row keys); one unit then moves
every marginal by at most ``k`` in L1 and in L2, and the plan is calibrated to
that sensitivity.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp._utils.checks import check_flag
from pandas_dp._utils.rational import safe_repr
from pandas_dp.algorithms.marginals.counting import sum_down
from pandas_dp.algorithms.marginals.nonnegative import check_joint
from pandas_dp.algorithms.marginals.measure import measure_marginals
from pandas_dp.algorithms.marginals.plan import Objective, ResidualPlan, plan_residuals
from pandas_dp.algorithms.marginals.reconstruct import reconstruct
from pandas_dp.algorithms.marginals.workload import Workload, make_workload
from pandas_dp.domain.grid import MAX_CELLS, Grid, make_grid, other_labels
from pandas_dp.errors import DomainError, ParameterError
from pandas_dp.noise.words import release_key
from pandas_dp.privacy.loss import UNIT, PrivacyLoss, Sensitivity
from pandas_dp.releases.params import PrivacyUnit, check_choice, check_columns, check_rng
from pandas_dp.releases.pipeline import Release, check_measure, privacy_loss, run
from pandas_dp.results.marginals import MarginalDetail, MarginalTables
from pandas_dp.results.marginals import publish as published

__all__ = ["marginals", "MAX_SUBSETS"]

#: Largest sum over the workload's tables of ``2**columns`` (a bound on the closure's size, checked
#: before the closure is built).
MAX_SUBSETS = 1 << 20


def _workload_columns(frame: Any, workload: Any) -> tuple[list[Any], list[tuple[Any, ...]]]:
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


def _dimensions(frame: Any, attrs: list[Any], bins: Any, categories: Any, other: Any = None) -> list[Grid]:
    """One public one-column grid per attribute (``histogram``'s domain rules, from the arguments only)."""
    bins_of = _dimension_specs(bins, "bins", attrs)
    cats_of = _dimension_specs(categories, "categories", attrs)
    other_of = dict(zip(attrs, other_labels(other, attrs, [cats_of.get(c) is not None for c in attrs])))
    dims = []
    for c in attrs:
        b = bins_of.get(c)
        k = cats_of.get(c)
        dims.append(make_grid(frame, [c], bins=None if b is None else {c: b},
                              categories=None if k is None else {c: k}, other=other_of[c]))
    return dims


def _weights(weights: Any, tables: int) -> list[Any] | None:
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
def _cached_plan(work: Workload, privacy: PrivacyLoss, objective: Objective, sensitivity: Sensitivity) -> ResidualPlan:
    """The plan of an unweighted workload: public inputs only, so the same inputs reuse one solve."""
    return plan_residuals(work, loss=privacy, objective=objective, sensitivity=sensitivity)


def marginals(frame: Any, workload: Any, *, bins: Any = None, categories: Any = None, other: Any = None,
              epsilon: Any = None,
              rho: Any = None, weights: Any = None, loss: Any = "sum", privacy_unit: Any = None,
              max_rows: Any = None, by: Any = None, hierarchy: Any = None, by_categories: Any = None,
              level_weights: Any = None, public_totals: Any = None, rng: Any = None, nonnegative: Any = False,
              integer: Any = False) -> MarginalTables:
    """Release a workload of consistent cross-tabulations (see ``DataFrame.dp.marginals``).

    ``nonnegative=True`` / ``integer=True`` return the release's
    :meth:`~pandas_dp.results.marginals.MarginalTables.nonnegative` /
    :meth:`~pandas_dp.results.marginals.MarginalTables.integer` tables (post-processing, a
    ``PublishedTables``, by geography a ``GeographyPublishedTables``: both are ``MarginalTables``); the
    union domain's size is checked against the projection's cap before anything is read.
    """
    if any(v is not None for v in (by, hierarchy, by_categories, level_weights, public_totals)):
        nonneg, whole = check_flag(nonnegative, "nonnegative", "marginals"), check_flag(integer, "integer", "marginals")
        from pandas_dp.releases.marginals_geography import marginals_by_region  # a cycle: it reuses our checks
        return marginals_by_region(frame, workload, bins=bins, categories=categories, other=other, epsilon=epsilon,
                                   rho=rho,
                                   weights=weights, loss=loss, privacy_unit=privacy_unit, max_rows=max_rows, by=by,
                                   hierarchy=hierarchy, by_categories=by_categories, level_weights=level_weights,
                                   public_totals=public_totals, rng=rng,
                                   publish="integer" if whole else "nonnegative" if nonneg else None)
    attrs, tables = _workload_columns(frame, workload)
    privacy = privacy_loss(epsilon, rho)
    check_measure(privacy, frozenset({"pure", "zcdp"}), "marginals")
    objective: Objective = "max" if check_choice(loss, "loss", ("sum", "max")) == "max" else "sum"
    generator = check_rng(rng)
    unit = PrivacyUnit.gather(privacy_unit, max_rows).bounds(frame.columns, reserved=tuple(attrs))
    if unit is not None and unit.auto:
        raise ParameterError("max_rows='auto' is offered for histograms; pass a public max_rows=k to marginals.")
    if sum(1 << len(t) for t in tables) > MAX_SUBSETS:
        raise DomainError(f"The workload's tables have too many sub-tables to measure (the sum of 2**columns over "
                          f"its tables is above {MAX_SUBSETS:,}). Use tables of fewer columns.")
    nonneg, whole = check_flag(nonnegative, "nonnegative", "marginals"), check_flag(integer, "integer", "marginals")
    publish = "integer" if whole else "nonnegative" if nonneg else None
    dims = _dimensions(frame, attrs, bins, categories, other)
    if publish is not None:
        check_joint([d.size for d in dims], f"marginals({publish}=True)")
    position = {(type(c), c): i for i, c in enumerate(attrs)}
    work = make_workload([d.size for d in dims], [[position[(type(c), c)] for c in t] for t in tables])
    cells = sum(work.cells(a) for a in work.closure)
    if cells > MAX_CELLS:
        raise DomainError(f"The workload's tables and their sub-tables have {cells:,} cells; the limit is "
                          f"{MAX_CELLS:,} (2**26), as every measured cell gets its own noisy count. Use coarser "
                          f"bins or fewer columns per table.")
    sensitivity = UNIT if unit is None else unit.histogram_sensitivity()
    checked = _weights(weights, len(work.tables))
    if checked is None:
        plan = _cached_plan(work, privacy, objective, sensitivity)
    else:
        plan = plan_residuals(work, loss=privacy, objective=objective, weights=checked, sensitivity=sensitivity)
    names = [[str(c) for c in t] for t in tables]
    ledger_params: dict[str, Any] = {"workload": names, "shape": [d.size for d in dims], "loss": objective,
                                     "weights": [str(w) for w in plan.weights],
                                     "measured": len(plan.measured),
                                     **({} if unit is None else unit.describe())}
    measured = [n for n in plan.noises if n is not None]
    widest = max(measured, key=lambda n: n.tail_factor(0.95))
    grid = Grid(tuple(d.dims[0] for d in dims))

    def mechanism(exact: Any) -> MarginalTables:
        maximal = exact if unit is None else exact.marginals(unit, release_key(generator))
        noisy = measure_marginals(sum_down(maximal, work), plan, rng=generator)
        estimates = reconstruct(noisy)
        params = {**ledger_params, "sensitivity": sensitivity.describe(), "plan": plan.describe(),
                  "total_variance": plan.total_variance()}
        result = MarginalTables(workload=tuple(tables), domain=grid, epsilon=privacy.pure_epsilon,
                                method="residual_planner", params=params,
                                post_processing=("GLS reconstruction (consistent tables)",), loss=privacy,
                                noise=widest, detail=MarginalDetail.of(estimates))
        return result if publish is None else published(result, publish)

    if unit is None:
        count = lambda engine: engine.marginal_counts(frame, dims, work)  # noqa: E731
    else:
        count = lambda engine: engine.coded_marginal_rows(frame, dims, work, unit)  # noqa: E731
    return run(frame, Release(loss=privacy, method="marginals:residual_planner", columns=attrs,
                              params=ledger_params, count=count, mechanism=mechanism))
