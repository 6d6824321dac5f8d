"""Layout of a hierarchical histogram: a tree of fan-out ``b`` (``b**d`` in d dims).

Level 0 holds the leaves (the histogram cells), level ``h`` the root.  Node
``j`` of level ``k + 1`` covers, along every axis, the children
``[j * b, min((j + 1) * b, n_k))`` of level ``k``: the last node of a level may
have fewer children, and no padded leaves exist.  Along a 1-D axis node ``j``
of level ``k`` therefore covers the leaves ``[j * b**k, min((j + 1) * b**k, N))``.

References
----------
.. [1] W. Qardaji, W. Yang, N. Li. "Understanding Hierarchical Methods for
   Differentially Private Histograms", PVLDB 6(14), 2013, Sections 3.2 and 5.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import cast

import numpy as np

__all__ = ["tree_height", "TreeLayout", "tree_layout", "shape_dims"]


def tree_height(n: int, branching: int) -> int:
    """Height ``h = ceil(log_b n)`` computed with integer arithmetic.

    Parameters
    ----------
    n : int
        Number of leaves along the axis (``n >= 1``).
    branching : int
        Fan-out ``b >= 2`` along the axis.

    Returns
    -------
    int
        The smallest ``h >= 0`` with ``b**h >= n``.  Floating ``log`` gets exact
        powers wrong (``log(1000, 10) = 2.9999999999999996``), so this loops on
        integer powers instead.
    """
    h, reach = 0, 1
    while reach < n:
        reach *= branching
        h += 1
    return h


@dataclass(frozen=True)
class TreeLayout:
    """Shape of every level of a tree over a d-dim grid of leaves.

    Parameters
    ----------
    branching : int
        Fan-out ``b`` per axis (a node has up to ``b**d`` children).
    level_shapes : tuple of tuple of int
        ``level_shapes[k]`` is the grid shape of level ``k``; level 0 is the
        leaf grid, the last level is the root ``(1, ..., 1)``.
    """

    branching: int
    level_shapes: tuple[tuple[int, ...], ...]

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the leaf grid."""
        return self.level_shapes[0]

    @property
    def ndim(self) -> int:
        """Number of dimensions ``d``."""
        return len(self.shape)

    @property
    def height(self) -> int:
        """Height ``h``: number of levels below the root (0 for a single cell)."""
        return len(self.level_shapes) - 1

    @property
    def n_levels(self) -> int:
        """Number of levels including the root (``h + 1``)."""
        return len(self.level_shapes)

    @property
    def n_leaves(self) -> int:
        """Number of leaves ``N``."""
        return int(np.prod(self.shape))

    @property
    def level_sizes(self) -> tuple[int, ...]:
        """Number of nodes on each level."""
        return tuple(int(np.prod(s)) for s in self.level_shapes)

    @property
    def n_nodes(self) -> int:
        """Total number of nodes."""
        return sum(self.level_sizes)

    def aggregate(self, child_values: np.ndarray, level: int) -> np.ndarray:
        """Sum the values of the children of every node of level ``level + 1``.

        Parameters
        ----------
        child_values : ndarray
            Values on level ``level``, shaped ``level_shapes[level]``.
        level : int
            The child level.

        Returns
        -------
        ndarray
            Array shaped ``level_shapes[level + 1]`` of per-parent sums
            (``np.add.reduceat`` along each axis, O(number of children)).
        """
        out = child_values
        b = self.branching
        for axis, n in enumerate(self.level_shapes[level]):
            if n > 1:
                out = np.add.reduceat(out, np.arange(0, n, b), axis=axis)
        return out

    def expand(self, parent_values: np.ndarray, level: int) -> np.ndarray:
        """Broadcast parent values (level ``level + 1``) onto their children (level ``level``)."""
        return parent_values[self._parent_index(level)]

    def _parent_index(self, level: int) -> tuple[np.ndarray, ...]:
        return self._parent_indices[level]

    @cached_property
    def _parent_indices(self) -> tuple[tuple[np.ndarray, ...], ...]:
        b = self.branching
        out = []
        for shape in self.level_shapes[:-1]:
            axes = [np.arange(n) // b for n in shape]
            out.append(np.ix_(*axes) if len(axes) > 1 else (axes[0],))
        return tuple(out)

    def n_children(self, level: int) -> np.ndarray:
        """Number of children of each node of level ``level`` (``level >= 1``)."""
        return self.aggregate(np.ones(self.level_shapes[level - 1], dtype=np.int64), level - 1)

    def intervals(self, level: int) -> tuple[np.ndarray, np.ndarray]:
        """Half-open leaf intervals ``[low, high)`` of the nodes of a 1-D level.

        Returns
        -------
        (ndarray, ndarray)
            ``low = j * b**level`` and ``high = min((j + 1) * b**level, N)``.
        """
        if self.ndim != 1:
            raise ValueError("intervals() is defined for 1-D trees only")
        span = self.branching ** level
        j = np.arange(self.level_sizes[level], dtype=np.int64)
        return j * span, np.minimum((j + 1) * span, self.n_leaves)

    def node_of_leaf(self, leaf: np.ndarray, level: int) -> np.ndarray:
        """Index on ``level`` of the node holding each 1-D leaf index."""
        return np.asarray(leaf, dtype=np.int64) // (self.branching ** level)


def shape_dims(shape: int | Sequence[int]) -> tuple[int, ...]:
    """The axis sizes of a public domain given as one size (1-D) or a sequence of sizes.

    Examples
    --------
    >>> shape_dims(10), shape_dims((3, 4))
    ((10,), (3, 4))
    """
    if np.isscalar(shape):
        return (int(cast(int, shape)),)
    return tuple(int(s) for s in cast("Sequence[int]", shape))


def tree_layout(shape: int | tuple[int, ...], branching: int) -> TreeLayout:
    """Build the layout of a tree of fan-out ``branching`` per axis over ``shape`` leaves.

    Parameters
    ----------
    shape : int or tuple of int
        Number of leaves (1-D) or the leaf grid shape (d-dim).
    branching : int
        Fan-out ``b >= 2`` per axis.

    Returns
    -------
    TreeLayout
        With ``h = max_axis ceil(log_b n_axis)`` levels above the leaves.  An
        axis that reaches one node early stays at one node (fan-out 1 along it).

    Examples
    --------
    >>> tree_layout(10, 3).level_shapes
    ((10,), (4,), (2,), (1,))
    """
    dims = shape_dims(shape)
    if branching < 2 or any(n < 1 for n in dims):
        raise ValueError(f"need branching >= 2 and positive sizes, got b={branching}, shape={dims}")
    height = max(tree_height(n, branching) for n in dims)
    shapes = [dims]
    for _ in range(height):
        shapes.append(tuple(-(-n // branching) for n in shapes[-1]))
    return TreeLayout(branching=int(branching), level_shapes=tuple(shapes))
