"""Records and integer tables from a consistent non-negative table set (post-processing only).

The model of the records is a joint distribution over the union domain whose tables are the
published non-negative tables: the maximum-entropy one, fitted by iterative proportional fitting
(IPF, [1], [2]) from the uniform joint on a support: the cells under no 0 of any table (a cell under a
0 is 0 in every fit) and, for published tables, the cells where the projection's joint is above 0.
A fit then exists on that support with every cell of it above 0 (the projection's joint), so IPF
converges to the joint of largest entropy on it, geometrically; from the uniform start on every
cell it would only approach the zeros that the tables force jointly (a cycle of tables on the edge
of what non-negative joints can give), and slowly. IPF visits the tables in turn and scales the joint so that
its table matches the target (``q <- q * y_t / M_t q``, cells where ``M_t q`` is 0 left at 0). The
fitted joint invents no interaction beyond the tables' (for two tables without a shared column, it is
their product over the total). It stops when
every table is within ``tol`` times the total, or after ``max_iter`` sweeps (the fit reached is
kept; its error is reported). Only IEEE multiplications and divisions and fixed-order numpy sums:
the same tables give the same model on every CPU. When one table holds every column, the model is
that table itself (no fitting).

Integer tables (:func:`integer_joint`): the model, scaled to the rounded total, is rounded by the
controlled rounding of :mod:`pandas_dp.algorithms.controlled_rounding` down the tree of its prefix
tables (the total, the table on the first column, on the first two, ..., the joint; every value the
floor or the ceiling of its real value, largest remainders first, each the sum of its children):
deterministic, no randomness. Its tables are integers, non-negative and consistent, being the tables
of one integer joint. The largest workload table's columns lead, so that table is within 1 of its
non-negative value in every cell (one table holding every column: rounded cell by cell); the others
sum rounded joint cells, about ``sqrt(m / 12)`` off for a cell over ``m`` fractional joint cells.

Records (:func:`sample_joint`): ``n`` records drawn by systematic sampling [3] of the scaled model:
with ``C_i`` the running sum of ``n q_i / sum q`` and one uniform ``U``, cell ``i`` gets
``floor(C_i + U) - floor(C_{i-1} + U)`` records, so each cell gets the floor or the ceiling of its
expected count and any run of consecutive cells (in C order: a cell of a table on the first columns)
is within 1 of its expected count. ``U`` is the only draw, from raw generator bits (no libm).

References
----------
.. [1] W. E. Deming, F. F. Stephan. "On a Least Squares Adjustment of a Sampled Frequency Table When
   the Expected Marginal Totals are Known", Annals of Mathematical Statistics 11(4), 1940, 427-444.
.. [2] I. Csiszar. "I-Divergence Geometry of Probability Distributions and Minimization Problems",
   Annals of Probability 3(1), 1975, 146-158.
.. [3] W. G. Madow, L. H. Madow. "On the Theory of Systematic Sampling, I", Annals of Mathematical
   Statistics 15(1), 1944, 1-24.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pandas_dp.algorithms.controlled_rounding import controlled_round
from pandas_dp.algorithms.marginals.nonnegative import _spread, _total, check_joint, table_of

__all__ = ["RecordModel", "fit_model", "integer_joint", "sample_joint"]


@dataclass(frozen=True)
class RecordModel:
    """A joint over the union domain fitted to a table set.

    Attributes
    ----------
    joint : ndarray
        Non-negative, summing to the tables' total.
    error : float
        Largest absolute difference between a table of ``joint`` and its target.
    sweeps : int
        IPF sweeps over the tables (0 when one table holds every column).
    """

    joint: np.ndarray
    error: float
    sweeps: int


def _error(joint: np.ndarray, tables: Sequence[tuple[int, ...]], targets: Sequence[np.ndarray]) -> float:
    return max(float(np.max(np.abs(table_of(joint, t) - y))) for t, y in zip(tables, targets))


def fit_model(shape: Sequence[int], tables: Sequence[Sequence[int]], targets: Sequence[np.ndarray], *,
              support: np.ndarray | None = None, tol: float = 1e-9, max_iter: int = 2_000) -> RecordModel:
    """The maximum-entropy joint whose tables are ``targets`` (IPF), on ``support`` (a boolean joint: the
    cells allowed above 0; default all); see the module notes."""
    shape = tuple(int(s) for s in shape)
    n = check_joint(shape)
    axes = [tuple(int(a) for a in t) for t in tables]
    ys = [np.asarray(y, dtype=np.float64).reshape([shape[a] for a in t]) for y, t in zip(targets, axes)]
    full = next((k for k, t in enumerate(axes) if len(t) == len(shape)), None)
    if full is not None:
        joint = ys[full].copy()
        return RecordModel(joint=joint, error=_error(joint, axes, ys), sweeps=0)
    total = max(0.0, _total(ys[0]))
    # Start on the support every fit must have: a cell under a 0 of any table is 0 in every non-negative
    # fit. (From the uniform start IPF would only approach those zeros, sublinearly.)
    support = np.ones(shape, dtype=bool) if support is None else np.asarray(support, dtype=bool).reshape(shape)
    for t, y in zip(axes, ys):
        support = support & _spread(y > 0, t, len(shape))
    cells = int(np.count_nonzero(support))
    joint = np.where(support, total / max(cells, 1), 0.0)
    limit = tol * max(1.0, total)
    sweeps = 0
    error = _error(joint, axes, ys)
    while error > limit and sweeps < max_iter:
        sweeps += 1
        for t, y in zip(axes, ys):
            current = table_of(joint, t)
            ratio = np.divide(y, current, out=np.zeros_like(y), where=current > 0)
            joint = joint * _spread(ratio, t, len(shape))
        error = _error(joint, axes, ys)
    return RecordModel(joint=joint, error=error, sweeps=sweeps)


def integer_joint(joint: np.ndarray, total: int, first: Sequence[int] = ()) -> np.ndarray:
    """``joint`` scaled to ``total`` and rounded to integers: an int64 array shaped like ``joint``.

    Controlled rounding down the tree of prefix tables, the axes ``first`` leading: the total, then
    the table on the first axis, on the first two, ..., the joint, every value the floor or the
    ceiling of its real value and every one the sum of its children. So the table on ``first``
    (and each table on a prefix of it) is within 1 in every cell; other tables sum rounded joint
    cells.
    """
    shape = joint.shape
    order = [int(a) for a in first] + [a for a in range(joint.ndim) if a not in first]
    moved = np.transpose(np.asarray(joint, dtype=np.float64), order)
    mass = _total(moved)
    scaled = moved * (total / mass) if mass > 0 else np.full(moved.shape, total / max(moved.size, 1))
    scaled = np.maximum(scaled, 0.0)
    sizes = moved.shape
    values = [np.add.reduce(scaled, axis=tuple(range(k, len(sizes)))).reshape(-1, 1) if k < len(sizes)
              else scaled.reshape(-1, 1) for k in range(len(sizes) + 1)]
    values[0] = np.array([[float(total)]])
    parents: list[np.ndarray | None] = [None] + [np.arange(values[k].shape[0]) // sizes[k - 1]
                                                  for k in range(1, len(values))]
    totals: list[np.ndarray | None] = [np.array([[int(total)]])] + [None] * len(sizes)
    rounded = controlled_round(values, parents, totals=totals)[-1].reshape(sizes)
    return np.ascontiguousarray(np.transpose(rounded, np.argsort(order))).reshape(shape)


def sample_joint(joint: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Record counts per joint cell (int64, summing to ``n``) by systematic sampling of ``n * joint / sum``."""
    flat = np.ravel(joint).astype(np.float64)
    mass = _total(flat)
    p = flat / mass if mass > 0 else np.full(flat.size, 1.0 / flat.size)
    running = np.cumsum(p * n)
    # exactly n from the last cell the model allows on (no record lands in a cell of probability 0)
    running[int(np.flatnonzero(p > 0)[-1]):] = n
    u = rng.random()
    ends = np.floor(running + u)
    counts = np.diff(np.concatenate([[np.floor(u)], ends]))
    return counts.astype(np.int64).reshape(joint.shape)
