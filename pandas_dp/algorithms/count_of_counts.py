"""Count-of-counts histograms per node (Kuo et al. section 4), in run-length form.

A level of the hierarchy is a set of nodes; each node's count-of-counts
histogram is held as runs ``(node, size, groups, variance)`` sorted by node
then size, so memory follows the number of distinct sizes, not of groups.
All nodes of a level are estimated together (parallel composition).

Estimators (each receives the noise its level's share of the loss calibrates
for the estimator's sensitivity; the release plans it):

* ``naive``: ``H`` truncated at ``K``, noise of sensitivity 2 (L1; L2 is
  ``sqrt 2``), projection on ``{x >= 0, sum x = G}``, largest-remainder rounding.
* ``hg``: sorted group sizes (unattributed histogram), sensitivity 1, PAV,
  rounding.
* ``hc``: tail-cumulative histogram ``T[i] = #groups of size >= i`` for
  ``i = m+1..K`` (``T[m] = G`` is public; ``m`` is the smallest possible size),
  sensitivity 1, PAV bounded in ``[0, G]``, rounding. ``G - T[i+1]`` is the
  paper's cumulative ``H_c[i]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, Sequence

import numpy as np
import pandas as pd

from pandas_dp.algorithms.isotonic import segmented_isotonic_regression
from pandas_dp.privacy.loss import Noise, Sensitivity

__all__ = [
    "runs_to_frame",
    "Runs",
    "consistent_group_totals",
    "estimate_level",
    "estimate_max_size",
    "largest_remainder_round",
    "project_to_simplex",
    "SENSITIVITY",
]

Method = Literal["naive", "hg", "hc"]

#: How far one entity (person) moves each estimator's noised vector: ``hc`` and ``hg`` 1 (one
#: cumulative cell / one sorted size changes by one), ``naive`` 2 (one size class loses a group,
#: another gains one: L1 = 2, L2 = sqrt 2). Kuo et al. section 4.
SENSITIVITY: dict[str, Sensitivity] = {"hc": Sensitivity(), "hg": Sensitivity(),
                                       "naive": Sensitivity.cells(cells=2)}
_CHUNK_CELLS = 1 << 20


@dataclass(frozen=True)
class Runs:
    """Run-length count-of-counts histograms of all nodes of one level.

    Attributes
    ----------
    node, size, groups : numpy.ndarray
        int64 arrays: node ``node[r]`` has ``groups[r]`` groups of size ``size[r]``.
    var : numpy.ndarray
        Estimated variance of the size of each group of the run (float64;
        zero for exact histograms).
    n_nodes : int
        Number of nodes in the level.

    Notes
    -----
    The estimators and the matching expect runs sorted by (node, size), as
    :meth:`exact` and :meth:`normalized` return them.
    """

    node: np.ndarray
    size: np.ndarray
    groups: np.ndarray
    var: np.ndarray
    n_nodes: int

    @classmethod
    def exact(cls, node: np.ndarray, size: np.ndarray, groups: np.ndarray, n_nodes: int) -> Runs:
        """Runs from exact (node, size, groups) triples, sorted and merged."""
        node = np.asarray(node, dtype=np.int64)
        size = np.asarray(size, dtype=np.int64)
        groups = np.asarray(groups, dtype=np.int64)
        return cls(node, size, groups, np.zeros(node.size), n_nodes).normalized()

    def normalized(self) -> Runs:
        """Sort by (node, size, var), merge equal keys, drop empty runs."""
        keep = self.groups > 0
        node, size, groups, var = self.node[keep], self.size[keep], self.groups[keep], self.var[keep]
        order = np.lexsort((var, size, node))
        node, size, groups, var = node[order], size[order], groups[order], var[order]
        if node.size:
            new = np.ones(node.size, dtype=bool)
            new[1:] = (node[1:] != node[:-1]) | (size[1:] != size[:-1]) | (var[1:] != var[:-1])
            starts = np.flatnonzero(new)
            groups = np.add.reduceat(groups, starts)
            node, size, var = node[starts], size[starts], var[starts]
        return Runs(node, size, groups, var, self.n_nodes)

    def totals(self) -> np.ndarray:
        """Number of groups per node."""
        return np.bincount(self.node, weights=self.groups, minlength=self.n_nodes).astype(np.int64)

    def dense(self, length: int | None = None) -> np.ndarray:
        """Dense ``(n_nodes, length)`` matrix ``H[node, size]``."""
        n = int(self.size.max()) + 1 if self.size.size else 1
        length = max(n, length or 0)
        out = np.zeros((self.n_nodes, length), dtype=np.int64)
        np.add.at(out, (self.node, self.size), self.groups)
        return out

    def aggregate(self, parent: np.ndarray, n_parents: int) -> Runs:
        """Histograms of the parent level: children summed per parent."""
        p = np.asarray(parent, dtype=np.int64)[self.node]
        return Runs(p, self.size, self.groups, np.zeros(p.size), n_parents).normalized()


def estimate_max_size(true_max: int, *, noise: Noise, margin_sd: float = 5.0, rng: Any = None) -> int:
    """Public upper bound ``K`` on the group size from a noisy maximum.

    Notes
    -----
    The largest group size has sensitivity 1 (one person changes one group
    by one), so ``K = ceil(max + Z + margin_sd * sd(Z))`` with ``Z`` the noise
    of that sensitivity exceeds the true maximum unless ``Z`` falls
    ``margin_sd`` standard deviations low (Kuo et al. section 4.3 uses 5).
    ``hc`` is insensitive to an over-estimated ``K``.
    """
    z = int(noise.sample(1, rng)[0])
    sd = math.sqrt(noise.variance())
    return max(1, math.ceil(int(true_max) + z + margin_sd * sd))


def estimate_level(
    exact: Runs,
    totals: np.ndarray,
    *,
    method: Method,
    noise: Noise,
    max_size: int | None = None,
    min_size: int = 0,
    rng: Any = None,
) -> Runs:
    """Private count-of-counts histogram of every node of one level.

    Parameters
    ----------
    exact : Runs
        Exact histograms of the level (variances ignored).
    totals : numpy.ndarray
        Public (or consistently estimated) number of groups per node, ``G``.
        Every output node has exactly ``G`` groups.
    method : {"naive", "hg", "hc"}
        Per-node estimator (see module docstring).
    noise : Noise
        The level's noise, calibrated for the estimator's sensitivity
        (:data:`SENSITIVITY`; parallel composition across the level's nodes).
    max_size : int, optional
        Public upper bound ``K`` (required for ``naive`` and ``hc``); larger
        sizes are truncated to ``K``.
    min_size : int, default 0
        Smallest possible group size (0 when the Groups table is public and
        may hold empty groups, 1 when groups are only known from entities).
    rng : numpy.random.Generator, optional
        Randomness (None: secure default).

    Returns
    -------
    Runs
        Non-negative integral histograms summing to ``totals``, with per-group
        size variances for the top-down merge.

    Notes
    -----
    Variance heuristics (Kuo et al. section 5.1), with ``v`` the variance of
    the noise actually drawn: ``hg`` -- a group in an isotonic block of
    length ``m`` gets ``v / m``; ``hc`` -- a group of estimated size ``i``
    gets ``Var(H_hat[i]) / H_hat[i]`` with ``Var(H_hat[i]) = 2 v`` (difference
    of two noisy cumulative cells; ``v`` at the two ends, which involve one
    noisy cell); ``naive`` -- ``v / H_hat[i]`` (one noisy cell).
    """
    totals = np.asarray(totals, dtype=np.int64)
    if method == "hg":
        return _hg(exact, totals, noise=noise, min_size=min_size, rng=rng)
    if max_size is None:
        raise ValueError("max_size is required for the naive and hc estimators")
    k = max(int(max_size), min_size)
    if method == "hc":
        return _hc(exact, totals, noise=noise, k=k, min_size=min_size, rng=rng)
    if method == "naive":
        return _naive(exact, totals, noise=noise, k=k, min_size=min_size, rng=rng)
    raise ValueError(f"unknown count-of-counts method {method!r}")


def _row_chunks(n_rows: int, n_cols: int) -> list[tuple[int, int]]:
    step = max(1, _CHUNK_CELLS // max(n_cols, 1))
    return [(a, min(a + step, n_rows)) for a in range(0, n_rows, step)]


def _dense_block(exact: Runs, lo: int, hi: int, k: int) -> np.ndarray:
    """Exact ``H[node, size]`` for nodes ``lo..hi-1``, sizes truncated at ``k``."""
    a, b = np.searchsorted(exact.node, [lo, hi])
    out = np.zeros((hi - lo, k + 1), dtype=np.int64)
    np.add.at(out, (exact.node[a:b] - lo, np.minimum(exact.size[a:b], k)), exact.groups[a:b])
    return out


def _runs_from_dense(h: np.ndarray, var: np.ndarray, lo: int) -> tuple[np.ndarray, ...]:
    r, c = np.nonzero(h)
    return r.astype(np.int64) + lo, c.astype(np.int64), h[r, c].astype(np.int64), var[r, c]


def _hc(exact: Runs, totals: np.ndarray, *, noise: Noise, k: int, min_size: int, rng: Any) -> Runs:
    v = noise.variance()
    width = k - min_size  # noisy cells T[m+1..K]
    parts = []
    for lo, hi in _row_chunks(exact.n_nodes, width + 1):
        h = _dense_block(exact, lo, hi, k)[:, min_size:]
        g = totals[lo:hi]
        if width:
            tail = np.cumsum(h[:, ::-1], axis=1)[:, ::-1][:, 1:]  # T[m+1..K]
            noisy = noise.add(tail, rng)
            starts = np.arange(hi - lo, dtype=np.int64) * width
            fit = segmented_isotonic_regression(
                noisy.ravel().astype(np.float64), starts, lower=0.0, upper=g.astype(np.float64),
                increasing=False,
            )
            tail_hat = np.floor(fit.values + 0.5).astype(np.int64).reshape(hi - lo, width)
        else:
            tail_hat = np.zeros((hi - lo, 0), dtype=np.int64)
        full = np.concatenate([g[:, None], tail_hat, np.zeros((hi - lo, 1), dtype=np.int64)], axis=1)
        est = full[:, :-1] - full[:, 1:]
        cells = np.full(width + 1, 2.0 * v)
        cells[0] = v
        cells[-1] = v
        var = np.broadcast_to(cells, est.shape) / np.maximum(est, 1)
        node, size, groups, vr = _runs_from_dense(est, var, lo)
        parts.append((node, size + min_size, groups, vr))
    return _concat_runs(parts, exact.n_nodes)


def _naive(exact: Runs, totals: np.ndarray, *, noise: Noise, k: int, min_size: int, rng: Any) -> Runs:
    v = noise.variance()
    parts = []
    for lo, hi in _row_chunks(exact.n_nodes, k + 1):
        h = _dense_block(exact, lo, hi, k)[:, min_size:]
        noisy = noise.add(h, rng)
        g = totals[lo:hi]
        est = largest_remainder_round(project_to_simplex(noisy.astype(np.float64), g), g)
        var = v / np.maximum(est, 1).astype(np.float64)
        node, size, groups, vr = _runs_from_dense(est, var, lo)
        parts.append((node, size + min_size, groups, vr))
    return _concat_runs(parts, exact.n_nodes)


def _hg(exact: Runs, totals: np.ndarray, *, noise: Noise, min_size: int, rng: Any) -> Runs:
    v = noise.variance()
    n = exact.n_nodes
    # Keep the G largest groups of each node, pad with groups of size min_size.
    true_g = exact.totals()
    node_start = np.searchsorted(exact.node, np.arange(n))
    cum = np.cumsum(exact.groups)
    before = np.concatenate([[0], cum])[node_start][exact.node]
    drop = np.maximum(true_g - totals, 0)[exact.node]
    end_in_node = cum - before
    kept = np.clip(end_in_node - drop, 0, exact.groups)
    pad = np.maximum(totals - true_g, 0)
    node = np.concatenate([np.arange(n, dtype=np.int64), exact.node])
    size = np.concatenate([np.full(n, min_size, dtype=np.int64), exact.size])
    cnt = np.concatenate([pad, kept])
    order = np.lexsort((size, node))
    node, size, cnt = node[order], size[order], cnt[order]
    sizes = np.repeat(size, cnt)
    if sizes.size == 0:
        return Runs(*(np.zeros(0, dtype=np.int64),) * 3, np.zeros(0), n)
    noisy = noise.add(sizes, rng).astype(np.float64)
    del sizes
    seg_starts = np.concatenate([[0], np.cumsum(totals)[:-1]])[totals > 0]
    fit = segmented_isotonic_regression(noisy, seg_starts, lower=float(min_size))
    del noisy
    b = fit.block_starts
    blk_node = np.repeat(np.arange(n, dtype=np.int64), totals)[b]
    blk_size = np.floor(fit.values[b] + 0.5).astype(np.int64)
    m = fit.block_lengths
    return Runs(blk_node, blk_size, m.astype(np.int64), v / m, n).normalized()


def _concat_runs(parts: Sequence[tuple[np.ndarray, ...]], n_nodes: int) -> Runs:
    if not parts:
        return Runs(*(np.zeros(0, dtype=np.int64),) * 3, np.zeros(0), n_nodes)
    node, size, groups, var = (np.concatenate(x) for x in zip(*parts))
    return Runs(node, size, groups, var.astype(np.float64), n_nodes).normalized()


def project_to_simplex(y: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Row-wise Euclidean projection onto ``{x >= 0, sum x = G}``.

    Notes
    -----
    The solution is ``x = max(y - tau, 0)`` with ``tau`` such that the row
    sums to ``G``; with ``u`` the row sorted descending,
    ``rho = max{j : u_j - (sum_{i<=j} u_i - G) / j > 0}`` and
    ``tau = (sum_{i<=rho} u_i - G) / rho`` (the non-negative least squares
    problem of Kuo et al. section 4.1 with the group total constraint).
    """
    y = np.atleast_2d(np.asarray(y, dtype=np.float64))
    g = np.asarray(totals, dtype=np.float64).reshape(-1, 1)
    u = -np.sort(-y, axis=1)
    css = np.cumsum(u, axis=1) - g
    j = np.arange(1, y.shape[1] + 1)
    cond = u - css / j > 0
    rho = y.shape[1] - np.argmax(cond[:, ::-1], axis=1)  # last True, 1-based
    tau = css[np.arange(y.shape[0]), rho - 1] / rho
    x = np.maximum(y - tau[:, None], 0.0)
    x[g[:, 0] <= 0] = 0.0
    return x


def largest_remainder_round(x: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Round non-negative rows to integers summing to ``totals`` (largest remainder).

    Notes
    -----
    Floors every cell, then adds one to the ``G - sum floor(x)`` cells with
    the largest fractional parts (ties: lowest index first).
    """
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    fl = np.floor(x)
    short = np.asarray(totals, dtype=np.int64) - fl.sum(axis=1).astype(np.int64)
    order = np.argsort(-(x - fl), axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(x.shape[1])[None, :].repeat(x.shape[0], 0), axis=1)
    return (fl + (rank < short[:, None])).astype(np.int64)


def consistent_group_totals(
    leaf_totals: np.ndarray,
    parents: list[np.ndarray | None],
    n_nodes: list[int],
    *,
    noise: Noise,
    rng: Any = None,
    limit: int | None = None,
) -> list[np.ndarray]:
    """Private, consistent numbers of groups per region (Kuo et al. footnote 5).

    Parameters
    ----------
    leaf_totals : numpy.ndarray
        True number of groups per leaf region.
    parents, n_nodes : list
        The region tree (``parents[l][i]`` is the parent in level ``l-1``).
    noise : Noise
        Noise calibrated for the whole vector of totals of every level:
        sensitivity ``L`` in L1 (``sqrt L`` in L2) for ``L`` levels.
    limit : int, optional
        Public cap on the number of groups of any region (the root included):
        noisy totals above ``limit`` are lowered to it and the leaves scaled down
        so that they add up to at most ``limit`` (post-processing). The
        estimators then allocate work for at most ``limit`` groups per level,
        however small the loss (a tiny epsilon draws totals of ~1e12).

    Returns
    -------
    list of numpy.ndarray
        Non-negative integer totals per level; every region's total is the
        sum of its children's.

    Notes
    -----
    One entity changes one group count by at most one per level (a new
    group appears in its leaf and every ancestor), so the vector of all
    levels' totals has L1 sensitivity ``L`` (for pure epsilon: discrete
    Laplace of scale ``L / epsilon``, the same as ``epsilon / L`` per level). The leaf totals
    ``x >= 0`` then minimize ``sum_nodes (sum_{leaves under node} x - y_node)^2``
    (non-negative least squares, sparse), are rounded by largest remainder
    to the rounded overall sum, and are aggregated upwards.
    """
    from scipy import sparse
    from scipy.optimize import lsq_linear

    levels = len(n_nodes)
    ancestors = [np.arange(n_nodes[-1], dtype=np.int64)]
    for lvl in range(levels - 1, 0, -1):
        ancestors.append(np.asarray(parents[lvl], dtype=np.int64)[ancestors[-1]])
    ancestors = ancestors[::-1]
    offsets = np.concatenate([[0], np.cumsum(n_nodes)[:-1]])
    rows = np.concatenate([anc + off for anc, off in zip(ancestors, offsets)])
    cols = np.tile(np.arange(n_nodes[-1]), levels)
    a = sparse.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(int(sum(n_nodes)), n_nodes[-1]))
    truth = a @ np.asarray(leaf_totals, dtype=np.float64)
    noisy = noise.add(truth, rng).astype(np.float64)
    if limit is not None:  # only totals above the cap change: below it the release is as before
        noisy = np.minimum(noisy, float(limit))
    x = lsq_linear(a, noisy, bounds=(0.0, np.inf), lsmr_tol="auto").x if n_nodes[-1] else np.zeros(0)
    x = np.maximum(x, 0.0)
    if limit is not None and x.sum() > limit:
        x *= limit / x.sum()
    total = int(np.floor(x.sum() + 0.5))
    if limit is not None:
        total = min(total, int(limit))
    leaves = largest_remainder_round(x[None, :], np.array([total]))[0] if x.size else x.astype(np.int64)
    out = [leaves]
    for lvl in range(levels - 1, 0, -1):
        out.append(np.bincount(np.asarray(parents[lvl], dtype=np.int64), weights=out[-1],
                               minlength=n_nodes[lvl - 1]).astype(np.int64))
    return out[::-1]


def runs_to_frame(levels: Sequence[Runs], names: Sequence[str], regions: Sequence[pd.Index]) -> pd.DataFrame:
    """Tidy frame (level, region, size, groups) of per-level run-lengths."""
    parts = []
    for runs, name, idx in zip(levels, names, regions):
        merged = Runs.exact(runs.node, runs.size, runs.groups, runs.n_nodes)
        parts.append(pd.DataFrame({
            "level": name,
            "region": idx.take(merged.node).astype(object) if len(idx) else pd.Index([], dtype=object),
            "size": merged.size,
            "groups": merged.groups,
        }))
    return pd.concat(parts, ignore_index=True)
