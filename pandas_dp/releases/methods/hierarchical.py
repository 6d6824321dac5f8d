"""``method="hierarchical"``: noisy counts on a tree over the bins, exact GLS inference.

The plan is :func:`~pandas_dp.algorithms.tree.release.plan_tree` (public:
layout, the loss split across levels, each level's noise), made before the
charge; the release is :func:`~pandas_dp.algorithms.tree.release.release_tree`
wrapped as a :class:`~pandas_dp.results.hierarchical.HierarchicalHistogram`.
Its knobs (:data:`TREE_PARAMS`) are also the named arguments of
``hierarchical_histogram`` (:mod:`pandas_dp.releases.hierarchical`);
``docs/methods/hierarchical.md`` describes it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, get_args

import numpy as np

from pandas_dp.algorithms.controlled_rounding import integer_tree
from pandas_dp.algorithms.tree.budget import BudgetSplit
from pandas_dp.algorithms.tree.release import TreePlan, plan_tree, release_tree
from pandas_dp.domain.grid import MAX_CELLS, Grid
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import UNIT, PrivacyLoss
from pandas_dp.privacy.units import UnitBounds
from pandas_dp.results.frozen import lock_in_place
from pandas_dp.results.hierarchical import HierarchicalHistogram
from pandas_dp.results.histogram import as_series
from pandas_dp.releases.methods.base import BOTH_MEASURES, HistogramMethod, Planned
from pandas_dp.releases.params import AutoOr, Flag, Integer, Options, Param, ParamTable

__all__ = ["HIERARCHICAL", "TREE_PARAMS", "BUDGET_SPLITS", "BudgetSplit"]

#: The options of ``budget_split``, read from its type (:data:`pandas_dp.algorithms.tree.budget.BudgetSplit`).
BUDGET_SPLITS: tuple[str, ...] = get_args(BudgetSplit)

TREE_PARAMS = ParamTable("method='hierarchical'", (
    # A fan-out at least the number of bins is a one-level tree; above the largest domain it is refused
    # before the charge (the tree layout indexes nodes with int64).
    Param("branching", AutoOr(Integer(2, MAX_CELLS), "The '{name}' parameter must be 'auto' or an integer in "
                              f"[2, {MAX_CELLS}] (the fan-out per dimension). Got {{value}}. Qardaji et al. "
                              "recommend 8 to 16; 'auto' picks it from the domain size and epsilon."),
          "auto", "fan-out b per dimension, or 'auto' (minimal predicted average range variance)",
          type='int or "auto"', doc="""
              Fan-out ``b`` per dimension. ``"auto"`` minimizes the predicted average
              range-query variance (exact V_Avg; Qardaji et al. Eq. 3) without spending budget."""),
    Param("budget_split", Options(BUDGET_SPLITS), "uniform", "split of the loss across the tree's levels",
          type="{" + ", ".join(f'"{s}"' for s in BUDGET_SPLITS) + "}", doc="""
              Split of epsilon across levels: equal; ``b^(1/3)`` times the parent's (Cormode
              et al.); Qardaji et al.'s iterative optimum for range queries."""),
    Param("include_root", Flag(), False, "also noise the root (Hay et al.'s tree)", type="bool",
          doc="Also noise the root count (Hay et al.'s tree)."),
    Param("consistent", Flag(), True, "exact least-squares constrained inference (H_b^c)", type="bool", doc="""
              Exact least-squares constrained inference (``H_b^c``); ``False`` answers ranges
              with the fewest noisy nodes (``H_b``)."""),
    Param("integer", Flag(), False, "non-negative integer counts, consistent up the tree (controlled rounding)",
          type="bool", doc="""
              Non-negative integer counts on every node, consistent up the tree (controlled
              rounding of the non-negative estimates: each node is the floor or ceiling of its
              real estimate); tables ready to publish. Needs ``consistent=True``."""),
))


def _plan(grid: Grid, loss: PrivacyLoss, knobs: dict[str, Any], unit: UnitBounds | None = None) -> Planned:
    if knobs["integer"] and not knobs["consistent"]:
        raise ParameterError("integer=True rounds a consistent tree (parents equal the sum of their children); "
                             "it needs consistent=True. Drop integer=True or consistent=False.")
    plan = plan_tree(grid.shape, loss=loss, branching=knobs["branching"], budget_split=knobs["budget_split"],
                     include_root=knobs["include_root"], consistent=knobs["consistent"],
                     sensitivity=UNIT if unit is None else unit.level_sensitivity)
    return Planned("hierarchical", plan, knobs)


