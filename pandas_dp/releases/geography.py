"""Tables by geography: ``histogram(columns, ..., by=[...], hierarchy=regions)`` (issue 16).

One histogram of ``columns`` for every region of a public geography
(``"national"``, then every ``by`` level, coarse to fine), made consistent:
every parent's histogram is the sum of its children's in every cell.

Order (the one release pipeline, :mod:`pandas_dp.releases.pipeline`):

1. **Public inputs.** The columns, the loss, the rng and the flags; the
   method (``"identity"``: a flat table per region); the region tree from the
   public ``hierarchy`` table (or ``by_categories`` for one level), validated
   loudly by :func:`pandas_dp.domain.geography.region_tree`; the grid of cells; the
   public totals; the level weights (the five geography arguments come as one
   :class:`~pandas_dp.releases.geography_arguments.GeographyArguments`). The plan splits the loss across the levels
   (``loss.split(shares)``, exact) and calibrates each level's noise for
   sensitivity 1 (a loss too small for the sampler is refused here).
2. **Budget check, count, charge** (:func:`~pandas_dp.releases.pipeline.run`):
   the engine counts every region's cells
   (:mod:`pandas_dp.engines.pandas.geography_counts`, on every engine); a row whose
   region is unknown, missing or odd, or whose coarser ``by`` columns disagree
   with the tree, is out of domain and dropped, silently.
3. **Mechanism** (:func:`~pandas_dp.algorithms.geography.release.release_geography`):
   noise on every measured level, exact GLS across the geography,
   optionally non-negative or integer tables; wrapped as a
   :class:`~pandas_dp.results.geography.GeographyHistogram`.

Privacy. Every level is a partition of the rows (a row lies in one region
per level), so one row changes one cell of one region per level by one
(L1 = L2 = 1 per level): within a level the regions' tables compose in
parallel, across levels sequentially. The levels' losses add up to the
release's loss exactly, which is charged once (one ledger row). With
``public_totals`` the neighbours are those of
:data:`~pandas_dp.releases.geography_arguments.HELD_TOTALS_NEIGHBOURS` (one
record changes, the totals stay): it moves one count of each level from one
cell to another (of its region, or of a sibling region below the totalled
level), L1 = 2 and L2**2 = 2 per level, and every level's noise is calibrated
for that (the charge stays the loss asked for).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp._utils.rational import fraction_text
from pandas_dp.algorithms.geography.release import release_geography
from pandas_dp.domain.grid import MAX_CELLS, Grid, make_grid
from pandas_dp.errors import DomainError, ParameterError
from pandas_dp.privacy.loss import UNIT, Noise, PrivacyLoss, Sensitivity
from pandas_dp.domain.geography import RegionTree
from pandas_dp.results.geography_layout import geography_index, RESERVED_NAMES
from pandas_dp.results.geography import GeographyHistogram
from pandas_dp.algorithms.geography.layout import level_tables, region_tree_layout
from pandas_dp.noise.words import release_key
from pandas_dp.privacy.units import AUTO_MAX_ROWS, UnitArguments, UnitBounds
from pandas_dp.releases.geography_arguments import (GEOGRAPHY_KEYWORDS, HELD_TOTALS_NEIGHBOURS, GeographyArguments,
                                                     held_totals_sensitivity)
from pandas_dp.releases.methods import METHODS, method_named
from pandas_dp.releases.methods.base import BOTH_MEASURES
from pandas_dp.releases.params import Param, check_columns, check_flag, check_rng
from pandas_dp.releases.pipeline import Release, check_measure, privacy_loss, run
from pandas_dp.releases.shared import choose_max_rows

__all__ = ["GEOGRAPHY_PARAMS", "GEOGRAPHY_METHODS", "GeographyPlan", "check_size", "plan_geography",
           "histogram_by_region"]

#: The arguments of ``histogram`` that make it a release by geography (the CLI accepts them too), in its
#: signature order: the five of :class:`~pandas_dp.releases.geography_arguments.GeographyArguments`, with
#: ``integer`` (integer tables) before ``public_totals``; they are checked in :func:`histogram_by_region`'s order.
GEOGRAPHY_PARAMS: tuple[Param, ...] = tuple(Param(name, None, None) for name in
                                            (*GEOGRAPHY_KEYWORDS[:4], "integer", GEOGRAPHY_KEYWORDS[4]))

#: Histogram methods whose per-region tables this release can noise and make consistent.
GEOGRAPHY_METHODS = ("identity",)


@dataclass(frozen=True)
class GeographyPlan:
    """The public part of a release by geography: regions, cells, the loss of every level and its noise.

    Attributes
    ----------
    tree : RegionTree
        The public regions, root (``"national"``) first.
    grid : Grid
        The public cells of every region's histogram.
    shares : tuple of Fraction
        Each level's exact share of the loss (summing to 1).
    losses : tuple of PrivacyLoss or None
        Each level's loss (``None``: the level is not measured, its tables
        are sums of its children's).
    noises : tuple of Noise or None
        Each measured level's noise, for ``sensitivity``.
    sensitivity : Sensitivity
        What one row moves a level's tables by: 1 (add/remove one row), or L1 = 2 and
        L2**2 = 2 with public totals (one record changes, the totals stay).
    """

    tree: RegionTree
    grid: Grid
    shares: tuple[Fraction, ...]
    losses: tuple[PrivacyLoss | None, ...]
    noises: tuple[Noise | None, ...]
    sensitivity: Sensitivity = UNIT

    @property
    def levels(self) -> tuple[str, ...]:
        """Level names, ``"national"`` first."""
        return self.tree.level_names


def check_size(tree: RegionTree, grid: Grid) -> None:
    """Refuse a release of more than ``MAX_CELLS`` estimates (public inputs only; before any charge).

    Raises
    ------
    DomainError
        When the release would hold more than ``MAX_CELLS`` estimates.
    """
    n_regions = [len(r) for r in tree.regions]
    total = sum(n_regions) * grid.size
    if total > MAX_CELLS:
        raise DomainError(f"A histogram of {grid.size:,} cells for each of {sum(n_regions):,} regions "
                          f"({' + '.join(f'{k:,}' for k in n_regions)}) has {total:,} estimates; the limit is "
                          f"{MAX_CELLS:,} (2**26). Use coarser bins or fewer levels.")


def plan_geography(tree: RegionTree, grid: Grid, loss: PrivacyLoss, shares: tuple[Fraction, ...],
                   sensitivity: Sensitivity = UNIT) -> GeographyPlan:
    """Split the loss across the levels by ``shares`` and calibrate each level's noise (public; before any charge).

    ``sensitivity`` is what one row (record) moves each level's tables by: :data:`~pandas_dp.privacy.loss.UNIT`
    under add/remove-one-row, :func:`~pandas_dp.releases.geography_arguments.held_totals_sensitivity` of it
    with public totals.

    Raises
    ------
    ParameterError
        For a level's loss too small for the sampler.
    """
    parts = loss.split(shares)
    losses = tuple(p if s > 0 else None for p, s in zip(parts, shares))
    noises = tuple(None if part is None else part.noise(sensitivity, what=f"level {name!r} of the geography")
                   for part, name in zip(losses, tree.level_names))
    return GeographyPlan(tree, grid, shares, losses, noises, sensitivity)


def _ledger_params(plan: GeographyPlan, loss: PrivacyLoss, method: str, nonnegative: bool,
                   integer: bool, totals: Mapping[int, Any] | None = None) -> dict[str, Any]:
    return {
        "method": method, "by": list(plan.levels[1:]), "levels": list(plan.levels),
        "regions_per_level": [len(r) for r in plan.tree.regions], "shape": list(plan.grid.shape),
        "level_shares": [fraction_text(s) for s in plan.shares],
        f"{loss.parameter}_per_level": [fraction_text(p.amount) if p is not None else "0" for p in plan.losses],
        "nonnegative": nonnegative, "integer": integer,
        "public_totals": [plan.levels[k] for k in sorted(totals or {})],
        **({"neighbours": HELD_TOTALS_NEIGHBOURS} if totals else {}),
    }


def _wrap(rel: Any, plan: GeographyPlan, loss: PrivacyLoss, method: str, params: dict[str, Any]) -> GeographyHistogram:
    index = geography_index(plan.levels, plan.tree.regions, plan.grid)
    dtype = np.int64 if rel.integer else np.float64
    estimates = np.concatenate([np.asarray(e, dtype=dtype).reshape(-1) for e in rel.estimates])
    variance = np.concatenate([np.repeat(np.asarray(v, dtype=np.float64), plan.grid.size) for v in rel.variances])
    post = ["exact GLS across the geography (every parent = sum of its children, in every cell)"]
    if rel.level_totals:
        post.append("public totals matched exactly (conditioned GLS)")
    if rel.nonnegative:
        post.append("non-negative (top-down weighted projection)")
    if rel.integer:
        post.append(f"integer (controlled rounding, {rel.rounding})")
    sensitivity = 1 if plan.sensitivity == UNIT else plan.sensitivity.describe()
    result_params = dict(params, sensitivity=sensitivity, noise=rel.noise_descriptions())
    return GeographyHistogram(
        counts=pd.Series(estimates, index=index, name="estimate"),
        variance=pd.Series(variance, index=index, name="variance"),
        epsilon=loss.pure_epsilon, method=method, params=result_params, domain=plan.grid,
        levels=plan.levels, regions=plan.tree.regions, parents=plan.tree.parents, post_processing=tuple(post),
        variance_exact=rel.variance_exact, loss=loss, noises=rel.noises, detail=rel)


def _public_totals(geography: GeographyArguments, tree: RegionTree, projected: bool,
                   integer: bool) -> dict[int, np.ndarray]:
    """``{level position: totals}`` from ``public_totals=`` (public input, checked before any charge)."""
    if geography.public_totals is None:
        return {}
    totals = geography.totals(tree, region_tree_layout(tree))
    finer = [tree.level_names[k] for k in sorted(totals) if k > 0]
    if projected and finer:
        raise ParameterError(f"Non-negative and integer tables by geography keep a public total of 'national' "
                             f"only; public_totals names {finer}. Drop nonnegative=/integer= (the GLS tables match "
                             f"every level's totals exactly) or give the national total only.")
    if integer and 0 in totals and not np.array_equal(totals[0], np.round(totals[0])):
        raise ParameterError(f"integer=True publishes whole counts that sum to the public total: give an integer "
                             f"total for 'national' (got {totals[0][0]!r}) or drop integer=.")
    return totals


def histogram_by_region(frame: Any, columns: Any, geography: GeographyArguments, /, *, bins: Any = None,
                        range: Any = None, categories: Any = None, other: Any = None, epsilon: Any = None,
                        rho: Any = None, method: str = "identity", rng: Any = None, nonnegative: bool = False,
                        integer: bool | None = None, unit_arguments: UnitArguments = UnitArguments(),
                        **method_params: Any) -> GeographyHistogram:
    """Release one consistent histogram per region of a public geography (see ``DataFrame.dp.histogram``).

    ``geography`` carries the five geography arguments (:class:`~pandas_dp.releases.geography_arguments.GeographyArguments`)
    and ``unit_arguments`` the privacy-unit arguments, each checked here at its point (the unit once the
    region columns are known).
    With a ``privacy_unit``, every unit's rows are bounded on the leaf table (its (finest region,
    cell) pairs) as for a flat histogram, and every level is noised for a unit of at most its row
    bound (group privacy, :meth:`~pandas_dp.privacy.units.UnitBounds.per_row_loss`): the coarser levels
    sum the leaf table, so a unit's rows may all meet in one cell there.

    ``public_totals={level: Series}`` (checked as ``marginals(by=...)`` checks it, before any charge):
    every region's histogram at that level sums to its total exactly, coarser levels are sums of
    them and finer ones are conditioned on them (exact GLS, exact variances; see
    :func:`~pandas_dp.algorithms.geography.release.release_geography`). Non-negative and integer
    tables keep totals of ``"national"`` only (integer ones need an integer total). With public totals
    the neighbours change one record and keep the totals (``params["neighbours"]``): every level's
    noise is calibrated for L1 = 2, L2**2 = 2 (:func:`~pandas_dp.releases.geography_arguments.held_totals_sensitivity`).
    """
    geography.check_by()
    cols = check_columns(frame, columns)
    loss = privacy_loss(epsilon, rho)
    generator = check_rng(rng)
    nonneg = check_flag(nonnegative, "nonnegative")
    whole = check_flag(False if integer is None else integer, "integer")
    name = method_named(method)
    if name not in GEOGRAPHY_METHODS:
        raise ParameterError(f"Tables by geography (by=) support method={GEOGRAPHY_METHODS[0]!r} only: a flat "
                             f"histogram per region, made consistent across the geography. Got method={name!r}; "
                             f"pass method='identity' or drop by=.")
    METHODS[name].params.validate(method_params)
    check_measure(loss, BOTH_MEASURES, "histogram(by=...)")
    clash = [c for c in cols if c in RESERVED_NAMES]
    if clash:
        raise ParameterError(f"Column(s) {clash} share a name with the result's index or columns "
                             f"{list(RESERVED_NAMES)}; rename them (df.rename(columns=...)) first.")
    tree = geography.tree(frame.columns)
    unit = unit_arguments.bounds(frame.columns, reserved=(*cols, *tree.located))
    grid = make_grid(frame, cols, bins=bins, range=range, categories=categories, other=other)
    totals = _public_totals(geography, tree, nonneg or whole, whole)
    check_size(tree, grid)
    shares = geography.shares(tree.level_names)
    moved = held_totals_sensitivity(UNIT) if totals else UNIT

    def planned(bounds: UnitBounds | None, share: PrivacyLoss) -> GeographyPlan:
        per_row = share if bounds is None else bounds.per_row_loss(share)
        return plan_geography(tree, grid, per_row, shares, moved)

    if unit is None:
        plan = planned(None, loss)
    else:  # "auto" is planned for the largest bound it may choose: a loss too small for it is refused now
        plan = planned(unit.with_max_rows(AUTO_MAX_ROWS) if unit.auto else unit,
                       loss - loss.part(unit.auto_share) if unit.auto else loss)
    params = _ledger_params(plan, loss, name, nonneg, whole, totals)
    parents = [None, *tree.parents[1:]]
    columns = [*cols, *(c for c in tree.located if c not in cols)]

    def release(tables: list[np.ndarray], final: GeographyPlan, extra: dict[str, Any]) -> GeographyHistogram:
        rel = release_geography(tables, parents, level_losses=final.losses, sensitivity=final.sensitivity,
                                integer=whole, nonnegative=nonneg, level_totals=totals or None, rng=generator)
        return _wrap(rel, final, loss, name, {**_ledger_params(final, loss, name, nonneg, whole, totals), **extra})

    if unit is None:
        return run(frame, Release(loss=loss, method=f"histogram:{name}", columns=columns, params=params,
                                  count=lambda engine: engine.region_bin_counts(frame, tree, grid),
                                  mechanism=lambda tables: release(tables, plan, {})))

    def bounded(coded: Any) -> GeographyHistogram:
        key = release_key(generator)
        chosen, final = unit, plan
        if unit.auto:
            part = loss.part(unit.auto_share)
            chosen = unit.with_max_rows(choose_max_rows(coded.contributions(), part.noise(), generator,
                                                            unit.auto_quantile))
            final = planned(chosen, loss - part)
        leaf = coded.counts(chosen, key).reshape(len(tree.regions[-1]), grid.size)
        return release(level_tables(leaf, tree), final,
                       {**chosen.describe(), "unit_sensitivity": str(chosen.row_bound)})

    return run(frame, Release(
        loss=loss, method=f"histogram:{name}", columns=[*columns, unit.column], params={**params, **unit.describe()},
        count=lambda engine: engine.coded_region_rows(frame, tree, grid, unit), mechanism=bounded))
