"""``df.dp.marginals``: consistent tables from one measurement (ResidualPlanner), on the release pipeline.

The core (plan, noise, reconstruction) is tested in tests/algorithms/test_marginals_*.py; here: the
release layer (public checks before any charge, the boundary rule on neighbouring frames, privacy
units), the result (tables agree exactly, exact range and box variances), and ``assert_dp``.
"""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.algorithms.marginals.counting import closure_marginals
from pandas_dp.algorithms.marginals.measure import MarginalMeasurement, measure_marginals
from pandas_dp.algorithms.marginals.plan import plan_residuals
from pandas_dp.algorithms.marginals.reconstruct import reconstruct
from pandas_dp.algorithms.marginals.workload import make_workload
from pandas_dp.privacy.loss import zcdp
from pandas_dp.testing import assert_dp, assert_same_outcome

AGE_BINS = [0, 18, 40, 65, 100]
SEXES = ["F", "M"]
STATES = ["A", "B", "C"]
DOMAIN = dict(bins={"age": AGE_BINS}, categories={"sex": SEXES, "state": STATES})
WORKLOAD = [("age", "sex"), ("sex", "state"), ("age", "state")]


def _frame(n: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"pid": np.arange(n) // 2, "age": rng.integers(0, 100, n),
                         "sex": rng.choice(SEXES, n), "state": rng.choice(STATES, n)})


D = _frame()


def _release(frame: pd.DataFrame, seed: int = 1, **kw):
    loss = {"rho": 0.5} if "epsilon" not in kw else {}
    return frame.dp.marginals(kw.pop("workload", WORKLOAD), **{**DOMAIN, **loss, **kw},
                              rng=np.random.default_rng(seed))


@pytest.mark.parametrize("measure", ["rho", "epsilon"])
def test_tables_agree_exactly_and_share_one_total(measure):
    with pdp.budget(**{measure: 1.0}) as b:
        t = _release(D, **{measure: 1.0})
    assert b.spent == 1.0 and list(b.ledger["method"]) == ["marginals:residual_planner"]
    totals = {cols: t.table(cols).counts.sum() for cols in WORKLOAD}
    assert np.ptp(list(totals.values())) < 1e-9 * abs(totals[WORKLOAD[0]])
    for big in WORKLOAD:
        table = t.table(big).counts
        for col in big:  # summed over the other column: the one-column table, the same from every table
            np.testing.assert_allclose(table.groupby(level=col, observed=True).sum().to_numpy(),
                                       t.table(col).counts.to_numpy(), rtol=1e-12, atol=1e-9)
    # a sub-table read from a table (marginal()) is the release's own sub-table, with its variance
    sub = t.table(("age", "sex")).marginal("sex")
    np.testing.assert_allclose(sub.counts.to_numpy(), t.table("sex").counts.to_numpy(), rtol=1e-12)
    assert sub.variance.iloc[0] == pytest.approx(t.table("sex").variance.iloc[0], rel=1e-12)


def test_the_estimates_are_the_cores_on_the_same_noise():
    frame = D
    with pdp.budget(rho=1.0):
        t = _release(frame, seed=5)
    sizes = [len(AGE_BINS) - 1, len(SEXES), len(STATES)]
    codes = [np.digitize(frame["age"], AGE_BINS) - 1, pd.Categorical(frame["sex"], SEXES).codes.astype(np.int64),
             pd.Categorical(frame["state"], STATES).codes.astype(np.int64)]
    work = make_workload(sizes, [(0, 1), (1, 2), (0, 2)])
    plan = plan_residuals(work, loss=zcdp(0.5))
    est = reconstruct(measure_marginals(closure_marginals(codes, work), plan, rng=np.random.default_rng(5)))
    for cols, attrs in zip(WORKLOAD, [(0, 1), (1, 2), (0, 2)]):
        np.testing.assert_array_equal(t.table(cols).counts.to_numpy(), est.marginal(attrs).ravel())
        assert t.table(cols).variance.iloc[0] == est.variance(attrs)
    assert t.total_variance() == plan.total_variance()


