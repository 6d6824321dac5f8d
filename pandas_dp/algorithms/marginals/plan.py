"""ResidualPlanner's plan: how much of the privacy loss each marginal of the closure gets.

The plan reads public inputs only (domain sizes, the workload, per-table
weights, the loss, the privacy loss and the sensitivity of one marginal), so a
release can make it, and refuse an impossible one, before any budget is spent.

The residual basis
------------------
For an attribute of size ``n`` let ``P = I - J / n`` be the projection onto
vectors summing to zero (``J`` the all-ones matrix) and ``Sub`` the
``(n - 1) x n`` matrix with rows ``e_0 - e_k``, whose row space is the range of
``P``. The residual of a set ``A`` of attributes is ``R_A = (kron_{i in A} Sub_i) M_A``,
where ``M_A`` maps the data vector to its ``A``-marginal (Xiao et al. 2023,
Section 4). The ranges of the residuals are orthogonal, and the marginal on
``W`` is the sum over ``A subset W`` of the data's component in the range of
``R_A``, spread evenly over the attributes of ``W \\ A``:

    M_W x = sum_{A subset W} (kron_{i in A} P_i  kron_{i in W \\ A} 1 / n_i) M_A x.

A residual whose component is known with the variance ``V_A`` of an isotropic
noise on the ``A``-marginal, projected (covariance ``V_A kron_{i in A} P_i``:
the paper's ``sigma_A**2 (Sub Sub^T)^kron`` in ``Sub`` coordinates), adds to
every cell of the marginal on ``W superset A``

    V_A a(A, W),  a(A, W) = prod_{i in A} (n_i - 1) / n_i  prod_{i in W \\ A} 1 / n_i**2,

and ``V_A b(A, W)`` to the table's summed variance, ``b(A, W) = prod_{i in A} (n_i - 1) / prod_{i in W \\ A} n_i``.

The paper's program and its closed form
---------------------------------------
With continuous Gaussian noise measured directly on each residual, the
privacy cost is ``sum_A p_A / (2 sigma_A**2)`` (``p_A = prod_{i in A} (n_i - 1) / n_i``,
the largest squared Mahalanobis norm of a column of ``R_A``) and the loss
``"sum"`` (weighted sum of every workload cell's variance) is
``sum_A c_A sigma_A**2`` with ``c_A = sum_{W in workload, W superset A} w_W b(A, W)``.
Lagrange's conditions give ``sigma_A**2 ∝ sqrt(p_A / c_A)`` and the optimum
``(sum_A sqrt(p_A c_A))**2 / (2 rho)`` (Xiao et al. 2023, Theorem 5.2; optimal
among all Gaussian matrix mechanisms). :func:`closed_form_shares` computes it
exactly (integer roots on a ``2**-64`` grid; also the pure-DP analogue
``epsilon_A ∝ (c_A q_A)**(1/3)``) and :func:`gaussian_optimum` its value.

The privacy cost charged here, and the program solved
-----------------------------------------------------
That cost holds for *continuous* noise with the residual's covariance. The
integer noise here is exact discrete Gaussian (or discrete Laplace) noise,
independent on every cell of a marginal. Adding it to the ``A``-marginal and
projecting costs, by post-processing, only what the marginal measurement
costs: ``Delta_2**2 / (2 v_A)`` (``Delta_1 / t_A`` under pure DP), worse than
the paper's cost by ``prod_{i in A} n_i / (n_i - 1)``; and the projected
discrete Gaussian does not meet the paper's cost exactly
(``tests/algorithms/test_marginals_privacy.py`` computes the exact Renyi
divergence on a two-cell domain: it exceeds ``alpha p_A / (2 sigma**2)``). So
this module charges the cost it can prove and makes the most of it: the noisy
``A``-marginal is kept whole, and its components on every residual
``A' subset A`` are used, not only on ``A`` (the closed-form plan at this cost,
which discards them, loses 1.1x to 4.4x against the paper's optimum on all
k-way workloads; this program loses 1.04x to 1.46x).

Under pure DP the same holds for L1: one row moves the ``A``-marginal by 1 in
L1, while the residual query moves by ``prod_{i in A} (n_i - 1)`` in ``Sub``
coordinates (the column of ``e_0``) and by ``prod_{i in A} 2 (n_i - 1) / n_i``
projected, both at least 1; so measuring the marginal with discrete Laplace
noise of scale ``Delta_1 / epsilon_A`` is never worse than noising a residual
with its own L1 sensitivity (Barak et al. 2007 noise Fourier coefficients the
same way, with one Laplace scale for all; here the scales are optimised).

Marginal ``A`` of the closure gets a part ``s_A`` of the loss (``sum_A s_A = 1``,
sequential composition) and noise of variance ``v_A = k s_A**(-e)``: zCDP
(discrete Gaussian, ``e = 1``, ``k = Delta_2**2 / (2 rho)``) or pure DP (discrete
Laplace, ``e = 2``, ``k = 2 Delta_1**2 / epsilon**2``, the continuous variance
used for planning). Summed down to ``A' subset A`` its noise has variance
``v_A prod_{i in A \\ A'} n_i`` per cell, so residual ``A'`` is known with
precision

    tau_{A'} = sum_{A superset A'} 1 / (v_A prod_{i in A \\ A'} n_i)

(generalized least squares: the residual components are orthogonal and the
noise isotropic), and ``V_{A'} = 1 / tau_{A'}``. The loss ``"sum"`` is
``sum_{A'} c_{A'} / tau_{A'}`` and ``"max"`` is ``max_W w_W sum_{A' subset W} a(A', W) / tau_{A'}``.
Under zCDP the precisions ``1 / v_A`` are linear in the shares, so both losses
are convex in ``s`` (``1 / tau`` is convex in the linear ``tau``) and the
optimum is global. Under pure DP they are quadratic (``epsilon_A**2``): the
program is not convex (splitting one marginal's epsilon in two halves its
precision), and the solver returns the local optimum reached from the closed
form (the tests compare it with a multi-start brute force on tiny domains).

The same plan on every machine
------------------------------
A seeded release must be the same on every machine, so no float iteration whose
last bits depend on the CPU may decide a noise scale. The solvers here use only
operations IEEE 754 fixes bit for bit: elementwise ``+ - * /``, ``np.sqrt``,
comparisons, ``np.maximum``/``np.where``, ``np.frexp``/``np.ldexp`` (exact), sparse products as ``np.bincount`` with
weights (one sequential loop in index order) and sums as ``math.fsum`` (exactly
rounded); no BLAS product, LAPACK solve, libm ``exp``/``log``/``pow`` or scipy
solver. So every machine computes the same float shares, bit for bit, and the
grid below gives the same exact plan (``tests/algorithms/test_marginals_plan_exact.py``
fails if the planner calls any of those and pins the exact shares of small plans).

* zCDP ``"sum"``, with ``u = s`` and ``h = T^T (c / tau**2)`` (``-h`` is the gradient):
  ``f(u) - f* <= max_A h_A - f(u)`` (the Frank-Wolfe duality gap, as ``u . h = f``),
  the certificate the solver stops on (at ``4e-15`` of ``f``). From the closed form
  (``sqrt(c_A)``), 100 steps of the multiplicative algorithm of optimal design
  (Silvey, Titterington & Torsney 1978; Yu 2010), ``u_A <- u_A sqrt(h_A / f)``; then
  Newton's method with an active set: the Newton step on the positive shares, by
  conjugate gradients projected on ``sum d = 0`` (diagonal preconditioner; products
  by ``np.bincount``, inner products by ``math.fsum``), shortened so no share goes
  negative (a share the step drives to 0 leaves the set; a maximal marginal never
  does), backtracking (Armijo). A zero share with ``h_A > f`` fails the certificate
  and gets a share back. Where the optimum is degenerate (a zero share with
  ``h_A = f``: the gap cannot tell a small share from 0), the shares below ``2**-16``
  with ``h_A <= f`` are dropped and the solve repeated, kept if the loss rises by at
  most ``1e-12`` of itself.
* Pure DP ``"sum"`` (``u = s**2``, not convex): ``d_A = s_A h_A`` averages ``f`` under
  the weights ``s``, and the stationary points are those with ``d_A = f`` on the
  support; the multiplicative step ``s_A <- s_A (d_A / f)**(1/4)`` (two square roots)
  from the closed form (cube roots by Newton's iteration from a power of two above
  them) until ``max_A d_A / f - 1 <= 4e-15``. Shares that should be 0 go there doubly
  exponentially, but a zero share is also always a local optimum (its step carries a
  factor ``s_A``), and a stationary point can be beaten by measuring a marginal fewer:
  a search over supports then sets each of the 16 smallest positive non-maximal shares
  to 0 in turn, reruns the steps and keeps the best if it lowers the loss (at most 8
  rounds).
* ``"max"``: ``max_W V_W(s)`` is ``max_lambda sum_W lambda_W V_W(s)`` over table weights
  ``lambda`` on the simplex, and for fixed ``lambda`` the inner problem is the ``"sum"``
  program with ``c = m^T lambda``. Each round solves it (warm start: 20 multiplicative
  steps then Newton under zCDP, 200 steps under pure DP) and re-weights
  ``lambda_W <- lambda_W V_W / sum lambda V``. Under zCDP (convex in ``s``, linear in
  ``lambda``) the inner optimum less its gap bounds the optimum from below, so the
  rounds stop when the best max seen is within ``1e-6`` of that bound; under pure DP
  when the best max has not fallen by ``1e-6`` in 20 rounds; at most 300 rounds. The
  rounds start from the ``"sum"`` plan (zCDP) or the closed form (pure DP, so that
  every marginal can take a share), and the ``"sum"`` plan is a candidate too.

The float shares are rounded down to the grid ``2**-32`` (exact rationals,
renormalised exactly; a maximal marginal keeps at least one step), then become
multiples of ``2**-40`` (:data:`~pandas_dp.privacy.loss.SHARE_GRID`); the parts
never add up to more than the loss asked for. Measured against the former float
solvers (L-BFGS-B + Newton, SLSQP) on all 2-way and 3-way workloads of 8 attributes:
the same ``"sum"`` total variance (to 1e-15), ``"max"`` within ``8e-7``, pure DP within
``4e-9`` (``benchmarks/bench_marginals.py``); on small weighted workloads the pure-DP plans
are often better (up to 2x lower loss), where the former local solver stopped at a worse support.

References
----------
.. [1] Y. Xiao, G. He, D. Zhang, D. Kifer. "An Optimal and Scalable Matrix
   Mechanism for Noisy Marginals under Convex Loss Functions", NeurIPS 2023.
.. [2] G. He, Y. Xiao, L. Toksoz, Z. Ding, D. Zhang, D. Kifer. "ResidualPlanner+:
   a scalable matrix mechanism for marginals and beyond", arXiv:2305.08175.
.. [3] C. Canonne, G. Kamath, T. Steinke. "The Discrete Gaussian for
   Differential Privacy", NeurIPS 2020.
.. [4] B. Barak, K. Chaudhuri, C. Dwork, S. Kale, F. McSherry, K. Talwar.
   "Privacy, Accuracy, and Consistency Too: A Holistic Solution to Contingency
   Table Release", PODS 2007.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from pandas_dp._utils.rational import safe_repr, to_fraction
from pandas_dp.algorithms.marginals.ordered import choose_strategy
from pandas_dp.algorithms.marginals.workload import Marginal, Workload
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import SHARE_GRID, UNIT, Noise, PrivacyLoss, Sensitivity

__all__ = ["ResidualPlan", "plan_residuals", "ordered_strategies", "strategy_norm", "strategy_sensitivity", "cell_coefficient", "table_coefficient", "loss_coefficients",
           "coverage", "closed_form_shares", "gaussian_optimum", "Objective"]

Objective = Literal["sum", "max"]

#: Bits of the exact integer roots of the closed form.
_ROOT_BITS = 64
#: Grid of the float solution of the convex programs.
_SOLVE_GRID = 1 << 32
#: The solvers' constants (module docstring): every one fixes a deterministic rule.
#: zCDP "sum": stop when the Frank-Wolfe gap is at most this times the loss.
_SUM_TOL = 4e-15
#: Armijo's test allows a rise of this times the loss (the rounding of ``f`` itself).
_ROUNDING = 2.0 ** -50
#: Multiplicative warm-up steps before Newton (a plan; a round of "max").
_WARM_STEPS = 100
_ROUND_WARM_STEPS = 20
#: Newton steps, halvings of one step, conjugate-gradient steps and their relative tolerance.
_NEWTON_STEPS = 100
_LINE_STEPS = 40
_CG_STEPS = 500
_CG_TOL = 1e-10
#: A zero share given back when the certificate fails: this times the largest share.
_REVIVE = 1e-3
#: Shares below this (far below the grid) whose gradient pushes them down leave the active set.
_PRUNE = 2.0 ** -40
#: Degenerate zeros: shares below this are dropped when it costs at most _DROP_TOL of the loss.
_DROP = 2.0 ** -16
_DROP_TOL = 1e-12
#: Newton steps of the cube root of the pure-DP closed form.
_CBRT_STEPS = 12
#: Pure DP "sum": multiplicative steps (a plan; a round of "max"), stopping at _SUM_TOL too.
_PURE_STEPS = 20000
_PURE_ROUND_STEPS = 200
#: Pure DP: rounds of the search over supports, and the shares tried in each.
_PURE_DROP_ROUNDS = 8
_PURE_DROP_CANDIDATES = 16
#: "max": stop when the best max and the dual bound agree to this; at most this many rounds.
_MAX_TOL = 1e-6
_MAX_ROUNDS = 300
_MAX_PATIENCE = 20


def _is_subset(a: Marginal, w: Marginal) -> bool:
    return set(a) <= set(w)


def cell_coefficient(sizes: Sequence[int], a: Marginal, w: Marginal) -> Fraction:
    """``a(A, W)``: variance of one cell of the ``W`` marginal per unit of residual ``A``'s variance.

    ``prod_{i in A} (n_i - 1) / n_i * prod_{i in W \\ A} 1 / n_i**2`` (module docstring); 0 unless ``A subset W``.
    """
    if not _is_subset(a, w):
        return Fraction(0)
    out = Fraction(1)
    for i in w:
        out *= Fraction(sizes[i] - 1, sizes[i]) if i in a else Fraction(1, sizes[i] ** 2)
    return out


def table_coefficient(sizes: Sequence[int], a: Marginal, w: Marginal) -> Fraction:
    """``b(A, W)``: summed cell variance of the ``W`` marginal per unit of residual ``A``'s variance."""
    return cell_coefficient(sizes, a, w) * math.prod(sizes[i] for i in w)


