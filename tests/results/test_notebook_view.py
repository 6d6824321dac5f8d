"""What a notebook shows: ``_repr_html_`` tables and ``plot()`` pictures of every result type."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.data import load_households, load_persons

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


@pytest.fixture(scope="module")
def results() -> dict[str, object]:
    persons, households = load_persons(), load_households()
    rng = np.random.default_rng(0)
    with pdp.budget(epsilon=10.0):
        out = {
            "identity": persons.dp.histogram("age", bins=range(0, 101, 10), epsilon=1.0, rng=rng),
            "grid": persons.dp.histogram(["state", "age"], bins={"age": range(0, 101, 20)},
                                         categories={"state": "dtype"}, epsilon=1.0, rng=rng),
            "hierarchical": persons.dp.hierarchical_histogram("income", bins=64, range=(0, 512_000),
                                                              epsilon=1.0, rng=rng),
            "ahp": persons.dp.histogram("age", bins=range(0, 101), epsilon=1.0, method="ahp", rng=rng),
            "dpcube": persons.dp.histogram("age", bins=range(0, 101), epsilon=1.0, method="dpcube", rng=rng),
            "count_of_counts": persons.dp.count_of_counts("household_id", ["state", "county"], epsilon=1.0,
                                                          groups=households, max_size=16, rng=rng),
            "unattributed": persons.dp.unattributed_histogram("household_id", epsilon=1.0,
                                                              groups=households["household_id"], rng=rng),
        }
    return out


@pytest.mark.parametrize("name", ["identity", "grid", "hierarchical", "ahp", "dpcube", "count_of_counts",
                                  "unattributed"])
def test_html_names_method_epsilon_parameters_and_rows(results, name):
    result = results[name]
    page = result._repr_html_()
    assert page.startswith("<div>") and page.endswith("</div>") and "<table" in page
    assert f"<code>{result.method}</code>" in page and "ε = 1" in page
    # Parameters read as words (the noise and its size are in the heading, not repeated; issue 29, item 5).
    first_param = next(k for k in result.params if k not in ("noise", "sigma2", "noise_scale"))
    assert f"{first_param.replace('_', ' ')}: " in page
    if name != "count_of_counts":  # count-of-counts releases are integral matches, without per-size errors
        assert "estimate ± std_error" in page and " ± " in page


def _png(ax, path) -> int:
    ax.figure.savefig(path, format="png")
    plt.close(ax.figure)
    return path.stat().st_size


@pytest.mark.parametrize("name,xlabel,ylabel", [
    ("identity", "age", "count (± 95% CI)"),
    ("hierarchical", "income", "count (± 95% CI)"),
    ("ahp", "age", "count (± 95% CI)"),
    ("dpcube", "age", "count (± 95% CI)"),
    ("grid", "age", "state"),
    ("unattributed", "rank", "count"),
])
def test_plot_renders_with_labelled_axes_and_error_bars(results, name, xlabel, ylabel, tmp_path):
    result = results[name]
    ax = result.plot()
    assert ax.get_xlabel() == xlabel and ax.get_ylabel() == ylabel
    assert f"ε = {result.epsilon:g}" in ax.get_title()
    if name == "unattributed":
        assert len(ax.collections) == 1  # the confidence band
    elif name != "grid":
        # error bars: one line collection whose segments span the release's 95% intervals
        bars = next(c for c in ax.containers if isinstance(c, matplotlib.container.BarContainer))
        assert bars.errorbar is not None
        segments = bars.errorbar.lines[2][0].get_segments()
        ci = result.confidence_interval(0.95)        # the release's own interval rule
        half = (ci["upper"] - ci["lower"]).to_numpy() / 2
        lengths = np.array([s[1, 1] - s[0, 1] for s in segments])
        np.testing.assert_allclose(lengths, 2 * half, rtol=1e-5)
    assert _png(ax, tmp_path / f"{name}.png") > 5_000


def test_count_of_counts_plot_is_log_log_per_region(results, tmp_path):
    coc = results["count_of_counts"]
    ax = coc.plot("state")
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert ax.get_xlabel() == "group size" and ax.get_ylabel() == "number of groups"
    labels = sorted(t.get_text() for t in ax.get_legend().get_texts())
    assert labels == sorted(map(str, coc.regions[1]))
    for line in ax.get_lines():  # each line is one region's released distribution (sizes > 0)
        want = coc.at("state", line.get_label())
        want = want[want.index > 0]
        np.testing.assert_array_equal(line.get_xdata(), want.index.to_numpy())
        np.testing.assert_array_equal(line.get_ydata(), want.to_numpy())
    assert _png(ax, tmp_path / "coc.png") > 5_000
    cum = coc.plot("state", cumulative=True)
    assert cum.get_ylabel() == "groups of at least this size"
    for line in cum.get_lines():  # N(>= i) starts at the region's number of non-empty groups, decreasing
        y = line.get_ydata()
        want = coc.at("state", line.get_label())
        assert y[0] == want[want.index > 0].sum() and np.all(np.diff(y) <= 0)
    plt.close(cum.figure)
    one = coc.plot("county", region=coc.regions[2][0])
    assert len(one.get_lines()) == 1 and one.get_legend() is None
    plt.close(one.figure)
    national = coc.plot()
    assert "national" in national.get_title()
    plt.close(national.figure)


def test_sample_of_every_release_feeds_pandas(results):
    for name in ("identity", "grid", "hierarchical", "ahp", "dpcube", "unattributed"):
        frame = results[name].sample(n=100, rng=np.random.default_rng(1))
        assert isinstance(frame, pd.DataFrame) and len(frame) == 100
