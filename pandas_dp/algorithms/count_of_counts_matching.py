"""Top-down consistency for hierarchical count-of-counts (Kuo et al. section 5).

Each parent's groups are matched to the union of its children's groups, both
sorted by estimated size, smallest to smallest (Algorithm 2); matched sizes
are merged by inverse-variance weighting (or plain averaging), rounded, and
the merged variances are carried down to the next level. Everything works
on run-lengths (:class:`~pandas_dp.algorithms.count_of_counts.Runs`): the
cost is proportional to the number of runs, never to the number of groups,
and all parents of a level are processed together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from pandas_dp.algorithms.count_of_counts import Runs

__all__ = ["Matching", "match_runs", "merge_matching", "top_down", "aggregate_up"]

Merge = Literal["weighted", "average"]


@dataclass(frozen=True)
class Matching:
    """Matched pieces between a parent level and a child level.

    Piece ``k`` says: ``groups[k]`` groups of child run ``child_run[k]`` are
    matched to as many groups of parent run ``parent_run[k]``.
    """

    parent_run: np.ndarray
    child_run: np.ndarray
    groups: np.ndarray

    def cost(self, parent: Runs, child: Runs) -> int:
        """Total matching cost ``sum |size_parent - size_child|`` over matched groups."""
        d = np.abs(parent.size[self.parent_run] - child.size[self.child_run])
        return int(np.dot(d, self.groups))


def match_runs(parent: Runs, child: Runs, child_parent: np.ndarray) -> Matching:
    """Kuo et al.'s Algorithm 2 on run-lengths, for all parents of a level at once.

    Parameters
    ----------
    parent : Runs
        Histograms of the parent level (normalized: sorted by node, size).
    child : Runs
        Histograms of the child level.
    child_parent : numpy.ndarray
        Parent node of every child node.

    Returns
    -------
    Matching
        Pieces of the matching. Every parent group and every child group is
        matched exactly once when each parent's group total equals the sum
        of its children's totals (required).

    Notes
    -----
    Put each parent's groups, sorted by size, on a line of positions
    ``0..G-1``, and its children's groups, all children together sorted by
    size, on a second line; position ``j`` is matched to position ``j``.
    This is Algorithm 2: the smallest unmatched parent group takes the
    smallest unmatched child group, which minimizes ``sum |size difference|``
    (Lemma 5). When the children's groups of one size ``s`` (a *level*: runs
    of several children, counts ``c_r``) face several parent runs, each
    parent run's share (a segment of length ``L``) is split among the
    level's runs in proportion to their remaining counts ``rem_r``:
    ``floor(L rem_r / R)`` plus one for the ``L - sum floor`` largest
    remainders (footnote 10). Which child gets which parent group inside a
    level does not change the cost (all have size ``s``), so the matching
    stays optimal. The loop runs over segment ranks inside a level (at most
    the number of distinct parent sizes), vectorized across levels.
    """
    cp = np.asarray(child_parent, dtype=np.int64)
    child_sum = np.bincount(cp, weights=child.totals(), minlength=parent.n_nodes)
    if not np.array_equal(child_sum.astype(np.int64), parent.totals()):
        raise ValueError("every parent must hold as many groups as its children together")
    total = int(parent.groups.sum())
    if total == 0:
        z = np.zeros(0, dtype=np.int64)
        return Matching(z, z, z)
    levels = _child_levels(child, cp)
    pa = np.concatenate([[0], np.cumsum(parent.groups)[:-1]]).astype(np.int64)
    segments = _segments(pa, levels.start, total)
    return _share_segments(levels, segments)


@dataclass(frozen=True)
class _Levels:
    """The children's runs ordered by (parent, size, child node, var), grouped in *levels* (parent, size)."""

    order: np.ndarray     # run index of each ordered run
    count: np.ndarray     # groups of each ordered run
    of_run: np.ndarray    # level of each ordered run
    size: np.ndarray      # groups per level
    start: np.ndarray     # position of each level's first group on the children's line


def _child_levels(child: Runs, child_parent: np.ndarray) -> _Levels:
    c_par = child_parent[child.node]
    order = np.lexsort((child.var, child.node, child.size, c_par))
    par_s, size_s, cnt = c_par[order], child.size[order], child.groups[order]
    new_level = np.ones(order.size, dtype=bool)
    new_level[1:] = (par_s[1:] != par_s[:-1]) | (size_s[1:] != size_s[:-1])
    lvl_cnt = np.add.reduceat(cnt, np.flatnonzero(new_level)) if cnt.size else np.zeros(0, np.int64)
    start = np.concatenate([[0], np.cumsum(lvl_cnt)[:-1]]).astype(np.int64)
    return _Levels(order, cnt, np.cumsum(new_level) - 1, lvl_cnt, start)


@dataclass(frozen=True)
class _Segments:
    """Elementary segments: intervals between consecutive boundaries of either line."""

    length: np.ndarray    # groups in each segment
    parent_run: np.ndarray
    level: np.ndarray
    rank: np.ndarray      # rank of the segment inside its level


def _segments(parent_start: np.ndarray, level_start: np.ndarray, total: int) -> _Segments:
    bounds = np.union1d(parent_start, level_start)
    level = np.searchsorted(level_start, bounds, side="right") - 1
    return _Segments(length=np.diff(np.append(bounds, total)),
                     parent_run=np.searchsorted(parent_start, bounds, side="right") - 1,
                     level=level, rank=np.arange(level.size) - np.searchsorted(level, level, side="left"))


