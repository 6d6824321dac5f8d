"""Statistical testing of differential privacy claims (``from pandas_dp.testing import assert_dp``).

:func:`assert_dp` runs a mechanism many times on two neighbouring datasets
and fails with a readable report when some output event is more likely on
one than ``e^epsilon`` times on the other (plus ``delta``), at a stated
confidence; a run that raises, warns or changes its output's shape on one
dataset only is such an event (the boundary rule).
:func:`neighbours` builds the neighbouring datasets that stress a release;
:func:`with_row` and :func:`adversarial_values` build neighbours holding an
odd private value, and :func:`assert_same_outcome` checks that a call looks
the same to its caller on both (:func:`outcome` records what it observes).
:func:`exact_count_of_counts` gives the exact (non-private) count-of-counts a
release of ``count_of_counts`` is compared with (``coc.emd(truth)``).
Not imported by ``import pandas_dp`` (it is a testing tool).
"""

from __future__ import annotations

from pandas_dp.engines.pandas.groups import exact_count_of_counts
from pandas_dp.testing._adversarial import ADVERSARIAL_KINDS, adversarial_values, with_row
from pandas_dp.testing._neighbours import Neighbour, neighbours
from pandas_dp.testing._observe import Outcome
from pandas_dp.testing._outcome import SameOutcomeFailure, assert_same_outcome, outcome
from pandas_dp.testing._report import DPTestFailure, DPTestReport, EventResult
from pandas_dp.testing._tester import assert_dp

__all__ = ["ADVERSARIAL_KINDS", "DPTestFailure", "DPTestReport", "EventResult", "Neighbour", "Outcome",
           "SameOutcomeFailure", "adversarial_values", "assert_dp", "assert_same_outcome", "exact_count_of_counts",
           "neighbours", "outcome", "with_row"]
