"""Measurement: exact integer noise on every marginal the plan measures.

Each marginal ``A`` with a positive share gets independent integer noise on
every cell, of the kind and scale the plan's part of the loss calibrates for
the marginal's sensitivity: exact discrete Gaussian ``N_Z(0, sigma_A**2)``,
``sigma_A**2 = Delta_2**2 / (2 rho_A)``, under zCDP (Canonne, Kamath, Steinke
2020, Theorem 14), exact discrete Laplace of scale ``Delta_1 / epsilon_A``
under pure DP. The marginals compose sequentially, so the release spends
``sum_A rho_A`` (``sum_A epsilon_A``), which is ``plan.loss``. Everything
after this step (the residual components, the reconstruction) reads only the
noisy marginals and public inputs: post-processing.

Why this and not noise on the residuals: the paper's cost ``p_A / (2 sigma_A**2)``
needs *continuous* noise with the residual's covariance; the module docstring
of :mod:`~pandas_dp.algorithms.marginals.plan` says what integer noise can
provably claim, and what it costs.

References
----------
.. [1] Y. Xiao, G. He, D. Zhang, D. Kifer. "An Optimal and Scalable Matrix
   Mechanism for Noisy Marginals under Convex Loss Functions", NeurIPS 2023.
.. [2] C. Canonne, G. Kamath, T. Steinke. "The Discrete Gaussian for
   Differential Privacy", NeurIPS 2020.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from pandas_dp.algorithms.marginals.plan import ResidualPlan
from pandas_dp.algorithms.marginals.workload import Marginal
from pandas_dp.privacy.loss import Noise

__all__ = ["MarginalMeasurement", "measure_marginals"]


@dataclass(frozen=True)
class MarginalMeasurement:
    """The noisy marginals of one release, aligned with the plan's closure.

    Attributes
    ----------
    plan : ResidualPlan
        The plan measured.
    noisy : tuple of ndarray or None
        ``int64`` noisy counts of every measured closure marginal (axes in attribute order; along an
        ordered attribute, its tree's weighted block counts, levels concatenated);
        ``None`` where the plan measures nothing.
    """

    plan: ResidualPlan
    noisy: tuple[np.ndarray | None, ...]


def through_strategies(counts: np.ndarray, attrs: Marginal, strategies: tuple[Any, ...],
                       offset: int = 0) -> np.ndarray:
    """The values measured of one exact marginal: its counts, or along every ordered attribute its tree's
    weighted block counts (:meth:`~pandas_dp.algorithms.marginals.ordered.TreeStrategy.measure`; int64).
    ``offset``: leading axes before the marginal's (the regions of a level)."""
    values = np.asarray(counts).astype(np.int64)
    for axis, i in enumerate(attrs):
        if strategies and strategies[i] is not None:
            values = strategies[i].measure(values, axis + offset)
    return values


def measure_marginals(marginals: Mapping[Marginal, np.ndarray], plan: ResidualPlan, *,
                      rng: Any = None) -> MarginalMeasurement:
    """Add the plan's noise to every marginal it measures.

    Parameters
    ----------
    marginals : mapping of Marginal to ndarray
        Exact integer counts of (at least) every measured closure marginal, axes in
        attribute order, e.g. from :func:`~pandas_dp.algorithms.marginals.counting.closure_marginals`.
    plan : ResidualPlan
        From :func:`~pandas_dp.algorithms.marginals.plan.plan_residuals`.
    rng : None, SecureRandom or numpy.random.Generator
        ``None``: the secure source; a seeded Generator for reproducible experiments
        (not for production). Marginals that get the same noise are noised in one
        draw, groups in order of their first marginal, cells in closure order.

    Returns
    -------
    MarginalMeasurement

    Raises
    ------
    ValueError
        When a measured marginal is missing or has the wrong shape (a programming error:
        counts come from the engine, on the public domain).

    Examples
    --------
    >>> from pandas_dp.algorithms.marginals.workload import make_workload
    >>> from pandas_dp.algorithms.marginals.plan import plan_residuals
    >>> from pandas_dp.privacy.loss import zcdp
    >>> plan = plan_residuals(make_workload([2, 2], [(0,), (1,)]), loss=zcdp(2))
    >>> m = measure_marginals({(): np.array(10), (0,): np.array([4, 6]), (1,): np.array([5, 5])}, plan,
    ...                       rng=np.random.default_rng(0))
    >>> [None if a is None else a.tolist() for a in m.noisy]
    [None, [4, 7], [5, 6]]
    """
    workload = plan.workload
    exact: dict[int, np.ndarray] = {}
    groups: dict[Noise, list[int]] = {}
    for k, (attrs, noise) in enumerate(zip(plan.residuals, plan.noises)):
        if noise is None:
            continue
        if attrs not in marginals:
            raise ValueError(f"the exact marginal on attributes {attrs} is missing")
        counts = np.asarray(marginals[attrs])
        if counts.shape != workload.shape(attrs):
            raise ValueError(f"the marginal on attributes {attrs} has shape {counts.shape}, "
                             f"expected {workload.shape(attrs)}")
        exact[k] = through_strategies(counts, attrs, plan.strategies)
        groups.setdefault(noise, []).append(k)
    noisy: list[np.ndarray | None] = [None] * len(plan.residuals)
    for noise, members in groups.items():
        # One sampler call per distinct noise (its set-up is paid once), cells in closure order.
        flat = np.concatenate([exact[k].astype(np.int64).ravel() for k in members])
        drawn = noise.add(flat, rng)
        ends = np.cumsum([exact[k].size for k in members])
        for k, piece in zip(members, np.split(drawn, ends[:-1])):
            noisy[k] = piece.reshape(exact[k].shape)
    return MarginalMeasurement(plan=plan, noisy=tuple(noisy))
