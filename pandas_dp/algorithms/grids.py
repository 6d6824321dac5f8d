"""UGrid and AGrid: differentially private grids for 2-D (geospatial) counts.

Both lay a coarse grid over a public 2-D domain of *atoms* (the cells of the
domain grid, e.g. 256 x 256), release noisy counts of the grid cells and spread
each count evenly over its atoms.

* **UGrid**: one ``m x m`` grid with ``m = ceil(sqrt(N epsilon / c))``, ``c = 10``.
* **AGrid**: a first level of ``m1 x m1`` cells, ``m1 = max(10, ceil(sqrt(N epsilon / c) / 4))``,
  counted with a share ``alpha = 1/2`` of the loss; inside first-level cell ``k`` with
  noisy count ``N'_k``, a second level of ``m2 x m2`` sub-cells,
  ``m2 = ceil(sqrt(N'_k (1 - alpha) epsilon / c2))``, ``c2 = c / 2``, counted with the rest;
  then constrained inference makes every cell equal the sum of its sub-cells.

``N`` is the number of rows, which is private: it is either a public
``expected_total`` from the caller or a noisy total bought with
``total_share`` of the loss (stated in the result). ``epsilon`` in the size
formulas is that of the noise actually used (:func:`size_epsilon`: exact for
pure DP). Grid lines fall on atom boundaries: an axis of ``n`` atoms cut
into ``m`` parts has edges ``floor(i n / m)`` (sizes differ by at most one
atom), and ``m`` is capped at ``n``.

Inference (AGrid, per first-level cell with ``J`` sub-cells): with noise
variances ``s1, s2`` of the two levels, the generalized least-squares total is
``T = P (v / s1 + sum_j u_j / (J s2))`` with ``P = 1 / (1/s1 + 1/(J s2))``, and
sub-cell ``j`` gets ``u_j + (T - sum_j u_j) / J``; its exact variance is
``P / J**2 + s2 (1 - 1/J)``. A query that covers a share ``f_j`` of sub-cell
``j`` of cell ``k`` has error ``alpha_k e_T + eta_k`` with ``alpha_k = sum_j f_j / J``
and ``Var(eta_k) = s2 (sum_j f_j**2 - (sum_j f_j)**2 / J)``, independent across
cells. Sub-grids are products of row and column intervals, so ``sum_j f_j`` and
``sum_j f_j**2`` factor into one sum per axis.

Variances are exact for the noise given the grid, and exclude the bias of
spreading a cell's count evenly over its atoms (``variance_exact = False``).

Under zCDP (a :class:`~pandas_dp.privacy.loss.ZCDP` loss, ``rho=``)
----------------------------------------------------------------------
Every measurement (the noisy total, each level's cells) is a vector of
disjoint counts: one row is in one cell per level, so its L2 sensitivity is 1
and exact discrete Gaussian noise with ``sigma**2 = 1 / (2 rho_part)`` makes it
``rho_part``-zCDP; the parts are exact Fractions of ``rho`` adding up to it
(sequential composition). AGrid's first level is Gaussian too: its noisy
counts choose the second-level sizes, which is post-processing of a zCDP
measurement, and at the same zCDP cost Gaussian noise has half the variance
of Laplace noise charged ``epsilon_1**2 / 2`` (``1 / (2 rho_1)`` against
``2 / epsilon_1**2 = 1 / rho_1``), so the choice reads better counts.

The size rules come from balancing, per cell, the noise variance
``2 / epsilon**2`` against the non-uniformity error ([1]_, Sections IV-V:
``c = sqrt(2) c0`` absorbs the ``sqrt(2)`` of the Laplace standard deviation).
Only the noise variance enters that balance, so the Gaussian rules are the
paper's with ``sigma**2`` in place of ``2 / epsilon**2``, i.e. ``epsilon``
replaced by ``sqrt(2) / sigma`` (:func:`size_epsilon`), and ``c`` unchanged:
``m = ceil(sqrt(N sqrt(2) / (sigma c)))``. The split of ``rho`` follows the
paper's split of ``epsilon``: ``total_share`` of ``rho`` for the noisy total,
and ``alpha`` of the counting ``rho`` for AGrid's first level; the default
``alpha = 1/2`` gives the two levels equal noise variance, exactly as the
paper's equal split of ``epsilon`` does.

References
----------
.. [1] W. Qardaji, W. Yang, N. Li. "Differentially Private Grids for Geospatial
   Data", ICDE 2013 (Sections IV-V: UG size ``sqrt(N epsilon / c)``, ``c = 10``;
   AG with ``alpha = 0.5``, ``c2 = c / 2``, constrained inference).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from pandas_dp._utils.rational import to_fraction
from pandas_dp.algorithms.grid_release import GridPlan, GridRelease
from pandas_dp.algorithms.tree.layout import shape_dims
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import DiscreteLaplace, Noise, PrivacyLoss

__all__ = ["GridPlan", "GridRelease", "plan_ugrid", "plan_agrid", "ugrid", "agrid", "equivalent_epsilon", "ugrid_size", "agrid_first_size",
           "agrid_second_size", "axis_edges", "size_epsilon", "DEFAULT_C", "DEFAULT_ALPHA", "DEFAULT_TOTAL_SHARE"]

#: The paper's constant c (UGrid and AGrid's first level); AGrid's second level uses c / 2.
DEFAULT_C = 10.0
#: AGrid's share of the (counting) loss spent on the first level.
DEFAULT_ALPHA = Fraction(1, 2)
#: Share of the loss spent on the noisy total when no ``expected_total`` is given.
DEFAULT_TOTAL_SHARE = Fraction(1, 20)
#: Largest size per axis the size rules return as integers (callers cap sizes at the atoms of the axis).
_MAX_SIZE = float(2 ** 62)

def equivalent_epsilon(variance: float) -> float:
    """The epsilon of the discrete Laplace noise that has this variance.

    ``Var = 2 p / (1 - p)**2`` with ``p = exp(-epsilon)`` (scale ``1 / epsilon``), so
    ``p = (Var + 1 - sqrt(2 Var + 1)) / Var = Var / (Var + 1 + sqrt(2 Var + 1))`` (the second
    form has no cancellation, so a tiny variance gives a large, finite epsilon). For pure-DP
    noise of unit sensitivity this returns its epsilon; for other noise, the epsilon with the
    same noise level.

    Examples
    --------
    >>> from pandas_dp.privacy.loss import PureDP
    >>> round(equivalent_epsilon(PureDP(Fraction(1, 10)).noise().variance()), 9)
    0.1
    """
    v = float(variance)
    return math.log((v + 1.0 + math.sqrt(2.0 * v + 1.0)) / v)


def size_epsilon(noise: Noise) -> float:
    """The ``epsilon`` of the size formulas for a level's noise: the paper's ``2 / epsilon**2`` set to its variance.

    Discrete Laplace noise (pure DP) gives back its own epsilon (:func:`equivalent_epsilon`, exact);
    other noise (the discrete Gaussian of zCDP) gives ``sqrt(2 / Var)``, the paper's rule with
    ``sigma**2`` in place of ``2 / epsilon**2`` (module notes, "Under zCDP").

    Examples
    --------
    >>> from pandas_dp.privacy.loss import PureDP, ZCDP
    >>> round(size_epsilon(PureDP(Fraction(1, 2)).noise()), 9), round(size_epsilon(ZCDP(Fraction(1, 8)).noise()), 3)
    (0.5, 0.707)
    """
    v = float(noise.variance())
    return equivalent_epsilon(v) if isinstance(noise, DiscreteLaplace) else math.sqrt(2.0 / v)


def ugrid_size(total: float, epsilon: float, c: float = DEFAULT_C) -> int:
    """UGrid's cells per axis ``m = ceil(sqrt(N epsilon / c))`` (at least 1).

    Examples
    --------
    >>> ugrid_size(1_000_000, 1.0), ugrid_size(19_435, 0.1), ugrid_size(-50, 1.0), ugrid_size(1e6, 1e300, 1e-300)
    (317, 14, 1, 4611686018427387904)
    """
    return max(1, math.ceil(min(math.sqrt(max(float(total), 0.0) * epsilon / c), _MAX_SIZE)))


def agrid_first_size(total: float, epsilon: float, c: float = DEFAULT_C) -> int:
    """AGrid's first-level cells per axis ``m1 = max(10, ceil(sqrt(N epsilon / c) / 4))``.

    Examples
    --------
    >>> agrid_first_size(6_442_863, 1.0), agrid_first_size(32_561, 0.1)
    (201, 10)
    """
    return max(10, math.ceil(min(math.sqrt(max(float(total), 0.0) * epsilon / c) / 4.0, _MAX_SIZE)))


def agrid_second_size(noisy_counts: np.ndarray, epsilon_2: float, c2: float = DEFAULT_C / 2) -> np.ndarray:
    """AGrid's sub-cells per axis ``m2 = ceil(sqrt(N' epsilon_2 / c2))`` of every first-level cell (at least 1).

    ``epsilon_2 = (1 - alpha) epsilon``; a noisy count ``N' <= 0`` gives ``m2 = 1``. Sizes are capped
    at ``2**62`` (the caller caps them at the cell's atoms): a huge loss (``rho=1e300``: ``epsilon_2`` near
    ``1e150``) or a tiny ``c`` must not overflow the integers.

    Examples
    --------
    >>> agrid_second_size(np.array([-3, 0, 10, 1000]), 0.5).tolist()
    [1, 1, 1, 10]
    >>> int(agrid_second_size(np.array([1e6]), 1e300)[0]) == 2 ** 62
    True
    """
    n = np.maximum(np.asarray(noisy_counts, dtype=np.float64), 0.0)
    with np.errstate(over="ignore"):
        m = np.ceil(np.sqrt(n * epsilon_2 / c2) - 1e-12)
    return np.clip(np.nan_to_num(m, nan=1.0, posinf=_MAX_SIZE), 1.0, _MAX_SIZE).astype(np.int64)


def axis_edges(n: int, parts: int) -> np.ndarray:
    """Edges ``floor(i n / m)``, ``i = 0..m``, of ``m = min(parts, n)`` near-equal intervals of ``n`` atoms.

    Examples
    --------
    >>> axis_edges(10, 4).tolist()
    [0, 2, 5, 7, 10]
    """
    m = max(1, min(int(parts), int(n)))
    return (np.arange(m + 1, dtype=np.int64) * n) // m


# --------------------------------------------------------------------------------------- plans

def _check_shape(shape: Any, name: str) -> tuple[int, int]:
    dims = shape_dims(shape)
    if len(dims) != 2 or min(dims) < 1:
        raise ParameterError(f"{name} takes a 2-D grid of counts on a non-empty public domain. Got an array of "
                             f"shape {dims}. Pass the counts of the 2-D domain grid (e.g. 256 x 256 atoms).")
    return dims[0], dims[1]


def _check_share(value: Any, name: str, what: str) -> Fraction:
    s = to_fraction(value, name=name)
    if not 0 < s < 1:
        raise ParameterError(f"The '{name}' parameter must be strictly between 0 and 1 ({what}). Got {value!r}.")
    return s


def _check_c(c: Any, name: str) -> float:
    if isinstance(c, bool) or not isinstance(c, (int, float)) or not math.isfinite(c) or c <= 0:
        raise ParameterError(f"The 'c' parameter of {name} must be a positive number (the paper's 10). Got {c!r}.")
    return float(c)


def _split_total(loss: PrivacyLoss, total_share: Any, expected_total: Any
                 ) -> tuple[PrivacyLoss | None, Noise | None, float | None, PrivacyLoss]:
    if expected_total is not None:
        t = float(expected_total)
        if not math.isfinite(t) or t < 0:
            raise ParameterError(f"The 'expected_total' parameter must be a public, finite, non-negative number "
                                 f"of rows. Got {expected_total!r}.")
        return None, None, t, loss
    share = _check_share(total_share, "total_share", "the share of the loss spent on the noisy total")
    total_loss, rest = loss.split([share, 1 - share])
    return total_loss, total_loss.noise(what="the noisy total of the grid"), None, rest


def plan_ugrid(shape: tuple[int, ...], *, loss: PrivacyLoss, total_share: float | Fraction = DEFAULT_TOTAL_SHARE,
               expected_total: float | None = None, c: float = DEFAULT_C) -> GridPlan:
    """Plan a UGrid release from public information (shape, loss, knobs); see :func:`ugrid`.

    Raises
    ------
    ParameterError
        For a bad shape or knob, or a loss too small for the noise sampler.
    """
    dims = _check_shape(shape, "ugrid")
    cc = _check_c(c, "ugrid")
    total_loss, total_noise, expected, rest = _split_total(loss, total_share, expected_total)
    noise = rest.noise(what="the grid counts")
    return GridPlan(method="ugrid", shape=dims, loss=loss, total_loss=total_loss, total_noise=total_noise,
                    expected_total=expected, level_losses=(rest,), level_noise=(noise,),
                    epsilon_used=size_epsilon(noise), epsilon_second=None, c=cc,
                    alpha=Fraction(1))


def plan_agrid(shape: tuple[int, ...], *, loss: PrivacyLoss, alpha: float | Fraction = DEFAULT_ALPHA,
               total_share: float | Fraction = DEFAULT_TOTAL_SHARE, expected_total: float | None = None,
               c: float = DEFAULT_C) -> GridPlan:
    """Plan an AGrid release from public information (shape, loss, knobs); see :func:`agrid`.

    Raises
    ------
    ParameterError
        For a bad shape or knob, or a loss too small for the noise sampler.
    """
    dims = _check_shape(shape, "agrid")
    cc = _check_c(c, "agrid")
    a = _check_share(alpha, "alpha", "the share of the counting loss spent on the first level")
    total_loss, total_noise, expected, rest = _split_total(loss, total_share, expected_total)
    loss1, loss2 = rest.split([a, 1 - a])
    noise1 = loss1.noise(what="AGrid's first level")
    noise2 = loss2.noise(what="AGrid's second level")
    return GridPlan(method="agrid", shape=dims, loss=loss, total_loss=total_loss, total_noise=total_noise,
                    expected_total=expected, level_losses=(loss1, loss2), level_noise=(noise1, noise2),
                    epsilon_used=size_epsilon(rest.noise(what="AGrid's counting levels")),
                    epsilon_second=size_epsilon(noise2), c=cc, alpha=a)


# --------------------------------------------------------------------------------------- mechanisms

def _counts_for(counts: np.ndarray, plan: GridPlan) -> np.ndarray:
    x = np.asarray(counts)
    if tuple(x.shape) != plan.shape:
        raise ParameterError(f"The counts have shape {x.shape} but the {plan.method} plan was made for "
                             f"{plan.shape}. Plan on the counts' public domain.")
    return np.asarray(x, dtype=np.int64)


def _total(x: np.ndarray, plan: GridPlan, rng: Any) -> tuple[float, bool]:
    if plan.total_noise is None:
        assert plan.expected_total is not None, "_split_total sets a noisy total or the public one"
        return float(plan.expected_total), False
    return float(plan.total_noise.add(np.array([int(x.sum())]), rng)[0]), True     # reads the true total


def _grid_cells(x: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row and column edges of the ``m x m`` grid over ``x`` (capped at the atoms) and every cell's exact count."""
    re, ce = axis_edges(x.shape[0], m), axis_edges(x.shape[1], m)
    return re, ce, np.add.reduceat(np.add.reduceat(x, re[:-1], axis=0), ce[:-1], axis=1)


