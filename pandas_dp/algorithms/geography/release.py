"""Tables by geography: one noisy table per region on every level, made consistent.

:func:`release_geography` takes the exact table of every region of a public
geography (nation / states / counties ..., any fan-out), adds calibrated
integer noise level by level, and returns consistent estimates:

1. **Noise.** Level ``l`` gets ``level_losses[l]`` and
   ``level_losses[l].noise(sensitivity).add(counts[l], rng)``.  Every level is
   a partition of the persons (one region per person and level), so within a
   level the tables of all regions compose in parallel; levels compose
   sequentially (the caller splits the loss with ``loss.split(weights)``).  A
   level with no loss is not measured; a level with public totals is known
   exactly and not measured.
2. **Consistency.** Exact GLS across the geography for every cell
   (:func:`~pandas_dp.algorithms.geography.inference.region_inference`) with the
   levels' noise variances (exact variance ``0`` for public levels), subject
   also to public totals over the cells of the level-0 regions if given, or
   to public totals over the cells of every region of any levels
   (``level_totals``, below).
3. **Optional post-processing.** ``nonnegative``: the top-down weighted
   projection (:func:`~pandas_dp.algorithms.geography.nonnegative.nonnegative_regions`);
   ``integer``: non-negative integers by controlled rounding
   (:func:`~pandas_dp.algorithms.controlled_rounding.controlled_round`), every
   value the floor or ceiling of the non-negative estimate, consistent in
   every cell, equal to the public totals.

Steps 2 and 3 read only the noisy tables and public inputs (post-processing).

Totals of regions at any level. The per-cell noise of a level is independent
with one variance (covariance ``Sigma (x) I`` over regions x cells), so a
region's table splits into its mean over the ``n`` cells and its centred part,
whose noises are uncorrelated (orthogonal projections of isotropic noise): the
GLS separates into a tree problem for the means (noise variance
``sigma2[l] / n`` on level ``l``) and one for the centred parts (the tree GLS
maps centred tables to centred tables). A public total per region of level
``l`` makes the means of level ``l`` exact (variance ``0``, value ``T / n``):
every ancestor is then the sum of public values and every descendant is
conditioned on them, while the centred parts are unchanged. A cell's exact
variance is ``P_c (1 - 1 / n) + Q_c``, with ``P`` the variances of the
unconstrained tree problem and ``Q`` those of the conditioned mean problem.

References
----------
.. [1] J. M. Abowd et al. "The 2020 Census Disclosure Avoidance System TopDown
   Algorithm", Harvard Data Science Review, 2022.
.. [2] M. Hay, V. Rastogi, G. Miklau, D. Suciu. "Boosting the Accuracy of
   Differentially Private Histograms Through Consistency", PVLDB 3(1), 2010.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pandas_dp.algorithms.controlled_rounding import RoundingMethod, controlled_round
from pandas_dp.algorithms.geography.inference import region_inference
from pandas_dp.algorithms.geography.variance import RegionVariances
from pandas_dp.algorithms.geography.layout import RegionLayout, region_layout
from pandas_dp.algorithms.geography.nonnegative import nonnegative_regions
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import Noise, PrivacyLoss, Sensitivity

__all__ = ["GeographyRelease", "release_geography", "disagreeing_levels"]


@dataclass(frozen=True)
class GeographyRelease:
    """A released geography: noisy tables, consistent estimates and their exact variances.

    Attributes
    ----------
    layout : RegionLayout
        The public region tree (levels coarse to fine).
    losses : tuple of PrivacyLoss or None
        Loss of every level (``None``: not measured).
    noises : tuple of Noise or None
        Noise drawn on every level (``None``: not measured).
    level_variances : ndarray
        Noise variance per value and level (``inf``: not measured; ``0``: public).
    noisy : tuple of ndarray or None
        Noisy ``int64`` tables per level (``None``: not measured).
    estimates : tuple of ndarray
        Published tables per level, ``(n_regions[l], *cells)``: GLS estimates
        (float64), their non-negative projection, or ``int64`` with ``integer``.
    variances : tuple of ndarray
        Exact error variance of the GLS estimate of every region, the same in
        every cell (approximate for the published values when
        ``variance_exact`` is False).
    structure : RegionVariances
        GLS variance structure (variances of sums of regions and cells).
    public : tuple of bool
        Levels known exactly from public totals.
    level_totals : tuple of int
        Levels whose regions' totals over the cells were public facts, matched exactly.
    mean_structure : RegionVariances or None
        With ``level_totals`` on a level below the roots: the variance structure of the
        conditioned tree problem of the regions' means (see the module docstring).
    nonnegative, integer : bool
        Post-processing applied (``integer`` implies ``nonnegative``).
    rounding : str or None
        Controlled-rounding rule when ``integer``.
    """

    layout: RegionLayout
    losses: tuple[PrivacyLoss | None, ...]
    noises: tuple[Noise | None, ...]
    level_variances: np.ndarray
    noisy: tuple[np.ndarray | None, ...]
    estimates: tuple[np.ndarray, ...]
    variances: tuple[np.ndarray, ...]
    structure: RegionVariances
    public: tuple[bool, ...]
    nonnegative: bool
    integer: bool
    rounding: str | None
    level_totals: tuple[int, ...] = ()
    mean_structure: RegionVariances | None = None

    @property
    def variance_exact(self) -> bool:
        """False when non-negativity or rounding made the published values non-linear in the noise."""
        return not (self.nonnegative or self.integer)

    @property
    def n_levels(self) -> int:
        """Number of levels."""
        return self.layout.n_levels

    def noise_descriptions(self) -> list[dict[str, Any] | None]:
        """JSON-friendly record of the noise of every level (``None``: not measured)."""
        return [None if n is None else n.describe() for n in self.noises]

    def sum_variance(self, level: int, region_weights: np.ndarray,
                     cell_weights: np.ndarray | None = None) -> np.ndarray | float:
        """Exact GLS variance of a weighted sum of regions (and cells) of one level.

        See :meth:`~pandas_dp.algorithms.geography.inference.RegionVariances.sum_variance`. With
        ``mean_structure`` (totals of regions below the roots): the centred part of the cell
        weights ``u - mean(u)`` against the unconstrained structure plus ``(sum u)^2`` times the
        variance of the regions' means (module docstring).
        """
        if self.mean_structure is None:
            return self.structure.sum_variance(level, region_weights, cell_weights)
        n = int(np.prod(self.estimates[level].shape[1:]))
        if cell_weights is None:   # one cell
            centred, total = 1.0 - 1.0 / n, 1.0
            part = self.structure.sum_variance(level, region_weights)
        else:
            u = np.asarray(cell_weights, dtype=np.float64).ravel()
            if u.size != n:
                raise ParameterError(f"cell_weights must give one weight per cell ({n}); got {u.size}.")
            centred, total = float(np.sum((u - u.mean()) ** 2)), float(u.sum()) ** 2
            part = self.structure.sum_variance(level, region_weights)
        return part * centred + total * self.mean_structure.sum_variance(level, region_weights)


def _check_lists(counts: Sequence[Any], parents: Sequence[Any], level_losses: Sequence[Any],
                 public_totals: Sequence[Any] | None) -> None:
    levels = len(counts)
    for name, seq in (("parents", parents), ("level_losses", level_losses),
                      ("public_totals", public_totals)):
        if seq is not None and len(seq) != levels:
            raise ParameterError(f"'{name}' must have one entry per geography level ({levels} levels, "
                                 f"as in counts); got {len(seq)}.")
    if levels == 0 or counts[-1] is None:
        raise ParameterError("counts must end with the exact table of the finest level, shaped "
                             "(n_regions, *cells); coarser levels may be None (summed from it).")


def _layout(counts: Sequence[Any], parents: Sequence[Any],
            public_totals: Sequence[Any] | None) -> RegionLayout:
    sizes: list[int | None] = []
    for lvl, table in enumerate(counts):
        given = table if table is not None else (public_totals[lvl] if public_totals else None)
        sizes.append(None if given is None else int(np.shape(given)[0]))
    return region_layout(parents, sizes)


def _public(lay: RegionLayout, public_totals: Sequence[Any] | None,
            cells: tuple[int, ...]) -> list[np.ndarray | None]:
    out: list[np.ndarray | None] = [None] * lay.n_levels
    if public_totals is None:
        return out
    for lvl, t in enumerate(public_totals):
        if t is None:
            continue
        arr = np.asarray(t)
        shape = (lay.n_regions[lvl],) + cells
        if arr.shape != shape or not np.issubdtype(arr.dtype, np.integer) or np.any(arr < 0):
            raise ParameterError(
                f"public_totals[{lvl}] must be a non-negative integer table shaped {shape} (every "
                f"region and cell of level {lvl}); got dtype {arr.dtype} and shape {arr.shape}.")
        out[lvl] = arr.astype(np.int64)
    known = [(lvl, table) for lvl, table in enumerate(out) if table is not None]
    for (fine, up), (coarse, target) in zip(known[1:], known[:-1]):
        for lvl in range(fine, coarse, -1):
            up = lay.aggregate(up, lvl)
        if not np.array_equal(up, target):
            raise ParameterError(
                f"public_totals of levels {coarse} and {fine} disagree: the regions of level {fine} do "
                f"not add up to those of level {coarse}. Pass totals that are consistent.")
    return out


def _root_totals(lay: RegionLayout, root_totals: Any,
                 public: list[np.ndarray | None]) -> np.ndarray | None:
    if root_totals is None:
        return None
    arr = np.asarray(root_totals)
    if arr.shape != (lay.n_regions[0],) or not np.issubdtype(arr.dtype, np.integer) or np.any(arr < 0):
        raise ParameterError(
            f"root_totals must give one non-negative integer total per level-0 region, shaped "
            f"({lay.n_regions[0]},); got dtype {arr.dtype} and shape {arr.shape}.")
    arr = arr.astype(np.int64)
    first = next(((lvl, table) for lvl, table in enumerate(public) if table is not None), None)
    if first is not None:
        known, up = first
        for lvl in range(known, 0, -1):
            up = lay.aggregate(up, lvl)
        if not np.array_equal(up.reshape(up.shape[0], -1).sum(axis=1), arr):
            raise ParameterError(f"root_totals disagree with public_totals of level {known}: its tables "
                                 f"do not add up to them. Pass consistent public values.")
    return arr


def _level_totals(lay: RegionLayout, level_totals: Mapping[int, Any] | None, public: list[np.ndarray | None],
                  roots: np.ndarray | None, projected: bool, integer: bool) -> dict[int, np.ndarray]:
    """Validated ``{level: totals of its regions over the cells}`` (public inputs)."""
    if level_totals is None:
        return {}
    if roots is not None or any(p is not None for p in public):
        raise ParameterError("level_totals replaces root_totals and public_totals: pass one kind of public "
                             "values.")
    out: dict[int, np.ndarray] = {}
    for lvl, t in dict(level_totals).items():
        if not isinstance(lvl, (int, np.integer)) or isinstance(lvl, bool) or not 0 <= lvl < lay.n_levels:
            raise ParameterError(f"level_totals keys must be levels 0..{lay.n_levels - 1}; got {lvl!r}.")
        arr = np.asarray(t, dtype=np.float64)
        if arr.shape != (lay.n_regions[lvl],) or not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise ParameterError(f"level_totals[{lvl}] must give one finite non-negative total per region, "
                                 f"shaped ({lay.n_regions[lvl]},); got shape {arr.shape}.")
        out[int(lvl)] = arr
    if projected and set(out) - {0}:
        raise ParameterError("Non-negative and integer tables keep public totals of level 0 only (the roots); "
                             "totals of finer regions are kept by the GLS estimate. Drop nonnegative/integer "
                             "or give the totals of level 0.")
    if integer and 0 in out and not np.array_equal(out[0], np.round(out[0])):
        raise ParameterError("Integer tables need integer public totals (controlled rounding keeps them "
                             "exactly); round the totals or drop integer.")
    if integer and 0 in out:
        out[0] = out[0].astype(np.int64)
    pair = disagreeing_levels(out, lay)
    if pair is not None:
        coarse, fine = pair
        raise ParameterError(f"level_totals of levels {coarse} and {fine} disagree: the regions of level "
                             f"{fine} do not add up to those of level {coarse}.")
    return out


def disagreeing_levels(totals: Mapping[int, np.ndarray], lay: RegionLayout) -> tuple[int, int] | None:
    """``(coarse, fine)``: the first two given levels whose totals do not add up (fine summed to coarse), or None."""
    given = sorted(totals)
    for fine, coarse in zip(given[::-1], given[::-1][1:]):
        summed = totals[fine]
        for lvl in range(fine, coarse, -1):
            summed = lay.aggregate(summed, lvl)
        if not np.allclose(summed, totals[coarse], rtol=1e-12, atol=1e-9):
            return coarse, fine
    return None


def _conditioned(inference: Any, observed: list[np.ndarray | None], lay: RegionLayout, sigma2: np.ndarray,
                 totals: Mapping[int, np.ndarray]) -> tuple[list[np.ndarray], tuple[np.ndarray, ...],
                                                            RegionVariances]:
    """The GLS estimate subject to public totals of regions (module docstring): centred part + conditioned means."""
    cells = inference.estimates[-1].shape[1:]
    n = int(np.prod(cells)) if cells else 1
    mean_obs: list[np.ndarray | None] = [
        None if t is None or not np.isfinite(sigma2[lvl]) else
        np.asarray(t, dtype=np.float64).reshape(lay.n_regions[lvl], -1).mean(axis=1)
        for lvl, t in enumerate(observed)]
    mean_s2 = sigma2 / n
    for lvl, t in totals.items():
        mean_obs[lvl] = np.asarray(t, dtype=np.float64) / n
        mean_s2[lvl] = 0.0
    means = region_inference(mean_obs, lay, mean_s2)
    estimates = []
    for lvl, est in enumerate(inference.estimates):
        flat = est.reshape(lay.n_regions[lvl], n)
        flat = flat - flat.mean(axis=1, keepdims=True) + means.estimates[lvl][:, None]
        estimates.append(flat.reshape(est.shape))
    variances = tuple(p * (1.0 - 1.0 / n) + q for p, q in zip(inference.variances, means.variances))
    return estimates, variances, means.structure


def release_geography(counts: Sequence[np.ndarray | None], parents: Sequence[np.ndarray | None], *,
                      level_losses: Sequence[PrivacyLoss | None],
                      sensitivity: Sensitivity = Sensitivity(), integer: bool = False,
                      nonnegative: bool = False,
                      public_totals: Sequence[np.ndarray | None] | None = None,
                      root_totals: np.ndarray | None = None,
                      level_totals: Mapping[int, np.ndarray] | None = None,
                      rounding: RoundingMethod = "largest_remainder",
                      rng: Any = None) -> GeographyRelease:
    """Release one table per region of a public geography, consistent across levels.

    Parameters
    ----------
    counts : sequence of ndarray or None
        ``counts[l]``: exact ``int64`` table of level ``l``, shaped
        ``(n_regions[l], *cells)``, coarse to fine.  Coarser levels may be
        ``None``: they are then the sums of the level below.
    parents : sequence of ndarray or None
        ``parents[l][i]``: index in level ``l - 1`` of the parent of region
        ``i`` of level ``l`` (``parents[0]`` is ``None``).
    level_losses : sequence of PrivacyLoss or None
        Privacy loss of every level (``None`` or zero: not measured).  The
        release costs their sum.
    sensitivity : Sensitivity
        How far one privacy unit moves the table of one level (default: one
        row per unit, L1 = L2 = 1).
    integer : bool
        Publish non-negative integers by controlled rounding (implies
        ``nonnegative``).
    nonnegative : bool
        Publish non-negative estimates (top-down projection).
    public_totals : sequence of ndarray or None, optional
        Exact public tables of some levels (non-negative integers shaped like
        that level's table); those levels get no loss and are matched exactly.
    root_totals : ndarray of int, optional
        Public total over all cells of every level-0 region, shaped
        ``(n_regions[0],)`` (e.g. the national population, a census
        invariant): the estimates are GLS subject to it, and non-negative and
        integer tables keep it exactly.
    level_totals : mapping of int to ndarray, optional
        ``{level: totals}``: a public total over all cells of every region of
        those levels (finite, non-negative, one per region, consistent across
        levels), matched exactly by the GLS estimate (module docstring). Not
        with ``public_totals`` or ``root_totals``; with ``nonnegative`` or
        ``integer`` only on level 0 (it is then ``root_totals``: integers for
        ``integer``), as the projections keep totals of the roots only.
    rounding : {"largest_remainder", "unbiased"}
        Controlled-rounding rule when ``integer`` (see
        :mod:`~pandas_dp.algorithms.controlled_rounding`).
    rng : None, SecureRandom or numpy.random.Generator, optional
        Noise source (``None``: the secure source); noise is drawn level by
        level, coarse to fine.  A ``Generator`` also drives the unbiased
        rounding (otherwise a fresh OS-seeded one does: post-processing).

    Returns
    -------
    GeographyRelease

    Raises
    ------
    ParameterError
        On public inputs only (shapes, tree, losses, totals), before any noise
        is drawn: the finest level must be measured or public, a public level
        must have no loss.

    Notes
    -----
    With ``sigma2[l]`` the variance of level ``l``'s noise, the GLS estimate
    minimises ``sum_l sum_{v, j} (y_vj - x_vj)^2 / sigma2[l]`` over consistent
    tables ``x`` in every cell ``j``; its exact variance is one value per
    region (:attr:`GeographyRelease.variances`).

    Examples
    --------
    >>> from fractions import Fraction
    >>> from pandas_dp.privacy.loss import PureDP
    >>> counts = [None, np.array([[5, 1], [7, 0], [2, 3]])]
    >>> losses = PureDP(Fraction(1)).split([0.5, 0.5])
    >>> rel = release_geography(counts, [None, np.array([0, 0, 0])], level_losses=losses,
    ...                         integer=True, rng=np.random.default_rng(0))
    >>> rel.estimates[0].shape, rel.estimates[1].dtype.name
    ((1, 2), 'int64')
    >>> bool(np.array_equal(rel.estimates[1].sum(axis=0), rel.estimates[0][0]))
    True
    """
    _check_lists(counts, parents, level_losses, public_totals)
    lay = _layout(counts, parents, public_totals)
    cells = tuple(np.shape(np.asarray(counts[-1]))[1:])
    for lvl, table in enumerate(counts):
        if table is not None and tuple(np.shape(table)) != (lay.n_regions[lvl],) + cells:
            raise ParameterError(f"counts[{lvl}] must be shaped {(lay.n_regions[lvl],) + cells} like "
                                 f"the finest table; got {np.shape(table)}.")
    public = _public(lay, public_totals, cells)
    roots = _root_totals(lay, root_totals, public)
    region_totals = _level_totals(lay, level_totals, public, roots, bool(nonnegative or integer), bool(integer))
    if set(region_totals) == {0}:   # totals of the roots: the closed form, kept by the projections
        roots = region_totals.pop(0)
    noises: list[Noise | None] = []
    losses: list[PrivacyLoss | None] = []
    for lvl, loss in enumerate(level_losses):
        if loss is None or not loss.amount > 0:   # not measured
            losses.append(None)
            noises.append(None)
            continue
        if public[lvl] is not None:
            raise ParameterError(f"Level {lvl} has public totals and a positive loss; a public level "
                                 f"needs no noise. Give it no loss (None).")
        losses.append(loss)
        noises.append(loss.noise(sensitivity, what=f"level {lvl} of the geography"))
    if noises[-1] is None and public[-1] is None:
        raise ParameterError("The finest level of the geography must be measured (a positive loss) or "
                             "public: its regions cannot be estimated from their parents alone.")
    integer, nonnegative = bool(integer), bool(nonnegative or integer)
    if integer and rounding not in ("largest_remainder", "unbiased"):
        raise ParameterError(f"rounding must be 'largest_remainder' or 'unbiased'; got {rounding!r}.")
    # Public checks are done; from here on private counts are read (never raising on their values).
    tables: list[np.ndarray] = [np.empty(0)] * lay.n_levels
    tables[-1] = np.asarray(counts[-1])
    for lvl in range(lay.leaf_level - 1, -1, -1):
        tables[lvl] = (np.asarray(counts[lvl]) if counts[lvl] is not None
                       else lay.aggregate(tables[lvl + 1], lvl + 1))
    noisy = tuple(None if n is None else n.add(tables[lvl], rng) for lvl, n in enumerate(noises))
    sigma2 = np.array([n.variance() if n is not None else 0.0 if public[lvl] is not None else np.inf
                       for lvl, n in enumerate(noises)])
    observed = [noisy[lvl] if noisy[lvl] is not None else public[lvl] for lvl in range(lay.n_levels)]
    inference = region_inference(observed, lay, sigma2, root_totals=roots)
    estimates: Sequence[np.ndarray] = inference.estimates
    variances = inference.variances
    means = None
    if region_totals:
        estimates, variances, means = _conditioned(inference, observed, lay, sigma2, region_totals)
    if nonnegative:
        estimates = nonnegative_regions(inference)
    if integer:
        estimates = controlled_round(estimates, lay, totals=public, root_totals=roots, method=rounding,
                                     rng=rng if isinstance(rng, np.random.Generator) else None)
    for arr in (sigma2, *estimates, *(n for n in noisy if n is not None)):
        arr.setflags(write=False)
    return GeographyRelease(layout=lay, losses=tuple(losses), noises=tuple(noises),
                            level_variances=sigma2, noisy=noisy, estimates=tuple(estimates),
                            variances=variances, structure=inference.structure,
                            public=tuple(p is not None for p in public), nonnegative=nonnegative,
                            integer=integer, rounding=rounding if integer else None,
                            level_totals=tuple(sorted(region_totals)) if region_totals else
                            ((0,) if level_totals is not None and roots is not None else ()),
                            mean_structure=means)
