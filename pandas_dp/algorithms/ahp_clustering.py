"""AHP clustering of sorted noisy counts: greedy (Algorithm 3), empirical (Algorithm 2) and optimal.

Pure numpy, and only ever given noisy values (see :mod:`pandas_dp.algorithms.ahp`).
The error model is Zhang et al.'s Theorem 4.2: a cluster ``C`` of sorted
noisy values costs its approximation error plus ``c / |C|`` (``c`` the
variance of one phase-2 noise draw).

References
----------
X. Zhang, R. Chen, J. Xu, X. Meng, Y. Xie. Towards Accurate Histogram
Publication under Differential Privacy. SDM 2014 (sections 4-5).
"""

from __future__ import annotations

import math

import numpy as np

from pandas_dp.errors import ParameterError

__all__ = [
    "greedy_clustering",
    "empirical_clustering",
    "optimal_clustering",
    "clustering_error",
    "OPTIMAL_MAX_BINS",
    "EMPIRICAL_MAX_BINS",
]

#: Largest n accepted by ``clustering="optimal"`` (O(n^2) exact dynamic programme).
OPTIMAL_MAX_BINS = 16_384
#: Largest n accepted by ``clustering="empirical"`` (O(k n^2) dynamic programme, k <= sqrt(n)+1).
EMPIRICAL_MAX_BINS = 2_048


# ---------------------------------------------------------------------------------------------
# Cluster error model (Zhang et al., Theorem 4.2): err(C) = AE(C) + c / |C|, c = Var(noise).
# ---------------------------------------------------------------------------------------------

def clustering_error(sorted_values: np.ndarray, starts: np.ndarray, *, noise_variance: float) -> float:
    """Total estimated error of a clustering of sorted values (Theorem 4.2 of Zhang et al.).

    Parameters
    ----------
    sorted_values : ndarray
        Values sorted ascending.
    starts : ndarray of int
        Start index of each cluster (first is 0), increasing.
    noise_variance : float
        Variance ``c`` of the one noise draw per cluster (``2 / epsilon_2**2`` in the paper).

    Returns
    -------
    float
        ``sum_C [ sum_{j in C} (H_j - mean(C))**2 + c / |C| ]``.
    """
    v = np.asarray(sorted_values, dtype=np.float64)
    sizes = np.diff(np.append(starts, v.size))
    labels = np.repeat(np.arange(sizes.size), sizes)
    means = np.bincount(labels, weights=v) / sizes
    ae = float(np.sum((v - means[labels]) ** 2))
    return ae + float(np.sum(noise_variance / sizes))


def _run_ends(vi: np.ndarray) -> np.ndarray:
    """Index one past the last element of each element's run of equal values."""
    n = vi.size
    change = np.flatnonzero(np.diff(vi)) + 1
    return np.repeat(np.append(change, n), np.diff(np.concatenate([[0], change, [n]])))


