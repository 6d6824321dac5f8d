"""What every histogram method is made of: :class:`HistogramMethod`, :class:`Planned` and their helpers.

A method is data: its knobs as a :class:`~pandas_dp.releases.params.ParamTable`,
the measures it has an analysis for, a ``plan`` step (public inputs only: the
domain, the loss and the checked knobs; it calibrates the noise, so a loss too
small is refused before any charge) and a ``release`` step (exact counts and
the plan in, the result out). Each method lives in its own module of
:mod:`pandas_dp.releases.methods` (one per page of ``docs/methods/``) and is
listed once in the table :data:`pandas_dp.releases.methods.METHODS`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

import numpy as np

from pandas_dp.domain.grid import Grid
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import PrivacyLoss
from pandas_dp.privacy.units import AUTO_MAX_ROWS, UnitBounds
from pandas_dp.results.histogram import Histogram
from pandas_dp.releases.params import ParamTable, Real
from pandas_dp.releases.pipeline import check_measure

__all__ = ["HistogramMethod", "Planned", "BOTH_MEASURES", "SHARE", "plan_with", "own_int64", "clip_at_zero",
           "check_dims", "named_by_measure"]

#: The measures of a method with both a pure and a zCDP analysis (``epsilon=`` or ``rho=``).
BOTH_MEASURES = frozenset({"pure", "zcdp"})

#: A knob that is a share of the loss, in (0, 1].
SHARE = Real(0.0, 1.0, low_open=True)


@dataclass(frozen=True)
class Planned:
    """A method's plan for one release: the method's name, its algorithm plan, its checked knobs.

    ``label`` names the method actually run when it differs (``"auto"`` records its choice).
    """

    method: str
    plan: Any
    knobs: dict[str, Any] = field(default_factory=dict)
    label: str = ""


@dataclass(frozen=True)
class HistogramMethod:
    """A histogram method: knobs as data, a plan from public inputs, the release after the charge.

    ``plan(grid, loss, knobs) -> Planned`` sees only public information;
    ``release(counts, grid, planned, *, rng, nonnegative, loss) -> Histogram``
    draws the noise and wraps the result. ``release`` owns ``counts`` (the
    engine's fresh array, used by nothing after it): it may add the noise in
    place (:func:`own_int64`).
    """

    name: str
    params: ParamTable
    plan: Callable[..., Planned]
    release: Callable[..., Histogram]
    measures: frozenset[str] = frozenset({"pure"})
    summary: str = ""
    #: Whether ``plan`` takes the privacy unit's bounds (``plan(grid, loss, knobs, unit)``) and calibrates
    #: each measurement to its sensitivity under them. Other methods run at the per-row loss of group
    #: privacy (``UnitBounds.per_row_loss``), which gives every disjoint-count measurement the same noise.
    unit_aware: bool = False


def plan_with(spec: HistogramMethod, grid: Grid, loss: PrivacyLoss, knobs: Mapping[str, Any],
              unit: UnitBounds | None = None) -> Planned:
    """Check a method's measure and knobs and plan it (public inputs only), for a privacy unit if given.

    With ``max_rows="auto"`` the plan is made for the largest bound ``"auto"`` may choose
    (:data:`~pandas_dp.privacy.units.AUTO_MAX_ROWS`), so a loss too small for any choice is refused now.
    """
    check_measure(loss, spec.measures, f"method={spec.name!r}")
    checked = spec.params.validate(knobs)
    if unit is None:
        return spec.plan(grid, loss, checked)
    if unit.auto and unit.max_rows is None:
        unit = unit.with_max_rows(AUTO_MAX_ROWS)
    if spec.unit_aware:
        return spec.plan(grid, loss, checked, unit)
    return spec.plan(grid, unit.per_row_loss(loss), checked)


def own_int64(counts: np.ndarray) -> np.ndarray:
    """The exact counts a mechanism received, flat, as an int64 array it may overwrite.

    A method's ``release`` owns the counts it is given (the pipeline drops them after the mechanism),
    so the engine's fresh int64 array is used in place: the noisy counts take its memory and the exact
    counts are gone once the noise is added. Any other array (read-only, another dtype, not
    contiguous) is copied first.
    """
    flat = np.asarray(counts).reshape(-1)
    if flat.dtype == np.int64 and flat.flags.writeable and flat.flags.c_contiguous and np.may_share_memory(flat, counts):
        return flat
    return np.array(flat, dtype=np.int64)


def clip_at_zero(values: np.ndarray) -> np.ndarray:
    """``max(values, 0)`` as floats: the non-negativity post-processing of flat estimates."""
    return np.maximum(values, 0.0)


def check_dims(grid: Grid, method: str, allowed: tuple[int, ...], how: str) -> None:
    """Refuse a domain whose number of dimensions ``method`` does not take (before any charge)."""
    if grid.ndim not in allowed:
        raise ParameterError(
            f"method={method!r} releases {how}; this domain has {grid.ndim} dimension(s) {list(grid.columns)} "
            f"of shape {grid.shape}. Pass {' or '.join(f'{d}' for d in allowed)} column(s), or choose "
            f"another method (e.g. 'hierarchical', which takes any number of dimensions).")


#: Pure-named loss parameters and their names under zCDP.
_RENAMED = {"total_epsilon": "total_rho", "level_epsilons": "level_rhos", "strategy_epsilon": "strategy_rho"}


def named_by_measure(release: Callable[..., Any]) -> Callable[..., Any]:
    """The release, with its loss parameters named by their measure under zCDP (pure: unchanged).

    DAWA and the grids record ``total_epsilon``, ``level_epsilons``, ``strategy_epsilon``; under
    ``rho=`` these are ``total_rho``, ``level_rhos``, ``strategy_rho``, and DAWA's pure partition adds
    its charge ``partition_rho``.
    """
    def run(counts: Any, grid: Any, planned: Any, *, rng: Any, nonnegative: bool, loss: Any) -> Any:
        result = release(counts, grid, planned, rng=rng, nonnegative=nonnegative, loss=loss)
        if loss.measure != "zcdp":
            return result
        params = {_RENAMED.get(key, key): value for key, value in result.params.items()}
        part = getattr(planned.plan, "partition_loss", None)
        if part is not None:
            params["partition_rho"] = str(part.charged_as("zcdp").amount)
        return replace(result, params=params)
    run.__doc__ = release.__doc__
    return run
