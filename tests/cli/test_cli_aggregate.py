"""``method = "aggregate"`` in a release spec: statistics of value columns per cell (issue 42 item 4).

A spec's aggregate release is parsed (``aggs``, ``bounds``, ``resolution`` as TOML tables), checked
before any charge (the rehearsal on an empty table names a bad public input and its argument; the
header check covers every column it names, value columns included), run with the same noise as
the Python release for the same seed, and written as one tidy row per cell, value column and
statistic, next to its ledger charge and manifest entry; ``--resume`` keeps a charged release spent.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.data import load_persons
from _cli import ledger_entries, run, spec_folder

HEAD = """seed = 9
[budget]
epsilon = 1.0
ledger = "ledger.sqlite"
[input]
path = "persons.csv"
[output]
dir = "released"
"""
BY_CELL = """[[release]]
name = "income"
method = "aggregate"
columns = ["sex", "age"]
categories = {sex = ["F", "M"]}
bins = {age = [0, 18, 65, 120]}
aggs = {income = ["count", "sum", "mean"]}
bounds = {income = [0, 250000]}
resolution = {income = 100}
epsilon = 0.5
"""
NATIONAL = """[[release]]
name = "national"
method = "aggregate"
columns = []
aggs = {income = "mean", age = ["sum", "mean"]}
bounds = {income = [0, 250000], age = [0, 120]}
epsilon = 0.5
"""


@pytest.fixture(scope="module")
def persons(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("data") / "persons.csv"
    load_persons().to_csv(path, index=False)
    return path


def _folder(tmp_path: Path, persons: Path, releases: str) -> Path:
    return spec_folder(tmp_path, persons, HEAD + releases)


def test_an_aggregate_spec_writes_one_row_per_cell_value_column_and_statistic_as_the_python_release(
        tmp_path, persons):
    from pandas_dp.cli.spec import aggregate_table

    d = _folder(tmp_path, persons, BY_CELL + NATIONAL)
    done = run("release", str(d / "spec.toml"))
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(d / "released" / "income.csv")
    assert list(table.columns) == ["sex", "age_low", "age_high", "value_column", "statistic", "estimate", "variance",
                                   "std_error", "lower", "upper"]
    assert len(table) == 2 * 3 * 3 and table["statistic"].tolist()[:3] == ["count", "sum", "mean"]
    assert table[["sex", "age_low", "age_high"]].drop_duplicates().values.tolist() == [
        ["F", 0, 18], ["F", 18, 65], ["F", 65, 120], ["M", 0, 18], ["M", 18, 65], ["M", 65, 120]]
    national = pd.read_csv(d / "released" / "national.csv")
    assert list(national.columns) == ["value_column", "statistic", "estimate", "variance", "std_error", "lower",
                                      "upper"]
    assert national[["value_column", "statistic"]].values.tolist() == [["income", "mean"], ["age", "sum"],
                                                                        ["age", "mean"]]
    # The same numbers as the Python release of the same rows with the spec's seed (one generator, in order).
    rows = pd.read_csv(d / "persons.csv")
    rng = np.random.default_rng(9)
    with pdp.budget(epsilon=1.0):
        by_cell = rows.dp.aggregate(["sex", "age"], {"income": ["count", "sum", "mean"]},
                                    categories={"sex": ["F", "M"]}, bins={"age": [0, 18, 65, 120]},
                                    bounds={"income": (0, 250000)}, resolution={"income": 100}, epsilon=0.5, rng=rng)
        whole = rows.dp.aggregate([], {"income": "mean", "age": ["sum", "mean"]},
                                  bounds={"income": (0, 250000), "age": (0, 120)}, epsilon=0.5, rng=rng)
    for written, result in ((table, by_cell), (national, whole)):
        expected = aggregate_table(result)
        pd.testing.assert_frame_equal(written, expected, check_dtype=False, rtol=1e-12)
        np.testing.assert_array_equal(written["estimate"].to_numpy()[written["statistic"].to_numpy() != "mean"],
                                      expected["estimate"].to_numpy()[expected["statistic"].to_numpy() != "mean"])
    # 95% intervals by default, around every estimate that has one (a mean of a cell too small is flagged: NaN).
    shown = table.dropna(subset=["estimate"])
    assert ((shown["lower"] <= shown["estimate"]) & (shown["estimate"] <= shown["upper"])).all()
    np.testing.assert_allclose(table["std_error"] ** 2, table["variance"], rtol=1e-12)
    # One charge per release, each 'ok', named in the manifest with the release's public record.
    manifest = json.loads((d / "released" / "manifest.json").read_text())
    assert [(r["name"], r["method"], r["epsilon"]) for r in manifest["releases"]] == [
        ("income", "aggregate", 0.5), ("national", "aggregate", 0.5)]
    assert manifest["releases"][0]["parameters"]["values"]["income"]["bounds"] == [0.0, 250000.0]
    assert manifest["releases"][0]["spec"]["aggs"] == {"income": ["count", "sum", "mean"]}
    charges = [e for e in ledger_entries(d / "ledger.sqlite") if e[1] == "charge"]
    assert [(e[0], e[3]) for e in charges] == [(r["ledger_id"], "ok") for r in manifest["releases"]]
    assert manifest["complete"] is True and manifest["budget"]["spent"] == 1.0


def test_bad_public_inputs_of_an_aggregate_spec_are_refused_before_any_charge_naming_the_argument(tmp_path, persons):
    releases = (BY_CELL.replace("bounds = {income = [0, 250000]}", "bounds = {income = [250000, 0]}")
                + NATIONAL.replace('aggs = {income = "mean", age = ["sum", "mean"]}',
                                   'aggs = {income = "max", age = ["sum"]}')
                + BY_CELL.replace('name = "income"', 'name = "steps"').replace("resolution = {income = 100}",
                                                                                "resolution = -1")
                + BY_CELL.replace('name = "income"', 'name = "unbounded"').replace(
                    "bounds = {income = [0, 250000]}\n", ""))
    d = _folder(tmp_path, persons, releases.replace("epsilon = 0.5", "epsilon = 0.25"))
    for args in (("release", "--check"), ("release",)):
        done = run(*args, str(d / "spec.toml"))
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        err = done.stderr
        assert "(4 problem(s)); only the input's header (its column names) was read, and nothing was charged" in err
        assert "[[release]] 'income': ParameterError: bounds['income'] must be public clipping bounds (low, high)" \
            in err and "Got [250000, 0]" in err
        assert "[[release]] 'national': ParameterError: aggs['income']: unknown statistic 'max'" in err
        assert "[[release]] 'steps': ParameterError: resolution['income'] must be a positive number" in err
        assert "[[release]] 'unbounded': missing 'bounds' for method 'aggregate'" in err
    assert ledger_entries(d / "ledger.sqlite") == [] and not (d / "released").exists()


def test_a_value_column_the_input_lacks_is_refused_before_any_charge(tmp_path, persons):
    d = _folder(tmp_path, persons, BY_CELL.replace("aggs = {income", "aggs = {incme").replace(
        "bounds = {income", "bounds = {incme").replace("resolution = {income", "resolution = {incme"))
    done = run("release", str(d / "spec.toml"))
    assert done.returncode == 2
    assert "[[release]] 'income': aggs ['incme'] not in the input" in done.stderr
    assert "Spelling: 'incme' (did you mean 'income'?)" in done.stderr and "Fix 'aggs' in the spec" in done.stderr
    assert ledger_entries(d / "ledger.sqlite") == []


def test_a_stray_token_in_a_value_column_is_one_missing_value(tmp_path):
    """A value column is read as numbers: a token in one row is that row's missing value, and every other row's
    value still counts (as text, the whole column would have lost its values)."""
    from pandas_dp.cli.preflight import call_release, read_input
    from pandas_dp.cli.spec import load_spec

    rows = load_persons().head(400)
    tables = []
    for odd in ("", "n/a"):
        folder = tmp_path / (odd.replace("/", "") or "clean")
        folder.mkdir()
        text = rows.assign(income=rows["income"].astype(object)).copy()
        text.loc[text.index[7], "income"] = odd
        text.to_csv(folder / "persons.csv", index=False)
        (folder / "spec.toml").write_text(HEAD + BY_CELL)
        spec = load_spec(folder / "spec.toml")
        frame = read_input(spec)
        assert frame["income"].dtype.kind == "f"
        with pdp.budget(epsilon=1.0):
            tables.append(call_release(frame, spec.releases[0], np.random.default_rng(1)).to_frame())
    pd.testing.assert_frame_equal(tables[0], tables[1], check_exact=True)


def test_resume_keeps_a_charged_aggregate_spent_and_runs_the_rest(tmp_path, persons):
    from pandas_dp.accounting.budget import Budget
    from pandas_dp.cli.preflight import call_release, read_input
    from pandas_dp.cli.run import _reserve, run_release
    from pandas_dp.cli.spec import load_spec

    d = _folder(tmp_path, persons, BY_CELL + NATIONAL)
    spec = load_spec(d / "spec.toml")
    _, plan = _reserve(spec)
    plan.__enter__()
    try:  # the first release is charged and the process dies before its table is recorded
        call_release(read_input(spec), spec.releases[0], np.random.default_rng(0))
    finally:
        Budget.__exit__(plan, None, None, None)
    assert run_release(d / "spec.toml", resume=True) == 0
    manifest = json.loads((d / "released" / "manifest.json").read_text())
    assert [r["name"] for r in manifest["releases"]] == ["national"]
    assert [r["name"] for r in manifest["lost"]] == ["income"] and manifest["budget"]["spent"] == 1.0
    assert [(e[1], e[3]) for e in ledger_entries(d / "ledger.sqlite") if e[1] == "charge"] == [
        ("charge", "failed"), ("charge", "ok")]
    assert sorted(p.name for p in (d / "released").iterdir()) == ["manifest.json", "national.csv"]


def test_a_date_value_column_is_read_as_dates_and_written_as_text(tmp_path):
    """Bounds of two TOML dates make a date value column: read as text (never coerced to numbers), one token
    that is no date is that row's missing value, and the mean date is written as a date; the numbers of the
    same release keep their variance, the date statistic has none a reader could parse."""
    from pandas_dp.cli.preflight import read_input
    from pandas_dp.cli.spec import aggregate_table, load_spec

    rng = np.random.default_rng(3)
    born = pd.Timestamp("1950-01-01") + pd.to_timedelta(rng.integers(0, 20000, 300), unit="D")
    rows = pd.DataFrame({"sex": rng.choice(["F", "M"], 300), "born": born.strftime("%Y-%m-%d"),
                         "hours": rng.uniform(0, 60, 300).round(1)})
    rows.loc[5, "born"] = "soon"
    rows.to_csv(tmp_path / "persons.csv", index=False)
    (tmp_path / "spec.toml").write_text(HEAD + """[[release]]
