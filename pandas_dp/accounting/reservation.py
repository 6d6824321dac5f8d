"""The reservation's former module path, kept so pickles written before it moved still load.

:class:`Reservation` is defined in :mod:`pandas_dp.accounting.budget`, beside the ``Budget`` it subclasses and
whose ``reserve()`` returns it; a pickle made by an earlier release of pandas_dp names this module, and
unpickling finds the same class here.
"""

from __future__ import annotations

from pandas_dp.accounting.budget import Reservation

__all__ = ["Reservation"]
