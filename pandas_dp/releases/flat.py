"""``histogram``: flat releases over a public domain, and the registry of histogram methods.

Each method registers a :class:`HistogramMethod`: a ``validate`` step that
checks its keyword arguments against the public domain (before any charge)
and a ``release`` step that receives the exact counts, the epsilon already
charged and the rng, and returns a :class:`~pandas_dp.results.Histogram`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from ..domain import Grid, make_grid
from ..engines import engine_for
from ..errors import ParameterError
from ..noise import discrete_laplace, discrete_laplace_variance, noise_scale
from ..results.histogram import Histogram, as_series
from ._common import active_budget, charging, check_columns, check_epsilon, check_flag, check_rng

__all__ = ["HistogramMethod", "METHODS", "register_method", "histogram", "identity_release"]

Validator = Callable[[Grid, Mapping[str, Any], Fraction], dict]
Releaser = Callable[..., Histogram]


@dataclass(frozen=True)
class HistogramMethod:
    """A histogram method: argument validation (free) and the release (after the charge).

    ``validate(grid, kwargs, epsilon)`` returns the normalized method
    parameters or raises (it sees only public information: the domain, the
    knobs and epsilon); ``release(counts, grid, *, epsilon, rng, nonnegative,
    **params)`` draws the noise and returns the result. A validator may
    return ``method`` to name the method actually run (``"auto"`` does); it
    is what the ledger records.
    """

    name: str
    validate: Validator
    release: Releaser


METHODS: dict[str, HistogramMethod] = {}


def register_method(method: HistogramMethod) -> HistogramMethod:
    """Add a method to the registry used by ``histogram(method=...)``."""
    METHODS[method.name] = method
    return method


def no_extra_arguments(method: str) -> Validator:
    """A validator for methods without knobs: any extra keyword is an error."""

    def validate(grid: Grid, kwargs: Mapping[str, Any], epsilon: Fraction) -> dict:
        if kwargs:
            raise ParameterError(f"method={method!r} takes no parameters {sorted(kwargs)}. "
                                 f"Remove them or choose a method that uses them.")
        return {}

    return validate


def identity_release(counts: np.ndarray, grid: Grid, *, epsilon: Fraction, rng: np.random.Generator | None,
                     nonnegative: bool) -> Histogram:
    """The identity (flat) mechanism: one discrete Laplace draw of scale 1/epsilon per cell.

    Notes
    -----
    Adding or removing a row changes one cell by 1 (sensitivity 1), so noise
    with ``P(z) ∝ exp(-|z| / t)``, ``t = 1/epsilon``, gives epsilon-DP. The
    per-cell variance is ``2p / (1 - p)^2`` with ``p = exp(-1/t)``.
    ``nonnegative=True`` clips at 0 (post-processing), which biases small
    counts upwards; the reported variance is then that of the noise only.
    """
    scale = noise_scale(1, epsilon)
    flat = counts.reshape(-1)
    noisy = flat + discrete_laplace(scale, flat.size, rng=rng)
    post: tuple[str, ...] = ()
    if nonnegative:
        np.maximum(noisy, 0, out=noisy)
        post = ("clip at 0",)
    variance = np.full(flat.size, discrete_laplace_variance(scale))
    return Histogram(
        counts=as_series(noisy, grid, "estimate"),
        variance=as_series(variance, grid, "variance"),
        epsilon=float(epsilon),
        method="identity",
        params={"noise": "discrete Laplace", "sensitivity": 1, "noise_scale": str(scale),
                "nonnegative": nonnegative},
        domain=grid,
        post_processing=post,
        variance_exact=not nonnegative,
    )


register_method(HistogramMethod("identity", no_extra_arguments("identity"), identity_release))


def histogram(frame: pd.DataFrame, columns: Any, *, bins: Any = None, range: Any = None,
              categories: Any = None, epsilon: Any, method: str = "identity", rng: Any = None,
              nonnegative: bool = False, **method_params: Any) -> Histogram:
    """Release a DP histogram of ``frame[columns]`` over a public domain (see ``DataFrame.dp.histogram``)."""
    cols = check_columns(frame, columns)
    eps = check_epsilon(epsilon)
    generator = check_rng(rng)
    nonneg = check_flag(nonnegative, "nonnegative")
    if not isinstance(method, str) or method not in METHODS:
        raise ParameterError(f"The 'method' parameter of histogram must be one of {sorted(METHODS)}. "
                             f"Got {method!r}.")
    spec = METHODS[method]
    grid = make_grid(frame, cols, bins=bins, range=range, categories=categories)
    params = spec.validate(grid, method_params, eps)
    budget = active_budget()
    counts = engine_for(frame).bin_counts(frame, grid)
    ledger_params = {"shape": list(grid.shape), "nonnegative": nonneg, **params}
    label = f"histogram:{params.get('method', method)}"
    with charging(eps, method=label, columns=cols, params=ledger_params, budget=budget):
        return spec.release(counts, grid, epsilon=eps, rng=generator, nonnegative=nonneg, **params)


# Other histogram methods register themselves on import (kept last: they import this module).
from . import data_dependent as _data_dependent  # noqa: E402,F401  ("ahp", "dpcube", "auto")
