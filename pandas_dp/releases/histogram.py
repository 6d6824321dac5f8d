"""``histogram``: releases over a public domain, and the registry of histogram methods.

Every method registers a :class:`HistogramMethod`: its knobs as a
:class:`~pandas_dp.releases.params.ParamTable`, the measures it has an analysis
for, a ``plan`` step (public inputs only: the domain, the loss and the checked
knobs; it calibrates the noise, so a loss too small is refused before any
charge) and a ``release`` step (exact counts and the plan in, the result out).
:func:`histogram` runs them through the one pipeline
(:func:`~pandas_dp.releases.pipeline.run`).
"""

from __future__ import annotations

import math

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Literal, Mapping

import numpy as np
import pandas as pd

from fractions import Fraction

from pandas_dp._utils.rational import safe_repr, to_fraction
from pandas_dp.domain.grid import Grid, make_grid
from pandas_dp.errors import ParameterError
from pandas_dp.noise.words import release_key
from pandas_dp.privacy.loss import UNIT, Noise, PrivacyLoss, Sensitivity
from pandas_dp.results.geography import GeographyHistogram
from pandas_dp.privacy.units import AUTO_MAX_ROWS, AUTO_QUANTILE, AUTO_SHARE, AUTO_STEPS, UnitArguments, UnitBounds
from pandas_dp.results.histogram import Histogram, as_series, constant_cells
from pandas_dp.releases.params import ParamTable, PrivacyUnit, check_columns, check_flag, check_rng
from pandas_dp.releases.pipeline import Release, check_measure, privacy_loss, run

__all__ = ["HistogramMethod", "Planned", "METHODS", "MethodName", "register_method", "histogram", "flat_histogram",
           "histogram_release",
           "clip_at_zero", "own_int64", "BOTH_MEASURES"]