def _bad_calls():
    ok = dict(workload=WORKLOAD, **DOMAIN, rho=0.5)
    yield "workload a string", {**ok, "workload": "age"}
    yield "workload empty", {**ok, "workload": []}
    yield "a table not a tuple", {**ok, "workload": ["age"]}
    yield "an empty table", {**ok, "workload": [()]}
    yield "an unknown column", {**ok, "workload": [("age", "height")]}
    yield "a repeated column", {**ok, "workload": [("age", "age")]}
    yield "a repeated table", {**ok, "workload": [("age", "sex"), ("sex", "age")]}
    yield "no domain", {**ok, "categories": {"sex": SEXES}}
    yield "bins not a dict", {**ok, "bins": AGE_BINS}
    yield "a domain for another column", {**ok, "categories": {**DOMAIN["categories"], "pid": [1]}}
    yield "no loss", {**ok, "rho": None}
    yield "both losses", {**ok, "epsilon": 0.5}
    yield "bad loss", {**ok, "loss": "median"}
    yield "weights of the wrong length", {**ok, "weights": [1, 2]}
    yield "a negative weight", {**ok, "weights": [1, -1, 1]}
    yield "rng a seed", {**ok, "rng": 3}
    yield "unit without bound", {**ok, "privacy_unit": "pid"}
    yield "unit auto", {**ok, "privacy_unit": "pid", "max_rows": "auto"}
    yield "unit a released column", {**ok, "privacy_unit": "sex", "max_rows": 2}
    yield "a loss too small", {**ok, "rho": 1e-30}
    yield "too many cells", {**ok, "workload": [("age", "pid")], "bins": {"age": np.arange(2**13 + 1),
                                                                          "pid": np.arange(2**13 + 1)}}
    yield "over the budget", {**ok, "rho": 2.0}


@pytest.mark.parametrize("name, kwargs", list(_bad_calls()), ids=[n for n, _ in _bad_calls()])
def test_public_argument_errors_are_raised_before_any_charge(name, kwargs):
    with pdp.budget(rho=1.0) as b:
        with pytest.raises(pdp.PandasDPError):
            D.dp.marginals(**kwargs)
    assert b.spent == 0 and len(b.ledger) == 0


def test_a_table_outside_the_workload_and_series_dp_are_refused():
    with pdp.budget(rho=1.0):
        t = _release(D, workload=[("age", "sex"), ("state",)])
        with pytest.raises(pdp.ParameterError, match="not in the workload"):
            t.table(("sex", "state"))
        with pytest.raises(pdp.ParameterError, match="table"):
            t.table("height")
    assert not hasattr(D["age"].dp, "marginals")


@pytest.mark.parametrize("row", [{"pid": 999, "age": 120, "sex": "F", "state": "A"},        # outside the bins
                                 {"pid": 999, "age": np.nan, "sex": "F", "state": "A"},     # missing
                                 {"pid": 999, "age": "forty", "sex": "F", "state": "A"},    # a word for a number
                                 {"pid": 999, "age": 30, "sex": "X", "state": "A"}],        # an unknown label
                         ids=["out of range", "NaN", "text in a numeric column", "unknown label"])
def test_a_row_outside_the_domain_changes_nothing(row):
    neighbour = pd.concat([D.astype(object), pd.DataFrame([row]).astype(object)], ignore_index=True).infer_objects()
    with pdp.budget(rho=2.0) as b:
        a = _release(D)
        c = _release(neighbour)
    pd.testing.assert_frame_equal(a.to_frame(), c.to_frame(), check_exact=True)
    assert list(b.ledger["rho"]) == [0.5, 0.5]


def _jacobian_variance(t, columns, box):
    """Brute force: the table is linear in the noisy marginals; its variance for a box, from that map."""
    detail = t.detail
    plan = detail.plan
    attrs = [list(t.columns).index(c) for c in columns]
    noisy = [None if n is None else np.zeros(plan.workload.shape(a), dtype=np.int64)
             for a, n in zip(plan.residuals, plan.noises)]
    variances = plan.noise_variances()
    total = 0.0
    for k, base in enumerate(noisy):
        if base is None:
            continue
        for cell in range(base.size):
            unit = [None if x is None else x.copy() for x in noisy]
            unit[k].flat[cell] = 1
            answer = reconstruct(MarginalMeasurement(plan, tuple(unit))).marginal(attrs)[box].sum()
            total += answer ** 2 * variances[k]
    return total


