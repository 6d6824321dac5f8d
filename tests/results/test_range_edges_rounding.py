"""A range bound within float rounding of a bin edge is that edge (issue 44, item 5).

``np.linspace(0, 6.4, 257)`` gives ``1.4500000000000002`` where the release's edge is ``1.45``; such a
bound is that edge (at most ``EDGE_ULPS`` units in the last place of the edges' scale away), for a
result's range query and for the range-query release; a bound genuinely off every edge is still refused.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.domain.grid import EDGE_ULPS

FRAME = pd.DataFrame({"x": np.linspace(0.0, 6.3, 500)})
EDGES = np.linspace(0.0, 6.4, 257)


@pytest.fixture(scope="module")
def released():
    with pdp.budget(epsilon=1.0):
        return FRAME.dp.histogram("x", bins=256, range=(0, 6.4), epsilon=1.0, rng=np.random.default_rng(0))


def test_linspace_edges_are_the_release_edges(released):
    assert EDGES[58] == 1.4500000000000002
    answer = released.range_query(EDGES[58], EDGES[100])
    assert (answer.low, answer.high) == (1.45, 2.5)
    assert answer.estimate == released.range_query(1.45, 2.5).estimate
    every = released.range_query(list(zip(EDGES[:-1], EDGES[1:])))
    assert len(every) == 256 and np.array_equal(every["estimate"].to_numpy(), released.counts.to_numpy())


def test_the_ends_snap_too(released):
    whole = released.range_query(-1e-17, np.nextafter(6.4, 7.0))
    assert (whole.low, whole.high) == (0.0, 6.4)


@pytest.mark.parametrize("bound", [1.4500000000000002 + 1e-14, 1.46, 1.4625, -1e-12, 6.4 + 1e-13])
def test_a_bound_off_every_edge_is_refused(released, bound):
    with pytest.raises(pdp.DomainError, match="does not fall on a bin edge"):
        released.range_query(bound, 3.0)


def test_the_tolerance_is_a_few_ulps_of_the_edges_scale(released):
    ulp = np.spacing(6.4)
    assert released.range_query(1.45 + EDGE_ULPS * ulp, 2.5).low == 1.45
    with pytest.raises(pdp.DomainError):
        released.range_query(1.45 + 2 * EDGE_ULPS * ulp, 2.5)


def test_the_range_query_release_takes_linspace_edges():
    with pdp.budget(epsilon=1.0) as b:
        answer = FRAME.dp.range_query("x", [(EDGES[58], EDGES[100])], bins=256, range=(0, 6.4), epsilon=0.5,
                                      rng=np.random.default_rng(1))
    assert answer["low"].tolist() == [1.45] and answer["high"].tolist() == [2.5] and b.spent == 0.5
