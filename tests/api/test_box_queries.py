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
