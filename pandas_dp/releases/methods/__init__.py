"""The histogram methods of ``histogram(method=...)``: one module per method, one table of them.

Each module of this package is one page of ``docs/methods/`` and defines one
:class:`~pandas_dp.releases.methods.base.HistogramMethod` (the grids page: two):
its knobs, its ``plan`` (public inputs only, before any charge) and its
``release`` (after the charge). :data:`METHODS` lists them, in the order the
messages, the accessors' docs and ``MethodName`` show; a method is added by
writing its module and one line of that tuple.
"""

from __future__ import annotations

from typing import Any, Literal, Mapping

from pandas_dp._utils.rational import safe_repr
from pandas_dp.domain.grid import Grid
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import PrivacyLoss
from pandas_dp.privacy.units import UnitBounds
from pandas_dp.releases.methods.ahp import AHP
from pandas_dp.releases.methods.auto import AUTO
from pandas_dp.releases.methods.base import HistogramMethod, Planned, plan_with
from pandas_dp.releases.methods.dawa import DAWA
from pandas_dp.releases.methods.dpcube import DPCUBE
from pandas_dp.releases.methods.grids import AGRID, UGRID
from pandas_dp.releases.methods.hierarchical import HIERARCHICAL
from pandas_dp.releases.methods.identity import IDENTITY

__all__ = ["METHODS", "MethodName", "method_named", "plan_method"]

#: Every histogram method by name, in this order.
METHODS: dict[str, HistogramMethod] = {method.name: method for method in (
    IDENTITY,
    HIERARCHICAL,
    DAWA,
    UGRID,
    AGRID,
    AHP,
    DPCUBE,
    AUTO,
)}

#: The type of ``histogram(method=...)``: every method of :data:`METHODS`, in its order.
#: ``tests/test_declarations.py`` checks that it lists exactly :data:`METHODS`, so the accessors'
#: signatures and docs name every method.
MethodName = Literal["identity", "hierarchical", "dawa", "ugrid", "agrid", "ahp", "dpcube", "auto"]


def method_named(method: Any, entry: str = "histogram", *, extra: tuple[str, ...] = ()) -> str:
    """Check a ``method=`` argument against :data:`METHODS` (and ``extra`` names accepted by ``entry``)."""
    known = [*extra, *sorted(METHODS)]
    if not isinstance(method, str) or str.__str__(method) not in known:
        raise ParameterError(f"The 'method' parameter of {entry} must be one of {known if extra else sorted(METHODS)}. "
                             f"Got {safe_repr(method)}.")
    return str.__str__(method)


def plan_method(name: str, grid: Grid, loss: PrivacyLoss, knobs: Mapping[str, Any],
                unit: UnitBounds | None = None) -> Planned:
    """Check the named method's measure and knobs and plan it (:func:`~pandas_dp.releases.methods.base.plan_with`)."""
    return plan_with(METHODS[name], grid, loss, knobs, unit)
