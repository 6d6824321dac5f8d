"""Reconstruction: every workload marginal, and any sub-marginal of one, from one estimate.

From the noisy marginals (:mod:`~pandas_dp.algorithms.marginals.measure`),
each residual component is estimated by generalized least squares in closed
form: for a residual ``A'``, every measured marginal ``A superset A'`` summed
down to ``A'`` measures the ``A'``-marginal with noise variance
``v_A prod_{i in A \\ A'} n_i`` per cell; the components of isotropic noise on
orthogonal residual ranges are uncorrelated, so the GLS estimate of the
component is the precision-weighted mean of these, projected
(``kron_{i in A'} P_i``, centring along every axis):

    hat{r}_{A'} = P_{A'} ( sum_A w_{A, A'} sum_{A \\ A'} y_A ) / tau_{A'},
    w_{A, A'} = 1 / (v_A prod_{i in A \\ A'} n_i),   tau_{A'} = sum_A w_{A, A'},

with variance ``V_{A'} = 1 / tau_{A'}`` (times ``P_{A'}``). The marginal on ``W``
is ``sum_{A' subset W} hat{r}_{A'}`` spread evenly over ``W \\ A'`` (Xiao et al.
2023, Section 4): only arrays of the marginals' own shapes, never a matrix or a
vector over the full domain. Every cell of it has the exact variance
``sum_{A' subset W} V_{A'} a(A', W)`` (:func:`~pandas_dp.algorithms.marginals.plan.cell_coefficient`),
with the exact variances of the integer noise drawn.

Consistency is exact by construction: summing the ``W`` estimate over an
attribute ``j`` removes every component with ``j in A'`` (they are centred
along ``j``) and leaves the others times ``n_j / n_j``: the estimate of
``W \\ {j}``. All tables share one total (the ``()`` component).

References
----------
.. [1] Y. Xiao, G. He, D. Zhang, D. Kifer. "An Optimal and Scalable Matrix
   Mechanism for Noisy Marginals under Convex Loss Functions", NeurIPS 2023.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pandas_dp.algorithms.marginals.measure import MarginalMeasurement
from pandas_dp.algorithms.marginals.plan import ResidualPlan, cell_coefficient
from pandas_dp.algorithms.marginals.workload import Marginal

__all__ = ["MarginalEstimates", "reconstruct"]


def _centre(values: np.ndarray) -> np.ndarray:
    """``kron P_i`` applied to an array: subtract the mean along every axis."""
    out = values
    for axis in range(values.ndim):
        out = out - out.mean(axis=axis, keepdims=True)
    return out


@dataclass(frozen=True)
class MarginalEstimates:
    """Consistent estimates of every marginal of the closure, with exact per-cell variances.

    Attributes
    ----------
    plan : ResidualPlan
        The plan measured.
    components : tuple of ndarray
        The GLS estimate of every residual component, as a centred array of the
        residual's marginal shape (closure order).
    residual_variances : ndarray
        ``V_A = 1 / tau_A`` of every residual, from the exact noise variances.
    """

    plan: ResidualPlan
    components: tuple[np.ndarray, ...]
    residual_variances: np.ndarray

    def marginal(self, attrs: Sequence[int]) -> np.ndarray:
        """The estimated marginal on ``attrs`` (axes in the order given; float64).

        Raises
        ------
        ParameterError
            When ``attrs`` is not a workload marginal or a sub-marginal of one.
        """
        order = tuple(attrs)
        key = tuple(sorted(order))
        self.plan.workload.check(key)
        sizes = self.plan.workload.sizes
        shape = tuple(sizes[i] for i in key)
        out = np.zeros(shape)
        index = self.plan.workload.index
        for a in (s for k in range(len(key) + 1) for s in itertools.combinations(key, k)):
            comp = self.components[index[a]]
            spread = math.prod(sizes[i] for i in key if i not in a)
            out += comp.reshape(tuple(sizes[i] if i in a else 1 for i in key)) / spread
        return out.transpose([key.index(i) for i in order]) if order != key else out

    def variance(self, attrs: Sequence[int]) -> float:
        """Exact variance of every cell of the marginal on ``attrs`` (the same in each cell)."""
        key = tuple(sorted(attrs))
        self.plan.workload.check(key)
        sizes = self.plan.workload.sizes
        index = self.plan.workload.index
        return math.fsum(float(self.residual_variances[index[a]]) * float(cell_coefficient(sizes, a, key))
                         for k in range(len(key) + 1) for a in itertools.combinations(key, k))

    def total(self) -> float:
        """The one estimated total every table shares."""
        return float(self.components[self.plan.residuals.index(())])


def reconstruct(measurement: MarginalMeasurement) -> MarginalEstimates:
    """Closed-form GLS estimates of every residual component (module docstring).

    Examples
    --------
    >>> from pandas_dp.algorithms.marginals.workload import make_workload
    >>> from pandas_dp.algorithms.marginals.plan import plan_residuals
    >>> from pandas_dp.algorithms.marginals.measure import measure_marginals
    >>> from pandas_dp.privacy.loss import zcdp
    >>> plan = plan_residuals(make_workload([2, 3], [(0, 1)]), loss=zcdp(1))
    >>> counts = np.array([[1, 2, 3], [4, 5, 6]])
    >>> est = reconstruct(measure_marginals({(0, 1): counts}, plan, rng=np.random.default_rng(1)))
    >>> est.marginal((0, 1)).sum(axis=1) - est.marginal((0,))
    array([0., 0.])
    >>> est.variance((0,)) == 3 * est.variance((0, 1))
    True
    """
    plan = measurement.plan
    sizes = plan.workload.sizes
    variances = plan.noise_variances()
    index = plan.workload.index
    acc = [np.zeros(tuple(sizes[i] for i in a)) for a in plan.residuals]
    taus = np.zeros(len(plan.residuals))
    for a, y, v in zip(plan.residuals, measurement.noisy, variances):
        if y is None:
            continue
        as_float = y.astype(np.float64)
        for k in range(len(a) + 1):
            for sub in itertools.combinations(a, k):
                drop = tuple(axis for axis, i in enumerate(a) if i not in sub)
                weight = 1.0 / (v * math.prod(sizes[a[axis]] for axis in drop))
                j = index[sub]
                acc[j] += weight * (as_float.sum(axis=drop) if drop else as_float)
                taus[j] += weight
    components = [_centre(total / tau) for total, tau in zip(acc, taus)]
    return MarginalEstimates(plan=plan, components=tuple(components), residual_variances=1.0 / taus)
