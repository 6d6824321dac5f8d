"""What a zCDP release reports (issue 15): its measure, its noise's exact parameters and exact variances.

Every result of a ``rho=`` release says ``measure == "zcdp"``, ``rho`` and
``epsilon is None``; its parameters hold the exact ``sigma2`` (per level for
a tree and a count-of-counts); its variances are the exact variances of the
discrete Gaussian noise drawn (checked against brute-force sums), propagated
through the tree's generalized least squares with weights ``1 / sigma_k**2``
(checked against a dense solve); and ``repr``, the notebook view and the plot
titles state ``rho`` and ``sigma`` (pure releases: ``epsilon`` and the noise
scale ``t``).
"""

from __future__ import annotations

import pickle
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.data import load_households, load_persons

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

EDGES = list(range(9))
D = pd.DataFrame({"x": [0, 1, 1, 2, 3, 3, 3, 5]})


def dg_variance(sigma2: Fraction) -> float:
    """Variance of N_Z(0, sigma2) by a direct sum over |z| <= 60 sigma + 60 (the rest is below 1e-300)."""
    s2 = float(sigma2)
    half = int(60 * np.sqrt(s2)) + 60
    z = np.arange(-half, half + 1, dtype=np.float64)
    w = np.exp(-z * z / (2 * s2))
    return float((z * z * w).sum() / w.sum())


@pytest.fixture(scope="module")
def releases() -> dict[str, object]:
    persons, households = load_persons(), load_households()
    rng = np.random.default_rng(0)
    with pdp.budget(rho=10):
        return {
            "identity": persons.dp.histogram("age", bins=range(0, 101, 10), rho=0.1, rng=rng),
            "hierarchical": persons.dp.hierarchical_histogram("income", bins=64, range=(0, 512_000), rho=0.5,
                                                              budget_split="geometric", branching=2, rng=rng),
            "auto": persons.dp.histogram("income", bins=64, range=(0, 512_000), rho=0.5, method="auto", rng=rng),
            "count_of_counts": persons.dp.count_of_counts("household_id", ["state", "county"], rho=0.5,
                                                          groups=households, max_size=16, rng=rng),
            "unattributed": persons.dp.unattributed_histogram("household_id", rho=0.5,
                                                              groups=households["household_id"], rng=rng),
            "range_query": persons.dp.range_query("age", [(0, 18), (18, 65)], bins=100, range=(0, 100), rho=0.5,
                                                  rng=rng).attrs["release"],
        }


@pytest.mark.parametrize("name", ["identity", "hierarchical", "auto", "count_of_counts", "unattributed",
                                  "range_query"])
def test_every_result_states_its_measure(releases, name):
    r = releases[name]
    assert r.measure == "zcdp" and r.epsilon is None and r.rho == float(r.loss.amount) > 0
    assert pickle.loads(pickle.dumps(r)).rho == r.rho        # the loss survives a round trip


def test_identity_reports_sigma2_and_the_exact_variance(releases):
    h = releases["identity"]
    assert h.params["noise"] == "discrete Gaussian" and h.params["sigma2"] == 5   # 1 / (2 * 0.1)
    np.testing.assert_allclose(h.variance.to_numpy(), dg_variance(Fraction(5)), rtol=1e-12)
    # sigma < 1: the exact variance is visibly below sigma^2, and the release reports it
    with pdp.budget(rho=10):
        small = D.dp.histogram("x", bins=EDGES, rho=2, rng=np.random.default_rng(0))
    assert small.params["sigma2"] == Fraction(1, 4)
    np.testing.assert_allclose(small.variance.to_numpy(), dg_variance(Fraction(1, 4)), rtol=1e-12)
    assert small.variance.iloc[0] < 0.25 * 0.95


def test_tree_reports_sigma2_per_level_and_splits_rho_exactly(releases):
    t = releases["hierarchical"]
    rhos = [Fraction(v) for v in t.params["level_rhos"]]
    sigma2 = t.params["level_sigma2"]
    assert sum(rhos) <= Fraction(1, 2) and t.params["noise"] == "discrete Gaussian"
    assert "level_noise_scales" not in t.params
    for rho_k, s2, var in zip(rhos, sigma2, t.detail.level_variances):
        if rho_k == 0:
            assert s2 is None and np.isinf(var)
        else:
            assert Fraction(s2) == 1 / (2 * rho_k)                      # sigma_k^2 = Delta_2^2 / (2 rho_k)
            assert var == pytest.approx(dg_variance(Fraction(s2)), rel=1e-12)
    # geometric split for Gaussian noise: rho_k proportional to b**(-k/2) (leaves get the most)
    ratios = [float(rhos[k + 1] / rhos[k]) for k in range(len(rhos) - 2)]
    np.testing.assert_allclose(ratios, 2 ** -0.5, rtol=1e-9)