@dataclass(frozen=True)
class Planned:
    """A method's plan for one release: the registry method, its algorithm plan, its checked knobs.

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


METHODS: dict[str, HistogramMethod] = {}

#: The type of ``histogram(method=...)``: every registered method, in registration order (the modules
#: registering them are imported at the end of this one). ``tests/test_declarations.py`` checks that it
#: lists exactly :data:`METHODS`, so the accessors' signatures and docs name every method.
MethodName = Literal["identity", "hierarchical", "dawa", "ugrid", "agrid", "ahp", "dpcube", "auto"]


def register_method(method: HistogramMethod) -> HistogramMethod:
    """Add a method to the registry used by ``histogram(method=...)``."""
    METHODS[method.name] = method
    return method


def method_named(method: Any, entry: str = "histogram", *, extra: tuple[str, ...] = ()) -> str:
    """Check a ``method=`` argument against the registry (and ``extra`` names accepted by ``entry``)."""
    known = [*extra, *sorted(METHODS)]
    if not isinstance(method, str) or str.__str__(method) not in known:
        raise ParameterError(f"The 'method' parameter of {entry} must be one of {known if extra else sorted(METHODS)}. "
                             f"Got {safe_repr(method)}.")
    return str.__str__(method)


def plan_method(name: str, grid: Grid, loss: PrivacyLoss, knobs: Mapping[str, Any],
                unit: UnitBounds | None = None) -> Planned:
    """Check a method's measure and knobs and plan it (public inputs only), for a privacy unit if given.

    With ``max_rows="auto"`` the plan is made for the largest bound ``"auto"`` may choose
    (:data:`~pandas_dp.privacy.units.AUTO_MAX_ROWS`), so a loss too small for any choice is refused now.
    """
    spec = METHODS[name]
    check_measure(loss, spec.measures, f"method={name!r}")
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


def histogram_release(frame: Any, cols: list[Any], grid: Grid, loss: PrivacyLoss, planned: Planned, *,
                      rng: Any, nonnegative: bool, budget: Any = None, unit: UnitBounds | None = None,
                      knobs: Mapping[str, Any] | None = None, report_dropped: Fraction | None = None) -> Histogram:
    """Run a planned histogram method through the pipeline (count the grid, charge, release).

    With a privacy unit the engine codes the rows by cell and unit, and the mechanism bounds every
    unit's contribution (random rows, with the release's randomness) before counting; with
    ``max_rows="auto"`` it first spends :data:`~pandas_dp.privacy.units.AUTO_SHARE` of the loss on a noisy
    histogram of rows per unit and re-plans the method for the bound it gives (``knobs``: the
    method's knobs as given, for that plan).
    """
    spec = METHODS[planned.method]
    ledger_params = {"shape": list(grid.shape), "nonnegative": nonnegative, **planned.knobs}
    label = f"histogram:{planned.label or planned.method}"
    if unit is None:
        return run(frame, Release(
            loss=loss, method=label, columns=cols, params=ledger_params,
            count=lambda engine: engine.bin_counts(frame, grid),
            mechanism=lambda counts: spec.release(counts, grid, planned, rng=rng, nonnegative=nonnegative,
                                                  loss=loss),
            budget=budget))

    def mechanism(coded: Any) -> Histogram:
        key = release_key(rng)
        chosen, final = unit, planned
        rest = histogram_loss(loss, unit, report_dropped)
        if unit.auto:
            chosen = unit.with_max_rows(choose_max_rows(coded.contributions(), loss.part(AUTO_SHARE).noise(), rng))
            final = plan_method(planned.method, grid, rest, knobs or {}, chosen)
        dropped: dict[str, Any] = {}
        if report_dropped is not None:   # sequential composition: its share is part of the one charge
            dropped = {"report_dropped": str(report_dropped),
                       **estimate_dropped(coded.kept_and_dropped(chosen.row_bound), chosen.row_bound,
                                          loss.part(report_dropped), rng)}
        result = METHODS[final.method].release(coded.counts(chosen, key), grid, final, rng=rng,
                                               nonnegative=nonnegative, loss=rest)
        return replace(result, epsilon=loss.pure_epsilon, loss=loss,
                       params={**result.params, **used_sensitivity(result.params, chosen, grid,
                                                                group=not METHODS[final.method].unit_aware),
                               **chosen.describe(),
                               "unit_sensitivity": chosen.histogram_sensitivity().describe(), **dropped})

    extra = {} if report_dropped is None else {"report_dropped": str(report_dropped)}
    return run(frame, Release(
        loss=loss, method=label, columns=cols, params={**ledger_params, **unit.describe(), **extra},
        count=lambda engine: engine.coded_rows(frame, grid, unit), mechanism=mechanism, budget=budget))


def used_sensitivity(params: Mapping[str, Any], unit: UnitBounds, grid: Grid, *,
                     group: bool = False) -> dict[str, Any]:
    """The sensitivities a unit release's noise is calibrated for, replacing the row-level ``1`` of its method.

    A flat measurement (``"sensitivity"``) sees the unit's histogram sensitivity; a tree's level
    (``"sensitivity_per_level"``, with ``"branching"``) what the unit can do to a node of that level
    (:meth:`~pandas_dp.privacy.units.UnitBounds.level_sensitivity`). Methods run at the group-privacy
    loss (``group=True``: not unit-aware) calibrate every disjoint count to
    :meth:`~pandas_dp.privacy.units.UnitBounds.group_sensitivity` (``L2**2 = k**2``: under
    ``max_cells`` a block of cells can hold all of a unit's rows, which zCDP's Gaussian noise pays for).
    """
    out: dict[str, Any] = {}
    flat = (unit.group_sensitivity() if group else unit.histogram_sensitivity()).describe()
    if "sensitivity" in params:
        out["sensitivity"] = flat
    if "sensitivity_per_level" in params:
        if group and "height" in params:      # a tree chosen by "auto", run at the group-privacy loss
            out["sensitivity_per_level"] = [flat] * (int(params["height"]) + 1)
        elif "branching" in params and "height" in params:
            b = int(params["branching"])
            out["sensitivity_per_level"] = [
                unit.level_sensitivity(math.prod(min(b ** k, n) for n in grid.shape)).describe()
                for k in range(int(params["height"]) + 1)]
        else:
            out["sensitivity_per_level"] = flat
    return out


def choose_max_rows(contributions: np.ndarray, noise: Noise, rng: Any) -> int:
    """``max_rows="auto"``: the :data:`~pandas_dp.privacy.units.AUTO_QUANTILE` quantile of the units' noisy rows.

    ``contributions[i]`` is the number of units whose rows in the domain fall in step ``i`` of
    :data:`~pandas_dp.privacy.units.AUTO_STEPS`; one unit moves one cell by one, so ``noise`` (calibrated
    to sensitivity 1) makes the histogram DP. The bound is post-processing of the noisy
    histogram: its cumulative sums made non-decreasing (running maximum), then the smallest step
    whose cumulative count reaches the quantile of the total (the first step when the noisy
    total is not positive).
    """
    noisy = noise.add(np.asarray(contributions, dtype=np.int64), rng).astype(np.float64)
    cum = np.maximum.accumulate(np.cumsum(noisy))
    if cum[-1] <= 0:
        return AUTO_STEPS[0]
    return AUTO_STEPS[int(np.searchsorted(cum, AUTO_QUANTILE * cum[-1], side="left"))]


def histogram(frame: pd.DataFrame, columns: Any, *, bins: Any = None, range: Any = None,
              categories: Any = None, other: Any = None, epsilon: Any = None, rho: Any = None, delta: Any = None,
              method: MethodName = "identity", rng: Any = None, nonnegative: bool = False, privacy_unit: Any = None,
              max_rows: Any = None, max_cells: Any = None, max_rows_per_cell: Any = None, report_dropped: Any = None,
              by: Any = None,
              hierarchy: Any = None, by_categories: Any = None, level_weights: Any = None,
              integer: bool | None = None, public_totals: Any = None,
              **method_params: Any) -> Histogram | GeographyHistogram:
    """Release a DP histogram of ``frame[columns]`` over a public domain (see ``DataFrame.dp.histogram``).

    With ``by=`` (and its public regions), one consistent histogram per region
    (:func:`pandas_dp.releases.geography.histogram_by_region`). With ``categories="discover"``
    (and ``delta=``), the labels whose noisy count passes a threshold
    (:func:`pandas_dp.releases.discover.discover_histogram`).
    """
    unit = PrivacyUnit.gather(privacy_unit, max_rows, max_cells, max_rows_per_cell)
    if isinstance(categories, str) and str.__str__(categories) == "discover":
        from pandas_dp.releases.discover import discover_histogram  # local: discover imports the pipeline only

        extra = {"bins": bins, "range": range, "by": by, "hierarchy": hierarchy, "by_categories": by_categories,
                 "level_weights": level_weights, "integer": integer, "other": other, "report_dropped": report_dropped,
                 "public_totals": public_totals}
        given = sorted(k for k, v in extra.items() if v is not None) + sorted(method_params)
        if given or method != "identity":
            named = given or ["method"]
            raise ParameterError(f"histogram(categories='discover') takes no {', '.join(named)}= (it releases one "
                                 f"column's labels with the identity mechanism). Drop {named[0]}=.")
        return discover_histogram(frame, columns, epsilon=epsilon, rho=rho, delta=delta, rng=rng,
                                  nonnegative=nonnegative, unit=unit)
    if delta is not None:
        raise ParameterError("The 'delta' parameter is used only by histogram(categories='discover') (key "
                             "discovery needs approximate DP); a histogram over public categories or bins is pure "
                             "or zCDP. Drop delta=.")
    if by is not None or hierarchy is not None or by_categories is not None or level_weights is not None \
            or public_totals is not None:
        if report_dropped is not None:
            raise ParameterError("report_dropped= estimates the rows max_rows dropped for a histogram without by=; "
                                 "release the table without by= to get it, or drop report_dropped=.")
        from pandas_dp.releases.geography import histogram_by_region  # local: cycle (geography uses this module)

        return histogram_by_region(frame, columns, bins=bins, range=range, categories=categories, other=other,
                                   epsilon=epsilon,
                                   rho=rho, method=method, rng=rng, nonnegative=nonnegative, by=by,
                                   hierarchy=hierarchy, by_categories=by_categories, level_weights=level_weights,
                                   integer=integer, public_totals=public_totals, unit_arguments=unit,
                                   **method_params)
    if integer is not None:
        method_params["integer"] = integer  # a knob of method="hierarchical"
    return flat_histogram(frame, columns, bins=bins, range=range, categories=categories, other=other,
                          epsilon=epsilon, rho=rho, method=method, rng=rng, nonnegative=nonnegative, unit=unit,
                          knobs=method_params, report_dropped=report_dropped)


def flat_histogram(frame: pd.DataFrame, columns: Any, *, bins: Any, range: Any, categories: Any, epsilon: Any,
                   rho: Any, method: Any, rng: Any, nonnegative: Any, unit: UnitArguments,
                   knobs: dict[str, Any], other: Any = None, report_dropped: Any = None) -> Histogram:
    """``histogram`` without ``by=``: check the public inputs in order, plan the method, run the pipeline."""
    cols = check_columns(frame, columns)
    loss = privacy_loss(epsilon, rho)
    generator = check_rng(rng)
    nonneg = check_flag(nonnegative, "nonnegative")
    name = method_named(method)
    bounds = unit.bounds(frame.columns, reserved=tuple(cols))
    dropped = check_report_dropped(report_dropped, bounds, loss)
    grid = make_grid(frame, cols, bins=bins, range=range, categories=categories, other=other)
    planned = plan_method(name, grid, histogram_loss(loss, bounds, dropped), knobs, bounds)
    return histogram_release(frame, cols, grid, loss, planned, rng=generator, nonnegative=nonneg, unit=bounds,
                             knobs=knobs, report_dropped=dropped)


#: Confidence level of the interval of ``report_dropped``'s share.
DROPPED_LEVEL = 0.95


def check_report_dropped(value: Any, bounds: UnitBounds | None, loss: PrivacyLoss) -> Fraction | None:
    """The checked share of the loss ``report_dropped=`` spends (public; before any charge), or None.

    It needs a privacy unit bounded by ``max_rows`` (a number or ``"auto"``), a share in ``(0, 1/2]``,
    and a loss whose share buys the noise of the largest bound it may meet (``AUTO_MAX_ROWS`` for auto).
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)) and \
            not (hasattr(value, "dtype") and getattr(value, "ndim", 1) == 0):
        raise ParameterError(f"The 'report_dropped' parameter must be a share of the loss in (0, 0.5], e.g. "
                             f"report_dropped=0.05 (5% of epsilon estimates the rows max_rows dropped). "
                             f"Got {safe_repr(value)}.")
    share = to_fraction(value, name="report_dropped")
    if not 0 < share <= Fraction(1, 2):
        raise ParameterError(f"The 'report_dropped' parameter must be a share of the loss in (0, 0.5], e.g. "
                             f"report_dropped=0.05. Got {safe_repr(value)}.")
    if bounds is None or bounds.scheme != "rows":
        raise ParameterError("report_dropped= estimates the rows a privacy unit's max_rows bound dropped: pass "
                             "privacy_unit= with max_rows= (a number or 'auto'), or drop report_dropped=.")
    k = AUTO_MAX_ROWS if bounds.auto else bounds.row_bound
    loss.part(share).noise(dropped_sensitivity(k), what="report_dropped's share")   # too small: refused now
    return share


