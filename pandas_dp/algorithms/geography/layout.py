"""Layout of a public tree of regions: levels coarse to fine, any fan-out.

Level ``0`` is the coarsest (usually one region, ``"national"``; several
independent roots form a forest, e.g. the flat ``by=`` case), level ``L`` the
finest.  ``parents[l][i]`` is the index, in level ``l - 1``, of the parent of
region ``i`` of level ``l`` (``parents[0]`` is ``None``).  Every region of a
level above the finest has at least one child; fan-outs are otherwise
arbitrary (1 is allowed).

Values on a level are arrays shaped ``(n_regions[l], ...)``: the first axis is
the region, the trailing axes are the cells of the table released for every
region (one cell for a tree of single counts).  :meth:`RegionLayout.aggregate`
sums children into parents with one ``np.add.reduceat`` over the children
grouped by parent, and :meth:`RegionLayout.expand` broadcasts parent values
onto children with one fancy index: both are vectorized over regions and cells.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING
from dataclasses import dataclass, field

import numpy as np

from pandas_dp.errors import ParameterError

if TYPE_CHECKING:  # pragma: no cover
    from pandas_dp.domain.geography import RegionTree

__all__ = ["RegionLayout", "region_layout", "as_layout", "region_tree_layout", "level_tables"]


@dataclass(frozen=True)
class RegionLayout:
    """A validated tree of regions (build it with :func:`region_layout`).

    Attributes
    ----------
    parents : tuple of ndarray or None
        ``parents[l]`` (read-only int64, length ``n_regions[l]``) for
        ``l >= 1``; ``None`` for level 0.
    n_regions : tuple of int
        Number of regions on every level, coarse to fine.
    """

    parents: tuple[np.ndarray | None, ...]
    n_regions: tuple[int, ...]
    _order: tuple[np.ndarray | None, ...] = field(repr=False, compare=False)
    _starts: tuple[np.ndarray | None, ...] = field(repr=False, compare=False)
    _sorted: tuple[bool, ...] = field(repr=False, compare=False)

    @property
    def n_levels(self) -> int:
        """Number of levels ``L + 1``."""
        return len(self.n_regions)

    @property
    def leaf_level(self) -> int:
        """Index ``L`` of the finest level."""
        return len(self.n_regions) - 1

    def parent_codes(self, level: int) -> np.ndarray:
        """``parents[level]``: the parent, in level ``level - 1``, of every region of ``level >= 1``."""
        codes = self.parents[level]
        assert codes is not None, "level 0 has no parents; callers pass a child level >= 1"
        return codes

    def _group_starts(self, level: int) -> np.ndarray:
        starts = self._starts[level]
        assert starts is not None, "level 0 has no parents; callers pass a child level >= 1"
        return starts

    def aggregate(self, values: np.ndarray, level: int) -> np.ndarray:
        """Sum the values of the regions of ``level`` into their parents (level ``level - 1``).

        Parameters
        ----------
        values : ndarray
            Shaped ``(n_regions[level], ...)``.
        level : int
            The child level (``>= 1``).

        Returns
        -------
        ndarray
            Shaped ``(n_regions[level - 1], ...)``: per-parent sums over the
            children, for every trailing cell.
        """
        values = np.asarray(values)
        if not self._sorted[level]:
            values = values[self._order[level]]
        return np.add.reduceat(values, self._group_starts(level), axis=0)

    def expand(self, parent_values: np.ndarray, level: int) -> np.ndarray:
        """Each region of ``level`` gets the value of its parent (level ``level - 1``)."""
        return np.asarray(parent_values)[self.parent_codes(level)]

    def n_children(self, level: int) -> np.ndarray:
        """Number of children (in ``level``) of every region of ``level - 1``."""
        return np.diff(np.append(self._group_starts(level), self.n_regions[level]))

    def group_order(self, level: int) -> tuple[np.ndarray, np.ndarray]:
        """Children of ``level`` grouped by parent: ``(order, starts)``.

        ``order`` lists the regions of ``level`` sorted by parent (stable), and
        the children of parent ``p`` are ``order[starts[p]:starts[p + 1]]``.
        """
        order = self._order[level]
        if order is None:
            order = np.arange(self.n_regions[level])
        return order, self._group_starts(level)


def _as_parent_array(value: object, level: int, n_above: int | None) -> np.ndarray:
    arr = np.asarray(value)
    if arr.ndim != 1 or not (np.issubdtype(arr.dtype, np.integer) or arr.size == 0):
        raise ParameterError(
            f"parents[{level}] must be a 1-D array of integer region indices into level {level - 1}. "
            f"Got an array of dtype {arr.dtype} and shape {arr.shape}; pass integer codes, e.g. "
            f"pandas.Index.get_indexer of the parent labels.")
    arr = np.array(arr, dtype=np.int64, copy=True)
    if arr.size and (arr.min() < 0 or (n_above is not None and arr.max() >= n_above)):
        raise ParameterError(
            f"parents[{level}] must index regions of level {level - 1} (0 <= parent < {n_above}). "
            f"Got values from {arr.min()} to {arr.max()}; map every region to an existing parent.")
    return arr


def region_layout(parents: Sequence[np.ndarray | None],
                  n_regions: Sequence[int | None] | None = None) -> RegionLayout:
    """Validate a region tree given as parent codes per level.

    Parameters
    ----------
    parents : sequence of array of int or None
        One entry per level, coarse to fine; ``parents[0]`` is ignored (pass
        ``None``); ``parents[l][i]`` is the parent, in level ``l - 1``, of
        region ``i`` of level ``l``.
    n_regions : sequence of int or None, optional
        Number of regions per level (``None`` entries: not given).  When not
        given, level ``l >= 1`` has
        ``len(parents[l])`` regions and level ``l - 1`` has
        ``max(parents[l]) + 1`` (which is right because every parent has a
        child); a single-level layout then has one region.

    Returns
    -------
    RegionLayout

    Raises
    ------
    ParameterError
        When a parent code is out of range, a region above the finest level
        has no child, or the sizes disagree.  The tree is public, so these
        errors may be loud.

    Examples
    --------
    >>> lay = region_layout([None, np.array([0, 0]), np.array([1, 0, 1])])
    >>> lay.n_regions
    (1, 2, 3)
    >>> lay.aggregate(np.array([[1, 2], [3, 4], [5, 6]]), 2).tolist()
    [[3, 4], [6, 8]]
    """
    levels = len(parents)
    if levels == 0:
        raise ParameterError("A region tree needs at least one level; got parents=[]. "
                             "Pass [None] for a single level of independent regions.")
    sizes: list[int | None] = [None] * levels
    if n_regions is not None:
        if len(n_regions) != levels:
            raise ParameterError(f"n_regions must give one size per level ({levels} levels); "
                                 f"got {len(n_regions)} sizes.")
        sizes = [None if n is None else int(n) for n in n_regions]
    codes: list[np.ndarray] = [_as_parent_array(parents[lvl], lvl, sizes[lvl - 1])
                               for lvl in range(1, levels)]
    arrays: list[np.ndarray | None] = [None, *codes]
    for lvl in range(levels - 1, 0, -1):
        n_here = codes[lvl - 1].size
        if sizes[lvl] is None:
            sizes[lvl] = n_here
        elif sizes[lvl] != n_here:
            raise ParameterError(f"parents[{lvl}] must list one parent per region of level {lvl} "
                                 f"({sizes[lvl]} regions); got {n_here} entries.")
        if sizes[lvl - 1] is None:
            sizes[lvl - 1] = int(codes[lvl - 1].max()) + 1 if n_here else 0
    if sizes[0] is None:
        sizes[0] = 1
    known = [s for s in sizes if s is not None]
    assert len(known) == levels, "every size is set above: from n_regions, the codes or the root"
    if any(s < 1 for s in known):
        raise ParameterError(f"Every level needs at least one region; got sizes {sizes}.")
    order: list[np.ndarray | None] = [None]
    starts: list[np.ndarray | None] = [None]
    is_sorted: list[bool] = [True]
    for lvl in range(1, levels):
        par = codes[lvl - 1]
        counts = np.bincount(par, minlength=known[lvl - 1])
        if np.any(counts == 0):
            missing = np.flatnonzero(counts == 0)
            raise ParameterError(
                f"Every region above the finest level needs at least one child: region(s) "
                f"{missing[:5].tolist()} of level {lvl - 1} have no child in level {lvl} "
                f"({missing.size} in all). Remove them from the region tree or give them children.")
        srt = bool(np.all(par[1:] >= par[:-1]))
        order.append(None if srt else np.argsort(par, kind="stable"))
        starts.append(np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64))
        is_sorted.append(srt)
        par.setflags(write=False)
    return RegionLayout(parents=tuple(arrays), n_regions=tuple(known),
                        _order=tuple(order), _starts=tuple(starts), _sorted=tuple(is_sorted))


def as_layout(parents: RegionLayout | Sequence[np.ndarray | None],
              n_regions: Sequence[int | None] | None = None,
              tables: Sequence[np.ndarray | None] | None = None) -> RegionLayout:
    """A :class:`RegionLayout` as given, or built from plain parent codes.

    Without ``n_regions``, the sizes of the levels that have a table in
    ``tables`` are read from the tables' first axis.
    """
    if isinstance(parents, RegionLayout):
        return parents
    if n_regions is None and tables is not None and len(tables) == len(parents):
        n_regions = [None if t is None else int(np.shape(t)[0]) for t in tables]
    return region_layout(parents, n_regions)


def region_tree_layout(tree: RegionTree) -> RegionLayout:
    """The tree's levels as a :class:`~pandas_dp.algorithms.geography.layout.RegionLayout` (root first)."""
    return region_layout([None, *tree.parents[1:]], [len(r) for r in tree.regions])


def level_tables(leaf_counts: np.ndarray, tree: RegionTree) -> list[np.ndarray]:
    """Exact tables of every level, root first, from the leaf table (children summed into parents)."""
    lay = region_tree_layout(tree)
    out = [np.asarray(leaf_counts, dtype=np.int64)]
    for lvl in range(lay.leaf_level, 0, -1):
        out.append(lay.aggregate(out[-1], lvl))
    return out[::-1]
