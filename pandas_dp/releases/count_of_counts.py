"""``count_of_counts``: hierarchical count-of-counts histograms (Kuo et al., PVLDB 2018).

Order (privacy rules 4 and 8): check arguments and validate the public
tables (the region tree) -> check that a budget is active and can pay ->
count the persons on the tree (engine; rows out of domain are dropped,
silently) -> charge the whole epsilon once -> estimate ``K`` and the group
totals if they are not public -> per-level private histograms -> top-down
consistency (post-processing) -> wrap.

Budget split, recorded in the ledger entry's parameters:

* ``max_size`` not given (``hc``/``naive``): 1/20 of epsilon for a noisy maximum.
* ``groups`` not given: 1/10 of epsilon for the numbers of groups per region.
* the rest, split equally over the ``L`` levels (root included).
"""

from __future__ import annotations

import sys
from fractions import Fraction
from typing import Any, Callable, Literal

import numbers

import pandas as pd

from ..algorithms.count_of_counts import consistent_group_totals, estimate_level, estimate_max_size
from ..algorithms.count_of_counts_matching import top_down
from ..engines import engine_for
from ..errors import ParameterError
from ..regions import region_tree
from ..results.count_of_counts import CountOfCounts
from ._common import active_budget, charging, check_budget_room, check_choice, check_epsilon, check_rng

__all__ = ["count_of_counts", "MAX_SIZE_SHARE", "GROUP_TOTALS_SHARE", "budget_split", "progress_callback"]

MAX_SIZE_SHARE = Fraction(1, 20)
GROUP_TOTALS_SHARE = Fraction(1, 10)
METHODS = ("hc", "hg", "naive")
MERGES = ("weighted", "average")


def budget_split(epsilon: Fraction, n_levels: int, *, estimate_max: bool, estimate_totals: bool
                 ) -> dict[str, Fraction]:
    """Exact shares of ``epsilon``: ``max_size``, ``group_totals`` and ``per_level`` (x ``n_levels``).

    The shares add up to ``epsilon`` exactly (rational arithmetic).
    """
    eps_k = epsilon * MAX_SIZE_SHARE if estimate_max else Fraction(0)
    eps_g = epsilon * GROUP_TOTALS_SHARE if estimate_totals else Fraction(0)
    return {"max_size": eps_k, "group_totals": eps_g, "per_level": (epsilon - eps_k - eps_g) / n_levels}


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


#: Largest group size ``K`` the hc and naive estimators work up to: they draw one noise value per
#: size and region, so K sets the work. A larger caller-given K is refused before the charge; a
#: larger privately estimated K is clamped to it (a public cap: bigger groups count as K).
MAX_SIZE_LIMIT = 2**20


def _check_max_size(max_size: Any) -> int | None:
    if max_size is None:
        return None
    if isinstance(max_size, bool) or not isinstance(max_size, numbers.Integral) or int(max_size) < 1:
        raise ParameterError(f"The 'max_size' parameter must be a positive integer (a public upper bound on "
                             f"the group size) or None to estimate it privately. Got {max_size!r}.")
    if int(max_size) > MAX_SIZE_LIMIT:
        raise ParameterError(f"The 'max_size' parameter is at most {MAX_SIZE_LIMIT:,} (the estimators draw "
                             f"noise for every size up to it). Got {int(max_size):,}. Pass a tighter public "
                             f"bound; larger groups are counted at max_size.")
    return int(max_size)


def count_of_counts(frame: pd.DataFrame, group: str, location: Any, *, epsilon: Any,
                    groups: pd.DataFrame | None = None, hierarchy: pd.DataFrame | None = None,
                    max_size: int | None = None, method: Literal["hc", "hg", "naive"] = "hc",
                    merge: Literal["weighted", "average"] = "weighted", rng: Any = None,
                    progress: bool | None = None) -> CountOfCounts:
    """Release consistent count-of-counts histograms of every region (see ``DataFrame.dp.count_of_counts``)."""
    eps = check_epsilon(epsilon)
    generator = check_rng(rng)
    method = check_choice(method, "method", METHODS)  # type: ignore[assignment]
    merge = check_choice(merge, "merge", MERGES)  # type: ignore[assignment]
    k_public = _check_max_size(max_size)
    if progress is not None and not isinstance(progress, bool):
        raise ParameterError(f"The 'progress' parameter must be True, False or None. Got {progress!r}.")
    # Public inputs first (column names and public tables only), then the budget, then private rows.
    tree = region_tree(frame.columns, group, location, groups=groups, hierarchy=hierarchy)
    if tree.group is None:
        raise ParameterError(f"The 'group' parameter must name a column of the frame. Got None; "
                             f"columns are {list(frame.columns)[:20]}.")
    budget = active_budget()
    check_budget_room(budget, eps)
    # Counting in the frame's engine (pandas, or its Dask twin): out-of-domain rows are dropped silently.
    tables = engine_for(frame).count_groups(frame, tree)
    n_levels = len(tables.level_names)
    estimate_max = k_public is None and method != "hg"
    split = budget_split(eps, n_levels, estimate_max=estimate_max, estimate_totals=not tables.groups_public)
    params = {
        "method": method, "merge": merge, "levels": list(tables.level_names),
        "regions_per_level": [len(r) for r in tables.regions],
        "max_size": k_public if k_public is not None else ("estimated" if estimate_max else "not used"),
        "groups_public": tables.groups_public,
        "epsilon_per_level": str(split["per_level"]),
        "epsilon_max_size": str(split["max_size"]),
        "epsilon_group_totals": str(split["group_totals"]),
    }
    with charging(eps, method=f"count_of_counts:{method}", columns=[group, *tables.level_names[1:]],
                  params=params, budget=budget):
        tick, bar = progress_callback(progress, 2 * n_levels, "count-of-counts")
        try:
            k = k_public
            if estimate_max:
                k = min(estimate_max_size(tables.max_size, epsilon=split["max_size"], rng=generator),
                        MAX_SIZE_LIMIT)
            n_nodes = [len(r) for r in tables.regions]
            if tables.groups_public:
                totals = tables.totals
            else:
                totals = consistent_group_totals(tables.exact[-1].totals(), tables.parents, n_nodes,
                                                 epsilon=split["group_totals"], rng=generator)
            min_size = 0 if tables.groups_public else 1
            estimates = []
            for exact, g in zip(tables.exact, totals):
                estimates.append(estimate_level(exact, g, method=method, epsilon=split["per_level"],
                                                max_size=k, min_size=min_size, rng=generator))
                if tick:
                    tick()
            out = top_down(estimates, tables.parents, merge=merge, progress=tick)
        finally:
            if bar is not None:
                bar.close()
    from ..engines.pandas_groups import runs_to_frame

    result_params = dict(params, max_size=k if k is not None else "not used")
    post = ("isotonic regression" if method != "naive" else "projection on {x >= 0, sum x = G}",
            "rounding", "top-down matching and merging (Kuo et al. Algorithm 1-2)")
    return CountOfCounts(
        frame=runs_to_frame(out, tables.level_names, tables.regions),
        levels=tables.level_names,
        regions=tables.regions,
        epsilon=float(eps),
        method=method,
        params=result_params,
        post_processing=post,
        parents=tuple(tables.parents),
    )