def _release(counts: np.ndarray, grid: Grid, planned: Planned, *, rng: Any, nonnegative: bool,
             loss: PrivacyLoss) -> HierarchicalHistogram:
    """Release the tree of noisy counts and wrap it (called after the charge).

    Notes
    -----
    Each noised level is a partition of the domain (sensitivity 1) and gets a
    part of the loss, the parts adding up to at most the whole (sequential
    composition); its nodes get that part's noise. The per-bin variances and
    range ``std_error`` are those of the noise actually drawn, through the
    exact GLS linear form (Qardaji et al. 2013; Hay et al. 2010).
    """
    plan: TreePlan = planned.plan
    integer = planned.knobs["integer"]
    nonnegative = nonnegative or integer
    # The engine's counts are the release's own: the noisy leaves are added into them in place.
    rel = release_tree(counts.reshape(grid.shape), plan, nonnegative=nonnegative, rng=rng, overwrite_counts=True)
    post: tuple[str, ...] = ()
    if plan.consistent:
        post += ("constrained inference (exact GLS)",)
    if nonnegative:
        post += ("non-negative consistent projection" if plan.consistent else "clip at 0",)
    if integer:
        # Post-processing of noisy values only: every node becomes the floor or ceiling of its
        # non-negative estimate and parents still equal the sum of their children.
        rel = replace(rel, estimates=integer_tree(rel.layout, rel.estimates))
        post += ("controlled rounding to consistent integers",)
    noises = [None if n is None else n.describe() for n in plan.level_noise]
    params: dict[str, Any] = {
        "branching": rel.branching, "height": rel.height, "budget_split": plan.budget_split,
        "include_root": plan.include_root, "consistent": plan.consistent, "nonnegative": nonnegative,
        "integer": integer,
        f"level_{loss.parameter}s": [str(part.amount) for part in plan.level_losses],
        # Exact per-level noise parameters: discrete Laplace scales (pure), discrete Gaussian sigma^2 (zCDP).
        **({"level_sigma2": [None if d is None else d["sigma2"] for d in noises]} if loss.measure == "zcdp" else
           {"level_noise_scales": [None if d is None else d["noise_scale"] for d in noises]}),
        "noise": next(d["noise"] for d in noises if d is not None), "sensitivity_per_level": 1,
        "branching_chosen_by": "auto" if plan.choice is not None else "caller",
        "variance": ("exact (linear form of the estimator)" if not nonnegative else
                     "approximate: GLS variance before the non-negative projection"
                     + (" and the rounding" if integer else "")),
    }
    if plan.choice is not None:
        params["predicted_average_range_variance"] = plan.choice.predicted_variance
        params["flat_average_range_variance"] = plan.choice.flat_variance
    # Every array of ``rel`` is this release's own (fresh, or the engine's counts noised in place):
    # the result locks them where they are and shares them with ``counts`` / ``variance``, no copies.
    for level in rel.noisy:
        if level is not None:
            lock_in_place(level)
    return HierarchicalHistogram(
        counts=as_series(rel.leaf_estimates(), grid, "estimate", owned=True),
        variance=as_series(rel.leaf_variance(), grid, "variance", owned=True),
        epsilon=loss.pure_epsilon, method="hierarchical", params=params, domain=grid,
        post_processing=post, variance_exact=not nonnegative, detail=rel, loss=loss,
        # The intervals of the inferred estimates use the widest tail among the levels' noises;
        # with one noised level every estimate is its count plus one draw (exact quantiles).
        noise=max((n for n in plan.level_noise if n is not None), key=lambda n: n.tail_factor(0.95)),
        single_draw=not nonnegative and [k for k, n in enumerate(plan.level_noise) if n is not None] == [0])


HIERARCHICAL = HistogramMethod("hierarchical", TREE_PARAMS, _plan, _release, measures=BOTH_MEASURES,
                               summary="noisy counts on a tree over the bins, exact GLS inference",
                               unit_aware=True)
