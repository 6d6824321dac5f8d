"""Statistical testing of differential privacy claims (``from pandas_dp.testing import assert_dp``).

:func:`assert_dp` runs a mechanism many times on two neighbouring datasets
and fails with a readable report when some output event is more likely on
one than ``e^epsilon`` times on the other, at a stated confidence.
:func:`neighbours` builds the neighbouring datasets that stress a release.
Not imported by ``import pandas_dp`` (it is a testing tool).
"""

from __future__ import annotations

from ._neighbours import Neighbour, neighbours
from ._report import DPTestFailure, DPTestReport, EventResult
from ._tester import assert_dp

__all__ = ["DPTestFailure", "DPTestReport", "EventResult", "Neighbour", "assert_dp", "neighbours"]
