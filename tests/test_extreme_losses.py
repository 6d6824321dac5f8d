"""No release fails after its charge for a reason known before it (issue 12 item 7).

Extreme but valid losses: a huge epsilon makes the noise variance underflow to 0 (the tree's
inference then divided 0 by 0); a tiny one makes the privately estimated number of groups
astronomically large (the release then tried to allocate terabytes). Each must release finite,
well-shaped results or be refused before the charge.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pandas_dp as pdp
from pandas_dp.releases.unattributed import MAX_GROUPS

FRAME = pd.DataFrame({"x": [0, 1, 2, 3, 4, 1, 1], "g": [1, 1, 2, 3, 3, 3, 4]})


@settings(max_examples=25, deadline=None)
@given(epsilon=st.sampled_from([50.0, 745.0, 1000.0, 3e4, 1e6]), bins=st.integers(1, 9),
       branching=st.sampled_from(["auto", 2, 3]), nonnegative=st.booleans(), consistent=st.booleans())
def test_tree_with_a_huge_epsilon_is_finite(epsilon, bins, branching, nonnegative, consistent):
    with pdp.budget(epsilon=epsilon) as b:
        h = FRAME.dp.hierarchical_histogram("x", bins=bins, range=(0, 9), epsilon=epsilon, branching=branching,
                                            nonnegative=nonnegative, consistent=consistent,
                                            rng=np.random.default_rng(0))
    assert list(b.ledger["status"]) == ["ok"]
    assert np.isfinite(h.counts).all() and np.isfinite(h.variance).all()
    assert np.isfinite(h.range_query(0, 9).std_error) and np.isfinite(h.average_range_variance())
    # The noise is negligible: the release is the truth (clipping or not).
    truth = np.bincount(np.floor(FRAME["x"] * bins / 9).astype(int), minlength=bins)
    np.testing.assert_allclose(h.counts.to_numpy(), truth, atol=1e-6)


@pytest.mark.parametrize("epsilon", [1e-11, 1e-12])
def test_unattributed_with_a_tiny_epsilon_is_bounded(epsilon):
    with pdp.budget(epsilon=1.0) as b:
        u = FRAME.dp.unattributed_histogram("g", epsilon=epsilon, rng=np.random.default_rng(3))
    assert list(b.ledger["status"]) == ["ok"]
    assert len(u.counts) <= MAX_GROUPS and np.isfinite(u.variance).all()


@pytest.mark.parametrize("method", sorted(__import__("pandas_dp.releases.registry", fromlist=["x"]).histogram_methods()))
@pytest.mark.parametrize("epsilon", [1e3, 1e6, 1e300])
def test_every_method_with_a_huge_epsilon_releases_finite_numbers(method, epsilon):
    frame = pd.DataFrame({"x": np.arange(40) % 10, "y": np.arange(40) % 4})
    two_d = method in ("dpcube", "ugrid", "agrid")   # DPCube's home ground; the grids take 2-D only
    with pdp.budget(epsilon=epsilon) as b:
        h = frame.dp.histogram(["x", "y"] if two_d else "x", bins=[10, 4] if two_d else 10,
                               range=[(0, 10), (0, 4)] if two_d else (0, 10), epsilon=epsilon,
                               method=method, rng=np.random.default_rng(0))
    assert list(b.ledger["status"]) == ["ok"]
    ci = h.confidence_interval()
    assert np.isfinite(h.counts).all() and np.isfinite(h.variance).all() and np.isfinite(ci.to_numpy()).all()
