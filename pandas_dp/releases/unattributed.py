"""``unattributed_histogram``: the sorted per-group row counts (Hay et al. S-bar).

Plan (public): the arguments and the public ids are checked, and the loss is
split between the number of groups (estimated with 1/10 of it when no public
ids are given) and the sorted counts, with their noise. Pipeline: check that a
budget is active and can pay -> count rows per group (public group ids, or all
groups present; rows out of domain are dropped, silently) -> charge ->
(private number of groups) -> noise, isotonic regression, rounding -> wrap.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.domain.labels import CLASS_NAMES, public_labels, value_classes
from pandas_dp.algorithms.unattributed import noisy_group_count, top_n_sorted, unattributed_histogram as sbar
from pandas_dp.domain.grid import MAX_CELLS
from pandas_dp._utils.rational import safe_repr
from pandas_dp.noise.words import release_key
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import UNIT, PrivacyLoss, Sensitivity
from pandas_dp.results.unattributed import UnattributedHistogram
from pandas_dp.releases.params import PrivacyUnit, check_columns, check_rng
from pandas_dp.releases.pipeline import Release, check_measure, privacy_loss, run

__all__ = ["unattributed_histogram", "GROUP_COUNT_SHARE", "MAX_GROUPS", "NOISE_GROUPS", "NOISE_GROUPS_TAIL"]

GROUP_COUNT_SHARE = Fraction(1, 10)
#: Largest number of groups released: one noisy count each. A privately estimated number of
#: groups is clamped to it (post-processing); more public group ids than this are refused.
MAX_GROUPS = MAX_CELLS
#: Most positions the noise on an estimated number of groups may add beyond the groups present, at
#: tail probability :data:`NOISE_GROUPS_TAIL`. Every position is released and costs about 70 bytes
#: of work, so the memory the noise alone asks for stays below 150 MB (typically 20 times less: the
#: median of the noise is a twentieth of that quantile); a smaller loss, whose noise would fill up to
#: :data:`MAX_GROUPS` positions (gigabytes of pure noise), is refused before any charge.
NOISE_GROUPS = 1 << 21
#: Tail probability of the noise on the number of groups exceeding :data:`NOISE_GROUPS`.
NOISE_GROUPS_TAIL = Fraction(1, 10**6)


def _group_ids(groups: Any, column: Any) -> pd.Index:
    if isinstance(groups, pd.DataFrame):
        # A public groups table: its column named like the group column holds the ids.
        if isinstance(groups.columns, pd.MultiIndex) or column not in groups.columns:
            raise ParameterError(f"The 'groups' table has no column {safe_repr(column)} (the group column). Pass a "
                                 f"table with a {safe_repr(column)} column of all group ids, or the ids themselves "
                                 f"as a Series.")
        groups = groups[column]
        if isinstance(groups, pd.DataFrame):
            raise ParameterError(f"The 'groups' table has several columns named {safe_repr(column)}; rename them "
                                 f"so that one column holds the group ids.")
    if isinstance(groups, (str, bytes)) or not hasattr(groups, "__iter__"):
        raise ParameterError(f"The 'groups' parameter must be a Series, Index or array of group ids. "
                             f"Got {type(groups).__name__}.")
    try:
        ids = pd.Index(groups)
    except Exception as err:  # noqa: BLE001 - a generator or object whose iteration raises
        raise ParameterError(f"The 'groups' parameter must be a Series, Index or array of group ids. "
                             f"Got {type(groups).__name__}.") from err
    classes = value_classes(ids) if not isinstance(ids, pd.MultiIndex) else np.zeros(len(ids), dtype=np.int8)
    if (classes == 0).any():
        bad = safe_repr([ids[i] for i in np.flatnonzero(classes == 0)[:5]], 200)
        raise ParameterError(f"The 'groups' parameter must hold scalar group ids (strings, numbers, dates). "
                             f"Got {int((classes == 0).sum())} that are not, e.g. {bad}; pass one id per group.")
    # Missing ids (None, NaN, NaT, Decimal('NaN') and its signalling kind, which pandas' isna cannot read).
    if (classes < 0).any():
        raise ParameterError("The 'groups' parameter holds missing group ids; remove them.")
    kinds = np.unique(classes[classes > 0])
    if kinds.size > 1:
        names = [CLASS_NAMES[int(k)] for k in kinds]
        raise ParameterError(f"The 'groups' parameter mixes kinds of ids ({', '.join(names)}); pass ids of one "
                             f"kind (e.g. all strings or all numbers).")
    ids = public_labels(ids)
    if not ids.is_unique:
        dup = safe_repr(ids[ids.duplicated()].unique()[:5].tolist(), 200)
        raise ParameterError(f"The 'groups' parameter repeats group ids (e.g. {dup}); pass each group once.")
    return ids


def _noise_reach(loss: PrivacyLoss, sensitivity: Sensitivity) -> int:
    """Positions the noise on the number of groups adds with probability ``NOISE_GROUPS_TAIL`` (public)."""
    noise = loss.part(GROUP_COUNT_SHARE).noise(sensitivity, what="the number of groups")
    return noise.quantile(1 - NOISE_GROUPS_TAIL)


def _check_group_noise(loss: PrivacyLoss, sensitivity: Sensitivity) -> None:
    """Refuse a loss whose noise on the number of groups could release up to millions of noise positions.

    Public: the loss and the unit's bounds. The smallest workable amount scales the given one by the
    noise's reach over :data:`NOISE_GROUPS` (noise scale ``1/epsilon``, standard deviation
    ``1/sqrt(rho)``), rounded up to two significant digits and checked exactly.
    """
    reach = _noise_reach(loss, sensitivity)
    if reach <= NOISE_GROUPS:
        return
    factor = reach / NOISE_GROUPS
    amount = float(loss.amount) * (factor if loss.measure == "pure" else factor * factor)
    for _ in range(20):
        digits = 1 - math.floor(math.log10(amount))
        amount = math.ceil(amount * 10.0**digits) / 10.0**digits
        if _noise_reach(type(loss)(Fraction(repr(amount))), sensitivity) <= NOISE_GROUPS:  # type: ignore[call-arg]
            break
        amount *= 1.05
    name = loss.parameter
    raise ParameterError(
        f"The '{name}' parameter is too small for unattributed_histogram without public groups: "
        f"{name}={float(loss.amount):.3g} estimates the number of groups with noise that can add "
        f"{reach:,} positions of pure noise (up to {MAX_GROUPS:,} released counts, gigabytes of work). "
        f"Pass {name} >= {amount:.2g} (the smallest value whose noise adds at most {NOISE_GROUPS:,} "
        f"positions), or the public group ids as groups= (then the number of groups is not estimated).")


def unattributed_histogram(frame: pd.DataFrame, group: Any, *, epsilon: Any = None, rho: Any = None,
                           groups: Any = None, rng: Any = None, privacy_unit: Any = None, max_rows: Any = None,
                           max_cells: Any = None, max_rows_per_cell: Any = None) -> UnattributedHistogram:
    """Release the sorted row counts per group (see ``DataFrame.dp.unattributed_histogram``).

    With a privacy unit (at most ``k`` rows per unit, or ``c`` groups with ``r`` rows each), one unit
    moves the sorted counts by at most ``k`` (``c r``) in L1 (``k``; ``sqrt(c) r`` in L2) and the number
    of groups present by at most ``k`` (``c``). The group column may be the unit itself: then one
    unit is all the rows of one group. For an edge table grouped by its source column that is
    *source-edge* privacy (all edges out of one node), not node-level privacy: removing a node also
    removes the edges into it, which lowers other nodes' counts (an L1 change of up to
    ``2 deg(v)``), and that neighbour is not covered.
    """
    col = check_columns(frame, group, name="group")
    if len(col) != 1:
        raise ParameterError(f"The 'group' parameter names one column. Got {safe_repr(group)}.")
    loss = privacy_loss(epsilon, rho)
    check_measure(loss, frozenset({"pure", "zcdp"}), "unattributed_histogram")
    generator = check_rng(rng)
    unit = PrivacyUnit.gather(privacy_unit, max_rows, max_cells, max_rows_per_cell).bounds(frame.columns)
    if unit is not None and unit.auto:
        raise ParameterError("max_rows='auto' is offered for histograms; pass a public max_rows=k (or max_cells "
                             "with max_rows_per_cell) to unattributed_histogram.")
    ids = _group_ids(groups, col[0]) if groups is not None else None
    if ids is not None and len(ids) > MAX_GROUPS:
        raise ParameterError(f"The 'groups' parameter lists {len(ids):,} groups; the limit is {MAX_GROUPS:,} "
                             f"(one noisy count each).")
    loss_n = loss.zero() if ids is not None else loss.part(GROUP_COUNT_SHARE)
    loss_s = loss - loss_n
    count_sens = UNIT if unit is None else Sensitivity.cells(cells=unit.cells_touched())
    if ids is None:
        _check_group_noise(loss, count_sens)
    noise_n = loss_n.noise(count_sens, what="the number of groups") if ids is None else None
    noise_s = loss_s.noise(UNIT if unit is None else unit.histogram_sensitivity(), what="the sorted counts")
    params = {"groups_public": ids is not None, f"{loss.parameter}_group_count": str(loss_n.amount),
              f"{loss.parameter}_counts": str(loss_s.amount),
              "sensitivity": 1 if unit is None else unit.histogram_sensitivity().describe(),
              **({} if unit is None else unit.describe())}

    def mechanism(exact: Any) -> UnattributedHistogram:
        if unit is None:
            counts = exact
        else:  # bound every unit's rows (random, with the release's randomness), then count per group
            counts = exact.counts(unit, release_key(generator))
            counts = counts if ids is not None else counts[counts > 0]
        if ids is not None:
            n = len(ids)
        else:
            assert noise_n is not None  # planned whenever the groups are estimated
            n = noisy_group_count(counts.size, noise=noise_n, limit=MAX_GROUPS, rng=generator)
        est = sbar(top_n_sorted(counts, n), noise=noise_s, rng=generator)
        index = pd.RangeIndex(est.counts.size, name="rank")
        described = est.noise.describe()
        return UnattributedHistogram(
            counts=pd.Series(est.counts, index=index, name="estimate"),
            variance=pd.Series(est.variances, index=index, name="variance"),
            epsilon=loss.pure_epsilon,
            method="sbar",
            params=dict(params, **{k: v for k, v in described.items() if k != "noise"}, groups=int(n)),
            post_processing=("isotonic regression (PAV, >= 0)", "rounding"),
            loss=loss,
        )

    # Rows of groups outside the public ids, and missing or non-scalar ids, are outside the domain: dropped.
    if unit is None:
        count = lambda engine: engine.group_counts(frame[col[0]], ids)  # noqa: E731
    else:
        count = lambda engine: engine.coded_group_rows(frame, col[0], ids, unit)  # noqa: E731
    return run(frame, Release(loss=loss, method="unattributed_histogram", columns=col, params=params,
                              count=count, mechanism=mechanism))
