"""``count_of_counts``: hierarchical count-of-counts histograms (Kuo et al., PVLDB 2018).

Order (privacy rules 4 and 8): check arguments and validate the public
tables (the region tree) -> check that a budget is active and can pay ->
count the persons on the tree (engine; rows out of domain are dropped,
silently) -> charge the whole epsilon once -> estimate ``K`` and the group
totals if they are not public -> per-level private histograms -> top-down
consistency (post-processing) -> wrap.

Budget split, recorded in the ledger entry's parameters:

* ``max_size`` not given (``hc``/``naive``): 1/20 of epsilon for a noisy maximum.
* ``groups`` not given: 1/10 of epsilon for the numbers of groups per region (clamped to
  :data:`MAX_GROUPS`, a public cap).
* the rest, split over the ``L`` levels (root included): equally, or by
  ``level_weights=`` (one weight per level, national first). Levels of weight
  0 at the fine end are neither measured nor released: ``level_weights=[1, 0, 0]``
  releases the national table alone with all of the rest of the loss (Kuo et
  al.'s estimators on one level), as tables by geography skip levels of weight 0.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Literal, get_args

import numpy as np
import pandas as pd

from pandas_dp.algorithms.count_of_counts import (SENSITIVITY, Runs, runs_to_frame, consistent_group_totals, estimate_level,
                                          estimate_max_size)
from pandas_dp.algorithms.count_of_counts_matching import top_down
from pandas_dp._utils.checks import integer_in
from pandas_dp._utils.rational import safe_repr
from pandas_dp.domain.grid import MAX_CELLS
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import Noise, PrivacyLoss, Sensitivity
from pandas_dp.domain.geography import region_tree
from pandas_dp.results.count_of_counts import CountOfCounts
from pandas_dp.releases.params import Options, Param, ParamTable, check_rng
from pandas_dp.releases.geography_arguments import level_shares
from pandas_dp.releases.pipeline import Release, check_measure, privacy_loss, run

__all__ = ["count_of_counts", "MAX_GROUPS", "MAX_SIZE_SHARE", "GROUP_TOTALS_SHARE", "CountOfCountsPlan",
           "plan_count_of_counts", "estimate_count_of_counts", "progress_callback", "COUNT_OF_COUNTS_PARAMS"]

MAX_SIZE_SHARE = Fraction(1, 20)
GROUP_TOTALS_SHARE = Fraction(1, 10)
#: The estimators and merge rules (the types of ``method=`` and ``merge=``; their options are read from them).
Estimator = Literal["hc", "hg", "naive"]
Merge = Literal["weighted", "average"]
METHODS: tuple[str, ...] = get_args(Estimator)
MERGES: tuple[str, ...] = get_args(Merge)

#: Largest group size ``K`` the hc and naive estimators work up to: they draw one noise value per
#: size and region, so K sets the work. A larger caller-given K is refused before the charge; a
#: larger privately estimated K is clamped to it (a public cap: bigger groups count as K).
MAX_SIZE_LIMIT = 2**20
#: Largest number of groups of a region when the Groups table is private: the noisy numbers of groups
#: per region are clamped to it (a public cap, post-processing). A tiny loss draws totals of ~1e12, for
#: which the estimators would allocate one position per group; this keeps every level's work below
#: ``MAX_GROUPS`` groups whatever the loss, as :data:`pandas_dp.releases.unattributed.MAX_GROUPS` does.
MAX_GROUPS = MAX_CELLS


def _check_max_size(max_size: Any, name: str = "max_size") -> int | None:
    if max_size is None:
        return None
    if integer_in(max_size, 1) is None:
        raise ParameterError(f"The 'max_size' parameter must be a positive integer (a public upper bound on "
                             f"the group size) or None to estimate it privately. Got {safe_repr(max_size)}.")
    if int(max_size) > MAX_SIZE_LIMIT:
        raise ParameterError(f"The 'max_size' parameter is at most {MAX_SIZE_LIMIT:,} (the estimators draw "
                             f"noise for every size up to it). Got {int(max_size):,}. Pass a tighter public "
                             f"bound; larger groups are counted at max_size.")
    return int(max_size)


class _MaxSize:
    """Constraint of ``max_size``: None or a positive integer up to :data:`MAX_SIZE_LIMIT`."""

    def check(self, value: Any, name: str) -> int | None:
        return _check_max_size(value, name)

    def describe(self) -> str:
        return f"None | int in [1, {MAX_SIZE_LIMIT}]"


class _Progress:
    def check(self, value: Any, name: str) -> bool | None:
        if value is not None and not isinstance(value, bool):
            raise ParameterError(f"The 'progress' parameter must be True, False or None. Got {safe_repr(value)}.")
        return value

    def describe(self) -> str:
        return "None | bool"


#: The knobs of count_of_counts (the tables, columns and loss are its other arguments).
COUNT_OF_COUNTS_PARAMS = ParamTable("count_of_counts", (
    Param("max_size", _MaxSize(), None, "public upper bound K on the group size (None: estimated)",  # type: ignore[arg-type]
          type="int, optional", doc="""
              Public upper bound ``K`` on the group size (larger groups count as
              ``K``); estimated with 1/20 of ``epsilon`` when omitted (``hc``/``naive``)."""),
    Param("method", Options(METHODS), "hc", "per-region estimator",
          type="{" + ", ".join(f'"{m}"' for m in METHODS) + "}", doc="""
              Per-region estimator: cumulative histogram (default), sorted sizes,
              or noisy histogram."""),
    Param("merge", Options(MERGES), "weighted", "how a region's and its parent's size estimates merge",
          type="{" + ", ".join(f'"{m}"' for m in MERGES) + "}",
          doc="How a region's and its parent's size estimates are merged."),
    Param("progress", _Progress(), None, "progress bar (default: only on a terminal)",  # type: ignore[arg-type]
          type="bool, optional", doc="Progress bar (tqdm) — by default only on a terminal."),
))


@dataclass(frozen=True)
class CountOfCountsPlan:
    """The public part of a count-of-counts release: the loss split and the noise of every step.

    Attributes
    ----------
    method, merge : str
        Estimator and merge rule.
    max_size : int or None
        The public ``K``, or None when it is estimated (``max_size_noise``) or unused (``hg``).
    groups_public : bool
        Whether the Groups table was given (its per-region totals are then public).
    n_levels : int
        Levels measured and released, the root included (the first ``n_levels`` of the region tree).
    losses : dict
        Exact parts of the loss: ``max_size``, ``group_totals``, ``per_level`` (the first level's;
        every level's under uniform weights).
    max_size_noise, totals_noise : Noise or None
        Noise of the noisy maximum (sensitivity 1) and of the group totals of every level
        (sensitivity ``n_levels``), when those are estimated.
    level_noises : tuple of Noise
        Noise of each measured level's estimator (sensitivity :data:`SENSITIVITY[method]`).
    level_losses : tuple of PrivacyLoss
        Each measured level's part of the loss.
    """

    method: str
    merge: str
    max_size: int | None
    groups_public: bool
    n_levels: int
    losses: dict[str, PrivacyLoss]
    max_size_noise: Noise | None
    totals_noise: Noise | None
    level_noises: tuple[Noise, ...]
    level_losses: tuple[PrivacyLoss, ...]
    group_unit: bool = False

    @property
    def estimate_max(self) -> bool:
        return self.max_size_noise is not None

    @property
    def level_noise(self) -> Noise:
        """The national level's noise (every level's under uniform weights)."""
        return self.level_noises[0]

    @property
    def uniform(self) -> bool:
        """Whether every measured level has the same loss."""
        return len(set(self.level_losses)) == 1


def group_unit_sensitivity(method: str, max_size: int, min_size: int) -> Sensitivity:
    """How far one whole group (its every person changed) moves one level's estimator input.

    With groups truncated to ``K = max_size`` persons, a group's size moves within ``[m, K]``
    (``m = min_size``): ``naive`` moves two size classes by one (L1 2, L2 sqrt 2); ``hc`` moves
    ``T[i]`` by one for the ``|s - s'| <= K - m`` sizes between old and new (L1 ``K - m``, L2
    ``sqrt(K - m)``); ``hg`` moves one entry of the sorted sizes by up to ``K - m`` (L1 and L2
    ``K - m``). A group that appears or disappears (no public Groups table) moves each by at most
    as much.
    """
    span = max(int(max_size) - int(min_size), 1)
    if method == "naive":
        return Sensitivity.cells(cells=2)
    if method == "hc":
        return Sensitivity.cells(cells=span)
    return Sensitivity(Fraction(span), Fraction(span * span))


def plan_count_of_counts(loss: PrivacyLoss, *, n_levels: int, method: str, max_size: int | None,
                         groups_public: bool, group_unit: bool = False,
                         shares: tuple[Fraction, ...] | None = None) -> CountOfCountsPlan:
    """Split the loss and calibrate every step's noise (public inputs only; before any charge).

    ``max_size`` not given (``hc``/``naive``): 1/20 of the loss for a noisy maximum; ``groups`` not
    given: 1/10 for the numbers of groups per region; the rest split equally over the ``L``
    levels (root included), or by ``shares``
    (:func:`~pandas_dp.releases.geography_arguments.level_shares` with ``unmeasured="dropped"``: the
    levels of share 0 at the fine end are not measured). The parts add up to the loss exactly. ``group_unit``: the privacy unit
    is the whole group (its persons), with the public ``max_size`` as truncation
    (:func:`group_unit_sensitivity`).
    """
    if group_unit and max_size is None:
        raise ParameterError("privacy_unit='group' needs a public max_size=K: groups larger than K keep K persons "
                             "(the bound on what one group can change). Pass e.g. max_size=16.")
    estimate_max = max_size is None and method != "hg"
    zero = loss.zero()
    loss_k = loss.part(MAX_SIZE_SHARE) if estimate_max else zero
    loss_g = loss.part(GROUP_TOTALS_SHARE) if not groups_public else zero
    shares = tuple([Fraction(1, n_levels)] * n_levels) if shares is None else shares
    measured = [share for share in shares if share > 0]
    n_levels = len(measured)
    rest = loss - loss_k - loss_g
    level_losses = tuple(rest.part(share) for share in measured)
    sensitivity = (group_unit_sensitivity(method, max_size, 0 if groups_public else 1) if group_unit  # type: ignore[arg-type]
                   else SENSITIVITY[method])
    return CountOfCountsPlan(
        method=method, merge="weighted", max_size=max_size, groups_public=groups_public, n_levels=n_levels,
        losses={"max_size": loss_k, "group_totals": loss_g, "per_level": level_losses[0]},
        max_size_noise=loss_k.noise(what="the noisy maximum group size") if estimate_max else None,
        totals_noise=(loss_g.noise(Sensitivity.cells(cells=n_levels), what="the numbers of groups per region")
                      if not groups_public else None),
        level_noises=tuple(part.noise(sensitivity, what=f"level {k} of the {n_levels} levels")
                           for k, part in enumerate(level_losses)),
        level_losses=level_losses,
        group_unit=group_unit)


def estimate_count_of_counts(tables: Any, plan: CountOfCountsPlan, *, merge: str = "weighted", rng: Any = None,
                             tick: Callable[[], None] | None = None) -> tuple[list[Runs], int | None]:
    """The mechanism on exact tables: K and group totals if private, every level's estimate, top-down.

    Returns the consistent per-level runs and the ``K`` used.
    """
    k = plan.max_size
    if plan.max_size_noise is not None:
        k = min(estimate_max_size(tables.max_size, noise=plan.max_size_noise, rng=rng), MAX_SIZE_LIMIT)
    m = plan.n_levels  # the measured levels: the first m of the tree
    n_nodes = [len(r) for r in tables.regions][:m]
    parents = list(tables.parents)[:m]
    if plan.groups_public:
        totals = list(tables.totals)[:m]
    else:
        assert plan.totals_noise is not None  # planned whenever the groups are estimated
        totals = consistent_group_totals(tables.exact[m - 1].totals(), parents, n_nodes,
                                         noise=plan.totals_noise, rng=rng, limit=MAX_GROUPS)
    min_size = 0 if plan.groups_public else 1
    levels = list(tables.exact)[:m]
    if plan.group_unit:  # a group keeps K of its persons: its size is min(size, K) (only sizes are released)
        assert k is not None  # the group as the unit needs a public max_size
        levels = [Runs(r.node, np.minimum(r.size, k), r.groups, r.var, r.n_nodes).normalized() for r in levels]
    estimates = []
    for exact, g, noise in zip(levels, totals, plan.level_noises):
        estimates.append(estimate_level(exact, g, method=plan.method, noise=noise,  # type: ignore[arg-type]
                                        max_size=k, min_size=min_size, rng=rng))
        if tick:
            tick()
    return top_down(estimates, parents, merge=merge, progress=tick), k  # type: ignore[arg-type]


def progress_callback(progress: Any, total: int, desc: str) -> tuple[Callable[[], None] | None, Any]:
    """A tqdm bar's ``update`` when wanted: ``progress=True``, or None in a terminal or notebook.

    tqdm is optional (extra ``progress``); without it there is no bar.
    """
    if progress is False or (progress is None and not _interactive()):
        return None, None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None, None
    bar = tqdm(total=total, desc=desc, leave=False)
    return (lambda: bar.update(1)), bar


def _interactive() -> bool:
    """Attached to a terminal, or running in a Jupyter kernel."""
    stream = sys.stderr
    return bool(stream is not None and hasattr(stream, "isatty") and stream.isatty()) or "ipykernel" in sys.modules


def count_of_counts(frame: pd.DataFrame, group: str, location: Any, *, epsilon: Any = None, rho: Any = None,
                    groups: pd.DataFrame | None = None, hierarchy: pd.DataFrame | None = None,
                    max_size: int | None = None, method: Estimator = "hc", merge: Merge = "weighted",
                    progress: bool | None = None, rng: Any = None, privacy_unit: str | None = None,
                    level_weights: Any = None) -> CountOfCounts:
    """Release consistent count-of-counts histograms of every region (see ``DataFrame.dp.count_of_counts``)."""
    loss = privacy_loss(epsilon, rho)
    generator = check_rng(rng)
    knobs = COUNT_OF_COUNTS_PARAMS.validate({"max_size": max_size, "method": method, "merge": merge,
                                             "progress": progress})
    check_measure(loss, frozenset({"pure", "zcdp"}), "count_of_counts")
    # Public inputs first (column names and public tables only); the pipeline then checks the budget
    # before the engine counts the private rows (out-of-domain rows are dropped, silently).
    tree = region_tree(frame.columns, group, location, groups=groups, hierarchy=hierarchy)
    if tree.group is None:
        raise ParameterError(f"The 'group' parameter must name a column of the frame. Got None; "
                             f"columns are {list(frame.columns)[:20]}.")
    # A str subclass is read as its plain text (its own __eq__ is never called); anything else is refused.
    unit = str.__str__(privacy_unit) if isinstance(privacy_unit, str) else privacy_unit
    if not (unit is None or (isinstance(unit, str) and unit in ("person", "group"))):
        raise ParameterError(f"The 'privacy_unit' parameter of count_of_counts must be 'person' (the default: one "
                             f"row of the frame) or 'group' (one group with all its persons). Got "
                             f"{safe_repr(privacy_unit)}.")
    privacy_unit = unit
    shares = level_shares(level_weights, tuple(tree.level_names), unmeasured="dropped")
    plan = plan_count_of_counts(loss, n_levels=len(tree.level_names), method=knobs["method"],
                                max_size=knobs["max_size"], groups_public=tree.groups_public,
                                group_unit=privacy_unit == "group", shares=shares)
    m = plan.n_levels
    params = {
        "method": plan.method, "merge": knobs["merge"], "levels": list(tree.level_names)[:m],
        "regions_per_level": [len(r) for r in tree.regions][:m],
        "max_size": plan.max_size if plan.max_size is not None else (
            "estimated" if plan.estimate_max else "not used"),
        "groups_public": plan.groups_public,
        "privacy_unit": "group" if plan.group_unit else "person",
        f"{loss.parameter}_per_level": (str(plan.losses["per_level"].amount) if plan.uniform
                                        else [str(part.amount) for part in plan.level_losses]),
        f"{loss.parameter}_max_size": str(plan.losses["max_size"].amount),
        f"{loss.parameter}_group_totals": str(plan.losses["group_totals"].amount),
    }
    # The noise of every level's estimator (sensitivity SENSITIVITY[method]): its exact parameter.
    described = [noise.describe() for noise in plan.level_noises]
    params["noise"] = described[0].pop("noise")
    for d in described[1:]:
        d.pop("noise")
    params.update({f"{key}_per_level": value if plan.uniform else [d[key] for d in described]
                   for key, value in described[0].items()})
    if level_weights is not None:
        params["level_shares"] = [str(share) for share in shares]

    def mechanism(tables: Any) -> CountOfCounts:
        tick, bar = progress_callback(knobs["progress"], 2 * plan.n_levels, "count-of-counts")
        try:
            out, k = estimate_count_of_counts(tables, plan, merge=knobs["merge"], rng=generator, tick=tick)
        finally:
            if bar is not None:
                bar.close()
        result_params = dict(params, max_size=k if k is not None else "not used")
        post = ("isotonic regression" if plan.method != "naive" else "projection on {x >= 0, sum x = G}",
                "rounding", "top-down matching and merging (Kuo et al. Algorithm 1-2)")
        names, regions = tuple(tables.level_names)[:m], tuple(tables.regions)[:m]
        return CountOfCounts(
            frame=runs_to_frame(out, names, regions),
            levels=names,
            regions=regions,
            epsilon=loss.pure_epsilon,
            method=plan.method,
            params=result_params,
            post_processing=post,
            parents=tuple(tables.parents)[:m],
            loss=loss,
        )

    return run(frame, Release(
        loss=loss, method=f"count_of_counts:{plan.method}", columns=[tree.group, *tree.level_names[1:]], params=params,
        count=lambda engine: engine.count_groups(frame, tree, group_unit=plan.group_unit),
        mechanism=mechanism))
