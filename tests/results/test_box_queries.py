"""Issue 29, item 2: range_query over boxes of a 2-D (or d-D) release, in data units, with exact intervals."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.algorithms.tree.release import plan_tree, release_tree
from pandas_dp.privacy.loss import PureDP
from pandas_dp.results.histogram import RangeAnswer

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


def test_bad_box_bounds_raise_before_any_answer():
    h = _identity()
    for low, high, kind in [((44.8,), (45.0,), pdp.ParameterError), ("44.8", "45", pdp.ParameterError),
                            ((44.81, -93.4), (45.0, -93.0), pdp.DomainError),
                            ((44.9, -93.4), (44.8, -93.0), pdp.DomainError),
                            ((44.7, -93.4), (45.0, -93.0), pdp.DomainError),    # outside the domain
                            ((44.8, -93.4), (45.0, -92.9), pdp.DomainError)]:
        for result in (h, _tree()):
            with pytest.raises(kind):
                result.range_query(low, high)


def _tree(seed=0, points=POINTS, **kw):
    kw = {"branching": 2, "budget_split": "geometric", "include_root": True, **kw}
    with pdp.budget(epsilon=1.0):
        return points.dp.hierarchical_histogram(["lat", "lon"], bins=[6, 5], range=[(44.8, 45.0), (-93.4, -93.0)],
                                                epsilon=1.0, rng=np.random.default_rng(seed), **kw)


def _dense_gls(tree):
    """Brute force: the GLS estimate and covariance from the dense node x leaf matrix of the noised nodes."""
    d = tree.detail
    layout, shape = d.layout, tree.domain.shape
    rows, weights, values = [], [], []
    for k, noisy in enumerate(d.noisy):
        if noisy is None:
            continue
        span = layout.branching ** k
        for node in np.ndindex(*layout.level_shapes[k]):
            cover = np.zeros(shape)
            cover[tuple(slice(i * span, min((i + 1) * span, n)) for i, n in zip(node, shape))] = 1.0
            rows.append(cover.ravel())
            weights.append(1.0 / d.level_variances[k])
            values.append(float(noisy[node]))
    h, w, y = np.array(rows), np.array(weights), np.array(values)
    cov = np.linalg.inv(h.T @ (w[:, None] * h))
    return cov @ (h.T @ (w * y)), cov


def test_a_tree_box_has_the_exact_variance_of_its_linear_form():
    """Every box of a 6 x 5 quadtree (b = 2, geometric split, root noised): the estimate is the dense GLS
    solution's box sum and the variance w^T Cov w of the dense covariance (the O(nodes) recursion)."""
    tree = _tree()
    assert tree.detail.layout.height >= 2
    est, cov = _dense_gls(tree)
    np.testing.assert_allclose(tree.counts.to_numpy(), est, rtol=1e-9, atol=1e-7)
    lat, lon = tree.domain.dims[0].edges, tree.domain.dims[1].edges
    for r0, r1, c0, c1 in [(0, 6, 0, 5), (1, 4, 1, 3), (0, 1, 0, 1), (2, 6, 0, 2), (5, 6, 4, 5), (1, 5, 2, 5)]:
        box = tree.range_query((lat[r0], lon[c0]), (lat[r1], lon[c1]))
        w = np.zeros((6, 5))
        w[r0:r1, c0:c1] = 1.0
        w = w.ravel()
        assert box.exact_std_error and box.note == ""
        assert box.estimate == pytest.approx(w @ est, rel=1e-9, abs=1e-7)
        assert box.std_error ** 2 == pytest.approx(w @ cov @ w, rel=1e-9)
        assert box.low == (lat[r0], lon[c0]) and box.high == (lat[r1], lon[c1])
    raw = _tree(consistent=False)   # H_b without inference: the leaves' independent noise
    box = raw.range_query((lat[1], lon[1]), (lat[4], lon[3]))
    assert box.std_error ** 2 == pytest.approx(6 * raw.detail.level_variances[0])


def test_tree_box_intervals_cover_at_the_stated_level():
    """Fixed seeds, one box of a 6 x 5 quadtree's plan, 200 releases: the 90% interval (the rule of
    RangeAnswer.confidence_interval with the tree's noise) missed 23 times; a correct interval misses more
    than 36 times with probability < 1e-3 (binomial(200, 0.1) tail)."""
    plan = plan_tree((6, 5), loss=PureDP(Fraction(1)), branching=2, budget_split="geometric", include_root=True)
    noise = max((n for n in plan.level_noise if n is not None), key=lambda n: n.tail_factor(0.9))
    counts = np.random.default_rng(5).integers(0, 30, (6, 5))
    truth = int(counts[1:5, 1:4].sum())
    lo, hi = np.array([[1, 1]]), np.array([[5, 4]])
    misses = 0
    for seed in range(200):
        rel = release_tree(counts.copy(), plan, rng=np.random.default_rng(seed))
        est = float(rel.leaf_estimates()[1:5, 1:4].sum())
        answer = RangeAnswer(None, None, est, float(np.sqrt(rel.box_variance(lo, hi)[0])), True, noise, 0)
        lower, upper = answer.confidence_interval(0.9)
        misses += not lower <= truth <= upper
    assert misses <= 36


