"""release_geography: noise per level, GLS across the geography, non-negative and integer tables."""

from __future__ import annotations

import importlib.util
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pandas_dp.algorithms.geography.release import release_geography
from pandas_dp.algorithms.geography.inference import region_inference
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import PureDP, Sensitivity, ZCDP

# nation -> 3 states -> 7 counties (fan-outs 2, 1, 4; county codes not sorted by state)
PARENTS = [None, np.array([0, 0, 0]), np.array([2, 0, 1, 2, 0, 2, 2])]


def county_counts(cells: int = 4, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 30, size=(7, cells))


def test_noise_per_level_then_gls() -> None:
    counts = [None, None, county_counts()]
    losses = PureDP(Fraction(1)).split([1, 1, 1])
    rel = release_geography(counts, PARENTS, level_losses=losses, rng=np.random.default_rng(5))
    # Noise is drawn level by level, coarse to fine, from the given generator.
    lay = rel.layout
    state = lay.aggregate(counts[2], 2)
    truth = [lay.aggregate(state, 1), state, counts[2]]
    rng = np.random.default_rng(5)
    for lvl in range(3):
        noise = losses[lvl].noise(Sensitivity())
        assert rel.noises[lvl] == noise
        np.testing.assert_array_equal(rel.noisy[lvl], truth[lvl] + noise.sample(truth[lvl].shape, rng))
        assert rel.level_variances[lvl] == pytest.approx(noise.variance())
    ref = region_inference(list(rel.noisy), PARENTS, rel.level_variances)
    for lvl in range(3):
        np.testing.assert_allclose(rel.estimates[lvl], ref.estimates[lvl], rtol=1e-12)
        np.testing.assert_allclose(rel.variances[lvl], ref.variances[lvl], rtol=1e-12)
        if lvl:
            np.testing.assert_allclose(lay.aggregate(rel.estimates[lvl], lvl), rel.estimates[lvl - 1],
                                       rtol=1e-9, atol=1e-9)
    assert rel.variance_exact and rel.noise_descriptions()[0] == {"noise": "discrete Laplace",
                                                                  "noise_scale": 3}
    assert sum((l.amount for l in rel.losses), Fraction(0)) == 1


