"""Hierarchical histograms (``method="hierarchical"``) and ``range_query``.

``hierarchical_histogram`` is ``histogram(method="hierarchical")`` with the
tree's knobs as named arguments: validation of the domain and knobs (free),
one charge of the caller's ``epsilon`` (split across the tree levels inside
the release), then :func:`~pandas_dp.algorithms.tree.release_tree` and the
:class:`~pandas_dp.results.hierarchical.HierarchicalHistogram` wrapper.
``range_query`` releases the histogram best suited to a range workload and
answers the ranges from it.
"""

from __future__ import annotations

import numbers
from fractions import Fraction
from typing import Any, Literal, Mapping

import numpy as np
import pandas as pd

from ..algorithms.branching import choose_branching
from ..algorithms.tree import release_tree
from ..algorithms.tree_budget import level_shares, split_epsilon
from ..algorithms.tree_layout import tree_layout
from ..domain import Grid, make_grid
from ..errors import ParameterError
from ..results.hierarchical import HierarchicalHistogram
from ..results.histogram import as_series
from ._common import check_choice, check_columns, check_epsilon, check_flag, check_noise_scale
from .flat import METHODS, HistogramMethod, histogram, register_method

__all__ = ["hierarchical_release", "hierarchical_histogram", "range_query", "check_level_scales",
           "BUDGET_SPLITS"]

BUDGET_SPLITS = ("uniform", "geometric", "optimal")
_KNOBS = ("branching", "budget_split", "include_root", "consistent")


def _check_branching(value: Any) -> int | str:
    if value == "auto" and isinstance(value, str):
        return "auto"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 2:
        raise ParameterError(f"The 'branching' parameter must be 'auto' or an integer >= 2 (the fan-out "
                             f"per dimension). Got {value!r}. Qardaji et al. recommend 8 to 16; "
                             f"'auto' picks it from the domain size and epsilon.")
    return int(value)


def _validate(grid: Grid, kwargs: Mapping[str, Any], epsilon: Fraction) -> dict:
    extra = sorted(set(kwargs) - set(_KNOBS))
    if extra:
        raise ParameterError(f"method='hierarchical' does not take {extra}. Its parameters are "
                             f"{list(_KNOBS)}; remove or rename the others.")
    knobs = {"branching": _check_branching(kwargs.get("branching", "auto")),
             "budget_split": check_choice(kwargs.get("budget_split", "uniform"), "budget_split",
                                          BUDGET_SPLITS),
             "include_root": check_flag(kwargs.get("include_root", False), "include_root"),
             "consistent": check_flag(kwargs.get("consistent", True), "consistent")}
    check_level_scales(grid, epsilon, knobs)
    return knobs


def hierarchical_release(counts: np.ndarray, grid: Grid, *, epsilon: Fraction,
                         rng: np.random.Generator | None, nonnegative: bool,
                         branching: int | str = "auto", budget_split: str = "uniform",
                         include_root: bool = False, consistent: bool = True) -> HierarchicalHistogram:
    """Release the tree of noisy counts and wrap it (called after the charge).

    Notes
    -----
    Each noised level is a partition of the domain (sensitivity 1) and gets
    ``epsilon_k`` with ``sum_k epsilon_k <= epsilon`` (sequential composition);
    its nodes get discrete Laplace noise of scale ``1 / epsilon_k``.  The
    per-bin variances and range ``std_error`` are those of the noise actually
    drawn, through the exact GLS linear form (Qardaji et al. 2013; Hay et al. 2010).
    """
    rel = release_tree(counts.reshape(grid.shape), epsilon=epsilon, branching=branching,
                       budget_split=budget_split, include_root=include_root,
                       consistent=consistent, nonnegative=nonnegative, rng=rng)
    post: tuple[str, ...] = ()
    if consistent:
        post += ("constrained inference (exact GLS)",)
    if nonnegative:
        post += ("non-negative consistent projection" if consistent else "clip at 0",)
    params: dict[str, Any] = {
        "branching": rel.branching, "height": rel.height, "budget_split": budget_split,
        "include_root": include_root, "consistent": consistent, "nonnegative": nonnegative,
        "level_epsilons": [str(e) for e in rel.level_epsilons],
        "level_noise_scales": [None if t is None else str(t) for t in rel.level_scales],
        "noise": "discrete Laplace", "sensitivity_per_level": 1,
        "branching_chosen_by": "auto" if rel.choice is not None else "caller",
        "variance": ("exact (linear form of the estimator)" if not nonnegative else
                     "approximate: GLS variance before the non-negative projection"),
    }
    if rel.choice is not None:
        params["predicted_average_range_variance"] = rel.choice.predicted_variance
        params["flat_average_range_variance"] = rel.choice.flat_variance
    return HierarchicalHistogram(
        counts=as_series(rel.leaf_estimates(), grid, "estimate"),
        variance=as_series(rel.leaf_variance(), grid, "variance"),
        epsilon=float(epsilon), method="hierarchical", params=params, domain=grid,
        post_processing=post, variance_exact=not nonnegative, detail=rel)


