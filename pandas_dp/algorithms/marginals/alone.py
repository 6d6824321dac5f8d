"""The default plan: no workload table worse than measured alone with an even split of the loss.

ResidualPlanner's ``"sum"`` optimum (:mod:`~pandas_dp.algorithms.marginals.plan`)
minimises the summed variance of every workload cell, and a small table,
whose cells weigh little in that sum, can come out with more noise than if it
had been measured on its own. This module adds one constraint per workload
table and solves the same program under them.

Alone with an even split
------------------------
For a workload of ``T`` tables at the loss ``L`` (by geography, a level's
part of the loss), table ``W`` *alone* is measured with ``L / T`` by the
identity mechanism on its own cells, with the same noise family and the same
sensitivity as the plan (discrete Gaussian under zCDP, discrete Laplace under
pure DP): its cell variance is ``v_alone = k T**e`` (``k`` the planning variance
at the whole loss, ``e`` the loss's variance exponent), the same for every
table. By geography this is ``histogram(W, by=..., level_weights=...)`` at
``L / T`` with the same level weights and public totals: each level measures
the table alone with its part of ``L / T``, and the same GLS across the
geography (with the totals exact) follows.

The constraints
---------------
With the residual variances ``V_{A'}`` of the plan (module docstring of
:mod:`~pandas_dp.algorithms.marginals.plan`), table ``W``'s cell variance is
``sum_{A' subset W} a(A', W) V_{A'}``, and the constraint is that this is at
most ``v_alone``. Under zCDP each ``V_{A'} = 1 / tau_{A'}`` is convex in the
shares (``tau`` is linear in them), so the constraints are convex and the
constrained ``"sum"`` program is still convex.

By geography the exact variance of a table at region ``r`` of level ``l`` is
``sum_{A'} a(A', W) g_{A'}(V_{A', 0..L})``, with ``g`` the variance of the tree
GLS across the levels (:mod:`~pandas_dp.algorithms.marginals.geography`): a
minimum of linear functions of the levels' variances (the best unbiased
combination), hence concave, non-decreasing and 1-homogeneous. Alone, the
residual ``A'`` of ``W`` is known at level ``l`` with ``v_l p_{A'}``
(``p_{A'} = prod_{i in W \\ A'} n_i``) and ``sum_{A'} a(A', W) p_{A'} = 1``. So
with ``w_{A'} = a(A', W) p_{A'}`` (summing to 1), Jensen's inequality gives

    sum_{A'} a(A', W) g(V_{A'}) = sum_{A'} w_{A'} g(V_{A'} / p_{A'})
                                <= g(sum_{A'} a(A', W) V_{A'}) <= g(v) = the alone variance

whenever each level's own constraint holds (``sum_{A'} a(A', W) V_{A',l} <= v_l``):
the constraint per level bounds every region of every level after the GLS,
whatever the tree. Public totals make the total ``()`` exact at their levels
and condition the rest of its tree problem (another concave function ``g'`` for
``()`` only): the rows then split, ``V_{()} <= min_W |W| v`` (the total no worse
than the smallest table's alone total: monotonicity of ``g'``) and
``sum_{A' != ()} a(A', W) V_{A'} <= (1 - 1 / |W|) v`` for every ``W`` (Jensen on
the rest), which bound the tables with the totals at every level.

The program and its solution
----------------------------
With multipliers ``mu >= 0`` on the rows (matrix ``M``, one row per
constraint, scaled so every bound is 1), the Lagrangian is the ``"sum"``
program with the loss coefficients ``c + M^T mu`` (for a table row, a heavier
weight on that table), which :mod:`~pandas_dp.algorithms.marginals.plan`
solves exactly as it solves the unconstrained one. The multipliers follow
the multiplicative rule ``mu_k <- mu_k (r_k / target)**2`` (``r_k`` the row's
ratio to its bound at the current shares; a table alone has variance
``∝ weight**(-1/2)`` under the ``"sum"`` plan, so the square is a Newton step
in log scale), a violated row with ``mu_k = 0`` starting at ``f / K``
(``f`` the loss, ``K`` the rows); the rounds stop when every row is within its
bound less a margin of ``1e-6`` and every row with a multiplier is within
``1e-4`` of that target (complementary slackness), or after
:data:`_ROUNDS` rounds. Every step is an exact operation (the plan module's
rule, so a seed gives the same plan on every machine).

The shares are then put on the plan's exact grid and the rows checked again
(exact operations); if one is above its bound, the shares are mixed with the
even split (each workload table measured with ``1 / T``, which meets every
row) at ``theta = 2**-20, 2**-19, ..., 1``, the first mixture that meets every
row being kept. Under zCDP the rows are convex in the shares, so the
mixture's ratio is at most ``(1 - theta) r + theta``; the even split is always
feasible (to the grid's rounding, below ``1e-9``). Under pure DP the shares
enter squared and nothing here is convex: the same rounds find a plan, and the
check and mixture guarantee the bounds.

Exact noise. The rows bound the planning (continuous) variances; the integer
noise has less variance than they say, the alone noise too. Discrete Laplace
noise of scale ``t`` has variance ``1 / (2 sinh(1 / (2 t))**2) >= 2 t**2 - 1/6``
(as ``1 / sinh(y)**2 >= 1 / y**2 - 1/3``), so under pure DP every bound is the
alone variance less ``1/6`` (``T**2 - 1 / (6 k)`` in planning units): the plan's
exact variances are then at most the exact alone ones. Were that bound not
positive (a huge epsilon), only the even split is as good cell for cell, and it
is the plan. The discrete Gaussian's variance falls short of ``sigma**2`` by less
than ``2.2e-7`` of it from ``sigma**2 = 1`` on (``1e-11`` from 1.5), so under zCDP
the exact ratios exceed the planned ones by at most that much (only an alone
noise of ``sigma**2`` below 1, i.e. ``rho / T`` above ``Delta_2**2 / 2``, is left
with a visible gap).

When today's optimum (:func:`~pandas_dp.algorithms.marginals.plan.plan_residuals`)
already meets every row it is returned unchanged; under ``"max"`` (the largest
cell variance, which under zCDP with equal weights already meets every table
row of a flat workload) a violated row is met by the mixture alone.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from pandas_dp.algorithms.marginals.plan import (Objective, ResidualPlan, _coverage_entries, _factors, _Factors,
                                                 _fsum, _general_coverage, _general_loss, _grid_plan, _grid_shares,
                                                 _loss_floats, _pure_sum, _Sparse, _subsets, _zcdp_sum, _cell_float,
                                                 _ROUND_WARM_STEPS, plan_residuals, strategy_norm,
                                                 strategy_sensitivity)
from pandas_dp.algorithms.marginals.workload import Workload
from pandas_dp.privacy.loss import UNIT, PrivacyLoss, Sensitivity

__all__ = ["plan_no_worse_than_alone", "alone_rows", "alone_ratios", "alone_variance"]

#: The rounds aim every row at this fraction of its bound (room for the grid's rounding).
_TARGET = 1.0 - 1e-6
#: A row with a multiplier is done within this of the target (complementary slackness).
_SLACK = 1e-4
#: At most this many rounds of the multipliers.
_ROUNDS = 200
#: Mixtures with the even split tried: theta = 2**-_MIX_BITS, ..., 1/2, 1.
_MIX_BITS = 20
#: A multiplier whose row weighs less than this part of the loss is set to 0.
_LET_GO = math.ldexp(1.0, -60)


def _alone_scale(f: _Factors, table: tuple[int, ...]) -> float:
    """A table measured alone through its attributes' strategies: its mean query variance per unit of the
    noise's (``prod_{i in W} (t_i + b_i u_i) / q_i``; 1 for cells)."""
    return math.prod((f.t[i] + f.b[i] * f.u[i]) / f.q[i] for i in table)


