"""``method="ugrid"`` and ``"agrid"``: 2-D grids sized from the total (Qardaji et al.; ``docs/methods/grids.md``).

The plans (:func:`~pandas_dp.algorithms.grids.plan_ugrid`,
:func:`~pandas_dp.algorithms.grids.plan_agrid`) are made from the public
domain, the loss and the knobs before any charge; the release runs the
algorithm on the exact counts and wraps a
:class:`~pandas_dp.results.adaptive.GridHistogram`.

``rho=``: every measurement (the noisy total, each level's cells) is a vector
of disjoint counts, so each gets exact discrete Gaussian noise for its exact
Fraction of ``rho``, and the sizes use ``sigma**2`` in place of the paper's
``2 / epsilon**2`` (:mod:`pandas_dp.algorithms.grids`, "Under zCDP"); the
parameters that name a loss say which (``total_rho``, ``level_rhos``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from pandas_dp._utils.rational import to_fraction
from pandas_dp.algorithms import grids as _grids
from pandas_dp.domain.grid import Grid
from pandas_dp.privacy.loss import PrivacyLoss
from pandas_dp.results.adaptive import GridHistogram
from pandas_dp.results.bracket import INTERVAL_NOTE
from pandas_dp.results.histogram import as_series
from pandas_dp.releases.methods.base import (BOTH_MEASURES, SHARE, HistogramMethod, Planned, check_dims,
                                             clip_at_zero, named_by_measure)
from pandas_dp.releases.params import Param, ParamTable, Real

__all__ = ["UGRID", "AGRID", "UGRID_PARAMS", "AGRID_PARAMS", "with_total"]


def _total_params(kind: str) -> tuple[Param, ...]:
    return (
        Param("total_share", SHARE, _grids.DEFAULT_TOTAL_SHARE,
              f"share of the loss spent on the noisy total that sizes the {kind} (unused with expected_total)"),
        Param("expected_total", Real(0.0), None, "a public number of rows (e.g. last year's published total); "
              "no share is spent on the total then", optional=True),
        Param("c", Real(0.0, low_open=True), _grids.DEFAULT_C, "the paper's constant c in m = sqrt(N epsilon / c)"),
    )


UGRID_PARAMS = ParamTable("method='ugrid'", _total_params("grid"))
AGRID_PARAMS = ParamTable("method='agrid'", (
    Param("alpha", SHARE, _grids.DEFAULT_ALPHA, "share of the counting loss spent on the first level"),
    *_total_params("two levels"),
))


def _grid_knobs(knobs: dict[str, Any]) -> dict[str, Any]:
    """The checked knobs as the ledger records them (exact shares as text)."""
    out: dict[str, Any] = {name: str(to_fraction(knobs[name], name=name)) for name in ("alpha", "total_share")
                           if name in knobs}
    out["expected_total"] = None if knobs["expected_total"] is None else float(knobs["expected_total"])
    out["c"] = float(knobs["c"])
    return out


def _plan_ugrid(grid: Grid, loss: PrivacyLoss, knobs: dict[str, Any]) -> Planned:
    check_dims(grid, "ugrid", (2,), "2-D grids only (a uniform grid over two columns)")
    plan = _grids.plan_ugrid(grid.shape, loss=loss, total_share=to_fraction(knobs["total_share"], name="total_share"),
                             expected_total=knobs["expected_total"], c=float(knobs["c"]))
    return Planned("ugrid", plan, _grid_knobs(knobs))


def _plan_agrid(grid: Grid, loss: PrivacyLoss, knobs: dict[str, Any]) -> Planned:
    check_dims(grid, "agrid", (2,), "2-D grids only (an adaptive grid over two columns)")
    plan = _grids.plan_agrid(grid.shape, loss=loss, alpha=to_fraction(knobs["alpha"], name="alpha"),
                             total_share=to_fraction(knobs["total_share"], name="total_share"),
                             expected_total=knobs["expected_total"], c=float(knobs["c"]))
    return Planned("agrid", plan, _grid_knobs(knobs))


def with_total(planned: Planned, total: float) -> Planned:
    """The grid plan with ``total`` as its public total (a noisy total already released, e.g. by ``auto``)."""
    return replace(planned, plan=replace(planned.plan, expected_total=float(total)))


def _release(counts: np.ndarray, grid: Grid, planned: Planned, *, rng: Any, nonnegative: bool,
                  loss: PrivacyLoss) -> GridHistogram:
    """UGrid / AGrid (Qardaji et al. 2013): noisy counts of a grid sized from the (noisy or public) total.

    Notes
    -----
    What is charged for what (sequential composition; the parts are exact
    Fractions of the loss and add up to it, charged once):

    * without ``expected_total``, ``total_share`` of the loss buys the noisy
      total ``N`` that sizes the grid (``total_epsilon`` / ``total_rho``);
      with it, nothing is spent on the total;
    * UGrid: the rest counts the cells of one grid; AGrid: ``alpha`` of the
      rest counts the first level, and ``1 - alpha`` the second level, whose
      sizes are read from the first level's noisy counts only
      (``level_epsilons`` / ``level_rhos``).

    Cells of a level are disjoint (sensitivity 1). Under ``epsilon=`` every
    part gets discrete Laplace noise; under ``rho=`` exact discrete Gaussian
    noise with ``sigma**2 = 1 / (2 rho_part)``, AGrid's first level included
    (choosing the second level from its noisy counts is post-processing of a
    zCDP measurement), and the size rules read ``epsilon`` as
    :func:`~pandas_dp.algorithms.grids.size_epsilon` of the noise used
    (``size_epsilons``: ``sqrt(2) / sigma`` under ``rho=``). The noise variances
    are exact given the grid; the bias of spreading a cell over its atoms is
    not in them (``variance_exact`` is False) and intervals are whole-cell
    brackets, their radius from the level noise with the heaviest tail.
    """
    plan: _grids.GridPlan = planned.plan
    run = _grids.ugrid if plan.method == "ugrid" else _grids.agrid
    r = run(counts.reshape(grid.shape), plan, rng=rng)
    est = r.estimates.reshape(-1)
    post: tuple[str, ...] = ()
    if nonnegative:
        est = clip_at_zero(est)
        post = ("clip at 0",)
    # Estimates combine the draws of every level: the radius of the heaviest-tailed one covers any combination
    # (equal for discrete Laplace; under rho the smallest sigma**2 below 2). Ties keep the last level.
    noise = max(reversed(plan.level_noise), key=lambda n: n.tail_factor(0.95))
    size_epsilons = [plan.epsilon_used] + ([] if plan.epsilon_second is None else [plan.epsilon_second])
    params: dict[str, Any] = {
        **planned.knobs, "total": r.total, "total_is_noisy": r.total_is_noisy,
        "total_epsilon": None if plan.total_loss is None else str(plan.total_loss.amount),
        "level_epsilons": [str(part.amount) for part in plan.level_losses],
        "size_epsilons": size_epsilons,
        "grid_shape": list(r.grid_shape), "n_cells": int((r.sub_shape[..., 0] * r.sub_shape[..., 1]).sum()),
        "noise": noise.name, "sensitivity_per_level": 1, "nonnegative": nonnegative,
        "variance": r.variance_note, "intervals": INTERVAL_NOTE}
    return GridHistogram(
        counts=as_series(est, grid, "estimate"),
        variance=as_series(r.variances.reshape(-1), grid, "variance"),
        epsilon=loss.pure_epsilon, method=plan.method, params=params, domain=grid, post_processing=post,
        variance_exact=False, detail=r, loss=loss, noise=noise)


UGRID = HistogramMethod("ugrid", UGRID_PARAMS, _plan_ugrid, named_by_measure(_release), measures=BOTH_MEASURES,
                        summary="2-D uniform grid sized from the total (Qardaji et al.)")
AGRID = HistogramMethod("agrid", AGRID_PARAMS, _plan_agrid, named_by_measure(_release), measures=BOTH_MEASURES,
                        summary="2-D adaptive two-level grid with constrained inference")
