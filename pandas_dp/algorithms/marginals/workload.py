"""Marginal workloads over public attribute domains, and their downward closure.

A *workload* is a list of marginals, each a tuple of attribute indices into a
list of public domain sizes ``n_0, ..., n_{d-1}``. The marginal on attribute set
``W`` is the table of counts of every combination of values of the attributes in
``W`` (``prod_{i in W} n_i`` cells); the marginal on the empty set is the total.

ResidualPlanner measures one *residual* per subset in the workload's
*downward closure* ``closure(W) = {A : A subset of some workload marginal}``
(the empty set included): every workload marginal, and any sub-marginal of one,
is a sum of the residuals of its subsets (Xiao et al. 2023, Section 4).

References
----------
.. [1] Y. Xiao, G. He, D. Zhang, D. Kifer. "An Optimal and Scalable Matrix
   Mechanism for Noisy Marginals under Convex Loss Functions", NeurIPS 2023.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pandas_dp._utils.rational import safe_repr
from pandas_dp.errors import ParameterError

__all__ = ["Workload", "Marginal", "make_workload", "downward_closure"]

#: A marginal: sorted, distinct attribute indices (``()`` is the total).
Marginal = tuple[int, ...]


def _subsets(attrs: Marginal) -> Iterable[Marginal]:
    """Every subset of ``attrs`` (sorted tuples), the empty one first."""
    for k in range(len(attrs) + 1):
        yield from itertools.combinations(attrs, k)


def downward_closure(tables: Iterable[Marginal]) -> tuple[Marginal, ...]:
    """Every subset of every marginal in ``tables``, the empty set included.

    Sorted by size, then lexicographically, so the order is the same on every run.

    Examples
    --------
    >>> downward_closure([(0, 1), (1, 2)])
    ((), (0,), (1,), (2,), (0, 1), (1, 2))
    """
    seen: set[Marginal] = set()
    for table in tables:
        seen.update(_subsets(tuple(sorted(table))))
    return tuple(sorted(seen, key=lambda a: (len(a), a)))


@dataclass(frozen=True)
class Workload:
    """A validated workload: public domain sizes, the marginals asked for and their closure.

    Attributes
    ----------
    sizes : tuple of int
        Public domain size ``n_i >= 1`` of every attribute.
    tables : tuple of Marginal
        The workload marginals (sorted attribute indices, distinct, in the order given).
    closure : tuple of Marginal
        The downward closure (:func:`downward_closure`).
    maximal : tuple of Marginal
        The closure's maximal sets (no other closure set contains them): counting one
        table per maximal set gives every closure marginal by summing down.
    index : dict
        Position of every closure marginal in ``closure``.
    ordered : tuple
        Per attribute, the :class:`~pandas_dp.algorithms.marginals.ordered.AttributeQueries` asked of an
        ordered attribute, or None for a categorical one (asked for its cells); empty: all categorical.
    """

    sizes: tuple[int, ...]
    tables: tuple[Marginal, ...]
    ordered: tuple[Any, ...] = ()
    closure: tuple[Marginal, ...] = field(init=False)
    maximal: tuple[Marginal, ...] = field(init=False)
    index: dict[Marginal, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        closure = downward_closure(self.tables)
        object.__setattr__(self, "closure", closure)
        object.__setattr__(self, "index", {a: k for k, a in enumerate(closure)})
        # A closure set is maximal when no one-larger closure set contains it.
        members = set(closure)
        attrs = sorted({i for t in self.tables for i in t})
        maximal = tuple(a for a in closure
                        if not any(tuple(sorted(a + (i,))) in members for i in attrs if i not in a))
        object.__setattr__(self, "maximal", maximal)

    @property
    def has_ordered(self) -> bool:
        """Whether some attribute is asked for ranges."""
        return any(q is not None for q in self.ordered)

    def queries(self, i: int) -> Any:
        """The ranges asked of attribute ``i`` (None: its cells)."""
        return self.ordered[i] if self.ordered else None

    @property
    def attributes(self) -> tuple[int, ...]:
        """Attributes used by some workload marginal (sorted)."""
        return tuple(sorted({i for t in self.tables for i in t}))

    def cells(self, attrs: Marginal) -> int:
        """Number of cells of the marginal on ``attrs``."""
        return math.prod(self.sizes[i] for i in attrs)

    def shape(self, attrs: Marginal) -> tuple[int, ...]:
        """Shape of the marginal on ``attrs`` (one axis per attribute, in index order)."""
        return tuple(self.sizes[i] for i in attrs)

    def check(self, attrs: Marginal) -> None:
        """Raise unless ``attrs`` (sorted) is in the closure: a workload marginal or a sub-marginal of one.

        Raises
        ------
        ParameterError
            As :meth:`container`.
        """
        if attrs not in self.index:
            self.container(attrs)

    def container(self, attrs: Marginal) -> Marginal:
        """The first workload marginal containing ``attrs``.

        Raises
        ------
        ParameterError
            When no workload marginal contains ``attrs`` (it is not in the closure).
        """
        wanted = set(attrs)
        for table in self.tables:
            if wanted <= set(table):
                return table
        raise ParameterError(
            f"The marginal on attributes {safe_repr(attrs)} is not in the workload or a sub-marginal of one. "
            f"Ask for one of {safe_repr(self.tables)} or a subset of one.")


def make_workload(sizes: Sequence[int], tables: Iterable[Iterable[int]], ordered: Sequence[Any] = ()) -> Workload:
    """Validate public domain sizes and a workload of marginals.

    Parameters
    ----------
    sizes : sequence of int
        Domain size of every attribute (public; at least 1 each).
    tables : iterable of iterables of int
        Each an attribute-index set (any order; repeated indices are refused).
        Repeated marginals are kept once (the first occurrence).
    ordered : sequence, optional
        Per attribute, the ranges asked (an ``AttributeQueries`` of that attribute's size) or None.

    Returns
    -------
    Workload

    Raises
    ------
    ParameterError
        When a size is not a positive integer, the workload is empty, a marginal
        repeats an attribute or names an unknown one.

    Examples
    --------
    >>> w = make_workload([2, 3, 4], [(1, 0), (2,)])
    >>> w.tables, w.closure
    (((0, 1), (2,)), ((), (0,), (1,), (2,), (0, 1)))
    """
    checked_sizes: list[int] = []
    for i, n in enumerate(sizes):
        if isinstance(n, bool) or not isinstance(n, int) and not hasattr(n, "__index__"):
            raise ParameterError(f"The domain size of attribute {i} must be a positive integer. Got "
                                 f"{safe_repr(n)}. Pass the number of public values of that attribute.")
        value = int(n.__index__()) if not isinstance(n, int) else int(n)
        if value < 1:
            raise ParameterError(f"The domain size of attribute {i} must be at least 1. Got {value}. "
                                 f"Pass the number of public values of that attribute.")
        checked_sizes.append(value)
    out: list[Marginal] = []
    for table in tables:
        attrs = tuple(table)
        for a in attrs:
            if isinstance(a, bool) or not hasattr(a, "__index__") or not 0 <= int(a) < len(checked_sizes):
                raise ParameterError(
                    f"The workload marginal {safe_repr(attrs)} names attribute {safe_repr(a)}, which is not "
                    f"an attribute index in 0..{len(checked_sizes) - 1}. Pass indices of declared attributes.")
        key = tuple(sorted(int(a) for a in attrs))
        if len(set(key)) != len(key):
            raise ParameterError(f"The workload marginal {safe_repr(attrs)} repeats an attribute. Name each "
                                 f"attribute once per marginal.")
        if key not in out:
            out.append(key)
    if not out:
        raise ParameterError("The workload is empty. Pass at least one marginal (a tuple of attributes).")
    marks = tuple(ordered)
    if marks and (len(marks) != len(checked_sizes) or any(
            q is not None and q.size != n for q, n in zip(marks, checked_sizes))):
        raise ParameterError("'ordered' must give, per attribute, None or the ranges asked of that attribute's "
                             "domain size.")
    return Workload(sizes=tuple(checked_sizes), tables=tuple(out),
                    ordered=marks if any(q is not None for q in marks) else ())
