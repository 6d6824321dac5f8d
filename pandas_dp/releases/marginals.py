"""``marginals``: a workload of cross-tabulations measured at once (ResidualPlanner), consistent tables.

Plan (public inputs only, before the budget is checked): the workload's
columns (labels only), the privacy loss, ``rng``, the privacy unit, one public
dimension per column from ``bins=``/``categories=`` (dicts keyed by column,
read as ``histogram`` reads them: never from the data), the workload over those
dimensions, and ResidualPlanner's plan
(:func:`~pandas_dp.algorithms.marginals.plan.plan_residuals`: which marginals
of the closure are measured, each one's part of the loss and its noise,
refused here when a part is too small for the sampler; without ``weights=``,
:func:`~pandas_dp.algorithms.marginals.alone.plan_no_worse_than_alone`, under
which no table is worse than measured alone with an even split). Pipeline: check the
budget -> count every maximal marginal in one pass (the engine) -> charge the
loss -> sum down, noise every measured marginal, reconstruct by GLS -> wrap a
:class:`~pandas_dp.results.marginals.MarginalTables`.

With ``privacy_unit=`` and ``max_rows=k`` each unit keeps at most ``k`` of its
rows in the domain (random, by the release's row keys); one unit then moves
every marginal by at most ``k`` in L1 and in L2, and the plan is calibrated to
that sensitivity.
"""

from __future__ import annotations

from typing import Any

from pandas_dp._utils.checks import check_flag
from pandas_dp.algorithms.marginals.counting import sum_down
from pandas_dp.algorithms.marginals.measure import measure_marginals
from pandas_dp.algorithms.marginals.nonnegative import check_joint
from pandas_dp.algorithms.marginals.plan import Objective, plan_residuals
from pandas_dp.algorithms.marginals.reconstruct import reconstruct
from pandas_dp.algorithms.marginals.workload import make_workload
from pandas_dp.domain.grid import MAX_CELLS, Grid
from pandas_dp.errors import DomainError, ParameterError
from pandas_dp.noise.words import release_key
from pandas_dp.privacy.loss import UNIT
from pandas_dp.releases.geography_arguments import GeographyArguments
from pandas_dp.releases.geography_marginals import marginals_by_region
from pandas_dp.releases.params import PrivacyUnit, check_choice, check_rng
from pandas_dp.releases.pipeline import Release, check_measure, privacy_loss, run
from pandas_dp.releases.shared import (MAX_SUBSETS, cached_plan, dimensions, ordered_queries, workload_columns,
                                       workload_weights)
from pandas_dp.results.marginals import MarginalDetail, MarginalTables
from pandas_dp.results.marginals import publish as published

__all__ = ["marginals"]


def marginals(frame: Any, workload: Any, *, bins: Any = None, categories: Any = None, other: Any = None,
              epsilon: Any = None,
              rho: Any = None, weights: Any = None, loss: Any = "sum", privacy_unit: Any = None,
              max_rows: Any = None, by: Any = None, hierarchy: Any = None, by_categories: Any = None,
              level_weights: Any = None, public_totals: Any = None, rng: Any = None, nonnegative: Any = False,
              integer: Any = False, ordered: Any = None) -> MarginalTables:
    """Release a workload of consistent cross-tabulations (see ``DataFrame.dp.marginals``).

    ``nonnegative=True`` / ``integer=True`` return the release's
    :meth:`~pandas_dp.results.marginals.MarginalTables.nonnegative` /
    :meth:`~pandas_dp.results.marginals.MarginalTables.integer` tables (post-processing, a
    ``PublishedTables``, by geography a ``GeographyPublishedTables``: both are ``MarginalTables``); the
    union domain's size is checked against the projection's cap before anything is read.
    """
    geography = GeographyArguments(by, hierarchy, by_categories, level_weights, public_totals)
    if geography.given:
        nonneg, whole = check_flag(nonnegative, "nonnegative", "marginals"), check_flag(integer, "integer", "marginals")
        return marginals_by_region(frame, workload, geography, bins=bins, categories=categories, other=other,
                                   epsilon=epsilon, rho=rho, weights=weights, loss=loss, privacy_unit=privacy_unit,
                                   max_rows=max_rows, rng=rng, ordered=ordered,
                                   publish="integer" if whole else "nonnegative" if nonneg else None)
    attrs, tables = workload_columns(frame, workload)
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
    dims = dimensions(frame, attrs, bins, categories, other)
    if publish is not None:
        check_joint([d.size for d in dims], f"marginals({publish}=True)")
    position = {(type(c), c): i for i, c in enumerate(attrs)}
    asked = ordered_queries(ordered, attrs, dims)
    work = make_workload([d.size for d in dims], [[position[(type(c), c)] for c in t] for t in tables], asked)
    cells = sum(work.cells(a) for a in work.closure)
    if cells > MAX_CELLS:
        raise DomainError(f"The workload's tables and their sub-tables have {cells:,} cells; the limit is "
                          f"{MAX_CELLS:,} (2**26), as every measured cell gets its own noisy count. Use coarser "
                          f"bins or fewer columns per table.")
    sensitivity = UNIT if unit is None else unit.histogram_sensitivity()
    checked = workload_weights(weights, len(work.tables))
    if checked is None:
        plan = cached_plan(work, privacy, objective, sensitivity)
    else:
        plan = plan_residuals(work, loss=privacy, objective=objective, weights=checked, sensitivity=sensitivity)
    names = [[str(c) for c in t] for t in tables]
    ledger_params: dict[str, Any] = {"workload": names, "shape": [d.size for d in dims], "loss": objective,
                                     "weights": [str(w) for w in plan.weights],
                                     "measured": len(plan.measured),
                                     **({"ordered": {str(c): q.describe() for c, q in zip(attrs, asked)
                                                     if q is not None}} if work.has_ordered else {}),
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

