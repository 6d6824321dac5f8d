"""Non-negative consistent tables: a weighted least-squares projection of a table set onto the marginals
of a non-negative joint (post-processing of released tables only).

Input: the attribute sizes ``shape`` of the union domain, the tables ``tables[t]`` (sorted tuples of
axes of that domain), their unconstrained estimates ``y_t`` (arrays shaped like the table, axes in
increasing order) and one positive weight ``w_t`` per table. Output: a non-negative joint ``x`` over
the union domain solving

    minimise   1/2 sum_t w_t ||M_t x - y_t||^2   subject to   x >= 0,

``M_t x`` the table ``t`` of ``x`` (``x`` summed over the other axes). The tables of ``x`` are the
published ones: each is the sum of any larger one over its extra columns, all share one total, and
every cell is ``>= 0``, because they are all read from one non-negative joint. (A set of non-negative
tables that agree pairwise need not be the tables of any non-negative joint when the tables form a
cycle; this set is, so records can always be drawn from it.) The optimal tables are unique (the
objective is strictly convex in them), the joint is not: only the tables are published.

With ``w_t = 1 / v_t`` (``v_t`` the cell variance of table ``t``) this is the variance-weighted
distance to the unconstrained GLS estimate, table by table (the correlations between the cells of
the GLS tables are left out of the weights). When the unconstrained tables are the tables of a
non-negative joint (e.g. all cells well above 0 and one table holds every column) the objective
reaches 0 and they are returned unchanged, up to the solver's tolerance.

Solver: accelerated projected gradient (FISTA, [1]) with gradient restarts [2] from the uniform
joint with the estimated total, step ``1/L`` with ``L = sum_t w_t N / n_t`` (the largest eigenvalue
bound of ``sum_t w_t M_t^T M_t``, ``N`` cells in the joint, ``n_t`` in table ``t``), stopped when the
gradient-mapping step ``max |y - P(y - grad / L)|`` is below ``tol`` times the total. It uses only
IEEE additions, multiplications and divisions, ``math.sqrt`` (correctly rounded) and numpy reductions
of fixed order (no BLAS, no libm ``exp``/``log``), so a given input gives byte-identical output on
every CPU with the same numpy. The joint is then rounded to a dyadic grid ``2**-k`` (``k`` the
largest with the total below ``2**50`` grid steps, about ``1e-15`` of the total: far below the
solver's tolerance, so it does not change the fit): every sum of grid values is then exact in
float64 in any order, so the published tables agree *exactly*, not just to rounding error, and are
non-negative.

References
----------
.. [1] A. Beck, M. Teboulle. "A Fast Iterative Shrinkage-Thresholding Algorithm for Linear Inverse
   Problems", SIAM J. Imaging Sciences 2(1), 2009, 183-202.
.. [2] B. O'Donoghue, E. Candes. "Adaptive Restart for Accelerated Gradient Schemes", Foundations of
   Computational Mathematics 15, 2015, 715-732.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pandas_dp.errors import DomainError, ParameterError

__all__ = ["MAX_JOINT", "NonnegativeFit", "check_joint", "table_of", "project_nonnegative", "dyadic_round",
           "momentum_step"]

#: Largest union domain (cells of the joint over every workload column) the projection and the
#: record model work on: each iteration reads every cell once per table.
MAX_JOINT = 1 << 22


def check_joint(shape: Sequence[int], what: str = "nonnegative=True / integer=True") -> int:
    """Cells of the union domain, refused above :data:`MAX_JOINT` (a public check, before any charge)."""
    cells = math.prod(int(s) for s in shape)
    if cells > MAX_JOINT:
        raise DomainError(f"{what} works on the joint domain of every workload column, {cells:,} cells here; the "
                          f"limit is {MAX_JOINT:,} (2**22). Use coarser bins or fewer categories, or publish the "
                          f"unconstrained tables (without nonnegative/integer).")
    return cells


def table_of(joint: np.ndarray, axes: Sequence[int]) -> np.ndarray:
    """The table of ``joint`` on ``axes`` (increasing), summed over the other axes."""
    drop = tuple(k for k in range(joint.ndim) if k not in axes)
    return np.add.reduce(joint, axis=drop) if drop else joint.copy()


def _spread(table: np.ndarray, axes: Sequence[int], ndim: int) -> np.ndarray:
    """``table`` broadcast to the joint's dimensions (``M_t^T`` up to the broadcast)."""
    shape = [1] * ndim
    for k, a in enumerate(axes):
        shape[a] = table.shape[k]
    return table.reshape(shape)


