"""Issue 29, item 2: range_query over boxes of a 2-D (or d-D) release, in data units, with exact intervals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp

RNG = np.random.default_rng(11)
POINTS = pd.DataFrame({"lat": RNG.uniform(44.8, 45.0, 3000), "lon": RNG.uniform(-93.4, -93.0, 3000),
                       "hour": RNG.integers(0, 24, 3000)})
DOMAIN = dict(bins=[8, 8], range=[(44.8, 45.0), (-93.4, -93.0)])


def _identity(**kw):
    with pdp.budget(epsilon=2.0):
        return POINTS.dp.histogram(["lat", "lon"], **DOMAIN, epsilon=1.0, rng=np.random.default_rng(0), **kw)


def test_a_box_sums_its_cells_with_the_exact_variance_and_interval():
    h = _identity()
    box = h.range_query((44.825, -93.35), (44.9, -93.2))
    cells = h.counts.to_numpy().reshape(8, 8)[1:4, 1:4]
    assert box.low == (44.825, -93.35) and box.high == (44.9, -93.2)
    assert box.estimate == cells.sum() and box.terms == 9 and box.exact_std_error
    assert box.std_error == pytest.approx(np.sqrt(h.variance.to_numpy().reshape(8, 8)[1:4, 1:4].sum()))
    lower, upper = box.confidence_interval(0.95)
    radius = h.noise.sum_radius(9, 0.95)  # the exact quantile of the sum of 9 draws
    assert (lower, upper) == (box.estimate - radius, box.estimate + radius)
    whole = h.range_query((44.8, -93.4), (45.0, -93.0))
    assert whole.estimate == h.counts.sum() and whole.terms == 64
    assert h.range_query((44.85, -93.1), (44.85, -93.0)).estimate == 0  # an empty box


def test_a_box_of_combined_cells_refuses_with_the_reason_and_bad_bounds_raise():
    with pdp.budget(epsilon=1.0):
        tree = POINTS.dp.hierarchical_histogram(["lat", "lon"], **DOMAIN, epsilon=1.0)
    with pytest.raises(pdp.DomainError, match="independent noise.*covariance"):
        tree.range_query((44.825, -93.35), (44.9, -93.2))
    h = _identity()
    for low, high, kind in [((44.8,), (45.0,), pdp.ParameterError), ("44.8", "45", pdp.ParameterError),
                            ((44.81, -93.4), (45.0, -93.0), pdp.DomainError),
                            ((44.9, -93.4), (44.8, -93.0), pdp.DomainError)]:
        with pytest.raises(kind):
            h.range_query(low, high)


def test_marginals_of_a_3d_release_keep_exact_variances_and_plot():
    """Issue 29, item 4: result.marginal(columns) sums cells with their variances (identity: exact), so a 3-D
    release plots by its marginals with honest error bars; other methods refuse with the reason."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with pdp.budget(epsilon=2.0):
        h = POINTS.dp.histogram(["lat", "lon", "hour"], bins=[4, 4, 6], range=[(44.8, 45.0), (-93.4, -93.0), (0, 24)],
                                epsilon=1.0, rng=np.random.default_rng(1))
    cube, var = h.counts.to_numpy().reshape(4, 4, 6), h.variance.to_numpy().reshape(4, 4, 6)
    m = h.marginal(["hour", "lat"])
    assert m.domain.columns == ("hour", "lat") and m.counts.index.names == ["hour", "lat"]
    np.testing.assert_array_equal(m.counts.to_numpy().reshape(6, 4), cube.sum(axis=1).T)
    np.testing.assert_allclose(m.variance.to_numpy().reshape(6, 4), var.sum(axis=1).T)
    one = h.marginal("hour")
    assert one.range_query(0, 24).estimate == h.counts.sum()
    ax = one.plot()
    assert len(ax.containers) or ax.lines or ax.collections  # bars with error bars
    plt.close(ax.figure)
    with pytest.raises(pdp.ParameterError, match="marginal"):
        h.plot()
    with pytest.raises(pdp.ParameterError):
        h.marginal(["hour", "hour"])
    with pdp.budget(epsilon=1.0):
        tree = POINTS.dp.hierarchical_histogram(["lat", "lon"], **DOMAIN, epsilon=1.0)
    with pytest.raises(pdp.DomainError, match="covariance"):
        tree.marginal("lat")


def test_auto_says_when_its_choice_biases_sums():
    """Issue 29, item 2: when method='auto' picks a clipped (non-negative) release for a ranges workload, the
    result says that sums are biased and which method is unbiased, where the numbers are."""
    with pdp.budget(epsilon=1.0):
        auto = POINTS.dp.histogram(["lat", "lon"], **DOMAIN, method="auto", expected_total=100_000, epsilon=0.5,
                                   rng=np.random.default_rng(0))
        ident = POINTS.dp.histogram(["lat", "lon"], **DOMAIN, method="identity", epsilon=0.5,
                                    rng=np.random.default_rng(0))
    assert auto.params["auto_nonnegative"] and auto.params["auto_workload"] == "ranges"
    assert "biased upwards" in auto.params["auto_note"] and "biased upwards" in repr(auto)
    assert "method='identity'" in auto.to_frame().attrs["note"]
    assert "note" not in ident.to_frame().attrs