def dropped_sensitivity(k: int) -> Sensitivity:
    """Sensitivity of ``[rows kept, rows dropped (capped at k per unit)]``: one unit moves it by ``(a, b)``,
    ``a, b <= k``: ``L1 = 2k``, ``L2**2 = 2k**2``."""
    return Sensitivity(Fraction(2 * k), Fraction(2 * k * k))


def histogram_loss(loss: PrivacyLoss, bounds: UnitBounds | None, dropped: Fraction | None) -> PrivacyLoss:
    """What the histogram itself runs at: the loss less ``max_rows="auto"``'s and ``report_dropped``'s shares."""
    rest = loss
    if bounds is not None and bounds.auto:
        rest = rest - loss.part(AUTO_SHARE)
    if dropped is not None:
        rest = rest - loss.part(dropped)
    return rest


def estimate_dropped(kept_dropped: np.ndarray, k: int, part: PrivacyLoss, rng: Any) -> dict[str, Any]:
    """Noise ``[kept, dropped]`` with ``part`` and turn it into the share of rows dropped, with an interval.

    The share is ``D / (K + D)`` (``D`` capped at ``k`` rows per unit: a lower bound when units have more
    than ``2k`` rows). Each noisy count is within ``r`` of its value with probability ``1 - (1 - c)/2``
    (``r`` the noise's exact quantile at that level), so by the union bound
    ``[(D - r)+ / ((D - r)+ + K + r), (D + r) / (D + r + (K - r)+)]`` covers the share with probability
    at least ``c`` (:data:`DROPPED_LEVEL`). Post-processing of the noisy pair only.
    """
    noise = part.noise(dropped_sensitivity(k), what="report_dropped's share")
    kept, drop = (float(v) for v in noise.add(np.asarray(kept_dropped, dtype=np.int64), rng))
    r = float(noise.sum_radius(1, 1 - (1 - DROPPED_LEVEL) / 2))
    def share(d: float, kk: float) -> float:
        d, kk = max(d, 0.0), max(kk, 0.0)
        return min(d / (d + kk), 1.0) if d + kk > 0 else 0.0
    estimate = share(drop, kept)
    low = share(drop - r, kept + r)
    high = 1.0 if kept - r <= 0 else share(drop + r, kept - r)
    return {"dropped_share": estimate, "dropped_interval": [min(low, estimate), max(high, estimate)],
            "dropped_interval_level": DROPPED_LEVEL, "dropped_noisy": [kept, drop], "dropped_cap": int(k)}


