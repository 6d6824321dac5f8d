"""``unattributed_histogram``: the sorted per-group row counts (Hay et al. S-bar).

Order: check arguments and the public ids -> check that a budget is active
and can pay -> count rows per group (public group ids, or all groups
present; rows out of domain are dropped, silently) -> charge -> (private
number of groups) -> noise, isotonic regression, rounding -> wrap.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from .._labels import CLASS_NAMES, public_labels, value_classes
from ..algorithms.unattributed import noisy_group_count, top_n_sorted, unattributed_histogram as sbar
from ..engines import engine_for
from ..errors import ParameterError
from ..results.unattributed import UnattributedHistogram
from ._common import active_budget, charging, check_budget_room, check_columns, check_epsilon, check_rng

__all__ = ["unattributed_histogram", "GROUP_COUNT_SHARE"]

GROUP_COUNT_SHARE = Fraction(1, 10)


def _group_ids(groups: Any, column: Any) -> pd.Index:
    if isinstance(groups, pd.DataFrame):
        # A public groups table: its column named like the group column holds the ids.
        if column not in groups.columns:
            raise ParameterError(f"The 'groups' table has no column {column!r} (the group column). Pass a table "
                                 f"with a {column!r} column of all group ids, or the ids themselves as a Series.")
        groups = groups[column]
    try:
        ids = pd.Index(groups)
    except (TypeError, ValueError) as err:
        raise ParameterError(f"The 'groups' parameter must be a Series, Index or array of group ids. "
                             f"Got {type(groups).__name__}.") from err
    classes = value_classes(ids) if not isinstance(ids, pd.MultiIndex) else np.zeros(len(ids), dtype=np.int8)
    if (classes == 0).any():
        bad = [ids[i] for i in np.flatnonzero(classes == 0)[:5]]
        raise ParameterError(f"The 'groups' parameter must hold scalar group ids (strings, numbers, dates). "
                             f"Got {int((classes == 0).sum())} that are not, e.g. {bad}; pass one id per group.")
    kinds = np.unique(classes[classes > 0])
    if kinds.size > 1:
        names = [CLASS_NAMES[int(k)] for k in kinds]
        raise ParameterError(f"The 'groups' parameter mixes kinds of ids ({', '.join(names)}); pass ids of one "
                             f"kind (e.g. all strings or all numbers).")
    ids = public_labels(ids)
    if ids.hasnans:
        raise ParameterError("The 'groups' parameter holds missing group ids; remove them.")
    if not ids.is_unique:
        dup = ids[ids.duplicated()].unique()[:5].tolist()
        raise ParameterError(f"The 'groups' parameter repeats group ids (e.g. {dup}); pass each group once.")
    return ids


def unattributed_histogram(frame: pd.DataFrame, group: Any, *, epsilon: Any, groups: Any = None,
                           rng: Any = None) -> UnattributedHistogram:
    """Release the sorted row counts per group (see ``DataFrame.dp.unattributed_histogram``)."""
    col = check_columns(frame, group, name="group")
    if len(col) != 1:
        raise ParameterError(f"The 'group' parameter names one column. Got {group!r}.")
    eps = check_epsilon(epsilon)
    generator = check_rng(rng)
    ids = _group_ids(groups, col[0]) if groups is not None else None
    budget = active_budget()
    check_budget_room(budget, eps)
    # Rows of groups outside the public ids, and missing or non-scalar ids, are outside the domain: dropped.
    counts = engine_for(frame).group_counts(frame[col[0]], ids)
    eps_n = Fraction(0) if ids is not None else eps * GROUP_COUNT_SHARE
    eps_s = eps - eps_n
    params = {"groups_public": ids is not None, "epsilon_group_count": str(eps_n),
              "epsilon_counts": str(eps_s), "sensitivity": 1}
    with charging(eps, method="unattributed_histogram", columns=col, params=params, budget=budget):
        n = len(ids) if ids is not None else noisy_group_count(counts.size, epsilon=eps_n, rng=generator)
        est = sbar(top_n_sorted(counts, n), epsilon=eps_s, rng=generator)
    index = pd.RangeIndex(est.counts.size, name="rank")
    return UnattributedHistogram(
        counts=pd.Series(est.counts, index=index, name="estimate"),
        variance=pd.Series(est.variances, index=index, name="variance"),
        epsilon=float(eps),
        method="sbar",
        params=dict(params, noise_scale=str(est.scale), groups=int(n)),
        post_processing=("isotonic regression (PAV, >= 0)", "rounding"),
    )
