"""Key discovery with one label per unit: truncated discrete Laplace thresholding (issue 27).

*Exact delta.* For a unit on one label with at most ``r`` rows, the release (each label absent, or
its noisy count ``n + Z >= T`` with ``Z`` discrete Laplace truncated at ``+-k``, ``T = k + 1``) is
checked by brute force over every neighbouring pair of true counts ``n`` and ``n + m`` (``m <=
r``, ``n = 0``: a new label) and every outcome: the hockey-stick divergence at ``epsilon`` is at
most delta, and one step more generous (a truncation or a threshold one lower) exceeds it. The
per-label mixture with ``(k - 1, T - 1)`` spends all of delta and no more, a larger share exceeds
it, and its release probability is Desfontaines et al.'s optimal ``pi(n)`` where ``pi <= 1/2``. The
sampler draws the truncated law (chi-square on a fixed seed); the release records its mechanism
and never moves a count by more than ``k``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.noise.truncated_laplace import truncated_discrete_laplace, truncated_discrete_laplace_variance
from pandas_dp.privacy.loss import DiscreteLaplace
from pandas_dp.privacy.selection import discovery_threshold, truncated_mixture, truncated_threshold


def _outcomes(scale: Fraction, bound: int, threshold: int, count: int, top: int) -> np.ndarray:
    """P(outcome) of one label of true ``count`` (0: absent): [absent, released with T, T+1, ..., top]."""
    out = np.zeros(top - threshold + 2)
    if count == 0:
        out[0] = 1.0
        return out
    a = math.exp(-1 / float(scale))
    z = np.arange(-bound, bound + 1)
    pmf = a ** np.abs(z) / (a ** np.abs(z)).sum()
    values = z + count
    out[0] = pmf[values < threshold].sum()
    ok = values >= threshold
    out[1 + values[ok] - threshold] = pmf[ok]
    return out


def _profile(scale: Fraction, bound: int, threshold: int, per_cell: int, mu: float = 0.0) -> float:
    """max over pairs (n, n + m), m = 1..r, n = 0.. past every edge, both directions, of the hockey stick."""
    epsilon = per_cell / float(scale)
    top = threshold + 3 * bound + 3 * per_cell + 4
    e, worst = math.exp(epsilon), 0.0

    def dist(n: int) -> np.ndarray:
        out = (1 - mu) * _outcomes(scale, bound, threshold, n, top)
        if mu:  # the lower pair's outcomes start one value lower: [absent, T - 1, T, ..., top]
            low = _outcomes(scale, bound - 1, threshold - 1, n, top)
            out = np.concatenate([[out[0]], [0.0], out[1:]])
            out += mu * low
        return out

    for n in range(0, threshold + bound + per_cell + 2):
        p = dist(n)
        for m in range(1, per_cell + 1):
            q = dist(n + m)
            worst = max(worst, np.maximum(p - e * q, 0).sum(), np.maximum(q - e * p, 0).sum())
    return worst


@pytest.mark.parametrize("scale, per_cell, delta", [
    (Fraction(1), 1, Fraction(1, 100)),          # epsilon = 1
    (Fraction(10), 1, Fraction(1, 10**6)),       # epsilon = 0.1, the peer benchmark's setting
    (Fraction(3, 2), 1, Fraction(1, 10**4)),
    (Fraction(3), 2, Fraction(1, 1000)),         # two rows on the unit's label: epsilon = 2/3
    (Fraction(6), 3, Fraction(1, 50)),
])
def test_the_truncation_and_threshold_give_the_exact_delta_and_are_the_smallest(scale, per_cell, delta):
    k, t = truncated_threshold(scale, delta, per_cell)
    assert t == k + 1
    exact = _profile(scale, k, t, per_cell)
    assert exact <= float(delta) * (1 + 1e-9)
    # delta is the truncated tail P(Z > k - r): the new label of r rows and the edge of a shift by r.
    a = math.exp(-1 / float(scale))
    tail = sum(a**j for j in range(k - per_cell + 1, k + 1)) / sum(a ** abs(j) for j in range(-k, k + 1))
    assert exact == pytest.approx(tail, rel=1e-9)
    # One step more generous exceeds delta: a truncation one lower, or a threshold one lower.
    assert _profile(scale, k - 1, k, per_cell) > float(delta)
    assert _profile(scale, k, t - 1, per_cell) > float(delta)
    # Never above the untruncated thresholding's T, and at epsilon = 0.1 well below it (133 there).
    assert t <= discovery_threshold(DiscreteLaplace(scale), delta, 1, per_cell)


@pytest.mark.parametrize("scale, per_cell, delta", [
    (Fraction(1), 1, Fraction(1, 100)),
    (Fraction(10), 1, Fraction(1, 10**6)),
    (Fraction(3), 2, Fraction(1, 1000)),
    (Fraction(6), 3, Fraction(1, 50)),
])
def test_the_mixture_spends_exactly_delta_and_is_the_optimal_selection(scale, per_cell, delta):
    k, t, mu = truncated_mixture(scale, delta, per_cell)
    assert (k, t) == truncated_threshold(scale, delta, per_cell) and 0 < mu < 1 and mu.denominator <= 2**53
    exact = _profile(scale, k, t, per_cell, float(mu))
    assert float(delta) * (1 - 1e-9) <= exact <= float(delta) * (1 + 1e-9)  # all of delta (float sums: 1e-9)
    assert _profile(scale, k, t, per_cell, min(1.0, float(mu) + 1e-3)) > float(delta)  # a larger share exceeds it
    if per_cell == 1:
        # Desfontaines et al.'s optimal release probability pi(n) at (epsilon, delta), n = 0 .. past T + k.
        epsilon = 1 / float(scale)
        pi = [0.0]
        for _ in range(t + k + 2):
            prev = pi[-1]
            pi.append(min(math.exp(epsilon) * prev + float(delta), 1 - math.exp(-epsilon) * (1 - prev - float(delta)), 1.0))
        top = t + 3 * k + 4
        ours = [1 - ((1 - float(mu)) * _outcomes(scale, k, t, n, top)[0]
                     + float(mu) * _outcomes(scale, k - 1, t - 1, n, top)[0]) for n in range(len(pi))]
        ours_a, pi_a = np.array(ours), np.array(pi)
        assert (ours_a <= pi_a + 1e-12).all()  # nothing (epsilon, delta)-DP releases more (the paper's theorem)
        rising = pi_a <= 0.5  # their first phase, pi(n) = e**eps pi(n-1) + delta: the mixture is exactly it
        np.testing.assert_allclose(ours_a[rising], pi_a[rising], rtol=1e-7, atol=1e-15)
        assert (1 - ours_a <= 1.25 * (1 - pi_a) + float(delta)).all()  # near 1: a miss at most 25% (+ delta) likelier


def test_the_truncated_threshold_is_below_laplace_thresholding_where_the_paper_says():
    assert truncated_threshold(Fraction(10), Fraction(1, 10**6)) == (109, 110)
    assert discovery_threshold(DiscreteLaplace(Fraction(10)), Fraction(1, 10**6)) == 133
    assert truncated_threshold(Fraction(1), Fraction(1, 10**9))[1] == 21
    assert discovery_threshold(DiscreteLaplace(Fraction(1)), Fraction(1, 10**9)) == 22


def test_the_sampler_draws_the_truncated_law():
    scale, bound, n = Fraction(2), 3, 20_000
    z = truncated_discrete_laplace(scale, bound, n, rng=np.random.default_rng(11))
    assert z.dtype == np.int64 and z.min() >= -bound and z.max() <= bound
    a = math.exp(-1 / float(scale))
    support = np.arange(-bound, bound + 1)
    pmf = a ** np.abs(support) / (a ** np.abs(support)).sum()
    seen = np.bincount(z + bound, minlength=support.size)
    chi2 = (((seen - n * pmf) ** 2) / (n * pmf)).sum()
    assert chi2 < 22.46  # the 0.999 quantile of chi-square with 6 degrees of freedom
    assert truncated_discrete_laplace_variance(scale, bound) == pytest.approx((support**2 * pmf).sum(), rel=1e-12)
    again = truncated_discrete_laplace(scale, bound, n, rng=np.random.default_rng(11))
    assert np.array_equal(z, again)  # a seed gives the same draws


FRAME = pd.DataFrame({"w": ["a"] * 200 + ["b"] * 60 + ["c"] * 4, "u": np.arange(264) // 2})  # units of 2 rows


@pytest.mark.parametrize("kw, truncated", [
    (dict(epsilon=1), True),
    (dict(epsilon=1, privacy_unit="u", max_cells=1, max_rows_per_cell=2), True),
    (dict(epsilon=1, privacy_unit="u", max_cells=2, max_rows_per_cell=1), False),
    (dict(rho=0.5), False),
])
def test_one_label_per_unit_uses_the_truncated_mechanism_and_records_it(kw, truncated):
    with pdp.budget(rho=10, delta=1e-3) if "rho" in kw else pdp.budget(epsilon=10, delta=1e-3) as b:
        h = FRAME.dp.histogram("w", categories="discover", delta=1e-6, rng=np.random.default_rng(2), **kw)
    assert b.delta_spent_exact == Fraction(1, 10**6) == Fraction(h.params["delta"])
    p = h.params
    if truncated:
        assert p["noise"] == "truncated discrete Laplace" and p["mechanism"].startswith("truncated")
        k = p["noise_bound"]
        mixture = truncated_mixture(Fraction(p["noise_scale"]), Fraction(p["delta"]), p["rows_per_label"])
        assert (k, p["threshold"], Fraction(p["lower_pair_probability"])) == mixture
        exact = FRAME["w"].value_counts() if "privacy_unit" not in kw else None
        if exact is not None:
            assert (h.counts - exact.reindex(h.counts.index)).abs().max() <= k
        assert float(h.variance.iloc[0]) < DiscreteLaplace(Fraction(p["noise_scale"])).variance()
    else:
        assert "noise_bound" not in p and p["mechanism"].startswith("noisy-count")
    assert list(h.counts.index) == sorted(h.counts.index) and {"a", "b"} <= set(h.counts.index)


RARE_D = pd.DataFrame({"w": ["a"] * 25 + ["b"] * 12})
RARE_D_PRIME = pd.DataFrame({"w": ["a"] * 25 + ["b"] * 12 + ["rare"]})
MORE_A = pd.DataFrame({"w": ["a"] * 26 + ["b"] * 12})


@pytest.mark.slow
def test_assert_dp_passes_the_truncated_release_and_catches_one_step_more_generous():
    # A large delta so that both of its parts show: the rare label (RARE_D vs RARE_D_PRIME) and the
    # truncation edge of a label always released (RARE_D vs MORE_A: outcome 25 + 1 + k only on one side).
    # The twins one step more generous (threshold k, or truncation k - 1) under-report delta and fail.
    from pandas_dp.testing import DPTestFailure, assert_dp

    delta, scale = Fraction(1, 10), Fraction(1)
    k, t = truncated_threshold(scale, delta)

    def release(df: pd.DataFrame, rng, n: int, bound: int, threshold: int) -> np.ndarray:
        counts = df["w"].value_counts().reindex(["a", "b", "rare"], fill_value=0).to_numpy()
        noisy = counts[None, :] + truncated_discrete_laplace(scale, bound, n * 3, rng=rng).reshape(n, 3)
        return np.where((counts[None, :] > 0) & (noisy >= threshold), noisy, -1)

    for other in (RARE_D_PRIME, MORE_A):
        assert_dp(lambda df, rng, n: release(df, rng, n, k, t), RARE_D, other, epsilon=1.0, delta=float(delta),
                  trials=40_000, vectorized=True, rng=1, budget=None)
    with pytest.raises(DPTestFailure):
        assert_dp(lambda df, rng, n: release(df, rng, n, k, t - 1), RARE_D, RARE_D_PRIME, epsilon=1.0,
                  delta=float(delta), trials=40_000, vectorized=True, rng=1, budget=None)
    with pytest.raises(DPTestFailure):
        assert_dp(lambda df, rng, n: release(df, rng, n, k - 1, t), RARE_D, MORE_A, epsilon=1.0,
                  delta=float(delta), trials=40_000, vectorized=True, rng=1, budget=None)


def _discover(df: pd.DataFrame, rng) -> object:
    return df.dp.histogram("w", categories="discover", epsilon=1, delta=1e-4, rng=rng)


@pytest.mark.slow
def test_assert_dp_passes_the_library_release_on_neighbours_moving_an_always_released_label():
    from pandas_dp.testing import assert_dp

    assert_dp(_discover, RARE_D, MORE_A, epsilon=1.0, delta=1e-4, trials=400, events=4, rng=0,
              budget={"epsilon": 10**9, "delta": 0.5})