register_method(HistogramMethod("hierarchical", _validate, hierarchical_release))


def check_level_scales(grid: Grid, epsilon: Fraction, knobs: Mapping[str, Any]) -> None:
    """Raise ParameterError (before any charge) if a level's budget is too small to noise.

    The split depends only on public sizes and the knobs, so it is computed
    here exactly as the release will compute it.
    """
    b = knobs["branching"]
    if b == "auto":
        b = choose_branching(grid.shape, epsilon=float(epsilon), budget_split=knobs["budget_split"],
                             include_root=knobs["include_root"],
                             consistent=knobs["consistent"]).branching
    layout = tree_layout(grid.shape if len(grid.shape) > 1 else grid.shape[0], b)
    shares = level_shares(layout, budget_split=knobs["budget_split"],
                          include_root=knobs["include_root"], consistent=knobs["consistent"])
    smallest = min(e for e in split_epsilon(epsilon, shares) if e > 0)
    check_noise_scale(smallest, what=f"one level of this {int((shares > 0).sum())}-level tree "
                                     f"(a larger branching gives fewer levels)")


def hierarchical_histogram(frame: pd.DataFrame, columns: Any, *, bins: Any = None, range: Any = None,
                           categories: Any = None, epsilon: Any, branching: int | str = "auto",
                           budget_split: Literal["uniform", "geometric", "optimal"] = "uniform",
                           include_root: bool = False, consistent: bool = True,
                           nonnegative: bool = False, rng: Any = None) -> HierarchicalHistogram:
    """Release a hierarchical histogram (see ``DataFrame.dp.hierarchical_histogram``)."""
    return histogram(frame, columns, bins=bins, range=range, categories=categories, epsilon=epsilon,
                     method="hierarchical", rng=rng, nonnegative=nonnegative, branching=branching,
                     budget_split=budget_split, include_root=include_root, consistent=consistent)


def _range_pairs(ranges: Any) -> tuple[np.ndarray, np.ndarray]:
    try:
        pairs = np.asarray(ranges, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ParameterError(f"The 'ranges' parameter must be a (low, high) pair or a list of pairs of "
                             f"numbers. Got {ranges!r}.") from err
    if pairs.ndim == 1 and pairs.size == 2:
        pairs = pairs[None, :]
    if pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.shape[0] == 0:
        raise ParameterError(f"The 'ranges' parameter must be a (low, high) pair or a non-empty list of "
                             f"pairs, e.g. [(18, 25), (26, 64)]. Got {ranges!r}.")
    return pairs[:, 0], pairs[:, 1]


def range_query(frame: pd.DataFrame, column: Any, ranges: Any, *, bins: Any = None, range: Any = None,
                categories: Any = None, epsilon: Any, method: str = "auto", rng: Any = None,
                nonnegative: bool = False, **method_params: Any) -> pd.DataFrame:
    """Release the histogram best suited to ranges and answer ``ranges`` from it.

    See ``DataFrame.dp.range_query``.  Everything (column, domain, ranges on
    bin edges, method knobs) is validated before the single charge.
    """
    if isinstance(column, (list, tuple)):
        raise ParameterError(f"range_query answers 1-D ranges of one column; got columns {list(column)}. "
                             f"Pass a single column name.")
    cols = check_columns(frame, column, name="column")
    eps = check_epsilon(epsilon)
    if not isinstance(method, str) or (method != "auto" and method not in METHODS):
        raise ParameterError(f"The 'method' parameter of range_query must be 'auto' or one of "
                             f"{sorted(METHODS)}. Got {method!r}.")
    grid = make_grid(frame, cols, bins=bins, range=range, categories=categories)
    lows, highs = _range_pairs(ranges)
    grid.dims[0].align(lows, highs)   # DomainError before any charge
    params = dict(method_params)
    name = method
    if method == "auto":
        # The tree's knobs (other than branching) are checked, then the same choice as
        # ``choose_branching`` decides between the tree and the flat histogram.
        knobs = _validate(grid, {k: v for k, v in params.items() if k != "branching"}, eps)
        choice = choose_branching(grid.shape, epsilon=float(eps), budget_split=knobs["budget_split"],
                                  include_root=knobs["include_root"], consistent=knobs["consistent"])
        if choice.is_flat:
            name, params = "identity", {}
        else:
            name = "hierarchical"
            params.setdefault("branching", "auto")
    result = histogram(frame, cols, bins=bins, range=range, categories=categories, epsilon=eps,
                       method=name, rng=rng, nonnegative=nonnegative, **params)
    answers = result.range_query(list(zip(lows, highs)))
    answers.attrs["release"] = result
    return answers

