"""Ordered attributes in table sets: the ranges asked of them, and the tree each one is measured by.

A categorical attribute is asked for its cells, and ResidualPlanner measures it
by its cells (the identity). An ordered attribute (ages, income brackets) is
asked for ranges: all prefixes, all ranges, or a public list of ranges (always
with its cells). Summing cells answers a range with error growing with its
length; a tree of block counts over the attribute answers it with error
polylogarithmic in the length (Hay et al. 2010; Qardaji, Yang, Li 2013). This
module gives each ordered attribute such a tree and computes, exactly the same
way on every machine, what the plan and the reconstruction need from it.

The queries and the strategy
----------------------------
An attribute's asked queries form a matrix ``Q`` (one row per query, a 0/1
indicator of a range); only its Gram ``G = Q^T Q`` matters and has a closed form:
``n - max(j, k)`` for prefixes, ``(min(j, k) + 1)(n - max(j, k))`` for all ranges,
``sum_r 1_r 1_r^T`` for a list. A table's ordered attribute is asked for its ranges *and* its cells:
the attribute's loss is the mean variance of its ranges plus ``lambda`` times the mean variance of
its cells (``G_lambda = G / q + lambda I / n``), with ``lambda = tr(G) / q``, the ranges' mean variance
when the cells alone are measured (each kind weighed relative to what summing cells gives it:
scale-free, and a tree that buys little for the ranges with much of the cells' accuracy loses to
the cells alone). A bound keeps the mean cell variance within :data:`CELL_BOUND` of the cells
measured alone (``1.21``: 10% in standard error), ``lambda`` rising as its multiplier when needed.

A strategy is a tree of *levels*, each a partition of ``0..n-1`` into consecutive
blocks of one size (``1`` is the cells, ``n`` the total), with a positive
integer weight ``w_l`` per level. Measuring a marginal through it means: for
every combination of one level per ordered attribute, the marginal's block
counts times ``prod_i w_{i,l_i}``, all with the same integer noise. The values
are integers, so the noise is the exact discrete Gaussian (or Laplace) of the
plan; one row moves one block per level by ``prod w``, so the measurement's
sensitivity is the marginal's times ``prod_i sqrt(sum_l w_il**2)`` in L2 and
``prod_i sum_l w_il`` in L1 (every level partitions the attribute). With one
noise for all, the measurement's precision is exactly ``(1 / v) kron_i K_i``,
``K_i = sum_l w_il**2 M_il^T M_il``: a Kronecker product whatever the exact
variance ``v`` of the integer noise, so the variances below are exact. The
plan works with the normalised ``X_i = K_i / F_i`` (``F_i = sum_l w_il**2`` under
zCDP, ``(sum_l w_il)**2`` under pure DP: unit sensitivity, like the cells).

The oblique residual split
--------------------------
ResidualPlanner splits each attribute's space into the total (``1``) and the
vectors summing to zero, orthogonally. That split is what makes GLS decouple,
but it needs ``X 1`` parallel to ``1``, which a tree over a domain its branching
does not divide, or a prefix-optimal strategy, does not give. Any ``X`` works
with the split along ``pi = X^{-1} 1 / b``, ``b = 1^T X^{-1} 1``: every ``x`` is
``(1^T x) pi + z`` with ``1^T z = 0``, and in the coordinates ``(1^T x, z)`` both
``X`` (as ``1 / b`` on the total plus a block on ``z``) and the summing query
``1 1^T`` (as ``1`` on the total, ``0`` on ``z``) are block diagonal, since
``(pi t)^T X z = t 1^T z / b = 0``. So a residual ``B`` (the attributes whose
``z`` part is kept) is measured by every measured marginal ``A`` containing ``B``
with covariance ``v_A prod_{i in A \\ B} b_i  kron_{i in B} C_i``,
``C_i = X_i^{-1} - b_i pi_i pi_i^T``, the same shape for every ``A``: GLS is
again a precision-weighted mean per residual, with ``b_i`` in place of ``n_i``,
and every table is the sum of its residuals with the total spread along ``pi_i``
instead of evenly. For the cells (``X = I``) this is ResidualPlanner's split
exactly (``b = n``, ``pi = 1 / n``, ``C = I - J / n``).

A query ``kron_i q_i`` on table ``W`` then has the exact variance
``sum_{B subset W} V_B prod_{i in B} q_i^T C_i q_i prod_{i in W \\ B} (q_i^T pi_i)**2``,
and the workload's summed variance puts ``t_i = tr(G_i C_i)`` and
``u_i = pi_i^T G_i pi_i`` where the cells put ``n_i - 1`` and ``1 / n_i``
(:func:`~pandas_dp.algorithms.marginals.plan.plan_residuals`).

Choosing the tree
-----------------
For every branching in :data:`BRANCHINGS` (and the cells alone, and cells with
the total), the level weights minimise the attribute's loss ``tr(G_lambda X^{-1})``:
convex in the levels' shares ``u`` under zCDP (``X = sum u_l M_l^T M_l``), where
:data:`_WEIGHT_STEPS` steps of the multiplicative algorithm of optimal design
(``u_l <- u_l sqrt(h_l / f)``, ``h_l = tr(X^{-1} G X^{-1} M_l^T M_l)``, from
running block sums) approach the optimum; under pure DP (``X = sum u_l**2 M_l^T M_l``)
the steps ``u_l <- u_l (u_l h_l / f)**(1/4)`` reach a stationary point. With a cell
bound, ``lambda`` moves with the shares as the constraint's multiplier,
``lambda <- max(lambda_0, lambda (c / bound)**2)`` (``c`` the mean cell variance). The
shares become integer weights up to :data:`WEIGHT_CAP` (rounded; the cells keep at least 1);
a candidate whose integer tree breaks the cell bound is dropped, and of the rest the one
with the smallest loss at ``lambda_0`` is chosen (none left: the cells alone).
Every float here comes from elementwise operations, ``np.sqrt``, sequential running
sums (``np.cumsum``) and ``math.fsum`` (products and Gauss-Jordan inverses written
as elementwise updates in a fixed order, no BLAS or LAPACK), so the choice, and
the plan built on it, are the same bit for bit on every machine.

References
----------
.. [1] M. Hay, V. Rastogi, G. Miklau, D. Suciu. "Boosting the Accuracy of
   Differentially Private Histograms Through Consistency", VLDB 2010.
.. [2] W. Qardaji, W. Yang, N. Li. "Understanding Hierarchical Methods for
   Differentially Private Histograms", VLDB 2013.
.. [3] Y. Xiao, G. He, D. Zhang, D. Kifer. "An Optimal and Scalable Matrix
   Mechanism for Noisy Marginals under Convex Loss Functions", NeurIPS 2023.
.. [4] G. He, Y. Xiao, L. Toksoz, Z. Ding, D. Zhang, D. Kifer. "ResidualPlanner+:
   a scalable matrix mechanism for marginals and beyond", arXiv:2305.08175.
.. [5] R. McKenna, G. Miklau, M. Hay, A. Machanavajjhala. "Optimizing Error of
   High-Dimensional Statistical Queries Under Differential Privacy", VLDB 2018.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from pandas_dp._utils.rational import safe_repr
from pandas_dp.errors import ParameterError

__all__ = ["AttributeQueries", "TreeStrategy", "choose_strategy", "BRANCHINGS", "WEIGHT_CAP", "CELL_BOUND",
           "MAX_ORDERED_SIZE", "matmul", "inverse_spd"]

#: Branchings tried for every ordered attribute.
BRANCHINGS = (2, 4, 8, 16)
#: The largest integer weight of a level (the measured values are block counts times the weights'
#: product over the marginal's ordered attributes: at most 32**k times a count).
WEIGHT_CAP = 32
#: The largest ordered attribute (its strategy's matrices are ``n x n``; choosing it costs ``O(n**3)`` per
#: step: about 3 s at 100 values, 16 s at 200, 2 minutes at 400 on one core).
MAX_ORDERED_SIZE = 400
#: The mean cell variance an ordered column's tree may give, per unit of its cells measured alone
#: (module docstring).
CELL_BOUND = 1.21
#: Steps of the level-weight iterations.
_WEIGHT_STEPS = 60

_KINDS = ("prefix", "ranges")


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` as ``sum_k outer(a[:, k], b[k])`` in the order of ``k``: elementwise, the same bits everywhere."""
    out = np.zeros((a.shape[0], b.shape[1]))
    for k in range(a.shape[1]):
        out += np.multiply.outer(a[:, k], b[k])
    return out