def _cell_index(edges: np.ndarray, n: int) -> np.ndarray:
    return np.searchsorted(edges, np.arange(n), side="right") - 1


def ugrid(counts: np.ndarray, plan: GridPlan | None = None, *, loss: PrivacyLoss | None = None,
          total_share: float | Fraction = DEFAULT_TOTAL_SHARE, expected_total: float | None = None,
          c: float = DEFAULT_C, rng: Any = None) -> GridRelease:
    """Release 2-D counts with the uniform grid UG (Qardaji, Yang, Li, ICDE 2013).

    Parameters
    ----------
    counts : ndarray of int, shape (rows, cols)
        Exact counts of the atoms of a public 2-D domain.
    plan : GridPlan, optional
        From :func:`plan_ugrid`; without it one is made from the arguments below.
    loss : PrivacyLoss, optional
        Total loss (noisy total, if bought, plus the grid counts: exactly the whole).
    total_share : float or Fraction
        Share of ``loss`` spent on the noisy total ``N`` when ``expected_total`` is not given.
    expected_total : float, optional
        A public number of rows (e.g. last year's published total); then no share is spent.
    c : float
        The paper's constant (10).
    rng : numpy.random.Generator, optional
        ``None``: the secure source.

    Returns
    -------
    GridRelease

    Raises
    ------
    ParameterError
        For bad public inputs, before the counts are read.

    Notes
    -----
    ``m = ceil(sqrt(N epsilon / c))`` cells per axis (capped at the atoms), one
    noisy count per cell (cells are disjoint: sensitivity 1), spread evenly over
    its atoms. Variance of a rectangle covering a share ``f_k`` of cell ``k``:
    ``s * sum_k f_k**2`` (exact noise variance; bias excluded). Under a
    :class:`~pandas_dp.privacy.loss.ZCDP` loss the total and the cells are discrete Gaussian
    at their exact parts of ``rho`` (``sigma**2 = 1 / (2 rho_part)``), and ``s`` is that variance.

    Examples
    --------
    >>> from pandas_dp.privacy.loss import PureDP
    >>> x = np.random.default_rng(0).poisson(3, (64, 64))
    >>> rel = ugrid(x, loss=PureDP(Fraction(1)), expected_total=12_000, rng=np.random.default_rng(1))
    >>> rel.grid_shape
    (35, 35)
    """
    if plan is None:
        if loss is None:
            raise TypeError("ugrid needs a plan or a loss")
        plan = plan_ugrid(np.shape(counts), loss=loss, total_share=total_share, expected_total=expected_total,
                          c=c)                                             # before reading data
    x = _counts_for(counts, plan)
    n_total, noisy_total = _total(x, plan, rng)
    m = ugrid_size(n_total, plan.epsilon_used, plan.c)
    re, ce, cells = _grid_cells(x, m)
    noise = plan.level_noise[0]
    noisy = noise.add(cells, rng)                                           # reads the true counts
    s = noise.variance()
    area = np.outer(np.diff(re), np.diff(ce)).astype(np.float64)
    ri, cj = _cell_index(re, x.shape[0]), _cell_index(ce, x.shape[1])
    estimates = (noisy / area)[np.ix_(ri, cj)]
    variances = (s / area ** 2)[np.ix_(ri, cj)]
    return GridRelease(method="ugrid", estimates=estimates, variances=variances, row_edges=re, col_edges=ce,
                       cell_counts=noisy, cell_estimates=noisy.astype(np.float64),
                       cell_variances=np.full(noisy.shape, s), sub_shape=np.ones(noisy.shape + (2,), np.int64),
                       sub_counts=None, sub_estimates=None, sub_variances=None, total=n_total,
                       total_is_noisy=noisy_total, plan=plan)