def alone_rows(workload: Workload, exponent: int, *, public_totals: bool = False, offset: float = 0.0,
               factors: _Factors | None = None, norms: list[int] | None = None) -> _Sparse:
    """The constraint rows: ``(M 1 / tau)_k <= 1`` for every row, in planning units (``k = 1``).

    Without public totals, one row per workload table: ``a(A', W) / b`` with ``b = T**e - offset``
    (the alone variance, less ``offset``: :func:`plan_no_worse_than_alone`). With ordered attributes
    (``factors``, and ``norms`` the tables' ``prod F_i``), the rows bound every table's mean query
    variance by the table's alone through its trees,
    ``(T**e - offset / F_W) prod_{i in W} (t_i + b_i u_i) / q_i``. With public totals, one row
    per table of more than one cell for ``A' != ()`` (bound ``(1 - 1 / |W|) b``) and a row for
    the total (bound ``min_W |W| b``) (module docstring). ``b`` must be positive.
    """
    tables = workload.tables
    alone = float(len(tables) ** exponent) - offset   # an integer power: exact
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    k = 0
    for j, w in enumerate(tables):
        cells = workload.cells(w)
        if public_totals and cells < 2:
            continue
        bound = alone * ((cells - 1) / cells if public_totals else 1.0)
        if factors is not None:
            f = factors
            shift = offset - offset / (norms[j] if norms else 1)
            bound = (alone + shift) * _alone_scale(f, w)
            for a in _subsets(w):
                rows.append(k)
                cols.append(workload.index[a])
                vals.append(math.prod((f.t[i] if i in a else f.u[i]) / f.q[i] for i in w) / bound)
            k += 1
            continue
        for a in _subsets(w):
            if public_totals and a == ():
                continue
            rows.append(k)
            cols.append(workload.index[a])
            vals.append(_cell_float(workload.sizes, a, w) / bound)
        k += 1
    if public_totals:
        rows.append(k)
        cols.append(workload.index[()])
        vals.append(1.0 / (alone * min(workload.cells(w) for w in tables)))
        k += 1
    return _Sparse(np.array(rows, dtype=np.intp), np.array(cols, dtype=np.intp), np.array(vals),
                   (k, len(workload.closure)))


