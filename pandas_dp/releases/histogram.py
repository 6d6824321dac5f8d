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

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from .._rational import safe_repr
from ..domain import Grid, make_grid
from ..errors import ParameterError
from ..loss import UNIT, Noise, PrivacyLoss
from ..results.histogram import Histogram, as_series
from .params import ParamTable, check_columns, check_flag, check_rng
from .pipeline import Release, check_measure, privacy_loss, run

__all__ = ["HistogramMethod", "Planned", "METHODS", "register_method", "histogram", "histogram_release",
           "clip_at_zero", "BOTH_MEASURES"]


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
    draws the noise and wraps the result.
    """

    name: str
    params: ParamTable
    plan: Callable[[Grid, PrivacyLoss, dict[str, Any]], Planned]
    release: Callable[..., Histogram]
    measures: frozenset[str] = frozenset({"pure"})
    summary: str = ""


METHODS: dict[str, HistogramMethod] = {}


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


def plan_method(name: str, grid: Grid, loss: PrivacyLoss, knobs: Mapping[str, Any]) -> Planned:
    """Check a method's measure and knobs and plan it (public inputs only)."""
    spec = METHODS[name]
    check_measure(loss, spec.measures, f"method={name!r}")
    return spec.plan(grid, loss, spec.params.validate(knobs))


def clip_at_zero(values: np.ndarray) -> np.ndarray:
    """``max(values, 0)`` as floats: the non-negativity post-processing of flat estimates."""
    return np.maximum(values, 0.0)


def histogram_release(frame: Any, cols: list[Any], grid: Grid, loss: PrivacyLoss, planned: Planned, *,
                      rng: Any, nonnegative: bool, budget: Any = None) -> Histogram:
    """Run a planned histogram method through the pipeline (count the grid, charge, release)."""
    spec = METHODS[planned.method]
    ledger_params = {"shape": list(grid.shape), "nonnegative": nonnegative, **planned.knobs}
    return run(frame, Release(
        loss=loss, method=f"histogram:{planned.label or planned.method}", columns=cols, params=ledger_params,
        count=lambda engine: engine.bin_counts(frame, grid),
        mechanism=lambda counts: spec.release(counts, grid, planned, rng=rng, nonnegative=nonnegative, loss=loss),
        budget=budget))


def histogram(frame: pd.DataFrame, columns: Any, *, bins: Any = None, range: Any = None,
              categories: Any = None, epsilon: Any = None, rho: Any = None, method: str = "identity",
              rng: Any = None, nonnegative: bool = False, **method_params: Any) -> Histogram:
    """Release a DP histogram of ``frame[columns]`` over a public domain (see ``DataFrame.dp.histogram``)."""
    cols = check_columns(frame, columns)
    loss = privacy_loss(epsilon, rho)
    generator = check_rng(rng)
    nonneg = check_flag(nonnegative, "nonnegative")
    name = method_named(method)
    grid = make_grid(frame, cols, bins=bins, range=range, categories=categories)
    planned = plan_method(name, grid, loss, method_params)
    return histogram_release(frame, cols, grid, loss, planned, rng=generator, nonnegative=nonneg)


# ------------------------------------------------------------------------------------ identity

def _plan_identity(grid: Grid, loss: PrivacyLoss, knobs: dict[str, Any]) -> Planned:
    return Planned("identity", loss.noise(UNIT, what="the identity histogram"), knobs)


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
    noisy = noise.add(counts.reshape(-1), rng)
    post: tuple[str, ...] = ()
    if nonnegative:
        np.maximum(noisy, 0, out=noisy)
        post = ("clip at 0",)
    variance = np.full(noisy.size, noise.variance())
    described = noise.describe()
    return Histogram(
        counts=as_series(noisy, grid, "estimate"),
        variance=as_series(variance, grid, "variance"),
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
                                measures=BOTH_MEASURES, summary="one noise draw per cell"))

# Other histogram methods register themselves on import (kept last: they import this module).
from . import hierarchical as _hierarchical  # noqa: E402,F401  ("hierarchical")
from . import data_dependent as _data_dependent  # noqa: E402,F401  ("ahp", "dpcube", "auto")