def agrid(counts: np.ndarray, plan: GridPlan | None = None, *, loss: PrivacyLoss | None = None,
          alpha: float | Fraction = DEFAULT_ALPHA, total_share: float | Fraction = DEFAULT_TOTAL_SHARE,
          expected_total: float | None = None, c: float = DEFAULT_C, rng: Any = None) -> GridRelease:
    """Release 2-D counts with the adaptive grid AG (Qardaji, Yang, Li, ICDE 2013).

    Parameters
    ----------
    counts : ndarray of int, shape (rows, cols)
        Exact counts of the atoms of a public 2-D domain.
    plan : GridPlan, optional
        From :func:`plan_agrid`; without it one is made from the arguments below.
    loss : PrivacyLoss, optional
        Total loss (noisy total, if bought, plus both levels: exactly the whole).
    alpha : float or Fraction
        Share of the counting loss spent on the first level (1/2 in the paper).
    total_share : float or Fraction
        Share of ``loss`` spent on the noisy total ``N`` when ``expected_total`` is not given.
    expected_total : float, optional
        A public number of rows; then no share is spent on the total.
    c : float
        The paper's constant (10); the second level uses ``c / 2``.
    rng : numpy.random.Generator, optional
        ``None``: the secure source.

    Returns
    -------
    GridRelease

    Raises
    ------
    ParameterError
        For bad public inputs, before the counts are read.

    Notes
    -----
    Level 1: ``m1 = max(10, ceil(sqrt(N epsilon / c) / 4))`` cells per axis,
    noisy counts ``v_k`` with ``alpha`` of the counting loss. Level 2, from the
    noisy ``v_k`` only: ``m2 = ceil(sqrt(v_k (1 - alpha) epsilon / c2))`` sub-cells
    per axis inside cell ``k``, noisy counts with the rest (all sub-cells are
    disjoint: sensitivity 1 per level). Then the per-cell generalized least
    squares of the module docstring, and uniform spreading over atoms.

    Under a :class:`~pandas_dp.privacy.loss.ZCDP` loss (``histogram(method="agrid", rho=...)``)
    the noisy total (``total_share`` of ``rho``), level 1 (``alpha`` of the rest) and level 2
    (the remainder) are each discrete Gaussian with ``sigma**2 = 1 / (2 rho_part)``, the parts
    adding up to ``rho`` exactly; level 1 is data-dependent only through its noisy counts, so
    choosing ``m2`` from them is post-processing (module notes, "Under zCDP").

    Examples
    --------
    >>> from pandas_dp.privacy.loss import PureDP
    >>> x = np.random.default_rng(0).poisson(3, (64, 64))
    >>> rel = agrid(x, loss=PureDP(Fraction(1)), expected_total=12_000, rng=np.random.default_rng(1))
    >>> rel.grid_shape, int(rel.sub_shape.max()) >= 1
    ((10, 10), True)
    """
    if plan is None:
        if loss is None:
            raise TypeError("agrid needs a plan or a loss")
        plan = plan_agrid(np.shape(counts), loss=loss, alpha=alpha, total_share=total_share,
                          expected_total=expected_total, c=c)                # before reading data
    xi = _counts_for(counts, plan)
    noise1, noise2 = plan.level_noise
    n_total, noisy_total = _total(xi, plan, rng)
    m1 = agrid_first_size(n_total, plan.epsilon_used, plan.c)
    re, ce, cells = _grid_cells(xi, m1)
    v = noise1.add(cells, rng)                                             # reads the true counts
    s1, s2 = noise1.variance(), noise2.variance()
    assert plan.epsilon_second is not None, "plan_agrid always sets the second phase"
    m2 = agrid_second_size(v, plan.epsilon_second, plan.c / 2.0)           # noisy values only
    heights, widths = np.diff(re), np.diff(ce)
    m2r = np.minimum(m2, heights[:, None])
    m2c = np.minimum(m2, widths[None, :])
    sub_shape = np.stack([m2r, m2c], axis=-1)
    # Sub-cell of every atom: cell (i, j), then sub-row / sub-column inside it.
    ri, cj = _cell_index(re, xi.shape[0]), _cell_index(ce, xi.shape[1])
    rr, cc = np.meshgrid(np.arange(xi.shape[0]), np.arange(xi.shape[1]), indexing="ij")
    ci, cjj = ri[rr], cj[cc]
    pr, pc = m2r[ci, cjj], m2c[ci, cjj]
    sub_r = ((rr - re[ci] + 1) * pr - 1) // heights[ci]
    sub_c = ((cc - ce[cjj] + 1) * pc - 1) // widths[cjj]
    n_sub = (m2r * m2c).ravel()
    base = np.concatenate([[0], np.cumsum(n_sub)[:-1]]).reshape(m2r.shape)
    sub_id = base[ci, cjj] + sub_r * pc + sub_c
    true_sub = np.zeros(int(n_sub.sum()), dtype=np.int64)
    np.add.at(true_sub, sub_id.ravel(), xi.ravel())
    u = noise2.add(true_sub, rng)                                          # reads the true counts
    # Constrained inference per first-level cell (exact GLS of the two-level tree).
    cell_of_sub = np.repeat(np.arange(n_sub.size), n_sub)
    jn = n_sub.astype(np.float64)
    usum = np.bincount(cell_of_sub, weights=u, minlength=n_sub.size)
    p_cell = 1.0 / (1.0 / s1 + 1.0 / (jn * s2))
    total = p_cell * (v.ravel() / s1 + usum / (jn * s2))
    u_hat = u + ((total - usum) / jn)[cell_of_sub]
    p_sub = (p_cell / jn ** 2 + s2 * (1.0 - 1.0 / jn))[cell_of_sub]
    atoms_per_sub = np.bincount(sub_id.ravel(), minlength=int(n_sub.sum())).astype(np.float64)
    estimates = (u_hat / atoms_per_sub)[sub_id]
    variances = (p_sub / atoms_per_sub ** 2)[sub_id]
    return GridRelease(method="agrid", estimates=estimates, variances=variances, row_edges=re, col_edges=ce,
                       cell_counts=v, cell_estimates=total.reshape(v.shape), cell_variances=p_cell.reshape(v.shape),
                       sub_shape=sub_shape, sub_counts=u, sub_estimates=u_hat, sub_variances=p_sub,
                       total=n_total, total_is_noisy=noisy_total, plan=plan)