def _best_lookahead(v: np.ndarray, c: float, js: np.ndarray | None = None, *,
                    prefix: np.ndarray | None = None, run_end: np.ndarray | None = None
                    ) -> np.ndarray:
    """err*(H_j): the lower bound of bin j's error in a cluster starting at j (all j or ``js``).

    Notes
    -----
    err*(H_j) = min_{l >= j} (H_j - mean(H_j..H_l))**2 + c / (l - j + 1)**2 (Zhang et al.,
    Sec. 4.2). With D_j(m) = sum_{i=j}^{j+m-1} (H_i - H_j) >= 0 this is
    min_m (D_j(m)**2 + c) / m**2. D_j is 0 over the run of values equal to H_j, so the scan
    starts at the run's end; then it stops as soon as D_j(m+1)**2/(m+1)**2 + c/(n-j)**2 is no
    smaller than the best value so far: the approximation term only grows with m and the
    noise term never falls below c/(n-j)**2, so no later m can do better (a slightly stronger
    form of the paper's monotonic early stop, giving the same minimum). All requested j are
    scanned together, in blocks of look-ahead steps that double in length.
    """
    n = v.size
    vi = v.astype(np.int64)
    if prefix is None:
        prefix = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(vi, out=prefix[1:])
    if run_end is None:
        run_end = _run_ends(vi)
    js = np.arange(n, dtype=np.int64) if js is None else np.asarray(js, dtype=np.int64)
    m = (run_end[js] - js).astype(np.int64)                 # cluster size at run end
    best = c / m.astype(np.float64) ** 2
    max_m = n - js
    le_min = c / max_m.astype(np.float64) ** 2
    active = np.flatnonzero(m < max_m)
    block = 8
    while active.size:
        block = int(max(1, min(block, 4_000_000 // active.size)))
        ja = js[active]
        steps = np.arange(1, block + 1, dtype=np.int64)
        mm = m[active, None] + steps[None, :]                # candidate sizes
        valid = mm <= max_m[active, None]
        end = np.minimum(ja[:, None] + mm, n)
        d = prefix[end] - prefix[ja, None] - np.where(valid, mm, 0) * vi[ja, None]
        mf = mm.astype(np.float64)
        ae = d.astype(np.float64) ** 2 / mf ** 2
        g = np.where(valid, ae + c / mf ** 2, np.inf)
        # best value before each candidate (running minimum of g, seeded with best)
        prev = np.minimum.accumulate(
            np.concatenate([best[active, None], g[:, :-1]], axis=1), axis=1)
        stop = (ae + le_min[active, None] >= prev) | ~valid
        has_stop = stop.any(axis=1)
        first = np.where(has_stop, stop.argmax(axis=1), block)
        upto = np.where(np.arange(block)[None, :] < first[:, None], g, np.inf)
        best[active] = np.minimum(best[active], upto.min(axis=1))
        m[active] += block
        active = active[~has_stop]
        block *= 2
    return best


def greedy_clustering(sorted_values: np.ndarray, *, noise_variance: float) -> np.ndarray:
    """Greedy clustering of sorted values (Algorithm 3 of Zhang et al.).

    Parameters
    ----------
    sorted_values : ndarray
        Noisy (thresholded) counts sorted ascending; integer-valued.
    noise_variance : float
        Variance ``c`` of one phase-2 noise draw (``2/epsilon_2**2`` in the paper).

    Returns
    -------
    ndarray of int64
        Start index of each cluster in the sorted order (first is 0).

    Notes
    -----
    Bin j joins the current cluster C (starting at s) iff
    delta_j = err(C + H_j) - err(C) < err*(H_j), with err(C) = AE(C) + c/|C|. The increase of
    the approximation error is (m-1)/m (H_j - mean(C))**2 with m = |C| + 1 (Welford's
    update), so for a fixed start s the deltas of all later j are one vectorized
    expression; the cluster ends at the first j that fails. err*(H_j) is only computed
    where it matters: it lies between c/(n-j)**2 and c/r_j**2 (r_j: bins from j to the end
    of its run of equal values), so delta_j below the first bound merges and delta_j at or
    above the second splits without it; the look-ahead (:func:`_best_lookahead`) runs for
    the remaining j only, typically the first bin of each new value.
    """
    v = np.asarray(sorted_values)
    n = v.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    c = float(noise_variance)
    vi = v.astype(np.int64)
    prefix = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(vi, out=prefix[1:])
    run_end = _run_ends(vi)
    idx = np.arange(n, dtype=np.int64)
    lower = c / (n - idx).astype(np.float64) ** 2
    upper = c / (run_end - idx).astype(np.float64) ** 2
    vf = v.astype(np.float64)
    starts = [0]
    s = 0
    block = 16
    j0 = 1                                  # first candidate not yet accepted into cluster s
    while j0 < n:
        j = idx[j0:min(n, j0 + block)]
        size_before = (j - s).astype(np.float64)           # |C| before adding H_j
        mean = (prefix[j] - prefix[s]) / size_before
        m = size_before + 1.0
        delta = (m - 1.0) / m * (vf[j] - mean) ** 2 + c / m - c / size_before
        unsure = np.flatnonzero(delta >= lower[j])
        fail = unsure[delta[unsure] >= upper[j[unsure]]]
        if unsure.size and (not fail.size or unsure[0] < fail[0]):
            cut = fail[0] if fail.size else j.size
            amb = unsure[unsure < cut]
            exact = _best_lookahead(v, c, j[amb], prefix=prefix, run_end=run_end)
            fail = np.sort(np.concatenate([amb[delta[amb] >= exact], fail]))
        if fail.size:
            s = int(j[fail[0]])
            starts.append(s)
            j0 = s + 1
            block = 16
        else:
            j0 = int(j[-1]) + 1
            block *= 2
    return np.asarray(starts, dtype=np.int64)


def _cost_row(prefix: np.ndarray, prefix2: np.ndarray, i: np.ndarray, j: int, c: float) -> np.ndarray:
    """err(H_i..H_{j-1}) = AE + c/size for many starts i and one end j (centred prefix sums)."""
    size = (j - i).astype(np.float64)
    s1 = prefix[j] - prefix[i]
    ae = np.maximum((prefix2[j] - prefix2[i]) - s1 * s1 / size, 0.0)
    return ae + c / size


def _centred_prefix(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(v, dtype=np.float64)
    x = x - x.mean() if x.size else x
    p1 = np.concatenate([[0.0], np.cumsum(x)])
    p2 = np.concatenate([[0.0], np.cumsum(x * x)])
    return p1, p2


def _starts_from_parents(parent: np.ndarray, n: int) -> np.ndarray:
    starts = []
    j = n
    while j > 0:                             # loop over clusters, not bins
        j = int(parent[j])
        starts.append(j)
    return np.asarray(starts[::-1], dtype=np.int64)


def optimal_clustering(sorted_values: np.ndarray, *, noise_variance: float) -> np.ndarray:
    """Exact minimum-error clustering of sorted values over every number of clusters k.

    Notes
    -----
    Zhang et al. run the k-cluster dynamic programme for every k = 1..n (O(n^4)). The
    minimum over all k needs no cluster count in the state:
    best(j) = min_{i<j} best(i) + err(H_{i+1..j}), best(0) = 0, which is O(n^2) time and
    O(n) memory and returns the same optimum. Refused above :data:`OPTIMAL_MAX_BINS`.
    """
    v = np.asarray(sorted_values)
    n = v.size
    if n > OPTIMAL_MAX_BINS:
        raise ParameterError(
            f"clustering='optimal' is an exact O(n^2) dynamic programme limited to "
            f"{OPTIMAL_MAX_BINS} bins; the histogram has {n}. Use clustering='greedy' "
            f"(the default) or 'empirical' for up to {EMPIRICAL_MAX_BINS} bins.")
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    c = float(noise_variance)
    p1, p2 = _centred_prefix(v)
    best = np.zeros(n + 1)
    parent = np.zeros(n + 1, dtype=np.int64)
    for j in range(1, n + 1):                # sequential recurrence; inner min is vectorized
        i = np.arange(j)
        tot = best[:j] + _cost_row(p1, p2, i, j, c)
        k = int(np.argmin(tot))
        best[j], parent[j] = tot[k], k
    return _starts_from_parents(parent, n)


def _empirical_ks(v: np.ndarray) -> list[int]:
    """The four rules of thumb for the number of clusters (Zhang et al., Algorithm 2)."""
    n = v.size
    x = v.astype(np.float64)
    dev = x - x.mean()
    m2 = float(np.sum(dev ** 2))
    skew = float(np.sum(dev ** 3)) / m2 ** 1.5 if m2 > 0 else 0.0
    sigma = math.sqrt(6.0 * (n - 2) / ((n + 1) * (n + 3))) if n > 2 else 0.0
    doane = 1 + math.log2(n) + (math.log2(1 + abs(skew) / sigma) if sigma > 0 else 0.0)
    ks = [math.ceil(math.sqrt(n)), math.ceil(1 + math.log2(n)), math.ceil(doane),
          math.ceil(2 * n ** (1 / 3))]
    return [min(max(k, 1), n) for k in ks]


def empirical_clustering(sorted_values: np.ndarray, *, noise_variance: float) -> np.ndarray:
    """Empirical clustering (Algorithm 2 of Zhang et al.).

    Notes
    -----
    k from the square-root choice, Sturges, Doane and Rice rules; for each k the optimal
    clustering into at most k clusters by the dynamic programme
    err*(1..j, m) = min_l err*(1..l, m-1) + err(l+1..j); the clustering with the smallest
    total error wins. One pass over m = 1..max(k) gives all four. Refused above
    :data:`EMPIRICAL_MAX_BINS`.
    """
    v = np.asarray(sorted_values)
    n = v.size
    if n > EMPIRICAL_MAX_BINS:
        raise ParameterError(
            f"clustering='empirical' runs an O(k n^2) dynamic programme limited to "
            f"{EMPIRICAL_MAX_BINS} bins; the histogram has {n}. Use clustering='greedy'.")
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    c = float(noise_variance)
    ks = _empirical_ks(v)
    p1, p2 = _centred_prefix(v)
    # cost[i, j] = err(H_i..H_{j-1}) for i < j (n+1 x n+1, inf elsewhere)
    idx = np.arange(n + 1)
    size = (idx[None, :] - idx[:, None]).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        s1 = p1[None, :] - p1[:, None]
        cost = np.maximum((p2[None, :] - p2[:, None]) - s1 * s1 / size, 0.0) + c / size
    cost[size <= 0] = np.inf
    layer = cost[0].copy()                   # at most 1 cluster
    parents = [np.zeros(n + 1, dtype=np.int64)]
    results: dict[int, np.ndarray] = {}
    for m in range(1, max(ks) + 1):           # loop over cluster counts, vectorized over j
        if m > 1:
            tot = layer[:, None] + cost
            arg = np.argmin(tot, axis=0)
            new = tot[arg, idx]
            keep = layer <= new                  # "at most m": keep fewer clusters if better
            layer = np.where(keep, layer, new)
            parents.append(np.where(keep, -1, arg))
        if m in ks:
            results[m] = _backtrack_layers(parents, m, n)
    candidates = [results[k] for k in sorted(set(ks))]
    errors = [clustering_error(v, st, noise_variance=c) for st in candidates]
    return candidates[int(np.argmin(errors))]


def _backtrack_layers(parents: list[np.ndarray], m: int, n: int) -> np.ndarray:
    starts = []
    j = n
    while j > 0:                               # loop over clusters
        p = int(parents[m - 1][j]) if m > 1 else 0
        if p == -1:                            # same solution as with m - 1 clusters
            m -= 1
            continue
        starts.append(p)
        j, m = p, m - 1
    return np.asarray(starts[::-1], dtype=np.int64)