def _ratios(t: _Sparse, m: _Sparse, shares: np.ndarray, exponent: int) -> np.ndarray:
    tau = t.matvec(shares if exponent == 1 else shares * shares)
    with np.errstate(divide="ignore"):
        return m.matvec(np.where(tau > 0.0, 1.0 / np.where(tau > 0.0, tau, 1.0), np.inf))


def _even(workload: Workload) -> np.ndarray:
    """Each workload table measured with ``1 / T`` of the loss."""
    u = np.zeros(len(workload.closure))
    for w in workload.tables:
        u[workload.index[w]] = 1.0 / len(workload.tables)
    return u


def _constrained_sum(t: _Sparse, m: _Sparse, c: np.ndarray, exponent: int, start: np.ndarray,
                     required: np.ndarray) -> np.ndarray:
    """The ``"sum"`` program under the rows ``m``: multiplier rounds (module docstring)."""
    mu = np.zeros(m.shape[0])
    s = start
    rows = float(m.shape[0])
    for _ in range(_ROUNDS):
        r = _ratios(t, m, s, exponent)
        over = r > _TARGET
        if not bool(over.any()) and bool(np.all((mu == 0.0) | (r >= _TARGET * (1.0 - _SLACK)))):
            break
        f = _dot_loss(t, c, s, exponent)
        step = r / _TARGET
        scale = step * step
        mu = np.where(mu > 0.0, mu * scale, np.where(over, f / rows, 0.0))
        # the multipliers weigh the rows' variances; a row far inside its bound lets go of it
        mu = np.where(mu * r < f * _LET_GO, 0.0, mu)
        weights = c + m.rmatvec(mu)
        if exponent == 1:
            s = _zcdp_sum(t, weights, s, required, warm=_ROUND_WARM_STEPS)[0]
        else:
            s = _pure_sum(t, weights, s, required, search=False)[0]
    return s


def _dot_loss(t: _Sparse, c: np.ndarray, s: np.ndarray, exponent: int) -> float:
    tau = t.matvec(s if exponent == 1 else s * s)
    return _fsum(c / tau)


def _feasible(workload: Workload, t: _Sparse, m: _Sparse, exponent: int, solved: np.ndarray,
              required: list[bool]) -> np.ndarray:
    """``solved`` or its first mixture with the even split whose grid shares meet every row."""
    even = _even(workload)
    for theta in [0.0] + [math.ldexp(1.0, -bits) for bits in range(_MIX_BITS, -1, -1)]:
        mixed = (1.0 - theta) * solved + theta * even
        grid = np.array([float(s) for s in _grid_shares(mixed, required)])
        if float(_ratios(t, m, grid, exponent).max()) <= 1.0:
            return mixed
    return even