def test_integer_tables_are_consistent_nonnegative_integers() -> None:
    counts = [None, None, county_counts(cells=6, seed=2) // 10]     # many small counts
    losses = PureDP(Fraction(1, 2)).split([1, 1, 1])
    rel = release_geography(counts, PARENTS, level_losses=losses, integer=True,
                            rng=np.random.default_rng(1))
    nn = release_geography(counts, PARENTS, level_losses=losses, nonnegative=True,
                           rng=np.random.default_rng(1))
    for lvl in range(3):
        assert rel.estimates[lvl].dtype == np.int64 and np.all(rel.estimates[lvl] >= 0)
        # Each integer is the floor or ceiling of the non-negative estimate (same noise).
        assert np.all(np.abs(rel.estimates[lvl] - nn.estimates[lvl]) < 1.0)
        assert np.all(nn.estimates[lvl] >= 0)
        if lvl:
            np.testing.assert_array_equal(rel.layout.aggregate(rel.estimates[lvl], lvl),
                                          rel.estimates[lvl - 1])
    assert not rel.variance_exact and rel.integer and rel.nonnegative and rel.rounding == "largest_remainder"
    with pytest.raises(ValueError):
        rel.estimates[0][0, 0] = 5   # published tables are read-only


def test_unmeasured_root_and_unequal_level_budgets() -> None:
    counts = [None, None, county_counts()]
    losses = (None,) + PureDP(Fraction(1)).split([Fraction(1, 4), Fraction(3, 4)])
    rel = release_geography(counts, PARENTS, level_losses=losses, rng=np.random.default_rng(0))
    assert rel.noisy[0] is None and rel.noises[0] is None and np.isinf(rel.level_variances[0])
    np.testing.assert_allclose(rel.estimates[0], rel.layout.aggregate(rel.estimates[1], 1), rtol=1e-12)


def test_exact_variances_by_simulation_over_cells() -> None:
    # 20,000 cells with the same true counts are 20,000 independent releases of one geography.
    n = 20_000
    base = county_counts(cells=1, seed=3)
    counts = [None, None, np.repeat(base, n, axis=1)]
    losses = PureDP(Fraction(1)).split([0.2, 0.3, 0.5])
    rel = release_geography(counts, PARENTS, level_losses=losses, rng=np.random.default_rng(9))
    lay = rel.layout
    state = lay.aggregate(base, 2)
    truth = [lay.aggregate(state, 1), state, base]
    for lvl in range(3):
        err = rel.estimates[lvl] - truth[lvl]
        exact = rel.variances[lvl]
        # GLS is unbiased: the mean error of n cells is within 5 standard errors of 0.
        assert np.all(np.abs(err.mean(axis=1)) < 5 * np.sqrt(exact / n))
        # Sample variance of n i.i.d. errors: relative standard error sqrt((2 + kurtosis) / n)
        # <= sqrt(5 / n) = 1.6 % (Laplace excess kurtosis 3, lower for GLS averages); allow 4 SE.
        np.testing.assert_allclose(err.var(axis=1), exact, rtol=4 * np.sqrt(5 / n))
    # A sum of two counties of different states, from the exact covariance structure.
    w = np.zeros(7)
    w[[0, 2]] = 1.0
    pair = rel.estimates[2][[0, 2]].sum(axis=0) - truth[2][[0, 2]].sum()
    assert pair.var() == pytest.approx(rel.sum_variance(2, w), rel=4 * np.sqrt(5 / n))


def test_public_root_is_matched_exactly() -> None:
    leaf = county_counts(cells=3, seed=4)
    national = leaf.sum(axis=0, keepdims=True)
    counts = [None, None, leaf]
    losses = (None,) + PureDP(Fraction(1)).split([1, 1])
    for integer in (False, True):
        rel = release_geography(counts, PARENTS, level_losses=losses, public_totals=[national, None, None],
                                integer=integer, rng=np.random.default_rng(0))
        assert rel.public == (True, False, False) and rel.noisy[0] is None
        assert rel.level_variances[0] == 0.0 and rel.variances[0][0] == 0.0
        np.testing.assert_allclose(rel.estimates[0], national, rtol=1e-12)
        np.testing.assert_allclose(rel.layout.aggregate(rel.estimates[1], 1), national, rtol=1e-12)


def test_flat_case_one_level_of_independent_regions() -> None:
    counts = [np.array([[3, 0, 9], [1, 1, 1]])]
    rel = release_geography(counts, [None], level_losses=[PureDP(Fraction(1))], integer=True,
                            rng=np.random.default_rng(0))
    assert rel.estimates[0].shape == (2, 3)
    np.testing.assert_array_equal(rel.estimates[0], np.maximum(rel.noisy[0], 0))


def test_neighbouring_tables_give_the_same_kind_of_output() -> None:
    # Adding one person to a leaf changes no shape, dtype, flag or exception (boundary rule).
    counts = county_counts()
    plus = counts.copy()
    plus[3, 1] += 1
    losses = PureDP(Fraction(1, 10)).split([1, 1, 1])
    a = release_geography([None, None, counts], PARENTS, level_losses=losses, integer=True,
                          rng=np.random.default_rng(0))
    b = release_geography([None, None, plus], PARENTS, level_losses=losses, integer=True,
                          rng=np.random.default_rng(0))
    for x, y in zip(a.estimates, b.estimates):
        assert x.shape == y.shape and x.dtype == y.dtype
    assert a.variances[2].tolist() == b.variances[2].tolist()


@pytest.mark.parametrize("kwargs,match", [
    (dict(level_losses=[None, None, None]), "finest level"),
    (dict(level_losses=[None, PureDP(Fraction(1))]), "one entry per geography level"),
    (dict(level_losses=[PureDP(Fraction(1))] * 3, public_totals=[np.array([[1, 2, 3, 4]]), None, None]),
     "public totals and a positive loss"),
    (dict(level_losses=[None] * 2 + [PureDP(Fraction(1))], public_totals=[np.array([[1.5] * 4]), None, None]),
     "non-negative integer table"),
    (dict(level_losses=[None] + [PureDP(Fraction(1))] * 2,
          public_totals=[np.array([[1, 1, 1, 1]]), np.ones((3, 4), dtype=int), None]), "disagree"),
    (dict(level_losses=[PureDP(Fraction(1))] * 3, integer=True, rounding="stochastic"), "rounding"),
])
def test_public_input_errors(kwargs, match) -> None:
    with pytest.raises(ParameterError, match=match):
        release_geography([None, None, county_counts()], PARENTS, rng=np.random.default_rng(0), **kwargs)


def test_counts_shapes_are_checked() -> None:
    with pytest.raises(ParameterError, match="shaped"):
        release_geography([np.zeros((1, 3), dtype=int), None, county_counts()], PARENTS,
                          level_losses=[PureDP(Fraction(1))] * 3, rng=np.random.default_rng(0))


@pytest.mark.skipif(importlib.util.find_spec("pandas_dp.noise.discrete_gaussian") is None,
                    reason="discrete Gaussian sampler not in this tree yet")
def test_zcdp_levels() -> None:
    losses = ZCDP(Fraction(1, 2)).split([1, 1, 1])
    rel = release_geography([None, None, county_counts()], PARENTS, level_losses=losses, integer=True,
                            rng=np.random.default_rng(0))
    assert rel.noise_descriptions()[2]["noise"] == "discrete Gaussian"
    np.testing.assert_array_equal(rel.layout.aggregate(rel.estimates[2], 2), rel.estimates[1])


@st.composite
def geographies(draw):
    """A random geography (any fan-out, shuffled codes), small leaf counts, random level losses
    (coarser levels sometimes unmeasured), a random cell shape."""
    levels = draw(st.integers(1, 4))
    sizes, parents = [1], [None]
    for _ in range(1, levels):
        fan = draw(st.lists(st.integers(1, 4), min_size=sizes[-1], max_size=sizes[-1]))
        par = np.repeat(np.arange(sizes[-1]), fan)
        parents.append(par[np.random.default_rng(draw(st.integers(0, 2**31))).permutation(par.size)])
        sizes.append(par.size)
    cells = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=2)))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    leaf = rng.poisson(draw(st.sampled_from([0.3, 3.0, 30.0])), size=(sizes[-1],) + cells)
    weights = [draw(st.sampled_from([0, 1, 2])) for _ in range(levels - 1)] + [draw(st.integers(1, 2))]
    eps = draw(st.sampled_from([Fraction(1, 10), Fraction(1), Fraction(10)]))
    losses = PureDP(eps).split([Fraction(w, sum(weights)) for w in weights])
    return parents, leaf, [l if l.amount > 0 else None for l in losses], rng