def _share_segments(levels: _Levels, seg: _Segments) -> Matching:
    """Split every segment among its level's runs in proportion to their remaining counts.

    One pass per segment rank inside a level (at most the number of distinct parent sizes),
    vectorized across levels; largest remainders get the leftover groups.
    """
    n_levels = levels.size.size
    n_seg_lvl = np.bincount(seg.level, minlength=n_levels)
    pieces_p, pieces_c, pieces_n = [], [], []
    rem = levels.count.copy()
    runs = np.arange(levels.order.size)
    runs = runs[n_seg_lvl[levels.of_run] > 0]
    for t in range(int(n_seg_lvl.max())):
        runs = runs[n_seg_lvl[levels.of_run[runs]] > t]
        lv = levels.of_run[runs]
        at_rank = np.flatnonzero(seg.rank == t)
        seg_of_lvl = np.empty(n_levels, dtype=np.int64)
        seg_of_lvl[seg.level[at_rank]] = at_rank
        s = seg_of_lvl[lv]
        length = seg.length[s]
        r_rem = rem[runs]
        big_r = np.bincount(lv, weights=r_rem, minlength=n_levels).astype(np.int64)[lv]
        num = length * r_rem
        alloc = num // big_r
        frac = num - alloc * big_r  # exact remainders, comparable inside a level (same R)
        short = length - np.bincount(lv, weights=alloc, minlength=n_levels).astype(np.int64)[lv]
        order = np.lexsort((runs, -frac, lv))
        first = np.searchsorted(lv[order], lv[order], side="left")
        rank = np.empty(order.size, dtype=np.int64)
        rank[order] = np.arange(order.size) - first
        alloc = alloc + (rank < short)
        rem[runs] -= alloc
        keep = alloc > 0
        pieces_p.append(seg.parent_run[s][keep])
        pieces_c.append(levels.order[runs[keep]])
        pieces_n.append(alloc[keep])
    return Matching(np.concatenate(pieces_p), np.concatenate(pieces_c), np.concatenate(pieces_n))


def merge_matching(parent: Runs, child: Runs, matching: Matching, *, merge: Merge = "weighted") -> Runs:
    """New child histograms from matched parent/child size estimates.

    Notes
    -----
    ``weighted`` (Kuo et al. Eq. 5-6): ``s = (s_p / v_p + s_c / v_c) /
    (1 / v_p + 1 / v_c)`` with variance ``v = 1 / (1 / v_p + 1 / v_c)``;
    ``average``: ``s = (s_p + s_c) / 2`` with ``v = (v_p + v_c) / 4``. The
    size is rounded half up to an integer (it stays >= 0, a convex
    combination of non-negative sizes); ``v`` is carried to the next level.
    """
    sp = parent.size[matching.parent_run].astype(np.float64)
    vp = parent.var[matching.parent_run]
    sc = child.size[matching.child_run].astype(np.float64)
    vc = child.var[matching.child_run]
    if merge == "average":
        s = 0.5 * (sp + sc)
        v = 0.25 * (vp + vc)
    elif merge == "weighted":
        denom = vp + vc
        ok = denom > 0
        safe = np.where(ok, denom, 1.0)
        s = np.where(ok, (sp * vc + sc * vp) / safe, 0.5 * (sp + sc))
        v = np.where(ok, vp * vc / safe, 0.0)
    else:
        raise ValueError(f"unknown merge {merge!r}; use 'weighted' or 'average'")
    size = np.floor(s + 0.5).astype(np.int64)
    return Runs(child.node[matching.child_run], size, matching.groups, v, child.n_nodes).normalized()


def _parent_codes(parents: list[np.ndarray | None], lvl: int) -> np.ndarray:
    codes = parents[lvl]
    assert codes is not None, "only the root level (0) has no parents; callers pass lvl >= 1"
    return codes


def top_down(levels: list[Runs], parents: list[np.ndarray | None], *, merge: Merge = "weighted",
             progress: object | None = None) -> list[Runs]:
    """Consistent histograms for every level from independent per-level estimates.

    Parameters
    ----------
    levels : list of Runs
        Private estimates, root level first, leaves last.
    parents : list of numpy.ndarray
        ``parents[l][i]`` is the parent (in level ``l-1``) of node ``i`` of
        level ``l``; ``parents[0]`` is ignored.
    merge : {"weighted", "average"}
        How matched size estimates are combined.
    progress : callable, optional
        Called with no argument after each level (progress bars).

    Returns
    -------
    list of Runs
        Histograms per level (variances zero): leaves are the merged leaf
        estimates, and every other level is the exact sum of its children.
    """
    current = levels[0]
    for lvl in range(1, len(levels)):
        m = match_runs(current, levels[lvl], _parent_codes(parents, lvl))
        current = merge_matching(current, levels[lvl], m, merge=merge)
        if callable(progress):
            progress()
    return aggregate_up(current, parents, [r.n_nodes for r in levels])


def aggregate_up(leaves: Runs, parents: list[np.ndarray | None], n_nodes: list[int]) -> list[Runs]:
    """Every level as the sum of the leaf histograms below it."""
    out = [Runs.exact(leaves.node, leaves.size, leaves.groups, leaves.n_nodes)]
    for lvl in range(len(n_nodes) - 1, 0, -1):
        out.append(out[-1].aggregate(_parent_codes(parents, lvl), n_nodes[lvl - 1]))
    return out[::-1]