# ------------------------------------------------------------------------------------ identity

def _plan_identity(grid: Grid, loss: PrivacyLoss, knobs: dict[str, Any], unit: UnitBounds | None = None) -> Planned:
    sensitivity = UNIT if unit is None else unit.histogram_sensitivity()
    return Planned("identity", loss.noise(sensitivity, what="the identity histogram"), knobs)


def _release_identity(counts: np.ndarray, grid: Grid, planned: Planned, *, rng: Any, nonnegative: bool,
                      loss: PrivacyLoss) -> Histogram:
    """The identity (flat) mechanism: one noise draw per cell.

    Notes
    -----
    Adding or removing a row changes one cell by 1 (L1 and L2 sensitivity 1), so
    noise with ``P(z) ∝ exp(-|z| / t)``, ``t = 1/epsilon``, gives epsilon-DP (per-cell
    variance ``2p / (1 - p)^2``, ``p = exp(-1/t)``), and discrete Gaussian noise
    with ``sigma^2 = 1 / (2 rho)`` gives rho-zCDP.
    ``nonnegative=True`` clips at 0 (post-processing), which biases small
    counts upwards; the reported variance is then that of the noise only.
    """
    noise: Noise = planned.plan
    noisy = noise.add_in_place(own_int64(counts), rng)
    post: tuple[str, ...] = ()
    if nonnegative:
        np.maximum(noisy, 0, out=noisy)
        post = ("clip at 0",)
    described = noise.describe()
    return Histogram(
        counts=as_series(noisy, grid, "estimate", owned=True),
        variance=as_series(constant_cells(noise.variance(), grid), grid, "variance"),
        epsilon=loss.pure_epsilon,
        method="identity",
        params={"noise": described.pop("noise"), "sensitivity": 1, **described, "nonnegative": nonnegative},
        domain=grid,
        post_processing=post,
        variance_exact=not nonnegative,
        loss=loss, noise=noise, single_draw=not nonnegative,
    )


BOTH_MEASURES = frozenset({"pure", "zcdp"})

register_method(HistogramMethod("identity", ParamTable("method='identity'"), _plan_identity, _release_identity,
                                measures=BOTH_MEASURES, summary="one noise draw per cell", unit_aware=True))

# Other histogram methods register themselves on import (kept last: they import this module).
from pandas_dp.releases import hierarchical as _hierarchical  # noqa: E402,F401  ("hierarchical")
from pandas_dp.releases import data_dependent as _data_dependent  # noqa: E402,F401  ("ahp", "dpcube", "auto")
from pandas_dp.releases import adaptive as _adaptive  # noqa: E402,F401  ("dawa", "ugrid", "agrid")