def _cell_float(sizes: Sequence[int], a: Marginal, w: Marginal) -> float:
    """``a(A, W)`` as a float for ``A subset W`` (the same products as :func:`cell_coefficient`, rounded)."""
    out = 1.0
    for i in w:
        n = sizes[i]
        out *= (n - 1) / n if i in a else 1.0 / (n * n)
    return out


def _loss_floats(workload: Workload, weights: Sequence[Fraction]) -> np.ndarray:
    """``c_A`` as floats (the plan's solver works in floats; :func:`loss_coefficients` is exact)."""
    c = np.zeros(len(workload.closure))
    for w, weight in zip(workload.tables, weights):
        cells = float(workload.cells(w))
        wt = float(weight)
        for a in _subsets(w):
            c[workload.index[a]] += wt * cells * _cell_float(workload.sizes, a, w)
    return c


def loss_coefficients(workload: Workload, weights: Sequence[Fraction]) -> tuple[Fraction, ...]:
    """``c_A = sum_{W superset A} w_W b(A, W)`` for every residual of the closure (exact)."""
    index = {a: k for k, a in enumerate(workload.closure)}
    c = [Fraction(0)] * len(index)
    for w, weight in zip(workload.tables, weights):
        for a in _subsets(w):
            c[index[a]] += weight * table_coefficient(workload.sizes, a, w)
    return tuple(c)


