"""Non-negative, consistent region tables from a GLS estimate (top-down weighted projection).

GLS estimates (:func:`~pandas_dp.algorithms.geography.inference.region_inference`)
are consistent but can be negative where true counts are small.  This step
makes them non-negative while keeping "parent = sum of children" in every
cell, generalising :func:`~pandas_dp.algorithms.tree.inference.nonnegative_tree`
to any fan-out and to tables of cells:

* every root becomes ``max(est, 0)`` (with public root totals over the cells:
  the projection of its cells onto ``{x >= 0, sum x = total}``, the cells
  having equal variance);
* going down, the children of a region with (already final, non-negative)
  value ``T`` in a cell first get their conditional GLS targets
  ``t_c = z_c + a_c (T - S_v)`` (which sum to ``T``), then are projected onto
  ``{c >= 0, sum_c c = T}`` in the metric of their bottom-up variances:
  ``c = max(0, t - lambda V)``, with ``lambda`` found per parent and cell from
  the sorted breakpoints ``t / V``.

Where the GLS estimates are already non-negative they are returned unchanged
(the step is idempotent), and only the (parent, cell) groups that hold a
negative target take part.  Children known exactly (variance 0) keep their
values.  The result is post-processing of noisy values only; it is no longer
linear in them, so GLS variances are then approximate error bars.

References
----------
.. [1] M. Hay, V. Rastogi, G. Miklau, D. Suciu. "Boosting the Accuracy of
   Differentially Private Histograms Through Consistency", PVLDB 3(1), 2010.
.. [2] J. M. Abowd et al. "The 2020 Census Disclosure Avoidance System TopDown
   Algorithm", Harvard Data Science Review, 2022 (non-negative estimates
   fitted top-down, one geographic level at a time).
"""

from __future__ import annotations

import numpy as np

from pandas_dp.algorithms.geography.inference import RegionInference

__all__ = ["nonnegative_regions", "project_groups"]


def project_groups(t: np.ndarray, v: np.ndarray, group: np.ndarray,
                   total: np.ndarray) -> np.ndarray:
    """Weighted projection of every group of ``t`` onto ``{x >= 0, sum x = total[group]}``.

    Parameters
    ----------
    t, v : ndarray
        1-D targets and positive weights (variances): the projection minimises
        ``sum (x - t)^2 / v`` within each group.
    group : ndarray of int
        Group code of every element.
    total : ndarray
        Non-negative total of every group, indexed by group code.

    Returns
    -------
    ndarray
        ``x = max(0, t - lambda_g v)`` with ``lambda_g`` such that each group
        sums to its total.

    Notes
    -----
    Michelot's active-set iteration, run on all groups at once: with ``A`` the
    active elements of a group (initially all),
    ``lambda = (sum_A t - total) / sum_A v``; elements with
    ``t - lambda v <= 0`` leave ``A``; repeat until no group changes.
    ``lambda`` never decreases and an element that leaves never returns, so
    the iteration ends (in at most the largest group size, in practice a few
    rounds of two ``bincount`` each) at the exact projection: the positive
    elements are those with ``t / v > lambda``.  A group whose total is 0 is
    all zeros.

    References
    ----------
    .. [1] C. Michelot. "A finite algorithm for finding the projection of a
       point onto the canonical simplex of R^n", Journal of Optimization Theory
       and Applications 50(1), 1986, 195-200.

    Examples
    --------
    >>> project_groups(np.array([3.0, -1.0]), np.ones(2), np.zeros(2, int), np.array([2.0]))
    array([2., 0.])
    """
    n_groups = total.size
    active = total[group] > 0
    while True:
        st = np.bincount(group, weights=np.where(active, t, 0.0), minlength=n_groups)
        sv = np.bincount(group, weights=np.where(active, v, 0.0), minlength=n_groups)
        lam = np.divide(st - total, sv, out=np.zeros(n_groups), where=sv > 0)
        x = t - lam[group] * v
        still = active & (x > 0)
        if np.array_equal(still, active):
            return np.where(active, x, 0.0)
        active = still


def nonnegative_regions(inference: RegionInference) -> tuple[np.ndarray, ...]:
    """Non-negative region tables, consistent in every cell, closest to GLS top-down.

    Parameters
    ----------
    inference : RegionInference
        Output of :func:`~pandas_dp.algorithms.geography.inference.region_inference`.

    Returns
    -------
    tuple of ndarray
        Per level (coarse to fine), shaped like the estimates; every value is
        ``>= 0`` and every parent equals the sum of its children in every cell
        (up to floating-point rounding).

    Examples
    --------
    >>> from pandas_dp.algorithms.geography.inference import region_inference
    >>> y = [np.array([[3.0]]), np.array([[4.0], [-2.0]])]
    >>> inf = region_inference(y, [None, np.array([0, 0])], [1.0, 1.0])
    >>> [e.ravel().round(4).tolist() for e in nonnegative_regions(inf)]
    [[2.6667], [2.6667, 0.0]]
    """
    st = inference.structure
    lay = st.layout
    shape = [e.shape for e in inference.estimates]
    width = int(np.prod(shape[0][1:])) if len(shape[0]) > 1 else 1
    out: list[np.ndarray] = [np.empty(0)] * lay.n_levels
    root = inference.estimates[0].reshape(lay.n_regions[0], width)
    if inference.root_totals is None or np.all(root >= 0):
        out[0] = np.maximum(root, 0.0)
    else:   # each root's cells: Euclidean projection onto {x >= 0, sum x = its public total}
        group = np.repeat(np.arange(lay.n_regions[0]), width)
        out[0] = project_groups(root.ravel(), np.ones(root.size), group,
                                np.maximum(inference.root_totals, 0.0)).reshape(root.shape)
    for lvl in range(1, lay.n_levels):
        z = inference.z[lvl].reshape(lay.n_regions[lvl], width)
        s = inference.children_sum(lvl - 1).reshape(lay.n_regions[lvl - 1], width)
        target = z + st.share_of(lvl)[:, None] * lay.expand(out[lvl - 1] - s, lvl)
        v = st.vdown[lvl]
        negative = (target < 0) & (v > 0)[:, None]
        if not negative.any():
            out[lvl] = target
            continue
        # Only (parent, cell) groups holding a negative target move; the others are final.
        moving = lay.expand(lay.aggregate(negative.astype(np.int64), lvl) > 0, lvl)
        moving &= (v > 0)[:, None]
        rows, cols = np.nonzero(moving)
        group = lay.parent_codes(lvl)[rows] * width + cols
        totals = np.maximum(out[lvl - 1], 0.0).ravel()
        result = target.copy()
        result[rows, cols] = project_groups(target[rows, cols], v[rows], group, totals)
        out[lvl] = result
    return tuple(o.reshape(sh) for o, sh in zip(out, shape))
