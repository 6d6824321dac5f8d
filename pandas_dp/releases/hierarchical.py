"""``hierarchical_histogram`` and ``range_query``: the releases built on the tree method.

``hierarchical_histogram`` is ``histogram(method="hierarchical")`` with the
tree's knobs (:data:`~pandas_dp.releases.methods.hierarchical.TREE_PARAMS`) as
named arguments. ``range_query`` releases the histogram best suited to a range
workload and answers the ranges from it.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import pandas as pd

from pandas_dp.algorithms.tree.branching import choose_branching
from pandas_dp.domain.grid import make_grid
from pandas_dp._utils.public import float_array, safe_repr
from pandas_dp.errors import ParameterError
from pandas_dp.results.hierarchical import HierarchicalHistogram
from pandas_dp.releases.histogram import flat_histogram, histogram_release
from pandas_dp.releases.methods import MethodName, method_named, plan_method
from pandas_dp.releases.methods.hierarchical import TREE_PARAMS, BudgetSplit
from pandas_dp.releases.params import PrivacyUnit, check_columns, check_flag, check_rng
from pandas_dp.releases.pipeline import privacy_loss

__all__ = ["hierarchical_histogram", "range_query"]


def hierarchical_histogram(frame: pd.DataFrame, columns: Any, *, bins: Any = None, range: Any = None,
                           categories: Any = None, other: Any = None, epsilon: Any = None, rho: Any = None,
                           branching: int | str = "auto", budget_split: BudgetSplit = "uniform",
                           include_root: bool = False, consistent: bool = True, integer: bool = False,
                           nonnegative: bool = False, rng: Any = None, privacy_unit: Any = None,
                           max_rows: Any = None, max_cells: Any = None,
                           max_rows_per_cell: Any = None) -> HierarchicalHistogram:
    """Release a hierarchical histogram (see ``DataFrame.dp.hierarchical_histogram``).

    It is ``histogram(method="hierarchical")`` with the tree's knobs (:data:`TREE_PARAMS`) as named arguments.
    """
    knobs = {"branching": branching, "budget_split": budget_split, "include_root": include_root,
             "consistent": consistent, "integer": integer}
    unit = PrivacyUnit.gather(privacy_unit, max_rows, max_cells, max_rows_per_cell)
    return flat_histogram(frame, columns, bins=bins, range=range, categories=categories, other=other,  # type: ignore[return-value]
                          epsilon=epsilon, rho=rho, method="hierarchical", rng=rng, nonnegative=nonnegative,
                          unit=unit, knobs=knobs)


def _range_pairs(ranges: Any) -> tuple[np.ndarray, np.ndarray]:
    """Lows and highs of one ``(low, high)`` pair or a list of pairs: floats, or objects (dates, durations)
    that the domain's ``align`` reads."""
    pairs = float_array(ranges)
    if pairs is None:
        try:
            pairs = None if isinstance(ranges, (str, bytes)) else np.asarray(ranges, dtype=object)
        except Exception:  # noqa: BLE001 - a public argument whose conversion raises anything
            pairs = None
        if pairs is None or pairs.ndim == 0:
            raise ParameterError(f"The 'ranges' parameter must be a (low, high) pair or a list of pairs of "
                                 f"numbers, dates or durations. Got {safe_repr(ranges)}.")
    if pairs.ndim == 1 and pairs.size == 2:
        pairs = pairs[None, :]
    if pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.shape[0] == 0:
        raise ParameterError(f"The 'ranges' parameter must be a (low, high) pair or a non-empty list of "
                             f"pairs, e.g. [(18, 25), (26, 64)]. Got {safe_repr(ranges)}.")
    return pairs[:, 0], pairs[:, 1]


def range_query(frame: pd.DataFrame, column: Any, ranges: Any, *, bins: Any = None, range: Any = None,
                categories: Any = None, epsilon: Any = None, rho: Any = None, method: MethodName = "auto",
                rng: Any = None, nonnegative: bool = False, privacy_unit: Any = None, max_rows: Any = None,
                max_cells: Any = None, max_rows_per_cell: Any = None, **method_params: Any) -> pd.DataFrame:
    """Release the histogram best suited to ranges and answer ``ranges`` from it.

    See ``DataFrame.dp.range_query``.  Everything (column, domain, ranges on
    bin edges, method knobs) is validated before the single charge.
    """
    if isinstance(column, (list, tuple)):
        raise ParameterError(f"range_query answers 1-D ranges of one column; got columns {safe_repr(list(column))}. "
                             f"Pass a single column name.")
    cols = check_columns(frame, column, name="column")
    loss = privacy_loss(epsilon, rho)
    generator = check_rng(rng)
    nonneg = check_flag(nonnegative, "nonnegative")
    name = method_named(method, "range_query", extra=("auto",))
    unit = PrivacyUnit.gather(privacy_unit, max_rows, max_cells, max_rows_per_cell).bounds(frame.columns,
                                                                                           reserved=tuple(cols))
    grid = make_grid(frame, cols, bins=bins, range=range, categories=categories)
    lows, highs = _range_pairs(ranges)
    grid.dims[0].align(lows, highs)   # DomainError before any charge
    knobs = dict(method_params)
    if name == "auto":
        # The tree's knobs (other than branching) are checked, then the same choice as
        # ``choose_branching`` decides between the tree and the flat histogram.
        tree = TREE_PARAMS.validate({k: v for k, v in knobs.items() if k != "branching"})
        choice = choose_branching(grid.shape, loss=loss, budget_split=tree["budget_split"],
                                  include_root=tree["include_root"], consistent=tree["consistent"])
        if choice.is_flat:
            name, knobs = "identity", {}
        else:
            name = "hierarchical"
            knobs.setdefault("branching", "auto")
    method_loss = loss if unit is None or not unit.auto else loss - loss.part(unit.auto_share)
    planned = plan_method(name, grid, method_loss, knobs, unit)
    result = histogram_release(frame, cols, grid, loss, planned, rng=generator, nonnegative=nonneg, unit=unit,
                               knobs=knobs)
    answers = cast(pd.DataFrame, result.range_query(list(zip(lows, highs))))   # a list of ranges: a frame
    answers.attrs["release"] = result
    return answers