def inverse_spd(x: np.ndarray) -> np.ndarray:
    """Inverse of a symmetric positive definite matrix by Gauss-Jordan elimination without pivoting.

    Elementwise row updates in a fixed order (no LAPACK): the same bits on every machine. The
    result is symmetrised (``(y + y^T) / 2``).
    """
    n = x.shape[0]
    a = np.concatenate([np.array(x, dtype=np.float64), np.eye(n)], axis=1)
    for k in range(n):
        a[k] = a[k] / a[k, k]
        col = a[:, k].copy()
        col[k] = 0.0
        a -= np.multiply.outer(col, a[k])
    y = a[:, n:]
    return (y + y.T) / 2.0


def _fsum(x: np.ndarray) -> float:
    return math.fsum(np.ravel(x).tolist())


@dataclass(frozen=True)
class AttributeQueries:
    """The queries asked of one ordered attribute of ``size`` values (codes ``0..size-1``).

    Attributes
    ----------
    kind : {"prefix", "ranges", "list"}
        All prefixes ``[0, k]``; all ranges ``[a, b]``; the cells and the ``ranges`` given.
    size : int
    ranges : tuple of (int, int)
        Inclusive code ranges (``kind="list"`` only).
    cell_bound : float or None
        The largest mean cell variance the tree may give, per unit of the cells measured alone
        (None: the ranges alone decide, as in the Prefix and AllRange workloads of the literature).
    """

    kind: str
    size: int
    ranges: tuple[tuple[int, int], ...] = ()
    cell_bound: float | None = None

    @property
    def count(self) -> int:
        """How many queries are asked."""
        n = self.size
        return {"prefix": n, "ranges": n * (n + 1) // 2}.get(self.kind, len(self.ranges))

    def gram(self) -> np.ndarray:
        """``Q^T Q`` (float64 holding exact integers)."""
        n = self.size
        j = np.arange(n)
        lo, hi = np.minimum.outer(j, j), np.maximum.outer(j, j)
        if self.kind == "prefix":
            return (n - hi).astype(np.float64)
        if self.kind == "ranges":
            return ((lo + 1) * (n - hi)).astype(np.float64)
        diff = np.zeros((n + 1, n + 1), dtype=np.int64)
        if self.ranges:
            a = np.array([r[0] for r in self.ranges])
            b = np.array([r[1] for r in self.ranges]) + 1
            np.add.at(diff, (a, a), 1)
            np.add.at(diff, (a, b), -1)
            np.add.at(diff, (b, a), -1)
            np.add.at(diff, (b, b), 1)
        return np.cumsum(np.cumsum(diff, axis=0), axis=1)[:n, :n].astype(np.float64)

    def mixed_gram(self, cells_weight: float) -> np.ndarray:
        """``G / q + lambda I / n``: the mean variance of the queries plus ``lambda`` times that of the cells."""
        return self.gram() / float(self.count) + np.eye(self.size) * (cells_weight / self.size)

    def matrix(self) -> np.ndarray:
        """The queries as 0/1 rows (tests and small domains only)."""
        n = self.size
        if self.kind == "prefix":
            spans = [(0, k) for k in range(n)]
        elif self.kind == "ranges":
            spans = [(a, b) for a in range(n) for b in range(a, n)]
        else:
            spans = list(self.ranges)
        out = np.zeros((len(spans), n))
        for row, (a, b) in enumerate(spans):
            out[row, a:b + 1] = 1.0
        return out

    def describe(self) -> Any:
        """JSON-friendly record: the kind, or the list of ranges."""
        return self.kind if self.kind in _KINDS else [list(r) for r in self.ranges]

    @classmethod
    def parse(cls, spec: Any, size: int, column: Any, labels: Sequence[Any] | None = None) -> "AttributeQueries":
        """Read one value of ``ordered=`` for a column of ``size`` public values (cells kept within
        :data:`CELL_BOUND`).

        ``"prefix"``, ``"ranges"`` or a list of ``(low, high)`` pairs of the column's labels (or of
        positions ``0..size-1`` when ``labels`` is None), inclusive, ``low <= high``.

        Raises
        ------
        ParameterError
            Naming the column and the fix.
        """
        if isinstance(spec, str):
            if spec not in _KINDS:
                raise ParameterError(f"ordered[{safe_repr(column)}] must be 'prefix', 'ranges' or a list of "
                                     f"(low, high) ranges of its values. Got {safe_repr(spec)}.")
            return cls(kind=spec, size=size, cell_bound=CELL_BOUND)
        if isinstance(spec, (bytes, dict)) or not hasattr(spec, "__iter__"):
            raise ParameterError(f"ordered[{safe_repr(column)}] must be 'prefix', 'ranges' or a list of "
                                 f"(low, high) ranges of its values. Got {safe_repr(spec)}.")
        position = None if labels is None else {_key(v): k for k, v in enumerate(labels)}
        out: list[tuple[int, int]] = []
        for item in list(spec):
            pair = list(item) if hasattr(item, "__iter__") and not isinstance(item, (str, bytes)) else None
            if pair is None or len(pair) != 2:
                raise ParameterError(f"ordered[{safe_repr(column)}] lists ranges as (low, high) pairs of the "
                                     f"column's values. Got {safe_repr(item)}.")
            ends = [_position(v, position, size, column) for v in pair]
            if ends[0] > ends[1]:
                raise ParameterError(f"ordered[{safe_repr(column)}]: the range {safe_repr(item)} ends before it "
                                     f"starts. Pass (low, high) with low <= high.")
            if tuple(ends) not in out:
                out.append((ends[0], ends[1]))
        if not out:
            raise ParameterError(f"ordered[{safe_repr(column)}] is an empty list of ranges. Pass at least one "
                                 f"(low, high) range, or 'ranges' for all of them.")
        return cls(kind="list", size=size, ranges=tuple(out), cell_bound=CELL_BOUND)


def _key(value: Any) -> Any:
    return (type(value).__name__ if isinstance(value, (bool, np.bool_)) else "v", value)


def _position(value: Any, position: dict[Any, int] | None, size: int, column: Any) -> int:
    if position is None:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not 0 <= value < size:
            raise ParameterError(f"ordered[{safe_repr(column)}]: {safe_repr(value)} is not a position 0..{size - 1}.")
        return int(value)
    try:
        found = position.get(_key(value))
    except TypeError:
        found = None
    if found is None:
        raise ParameterError(f"ordered[{safe_repr(column)}]: {safe_repr(value)} is not one of the column's public "
                             f"values. Name range ends by the values given in bins=/categories=.")
    return found


def _starts(n: int, block: int) -> np.ndarray:
    return np.arange(0, n, block)


@dataclass(frozen=True)
class TreeStrategy:
    """Levels of consecutive blocks over ``0..size-1`` with positive integer weights (module docstring).

    Attributes
    ----------
    size : int
    blocks : tuple of int
        Each level's block size (the last block of a level may be shorter), increasing; ``1`` is the cells.
    weights : tuple of int
        Each level's weight (positive).
    exponent : int
        1 under zCDP (``F = sum w**2``), 2 under pure DP (``F = (sum w)**2``).
    cells_weight : float
        The ``lambda`` of the attribute's loss the tree was chosen for (module docstring).
    """

    size: int
    blocks: tuple[int, ...]
    weights: tuple[int, ...]
    exponent: int
    cells_weight: float = 0.0

    @property
    def l1(self) -> int:
        """The L1 factor of the measurement's sensitivity (``sum w``)."""
        return sum(self.weights)

    @property
    def l2_squared(self) -> int:
        """The squared-L2 factor of the measurement's sensitivity (``sum w**2``)."""
        return sum(w * w for w in self.weights)

    @property
    def norm(self) -> int:
        """``F``: ``sum w**2`` (zCDP) or ``(sum w)**2`` (pure DP); ``X = K / F``."""
        return self.l2_squared if self.exponent == 1 else self.l1 ** 2

    @property
    def rows(self) -> int:
        """Measured values per marginal cell along this attribute (blocks over all levels)."""
        return sum(-(-self.size // b) for b in self.blocks)

    def describe(self) -> dict[str, Any]:
        """JSON-friendly record."""
        return {"size": self.size, "blocks": list(self.blocks), "weights": list(self.weights),
                "cells_weight": self.cells_weight}

    # --- the matrices (deterministic) ---
    @cached_property
    def k(self) -> np.ndarray:
        """``K = sum_l w_l**2 M_l^T M_l`` (float64 holding exact integers)."""
        n = self.size
        j = np.arange(n)
        out = np.zeros((n, n))
        for b, w in zip(self.blocks, self.weights):
            same = (j[:, None] // b) == (j[None, :] // b)
            out += float(w * w) * same
        return out

    @cached_property
    def xinv(self) -> np.ndarray:
        """``X^{-1} = F K^{-1}``."""
        return inverse_spd(self.k) * float(self.norm)

    @cached_property
    def b(self) -> float:
        """``1^T X^{-1} 1``."""
        return math.fsum(self._xinv_one.tolist())

    @cached_property
    def _xinv_one(self) -> np.ndarray:
        return np.array([math.fsum(row) for row in self.xinv.tolist()])

    @cached_property
    def pi(self) -> np.ndarray:
        """``X^{-1} 1 / b``: how the total spreads over the attribute (sums to 1)."""
        return self._xinv_one / self.b

    @cached_property
    def c(self) -> np.ndarray:
        """``C = X^{-1} - b pi pi^T``: covariance of the zero-sum part per unit of residual variance."""
        return self.xinv - self.b * np.multiply.outer(self.pi, self.pi)

    def factors(self, gram: np.ndarray) -> tuple[float, float]:
        """``(t, u) = (tr(G C), pi^T G pi)``: the workload's summed variance per unit of residual variance
        on the zero-sum part and on the total."""
        u = _fsum(gram * np.multiply.outer(self.pi, self.pi))
        return _fsum(gram * self.c), u

    # --- applying it (measurement and reconstruction; not planning) ---
    def measure(self, values: np.ndarray, axis: int) -> np.ndarray:
        """``S`` along ``axis``: every level's block sums times its weight, levels concatenated (integers)."""
        parts = []
        for b, w in zip(self.blocks, self.weights):
            sums = np.add.reduceat(values, _starts(self.size, b), axis=axis) if b > 1 else values
            parts.append(sums * w)
        return np.concatenate(parts, axis=axis)

    def back(self, values: np.ndarray, axis: int) -> np.ndarray:
        """``K^{-1} S^T`` along ``axis``: the cells' GLS estimate from one measurement's values."""
        n = self.size
        moved = np.moveaxis(np.asarray(values, dtype=np.float64), axis, -1)
        out = np.zeros(moved.shape[:-1] + (n,))
        at = 0
        for b, w in zip(self.blocks, self.weights):
            m = -(-n // b)
            seg = moved[..., at:at + m]
            out += np.repeat(seg, b, axis=-1)[..., :n] * float(w)
            at += m
        kinv = self.xinv / float(self.norm)
        return np.moveaxis(out @ kinv, -1, axis)

    def split(self, values: np.ndarray, axis: int) -> np.ndarray:
        """The zero-sum part along ``axis``: ``z = x - pi (1^T x)``."""
        moved = np.moveaxis(values, axis, -1)
        return np.moveaxis(moved - moved.sum(axis=-1, keepdims=True) * self.pi, -1, axis)


def _levels(n: int, branching: int | None) -> tuple[int, ...]:
    if branching is None:
        return (1,)
    if branching == 0:
        return (1, n) if n > 1 else (1,)
    out = [1]
    while out[-1] * branching < n:
        out.append(out[-1] * branching)
    out.append(n)
    return tuple(dict.fromkeys(out))


def _total(x: np.ndarray) -> float:
    """The sum of ``x``'s elements in index order (one sequential ``cumsum``): the same bits everywhere."""
    return float(np.cumsum(np.ravel(x))[-1])


def _block_sums(y: np.ndarray, block: int) -> float:
    """``sum_B 1_B^T y 1_B`` over the consecutive blocks of size ``block``, from 2-D running sums."""
    n = y.shape[0]
    p = np.zeros((n + 1, n + 1))
    p[1:, 1:] = np.cumsum(np.cumsum(y, axis=0), axis=1)
    ends = np.minimum(np.arange(block, n + block, block), n)
    starts = ends - np.minimum(block, ends - np.arange(0, n, block))
    return _total(p[ends, ends] - p[starts, ends] - p[ends, starts] + p[starts, starts])


def _cell_variance(xinv: np.ndarray) -> float:
    return _total(np.diag(xinv)) / xinv.shape[0]


def _tree_x(u: np.ndarray, masks: list[np.ndarray], exponent: int) -> np.ndarray:
    x = np.zeros(masks[0].shape)
    for s, m in zip(u.tolist(), masks):
        x += (s if exponent == 1 else s * s) * m
    return x


def _shares(ranges: np.ndarray, n: int, blocks: tuple[int, ...], exponent: int,
            bound: float | None) -> tuple[list[float], float]:
    """Level shares ``u`` and the cells' weight ``lambda`` by :data:`_WEIGHT_STEPS` steps (module docstring):
    the multiplicative step on ``u`` for the loss ``G / q + lambda I / n``; with a cell bound ``lambda``
    starts at the ranges' mean variance under the cells alone, ``tr(G) / q`` (ranges and cells weighed
    relative to what the cells alone give them), and rises as the bound's multiplier,
    ``lambda <- max(lambda_0, lambda (c / bound)**2)`` (``c`` the mean cell variance)."""
    j = np.arange(n)
    masks = [((j[:, None] // b) == (j[None, :] // b)).astype(np.float64) for b in blocks]
    floor = 0.0 if bound is None else _total(np.diag(ranges))
    lam = floor
    if len(blocks) == 1:
        return [1.0], lam
    u = np.full(len(blocks), 1.0 / len(blocks))
    eye = np.eye(n) / n
    for _ in range(_WEIGHT_STEPS):
        xinv = inverse_spd(_tree_x(u, masks, exponent))
        gram = ranges + lam * eye
        y = matmul(matmul(xinv, gram), xinv)
        f = _total(gram * xinv)
        h = np.array([_block_sums(y, b) for b in blocks])
        step = np.sqrt(h / f) if exponent == 1 else np.sqrt(np.sqrt(u * h / f))
        u = u * step
        u = u / _total(u)
        if bound is not None:
            ratio = _cell_variance(xinv) / bound
            lam = max(floor, lam * ratio * ratio)
    return u.tolist(), lam


def _integer_weights(shares: Sequence[float], exponent: int) -> tuple[int, ...]:
    top = max(shares)
    out = []
    for k, s in enumerate(shares):
        ratio = math.sqrt(s / top) if exponent == 1 else s / top
        w = int(math.floor(ratio * WEIGHT_CAP + 0.5))
        out.append(max(w, 1) if k == 0 else w)
    return tuple(out)


def _tree(n: int, blocks: tuple[int, ...], shares: Sequence[float], exponent: int, lam: float) -> TreeStrategy:
    weights = _integer_weights(shares, exponent)
    kept = tuple((b, w) for b, w in zip(blocks, weights) if w > 0)
    g = math.gcd(*(w for _, w in kept))
    return TreeStrategy(size=n, blocks=tuple(b for b, _ in kept), weights=tuple(w // g for _, w in kept),
                        exponent=exponent, cells_weight=lam)


@functools.lru_cache(maxsize=64)
def choose_strategy(queries: AttributeQueries, exponent: int) -> TreeStrategy:
    """The tree for ``queries`` (module docstring): per candidate (the cells, cells and total, every branching of
    :data:`BRANCHINGS`), level shares and the cells' weight by :func:`_shares`, rounded to integer weights;
    a candidate whose integer tree's mean cell variance is above the
    bound is dropped; the candidate with the smallest loss (mean range variance plus, with a bound, the
    relative weight times the mean cell variance) wins. The same on every machine."""
    n = queries.size
    ranges = queries.gram() / float(queries.count)
    bound = queries.cell_bound
    best: TreeStrategy | None = None
    best_f = math.inf
    tried: set[tuple[int, ...]] = set()
    for branching in (None, 0, *BRANCHINGS):
        blocks = _levels(n, branching)
        if blocks in tried or (branching is not None and branching >= n):
            continue
        tried.add(blocks)
        shares, lam = _shares(ranges, n, blocks, exponent, bound)
        candidate = _tree(n, blocks, shares, exponent, lam)
        if bound is not None and _cell_variance(candidate.xinv) > bound:
            continue
        # the loss the shares minimise, at the relative weight (the bound's multiplier only ever adds to it)
        f = _total(ranges * candidate.xinv) + (0.0 if bound is None else _total(np.diag(ranges)) *
                                               _cell_variance(candidate.xinv))
        if f < best_f:
            best, best_f = candidate, f
    if best is None:   # no tree keeps the cells within the bound: the cells alone (variance 1)
        return TreeStrategy(size=n, blocks=(1,), weights=(1,), exponent=exponent, cells_weight=0.0)
    return best


@dataclass(frozen=True, eq=False)
class AxisSplit:
    """How one attribute of a table splits into its total and its zero-sum part (module docstring).

    ``pi`` None: a categorical attribute (``pi = 1 / n``, ``C = I - J / n``, in closed form).
    """

    size: int
    pi: np.ndarray | None = None
    c: np.ndarray | None = None

    @classmethod
    def of(cls, size: int, strategy: TreeStrategy | None) -> "AxisSplit":
        """The split of an attribute measured by ``strategy`` (None: its cells)."""
        return cls(size) if strategy is None else cls(size, strategy.pi, strategy.c)

    def zero_sum(self, q: np.ndarray) -> np.ndarray:
        """``q_r^T C q_r`` for every row ``q_r`` of ``q`` (shape ``(m, n)``)."""
        if self.c is None:
            return (q * q).sum(axis=1) - q.sum(axis=1) ** 2 / self.size
        return np.einsum("mi,ij,mj->m", q, self.c, q)

    def total(self, q: np.ndarray) -> np.ndarray:
        """``(q_r^T pi)**2`` for every row of ``q``."""
        return (q.sum(axis=1) / self.size) ** 2 if self.pi is None else (q @ self.pi) ** 2

    def cells(self) -> tuple[np.ndarray, np.ndarray]:
        """The two factors for single cells: ``diag(C)`` and ``pi**2``."""
        if self.pi is None:
            n = self.size
            return np.full(n, (n - 1) / n), np.full(n, 1.0 / (n * n))
        assert self.c is not None
        return np.diag(self.c).copy(), self.pi ** 2


def box_variances(subset_variances: Sequence[float], splits: Sequence[AxisSplit],
                  queries: Sequence[np.ndarray]) -> np.ndarray:
    """Exact variances of Kronecker queries ``kron_k q_k`` on one table (``queries[k]`` of shape ``(m, n_k)``):
    ``sum_B V_B prod_{k in B} q_k^T C_k q_k prod_{k not in B} (q_k^T pi_k)**2``, ``B`` a bit mask over the axes."""
    zero = [s.zero_sum(np.asarray(q, dtype=np.float64)) for s, q in zip(splits, queries)]
    total = [s.total(np.asarray(q, dtype=np.float64)) for s, q in zip(splits, queries)]
    out = np.zeros(len(zero[0]) if zero else 1)
    for mask, v in enumerate(subset_variances):
        term = np.full(out.shape, float(v))
        for k in range(len(splits)):
            term = term * (zero[k] if mask >> k & 1 else total[k])
        out += term
    return out


def cell_variances(subset_variances: Sequence[Any], splits: Sequence[AxisSplit]) -> np.ndarray:
    """Exact variance of every cell of one table (shape: the splits' sizes). Each ``V_B`` may be an array of
    regions (``(regions,)``): the result then has that leading axis, every region at once."""
    shape = tuple(s.size for s in splits)
    factors = [s.cells() for s in splits]
    out: Any = 0.0
    for mask, v in enumerate(subset_variances):
        term = np.ones(shape)
        for k, (zero, total) in enumerate(factors):
            view = [1] * len(shape)
            view[k] = shape[k]
            term = term * (zero if mask >> k & 1 else total).reshape(view)
        out = out + np.multiply.outer(np.asarray(v, dtype=np.float64), term)
    return np.asarray(out, dtype=np.float64)