name = "born"
method = "aggregate"
columns = "sex"
categories = ["F", "M"]
aggs = {born = ["count", "mean"], hours = "mean"}
bounds = {born = [1940-01-01, 2010-01-01], hours = [0, 80]}
resolution = {born = "1D", hours = 0.1}
epsilon = 1.0
""")
    pdp.Ledger.create(tmp_path / "ledger.sqlite")
    assert read_input(load_spec(tmp_path / "spec.toml"))["born"].tolist() == rows["born"].tolist()
    done = run("release", str(tmp_path / "spec.toml"))
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(tmp_path / "released" / "born.csv")
    mean = table[(table["value_column"] == "born") & (table["statistic"] == "mean")]
    assert pd.to_datetime(mean["estimate"]).between(pd.Timestamp("1940-01-01"), pd.Timestamp("2010-01-01")).all()
    assert mean["variance"].isna().all() and pd.to_timedelta(mean["std_error"]).notna().all()
    hours = table[table["value_column"] == "hours"]
    np.testing.assert_allclose(hours["std_error"].astype(float) ** 2, hours["variance"], rtol=1e-12)
    with pdp.budget(epsilon=1.0):
        python = pd.read_csv(tmp_path / "persons.csv").dp.aggregate(
            "sex", {"born": ["count", "mean"], "hours": "mean"}, categories=["F", "M"],
            bounds={"born": (pd.Timestamp("1940-01-01"), pd.Timestamp("2010-01-01")), "hours": (0, 80)},
            resolution={"born": "1D", "hours": 0.1}, epsilon=1.0, rng=np.random.default_rng(9))
    expected = aggregate_table(python)
    assert table["estimate"].astype(str).tolist() == expected["estimate"].astype(str).tolist()


def test_an_aggregate_by_geography_in_a_spec_writes_level_and_region_first(tmp_path):
    """``by`` and a public ``hierarchy`` file: one row per region, cell, value column and statistic."""
    rng = np.random.default_rng(4)
    counties = [("A", "A-0"), ("A", "A-1"), ("B", "B-0")]
    where = np.array(counties, dtype=object)[rng.integers(0, 3, 400)]
    pd.DataFrame({"state": where[:, 0], "county": where[:, 1], "age": rng.integers(0, 90, 400),
                  "income": rng.uniform(0, 1000, 400)}).to_csv(tmp_path / "persons.csv", index=False)
    pd.DataFrame(counties, columns=["state", "county"]).to_csv(tmp_path / "regions.csv", index=False)
    (tmp_path / "spec.toml").write_text(HEAD + """[[release]]