def _dense_gls_covariance(n: int, b: int, level_variances: list[float]) -> np.ndarray:
    """Covariance of the GLS leaf estimate of a complete b-ary tree: (A' W A)^-1, W = diag(1 / sigma_k^2)."""
    rows, weights = [], []
    size = 1
    for var in level_variances:
        for start in range(0, n, size):
            row = np.zeros(n)
            row[start:start + size] = 1.0
            if np.isfinite(var):
                rows.append(row)
                weights.append(1.0 / var)
        size *= b
    a = np.array(rows)
    return np.linalg.inv(a.T @ np.diag(weights) @ a)


@pytest.mark.parametrize("split", ["uniform", "geometric", "optimal"])
def test_tree_variances_are_the_gls_ones_with_weights_one_over_sigma2(split):
    n = 16
    with pdp.budget(rho=10):
        t = pd.DataFrame({"x": np.arange(40) % n}).dp.hierarchical_histogram(
            "x", bins=list(range(n + 1)), rho=0.3, branching=2, budget_split=split, include_root=True,
            rng=np.random.default_rng(1))
    cov = _dense_gls_covariance(n, 2, list(t.detail.level_variances))
    np.testing.assert_allclose(t.variance.to_numpy(), np.diag(cov), rtol=1e-9)
    answers = t.range_query([(0, 5), (3, 11), (0, 16)])
    for (lo, hi), se in zip([(0, 5), (3, 11), (0, 16)], answers["std_error"]):
        e = np.zeros(n)
        e[lo:hi] = 1.0
        assert se ** 2 == pytest.approx(e @ cov @ e, rel=1e-9)
    # V_Avg: the mean over all n (n + 1) / 2 ranges
    lo, hi = np.triu_indices(n + 1, k=1)
    prefix = np.vstack([np.zeros(n), np.tril(np.ones((n, n)))])      # row j: indicator of [0, j)
    mean = np.mean([(prefix[j] - prefix[i]) @ cov @ (prefix[j] - prefix[i]) for i, j in zip(lo, hi)])
    assert t.average_range_variance() == pytest.approx(mean, rel=1e-9)


def test_group_releases_report_their_noise(releases):
    coc, u = releases["count_of_counts"], releases["unattributed"]
    # count-of-counts hc: 3 levels, rho / 3 each, sensitivity 1: sigma^2 = 3 / (2 * 0.5) = 3
    assert coc.params["rho_per_level"] == "1/6" and coc.params["sigma2_per_level"] == 3
    assert coc.params["noise"] == "discrete Gaussian" and "noise_scale_per_level" not in coc.params
    assert u.params["sigma2"] == 1 and u.params["rho_counts"] == "1/2"
    with pdp.budget(rho=10):
        naive = load_persons().dp.count_of_counts("household_id", ["state", "county"], rho=0.5, method="naive",
                                                  groups=load_households(), max_size=16,
                                                  rng=np.random.default_rng(0))
    assert naive.params["sigma2_per_level"] == 6                       # Delta_2^2 = 2 for naive


# ------------------------------------------------------------------ repr, notebook view, plots
@pytest.mark.parametrize("name", ["identity", "hierarchical", "count_of_counts", "unattributed"])
def test_views_state_rho_and_sigma(releases, name, tmp_path):
    r = releases[name]
    rho = f"{r.rho:g}"
    assert f"rho={rho} (zCDP), sigma=" in repr(r).splitlines()[0]
    page = r._repr_html_()
    assert f"ρ = {rho} (zCDP), σ = " in page and "ε" not in page.split("<small>")[0]
    ax = r.plot("state") if name == "count_of_counts" else r.plot()
    assert f"ρ = {rho} (zCDP), σ = " in ax.get_title()
    ax.figure.savefig(tmp_path / f"{name}.png")
    plt.close(ax.figure)
    assert (tmp_path / f"{name}.png").stat().st_size > 5000


def test_sigma_shown_is_the_noise_drawn(releases):
    assert "σ = 2.236," in releases["identity"]._repr_html_()           # sqrt(5)
    assert "sigma=1.732," in repr(releases["count_of_counts"])          # sqrt(3)
    tree = releases["hierarchical"]
    low, high = (np.sqrt(float(Fraction(s))) for s in (tree.params["level_sigma2"][0],
                                                          tree.params["level_sigma2"][-2]))
    assert f"σ = {low:.4g}–{high:.4g} by level" in tree._repr_html_()
    assert "σ per level (leaves first): " in tree._repr_html_()


def test_pure_views_state_epsilon_and_the_noise_scale():
    with pdp.budget(epsilon=10):
        h = D.dp.histogram("x", bins=EDGES, epsilon=0.5, rng=np.random.default_rng(0))
        t = D.dp.hierarchical_histogram("x", bins=EDGES, epsilon=0.5, branching=2, rng=np.random.default_rng(0))
    assert h.measure == "pure" and h.rho is None and h.epsilon == 0.5
    assert "epsilon=0.5, noise_scale=2," in repr(h) and "ε = 0.5, noise scale t = 2," in h._repr_html_()
    assert "ε = 0.5, noise scale t = 6" in t._repr_html_()                # 3 levels of epsilon 1/6
    ax = t.plot()
    assert ax.get_title() == "hierarchical histogram, ε = 0.5, noise scale t = 6"
    plt.close(ax.figure)
