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
The plan solves the program numerically (``"sum"``: L-BFGS-B on the
scale-free objective ``loss * (sum_A s_A)**e`` over ``s >= 0``, started
from the closed form, then under zCDP Newton's method on the support found,
which converges to the one optimum whatever point the first solver stopped
at, so machines agree to rounding; ``"max"``: SLSQP on the epigraph, started
from the ``"sum"`` plan). The float shares are rounded down to the grid
``2**-32`` (exact rationals, renormalised exactly), so the same plan comes out
on every machine unless a share falls within rounding of a grid point (for
the zCDP ``"sum"`` plan, within about ``1e-16``; for ``"max"`` and pure-DP
plans, within the solver's tolerance, as no polish makes them unique). Shares finally
become multiples of ``2**-40`` (:data:`~pandas_dp.privacy.loss.SHARE_GRID`); the parts
never add up to more than the loss asked for.

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

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from pandas_dp._utils.rational import safe_repr, to_fraction
from pandas_dp.algorithms.marginals.workload import Marginal, Workload
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import SHARE_GRID, UNIT, Noise, PrivacyLoss, Sensitivity

__all__ = ["ResidualPlan", "plan_residuals", "cell_coefficient", "table_coefficient", "loss_coefficients",
           "coverage", "closed_form_shares", "gaussian_optimum", "Objective"]

Objective = Literal["sum", "max"]

#: Bits of the exact integer roots of the closed form.
_ROOT_BITS = 64
#: Grid of the float solution of the convex programs.
_SOLVE_GRID = 1 << 32


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

    index = workload.index
    rows, cols, vals = [], [], []
    for a in workload.closure:
        for sub in _subsets(a):
            rows.append(index[sub])
            cols.append(index[a])
            vals.append(1.0 / math.prod(workload.sizes[i] for i in a if i not in sub))
    n = len(index)
    return csr_matrix((vals, (rows, cols)), shape=(n, n))


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
    """

    workload: Workload
    objective: Objective
    weights: tuple[Fraction, ...]
    sensitivity: Sensitivity
    loss: PrivacyLoss
    shares: tuple[Fraction, ...]
    losses: tuple[PrivacyLoss, ...]
    noises: tuple[Noise | None, ...]

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

    def planning_variances(self) -> np.ndarray:
        """The continuous variances the plan was optimised with (``inf``: not measured)."""
        full = self.loss.planning_variance(1.0, self.sensitivity)
        e = self.loss.variance_exponent
        total = float(sum(self.shares))
        return np.array([np.inf if s == 0 else full * (float(s) / total) ** (-e) for s in self.shares])

    def residual_variances(self, variances: np.ndarray | None = None) -> np.ndarray:
        """``V_A = 1 / tau_A`` of every residual, from measured variances (exact noise variances by default)."""
        v = self.noise_variances() if variances is None else np.asarray(variances, dtype=np.float64)
        return 1.0 / (coverage(self.workload) @ (1.0 / v))

    def cell_variance(self, attrs: Marginal, variances: np.ndarray | None = None) -> float:
        """Variance of every cell of the marginal on ``attrs`` (a workload marginal or a sub-marginal of one)."""
        attrs = tuple(sorted(attrs))
        self.workload.check(attrs)
        return _cell_variance(self.workload, self.residual_variances(variances), attrs)

    def table_variances(self, variances: np.ndarray | None = None) -> np.ndarray:
        """Per-cell variance of every workload marginal (exact noise variances by default)."""
        r = self.residual_variances(variances)
        return _table_variances(self.workload, r)

    def total_variance(self, *, planning: bool = False) -> float:
        """The loss ``"sum"``: weighted sum over the workload of every cell's variance.

        ``planning=True`` uses the continuous variances the plan optimised (to compare with
        the program's optimum); the default, the exact variances of the integer noise.
        """
        t = self.table_variances(self.planning_variances() if planning else None)
        cells = np.array([self.workload.cells(w) for w in self.workload.tables], dtype=np.float64)
        return float((np.array([float(w) for w in self.weights]) * cells * t).sum())

    def max_variance(self, *, planning: bool = False) -> float:
        """The loss ``"max"``: the largest weighted cell variance over the workload."""
        t = self.table_variances(self.planning_variances() if planning else None)
        return float((np.array([float(w) for w in self.weights]) * t).max())

    def loss_shares(self) -> np.ndarray:
        """Each residual's share of the ``"sum"`` loss (planning variances; sums to 1)."""
        part = _loss_floats(self.workload, self.weights) * self.residual_variances(self.planning_variances())
        return part / part.sum()

    def describe(self) -> list[dict[str, Any]]:
        """JSON-friendly record of every closure marginal: attributes, share of the loss, noise."""
        return [{"marginal": list(a), "share": str(s), "noise": None if n is None else n.describe()}
                for a, s, n in zip(self.residuals, self.shares, self.noises)]


def _cell_variance(workload: Workload, residual_variances: np.ndarray, attrs: Marginal) -> float:
    """``sum_{A' subset W} V_A' a(A', W)`` for the closure marginal ``W = attrs`` (sorted)."""
    index = workload.index
    return math.fsum(float(residual_variances[index[a]]) * _cell_float(workload.sizes, a, attrs)
                     for a in _subsets(attrs))


def _table_variances(workload: Workload, residual_variances: np.ndarray) -> np.ndarray:
    return np.array([_cell_variance(workload, residual_variances, w) for w in workload.tables])


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


def _cell_matrix(workload: Workload, weights: Sequence[Fraction]) -> np.ndarray:
    """``m[W, A'] = w_W a(A', W)``: weighted cell variance of table W per unit of residual variance."""
    m = np.zeros((len(workload.tables), len(workload.closure)))
    for j, (w, wt) in enumerate(zip(workload.tables, weights)):
        for a in _subsets(w):
            m[j, workload.index[a]] = float(wt) * _cell_float(workload.sizes, a, w)
    return m


def _solve_sum(t: Any, c: np.ndarray, exponent: int, start: np.ndarray, floor: np.ndarray) -> np.ndarray:
    """Shares minimising ``sum_A' c_A' / tau_A'`` with ``tau = T s**e``: L-BFGS-B on the scale-free form.

    ``loss(s) * (sum s)**e`` does not change when every share is scaled, so its minimum
    over ``s >= floor`` (``floor > 0`` on the maximal marginals, whose residuals have no
    other measurement) is the constrained optimum; shares reach 0 exactly at the bound.
    """
    from scipy.optimize import minimize

    tt = t.T.tocsr()
    e = exponent

    def f(s: np.ndarray) -> tuple[float, np.ndarray]:
        tau = t @ (s ** e)
        loss = float((c / tau).sum())
        total = float(s.sum())
        grad_prec = -(tt @ (c / tau ** 2))                  # d loss / d prec
        grad = grad_prec * e * s ** (e - 1) * total ** e + loss * e * total ** (e - 1)
        return loss * total ** e, grad

    x0 = np.maximum(start / start.sum(), floor)
    res = minimize(f, x0, jac=True, method="L-BFGS-B", bounds=list(zip(floor, [None] * len(floor))),
                   options={"maxiter": 20000, "maxfun": 40000, "ftol": 1e-15, "gtol": 1e-14})
    return res.x / res.x.sum()


def _solve_max(t: Any, m: np.ndarray, exponent: int, start: np.ndarray, floor: np.ndarray) -> np.ndarray:
    """Shares minimising ``max_W (m @ (1 / tau))_W`` with ``sum s = 1``, ``tau = T s**e`` (SLSQP, epigraph)."""
    from scipy.optimize import minimize

    e = exponent
    dense_t = t.toarray()
    n = len(start)
    scale = float((m @ (1.0 / (dense_t @ start ** e))).max())
    m = m / scale

    def tables(x: np.ndarray) -> np.ndarray:
        return x[n] - m @ (1.0 / (dense_t @ x[:n] ** e))

    def tables_jac(x: np.ndarray) -> np.ndarray:
        s = x[:n]
        tau = dense_t @ s ** e
        # d/ds_A (m @ 1/tau)_W = -sum_A' m[W, A'] T[A', A] e s_A**(e-1) / tau_A'**2
        jac = np.empty((m.shape[0], n + 1))
        jac[:, :n] = ((m / tau[None, :] ** 2) @ dense_t) * (e * s ** (e - 1))[None, :]
        jac[:, n] = 1.0
        return jac

    budget_jac = np.concatenate([-np.ones(n), [0.0]])[None, :]
    x0 = np.concatenate([start, [1.0]])
    res = minimize(lambda x: float(x[n]), x0, jac=lambda x: np.concatenate([np.zeros(n), [1.0]]),
                   method="SLSQP", bounds=[(f, 1.0) for f in floor] + [(None, None)],
                   constraints=[{"type": "ineq", "fun": tables, "jac": tables_jac},
                                {"type": "ineq", "fun": lambda x: np.array([1.0 - x[:n].sum()]),
                                 "jac": lambda x: budget_jac}],
                   options={"maxiter": 2000, "ftol": 1e-15})
    s = np.maximum(res.x[:n], 0.0)
    return s / s.sum()


def _polish_sum(t: Any, c: np.ndarray, shares: np.ndarray, steps: int = 8) -> np.ndarray:
    """Newton's method on the support of ``shares`` for the zCDP ``"sum"`` program (``tau = T s``).

    The loss ``sum c / tau`` is strictly convex in the shares of a fixed support (``T`` is
    triangular with a unit diagonal, so ``T_S`` has full column rank), so its optimum on
    ``sum s = 1`` is one point; Newton's method (conjugate-gradient solves of the KKT system,
    Hessian ``T_S^T diag(2 c / tau**3) T_S``) converges to it quadratically from the solver's
    answer, wherever that answer stopped, so two machines agree to rounding before the shares
    are put on the grid. A step that would leave the support or raise the loss is not taken.
    """
    from scipy.sparse.linalg import LinearOperator, cg

    support = np.flatnonzero(shares > 0)
    ts = t[:, support]
    tst = ts.T.tocsr()
    s = shares[support] / shares[support].sum()
    ones = np.ones(len(s))

    def loss(x: np.ndarray) -> float:
        return float((c / (ts @ x)).sum())

    for _ in range(steps):
        tau = ts @ s
        g = -(tst @ (c / tau ** 2))
        d = 2.0 * c / tau ** 3
        h = LinearOperator((len(s), len(s)), matvec=lambda v, d=d: tst @ (d * (ts @ v)), dtype=np.float64)
        hg, _ = cg(h, g, rtol=1e-14, atol=0.0, maxiter=10 * len(s))
        h1, _ = cg(h, ones, rtol=1e-14, atol=0.0, maxiter=10 * len(s))
        nu = -float(ones @ hg) / float(ones @ h1)
        step = -(hg + nu * h1)
        candidate = s + step
        if np.any(candidate <= 0) or loss(candidate) > loss(s):
            break
        s = candidate / candidate.sum()
        if float(np.abs(step).max()) < 1e-15:
            break
    out = np.zeros_like(shares)
    out[support] = s
    return out


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
    c_float = _loss_floats(workload, w)
    start = c_float ** (1.0 / (e + 1))            # the closed form at q_A = 1, as a starting point
    # Maximal marginals are always measured (their residuals have no other measurement). A residual
    # with a size-1 attribute has no component (c = 0); its marginal still informs smaller ones.
    maximal = set(workload.maximal)
    required = [a in maximal for a in closure]
    t = coverage(workload)
    floor = np.where(required, 1e-12, 0.0)
    solved = _solve_sum(t, c_float, e, start, floor)
    if e == 1:
        solved = _polish_sum(t, c_float, solved)
    if objective == "max":
        m = _cell_matrix(workload, w)
        solved = _solve_max(t, m, e, solved, floor)
    shares = _on_grid(solved, required)
    grid = tuple(Fraction(math.floor(s * SHARE_GRID), SHARE_GRID) for s in shares)
    parts = tuple(loss.part(s) for s in grid)
    what = f"one of the {sum(1 for s in grid if s > 0)} marginals this workload measures"
    noises = tuple(part.noise(sensitivity, what=what) if s > 0 else None for s, part in zip(grid, parts))
    total = loss.zero()
    for part in parts:
        total = total + part
    return ResidualPlan(workload=workload, objective=objective, weights=w, sensitivity=sensitivity, loss=total,
                        shares=grid, losses=parts, noises=noises)


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