def plan_no_worse_than_alone(workload: Workload, *, loss: PrivacyLoss, objective: Objective = "sum",
                             sensitivity: Sensitivity = UNIT, public_totals: bool = False) -> ResidualPlan:
    """The default plan: the optimum under which no workload table is worse than alone (module docstring).

    Parameters
    ----------
    workload : Workload
        From :func:`~pandas_dp.algorithms.marginals.workload.make_workload` (equal weights).
    loss : PrivacyLoss
        The plan's loss (by geography, one level's part).
    objective : {"sum", "max"}
        As :func:`~pandas_dp.algorithms.marginals.plan.plan_residuals`.
    sensitivity : Sensitivity
        As :func:`~pandas_dp.algorithms.marginals.plan.plan_residuals`.
    public_totals : bool
        By geography with public totals: the rows that bound the tables with the totals exact.

    Returns
    -------
    ResidualPlan
        :func:`~pandas_dp.algorithms.marginals.plan.plan_residuals`'s plan when it meets every
        row, else the constrained optimum on the same exact grid.

    Examples
    --------
    >>> from pandas_dp.algorithms.marginals.workload import make_workload
    >>> from pandas_dp.privacy.loss import zcdp
    >>> work = make_workload([17, 2, 7, 2], [(0, 1), (2, 3), (0, 2), (1, 3)])
    >>> [round(float(r), 2) for r in alone_ratios(plan_residuals(work, loss=zcdp(1)))]
    [0.79, 1.23, 0.42, 2.31]
    >>> [bool(r <= 1) for r in alone_ratios(plan_no_worse_than_alone(work, loss=zcdp(1)))]
    [True, True, True, True]
    """
    plan = plan_residuals(workload, loss=loss, objective=objective, sensitivity=sensitivity)
    e = loss.variance_exponent
    strategies = plan.strategies
    if strategies and public_totals:
        # the rows that bound tables with exact totals are derived for the cells' orthogonal split only:
        # with ordered attributes and public totals no such bound is claimed (docs/methods/ordered.md)
        return plan
    maximal = set(workload.maximal)
    required = [a in maximal for a in workload.closure]
    # Discrete Laplace noise of scale t has variance 1 / (2 sinh(1 / (2 t))**2) >= 2 t**2 - 1/6
    # (1 / sinh(y)**2 >= 1 / y**2 - 1/3): bounding the planning variances by the alone one less
    # 1/6 bounds the exact ones by the exact alone variance. (The discrete Gaussian's deficit is
    # below 2.2e-7 of sigma**2 from sigma**2 = 1 on: left out.)
    # In planning units (k = 2 Delta_1**2 / epsilon**2), 1 / (6 k) = epsilon**2 / (12 Delta_1**2): exact.
    offset = float(Fraction(loss.amount) ** 2 / (12 * Fraction(sensitivity.l1) ** 2)) if e == 2 else 0.0
    if not float(len(workload.tables) ** e) - offset > 0.0:
        # the exact alone variance may be near 0: only the even split is as good, cell for cell
        return _grid_plan(workload, objective, plan.weights, loss, sensitivity, _even(workload), required, strategies)
    factors = _factors(workload, strategies) if strategies else None
    t = _general_coverage(workload, factors) if factors else _coverage_entries(workload)
    norms = [strategy_norm(strategies, w) for w in workload.tables] if strategies else None
    m = alone_rows(workload, e, public_totals=public_totals, offset=offset, factors=factors, norms=norms)
    current = np.array([float(s) for s in plan.shares])
    if float(_ratios(t, m, current, e).max()) <= 1.0:
        return plan
    solved = current
    if objective == "sum":
        c = _general_loss(workload, plan.weights, factors) if factors else _loss_floats(workload, plan.weights)
        solved = _constrained_sum(t, m, c, e, current, np.array(required))
    shares = _feasible(workload, t, m, e, solved, required)
    return _grid_plan(workload, objective, plan.weights, loss, sensitivity, shares, required, strategies)


def alone_variance(plan: ResidualPlan) -> Any:
    """The exact cell variance of a workload table measured alone with ``1 / T`` of the plan's loss (with ordered
    attributes, per table: the mean query variance of the table measured alone through its trees)."""
    part = plan.loss.part(Fraction(1, len(plan.workload.tables)))
    if not plan.strategies:
        return float(part.noise(plan.sensitivity, what="a table measured alone").variance())
    f = _factors(plan.workload, plan.strategies)
    return np.array([float(part.noise(strategy_sensitivity(plan.sensitivity, plan.strategies, w),
                                      what="a table measured alone").variance())
                     / strategy_norm(plan.strategies, w) * _alone_scale(f, w) for w in plan.workload.tables])


def alone_ratios(plan: ResidualPlan) -> np.ndarray:
    """Every workload table's exact cell variance over its alone variance (:func:`alone_variance`).

    The plan's loss is what it spends (its shares' sum, at most the loss asked for), so the
    alone variance is that of ``1 / T`` of it.
    """
    return plan.table_variances() / alone_variance(plan)
