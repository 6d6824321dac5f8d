"""No release fails after its charge for a reason known before it (issue 12 item 7).

Extreme but valid losses: a huge epsilon makes the noise variance underflow to 0 (the tree's
inference then divided 0 by 0); a tiny one makes the privately estimated number of groups
astronomically large (the release then tried to allocate terabytes). Each must release finite,
well-shaped results or be refused before the charge.
"""

from __future__ import annotations

import re
import tracemalloc
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pandas_dp as pdp
from pandas_dp.privacy.loss import UNIT, PureDP
from pandas_dp.releases.unattributed import NOISE_GROUPS, _noise_reach

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


def _refusal(frame: pd.DataFrame, **loss: float) -> tuple[str, int, float]:
    """The ParameterError's message, the ledger's length and the traced peak (MB) of one call."""
    tracemalloc.start()
    try:
        with pdp.budget(**{k: 1.0 for k in loss}) as b, pytest.raises(pdp.ParameterError) as err:
            frame.dp.unattributed_histogram("g", rng=np.random.default_rng(3), **loss)
        peak = tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()
    return str(err.value), len(b.ledger), peak


@pytest.mark.parametrize("loss", [{"epsilon": 1e-11}, {"epsilon": 1e-12}, {"rho": 1e-13}])
def test_unattributed_with_a_tiny_loss_is_refused_before_its_charge(loss):
    # The privately estimated number of groups is released as that many positions: at epsilon 1e-11 its
    # noise (scale 1e12) filled the cap of 2**26 positions (3.8 GB, a raw MemoryError after the charge
    # when memory was short). The loss alone decides now: refused before the charge, in a few kB, with the
    # same message for neighbouring frames (one row more or less).
    outcomes = [_refusal(frame, **loss) for frame in (FRAME, FRAME.iloc[:-1], pd.concat([FRAME, FRAME.iloc[:1]]))]
    assert len({message for message, _, _ in outcomes}) == 1
    assert all(charged == 0 and peak < 100 for _, charged, peak in outcomes)
    message = outcomes[0][0]
    name = next(iter(loss))
    assert f"'{name}' parameter is too small" in message and "groups=" in message
    smallest = float(re.search(rf"{name} >= ([0-9.e-]+)", message).group(1))  # type: ignore[union-attr]
    if name == "rho":
        return  # (the discrete Gaussian of a threshold rho takes seconds to draw its ~10**5 positions)
    # The value the message suggests releases (a noise scale of 1/(smallest/10) groups, not 2**26), and
    # public group ids release at any loss.
    tracemalloc.start()
    try:
        with pdp.budget(**{name: 1.0}) as b:
            u = FRAME.dp.unattributed_histogram("g", rng=np.random.default_rng(3), **{name: smallest})
            v = FRAME.dp.unattributed_histogram("g", groups=[1, 2, 3, 4], rng=np.random.default_rng(3), **loss)
        peak = tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()
    assert list(b.ledger["status"]) == ["ok", "ok"] and peak < 100
    assert len(u.counts) <= 4 + NOISE_GROUPS and len(v.counts) == 4
    assert np.isfinite(u.variance).all() and np.isfinite(v.variance).all()


def test_the_smallest_workable_loss_is_the_threshold():
    # Just below the suggested epsilon the noise could add more than NOISE_GROUPS positions; at it, not.
    message, _, _ = _refusal(FRAME, epsilon=1e-6)
    smallest = float(re.search(r"epsilon >= ([0-9.e-]+)", message).group(1))  # type: ignore[union-attr]
    assert _noise_reach(PureDP(Fraction(repr(smallest))), UNIT) <= NOISE_GROUPS
    assert _noise_reach(PureDP(Fraction(repr(smallest * 0.9))), UNIT) > NOISE_GROUPS


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