@settings(max_examples=60, deadline=None)
@given(geographies(), st.sampled_from(["largest_remainder", "unbiased"]))
def test_consistency_and_integrality_on_any_geography(case, rounding) -> None:
    parents, leaf, losses, rng = case
    counts = [None] * (len(parents) - 1) + [leaf]
    gls = release_geography(counts, parents, level_losses=losses, rng=np.random.default_rng(1))
    nn = release_geography(counts, parents, level_losses=losses, nonnegative=True,
                           rng=np.random.default_rng(1))
    rel = release_geography(counts, parents, level_losses=losses, integer=True, rounding=rounding,
                            rng=np.random.default_rng(1))
    lay = rel.layout
    for lvl in range(lay.n_levels):
        assert rel.estimates[lvl].shape == (lay.n_regions[lvl],) + leaf.shape[1:]
        assert rel.estimates[lvl].dtype == np.int64 and np.all(rel.estimates[lvl] >= 0)
        assert np.all(nn.estimates[lvl] >= 0)
        assert np.all(np.abs(rel.estimates[lvl] - nn.estimates[lvl]) < 1.0)
        if lvl:
            np.testing.assert_array_equal(lay.aggregate(rel.estimates[lvl], lvl), rel.estimates[lvl - 1])
            for r in (gls, nn):
                np.testing.assert_allclose(lay.aggregate(r.estimates[lvl], lvl), r.estimates[lvl - 1],
                                           rtol=1e-9, atol=1e-8)


@pytest.mark.parametrize("integer", [False, True])
def test_public_national_population_is_kept(integer) -> None:
    leaf = county_counts(cells=5, seed=6) // 6             # small counts: projection is active
    total = np.array([int(leaf.sum())])
    losses = PureDP(Fraction(1, 2)).split([1, 1, 1])
    rel = release_geography([None, None, leaf], PARENTS, level_losses=losses, root_totals=total,
                            nonnegative=True, integer=integer, rng=np.random.default_rng(3))
    lay = rel.layout
    np.testing.assert_allclose(rel.estimates[0].sum(), total[0], rtol=1e-12)
    for lvl in range(3):
        assert np.all(rel.estimates[lvl] >= 0)
        if lvl:
            np.testing.assert_allclose(lay.aggregate(rel.estimates[lvl], lvl), rel.estimates[lvl - 1],
                                       rtol=1e-9, atol=1e-9)
    # Knowing the total over the 5 cells lowers every variance by A^2 P_root / 5.
    free = release_geography([None, None, leaf], PARENTS, level_losses=losses, rng=np.random.default_rng(3))
    assert np.all(rel.variances[0] < free.variances[0])
    st = rel.structure
    for lvl in range(3):
        root_var = st.root_variance[0]
        np.testing.assert_allclose(rel.variances[lvl],
                                   free.variances[lvl] - st.gain[lvl] ** 2 * root_var / 5, rtol=1e-12)


def test_root_totals_must_agree_with_public_tables() -> None:
    leaf = county_counts(cells=2)
    with pytest.raises(ParameterError, match="root_totals disagree"):
        release_geography([None, None, leaf], PARENTS, level_losses=[None, None, PureDP(Fraction(1))],
                          public_totals=[None, np.ones((3, 2), dtype=np.int64), None],
                          root_totals=np.array([5]), rng=np.random.default_rng(0))
