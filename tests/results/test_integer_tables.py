"""``integer=True``: hierarchical tables ready to publish (issue 13 item 5).

Every node of the released tree is a non-negative integer, every parent equals the sum of its
children, and every node is the floor or ceiling of the non-negative real estimate it rounds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pandas_dp as pdp


@settings(max_examples=30, deadline=None)
@given(n_bins=st.integers(1, 200), branching=st.sampled_from(["auto", 2, 3, 7]),
       epsilon=st.sampled_from([0.05, 0.5, 5.0]), seed=st.integers(0, 2**32 - 1),
       split=st.sampled_from(["uniform", "geometric", "optimal"]))
def test_integer_trees_are_consistent_non_negative_integers(n_bins, branching, epsilon, seed, split):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"x": rng.integers(0, 400, rng.integers(0, 300))})
    kw = dict(bins=n_bins, range=(0, 400), epsilon=epsilon, branching=branching, budget_split=split)
    with pdp.budget(epsilon=2 * epsilon) as b:
        real = frame.dp.hierarchical_histogram("x", nonnegative=True, rng=np.random.default_rng(seed), **kw)
        whole = frame.dp.hierarchical_histogram("x", integer=True, rng=np.random.default_rng(seed), **kw)
    assert list(b.ledger["status"]) == ["ok", "ok"] and "integer" in b.ledger.loc[1, "params"]
    assert whole.counts.dtype == np.int64 and (whole.counts >= 0).all()
    assert not whole.variance_exact and "controlled rounding" in " ".join(whole.post_processing)
    levels = whole.levels
    assert (levels["estimate"] == np.round(levels["estimate"])).all()
    sums = levels.groupby("level")["estimate"].sum()
    assert (sums == sums.iloc[0]).all()          # every level adds up to the same total
    rel, ref = whole.detail, real.detail
    for k in range(1, rel.layout.n_levels):    # parents equal the sum of their children
        np.testing.assert_array_equal(rel.layout.aggregate(rel.estimates[k - 1], k - 1), rel.estimates[k])
    for mine, theirs in zip(rel.estimates, ref.estimates):  # same noise: floor or ceiling of the real tree
        assert np.all(np.abs(mine - theirs) < 1 + 1e-9)


def test_integer_needs_a_consistent_tree():
    frame = pd.DataFrame({"x": [1, 2, 3]})
    with pdp.budget(epsilon=1.0) as b:
        with pytest.raises(pdp.ParameterError, match="consistent=True"):
            frame.dp.hierarchical_histogram("x", bins=4, range=(0, 4), epsilon=0.5, integer=True, consistent=False)
        with pytest.raises(pdp.ParameterError, match="'integer'"):
            frame.dp.hierarchical_histogram("x", bins=4, range=(0, 4), epsilon=0.5, integer=1)
    assert b.spent == 0


def test_integer_ranges_answer_from_the_integer_leaves():
    frame = pd.DataFrame({"x": np.arange(0, 1000) % 97})
    with pdp.budget(epsilon=1.0):
        t = frame.dp.hierarchical_histogram("x", bins=97, range=(0, 97), epsilon=1.0, integer=True,
                                            rng=np.random.default_rng(1))
    answer = t.range_query(10, 50)
    assert answer.estimate == t.counts.iloc[10:50].sum() and float(answer.estimate).is_integer()


def test_lists_of_ranges_of_an_integer_table_answer_in_whole_counts():
    df = pd.DataFrame({"x": np.arange(500) % 64})
    with pdp.budget(epsilon=1.0):
        t = df.dp.hierarchical_histogram("x", bins=64, range=(0, 64), epsilon=1.0, integer=True,
                                         rng=np.random.default_rng(3))
    table = t.range_query([(0, 16), (16, 64)])
    assert table["estimate"].dtype == np.int64
    assert table["estimate"].tolist() == [int(t.counts.iloc[:16].sum()), int(t.counts.iloc[16:].sum())]
