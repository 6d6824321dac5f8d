"""Flat (identity) histograms: values, variances, range queries, d-dim, Series form, plots."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.noise.laplace import discrete_laplace_variance, noise_scale


def test_identity_noise_is_integer_with_exact_variance(ages):
    with pdp.budget(1.0):
        h = ages.dp.histogram("age", bins=range(0, 101), epsilon=0.5, rng=np.random.default_rng(1))
    assert h.counts.dtype == np.int64
    p = math.exp(-0.5)
    assert h.variance.iloc[0] == pytest.approx(2 * p / (1 - p) ** 2, rel=1e-12)
    assert h.params["noise_scale"] == 2 and h.method == "identity"


def test_identity_noise_statistics_over_many_bins():
    """Noise = release - truth over 2^16 empty bins has mean 0 and variance 2p/(1-p)^2.

    With n = 65536 draws the standard error of the mean is sqrt(v/n) (v ≈ 7.8 at
    epsilon = 0.5), so |mean| < 5 sqrt(v/n) fails with probability < 1e-6; the
    sample variance of a discrete Laplace has relative s.e. about
    sqrt((kurtosis - 1)/n) ≈ 0.01, so 6% is > 5 sigma.
    """
    frame = pd.DataFrame({"x": np.zeros(0)})
    with pdp.budget(1.0):
        h = frame.dp.histogram("x", bins=2**16, range=(0, 2**16), epsilon=0.5, rng=np.random.default_rng(2))
    noise = h.counts.to_numpy(dtype=float)
    v = discrete_laplace_variance(noise_scale(1, 0.5))
    assert abs(noise.mean()) < 5 * math.sqrt(v / noise.size)
    assert noise.var() == pytest.approx(v, rel=0.06)


def test_range_query_single_and_many(ages):
    with pdp.budget(1.0):
        h = ages.dp.histogram("age", bins=10, range=(0, 100), epsilon=1.0, rng=np.random.default_rng(3))
    one = h.range_query(20, 50)
    assert one.estimate == h.counts.iloc[2:5].sum()
    assert one.std_error == pytest.approx(math.sqrt(3 * h.variance.iloc[0]))
    lo, hi = one.confidence_interval(0.95)
    # Three identity bins carry the sum of three independent draws: the exact quantile of that sum.
    assert lo < one.estimate < hi and hi - lo == 2 * h.noise.sum_radius(3, 0.95)
    many = h.range_query([(0, 100), (20, 50), (30, 30)])
    assert list(many.columns) == ["low", "high", "estimate", "std_error", "lower", "upper"]
    assert many["estimate"].tolist() == [h.counts.sum(), one.estimate, 0]
    # the list's interval columns follow the single answer's rule, at any level
    assert (many.loc[1, "lower"], many.loc[1, "upper"]) == pytest.approx(one.confidence_interval(0.95))
    ninety = h.range_query([(20, 50)], confidence_level=0.9)
    assert (ninety.loc[0, "lower"], ninety.loc[0, "upper"]) == pytest.approx(one.confidence_interval(0.9))
    with pytest.raises(pdp.ParameterError, match="confidence_level"):
        h.range_query([(20, 50)], confidence_level=95)
    with pytest.raises(pdp.DomainError, match="nearest edges"):
        h.range_query(15, 50)
    with pytest.raises(pdp.ParameterError, match="confidence_level"):
        one.confidence_interval(1.5)


def test_nonnegative_clips_and_flags_variance():
    frame = pd.DataFrame({"x": np.zeros(0)})
    with pdp.budget(1.0):
        h = frame.dp.histogram("x", bins=1000, range=(0, 1), epsilon=0.1, nonnegative=True,
                               rng=np.random.default_rng(4))
    assert (h.counts >= 0).all() and (h.counts > 0).any()
    assert not h.variance_exact and h.post_processing == ("clip at 0",)


def test_categorical_and_multi_dimensional(ages):
    with pdp.budget(1.0):
        hc = ages.dp.histogram("state", categories=["CA", "NY", "TX", "WA"], epsilon=0.2,
                               rng=np.random.default_rng(5))
        hg = ages.dp.histogram(["age", "state"], bins={"age": 4}, range={"age": (0, 100)},
                               categories={"state": ["CA", "NY", "TX"]}, epsilon=0.2,
                               rng=np.random.default_rng(6))
    assert list(hc.counts.index) == ["CA", "NY", "TX", "WA"]
    assert isinstance(hg.counts.index, pd.MultiIndex) and len(hg.counts) == 12
    with pytest.raises(pdp.DomainError, match="dimensions"):
        hg.range_query(0, 50)
    with pytest.raises(pdp.DomainError, match="categories"):
        hc.range_query(0, 1)


def test_series_accessor_matches_frame(ages):
    with pdp.budget(2.0):
        a = ages.dp.histogram("age", bins=10, range=(0, 100), epsilon=0.5, rng=np.random.default_rng(8))
        b = ages["age"].dp.histogram(bins=10, range=(0, 100), epsilon=0.5, rng=np.random.default_rng(8))
        c = pd.Series([1, 2, 3]).dp.histogram(bins=[0, 2, 4], epsilon=0.5, rng=np.random.default_rng(8))
    pd.testing.assert_series_equal(a.counts, b.counts)
    assert c.counts.index.name == "value"


def test_rng_must_be_a_generator(ages):
    with pdp.budget(1.0) as b:
        with pytest.raises(pdp.ParameterError, match="default_rng"):
            ages.dp.histogram("age", bins=10, range=(0, 100), epsilon=0.5, rng=42)
    assert b.spent == 0


def test_unknown_method_and_knobs(ages):
    with pdp.budget(1.0) as b:
        with pytest.raises(pdp.ParameterError, match="method"):
            ages.dp.histogram("age", bins=10, range=(0, 100), epsilon=0.5, method="magic")
        with pytest.raises(pdp.ParameterError, match="takes no parameters"):
            ages.dp.histogram("age", bins=10, range=(0, 100), epsilon=0.5, branching=4)
    assert b.spent == 0


def test_repr_and_html(ages):
    with pdp.budget(1.0):
        h = ages.dp.histogram("age", bins=20, range=(0, 100), epsilon=0.5, rng=np.random.default_rng(9))
    assert "identity" in repr(h) and "estimate" in repr(h)
    page = h._repr_html_()
    assert "<table" in page and "ε = 0.5" in page and "10 more bins" in page


def test_plot_has_labelled_axes(ages, tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with pdp.budget(1.0):
        h = ages.dp.histogram("age", bins=10, range=(0, 100), epsilon=0.5, rng=np.random.default_rng(10))
    ax = h.plot()
    assert ax.get_xlabel() == "age" and "count" in ax.get_ylabel()
    assert len(ax.patches) == 10
    path = tmp_path / "h.png"
    ax.figure.savefig(path)
    assert path.stat().st_size > 1000
    plt.close(ax.figure)


def test_result_is_frozen(ages):
    with pdp.budget(1.0):
        h = ages.dp.histogram("age", bins=10, range=(0, 100), epsilon=0.5)
    with pytest.raises(AttributeError):
        h.epsilon = 2.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        h.params["x"] = 1  # type: ignore[index]
