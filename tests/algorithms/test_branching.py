"""Choosing b: Qardaji's Eq. (3) and exact V_Avg minimisation (Tables 1-2, Section 5.3)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from pandas_dp.algorithms.tree.branching import (candidate_branchings, choose_branching,
                                            eq3_average_variance, eq3_optimal_branching,
                                            integer_root_ceil)


@pytest.mark.parametrize("n,b", [(2 ** 8, 16), (2 ** 9, 23), (2 ** 10, 32), (2 ** 11, 46),
                                 (2 ** 12, 16), (2 ** 13, 21), (2 ** 14, 26), (2 ** 15, 32),
                                 (2 ** 16, 16)])
def test_eq3_optimal_b_reproduces_table_1(n: int, b: int) -> None:
    assert eq3_optimal_branching(n) == b


@pytest.mark.parametrize("n,b,value", [(2 ** 8, 16, 149.33), (2 ** 9, 23, 224.00),
                                       (2 ** 4, 16, 7.33), (2 ** 20, 16, 3183.33)])
def test_eq3_values_table_1(n: int, b: int, value: float) -> None:
    assert eq3_average_variance(n, b) == pytest.approx(value, abs=0.005)


@pytest.mark.parametrize("n,b,value", [(2 ** 6, 64, 44.00), (2 ** 7, 128, 86.67),
                                       (2 ** 8, 16, 150.98), (2 ** 9, 23, 221.57),
                                       (2 ** 10, 32, 320.83), (2 ** 11, 46, 463.83)])
def test_exact_choice_without_inference_matches_table_1(n: int, b: int, value: float) -> None:
    # Table 1: for N <= 128 the best H_b is flat (b = N); then 16, 23, 32, 46.
    c = choose_branching(n, consistent=False)
    assert c.branching == b
    assert c.predicted_variance == pytest.approx(value, abs=0.005)


@pytest.mark.parametrize("n,b,value", [(2 ** 6, 8, 37.07), (2 ** 7, 12, 54.17),
                                       (2 ** 8, 16, 79.23), (2 ** 9, 23, 114.02),
                                       (2 ** 10, 11, 156.64)])
def test_exact_choice_with_inference_matches_table_2(n: int, b: int, value: float) -> None:
    # Table 2 (and the note below it: the exact optimum for 2^10 is b = 11).
    c = choose_branching(n)
    assert c.branching == b
    assert c.predicted_variance == pytest.approx(value, rel=2e-4)


def test_choice_scales_with_epsilon_and_prefers_flat_for_small_domains() -> None:
    c1 = choose_branching(1000)
    c2 = choose_branching(1000, epsilon=0.1)
    assert c2.branching == c1.branching
    assert c2.predicted_variance == pytest.approx(100 * c1.predicted_variance)
    # Qardaji Sec. 5.3: flat beats every hierarchy for N <= 45 with their inference; the
    # exact GLS on incomplete trees (e.g. b = 7 over 43..48 leaves) moves the crossover to 43.
    for n in (2, 8, 20, 42):
        assert choose_branching(n).is_flat
    for n in (43, 45, 64):
        assert not choose_branching(n).is_flat


def test_three_dims_usually_flat() -> None:
    # Qardaji Sec. 5.3: in 3-D a hierarchy only helps beyond ~1.7e6 cells.
    for shape in [(16, 16, 16), (64, 64, 64), (100, 100, 100)]:
        c = choose_branching(shape)
        assert c.is_flat
        assert c.predicted_variance == c.flat_variance
    assert not choose_branching((256, 256)).is_flat


def test_candidates_and_integer_roots() -> None:
    assert integer_root_ceil(2 ** 20, 5) == 16
    assert integer_root_ceil(2 ** 20 + 1, 5) == 17
    assert integer_root_ceil(10 ** 12, 3) == 10 ** 4
    assert integer_root_ceil(10 ** 12 + 1, 3) == 10 ** 4 + 1
    cands = candidate_branchings(4096)
    assert {2, 4, 8, 16, 64, 4096} <= set(cands)
    assert all(2 <= b <= 4096 for b in cands)


def test_choice_is_fast_for_large_domains() -> None:
    start = time.perf_counter()
    c = choose_branching(2 ** 20)
    assert time.perf_counter() - start < 0.5
    assert c.branching == 16


def test_optimal_split_choice() -> None:
    c = choose_branching(4096, budget_split="optimal")
    uniform = choose_branching(4096)
    assert c.predicted_variance <= uniform.predicted_variance
    assert len(c.candidates) == 3


# ------------------------------------------------------------------ the choice at the floor (issue 18 item 3)

def test_closed_form_average_variance_equals_the_array_formula():
    from pandas_dp.algorithms.tree.branching_closed import closed_form_average_variance
    from pandas_dp.algorithms.tree.inference import tree_variances
    from pandas_dp.algorithms.tree.layout import tree_layout
    from pandas_dp.algorithms.tree.variance import average_range_variance

    rng = np.random.default_rng(0)
    for n in [*range(1, 70), 255, 256, 257, 1000, 4097]:
        for b in {2, 3, 4, 7, 16, max(n, 2), n + 1}:
            layout = tree_layout(n, b)
            sigma2 = rng.uniform(0.5, 5.0, layout.n_levels)
            if layout.height and n % 2:
                sigma2[-1] = np.inf  # the root of H_b is not noised
            exact = average_range_variance(layout, tree_variances(layout, sigma2))
            # Both sum the same quantities in another order: agreement to rounding (1e-12 relative).
            assert closed_form_average_variance(n, b, sigma2) == pytest.approx(exact, rel=1e-11, abs=0)
    # The tree of Qardaji's Table 1 (H_16^c, N = 2^8) with per-level variances 4 (two levels of epsilon 1/2).
    layout = tree_layout(256, 16)
    assert closed_form_average_variance(256, 16, [4.0, 4.0, np.inf]) == pytest.approx(
        average_range_variance(layout, tree_variances(layout, [4.0, 4.0, np.inf])), rel=1e-12)


_SLOW = pytest.mark.slow


@pytest.mark.parametrize("n,split", [
    *[(n, split) for n in (1, 2, 5, 16, 100, 256) for split in ("uniform", "geometric", "optimal")],
    (1000, "uniform"), (4096, "geometric"), (65536, "uniform"),
    # The array formula these are compared with is the slow part (the optimal split iterates on it).
    pytest.param(1000, "optimal", marks=_SLOW), pytest.param(4096, "optimal", marks=_SLOW),
    pytest.param(65536, "geometric", marks=_SLOW),
])
def test_the_closed_form_ranking_chooses_exactly_as_the_array_formula(n, split):
    from fractions import Fraction

    from pandas_dp.algorithms.tree.branching import _choose
    from pandas_dp.privacy.loss import PureDP, ZCDP

    for loss in (PureDP(Fraction(1)), ZCDP(Fraction(1, 3))):
        for root in (False, True):
            fast = _choose((n,), loss, split, root, True, True)
            slow = _choose((n,), loss, split, root, True, False)
            assert (fast.branching, fast.height, fast.predicted_variance, fast.flat_variance) == \
                (slow.branching, slow.height, slow.predicted_variance, slow.flat_variance)


def test_the_choice_is_memoised_by_its_public_inputs(monkeypatch):
    import pandas_dp.algorithms.tree.branching as branching

    branching._choose.cache_clear()
    calls = []
    real = branching.closed_form_average_variance
    monkeypatch.setattr(branching, "closed_form_average_variance", lambda *a: calls.append(a) or real(*a))
    first = choose_branching(4096, epsilon=0.5)
    evaluated = len(calls)
    assert evaluated == len(candidate_branchings(4096))
    again = choose_branching(4096, epsilon=0.5)
    assert len(calls) == evaluated and again == first and again is not first  # the caller's own copy
    again.candidates[2] = -1.0
    assert choose_branching(4096, epsilon=0.5).candidates[2] != -1.0
    choose_branching(4096, epsilon=0.25)  # another loss amount: evaluated anew
    assert len(calls) == 2 * evaluated


def test_range_query_auto_plans_the_tree_once():
    import pandas as pd

    import pandas_dp as pdp
    import pandas_dp.algorithms.tree.branching as branching

    branching._choose.cache_clear()
    df = pd.DataFrame({"x": np.arange(1000) % 512})
    with pdp.budget(epsilon=1.0):
        df.dp.range_query("x", [(0, 64)], bins=512, range=(0, 512), epsilon=1.0, rng=np.random.default_rng(0))
    info = branching._choose.cache_info()
    assert info.misses == 1 and info.hits >= 1