def coverage(workload: Workload) -> Any:
    """Sparse ``T`` with ``T[A', A] = 1 / prod_{i in A \\ A'} n_i`` for ``A' subset A`` (closure order).

    ``tau = T @ (1 / v)`` are the residuals' precisions when marginal ``A`` is measured with
    variance ``v_A`` (module docstring).
    """
    from scipy.sparse import csr_matrix

    entries = _coverage_entries(workload)
    return csr_matrix((entries.vals, (entries.rows, entries.cols)), shape=entries.shape)


def _subsets(attrs: Marginal) -> list[Marginal]:
    import itertools

    return [s for k in range(len(attrs) + 1) for s in itertools.combinations(attrs, k)]


def _iroot(n: int, r: int) -> int:
    """``floor(n ** (1 / r))`` exactly for an integer ``n >= 0``."""
    if r == 2:
        return math.isqrt(n)
    if n < 2:
        return n
    x = 1 << -(-n.bit_length() // r)  # above the root
    while True:
        y = ((r - 1) * x + n // x ** (r - 1)) // r
        if y >= x:
            break
        x = y
    while x ** r > n:
        x -= 1
    while (x + 1) ** r <= n:
        x += 1
    return x


def closed_form_shares(coefficients: Sequence[Fraction], exponent: int) -> tuple[Fraction, ...]:
    """Exact shares ``s_A ∝ x_A ** (1 / (exponent + 1))`` (the closed form; roots on a ``2**-64`` grid).

    ``x_A = c_A q_A`` are exact rationals (``q_A`` the residual's privacy cost factor;
    module docstring); zero coefficients get zero shares. The shares are exact
    rationals summing to exactly 1, the same on every machine.

    Examples
    --------
    >>> [str(s) for s in closed_form_shares([Fraction(1), Fraction(4)], 1)]
    ['1/3', '2/3']
    """
    r = exponent + 1
    roots = []
    for x in coefficients:
        x = Fraction(x)
        # floor(root(num / den) * 2**K) = floor(root(num den**(r-1) 2**(rK)) / den)
        roots.append(_iroot(x.numerator * x.denominator ** (r - 1) << (r * _ROOT_BITS), r) // x.denominator)
    total = sum(roots)
    if total == 0:
        raise ParameterError("The workload has no cell to measure: every marginal involves only attributes of "
                             "domain size 1. Pass a workload with an attribute of at least 2 values.")
    return tuple(Fraction(v, total) for v in roots)


@dataclass(frozen=True)
class ResidualPlan:
    """The public part of a ResidualPlanner release: the loss and noise of every marginal measured.

    Attributes
    ----------
    workload : Workload
        Domain sizes, workload marginals and their closure (the residuals, in this order).
    objective : {"sum", "max"}
        The loss the plan minimises.
    weights : tuple of Fraction
        Per workload marginal (exact, positive).
    sensitivity : Sensitivity
        How far one privacy unit moves one marginal (every marginal of the closure).
    loss : PrivacyLoss
        What the release spends: the sum of ``losses`` (at most the loss asked for).
    shares : tuple of Fraction
        Each closure marginal's share of the loss (multiples of ``2**-40``; 0: not measured).
    losses : tuple of PrivacyLoss
        Each closure marginal's part of the loss.
    noises : tuple of Noise or None
        The integer noise added to every cell of each measured marginal (``None``: not measured).
    strategies : tuple
        Per attribute, the :class:`~pandas_dp.algorithms.marginals.ordered.TreeStrategy` an ordered
        attribute is measured by, or None (its cells); empty when no attribute is ordered.
    """

    workload: Workload
    objective: Objective
    weights: tuple[Fraction, ...]
    sensitivity: Sensitivity
    loss: PrivacyLoss
    shares: tuple[Fraction, ...]
    losses: tuple[PrivacyLoss, ...]
    noises: tuple[Noise | None, ...]
    strategies: tuple[Any, ...] = ()

    @property
    def residuals(self) -> tuple[Marginal, ...]:
        """The residuals (the workload's downward closure; also the marginals that may be measured)."""
        return self.workload.closure

    @property
    def measured(self) -> tuple[Marginal, ...]:
        """The marginals that get noise (a positive share)."""
        return tuple(a for a, n in zip(self.residuals, self.noises) if n is not None)

    def noise_variances(self) -> np.ndarray:
        """Exact variance of the noise on one cell of each closure marginal (``inf``: not measured)."""
        return np.array([np.inf if n is None else n.variance() for n in self.noises])

    def effective_variances(self) -> np.ndarray:
        """Exact noise variance of each measured marginal per unit of its normalised strategy
        (``v_A / prod_{i in A} F_i``; the noise variance itself when no attribute is ordered)."""
        v = self.noise_variances()
        if not self.strategies:
            return v
        return v / np.array([float(strategy_norm(self.strategies, a)) for a in self.residuals])

    def planning_variances(self) -> np.ndarray:
        """The continuous variances the plan was optimised with (``inf``: not measured)."""
        full = self.loss.planning_variance(1.0, self.sensitivity)
        e = self.loss.variance_exponent
        total = float(sum(self.shares))
        return np.array([np.inf if s == 0 else full * (float(s) / total) ** (-e) for s in self.shares])

    def residual_variances(self, variances: np.ndarray | None = None) -> np.ndarray:
        """``V_A = 1 / tau_A`` of every residual, from measured variances (exact noise variances by default)."""
        v = self.effective_variances() if variances is None else np.asarray(variances, dtype=np.float64)
        if self.strategies:
            return 1.0 / _general_coverage(self.workload, _factors(self.workload, self.strategies)).matvec(1.0 / v)
        return 1.0 / (coverage(self.workload) @ (1.0 / v))

    def cell_variance(self, attrs: Marginal, variances: np.ndarray | None = None) -> float:
        """Variance of every cell of the marginal on ``attrs`` (a workload marginal or a sub-marginal of one)."""
        attrs = tuple(sorted(attrs))
        self.workload.check(attrs)
        if self.strategies:
            return _query_variance(self.workload, _factors(self.workload, self.strategies),
                                   self.residual_variances(variances), attrs)
        return _cell_variance(self.workload, self.residual_variances(variances), attrs)

    def table_variances(self, variances: np.ndarray | None = None) -> np.ndarray:
        """Per-cell variance of every workload marginal (exact noise variances by default)."""
        r = self.residual_variances(variances)
        if self.strategies:
            f = _factors(self.workload, self.strategies)
            return np.array([_query_variance(self.workload, f, r, w) for w in self.workload.tables])
        return _table_variances(self.workload, r)

    def total_variance(self, *, planning: bool = False) -> float:
        """The loss ``"sum"``: weighted sum over the workload of every cell's variance.

        ``planning=True`` uses the continuous variances the plan optimised (to compare with
        the program's optimum); the default, the exact variances of the integer noise.
        """
        t = self.table_variances(self.planning_variances() if planning else None)
        cells = np.array([self.workload.cells(w) for w in self.workload.tables], dtype=np.float64)
        if self.strategies:
            q = _factors(self.workload, self.strategies).q
            cells = np.array([math.prod(q[i] for i in w) for w in self.workload.tables], dtype=np.float64)
        return float((np.array([float(w) for w in self.weights]) * cells * t).sum())

    def max_variance(self, *, planning: bool = False) -> float:
        """The loss ``"max"``: the largest weighted cell variance over the workload."""
        t = self.table_variances(self.planning_variances() if planning else None)
        return float((np.array([float(w) for w in self.weights]) * t).max())

    def loss_shares(self) -> np.ndarray:
        """Each residual's share of the ``"sum"`` loss (planning variances; sums to 1)."""
        c = _general_loss(self.workload, self.weights, _factors(self.workload, self.strategies)) \
            if self.strategies else _loss_floats(self.workload, self.weights)
        part = c * self.residual_variances(self.planning_variances())
        return part / part.sum()

    def describe(self) -> list[dict[str, Any]]:
        """JSON-friendly record of every closure marginal: attributes, share of the loss, noise."""
        out = [{"marginal": list(a), "share": str(s), "noise": None if n is None else n.describe()}
               for a, s, n in zip(self.residuals, self.shares, self.noises)]
        if self.strategies:
            for row, a in zip(out, self.residuals):
                row["strategy"] = {str(i): self.strategies[i].describe() for i in a
                                   if self.strategies[i] is not None}
        return out


def _cell_variance(workload: Workload, residual_variances: np.ndarray, attrs: Marginal) -> float:
    """``sum_{A' subset W} V_A' a(A', W)`` for the closure marginal ``W = attrs`` (sorted)."""
    index = workload.index
    return math.fsum(float(residual_variances[index[a]]) * _cell_float(workload.sizes, a, attrs)
                     for a in _subsets(attrs))


def _table_variances(workload: Workload, residual_variances: np.ndarray) -> np.ndarray:
    return np.array([_cell_variance(workload, residual_variances, w) for w in workload.tables])


@dataclass(frozen=True)
class _Factors:
    """Per attribute: ``b`` (the total's variance factor), ``t`` and ``u`` (the workload's summed variance per
    unit of residual variance on the zero-sum part and on the total, for an ordered attribute scaled to its
    ``n`` cells: ``n / q`` times that of its ``q`` queries) and ``q`` (``n``); the cells give
    ``n, n - 1, 1 / n, n`` (:mod:`~pandas_dp.algorithms.marginals.ordered`)."""

    b: tuple[float, ...]
    t: tuple[float, ...]
    u: tuple[float, ...]
    q: tuple[int, ...]


@functools.lru_cache(maxsize=64)
def _factors(workload: Workload, strategies: tuple[Any, ...]) -> _Factors:
    """Public inputs only, asked by every variance of a plan: computed once per (workload, trees)."""
    return _attribute_factors(workload, strategies)


def _attribute_factors(workload: Workload, strategies: Sequence[Any]) -> _Factors:
    b, t, u, q = [], [], [], []
    for i, n in enumerate(workload.sizes):
        strategy = strategies[i] if strategies else None
        if strategy is None:
            b.append(float(n))
            t.append(float(n - 1))
            u.append(1.0 / n)
            q.append(n)
            continue
        # an ordered attribute counts as its n cells, its loss (the mean variance of its ranges plus lambda
        # times its cells') scaled so that its cells measured alone would give n, as a categorical
        # attribute's do: a table weighs by its cells and by its error relative to measuring them, whatever
        # is asked of it (a table of all ranges over 100 ages would otherwise outweigh one of 100 cells
        # 50 to 1 by count, and a range's variance, longer than a cell's, again by scale)
        gram = workload.queries(i).mixed_gram(strategy.cells_weight)
        scale = n / math.fsum(np.diag(gram).tolist())
        ti, ui = strategy.factors(gram)
        b.append(strategy.b)
        t.append(ti * scale)
        u.append(ui * scale)
        q.append(n)
    return _Factors(tuple(b), tuple(t), tuple(u), tuple(q))


def strategy_norm(strategies: Sequence[Any], attrs: Marginal) -> int:
    """``prod_{i in attrs} F_i``: the measured values' noise variance per unit of the normalised strategy."""
    return math.prod(strategies[i].norm for i in attrs if strategies and strategies[i] is not None)


def strategy_sensitivity(sensitivity: Sensitivity, strategies: Sequence[Any], attrs: Marginal) -> Sensitivity:
    """The sensitivity of marginal ``attrs`` measured through the attributes' strategies (L1 times
    ``prod sum w``, squared L2 times ``prod sum w**2``: every level partitions its attribute)."""
    used = [strategies[i] for i in attrs if strategies and strategies[i] is not None]
    if not used:
        return sensitivity
    return Sensitivity(sensitivity.l1 * math.prod(s.l1 for s in used),
                       sensitivity.l2_squared * math.prod(s.l2_squared for s in used))


def _general_coverage(workload: Workload, f: _Factors) -> _Sparse:
    """``T[A', A] = 1 / prod_{i in A \\ A'} b_i`` (:func:`coverage` with ``b_i`` for ``n_i``)."""
    return _coverage_entries(workload, f.b)


def _general_loss(workload: Workload, weights: Sequence[Fraction], f: _Factors) -> np.ndarray:
    """``c_{A'} = sum_{W superset A'} w_W prod_{i in A'} t_i prod_{i in W \\ A'} u_i``."""
    c = np.zeros(len(workload.closure))
    for w, weight in zip(workload.tables, weights):
        for a in _subsets(w):
            c[workload.index[a]] += float(weight) * math.prod(f.t[i] if i in a else f.u[i] for i in w)
    return c


def _general_cells(workload: Workload, weights: Sequence[Fraction], f: _Factors) -> _Sparse:
    """``m[W, A']``: table ``W``'s weighted mean query variance per unit of residual ``A'``'s variance."""
    rows, cols, vals = [], [], []
    for j, (w, wt) in enumerate(zip(workload.tables, weights)):
        for a in _subsets(w):
            rows.append(j)
            cols.append(workload.index[a])
            vals.append(float(wt) * math.prod((f.t[i] if i in a else f.u[i]) / f.q[i] for i in w))
    return _Sparse(np.array(rows, dtype=np.intp), np.array(cols, dtype=np.intp), np.array(vals),
                   (len(workload.tables), len(workload.closure)))


def _query_variance(workload: Workload, f: _Factors, residual_variances: np.ndarray, attrs: Marginal) -> float:
    """Mean variance of the queries asked of the closure marginal ``attrs`` (its cells' for categorical ones)."""
    index = workload.index
    return math.fsum(float(residual_variances[index[a]]) * math.prod(
        (f.t[i] if i in a else f.u[i]) / f.q[i] for i in attrs) for a in _subsets(attrs))


def _weights(workload: Workload, weights: Sequence[Any] | None) -> tuple[Fraction, ...]:
    if weights is None:
        return (Fraction(1),) * len(workload.tables)
    if isinstance(weights, (str, bytes)) or not hasattr(weights, "__iter__"):
        raise ParameterError(f"The 'weights' parameter must be a sequence of positive numbers, one per workload "
                             f"marginal. Got {safe_repr(weights)}.")
    values = list(weights)
    if len(values) != len(workload.tables):
        raise ParameterError(f"The 'weights' parameter must give one positive weight per workload marginal "
                             f"({len(workload.tables)}). Got {len(values)}: {safe_repr(values)}.")
    return tuple(to_fraction(v, name="weights") for v in values)


class _Sparse:
    """A sparse matrix as ``(rows, cols, vals)`` whose products are fixed bit for bit.

    ``np.bincount`` with weights adds in index order (one sequential C loop) and the
    elementwise ``*`` is correctly rounded, so ``matvec``/``rmatvec`` give the same bits on
    every IEEE-754 machine (a BLAS or scipy.sparse kernel may reorder the sums).
    """

    def __init__(self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, shape: tuple[int, int]) -> None:
        self.rows, self.cols, self.vals, self.shape = rows, cols, vals, shape

    def matvec(self, x: np.ndarray) -> np.ndarray:
        return np.bincount(self.rows, weights=self.vals * x[self.cols], minlength=self.shape[0])

    def rmatvec(self, y: np.ndarray) -> np.ndarray:
        return np.bincount(self.cols, weights=self.vals * y[self.rows], minlength=self.shape[1])


def _coverage_entries(workload: Workload, b: Sequence[float] | None = None) -> _Sparse:
    """:func:`coverage` as a :class:`_Sparse` (``T[A', A] = 1 / prod_{i in A \\ A'} n_i``; ``b_i`` for ``n_i``
    when given: ordered attributes)."""
    index = workload.index
    sizes: Sequence[float] = workload.sizes if b is None else b
    rows, cols, vals = [], [], []
    for a in workload.closure:
        for sub in _subsets(a):
            rows.append(index[sub])
            cols.append(index[a])
            vals.append(1.0 / math.prod(sizes[i] for i in a if i not in sub))
    n = len(index)
    return _Sparse(np.array(rows, dtype=np.intp), np.array(cols, dtype=np.intp), np.array(vals), (n, n))


def _cell_entries(workload: Workload, weights: Sequence[Fraction]) -> _Sparse:
    """``m[W, A'] = w_W a(A', W)``: weighted cell variance of table ``W`` per unit of residual ``A'``'s variance."""
    rows, cols, vals = [], [], []
    for j, (w, wt) in enumerate(zip(workload.tables, weights)):
        for a in _subsets(w):
            rows.append(j)
            cols.append(workload.index[a])
            vals.append(float(wt) * _cell_float(workload.sizes, a, w))
    return _Sparse(np.array(rows, dtype=np.intp), np.array(cols, dtype=np.intp), np.array(vals),
                   (len(workload.tables), len(workload.closure)))


def _fsum(x: np.ndarray) -> float:
    """Exactly rounded sum (``math.fsum``): the same on every machine, whatever the order."""
    return math.fsum(x.tolist())


def _dot(x: np.ndarray, y: np.ndarray) -> float:
    """``x . y`` as the exactly rounded sum of the correctly rounded products."""
    return math.fsum((x * y).tolist())


def _closed_form_floats(c: np.ndarray, exponent: int) -> np.ndarray:
    """``c ** (1 / (exponent + 1))`` with exact operations: ``np.sqrt``, or Newton's iteration for the cube root.

    The cube root (pure DP) starts at ``2**ceil(k / 3)`` for ``c = m 2**k`` (``np.frexp``, exact),
    within a factor 2 above the root, and takes :data:`_CBRT_STEPS` steps of
    ``x <- (2 x + c / x**2) / 3`` (convex: the iterates decrease to the root, quadratically).
    """
    if exponent == 1:
        return np.sqrt(c)
    _, k = np.frexp(c)
    x = np.ldexp(1.0, -(-k // 3))
    for _ in range(_CBRT_STEPS):
        x = (2.0 * x + c / (x * x)) / 3.0
    return np.where(c > 0.0, x, 0.0)


def _evaluate(t: _Sparse, c: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
    """``tau = T u``, ``f = sum c / tau`` and ``h = T^T (c / tau**2)`` (minus the gradient of ``f`` in ``u``)."""
    tau = t.matvec(u)
    q = c / tau
    return tau, _fsum(q), t.rmatvec(q / tau)


def _newton_direction(t: _Sparse, c: np.ndarray, tau: np.ndarray, h: np.ndarray, f: float,
                      free: np.ndarray) -> np.ndarray:
    """Newton's step for ``f(u) = sum c / (T u)`` on the shares ``free``, keeping ``sum u`` fixed.

    Minimises ``(f - h) . d + d . H d / 2`` over ``d`` with ``sum d = 0`` and ``d = 0`` off ``free``
    (``H = T^T diag(2 c / tau**3) T``, the Hessian) by conjugate gradients projected on the
    constraint with a diagonal preconditioner (Gould, Hribar & Nocedal 2001). Products
    with ``T`` are :class:`_Sparse` ones and every inner product is a :func:`_dot`, so
    the step is the same bits on every machine.
    """
    curv = 2.0 * c / (tau * tau * tau)
    diag = np.bincount(t.cols, weights=t.vals * t.vals * curv[t.rows], minlength=t.shape[1])
    floor = float(diag.max()) * 1e-300
    minv = np.where(free, 1.0 / np.maximum(diag, floor), 0.0)
    minv_total = _fsum(minv)

    def project(r: np.ndarray) -> np.ndarray:
        z = minv * r
        return z - minv * (_fsum(z) / minv_total)

    def hess(p: np.ndarray) -> np.ndarray:
        return np.where(free, t.rmatvec(curv * t.matvec(p)), 0.0)

    d = np.zeros_like(h)
    # The gradient of the quadratic model at d = 0, less f on every share (u . h = f): the
    # constraint ignores a constant, and without it the projection would cancel catastrophically.
    r = np.where(free, f - h, 0.0)
    z = project(r)
    p = -z
    rz = _dot(r, z)
    stop = rz * _CG_TOL ** 2
    for _ in range(_CG_STEPS):
        if rz <= stop:
            break
        hp = hess(p)
        php = _dot(p, hp)
        if not php > 0.0:
            break
        a = rz / php
        d = d + a * p
        r = r + a * hp
        z = project(r)
        rz_next = _dot(r, z)
        p = -z + (rz_next / rz) * p
        rz = rz_next
    count = int(np.count_nonzero(free))
    return np.where(free, d - _fsum(d) / count, 0.0)


def _multiplicative(u: np.ndarray, h: np.ndarray, f: float) -> np.ndarray:
    """One step of the multiplicative algorithm, ``u_A <- u_A sqrt(h_A / f)``, renormalised (Yu 2010)."""
    u = u * np.sqrt(h / f)
    return u / _fsum(u)


def _zcdp_sum(t: _Sparse, c: np.ndarray, start: np.ndarray, required: np.ndarray,
              warm: int = _WARM_STEPS) -> tuple[np.ndarray, float, float]:
    """Shares ``u`` (``sum u = 1``) minimising the zCDP ``"sum"`` loss ``f(u) = sum_A' c_A' / tau_A'``, ``tau = T u``.

    ``f`` is convex and ``-h = -T^T (c / tau**2)`` its gradient, so ``f(u) - f* <= max_A h_A - f(u)``
    (the Frank-Wolfe duality gap on the simplex, as ``u . h = f``): the solver stops when the gap
    is at most :data:`_SUM_TOL` times ``f``. Three stages, every one made of exact operations:

    1. the multiplicative algorithm of optimal design (Silvey, Titterington & Torsney 1978;
       Yu 2010), ``u_A <- u_A sqrt(h_A / f)``, renormalised, from the closed form:
       :data:`_WARM_STEPS` steps bring it near the optimum, but shares that should be 0 only
       shrink, ever more slowly (and never reach 0);
    2. Newton's method with an active set: the Newton step on the positive shares
       (:func:`_newton_direction`), shortened so that no share goes negative; a share that
       the step drives to 0 leaves the set exactly (a maximal marginal, whose residual has no
       other measurement, never does); backtracking until the loss decreases enough (Armijo);
    3. the certificate: the gap over *every* share, the zero ones included. A zero share with
       ``h_A > f`` (a descent direction the active set missed) is given back a small share and
       stage 2 resumes;
    4. where the optimum is degenerate (a share 0 at the optimum with ``h_A = f`` there) the
       gap cannot tell a small share from 0 and the share only shrinks slowly: every share of
       a non-maximal marginal below :data:`_DROP` with ``h_A <= f`` is set to 0 and stages 2-3
       run again; the result is kept when its loss is within :data:`_DROP_TOL` of the loss
       before (the drop is then free: a marginal not measured), else the shares before.

    Returns ``u``, ``f(u)`` and the gap.
    """
    u = start
    for _ in range(warm):
        tau, f, h = _evaluate(t, c, u)
        if float(h.max()) - f <= _SUM_TOL * f:
            break
        u = _multiplicative(u, h, f)
    u, f, h = _active_set_newton(t, c, u, required)
    drop = ~required & (u > 0.0) & (u < _DROP) & (h <= f)
    if bool(drop.any()):
        kept = np.where(drop, 0.0, u)
        v, f_v, h_v = _active_set_newton(t, c, kept / _fsum(kept), required)
        if f_v <= f * (1.0 + _DROP_TOL):
            u, f, h = v, f_v, h_v
    return u, f, float(h.max()) - f


def _active_set_newton(t: _Sparse, c: np.ndarray, u: np.ndarray,
                       required: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
    """Stages 2 and 3 of :func:`_zcdp_sum`: returns ``u``, ``f(u)`` and ``h(u)``."""
    tau, f, h = _evaluate(t, c, u)
    for _ in range(_NEWTON_STEPS):
        gap = float(h.max()) - f
        if gap <= _SUM_TOL * f:
            break
        # shares far below the grid that the gradient still pushes down leave the active set
        u = np.where(~required & (u < _PRUNE) & (h < f), 0.0, u)
        free = u > 0.0
        if float(np.where(free, h, -np.inf).max()) - f <= _SUM_TOL * f:
            # optimal on the active set, not overall: give the violators back a share
            revive = ~free & (h > f)
            u = np.where(revive, _REVIVE * float(u.max()), u)
            u = u / _fsum(u)
            tau, f, h = _evaluate(t, c, u)
            continue
        d = _newton_direction(t, c, tau, h, f, free)
        slope = _dot(f - h, d)
        if not slope < 0.0:
            u = _multiplicative(u, h, f)
            tau, f, h = _evaluate(t, c, u)
            continue
        shrink = d < 0.0
        ratio = np.where(shrink, u / np.where(shrink, -d, 1.0), np.inf)
        blocking = float(np.where(required, np.inf, ratio).min())
        alpha = min(1.0, blocking, 0.5 * float(np.where(required, ratio, np.inf).min()))
        for _ in range(_LINE_STEPS):
            trial = u + alpha * d
            if alpha == blocking:
                trial = np.where(~required & (ratio == blocking), 0.0, trial)
            trial = np.maximum(trial, 0.0)
            trial = trial / _fsum(trial)
            t_tau, t_f, t_h = _evaluate(t, c, trial)
            if t_f <= f + 1e-4 * alpha * slope + _ROUNDING * f:
                break
            alpha = alpha / 2.0
        else:
            # no decrease along the Newton step (rounding): a multiplicative step, which always descends
            u = _multiplicative(u, h, f)
            tau, f, h = _evaluate(t, c, u)
            continue
        u, tau, f, h = trial, t_tau, t_f, t_h
    return u, f, h


def _pure_sum(t: _Sparse, c: np.ndarray, start: np.ndarray, required: np.ndarray,
              search: bool = True) -> tuple[np.ndarray, float, float]:
    """The pure-DP ``"sum"`` program: :func:`_pure_stationary` from ``start``, then a search over supports.

    The program is not convex, and the multiplicative steps can stop at a stationary point
    where measuring a marginal fewer is better (its epsilon does more in a larger table that
    contains it). Each round of the search (``search=True``; at most :data:`_PURE_DROP_ROUNDS`)
    sets one positive share of a non-maximal marginal to 0 in turn (the
    :data:`_PURE_DROP_CANDIDATES` smallest), runs the steps again from there, and keeps the
    best result if it lowers the loss by more than :data:`_DROP_TOL`; it stops when none does.
    ``search=False`` (a round of :func:`_max_program`): :data:`_PURE_ROUND_STEPS` steps only.
    """
    if not search:
        return _pure_stationary(t, c, start, _PURE_ROUND_STEPS)
    s, f, gap = _pure_stationary(t, c, start, _PURE_STEPS)
    for _ in range(_PURE_DROP_ROUNDS):
        candidates = np.flatnonzero(~required & (s > _PRUNE))
        candidates = candidates[np.argsort(s[candidates], kind="stable")[:_PURE_DROP_CANDIDATES]]
        best = None
        for k in candidates.tolist():
            trial = np.where(np.arange(len(s)) == k, 0.0, s)
            found = _pure_stationary(t, c, trial / _fsum(trial), _PURE_STEPS)
            if found[1] < f * (1.0 - _DROP_TOL) and (best is None or found[1] < best[1]):
                best = found
        if best is None:
            break
        s, f, gap = best
    return s, f, gap


def _pure_stationary(t: _Sparse, c: np.ndarray, start: np.ndarray, steps: int) -> tuple[np.ndarray, float, float]:
    """Shares ``s`` (``sum s = 1``) at a stationary point of the pure-DP ``"sum"`` loss ``f = sum c / (T s**2)``.

    With ``d_A = s_A h_A`` (``h = T^T (c / tau**2)``), ``s . d = f`` and the stationary points on the
    simplex are those with ``d_A = f`` wherever ``s_A > 0``: the multiplicative step
    ``s_A <- s_A (d_A / f)**(1/4)`` (two square roots; the power changes the pace, not the fixed
    points) moves towards one, and ``max_A d_A / f - 1`` (0 exactly at a stationary point, as
    ``d / f`` averages 1 under the weights ``s``) is the stopping rule, at :data:`_SUM_TOL`.
    A share that should be 0 goes there doubly exponentially (``d_A`` carries a factor
    ``s_A``). The program is not convex: this is the stationary point reached from the closed
    form. Returns the shares with the smallest loss seen, the loss and the measure.
    """
    s = start
    best = (s, math.inf, math.inf)
    for _ in range(steps):
        tau, f, h = _evaluate(t, c, s * s)
        d = s * h
        gap = float(d.max()) / f - 1.0
        if f < best[1]:
            best = (s, f, gap)
        if gap <= _SUM_TOL:
            break
        s = s * np.sqrt(np.sqrt(d / f))
        s = s / _fsum(s)
    return best


def _sum_program(t: _Sparse, c: np.ndarray, exponent: int, start: np.ndarray, required: np.ndarray,
                 *, warm: bool = True) -> tuple[np.ndarray, float, float]:
    """The ``"sum"`` program: :func:`_zcdp_sum` (``exponent`` 1) or :func:`_pure_sum` (2).

    ``warm=False``: ``start`` is already near the optimum (a round of :func:`_max_program`):
    no multiplicative warm-up under zCDP, :data:`_PURE_ROUND_STEPS` steps under pure DP.
    """
    if exponent == 1:
        return _zcdp_sum(t, c, start, required, warm=_WARM_STEPS if warm else _ROUND_WARM_STEPS)
    return _pure_sum(t, c, start, required, search=warm)


def _max_program(t: _Sparse, m: _Sparse, exponent: int, plan: np.ndarray, start: np.ndarray,
                 required: np.ndarray) -> np.ndarray:
    """Shares minimising ``max_W (m (1 / tau))_W`` (the largest weighted cell variance), ``sum s = 1``.

    The max is a min-max over table weights ``lambda`` on the simplex:
    ``min_s max_lambda sum_W lambda_W V_W(s)`` with ``V = m (1 / tau)``, and for fixed ``lambda``
    the inner problem is the ``"sum"`` program with ``c = m^T lambda``. Under zCDP it is
    convex in ``s`` and linear in ``lambda`` (minimax theorem): its value ``g(lambda)`` is
    concave and 1-homogeneous, with gradient ``V_W`` at the inner optimum, and its maximum
    is the optimum. Each round solves the inner program (warm start) and re-weights the
    tables multiplicatively, ``lambda_W <- lambda_W V_W / sum lambda V``, whose fixed points
    put weight only on the tables of largest variance (the optimality condition). Under
    zCDP ``g(lambda) >= f_lambda(s) - gap`` bounds the optimum from below and
    ``max_W V_W(s)`` from above: the rounds stop when they agree to :data:`_MAX_TOL`. Under
    pure DP (no such bound) they stop when the best max has not fallen by :data:`_MAX_TOL`
    of itself in :data:`_MAX_PATIENCE` rounds. At most :data:`_MAX_ROUNDS` rounds; the best
    shares seen (smallest max) are returned.
    """
    lam = np.full(m.shape[0], 1.0 / m.shape[0])
    # The "sum" plan is a candidate too: the result is never worse than it. The rounds start
    # from it under zCDP; under pure DP from the closed form, every share positive (a zero
    # share is a local optimum of each pure-DP round: its step carries a factor s_A).
    best_s, best_max = plan, float(m.matvec(1.0 / t.matvec(plan if exponent == 1 else plan * plan)).max())
    s = plan if exponent == 1 else start
    lower = 0.0
    stalled = 0
    for _ in range(_MAX_ROUNDS):
        c = m.rmatvec(lam)
        s, f, gap = _sum_program(t, c, exponent, s, required, warm=False)
        tau = t.matvec(s if exponent == 1 else s * s)
        v = m.matvec(1.0 / tau)
        worst = float(v.max())
        stalled = 0 if worst < best_max * (1.0 - _MAX_TOL) else stalled + 1
        if worst < best_max:
            best_s, best_max = s, worst
        if exponent == 2 and stalled >= _MAX_PATIENCE:
            break
        if exponent == 1:
            lower = max(lower, f - gap)
            if best_max - lower <= _MAX_TOL * best_max:
                break
        lam = lam * v
        lam = lam / _fsum(lam)
    return best_s


def _on_grid(shares: np.ndarray, required: Sequence[bool]) -> tuple[Fraction, ...]:
    """Float shares rounded down to ``2**-32`` (a required marginal keeps one grid step), exactly renormalised."""
    grid = [int(math.floor(float(s) * _SOLVE_GRID)) for s in shares]
    grid = [max(g, 1) if req else g for g, req in zip(grid, required)]
    total = sum(grid)
    return tuple(Fraction(g, total) for g in grid)


def plan_residuals(workload: Workload, *, loss: PrivacyLoss, objective: Objective = "sum",
                   weights: Sequence[Any] | None = None, sensitivity: Sensitivity = UNIT) -> ResidualPlan:
    """Plan a ResidualPlanner release from public inputs only (no data, no budget).

    Parameters
    ----------
    workload : Workload
        From :func:`~pandas_dp.algorithms.marginals.workload.make_workload`.
    loss : PrivacyLoss
        The whole release's privacy loss: ``ZCDP`` (discrete Gaussian) or ``PureDP``
        (discrete Laplace), split across the marginals measured.
    objective : {"sum", "max"}
        ``"sum"``: the weighted sum of every workload cell's variance;
        ``"max"``: the largest weighted cell variance.
    weights : sequence of positive numbers, optional
        One per workload marginal (default 1 each).
    sensitivity : Sensitivity
        How far one privacy unit moves one marginal (default one row: ``L1 = L2 = 1``);
        a unit of at most ``k`` rows moves every marginal by at most ``k`` in L1 and ``k**2``
        in squared L2.

    Returns
    -------
    ResidualPlan

    Raises
    ------
    ParameterError
        When ``objective`` or ``weights`` are invalid, or a part of the loss is too small
        for the noise sampler.

    Notes
    -----
    See the module docstring: the program, the closed form it starts from, and the
    privacy cost charged (that of each marginal measured, which the integer noise
    provably meets; the parts compose sequentially).

    Examples
    --------
    >>> from pandas_dp.algorithms.marginals.workload import make_workload
    >>> from pandas_dp.privacy.loss import zcdp
    >>> plan = plan_residuals(make_workload([2, 3], [(0, 1)]), loss=zcdp(1))
    >>> plan.measured, [str(s) for s in plan.shares]
    (((0, 1),), ['0', '0', '0', '1'])
    >>> round(plan.total_variance(planning=True), 9)  # the 6 cells measured once with sigma**2 = 1/2
    3.0
    """
    if objective not in ("sum", "max"):
        raise ParameterError(f"The 'loss' parameter must be 'sum' or 'max'. Got {safe_repr(objective)}. "
                             f"Pass loss='sum' (total variance) or loss='max' (largest cell variance).")
    w = _weights(workload, weights)
    e = loss.variance_exponent
    closure = workload.closure
    # Maximal marginals are always measured (their residuals have no other measurement). A residual
    # with a size-1 attribute has no component (c = 0); its marginal still informs smaller ones.
    maximal = set(workload.maximal)
    required = [a in maximal for a in closure]
    strategies = ordered_strategies(workload, e)
    factors = _factors(workload, strategies) if strategies else None
    c_float = _general_loss(workload, w, factors) if factors else _loss_floats(workload, w)
    # Start from the closed form at q_A = 1, every share positive: a multiplicative step
    # never revives a zero share.
    n = len(closure)
    start = _closed_form_floats(c_float, e)
    start = start / _fsum(start) + 1e-3 / n
    start = start / _fsum(start)
    t = _general_coverage(workload, factors) if factors else _coverage_entries(workload)
    req = np.array(required)
    solved = _sum_program(t, c_float, e, start, req)[0]
    if objective == "max":
        m = _general_cells(workload, w, factors) if factors else _cell_entries(workload, w)
        solved = _max_program(t, m, e, solved, start, req)
    return _grid_plan(workload, objective, w, loss, sensitivity, solved, required, strategies)


def ordered_strategies(workload: Workload, exponent: int) -> tuple[Any, ...]:
    """Per attribute, the tree an ordered attribute is measured by (None for the cells); empty when none is
    ordered (:func:`~pandas_dp.algorithms.marginals.ordered.choose_strategy`, public inputs only)."""
    if not workload.has_ordered:
        return ()
    return tuple(None if q is None else choose_strategy(q, exponent) for q in workload.ordered)


def _grid_shares(solved: np.ndarray, required: Sequence[bool]) -> tuple[Fraction, ...]:
    """Float shares on the plan's exact grid: :func:`_on_grid`, then multiples of ``2**-40`` (rounded down)."""
    return tuple(Fraction(math.floor(s * SHARE_GRID), SHARE_GRID) for s in _on_grid(solved, required))


def _grid_plan(workload: Workload, objective: Objective, w: tuple[Fraction, ...], loss: PrivacyLoss,
               sensitivity: Sensitivity, solved: np.ndarray, required: Sequence[bool],
               strategies: tuple[Any, ...] = ()) -> ResidualPlan:
    """The exact plan of float shares ``solved`` (:func:`_grid_shares`): each part of the loss and its noise."""
    grid = _grid_shares(solved, required)
    parts = tuple(loss.part(s) for s in grid)
    what = f"one of the {sum(1 for s in grid if s > 0)} marginals this workload measures"
    noises = tuple(part.noise(strategy_sensitivity(sensitivity, strategies, a), what=what) if s > 0 else None
                   for a, s, part in zip(workload.closure, grid, parts))
    total = loss.zero()
    for part in parts:
        total = total + part
    return ResidualPlan(workload=workload, objective=objective, weights=w, sensitivity=sensitivity, loss=total,
                        shares=grid, losses=parts, noises=noises, strategies=strategies)


def _residual_cost(sizes: Sequence[int], a: Marginal, paper: bool) -> Fraction:
    if not paper:
        return Fraction(1)
    return Fraction(math.prod(sizes[i] - 1 for i in a), math.prod(sizes[i] for i in a))


def gaussian_optimum(workload: Workload, *, rho: float, weights: Sequence[Any] | None = None,
                     paper_cost: bool = True, sensitivity: Sensitivity = UNIT) -> float:
    """The closed-form optimum of the ``"sum"`` program with each residual measured alone (analysis only).

    ``paper_cost=True``: ResidualPlanner's optimum for continuous Gaussian noise, optimal over
    all Gaussian matrix mechanisms, ``(sum_A sqrt(p_A c_A))**2 Delta_2**2 / (2 rho)``;
    ``False``: the same program at the cost of a marginal measurement (``q_A = 1``), the best a
    plan that discards the rest of each noisy marginal can do.
    """
    w = _weights(workload, weights)
    c = loss_coefficients(workload, w)
    q = [_residual_cost(workload.sizes, a, paper=paper_cost) for a in workload.closure]
    k = float(sensitivity.l2_squared) / (2.0 * float(rho))
    return k * math.fsum(math.sqrt(float(ci * qi)) for ci, qi in zip(c, q)) ** 2
