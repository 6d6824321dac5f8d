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
from typing import Any

import numpy as np

from pandas_dp.algorithms.marginals.measure import MarginalMeasurement
from pandas_dp.algorithms.marginals.ordered import AxisSplit, cell_variances
from pandas_dp.algorithms.marginals.plan import ResidualPlan, cell_coefficient
from pandas_dp.algorithms.marginals.workload import Marginal

__all__ = ["MarginalEstimates", "reconstruct"]


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
        strategies = self.plan.strategies
        for a in (s for k in range(len(key) + 1) for s in itertools.combinations(key, k)):
            comp = self.components[index[a]].reshape(tuple(sizes[i] if i in a else 1 for i in key))
            if strategies:
                # the total spreads along pi_i over every attribute the residual does not keep
                for axis, i in enumerate(key):
                    if i not in a:
                        view = [1] * len(key)
                        view[axis] = sizes[i]
                        spread = np.full(sizes[i], 1.0 / sizes[i]) if strategies[i] is None else strategies[i].pi
                        comp = comp * spread.reshape(view)
                out += comp
                continue
            spread_n = math.prod(sizes[i] for i in key if i not in a)
            out += comp / spread_n
        return out.transpose([key.index(i) for i in order]) if order != key else out

    def splits(self, attrs: Sequence[int]) -> tuple[AxisSplit, ...]:
        """Each attribute's split into total and zero-sum part (attribute order as given)."""
        sizes = self.plan.workload.sizes
        strategies = self.plan.strategies
        return tuple(AxisSplit.of(sizes[i], strategies[i] if strategies else None) for i in attrs)

    def subset_variances(self, attrs: Sequence[int]) -> tuple[float, ...]:
        """``V_B`` of every subset ``B`` of ``attrs``, indexed by its bit mask over ``attrs`` as given."""
        index = self.plan.workload.index
        order = tuple(attrs)
        return tuple(float(self.residual_variances[index[tuple(sorted(order[b] for b in range(len(order))
                                                                         if m >> b & 1))]])
                     for m in range(1 << len(order)))

    def variance(self, attrs: Sequence[int]) -> Any:
        """Exact variance of every cell of the marginal on ``attrs``: a float (the same in each cell), or,
        with an ordered attribute, an array of the marginal's shape (axes in the order given)."""
        key = tuple(sorted(attrs))
        self.plan.workload.check(key)
        if self.plan.strategies and any(self.plan.strategies[i] is not None for i in key):
            return cell_variances(self.subset_variances(tuple(attrs)), self.splits(tuple(attrs)))
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
    strategies = plan.strategies
    sizes = plan.workload.sizes
    # with ordered attributes: b_i for n_i, each measurement back to its cells first, the zero-sum part
    # along pi_i (:mod:`~pandas_dp.algorithms.marginals.ordered`); the cells' own are n_i and the mean
    b = [n if not strategies or strategies[i] is None else strategies[i].b for i, n in enumerate(sizes)]
    index = plan.workload.index
    acc = [np.zeros(tuple(sizes[i] for i in a)) for a in plan.residuals]
    taus = np.zeros(len(plan.residuals))
    for a, y, v in zip(plan.residuals, measurement.noisy, plan.effective_variances()):
        if y is None:
            continue
        cells = y.astype(np.float64)
        for axis, i in enumerate(a):
            if strategies and strategies[i] is not None:
                cells = strategies[i].back(cells, axis)
        for k in range(len(a) + 1):
            for sub in itertools.combinations(a, k):
                drop = tuple(axis for axis, i in enumerate(a) if i not in sub)
                weight = 1.0 / (v * math.prod(b[a[axis]] for axis in drop))
                j = index[sub]
                acc[j] += weight * (cells.sum(axis=drop) if drop else cells)
                taus[j] += weight
    components = [_zero_sum(total / tau, a, strategies) for a, total, tau in zip(plan.residuals, acc, taus)]
    return MarginalEstimates(plan=plan, components=tuple(components), residual_variances=1.0 / taus)


def _zero_sum(values: np.ndarray, attrs: Marginal, strategies: tuple[Any, ...]) -> np.ndarray:
    """The residual's part of a precision-weighted mean: along every axis the mean subtracted (the cells),
    or the total taken out along ``pi`` (an ordered attribute)."""
    out = values
    for axis, i in enumerate(attrs):
        if strategies and strategies[i] is not None:
            out = strategies[i].split(out, axis)
        else:
            out = out - out.mean(axis=axis, keepdims=True)
    return out
