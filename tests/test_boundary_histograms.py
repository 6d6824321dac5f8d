"""The boundary rule for histogram releases (issue 11): private rows never steer an error, a warning or a domain.

Neighbour pairs D, D' = D + one adversarial row, for every histogram method (from the registry),
hierarchical histograms and range queries, on pandas and on Dask: the same outcome class, the same
index, the same warnings (none), the same budget charged; with no budget both raise
NoActiveBudgetError; and an out-of-domain row leaves a seeded release byte-identical.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.errors import DataSourceError


def test_a_failing_dask_graph_never_quotes_its_error():
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")

    def part(i: int) -> pd.DataFrame:
        if i == 1:
            raise ValueError("could not convert string to float: 'patient-4711'")
        return pd.DataFrame({"x": np.arange(3, dtype=np.int64)})

    meta = pd.DataFrame({"x": np.array([], dtype=np.int64)})
    frame = dd.from_delayed([dask.delayed(part)(i) for i in range(3)], meta=meta)
    with dask.config.set(scheduler="sync"), pdp.budget(epsilon=1.0) as b:
        with pytest.raises(DataSourceError) as info, warnings.catch_warnings():
            warnings.simplefilter("error")
            frame.dp.histogram("x", bins=4, range=(0, 4), epsilon=0.5)
    assert "4711" not in str(info.value) and info.value.__cause__ is None and info.value.__context__ is None
    assert b.spent == 0


# ------------------------------------------------------------------ the neighbour-outcome suite
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pandas_dp.releases.registry import histogram_methods  # noqa: E402
from test_conformance import two_dimensional_only  # noqa: E402
from pandas_dp.testing import adversarial_values, assert_same_outcome, with_row  # noqa: E402
from _slow import FULL, QUICK_TRIALS  # noqa: E402

STATES = ["CA", "NY", "TX"]
BASE = pd.DataFrame({"age": np.arange(40, dtype=np.int64) % 90, "income": np.linspace(0, 9e4, 40),
                     "state": [STATES[i % 3] for i in range(40)]})


def _histograms():
    """Every registered histogram method on a numeric column, plus label, 2-D, tree and range releases."""
    calls = {f"histogram {m}": (lambda m: lambda f: f.dp.histogram(
        "age", bins=16, range=(0, 96), epsilon=0.5, method=m, rng=np.random.default_rng(1)))(m)
        for m in histogram_methods() if not two_dimensional_only(m, {})}
    calls.update({f"histogram {m}": (lambda m: lambda f: f.dp.histogram(
        ["age", "state"], bins={"age": 8}, range={"age": (0, 96)}, categories={"state": STATES}, epsilon=0.5,
        method=m, rng=np.random.default_rng(1)))(m) for m in histogram_methods() if two_dimensional_only(m, {})})
    calls["float edges"] = lambda f: f.dp.histogram("income", bins=[0, 1e4, 5e4, 1e5], epsilon=0.5,
                                                    rng=np.random.default_rng(1))
    calls["categories"] = lambda f: f.dp.histogram("state", categories=STATES, epsilon=0.5,
                                                   rng=np.random.default_rng(1))
    calls["2-D"] = lambda f: f.dp.histogram(["age", "state"], bins={"age": 8}, range={"age": (0, 96)},
                                            categories={"state": STATES}, epsilon=0.5, rng=np.random.default_rng(1))
    # An other cell: a value outside the list is a present value (it counts there), never a new cell.
    calls["2-D other"] = lambda f: f.dp.histogram(["age", "state"], bins={"age": 8}, range={"age": (0, 96)},
                                                  categories={"state": STATES[:2]}, other="Other", epsilon=0.5,
                                                  rng=np.random.default_rng(1))
    calls["hierarchical integer"] = lambda f: f.dp.hierarchical_histogram(
        "age", bins=16, range=(0, 96), epsilon=0.5, integer=True, rng=np.random.default_rng(1))
    calls["range_query"] = lambda f: f.dp.range_query("age", [(0, 48), (48, 96)], bins=16, range=(0, 96),
                                                      epsilon=0.5, rng=np.random.default_rng(1))
    calls["series histogram"] = lambda f: f["age"].dp.histogram(bins=16, range=(0, 96), epsilon=0.5,
                                                                rng=np.random.default_rng(1))
    return calls


CALLS = _histograms()
#: Calls whose Dask variant runs with --runslow only (about 1 s an example).
SLOW_ON_DASK = {"2-D other"}
ENGINES = {"pandas": lambda f: f}


def _dask_engine():
    dd = pytest.importorskip("dask.dataframe")
    return lambda f: dd.from_pandas(f, npartitions=2)


@pytest.mark.parametrize("engine", ["pandas", "dask"])
@pytest.mark.parametrize("name", sorted(CALLS))
@settings(max_examples=12 if FULL else 5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=adversarial_values(known=STATES), column=st.sampled_from(["age", "income", "state"]))
def test_an_odd_private_row_changes_nothing_observable(request, engine, name, value, column):
    if engine == "dask" and name in SLOW_ON_DASK and not request.config.getoption("--runslow"):
        pytest.skip("slow on Dask: pass --runslow (tests/releases/test_other_bucket.py runs other= on Dask by default)")
    dask = pytest.importorskip("dask") if engine == "dask" else None
    to_engine = ENGINES["pandas"] if engine == "pandas" else _dask_engine()
    call = CALLS[name]
    d_prime = with_row(BASE, {column: value})
    context = dask.config.set(scheduler="sync") if dask else _nothing()
    with context:
        if dask and not _computes(to_engine(d_prime)):
            # Dask itself cannot compute D' (e.g. convert-string meets bytes): no release of such a frame
            # exists; it is refused as DataSourceError, quoting nothing, charging nothing.
            with pdp.budget(epsilon=1.0) as b:
                with pytest.raises(DataSourceError) as info:
                    call(to_engine(d_prime))
            assert b.spent == 0 and repr(value) not in str(info.value)
            return
        # Same outcome class, index, warnings (none) and charge, on D and D'.
        a, b = assert_same_outcome(call, to_engine(BASE), to_engine(d_prime))
        assert a.kind == "returned" and not a.warnings, a.describe(full=True)
        # No budget: both refuse the same way.
        assert_same_outcome(call, to_engine(BASE), to_engine(d_prime), budget=None)


def _computes(frame) -> bool:
    try:
        frame.compute()
    except Exception:  # noqa: BLE001 - the user's own graph failing, whatever the reason
        return False
    return True


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("name", sorted(CALLS))
def test_an_out_of_domain_row_leaves_a_seeded_release_byte_identical(name):
    odd = [{"age": "n/a"}, {"age": [1, 2]}, {"age": 1e308}, {"age": -np.inf}, {"age": pd.Timestamp("2020-01-01")},
           {"state": "rare-disease-X"}, {"state": {"a": 1}}, {"income": "abc"}]
    call = CALLS[name]
    with pdp.budget(epsilon=100.0):
        ref = call(BASE)
        for row in odd:
            column, value = next(iter(row.items()))
            reads = {"float edges": {"income"}, "categories": {"state"}, "2-D": {"age", "state"},
                     "2-D other": {"age"}}.get(name, {"age"})  # with other=, no state is out of its domain
            if column not in reads:  # the row's other columns are valid: it would be a real extra person
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                got = call(with_row(BASE, row))
            left, right = (x.to_frame() if hasattr(x, "to_frame") else x for x in (ref, got))
            pd.testing.assert_frame_equal(left, right)


def test_a_categorical_built_from_the_data_is_not_a_domain():
    # astype("category") takes its categories from the values: D' would add a label to the index.
    d = BASE.assign(state=BASE["state"].astype("category"))
    d_prime = with_row(BASE, {"state": "rare-disease-X"}).assign(
        state=lambda f: f["state"].astype("category"))
    for frame in (d, d_prime):
        with pdp.budget(epsilon=1.0) as b:
            with pytest.raises(pdp.DomainError, match="categories="):
                frame.dp.histogram("state", epsilon=0.5)
        assert b.spent == 0
    with pdp.budget(epsilon=1.0):
        a = d.dp.histogram("state", categories=STATES, epsilon=0.5, rng=np.random.default_rng(0))
        c = d_prime.dp.histogram("state", categories=STATES, epsilon=0.5, rng=np.random.default_rng(0))
    pd.testing.assert_series_equal(a.counts, c.counts)


def test_assert_dp_on_an_adversarial_neighbour():
    from pandas_dp.testing import assert_dp

    d_prime = with_row(BASE, {"age": "n/a"})            # out of domain: the releases are identical in law
    report = assert_dp(lambda f, rng: f.dp.histogram("age", bins=16, range=(0, 96), epsilon=1.0, rng=rng),
                       BASE, d_prime, epsilon=1.0, trials=QUICK_TRIALS, rng=3)
    assert report.passed and report.charged_per_run == 1.0
    d_in = with_row(BASE, {"age": 7})                   # a valid extra person: one cell moves by one
    report = assert_dp(lambda f, rng: f.dp.hierarchical_histogram("age", bins=16, range=(0, 96), epsilon=1.0,
                                                                  branching=2, rng=rng),
                       BASE, d_in, epsilon=1.0, trials=QUICK_TRIALS, rng=4)
    assert report.passed


@pytest.mark.parametrize("extra", [[], ["junk"], [0.5], [2**64], [None]], ids=["none", "token", "float", "huge", "None"])
@pytest.mark.parametrize("bins,rng", [(3, (2**60, 2**60 + 3072)), (2, (0, 2**54)),
                                      ([2**60, 2**60 + 1024, 2**60 + 2048], None)])
def test_an_integer_beyond_2_53_bins_alike_whatever_the_other_rows(extra, bins, rng):
    # Integers above 2**53 are not all floats: a stray token, a float or a huge integer makes pandas give
    # the column another dtype (object, float64). The bin of every other row must not change with it:
    # each value is binned by its own value alone (here by its float64 image on float edges, in every path).
    from pandas_dp.domain.grid import make_grid
    from pandas_dp.engines.pandas.counts import bin_counts

    values = [2**60 + 1000, 2**60 + 1023, 2**60 + 1025, 2**60 + 2000, 2**60 - 100, 2**53 + 1, 2**62]
    kw = dict(bins=bins) if rng is None else dict(bins=bins, range=rng)
    ints = pd.DataFrame({"x": np.array(values, dtype=np.int64)})
    grid = make_grid(ints, ["x"], **kw)
    reference = bin_counts(ints, grid).reshape(-1)
    mixed = pd.DataFrame({"x": pd.Series(values + extra, dtype=object)})
    alone = pd.DataFrame({"x": pd.Series(extra, dtype=object)})
    extra_counts = bin_counts(alone, grid).reshape(-1) if extra else 0
    np.testing.assert_array_equal(bin_counts(mixed, grid).reshape(-1) - extra_counts, reference)