name = "by_region"
method = "aggregate"
columns = "age"
bins = [0, 45, 90]
aggs = {income = ["count", "mean"]}
bounds = {income = [0, 1000]}
by = ["state", "county"]
hierarchy = "regions.csv"
epsilon = 1.0
""")
    pdp.Ledger.create(tmp_path / "ledger.sqlite")
    done = run("release", str(tmp_path / "spec.toml"))
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(tmp_path / "released" / "by_region.csv")
    assert list(table.columns) == ["level", "region", "age_low", "age_high", "value_column", "statistic", "estimate",
                                   "variance", "std_error", "lower", "upper"]
    assert len(table) == (1 + 2 + 3) * 2 * 2 and table["level"].unique().tolist() == ["national", "state", "county"]


def test_medians_and_quantiles_in_a_spec_are_toml_arrays(tmp_path, persons):
    """``["quantile", q]`` is TOML's form of Python's ``("quantile", q)``: alone, or in a list of statistics."""
    d = _folder(tmp_path, persons, BY_CELL.replace('aggs = {income = ["count", "sum", "mean"]}',
                                                   'aggs = {income = ["median", ["quantile", 0.9]], '
                                                   'age = ["quantile", 0.25]}').replace(
        "bounds = {income = [0, 250000]}", "bounds = {income = [0, 250000], age = [0, 120]}").replace(
        'columns = ["sex", "age"]', 'columns = "sex"').replace("bins = {age = [0, 18, 65, 120]}\n", ""))
    done = run("release", str(d / "spec.toml"))
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(d / "released" / "income.csv")
    assert table[["value_column", "statistic"]].values.tolist()[:3] == [
        ["income", "median"], ["income", "quantile(0.9)"], ["age", "quantile(0.25)"]]
    assert ((table["lower"] <= table["estimate"]) & (table["estimate"] <= table["upper"])).all()
    (tmp_path / "bad").mkdir()
    bad = _folder(tmp_path / "bad", persons, NATIONAL.replace('income = "mean"', 'income = ["quantile", 1.5]'))
    refused = run("release", str(bad / "spec.toml"))
    assert refused.returncode == 2 and "[[release]] 'national': ParameterError: aggs['income']: a quantile is" \
        in refused.stderr and ledger_entries(bad / "ledger.sqlite") == []
