"""The CLI's output tables: every release kind the command line offers carries estimate, variance, std_error.

The kinds are derived from the registry: every method of a ``[[release]]`` table
(:func:`pandas_dp.releases.registry.cli_keys`, which the spec reader takes its
methods from) and the ``by=`` form of every method that makes tables by
geography; each is run in-process through the CLI's own dispatch
(:func:`pandas_dp.cli.preflight.call_release`) and written by
:func:`pandas_dp.cli.spec.release_table`. The entries of
:data:`~pandas_dp.releases.registry.ENTRIES` they reach are recorded, so a
release kind added to the registry fails here until its CLI table is checked.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.cli.preflight import call_release
from pandas_dp.cli.spec import Release, release_table
from pandas_dp.errors import PandasDPError
from pandas_dp.privacy.loss import loss_from
from pandas_dp.releases.geography import GEOGRAPHY_METHODS
from pandas_dp.releases.registry import ENTRIES, Entry, cli_keys
from pandas_dp.results.aggregate import Aggregate

COUNTIES = [("A", "A-0"), ("A", "A-1"), ("B", "B-0")]
HIERARCHY = pd.DataFrame({"state": [s for s, _ in COUNTIES], "county": [c for _, c in COUNTIES]})
#: Entries the command line does not offer, and why (a new entry must be added here or reached by a CLI kind).
NOT_IN_CLI = {"range_query": "range queries are answered from a released histogram, not written as a table"}
#: Kinds whose table has no variance column: why, and the columns it has instead.
NO_VARIANCE = {"count_of_counts": ("its table is groups per size after a consistency step (matching, isotonic "
                                   "fits): there is no exact variance of a count of groups to write",
                                   ["level", "region", "size", "groups"]),
               "quantiles": ("a quantile's interval is read from the release's CDF bands, not from a variance of "
                             "the estimate", ["q", "estimate", "lower", "upper"])}


def _persons() -> pd.DataFrame:
    rng = np.random.default_rng(2)
    n = 120
    where = np.array(COUNTIES, dtype=object)[rng.integers(0, 3, n)]
    return pd.DataFrame({"pid": np.arange(n), "hh": np.arange(n) // 3, "age": rng.integers(0, 90, n),
                         "income": rng.uniform(0, 1000, n), "state": where[:, 0], "county": where[:, 1]})


def _kinds() -> dict[str, dict[str, Any]]:
    """``{kind: the [[release]] table's arguments}`` for every CLI method (and the ``by=`` forms)."""
    kinds: dict[str, dict[str, Any]] = {}
    for method in sorted(cli_keys()):
        if method == "count_of_counts":
            kinds[method] = dict(group="hh", location=["state", "county"], hierarchy=HIERARCHY, max_size=4)
        elif method == "unattributed":
            kinds[method] = dict(group="hh")
        elif method == "aggregate":  # one row per cell, value column and statistic (and region, with by=)
            kinds[method] = dict(columns="age", bins=[0, 30, 60, 90], aggs={"income": ["count", "sum", "mean"]},
                                 bounds={"income": [0, 1000]})
            if "by" in cli_keys()[method]:
                kinds[f"{method}:by"] = dict(kinds[method], by=["state", "county"], hierarchy=HIERARCHY)
        elif method == "quantiles":  # one row per q
            kinds[method] = dict(column="income", q=[0.25, 0.5], bounds=[0, 1000])
        elif method == "marginals":
            kinds[method] = dict(workload=[("age", "state"), ("state", "county")], bins={"age": [0, 30, 60, 90]},
                                 categories={"state": ["A", "B"], "county": ["A-0", "A-1", "B-0"]})
            kinds[f"{method}:ordered"] = dict(kinds[method], ordered={"age": "ranges"})
            if "by" in cli_keys()[method]:  # the table set of every region, a state total as a public fact
                kinds[f"{method}:by"] = dict(workload=[("age",)], bins={"age": [0, 30, 60, 90]},
                                             by=["state", "county"], hierarchy=HIERARCHY,
                                             public_totals={"state": {"A": 80, "B": 40}})
                kinds[f"{method}:ordered:by"] = dict(kinds[f"{method}:by"], ordered={"age": "ranges"})
        else:
            kinds[method] = dict(columns="age", bins=[0, 30, 60, 90])
            if method in GEOGRAPHY_METHODS:
                kinds[f"{method}:by"] = dict(columns="age", bins=[0, 30, 60, 90], by=["state", "county"],
                                             hierarchy=HIERARCHY)
    return kinds


def _release(kind: str, args: dict[str, Any], frame: pd.DataFrame) -> Any:
    r = Release(kind, kind.split(":")[0], loss_from(epsilon=1), dict(args))
    with pdp.budget(epsilon=1):
        try:
            return call_release(frame, r, np.random.default_rng(4))
        except PandasDPError:  # a method that needs two columns: the 2-D domain instead
            r.args = dict(columns=["age", "income"], bins=[3, 2], range=[[0, 90], [0, 1000]])
    with pdp.budget(epsilon=1):
        return call_release(frame, r, np.random.default_rng(4))


def _variance(result: Any) -> np.ndarray:
    """The variance of every estimate of ``result`` in the order of its table's rows."""
    if isinstance(result, Aggregate):  # cell by cell, each cell's statistics in the order of aggs
        errors = result.std_error()
        stats = [c for c in errors.columns if isinstance(c, tuple) and c[1] != ""]  # not level, region
        return errors.loc[:, stats].to_numpy(dtype=float).reshape(-1) ** 2
    return np.asarray(result.variance, dtype=float)


def test_every_cli_kind_writes_estimate_variance_and_std_error(monkeypatch):
    reached: list[str] = []
    call = Entry.call

    def recording(self: Entry, frame: Any, arguments: Any) -> Any:
        reached.append(self.name)
        return call(self, frame, arguments)

    monkeypatch.setattr(Entry, "call", recording)
    frame = _persons()
    for kind, args in _kinds().items():
        reached.clear()
        result = _release(kind, args, frame)
        table = release_table(result)
        (entry,) = set(reached)
        if entry in NO_VARIANCE:
            assert list(table.columns) == NO_VARIANCE[entry][1], kind
            NOT_IN_CLI.setdefault(entry, "")  # reached
            continue
        assert {"estimate", "variance", "std_error", "lower", "upper"} <= set(table.columns), (kind, table.columns)
        columns = list(table.columns)
        assert columns.index("estimate") < columns.index("variance") < columns.index("std_error"), kind
        # The exact variance of each estimate, row by row as the result holds it.
        np.testing.assert_array_equal(table["variance"].to_numpy(), _variance(result))
        np.testing.assert_allclose(table["std_error"].to_numpy() ** 2, table["variance"].to_numpy(), rtol=1e-12)
        NOT_IN_CLI.setdefault(entry, "")  # reached
    missing = set(ENTRIES) - set(NOT_IN_CLI)
    assert not missing, f"release kinds of the registry no CLI kind reaches: {missing}"


@pytest.mark.parametrize("weights", [None, [0, 1, 1]])
def test_a_geography_table_has_its_regions_exact_variance(weights):
    """Each row's variance is its region's GLS variance (one per region), the same as its level's Histogram's."""
    args = dict(columns="age", bins=[0, 30, 60, 90], by=["state", "county"], hierarchy=HIERARCHY)
    if weights is not None:
        args["level_weights"] = weights
    result = _release("identity:by", args, _persons())
    table = release_table(result)
    for level in result.levels[1:]:
        rows = table[table["level"] == level]
        for region in rows["region"].unique():
            histogram = result.histogram(level, region) if level != result.levels[0] else result.histogram(level)
            part = rows[rows["region"] == region]
            np.testing.assert_array_equal(part["variance"].to_numpy(), histogram.variance.to_numpy())
            np.testing.assert_array_equal(part["estimate"].to_numpy(), histogram.counts.to_numpy())


def test_a_table_set_by_geography_matches_its_public_totals_in_the_cli_table():
    """``public_totals = {state = {A = 80, B = 40}}`` in a spec: every state's table sums to its public total."""
    result = _release("marginals:by", _kinds()["marginals:by"], _persons())
    table = release_table(result)
    assert list(table.columns[:3]) == ["level", "region", "table"] and {"age_low", "age_high"} <= set(table.columns)
    states = table[table["level"] == "state"].groupby("region")["estimate"].sum()
    np.testing.assert_allclose(states.loc[["A", "B"]].to_numpy(), [80.0, 40.0], rtol=0, atol=1e-9)
    counties = table[table["level"] == "county"].groupby("region")["estimate"].sum()
    assert counties.loc[["A-0", "A-1"]].sum() == pytest.approx(80.0, abs=1e-9)


@pytest.mark.slow
def test_an_integer_table_set_by_geography_in_a_spec_writes_consistent_integers():
    """``integer = true`` with ``by`` in a spec: non-negative integers that match the public state totals
    exactly and add up across the geography, next to the unconstrained GLS numbers."""
    result = _release("marginals:by", dict(_kinds()["marginals:by"], integer=True), _persons())
    table = release_table(result)
    assert {"estimate", "unconstrained_estimate", "unconstrained_variance"} <= set(table.columns)
    assert table["estimate"].dtype.kind == "i" and (table["estimate"] >= 0).all()
    states = table[table["level"] == "state"].groupby("region")["estimate"].sum()
    assert states.loc[["A", "B"]].tolist() == [80, 40]
    counties = table[table["level"] == "county"].groupby("region")["estimate"].sum()
    assert counties.loc[["A-0", "A-1"]].sum() == 80 and counties.loc["B-0"] == 40
