"""One person is one unit on every engine, whatever dtype the partition or file holding its rows has (issue 24, item 2).

A unit is identified by a hash of its canonical value (:func:`pandas_dp.domain.unit_values.canonical_unit_hashes`),
not of its value in the column's dtype: Parquet files may give the id column different dtypes, and one
odd row with a missing id turns its file's column to float64. Splitting a person into two units would let
one person move a bin by twice the bound the noise is calibrated for.
"""

from __future__ import annotations

import decimal

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.domain.unit_values import canonical_unit_hashes

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")


def test_integral_numbers_and_their_text_are_one_unit():
    same = [17, 17.0, np.int64(17), np.uint8(17), np.float32(17), "17", " 17", "17.0", "1.7e1",
            decimal.Decimal(17), decimal.Decimal("17.00")]
    hashes = {int(canonical_unit_hashes(pd.Series([v], dtype=object))[0]) for v in same}
    assert len(hashes) == 1 and 0 not in hashes
    typed = [pd.Series([17], dtype="int64"), pd.Series([17.0, np.nan]), pd.Series([17, None], dtype="Int64"),
             pd.Series(["17"], dtype="string"), pd.Series(pd.Categorical([17])), pd.Series([17], dtype="uint64")]
    assert {int(canonical_unit_hashes(s)[0]) for s in typed} == hashes
    # Other values keep their identity; a big integer is the same unit as int, float-free text or uint64.
    big = [2**64 - 1, str(2**64 - 1)]
    assert len({int(canonical_unit_hashes(pd.Series([v], dtype=object))[0]) for v in big}) == 1
    assert canonical_unit_hashes(pd.Series([2**64 - 1], dtype=np.uint64))[0] == \
        canonical_unit_hashes(pd.Series([2**64 - 1], dtype=object))[0]
    distinct = canonical_unit_hashes(pd.Series([17, 17.5, "abc", "17a", True, 18], dtype=object))
    assert len(set(distinct.tolist())) == 6
    # Hostile text never raises and still is a unit (Arrow cannot hold lone surrogates; int() refuses 5000 digits).
    odd = canonical_unit_hashes(pd.Series(["\ud800", "1" * 5000, "abc"], dtype=object))
    assert (odd != 0).all() and odd[2] == canonical_unit_hashes(pd.Series(["abc"]))[0]
    # No unit: missing values and values that are not plain scalars.
    assert canonical_unit_hashes(pd.Series([None, np.nan, [17], {"a": 1}, 1j], dtype=object)).tolist() == [0] * 5


def _persons(n_units: int = 60, rows_each: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    ids = np.tile(np.arange(n_units, dtype=np.int64), rows_each)   # every person spans every partition
    return pd.DataFrame({"pid": ids, "age": rng.integers(0, 100, ids.size)})


def _as(part: pd.DataFrame, kind: str) -> pd.DataFrame:
    part = part.copy()
    if kind == "float64":
        part["pid"] = part["pid"].astype(np.float64)
    elif kind == "object":
        part["pid"] = part["pid"].astype(object)
    elif kind == "string":
        part["pid"] = part["pid"].astype(str).astype("string")
    return part


def _dask_frame(parts: list[pd.DataFrame]):
    meta = parts[0].iloc[:0]
    return dd.from_delayed([dask.delayed(lambda p: p)(p) for p in parts], meta=meta, verify_meta=False)


_CALLS = {
    "rows": dict(privacy_unit="pid", max_rows=1),
    "cells": dict(privacy_unit="pid", max_cells=1, max_rows_per_cell=1),
}


def _release(frame, bounds):
    with pdp.budget(epsilon=1.0), dask.config.set(scheduler="synchronous"):
        h = frame.dp.histogram("age", bins=[0, 25, 50, 75, 100], epsilon=1.0, rng=np.random.default_rng(3),
                               **bounds)
    return h.counts.to_numpy()


@pytest.mark.parametrize("scheme", sorted(_CALLS))
@pytest.mark.parametrize("kinds", [("int64", "float64", "int64"), ("float64", "object", "int64"),
                                   ("int64", "string", "object")], ids="-".join)
def test_a_person_is_one_unit_across_partitions_of_mixed_dtypes(kinds, scheme):
    persons = _persons()
    expected = _release(persons, _CALLS[scheme])
    chunks = np.array_split(np.arange(len(persons)), len(kinds))
    parts = [_as(persons.iloc[c], k) for c, k in zip(chunks, kinds)]
    assert (_release(_dask_frame(parts), _CALLS[scheme]) == expected).all()


@pytest.mark.parametrize("engine", ["pandas", "dask"])
@pytest.mark.parametrize("scheme", sorted(_CALLS))
def test_an_odd_dropped_unit_id_that_changes_the_dtype_changes_nothing(engine, scheme):
    # D: the last row (out of domain: age -5) has id 999; D': its id is missing, which turns the
    # column (and on Dask its partition) to float64. Both drop that row: the seeded release is equal.
    persons = _persons()
    odd = pd.DataFrame({"pid": [999], "age": [-5]})
    d = pd.concat([persons, odd], ignore_index=True)
    d2 = d.copy()
    d2["pid"] = d2["pid"].astype(np.float64)
    d2.loc[d2.index[-1], "pid"] = np.nan
    assert d["pid"].dtype == np.int64 and d2["pid"].dtype == np.float64
    if engine == "dask":
        half = len(d) // 2
        d = _dask_frame([d.iloc[:half], d.iloc[half:]])
        d2 = _dask_frame([d2.iloc[:half].astype({"pid": np.int64}), d2.iloc[half:]])
    assert (_release(d, _CALLS[scheme]) == _release(d2, _CALLS[scheme])).all()


def test_a_text_token_in_a_numeric_csv_column_read_as_text_is_dropped(tmp_path):
    # docs/guide/dask.md, "CSV files": with the binned column read as text, one private token is out of
    # domain (dropped, uncounted) instead of failing the graph: the seeded release equals the clean one.
    rows = pd.DataFrame({"age": np.arange(200) % 90, "pid": np.arange(200)})
    rows.iloc[:100].to_csv(tmp_path / "a.csv", index=False)
    rows.iloc[100:].to_csv(tmp_path / "b.csv", index=False)
    odd = rows.iloc[100:].astype({"age": object})
    odd = pd.concat([odd.iloc[:50], pd.DataFrame({"age": ["forty"], "pid": [999]}), odd.iloc[50:]])
    (tmp_path / "odd").mkdir()
    rows.iloc[:100].to_csv(tmp_path / "odd" / "a.csv", index=False)
    odd.to_csv(tmp_path / "odd" / "b.csv", index=False)

    def release(pattern):
        frame = dd.read_csv(str(pattern), dtype={"age": "string"})
        with pdp.budget(epsilon=1.0), dask.config.set(scheduler="synchronous"):
            return frame.dp.histogram("age", bins=[0, 30, 60, 90], epsilon=1.0,
                                      rng=np.random.default_rng(2)).counts.to_numpy()

    assert (release(tmp_path / "*.csv") == release(tmp_path / "odd" / "*.csv")).all()
