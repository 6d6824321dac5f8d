"""Key discovery at small epsilon takes bounded time before and after its charge (issue 41, item 7).

Before the charge, the truncation ``k`` (about ``t ln(1/delta)``, or ``r / (2 delta)`` once the scale
``t = r / epsilon`` dwarfs it) was searched one step at a time from a float start that fell to ``r``:
400,000 exact tests (27 s) at epsilon = 1e-6, and no end at 1e-12. The search now starts from the
closed form of the tail and gallops: a few dozen exact tests at any epsilon, the same ``(k, T, mu)``.
After the charge, the truncated noise was drawn by rejection, which keeps a share ``~ k / t`` of its
draws (5e-7 at 1e-12): it is drawn by folding when rejection would drop more than half.
"""

from __future__ import annotations

import math
import random
import time
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
import pandas_dp.privacy.selection as selection
from pandas_dp.noise.laplace import SecureRandom
from pandas_dp.noise.truncated_laplace import truncated_discrete_laplace
from pandas_dp.privacy.selection import truncated_mixture, truncated_threshold


class _CountingSource(SecureRandom):
    """A secure source that refuses more than ``limit`` words: a sampler's cost, made a failure."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.used, self.limit = 0, limit

    def words(self, n: int, *, out: np.ndarray | None = None) -> np.ndarray:
        self.used += int(n)
        if self.used > self.limit:
            raise RuntimeError(f"more than {self.limit} random words")
        return super().words(n, out=out)


@pytest.fixture
def counted_tests(monkeypatch):
    """Counts the exact tail tests of the truncation search, failing past 200 (the step search made 400,000)."""
    calls = []
    exact = selection._truncated_delta_holds

    def holds(*args):
        calls.append(args)
        if len(calls) > 200:
            raise RuntimeError("the truncation search made more than 200 exact tests")
        return exact(*args)

    monkeypatch.setattr(selection, "_truncated_delta_holds", holds)
    return calls


@pytest.mark.parametrize("epsilon", [1e-5, 1e-6, 1e-9, 1e-12, 2.0**-50])
def test_the_truncation_search_makes_few_exact_tests_at_any_epsilon(counted_tests, epsilon):
    scale = 1 / Fraction(epsilon)
    started = time.perf_counter()
    k, threshold, mu = truncated_mixture(scale, Fraction(1, 10**6))
    assert len(counted_tests) <= 60 and time.perf_counter() - started < 10
    assert threshold == k + 1 and 0 <= mu < 1
    assert selection._truncated_delta_holds(scale, Fraction(1, 10**6), k, 1)
    assert not selection._truncated_delta_holds(scale, Fraction(1, 10**6), k - 1, 1)


def test_the_search_gives_the_same_truncations_as_before():
    # (k, T, mu) recorded from the step search (byte-identical results at every epsilon it could reach)
    known = {(Fraction(1), Fraction(1, 10**6), 1): (14, 15, Fraction(4199813000304321, 4503599627370496)),
             (Fraction(10), Fraction(1, 10**6), 1): (109, 110, Fraction(7229112471630585, 9007199254740992)),
             (Fraction(6), Fraction(1, 10**6), 3): (76, 77, Fraction(1637358952690287, 4503599627370496)),
             (Fraction(10**5), Fraction(1, 10**6), 1): (179176, 179177, Fraction(614337972432109, 4503599627370496)),
             (Fraction(10**6), Fraction(1, 10**6), 1): (405465, 405466,
                                                        Fraction(1014322397582289, 4503599627370496))}
    for (scale, delta, per_cell), expected in known.items():
        assert truncated_mixture(scale, delta, per_cell) == expected


def _step_search(t: Fraction, delta: Fraction, per_cell: int) -> int:
    k = per_cell
    while not selection._truncated_delta_holds(t, delta, k, per_cell):
        k += 1
    return k


def test_the_search_is_the_smallest_truncation_whatever_its_start():
    rng = random.Random(4)
    for _ in range(60):
        t = Fraction(rng.choice([1, 2, 3, 7, 10, 30]), rng.choice([1, 2, 3, 10]))
        delta = Fraction(1, rng.choice([10, 10**3, 10**6, 10**9]))
        per_cell = rng.choice([1, 2, 5])
        k = _step_search(t, delta, per_cell)
        assert truncated_threshold(t, delta, per_cell) == (k, k + 1)
        holds = lambda bound: selection._truncated_delta_holds(t, delta, bound, per_cell)  # noqa: E731
        for start in (per_cell, k - 3, k, k + 1, k + 50, 10 * k + 7):
            assert selection._smallest_holding(holds, per_cell, start) == k


@pytest.mark.parametrize("scale, bound", [(Fraction(10**12), 500_000), (Fraction(2**50), 500_000),
                                          (Fraction(10**7), 499_875), (Fraction(10**6, 3), 65_537)])
def test_the_truncated_noise_at_a_huge_scale_costs_a_few_words_per_draw(scale, bound):
    source = _CountingSource(limit=40 * 1000)
    z = truncated_discrete_laplace(scale, bound, 1000, rng=source)
    assert np.abs(z).max() <= bound and z.min() < 0 < z.max()


@pytest.mark.parametrize("scale, bound, bins", [(Fraction(100), 5, None), (Fraction(1000), 300, 60),
                                                (Fraction(10**6), 70_000, 80), (Fraction(10**6, 3), 65_536, 64)])
def test_the_folded_sampler_draws_the_truncated_law(scale, bound, bins):
    n = 200_000
    z = truncated_discrete_laplace(scale, bound, n, rng=np.random.default_rng(5))
    assert z.min() >= -bound and z.max() <= bound
    support = np.arange(-bound, bound + 1)
    pmf = np.exp(-np.abs(support) / float(scale))
    pmf /= pmf.sum()
    if bins is None:
        seen, expected = np.bincount(z + bound, minlength=support.size), n * pmf
    else:
        edges = np.linspace(-bound, bound + 1, bins + 1).astype(np.int64)
        seen, expected = np.histogram(z, edges)[0], n * np.histogram(support, edges, weights=pmf)[0]
    chi2 = (((seen - expected) ** 2) / expected).sum()
    df = expected.size - 1
    assert chi2 < df + 5 * math.sqrt(2 * df)  # about the 0.9999 quantile
    again = truncated_discrete_laplace(scale, bound, n, rng=np.random.default_rng(5))
    assert np.array_equal(z, again)


@pytest.mark.parametrize("epsilon", [1e-6, 1e-12])
def test_discovery_at_a_tiny_epsilon_finishes_before_and_after_its_charge(counted_tests, epsilon):
    frame = pd.DataFrame({"w": np.repeat(np.arange(200), 5)})
    source = _CountingSource(limit=40 * 2 * 200 + 8)
    with pdp.budget(epsilon=1, delta=1e-5) as b:
        h = frame.dp.histogram("w", categories="discover", epsilon=epsilon, delta=1e-6, rng=source)
    k, threshold, _ = truncated_mixture(1 / Fraction(epsilon), Fraction(1, 10**6))
    assert (h.params["noise_bound"], h.params["threshold"]) == (k, threshold)
    assert b.delta_spent_exact == Fraction(1, 10**6) and len(h.counts) == h.params["released"]