def _total(x: np.ndarray) -> float:
    return math.fsum(np.ravel(x).tolist()) if x.size <= 1 << 16 else float(np.add.reduce(x, axis=None))


@dataclass(frozen=True)
class NonnegativeFit:
    """The projection's output.

    Attributes
    ----------
    joint : ndarray
        The non-negative joint over the union domain (on the dyadic grid ``grid``).
    grid : float
        The rounding step of the joint (a power of two).
    iterations : int
        Gradient steps taken.
    step : float
        The last gradient-mapping step, in counts per joint cell (the stopping measure).
    """

    joint: np.ndarray
    grid: float
    iterations: int
    step: float


def dyadic_round(joint: np.ndarray, total: float) -> tuple[np.ndarray, float]:
    """``joint`` rounded half to even onto ``2**-k``, ``k`` the largest with ``2 * total * 2**k <= 2**50``
    (``joint`` sums to about ``total``): sums of its values are exact in float64, in any order."""
    k = 49 - math.frexp(max(float(total), 1.0))[1]
    grid = math.ldexp(1.0, -k)
    return np.maximum(np.round(joint / grid) * grid, 0.0), grid


def momentum_step(x: np.ndarray, new: np.ndarray, y_point: np.ndarray, momentum: float) -> tuple[np.ndarray, float]:
    """The next extrapolation point and momentum of accelerated projected gradient (FISTA, Beck and Teboulle
    2009), with a gradient restart when the momentum direction points uphill (O'Donoghue and Candes 2015)."""
    if float(np.add.reduce(((y_point - new) * (new - x)).ravel())) > 0.0:
        return new, 1.0
    nxt = (1.0 + math.sqrt(1.0 + 4.0 * momentum * momentum)) / 2.0
    return new + ((momentum - 1.0) / nxt) * (new - x), nxt


def project_nonnegative(shape: Sequence[int], tables: Sequence[Sequence[int]], targets: Sequence[np.ndarray],
                        weights: Sequence[float], *, tol: float = 1e-12, max_iter: int = 20_000) -> NonnegativeFit:
    """The weighted least-squares non-negative joint whose tables are closest to ``targets``.

    Parameters
    ----------
    shape : sequence of int
        Sizes of the union domain's axes.
    tables : sequence of sequence of int
        Each table's axes, increasing.
    targets : sequence of ndarray
        Each table's unconstrained estimate, shaped ``[shape[a] for a in table]``.
    weights : sequence of float
        Positive weight of each table (e.g. one over its cell variance).
    tol : float
        Stop when the gradient-mapping step is at most ``tol * max(1, total)`` in every joint cell.
    max_iter : int
        At most this many gradient steps (the fit reached is returned, with its step).

    Returns
    -------
    NonnegativeFit
    """
    shape = tuple(int(s) for s in shape)
    ndim = len(shape)
    n = check_joint(shape)
    axes = [tuple(int(a) for a in t) for t in tables]
    ys = [np.asarray(y, dtype=np.float64).reshape([shape[a] for a in t]) for y, t in zip(targets, axes)]
    w = np.asarray(weights, dtype=np.float64)
    if len(ys) != len(axes) or w.shape != (len(axes),) or not np.all(np.isfinite(w) & (w > 0)) \
            or not all(np.all(np.isfinite(y)) for y in ys):
        raise ParameterError("project_nonnegative takes one finite target and one positive weight per table.")
    w = w / float(w.max())
    lipschitz = math.fsum(float(wt) * (n / y.size) for wt, y in zip(w, ys))
    total = max(0.0, _total(ys[0]))
    scale = max(1.0, total)

    def gradient(x: np.ndarray) -> np.ndarray:
        g = np.zeros(shape)
        for wt, t, y in zip(w, axes, ys):
            g = g + _spread(float(wt) * (table_of(x, t) - y), t, ndim)
        return g

    x = np.full(shape, total / n)
    y_point = x
    momentum = 1.0
    step = math.inf
    it = 0
    while it < max_iter:
        it += 1
        new = np.maximum(y_point - gradient(y_point) / lipschitz, 0.0)
        step = float(np.max(np.abs(new - y_point)))
        if step <= tol * scale:
            x = new
            break
        y_point, momentum = momentum_step(x, new, y_point, momentum)
        x = new
    joint, grid = dyadic_round(x, _total(x))
    return NonnegativeFit(joint=joint, grid=grid, iterations=it, step=step)
