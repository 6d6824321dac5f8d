"""``marginals(workload, ..., by=[...], hierarchy=regions)``: a table set for every region of a geography.

Order (the one release pipeline, :mod:`pandas_dp.releases.pipeline`):

1. **Public inputs**, checked as ``marginals`` checks them (the workload, the
   domains, the loss, ``weights``, ``loss=``, ``rng``, the privacy unit) and as
   ``histogram(by=...)`` checks its geography (the region tree from the public
   ``hierarchy`` table, or ``by_categories`` for one level, validated by
   :func:`~pandas_dp.releases.geography_arguments.geography_tree`; ``level_weights`` by
   :func:`~pandas_dp.releases.geography_arguments.level_shares`), then ``public_totals``
   (one finite non-negative number per region of the level, consistent across
   levels). The loss is split across the levels exactly; every measured level
   gets ResidualPlanner's plan for its part (refused here when a part is too
   small for the sampler; without ``weights=``, no table worse than alone with
   an even split at that level, which bounds every region after the GLS:
   :mod:`~pandas_dp.algorithms.marginals.alone`).
2. **Budget check, count, charge**: the engine counts every maximal marginal
   over (finest region, cells) in one pass
   (:mod:`pandas_dp.engines.pandas.geography_marginals`); a row whose region is
   not in the tree (unknown, missing, or whose coarser ``by`` columns disagree
   with it), or whose value is outside a workload column's domain, is dropped
   from every table, silently and uncounted.
3. **Mechanism** (:mod:`pandas_dp.algorithms.marginals.geography`): coarser
   levels are sums of their children; every level's measured marginals are
   noised in every region; exact GLS across the geography for every residual
   coefficient (with the public totals as exact values of the total).

Privacy. A row lies in one region per level, so it moves every marginal of
one region per level by one (``max_rows=k`` rows of a unit: by ``k``): the
regions of a level compose in parallel, the levels sequentially, and the
levels' parts add up to the release's loss, charged once.

With ``public_totals`` no two add/remove neighbours agree with the facts
published, so the neighbours are those of
:data:`~pandas_dp.releases.geography_arguments.HELD_TOTALS_NEIGHBOURS`: one
record's attributes change (and its region, below the finest level with
totals, within its totalled region), every total stays. Every measured
marginal of the plan (the plan noises whole marginals, each with its own part
of the loss, :mod:`pandas_dp.algorithms.marginals.plan`) then moves by at most
two cells, one down and one up: L1 = 2 and L2**2 = 2 (twice the add/remove
bounds, :func:`~pandas_dp.releases.geography_arguments.held_totals_sensitivity`;
with ``max_rows=k``, 2k and 2k**2). Attained: a record changing every
workload column moves every non-empty marginal by two cells (one changing
region moves the empty one too). The plan is made for that sensitivity, so the
charge stays the loss asked for and the noise grows (by 2 in scale under pure
DP, by sqrt(2) under zCDP).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from pandas_dp._utils.rational import fraction_text
from pandas_dp.algorithms.marginals.geography import (geography_gls, measure_levels, region_sum_down,
                                                      region_workload)
from pandas_dp.algorithms.marginals.plan import Objective, ResidualPlan, plan_residuals
from pandas_dp.algorithms.marginals.workload import Marginal, Workload, make_workload
from pandas_dp.algorithms.geography.layout import RegionLayout, region_tree_layout
from pandas_dp.domain.grid import MAX_CELLS, Grid
from pandas_dp.errors import DomainError, ParameterError
from pandas_dp.noise.words import release_key
from pandas_dp.privacy.loss import UNIT, PrivacyLoss
from pandas_dp.releases.geography_arguments import (HELD_TOTALS_NEIGHBOURS, GeographyArguments,
                                                     held_totals_sensitivity)
from pandas_dp.releases.shared import (MAX_SUBSETS, cached_plan, dimensions, ordered_queries, workload_columns,
                                       workload_weights)
from pandas_dp.releases.params import PrivacyUnit, check_choice, check_rng
from pandas_dp.releases.pipeline import Release, check_measure, privacy_loss, run
from pandas_dp.algorithms.marginals.topdown import check_geography_joint
from pandas_dp.results.geography_marginals import GeographyMarginalTables
from pandas_dp.results.geography_marginals import check_integer_totals, publish_by_region
from pandas_dp.results.marginals import MarginalDetail

__all__ = ["marginals_by_region", "RESERVED"]

#: Column names of the tidy result that a workload column may not take.
RESERVED = ("level", "region", "table", "estimate", "variance", "std_error")


def _plans(work: Workload, loss: PrivacyLoss, shares: tuple[Fraction, ...], objective: Objective,
           weights: list[Any] | None, sensitivity: Any, public_totals: bool) -> list[ResidualPlan | None]:
    plans: list[ResidualPlan | None] = []
    for share, part in zip(shares, loss.split(shares)):
        if share == 0:
            plans.append(None)
        elif weights is None:
            # every level no table worse than alone: so is every region after the GLS (alone.py)
            plans.append(cached_plan(work, part, objective, sensitivity, bool(public_totals)))
        else:
            plans.append(plan_residuals(work, loss=part, objective=objective, weights=weights,
                                        sensitivity=sensitivity))
    return plans


def _level_counts(leaf: Mapping[Marginal, np.ndarray], work: Workload, layout: RegionLayout,
                  measured: list[bool]) -> list[dict[Marginal, np.ndarray] | None]:
    """Every closure marginal of every region of every measured level (parents: sums of children)."""
    maximal = {tuple(i - 1 for i in a[1:]): np.asarray(t, dtype=np.int64) for a, t in leaf.items()}
    out: list[dict[Marginal, np.ndarray] | None] = [None] * layout.n_levels
    tables = maximal
    for lvl in range(layout.leaf_level, -1, -1):
        if measured[lvl]:
            out[lvl] = region_sum_down(tables, work)
        if lvl > 0:
            tables = {a: layout.aggregate(t, lvl) for a, t in tables.items()}
    return out


def marginals_by_region(frame: Any, workload: Any, geography: GeographyArguments, /, *, bins: Any = None,
                        categories: Any = None, other: Any = None, epsilon: Any = None, rho: Any = None,
                        weights: Any = None, loss: Any = "sum", privacy_unit: Any = None, max_rows: Any = None,
                        rng: Any = None, publish: str | None = None, ordered: Any = None) -> GeographyMarginalTables:
    """Release a workload of consistent cross-tabulations for every region (see ``DataFrame.dp.marginals``).

    ``publish="nonnegative"`` / ``"integer"`` return the release's
    :meth:`~pandas_dp.results.geography_marginals.GeographyMarginalTables.nonnegative` /
    :meth:`~pandas_dp.results.geography_marginals.GeographyMarginalTables.integer` tables (post-processing);
    the joints' size (union domain times every region) and, for integers, whole public totals are
    checked before anything is read.
    """
    geography.check_by()
    attrs, tables = workload_columns(frame, workload)
    privacy = privacy_loss(epsilon, rho)
    check_measure(privacy, frozenset({"pure", "zcdp"}), "marginals")
    objective: Objective = "max" if check_choice(loss, "loss", ("sum", "max")) == "max" else "sum"
    generator = check_rng(rng)
    clash = [c for c in attrs if isinstance(c, str) and c in RESERVED]
    if clash:
        raise ParameterError(f"Workload column(s) {clash} share a name with the result's columns {list(RESERVED)}; "
                             f"rename them (df.rename(columns=...)) first.")
    tree = geography.tree(frame.columns)
    located = [c for c in tree.located if c in attrs]
    if located:
        raise ParameterError(f"The geography column(s) {located} are also workload columns: every table is already "
                             f"released for every region. Drop them from the workload.")
    unit = PrivacyUnit.gather(privacy_unit, max_rows).bounds(frame.columns, reserved=(*attrs, *tree.located))
    if unit is not None and unit.auto:
        raise ParameterError("max_rows='auto' is offered for histograms; pass a public max_rows=k to marginals.")
    if sum(1 << len(t) for t in tables) > MAX_SUBSETS:
        raise DomainError(f"The workload's tables have too many sub-tables to measure (the sum of 2**columns over "
                          f"its tables is above {MAX_SUBSETS:,}). Use tables of fewer columns.")
    dims = dimensions(frame, attrs, bins, categories, other)
    position = {(type(c), c): i for i, c in enumerate(attrs)}
    asked = ordered_queries(ordered, attrs, dims)
    work = make_workload([d.size for d in dims], [[position[(type(c), c)] for c in t] for t in tables], asked)
    n_regions = [len(r) for r in tree.regions]
    cells = sum(work.cells(a) for a in work.closure) * sum(n_regions)
    if cells > MAX_CELLS:
        raise DomainError(f"The workload's tables and their sub-tables for every one of the {sum(n_regions):,} "
                          f"regions have {cells:,} cells; the limit is {MAX_CELLS:,} (2**26). Use coarser bins, "
                          f"fewer columns per table or fewer regions.")
    layout = region_tree_layout(tree)
    shares = geography.shares(tree.level_names)
    totals = geography.totals(tree, layout)
    if publish is not None:
        check_geography_joint([d.size for d in dims], sum(n_regions), f"marginals({publish}=True)")
        if publish == "integer":
            check_integer_totals(totals, tree.level_names)
    sensitivity = UNIT if unit is None else unit.histogram_sensitivity()
    if totals:   # one record changes, the totals stay: each marginal moves by two cells
        sensitivity = held_totals_sensitivity(sensitivity)
    plans = _plans(work, privacy, shares, objective, workload_weights(weights, len(work.tables)), sensitivity,
                   bool(totals))
    rwork = region_workload(work, n_regions[-1])
    finest = plans[-1]
    assert finest is not None, "level_shares gives the finest level a positive share"
    ledger_params: dict[str, Any] = {
        "workload": [[str(c) for c in t] for t in tables], "shape": [d.size for d in dims], "loss": objective,
        "weights": [str(w) for w in finest.weights], "by": list(tree.level_names[1:]),
        "levels": list(tree.level_names), "regions_per_level": n_regions,
        "level_shares": [fraction_text(s) for s in shares],
        "measured": [0 if p is None else len(p.measured) for p in plans],
        "public_totals": [tree.level_names[k] for k in sorted(totals)],
        **({"ordered": {str(c): q.describe() for c, q in zip(attrs, asked) if q is not None}}
           if work.has_ordered else {}),
        **({"neighbours": HELD_TOTALS_NEIGHBOURS, "sensitivity": sensitivity.describe()} if totals else {}),
        **({} if unit is None else unit.describe())}
    measured_noises = [n for p in plans if p is not None for n in p.noises if n is not None]
    widest = max(measured_noises, key=lambda n: n.tail_factor(0.95))
    grid = Grid(tuple(d.dims[0] for d in dims))

    def mechanism(exact: Any) -> GeographyMarginalTables:
        leaf = exact if unit is None else exact.marginals(unit, release_key(generator))
        counts = _level_counts(leaf, work, layout, [p is not None for p in plans])
        noisy = measure_levels(counts, plans, rng=generator)
        estimates = geography_gls(noisy, plans, layout, public_totals=totals)
        post = ["GLS reconstruction (consistent tables)",
                "exact GLS across the geography (every parent = sum of its children, in every cell)"]
        if totals:
            post.append("public totals matched exactly (conditioned GLS)")
        params = {**ledger_params, "sensitivity": sensitivity.describe(),
                  "plan": [None if p is None else p.describe() for p in plans]}
        result = GeographyMarginalTables(
            workload=tuple(tables), domain=grid, epsilon=privacy.pure_epsilon, method="residual_planner",
            params=params, post_processing=tuple(post), loss=privacy, noise=widest,
            detail=MarginalDetail.of(estimates.region(0, 0)), levels=tree.level_names, regions=tree.regions,
            parents=tree.parents, geography=estimates)
        return result if publish is None else publish_by_region(result, publish, totals)

    columns = [*attrs, *(c for c in tree.located if c not in attrs)]
    if unit is None:
        count = lambda engine: engine.region_marginal_counts(frame, tree, dims, rwork)  # noqa: E731
    else:
        count = lambda engine: engine.coded_region_marginal_rows(frame, tree, dims, rwork, unit)  # noqa: E731
        columns.append(unit.column)
    return run(frame, Release(loss=privacy, method="marginals:residual_planner", columns=columns,
                              params=ledger_params, count=count, mechanism=mechanism))
