"""``other=``: one more cell, last, counting every present value outside a public list of categories.

References are brute force in pandas (values outside the list summed into the other cell, missing
values dropped). Releases run at a huge epsilon with a seeded generator where exact counts are
compared: the noise is then zero with overwhelming probability (discrete Laplace at epsilon = 1e6
is 0 except with probability ~2 e^-1e6), so the released counts are the exact ones.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pandas_dp as pdp
from pandas_dp.domain.categories import category_dimension
from pandas_dp.domain.grid import make_grid

EXACT = 1e6  # an epsilon at which the noise is 0 (see the module notes)
CATS = ["a", "b", "c"]
#: Values of every kind a private column may hold: listed labels, unknown labels, other types, missing.
VALUES = ["a", "b", "c", "zz", "Other", 7, 2.5, [1], None, float("nan"), pd.NA, pd.NaT, b"x"]


def _release(frame: pd.DataFrame, *args, seed: int = 0, **kwargs):
    with pdp.budget(epsilon=2 * EXACT) as b:
        out = frame.dp.histogram(*args, epsilon=EXACT, rng=np.random.default_rng(seed), **kwargs)
    return out, b


def _reference(values: pd.Series, cats: list, other: str) -> pd.Series:
    """Brute force: count each listed label; every other present value in the other cell; missing dropped."""
    present = [v for v in values if not (np.ndim(v) == 0 and pd.isna(v))]
    listed = [sum(1 for v in present if isinstance(v, str) and v == c) for c in cats]
    return pd.Series(listed + [len(present) - sum(listed)], index=[*cats, other])


def test_counts_equal_the_brute_force_reference_and_the_other_cell_is_last():
    rng = np.random.default_rng(1)
    values = pd.Series([VALUES[i] for i in rng.integers(0, len(VALUES), 400)], dtype=object)
    h, _ = _release(values.to_frame("p"), "p", categories=CATS, other="Other")
    assert list(h.counts.index) == [*CATS, "Other"]
    expected = _reference(values, CATS, "Other")
    assert h.counts.to_numpy().tolist() == expected.to_numpy().tolist()
    assert expected["Other"] > 0 and expected.sum() < len(values)  # both kinds of row occur


def test_the_other_cell_is_there_with_no_row_outside_the_list():
    frame = pd.DataFrame({"p": ["a", "b", "a", None]})
    h, _ = _release(frame, "p", categories=CATS, other="Other")
    assert h.counts.to_dict() == {"a": 2, "b": 1, "c": 0, "Other": 0}
    assert h.domain.shape == (4,)


def test_typed_and_categorical_columns_agree_with_object_columns():
    raw = ["a", "q", None, "c", "q", "b"]
    expected = [1, 1, 1, 2]
    for column in (pd.Series(raw, dtype=object), pd.Series(raw, dtype="string"),
                   pd.Series(pd.Categorical(raw)), pd.Series(pd.Categorical(raw, categories=["a", "b", "c", "Other", "q"]))):
        h, _ = _release(column.to_frame("p"), "p", categories=CATS, other="Other")
        assert h.counts.tolist() == expected, column.dtype
    ints = pd.DataFrame({"n": np.array([1, 2, 3, 4, 99, -5], dtype=np.int64)})
    h, _ = _release(ints, "n", categories=[1, 2, 3, 4], other=0)  # consecutive labels: no arithmetic shortcut
    assert h.counts.tolist() == [1, 1, 1, 1, 2]


def test_a_row_with_an_unseen_label_changes_only_the_other_cell():
    base = pd.DataFrame({"p": ["a", "b", "b", "zz", None, "c"]})
    grown = pd.concat([base, pd.DataFrame({"p": ["never-seen"]})], ignore_index=True)
    odd = pd.concat([base, pd.DataFrame({"p": [[1, 2]]})], ignore_index=True)  # unhashable: a present value
    missing = pd.concat([base, pd.DataFrame({"p": [None]})], ignore_index=True)
    results = {}
    for name, frame in (("base", base), ("grown", grown), ("odd", odd), ("missing", missing)):
        with pdp.budget(epsilon=2 * EXACT) as b:
            h = frame.dp.histogram("p", categories=CATS, other="Other", epsilon=EXACT, rng=np.random.default_rng(0))
        results[name] = (h.counts.to_numpy(), list(h.counts.index), b.spent)
    diff = results["grown"][0] - results["base"][0]
    assert diff.tolist() == [0, 0, 0, 1]
    assert (results["odd"][0] - results["base"][0]).tolist() == [0, 0, 0, 1]
    assert (results["missing"][0] == results["base"][0]).all()  # a missing value is dropped, not "other"
    assert len({tuple(r[1]) for r in results.values()}) == 1  # the cells are public: the same in every frame
    assert len({r[2] for r in results.values()}) == 1  # the same charge


def test_missing_values_are_counted_only_under_a_label_they_are_given():
    """Issue 41.12: there is no ``dropna=`` (a ParameterError naming the alternative, before any charge); the
    documented alternative, a listed label for missing values, counts them in a cell of their own."""
    rng = np.random.default_rng(3)
    values = pd.Series([VALUES[i] for i in rng.integers(0, len(VALUES), 300)], dtype=object)
    with pdp.budget(epsilon=1) as b:
        with pytest.raises(pdp.ParameterError, match=r"takes no dropna=.*fillna\('missing'\)"):
            values.to_frame("p").dp.histogram("p", categories=CATS, other="Other", dropna=False, epsilon=1)
    assert b.spent == 0
    missing = values.map(lambda v: np.ndim(v) == 0 and pd.isna(v))
    filled = values.where(~missing, "missing").to_frame("p")
    h, _ = _release(filled, "p", categories=[*CATS, "missing"], other="Other")
    expected = _reference(values, CATS, "Other")
    assert list(h.counts.index) == [*CATS, "missing", "Other"]
    assert h.counts.tolist() == [*expected[CATS], int(missing.sum()), expected["Other"]]
    assert int(missing.sum()) > 0 and h.counts.sum() == len(values)  # every row counted once


def test_neighbours_raise_nothing_and_charge_the_same_under_noise():
    base = pd.DataFrame({"p": ["a", "b", "zz"], "q": ["x", "y", "x"]})
    seen = set()
    for extra in ("a", "never", 3.5, None, [1]):
        frame = pd.concat([base, pd.DataFrame({"p": [extra], "q": ["x"]})], ignore_index=True)
        with pdp.budget(epsilon=1.0) as b:
            h = frame.dp.histogram(["p", "q"], categories={"p": CATS, "q": ["x", "y"]}, other="Other",
                                   epsilon=0.5, rng=np.random.default_rng(3))
        seen.add((tuple(h.counts.index), b.spent, h.params["scale"] if "scale" in h.params else None))
    assert len(seen) == 1


def test_two_columns_a_string_applies_to_every_label_column_and_a_dict_picks():
    frame = pd.DataFrame({"p": ["a", "zz", "b", None], "s": ["F", "M", "X", "F"], "age": [5, 15, 25, 95]})
    h, _ = _release(frame, ["p", "s"], categories={"p": CATS, "s": ["F", "M"]}, other="Other")
    assert h.domain.shape == (4, 3)
    assert h.counts.loc[("Other", "M")] == 1 and h.counts.loc[("b", "Other")] == 1 and h.counts.sum() == 3
    picked, _ = _release(frame, ["p", "s"], categories={"p": CATS, "s": ["F", "M"]}, other={"s": "?"})
    assert picked.domain.shape == (3, 3) and picked.counts.loc[("b", "?")] == 1 and picked.counts.sum() == 2
    mixed, _ = _release(frame, ["p", "age"], categories={"p": CATS}, bins={"age": [0, 10, 20, 30]}, other="O")
    assert mixed.domain.shape == (4, 3)  # the binned column gets no other cell: 95 is out of domain
    assert mixed.counts.loc[("O", pd.Interval(10, 20, closed="left"))] == 1 and mixed.counts.sum() == 3


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(categories=CATS, other="a"), "already one of its categories"),
    (dict(categories=["x", 1], other=1.0), "already one of its categories"),
    (dict(bins=[0, 1, 2], other="Other"), "needs a public categories"),
    (dict(categories=CATS, other=["Other"]), "one label"),
    (dict(categories=CATS, other=float("nan")), "not missing"),
    (dict(categories=CATS, other=True), "must be the label"),
    (dict(categories=CATS, other={"nope": "Other"}), "not among the released columns"),
])
def test_public_errors_name_other_and_charge_nothing(kwargs, fragment):
    frame = pd.DataFrame({"p": ["a", "b"]})
    with pdp.budget(epsilon=1.0) as b:
        with pytest.raises(pdp.ParameterError, match=fragment) as err:
            frame.dp.histogram("p", epsilon=0.5, **kwargs)
        assert b.spent == 0
    assert "other" in str(err.value)


def test_a_dict_naming_a_binned_column_is_refused():
    frame = pd.DataFrame({"p": ["a"], "age": [3]})
    with pdp.budget(epsilon=1.0) as b:
        with pytest.raises(pdp.ParameterError, match="have bins, not categories"):
            frame.dp.histogram(["p", "age"], categories={"p": CATS}, bins={"age": [0, 10]}, other={"age": "O"},
                               epsilon=0.5)
        assert b.spent == 0


labels = st.one_of(st.text(max_size=3), st.integers(-3, 3), st.floats(allow_nan=True), st.none(), st.booleans(),
                   st.lists(st.integers(), max_size=1), st.sampled_from([pd.NA, pd.NaT, b"a", pd.Timestamp(0)]))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cats=st.lists(st.one_of(st.text(max_size=2), st.integers(-3, 3)), min_size=1, max_size=4, unique=True),
       other=labels, column=st.lists(labels, max_size=8))
def test_validation_releases_or_raises_a_parameter_error_before_any_charge(cats, other, column):
    frame = pd.DataFrame({"p": pd.Series(column, dtype=object)})
    try:
        expected_cells = len(category_dimension("p", cats, other).categories)
    except pdp.PandasDPError:
        expected_cells = None
    with pdp.budget(epsilon=1.0) as b:
        try:
            h = frame.dp.histogram("p", categories=cats, other=other, epsilon=0.5, rng=np.random.default_rng(0))
        except (pdp.ParameterError, pdp.DomainError):
            assert b.spent == 0 and expected_cells is None
            return
    assert b.spent == pytest.approx(0.5)
    assert expected_cells is not None and len(h.counts) == expected_cells == len(cats) + (other is not None)


def test_tables_by_geography_get_the_other_cell_but_no_other_region():
    frame = pd.DataFrame({"p": ["a", "zz", "b", "zz", "c"], "region": ["N", "N", "S", "elsewhere", None]})
    with pdp.budget(epsilon=2 * EXACT):
        g = frame.dp.histogram("p", categories=CATS, other="Other", by="region", by_categories=["N", "S"],
                               epsilon=EXACT, rng=np.random.default_rng(0))
    assert g.at("region", "N").tolist() == [1, 0, 0, 1]
    assert g.at("region", "S").tolist() == [0, 1, 0, 0]
    assert g.at("national", "national").tolist() == [1, 1, 0, 1]  # rows outside the regions dropped
    assert set(g.counts.index.get_level_values("region")) == {"national", "N", "S"}


def test_marginals_take_other_per_column_and_their_tables_agree():
    frame = pd.DataFrame({"p": ["a", "zz", "b", "zz", None], "s": ["F", "M", "X", "F", "M"]})
    with pdp.budget(epsilon=2 * EXACT) as b:
        m = frame.dp.marginals([("p", "s")], categories={"p": CATS, "s": ["F", "M"]}, other={"p": "Other"},
                               epsilon=EXACT, rng=np.random.default_rng(0))
    table = m.table(("p", "s")).counts
    assert list(table.index.get_level_values("p").unique()) == [*CATS, "Other"]
    assert np.round(table.to_numpy()).tolist() == [1, 0, 0, 0, 0, 0, 1, 1]  # (b, X): X is not a label of s
    assert np.round(m.table(("p",)).counts.to_numpy()).tolist() == [1, 0, 0, 2]
    with pdp.budget(epsilon=1.0) as b:
        with pytest.raises(pdp.ParameterError, match="other"):
            frame.dp.marginals([("p", "s")], categories={"p": CATS, "s": ["F", "M"]}, other={"p": "a"}, epsilon=0.5)
        assert b.spent == 0


def test_dask_mixed_dtype_partitions_match_pandas():
    dd = pytest.importorskip("dask.dataframe")
    dask = pytest.importorskip("dask")
    parts = [pd.DataFrame({"p": pd.Series(["a", "zz", "b", None], dtype=object)}),
             pd.DataFrame({"p": pd.Series([7, 2.5, "c", [1]], dtype=object)}),
             pd.DataFrame({"p": pd.Series(["c", "q", None], dtype="string")}),
             pd.DataFrame({"p": pd.Series(pd.Categorical(["a", "x", None]))}).astype({"p": object})]
    whole = pd.concat(parts, ignore_index=True)
    ddf = dd.from_delayed([dask.delayed(p) for p in parts], meta=pd.DataFrame({"p": pd.Series([], dtype=object)}),
                          verify_meta=False)
    with dask.config.set(scheduler="sync"):
        lazy, _ = _release(ddf, "p", categories=CATS, other="Other")
    eager, _ = _release(whole, "p", categories=CATS, other="Other")
    assert lazy.counts.tolist() == eager.counts.tolist() == [2, 1, 2, 6]


SPEC = """
seed = 1
[budget]
epsilon = 2000000
ledger = "ledger.sqlite"
[input]
path = "rows.csv"
[output]
dir = "out"
[[release]]
name = "products"
method = "identity"
columns = "product"
categories = ["apple", "pear"]
other = "Other"
epsilon = 1000000
"""


def test_the_cli_reads_other_from_the_spec(tmp_path: Path):
    from _cli import run

    pd.DataFrame({"product": ["apple", "kiwi", "pear", "", "kiwi", "apple"]}).to_csv(tmp_path / "rows.csv",
                                                                                     index=False)
    (tmp_path / "spec.toml").write_text(SPEC)
    pdp.Ledger.create(tmp_path / "ledger.sqlite")
    done = run("release", str(tmp_path / "spec.toml"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(tmp_path / "out" / "products.csv")
    assert table["product"].tolist() == ["apple", "pear", "Other"]
    assert table["estimate"].tolist() == [2, 1, 2]  # the empty field is read as missing: dropped


def test_make_grid_other_domains_code_like_their_cells():
    frame = pd.DataFrame({"p": ["a"], "s": ["F"]})
    grid = make_grid(frame, ["p", "s"], categories={"p": CATS, "s": ["F", "M"]}, other="O")
    codes = grid.codes([pd.Series(["a", "zz", None, "c"], dtype=object), pd.Series(["M", "F", "F", "?"])])
    assert codes.tolist() == [1, 3 * 3 + 0, -1, 2 * 3 + 2]


def test_hierarchical_histograms_and_privacy_units_take_other():
    frame = pd.DataFrame({"p": ["a", "zz", "b", "zz", None, "c"], "who": [1, 1, 2, 3, 3, 4]})
    with pdp.budget(epsilon=4 * EXACT):
        tree = frame.dp.hierarchical_histogram("p", categories=CATS, other="Other", epsilon=EXACT,
                                               rng=np.random.default_rng(0))
        units = frame.dp.histogram("p", categories=CATS, other="Other", privacy_unit="who", max_rows=1,
                                   epsilon=EXACT, rng=np.random.default_rng(0))
    assert list(tree.counts.index) == [*CATS, "Other"] and np.round(tree.counts.to_numpy()).tolist() == [1, 1, 1, 2]
    # One row kept per unit (at random): units 1 and 3 have one row in "a"/"zz" and "zz"/None.
    assert list(units.counts.index) == [*CATS, "Other"] and units.counts.sum() == 4
    assert units.counts["b"] == 1 and units.counts["c"] == 1


@pytest.mark.parametrize("other", [None, "Other"])
def test_a_boolean_never_matches_a_number_whatever_the_dtype(other):
    # One string row turns a bool column into an object one, where Python says True == 1: before, every True
    # row then moved into the label 1 (a neighbour changing 50 counts). Booleans now never match numbers.
    flags = pd.DataFrame({"v": [True] * 50 + [False] * 5})
    grown = pd.DataFrame({"v": pd.Series([True] * 50 + [False] * 5 + ["x"], dtype=object)})
    numbers = pd.DataFrame({"v": pd.Series([1] * 50 + ["x"], dtype=object)})
    a, _ = _release(flags, "v", categories=[0, 1], other=other)
    b, _ = _release(grown, "v", categories=[0, 1], other=other)
    assert np.abs(b.counts.to_numpy() - a.counts.to_numpy()).sum() == (0 if other is None else 1)
    n, _ = _release(numbers, "v", categories=[False, True], other=other)
    assert n.counts.iloc[:2].tolist() == [0, 0]
