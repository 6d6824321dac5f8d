"""Choosing the branching factor ``b`` of a hierarchical histogram.

For a given height ``h`` the average variance grows with ``b`` (more nodes
per level, same per-level budget), so the best ``b`` of each height is the
smallest one reaching the domain, ``b_h = ceil(n^(1/h))`` (Qardaji's Tables
1-2: 16, 23, 32, 46 for ``N = 2^8 .. 2^11``).  :func:`choose_branching`
evaluates these candidates (and the next two integers, which matter for
non-complete trees) with the predicted average range variance of
:func:`~pandas_dp.algorithms.tree.budget.predicted_average_variance` (exact
``V_Avg`` for 1-D domains up to ``EXACT_LIMIT`` leaves) under the requested
budget split, and keeps the minimum.  ``b = n`` (height 1) is the flat
histogram.  No budget is spent: only public sizes and epsilon are used.

The choice is computed once per set of public inputs (memoised: a release
that plans twice, or a loop of releases over one domain, pays once) and ranks
1-D consistent trees with the closed form of the exact ``V_Avg``
(:mod:`~pandas_dp.algorithms.tree.branching_closed`), O(h^2) per candidate
instead of O(nodes); the deciding candidates are re-evaluated with the array
formula, so the choice is unchanged.

References
----------
.. [1] W. Qardaji, W. Yang, N. Li. "Understanding Hierarchical Methods for
   Differentially Private Histograms", PVLDB 6(14), 2013, Eq. (3),
   Algorithms 1-2, Tables 1-2, Section 5.3.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import numpy as np

from pandas_dp._utils.rational import to_fraction
from pandas_dp.algorithms.tree.branching_closed import closed_form_average_variance
from pandas_dp.algorithms.tree.budget import (EXACT_LIMIT, BudgetSplit, level_shares,
                                              predicted_average_variance)
from pandas_dp.privacy.loss import PrivacyLoss, PureDP
from pandas_dp.algorithms.tree.layout import shape_dims, tree_height, tree_layout

__all__ = ["BranchingChoice", "integer_root_ceil", "candidate_branchings",
           "choose_branching", "eq3_average_variance", "eq3_optimal_branching"]


@dataclass(frozen=True)
class BranchingChoice:
    """The chosen fan-out and the predictions behind it.

    Attributes
    ----------
    branching : int
        Chosen ``b`` (``b >= n`` means the flat histogram).
    height : int
        ``ceil(log_b n)``.
    predicted_variance : float
        Predicted average range-query error variance at the given epsilon
        (continuous Laplace variances ``2 / epsilon_k^2``).
    flat_variance : float
        The same prediction for the flat histogram.
    candidates : dict
        ``{b: predicted variance}`` for every candidate evaluated (with the
        ``"optimal"`` split: the three best under the uniform split).
    """

    branching: int
    height: int
    predicted_variance: float
    flat_variance: float
    candidates: dict[int, float] = field(default_factory=dict)

    @property
    def is_flat(self) -> bool:
        """True when the choice is a single noised level (the identity histogram)."""
        return self.height <= 1


def integer_root_ceil(n: int, h: int) -> int:
    """Smallest integer ``b >= 2`` with ``b**h >= n`` (exact integer arithmetic)."""
    b = max(2, int(round(n ** (1.0 / h))))
    while b ** h < n:
        b += 1
    while b > 2 and (b - 1) ** h >= n:
        b -= 1
    return b


def candidate_branchings(n: int) -> list[int]:
    """Candidate fan-outs per axis: ``b_h, b_h + 1, b_h + 2`` for every height ``h``."""
    if n <= 2:
        return [2]
    out: set[int] = set()
    for h in range(1, tree_height(n, 2) + 1):
        b = integer_root_ceil(n, h)
        out.update(c for c in (b, b + 1, b + 2) if c <= n)
    return sorted(out)


def choose_branching(shape: int | tuple[int, ...], *, epsilon: float = 1.0,
                     budget_split: BudgetSplit = "uniform", include_root: bool = False,
                     consistent: bool = True, loss: PrivacyLoss | None = None) -> BranchingChoice:
    """Pick ``b`` minimising the predicted average range-query variance.

    Parameters
    ----------
    shape : int or tuple of int
        Leaf count (1-D) or grid shape; public.
    epsilon : float
        Total budget of a pure-DP release (scales all predictions by ``1/epsilon^2``).
    loss : PrivacyLoss, optional
        The release's loss, instead of ``epsilon``: its noise model sets the
        predicted variances (``planning_variance``) and the splits
        (``variance_exponent``). Gaussian noise (zCDP) composes in the square
        root, which favours smaller fan-outs (more levels).
    budget_split : {"uniform", "geometric", "optimal"}
        Split used for each candidate.
    include_root, consistent : bool
        As for the release.

    Returns
    -------
    BranchingChoice
        The minimiser over :func:`candidate_branchings` of the longest axis.
        For ``d >= 3`` the flat histogram usually wins (Qardaji Section 5.3).
    """
    dims = shape_dims(shape)
    model = loss if loss is not None else PureDP(to_fraction(epsilon))
    choice = _choose(dims, model, budget_split, bool(include_root), bool(consistent))
    return replace(choice, candidates=dict(choice.candidates))


#: Relative gap within which candidates ranked by the closed form are re-evaluated with the array formula.
NEAR_TIE = 1e-9


@lru_cache(maxsize=512)
def _choose(dims: tuple[int, ...], model: PrivacyLoss, budget_split: BudgetSplit, include_root: bool,
            consistent: bool, closed_form: bool = True) -> BranchingChoice:
    """The choice for public inputs only, memoised: a call that plans twice (``range_query``'s
    ``method="auto"``, then the tree) or a loop of releases over one domain evaluates the candidates once.

    The key is everything the predictions read: the shape, the loss (its class fixes the noise model,
    ``variance_exponent`` and ``planning_variance``; its exact amount scales them), the split and the flags.

    1-D consistent trees up to ``EXACT_LIMIT`` leaves are ranked by the closed form of the exact
    ``V_Avg`` (:func:`~pandas_dp.algorithms.tree.branching_closed.closed_form_average_variance`, O(h^2) per
    candidate); the candidates that decide the choice (those within ``NEAR_TIE`` of the best, of the
    third best for the ``"optimal"`` split, and the flat histogram) are evaluated again with the array
    formula, so the choice and the reported predictions are those of the array formula, bit for bit.
    Other candidates keep their closed-form value in ``candidates`` (equal up to rounding, ~1e-12).
    """
    n_axis = max(dims)
    closed = closed_form and len(dims) == 1 and consistent and n_axis <= EXACT_LIMIT

    def levels(b: int, split: BudgetSplit) -> tuple[Any, np.ndarray]:
        layout = tree_layout(dims, b)
        shares = level_shares(layout, budget_split=split, include_root=include_root,
                              consistent=consistent, variance_exponent=model.variance_exponent)
        on = shares > 0
        sigma2 = np.full(layout.n_levels, np.inf)
        sigma2[on] = [model.planning_variance(s) for s in shares[on]]
        return layout, sigma2

    def predict(b: int, split: BudgetSplit) -> float:
        layout, sigma2 = levels(b, split)
        return predicted_average_variance(layout, sigma2, consistent=consistent)

    def quick(b: int, split: BudgetSplit) -> float:
        if not closed:
            return predict(b, split)
        return closed_form_average_variance(n_axis, b, levels(b, split)[1])

    def settle(values: dict[int, float], split: BudgetSplit, around: float) -> None:
        """Replace closed-form values near ``around`` by the array formula's (in place)."""
        if closed:
            for b, value in values.items():
                if abs(value - around) <= NEAR_TIE * abs(around):
                    values[b] = predict(b, split)

    if budget_split == "optimal":
        # The optimal split is iterative: rank by the uniform split, refine the best three.
        first = {b: quick(b, "uniform") for b in candidate_branchings(n_axis)}
        settle(first, "uniform", sorted(first.values())[min(2, len(first) - 1)])
        preds = {b: predict(b, "optimal") for b in sorted(first, key=lambda c: first[c])[:3]}
    else:
        preds = {b: quick(b, budget_split) for b in candidate_branchings(n_axis)}
        settle(preds, budget_split, min(preds.values()))
    flat_b = max(n_axis, 2)
    if closed and budget_split != "optimal" and flat_b in preds:
        preds[flat_b] = predict(flat_b, budget_split)
    best = min(preds, key=lambda b: (preds[b], -b))
    flat = preds.get(flat_b)
    if flat is None:
        flat = predicted_average_variance(tree_layout(dims, flat_b),
                                          np.array([model.planning_variance(1.0), np.inf]),
                                          consistent=consistent)
    height = max(tree_height(n, best) for n in dims)
    return BranchingChoice(branching=best, height=height, predicted_variance=preds[best],
                           flat_variance=flat, candidates=preds)


def eq3_average_variance(n: int, branching: int, *, epsilon: float = 1.0) -> float:
    """Qardaji's Eq. (3): ``((b - 1) h^3 - 2 (b + 1) h^2 / 3) V_u`` with ``V_u = 2 / epsilon^2``."""
    h = tree_height(n, branching)
    return ((branching - 1) * h ** 3 - 2.0 * (branching + 1) * h ** 2 / 3.0) * 2.0 / epsilon ** 2


def eq3_optimal_branching(n: int, *, max_branching: int = 1024) -> int:
    """The ``b`` in ``2..max_branching`` minimising Eq. (3) for ``H_b`` (Table 1's ``b`` column)."""
    bs = range(2, min(n, max_branching) + 1)
    return min(bs, key=lambda b: eq3_average_variance(n, b))