def test_range_and_box_variances_are_exact():
    with pdp.budget(epsilon=1.0):
        t = _release(D, epsilon=1.0, workload=[("age", "sex"), ("age", "state")])
    ages = t.table("age")
    got = ages.range_query(18, 65)
    assert got.std_error ** 2 == pytest.approx(_jacobian_variance(t, ["age"], (slice(1, 3),)), rel=1e-9)
    frame = ages.range_query([(0, 18), (0, 100)])
    assert frame["std_error"].iloc[1] ** 2 == pytest.approx(_jacobian_variance(t, ["age"], (slice(0, 4),)),
                                                            rel=1e-9)
    # a cell's variance is the brute force's too, on a two-column table
    cell = t.table(("age", "state")).variance.iloc[0]
    assert cell == pytest.approx(_jacobian_variance(t, ["age", "state"], (slice(0, 1), slice(0, 1))), rel=1e-9)


def test_box_queries_on_two_numeric_columns_are_exact():
    frame = D.assign(income=np.arange(len(D)) * 10 % 1000)
    with pdp.budget(rho=1.0):
        t = frame.dp.marginals([("age", "income")], bins={"age": AGE_BINS, "income": [0, 250, 500, 1000]},
                               rho=1.0, rng=np.random.default_rng(0))
    answer = t.table(("age", "income")).range_query((18, 0), (100, 500))
    want = _jacobian_variance(t, ["age", "income"], (slice(1, 4), slice(0, 2)))
    assert answer.std_error ** 2 == pytest.approx(want, rel=1e-9)
    assert answer.estimate == pytest.approx(float(t.table(("age", "income")).counts.to_numpy()
                                                  .reshape(4, 3)[1:4, 0:2].sum()))


def test_the_result_reads_and_pickles():
    with pdp.budget(rho=1.0):
        t = _release(D)
    tidy = t.to_frame()
    assert list(tidy.columns) == ["table", "age", "sex", "state", "estimate", "variance", "std_error"]
    assert len(tidy) == 4 * 2 + 2 * 3 + 4 * 3
    plan = t.plan
    assert plan["measured"].any() and plan["loss_share"].sum() == pytest.approx(1.0)
    assert plan["share_of_total_variance"].sum() == pytest.approx(1.0)
    assert set(plan["marginal"]) == {(), ("age",), ("sex",), ("state",), *WORKLOAD}
    measured = plan[plan["measured"]]
    # zCDP: each measured marginal's sigma**2 = 1 / (2 rho_A), rho_A its part of rho = 0.5
    np.testing.assert_allclose(measured["noise_scale"] ** 2, 1 / (2 * measured["rho"]), rtol=1e-9)
    assert pickle.loads(pickle.dumps(t)) == t
    with pytest.raises(AttributeError):
        t.workload = ()  # type: ignore[misc]
    assert "MarginalTables" in t._repr_html_() and "age x sex" in repr(t)
    interval = t.table(("age", "sex")).confidence_interval()
    assert (interval["lower"] < t.table(("age", "sex")).counts).all()


def test_plot_draws_every_small_table_side_by_side():
    plt = pytest.importorskip("matplotlib.pyplot")
    with pdp.budget(epsilon=1.0):
        t = _release(D, epsilon=1.0, workload=[("age", "sex"), ("state",)])
    axes = t.plot()
    try:
        assert axes.shape == (1, 2) and [a.get_xlabel() for a in axes.ravel()] == ["sex", "state"]
        one = t.plot(columns="age")
        assert one.get_xlabel().startswith("age") and "ε = 1" in one.get_title()
    finally:
        plt.close("all")


