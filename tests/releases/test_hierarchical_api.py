"""Public API of hierarchical histograms: df.dp.hierarchical_histogram and df.dp.range_query."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.noise.laplace import discrete_laplace_variance


@pytest.fixture
def incomes() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"income": rng.gamma(2.0, 20_000.0, 5000),
                         "age": rng.integers(0, 100, 5000)})


def release(frame, **kw):
    args = dict(bins=256, range=(0, 256_000), epsilon=1.0, rng=np.random.default_rng(1))
    args.update(kw)
    return frame.dp.hierarchical_histogram("income", **args)


def test_release_is_a_histogram_with_tree_attributes(incomes) -> None:
    with pdp.budget(2.0) as b:
        t = release(incomes)
    assert isinstance(t, pdp.HierarchicalHistogram) and isinstance(t, pdp.Histogram)
    assert isinstance(t.counts.index, pd.IntervalIndex) and len(t.counts) == 256
    assert (t.branching, t.height) == (16, 2)          # Qardaji Table 2 for N = 2^8
    assert t.method == "hierarchical" and t.epsilon == 1.0
    assert t.params["branching_chosen_by"] == "auto"
    assert t.params["level_epsilons"] == ["1/2", "1/2", "0"]
    assert t.params["predicted_average_range_variance"] == pytest.approx(79.2254, abs=1e-3)
    assert b.spent == 1.0 and len(b.ledger) == 1
    assert b.ledger.loc[0, "method"] == "histogram:hierarchical"
    assert t.variance_exact and t.post_processing == ("constrained inference (exact GLS)",)


def test_average_range_variance_is_paper_value_for_drawn_noise(incomes) -> None:
    with pdp.budget(1.0):
        t = release(incomes)
    # Qardaji Table 2: 79.23 with continuous Laplace of scale 2 per level; the discrete
    # Laplace drawn at t = 2 has variance ratio 2p/(1-p)^2 / (2 t^2).
    ratio = discrete_laplace_variance(2) / 8.0
    assert t.average_range_variance() == pytest.approx(79.23 * ratio, abs=0.005 * ratio)


def test_levels_frame(incomes) -> None:
    with pdp.budget(1.0):
        t = release(incomes, branching=4)
    lv = t.levels
    assert list(lv.columns) == ["level", "node", "low", "high", "noisy", "estimate", "variance"]
    assert len(lv) == 256 + 64 + 16 + 4 + 1
    assert lv["level"].max() == t.height + 1 == 5
    root = lv[lv["level"] == 5].iloc[0]
    assert pd.isna(root["noisy"]) and root["low"] == 0 and root["high"] == 256_000
    leaves = lv[lv["level"] == 1]
    np.testing.assert_allclose(leaves["estimate"].to_numpy(), t.counts.to_numpy())
    np.testing.assert_allclose(leaves["variance"].to_numpy(), t.variance.to_numpy())
    # Consistency: every level sums to the root estimate.
    sums = lv.groupby("level")["estimate"].sum()
    np.testing.assert_allclose(sums.to_numpy(), root["estimate"])


def test_range_query_std_error_is_exact_and_not_a_sum_of_bins(incomes) -> None:
    with pdp.budget(1.0):
        t = release(incomes, branching=4)
    ans = t.range_query(16_000, 200_000)                      # bins 16..199
    assert ans.estimate == pytest.approx(t.counts.iloc[16:200].sum())
    assert ans.std_error ** 2 == pytest.approx(t.detail.range_variance([16], [200])[0])
    assert ans.std_error ** 2 < t.variance.iloc[16:200].sum()   # correlated, much smaller
    frame = t.range_query([(0, 256_000), (5_000, 5_000), (1_000, 2_000)])
    assert list(frame.columns) == ["low", "high", "estimate", "std_error", "lower", "upper"]
    assert frame.loc[1, "estimate"] == 0 and frame.loc[1, "std_error"] == 0   # empty range
    assert frame.loc[1, "lower"] == 0 and frame.loc[1, "upper"] == 0          # exactly known
    assert frame.loc[0, "estimate"] == pytest.approx(t.levels["estimate"].iloc[-1])


def test_series_form_and_options(incomes) -> None:
    with pdp.budget(3.0):
        a = incomes["income"].dp.hierarchical_histogram(bins=100, range=(0, 200_000), epsilon=1.0,
                                                        branching=3, budget_split="geometric",
                                                        include_root=True, rng=np.random.default_rng(0))
        b = incomes["income"].dp.hierarchical_histogram(bins=100, range=(0, 200_000), epsilon=1.0,
                                                        branching=10, consistent=False,
                                                        rng=np.random.default_rng(0))
        c = incomes["income"].dp.hierarchical_histogram(bins=100, range=(0, 200_000), epsilon=1.0,
                                                        budget_split="optimal",
                                                        rng=np.random.default_rng(0))
    assert a.params["include_root"] and a.params["level_noise_scales"][-1] is not None
    assert a.params["budget_split"] == "geometric"
    assert not b.params["consistent"] and b.post_processing == ()
    # H_b: a range of one level-2 node is answered by that noisy node alone.
    node = b.detail.noisy[1][3]
    assert b.range_query(60_000, 80_000).estimate == node
    assert c.params["budget_split"] == "optimal"
    assert sum(map(lambda e: __import__("fractions").Fraction(e), c.params["level_epsilons"])) <= 1


def test_nonnegative(incomes) -> None:
    with pdp.budget(1.0):
        t = release(incomes, epsilon=0.1, nonnegative=True)
    assert (t.counts >= 0).all()
    assert not t.variance_exact and not t.range_query(0, 100_000).exact_std_error
    assert "non-negative consistent projection" in t.post_processing
    lv = t.levels
    assert lv.groupby("level")["estimate"].sum().nunique() == 1 or np.allclose(
        lv.groupby("level")["estimate"].sum(), lv["estimate"].iloc[-1])


def test_two_dimensional_tree(incomes) -> None:
    with pdp.budget(1.0):
        t = incomes.dp.hierarchical_histogram(["income", "age"], bins=[32, 20],
                                              range=[(0, 160_000), (0, 100)], epsilon=1.0,
                                              branching=2, rng=np.random.default_rng(0))
    assert isinstance(t.counts.index, pd.MultiIndex) and len(t.counts) == 640
    assert t.height == 5
    lv = t.levels
    assert lv.iloc[-1]["low"] == (0, 0) and lv.iloc[-1]["high"] == (32, 20)
    with pytest.raises(pdp.DomainError):
        t.range_query(0, 5_000)
    with pytest.raises(pdp.DomainError):
        t.average_range_variance()


@pytest.mark.parametrize("kwargs,error", [
    ({"branching": 1}, pdp.ParameterError),
    ({"branching": 2.5}, pdp.ParameterError),
    ({"branching": True}, pdp.ParameterError),
    ({"branching": "best"}, pdp.ParameterError),
    ({"budget_split": "cormode"}, pdp.ParameterError),
    ({"consistent": "yes"}, pdp.ParameterError),
    ({"include_root": 1}, pdp.ParameterError),
    ({"nonnegative": None}, pdp.ParameterError),
    ({"rng": 3}, pdp.ParameterError),
    ({"epsilon": 0}, pdp.ParameterError),
    ({"range": None}, pdp.DomainError),
    ({"epsilon": 1e-15}, pdp.ParameterError),      # a level's noise scale would exceed 2**50
    ({"epsilon": 1e-15, "budget_split": "optimal"}, pdp.ParameterError),
])
def test_errors_before_any_charge(incomes, kwargs, error) -> None:
    with pdp.budget(1.0) as b:
        with pytest.raises(error):
            release(incomes, **kwargs)
    assert b.spent == 0 and len(b.ledger) == 0


def test_no_budget(incomes) -> None:
    with pytest.raises(pdp.NoActiveBudgetError):
        release(incomes)


def test_range_query_one_call(incomes) -> None:
    with pdp.budget(1.0) as b:
        ans = incomes.dp.range_query("income", [(0, 20_000), (20_000, 50_000)], bins=1000,
                                     range=(0, 1_000_000), epsilon=0.5, rng=np.random.default_rng(0))
    rel = ans.attrs["release"]
    assert isinstance(rel, pdp.HierarchicalHistogram)
    assert list(ans.columns) == ["low", "high", "estimate", "std_error", "lower", "upper"]
    assert ans["low"].tolist() == [0.0, 20_000.0]
    np.testing.assert_allclose(ans["std_error"] ** 2,
                               rel.detail.range_variance([0, 20], [20, 50]))
    assert b.spent == 0.5 and len(b.ledger) == 1


def test_range_query_small_domain_is_flat(incomes) -> None:
    with pdp.budget(1.0):
        ans = incomes["age"].dp.range_query((20, 40), bins=10, range=(0, 100), epsilon=0.5,
                                            rng=np.random.default_rng(0))
    rel = ans.attrs["release"]
    assert rel.method == "identity" and len(ans) == 1
    assert ans.loc[0, "std_error"] ** 2 == pytest.approx(2 * rel.variance.iloc[0])


@pytest.mark.parametrize("ranges,error", [([(0, 1500)], pdp.DomainError),
                                          ([(10, 5)], pdp.DomainError),
                                          ("all", pdp.ParameterError),
                                          ([], pdp.ParameterError)])
def test_range_query_validates_ranges_before_charge(incomes, ranges, error) -> None:
    with pdp.budget(1.0) as b:
        with pytest.raises(error):
            incomes.dp.range_query("income", ranges, bins=100, range=(0, 100_000), epsilon=0.5)
        with pytest.raises(pdp.ParameterError):
            incomes.dp.range_query(["income", "age"], [(0, 1000)], bins=100, range=(0, 100_000),
                                   epsilon=0.5)
        with pytest.raises(pdp.ParameterError):
            incomes.dp.range_query("income", [(0, 1000)], bins=100, range=(0, 100_000),
                                   epsilon=0.5, method="magic")
        with pytest.raises(pdp.ParameterError):
            incomes.dp.range_query("income", [(0, 1000)], bins=4096, range=(0, 409_600),
                                   epsilon=1e-15)
    assert b.spent == 0


def test_range_query_explicit_methods(incomes) -> None:
    with pdp.budget(1.0):
        a = incomes.dp.range_query("income", [(0, 50_000)], bins=100, range=(0, 100_000),
                                   epsilon=0.5, method="identity", rng=np.random.default_rng(0))
        h = incomes.dp.range_query("income", [(0, 50_000)], bins=100, range=(0, 100_000),
                                   epsilon=0.5, method="hierarchical", branching=5,
                                   rng=np.random.default_rng(0))
    assert a.attrs["release"].method == "identity"
    assert h.attrs["release"].branching == 5


def test_display_and_plot(incomes) -> None:
    import matplotlib
    matplotlib.use("Agg")
    with pdp.budget(1.0):
        t = release(incomes, branching=4)
    page = t._repr_html_()
    assert "b = 4" in page and "height = 4" in page and "ε = 1" in page
    assert "branching=4" in repr(t)
    ax = t.plot()
    # 256 bins (> 200) read as a step line over the bins (true widths) inside a band of the intervals
    steps = [p for p in ax.patches if isinstance(p, matplotlib.patches.StepPatch)]
    assert len(steps) == 2 and np.allclose(steps[0].get_data()[0], t.counts.to_numpy())
    assert len(steps[0].get_data()[1]) == 257
    import matplotlib.pyplot as plt
    plt.close("all")