@pytest.mark.parametrize("method", ["dawa", "ugrid", "agrid", "ahp", "dpcube"])
def test_data_dependent_boxes_answer_with_the_bracket_of_their_cell_box(method):
    with pdp.budget(epsilon=1.0):
        h = POINTS.dp.histogram(["lat", "lon"], **DOMAIN, method=method, epsilon=1.0, rng=np.random.default_rng(3))
    box = h.range_query((44.825, -93.35), (44.9, -93.2))
    cells = h.cell_box_query([1, 1], [4, 4], confidence_level=0.9).iloc[0]
    assert box.low == (44.825, -93.35) and box.high == (44.9, -93.2)
    assert box.estimate == pytest.approx(cells["estimate"]) and box.std_error == pytest.approx(cells["std_error"])
    assert box.confidence_interval(0.9) == pytest.approx((cells["lower"], cells["upper"]))
    assert box.aligned == bool(cells["aligned"])
    assert h.range_query((44.85, -93.1), (44.85, -93.0)).estimate == 0   # an empty box
    with pytest.raises(pdp.DomainError):
        h.range_query((44.81, -93.35), (44.9, -93.2))


def test_clipped_releases_answer_boxes_and_say_the_sum_is_biased():
    with pdp.budget(epsilon=2.0):
        flat = POINTS.dp.histogram(["lat", "lon"], **DOMAIN, epsilon=1.0, nonnegative=True,
                                   rng=np.random.default_rng(0))
        tree = POINTS.dp.hierarchical_histogram(["lat", "lon"], **DOMAIN, branching=2, epsilon=1.0,
                                                nonnegative=True, rng=np.random.default_rng(0))
    for h in (flat, tree):
        box = h.range_query((44.825, -93.35), (44.9, -93.2))
        assert box.estimate == pytest.approx(h.counts.to_numpy().reshape(8, 8)[1:4, 1:4].sum())
        assert not box.exact_std_error and box.note.startswith("biased") and "biased" in repr(box)
    with pdp.budget(epsilon=1.0):
        line = POINTS.dp.hierarchical_histogram("hour", bins=24, range=(0, 24), epsilon=1.0, nonnegative=True)
    assert line.range_query(0, 12).note.startswith("biased")
    assert line.range_query([(0, 12)]).attrs["note"].startswith("biased")


def test_boxes_in_dates_and_numbers():
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"day": pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 60, 500), unit="D"),
                       "x": rng.uniform(0, 10, 500)})
    with pdp.budget(epsilon=1.0):
        h = df.dp.hierarchical_histogram(["day", "x"], bins=["W", 5], range=[("2024-01-01", "2024-03-04"), (0, 10)],
                                         epsilon=1.0, branching=2, rng=np.random.default_rng(0))
    box = h.range_query(("2024-01-08", 2), (pd.Timestamp("2024-02-05"), 8))
    assert box.low == (pd.Timestamp("2024-01-08"), 2.0) and box.high == (pd.Timestamp("2024-02-05"), 8.0)
    assert box.estimate == pytest.approx(h.counts.to_numpy().reshape(9, 5)[1:5, 1:4].sum())
    with pytest.raises(pdp.DomainError, match="bin edge"):
        h.range_query(("2023-12-01", 2), ("2024-02-05", 8))


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
    with pytest.raises(pdp.DomainError, match="covariance"):
        _tree().marginal("lat")


def test_auto_says_when_its_choice_biases_sums():
    """Issue 29, item 2: when method='auto' picks a clipped (non-negative) release for a ranges workload, the
    result says that sums are biased and which method is unbiased, where the numbers are."""
    with pdp.budget(epsilon=1.0):
        auto = POINTS.dp.histogram(["lat", "lon"], **DOMAIN, method="auto", expected_total=100_000, epsilon=0.5,
                                   rng=np.random.default_rng(0))
        ident = POINTS.dp.histogram(["lat", "lon"], **DOMAIN, method="identity", epsilon=0.5,
                                    rng=np.random.default_rng(0))
    assert auto.params["auto_nonnegative"] and auto.params["auto_workload"] == "ranges"
    assert "are biased" in auto.params["auto_note"] and "are biased" in repr(auto)
    # the note names what was done: the tree's projection (+nn) is not clipping
    assert auto.params["auto_config"].endswith("+nn") and "projected to non-negative counts" in auto.params["auto_note"]
    assert "method='identity'" in auto.to_frame().attrs["note"]
    assert "note" not in ident.to_frame().attrs
    box = auto.range_query((44.825, -93.35), (44.9, -93.2))   # answered, and says the sum is biased
    assert box.note.startswith("biased") and not box.exact_std_error


def test_tables_by_region_answer_boxes_in_every_region():
    """A 2-D table per precinct: the box in each region sums that region's cells, variance m P (exact, GLS)."""
    rng = np.random.default_rng(2)
    frame = POINTS.assign(pct=rng.choice(["p1", "p2", "p3"], len(POINTS)))
    with pdp.budget(epsilon=1.0):
        g = frame.dp.histogram(["lat", "lon"], bins=[4, 4], range=[(44.8, 45.0), (-93.4, -93.0)], by="pct",
                               by_categories=["p1", "p2", "p3"], epsilon=1.0, rng=np.random.default_rng(0))
    table = g.range_query((44.85, -93.3), (44.95, -93.1))
    assert table["region"].tolist() == ["national", "p1", "p2", "p3"]
    for _, row in table.iterrows():
        cells = g.at(row["level"], row["region"]).to_numpy().reshape(4, 4)[1:3, 1:3]
        variance = g.variance.to_numpy()[g.counts.index.get_locs([row["level"], row["region"]])][0]
        assert row["estimate"] == pytest.approx(cells.sum()) and row["std_error"] ** 2 == pytest.approx(4 * variance)
        assert row["low"] == (44.85, -93.3) and row["lower"] <= row["estimate"] <= row["upper"]
    one = g.range_query((44.85, -93.3), (44.95, -93.1), level="pct", region="p2")
    assert one.estimate == table["estimate"][2] and one.terms == 4
    with pytest.raises(pdp.DomainError):
        g.range_query((44.86, -93.3), (44.95, -93.1))