def test_a_privacy_unit_keeps_at_most_max_rows_and_scales_the_noise():
    # Every unit has 5 rows; with max_rows=2 each keeps 2 (at random): the total is 2 per unit.
    frame = pd.DataFrame({"pid": np.repeat(np.arange(40), 5), "sex": np.tile(["F", "M", "F", "M", "F"], 40),
                          "state": np.repeat(["A", "B", "C", "A"], 50)})
    kw = dict(workload=[("sex", "state")], categories={"sex": SEXES, "state": STATES})
    with pdp.budget(rho=10**6):
        bounded = frame.dp.marginals(**kw, rho=10**5, privacy_unit="pid", max_rows=2, rng=np.random.default_rng(0))
        rows = frame.dp.marginals(**kw, rho=10**5, rng=np.random.default_rng(0))
    assert bounded.table("sex").counts.sum() == pytest.approx(80, abs=0.5)
    assert rows.table("sex").counts.sum() == pytest.approx(200, abs=0.5)
    # one unit moves every marginal by max_rows (L2 too): the same plan with k**2 times the variance
    for unit, row in zip(bounded.detail.plan.noises, rows.detail.plan.noises):
        assert (unit is None) == (row is None) and (unit is None or unit.sigma2 == 4 * row.sigma2)
    assert bounded.params["max_rows"] == 2


def test_a_whole_unit_more_gives_the_same_outcome():
    unit = pd.DataFrame({"pid": [10_000] * 4, "age": [5, 30, 50, 90], "sex": ["F", "M", "F", "M"],
                         "state": ["A", "B", "C", "A"]})

    def call(frame):
        return _release(frame, privacy_unit="pid", max_rows=3)

    assert_same_outcome(call, D, pd.concat([D, unit], ignore_index=True), budget={"rho": 10.0})


# ---------------------------------------------------------------------------------------------- assert_dp
SMALL = pd.DataFrame({"a": ["x", "y", "x"], "b": [0, 1, 1]})
SMALL_ROW = pd.concat([SMALL, pd.DataFrame({"a": ["y"], "b": [0]})], ignore_index=True)


def _small(**loss):
    return lambda frame, rng: frame.dp.marginals([("a",), ("b",)], categories={"a": ["x", "y"], "b": [0, 1]},
                                                 rng=rng, **loss)


def _estimates(result):
    detail = result.detail  # the tables' estimates, read from the core (to_frame builds labels: slower)
    return np.concatenate([detail.marginal((0,)), detail.marginal((1,))])


def test_assert_dp_under_epsilon():
    # Few runs (the default suite stays fast): a correct mechanism passes whatever the number of runs; the slow
    # test below has the power to catch a wrong one.
    report = assert_dp(_small(epsilon=1.0), SMALL, SMALL_ROW, epsilon=1.0, trials=30, rng=3, statistic=_estimates)
    assert report.charged_per_run == 1.0


def test_assert_dp_under_rho():
    delta = 1e-3
    epsilon = pdp.budget(rho=0.5).epsilon_delta(delta)
    assert_dp(_small(rho=0.5), SMALL, SMALL_ROW, epsilon=epsilon, delta=delta, trials=30, rng=4,
              statistic=_estimates, budget={"rho": 10**6})


@pytest.mark.slow
@pytest.mark.parametrize("loss", [dict(epsilon=1.0), dict(rho=0.5)], ids=["epsilon", "rho"])
def test_assert_dp_slow(loss):
    # Two overlapping tables (the closure's total is shared), a unit of two rows bounded by max_rows=2.
    frame = pd.DataFrame({"u": [0, 0, 1, 2], "a": ["x", "y", "x", "y"], "b": [0, 1, 1, 0]})
    neighbour = pd.concat([frame, pd.DataFrame({"u": [9, 9], "a": ["y", "y"], "b": [1, 1]})], ignore_index=True)

    def mech(df, rng):
        return df.dp.marginals([("a", "b"), ("b",)], categories={"a": ["x", "y"], "b": [0, 1]}, privacy_unit="u",
                               max_rows=2, rng=rng, **loss)

    if "rho" in loss:
        delta = 1e-3
        assert_dp(mech, frame, neighbour, epsilon=pdp.budget(**loss).epsilon_delta(delta), delta=delta,
                  trials=400, rng=5, statistic=_estimates, budget={"rho": 10**6})
    else:
        assert_dp(mech, frame, neighbour, epsilon=1.0, trials=400, rng=5, statistic=_estimates)
