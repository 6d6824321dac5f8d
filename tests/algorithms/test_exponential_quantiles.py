"""The exponential mechanisms for quantiles on a grid (``pandas_dp.algorithms.exponential_quantiles``).

The scores' sensitivity is checked exhaustively on small count vectors (every place one row, or one unit's
``k`` rows, can be added), the zCDP epsilon against its definition, and the recursion's bookkeeping (disjoint
rows per depth, monotone results in ``q``'s order) with a recording draw.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pandas_dp.algorithms.exponential_quantiles as module
from pandas_dp.algorithms.exponential_quantiles import (as_rational_q, em_epsilon, independent_quantiles,
                                                        quantile_scores, recursion_depth, recursive_quantiles)
from pandas_dp.noise.exponential import exponential_index
from pandas_dp.privacy.loss import PureDP, ZCDP


def best(gamma, scores):
    """A draw at infinite epsilon: the first candidate of least score (records nothing)."""
    return int(np.argmin(scores))


@given(st.lists(st.integers(0, 6), min_size=1, max_size=8), st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.9, 1.0]),
       st.integers(1, 3))
@settings(max_examples=60, deadline=None)
def test_a_unit_of_k_rows_moves_every_score_by_at_most_k_max_a_b_minus_a(counts, q, k):
    counts = np.array(counts, dtype=np.int64)
    r = as_rational_q(q)
    bound = k * max(r.numerator, r.denominator - r.numerator)
    base = quantile_scores(counts, r)
    rng = np.random.default_rng(len(counts) * 7 + k)
    for _ in range(10):
        added = counts.copy()
        np.add.at(added, rng.integers(0, counts.size, k), 1)
        assert np.abs(quantile_scores(added, r) - base).max() <= bound


def test_scores_are_zero_where_a_candidate_splits_the_rows_q_to_1_minus_q():
    counts = np.array([2, 0, 3, 5, 0], dtype=np.int64)  # 10 rows
    assert quantile_scores(counts, Fraction(1, 2)).tolist() == [8, 6, 3, 5, 10]
    assert quantile_scores(counts, Fraction(1, 5)).tolist() == [8, 0, 3, 20, 40]


def test_zcdp_runs_at_sqrt_8_rho_rounded_down():
    eps = em_epsilon(ZCDP(Fraction(1, 8)))
    assert eps <= 1 and eps > 1 - Fraction(1, 2**60)
    eps = em_epsilon(ZCDP(Fraction(1, 3)))
    assert eps ** 2 <= Fraction(8, 3) and float(eps) == pytest.approx(math.sqrt(8 / 3), rel=1e-15)
    assert em_epsilon(PureDP(Fraction(3, 7))) == Fraction(3, 7)
    assert em_epsilon(ZCDP(Fraction(1, 2**80)).part(Fraction(1, 64))) > 0


def test_at_infinite_epsilon_both_find_the_grid_quantiles():
    rng = np.random.default_rng(0)
    values = rng.integers(0, 100, 5000)
    counts = np.bincount(values, minlength=101)
    qs = [0.9, 0.1, 0.5, 0.25, 0.5]
    exact = np.quantile(values, qs, method="inverted_cdf")
    for run in (independent_quantiles, recursive_quantiles):
        got = run(counts, qs, PureDP(Fraction(1)), 1, best)
        assert np.abs(got - exact).max() <= 1, run.__name__


def test_the_recursion_gives_each_depth_disjoint_rows_and_monotone_results():
    rng = np.random.default_rng(1)
    counts = rng.integers(0, 20, 300).astype(np.int64)
    seen: list[tuple[Fraction, int]] = []

    def draw(gamma, scores):
        seen.append((gamma, scores.size))
        return exponential_index(gamma, scores, rng=rng)

    qs = [round(0.1 * i, 1) for i in range(1, 10)]
    got = recursive_quantiles(counts, qs[::-1], PureDP(Fraction(1, 2)), 2, draw)
    assert len(seen) == 9 and recursion_depth(9) == 4
    assert (np.diff(got[::-1]) >= 0).all()
    # the first draw is the median on every candidate, at eps / depth with Delta = 2 * max(a, b - a) = 2
    assert seen[0] == (Fraction(1, 2) / 4 / (2 * 2 * 1), 300)


def test_the_recursion_splits_the_rows_at_v_between_the_sides(monkeypatch):
    """Record each draw's rows: the two halves of a split hold every row of their parent once."""
    counts = np.array([0, 4, 0, 7, 0, 5, 0, 4], dtype=np.int64)
    rows: list[int] = []

    def draw(gamma, scores):
        rows.append(int(scores.size))
        return int(np.argmin(scores))

    totals: list[int] = []
    original = quantile_scores

    def spy(sub, q):
        totals.append(int(np.asarray(sub).sum()))
        return original(sub, q)

    monkeypatch.setattr(module, "quantile_scores", spy)
    recursive_quantiles(counts, [0.25, 0.5, 0.75], PureDP(Fraction(1)), 1, draw)
    assert totals[0] == 20 and totals[1] + totals[2] == 20


def test_independent_draws_split_the_loss_over_the_q_s():
    seen = []
    independent_quantiles(np.array([3, 1, 4, 1, 5], dtype=np.int64), [0.5, 0.25, 0.75],
                          PureDP(Fraction(3, 10)), 1, lambda g, s: seen.append(g) or 0)
    assert seen == [Fraction(1, 10) / 2, Fraction(1, 10) / 6, Fraction(1, 10) / 6]
