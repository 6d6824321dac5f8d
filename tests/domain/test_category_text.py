"""Label domains meet numbers written as text, and text labels meet numbers, value by value.

One odd row turns an ``int64`` column into ``object``; ``dd.from_pandas`` (Dask's
``dataframe.convert-string`` default) then holds every value as text. A label
domain that compared values only as they are would then lose every count to one
row; with the rule of :func:`pandas_dp.domain.labels.positions` the odd row moves
one count at most, on pandas and Dask alike.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.domain.categories import category_dimension


def codes(categories, values, other=None):
    return category_dimension("x", categories, other).codes(values).tolist()


def test_numbers_as_text_meet_number_labels_and_numbers_meet_text_labels():
    values = pd.Series([5, "5", "5.0", 5.0, "a", True, "True", 1.5, "1.5", None, [1]], dtype=object)
    assert codes([5, "a"], values) == [0, 0, 0, 0, 1, -1, -1, -1, -1, -1, -1]
    assert codes(["5", "1.5"], values) == [0, 0, -1, -1, -1, -1, -1, 1, 1, -1, -1]  # str(5.0) is "5.0"
    # A value equal to a label as it is keeps that label: "5" is "5", 5 is 5.
    assert codes([5, "5"], values) == [0, 1, 0, 0, -1, -1, -1, -1, -1, -1, -1]
    # Typed columns: text columns against number labels, numbers against text labels.
    assert codes([5, 17], pd.Series(["17", "5", "x"], dtype="str")) == [1, 0, -1]
    assert codes(["17"], np.array([17, 5])) == [0, -1]
    assert codes([True], pd.Series(["True", 1], dtype=object)) == [-1, -1]  # booleans only meet booleans
    # With an other bucket, a value met as text is listed, not other.
    assert codes([5], pd.Series(["5", "x", None], dtype=object), other="Other") == [0, 1, -1]


@pytest.mark.parametrize("engine", ["pandas", "dask", "polars"])
def test_one_odd_row_moves_no_count_when_the_column_turns_to_text(engine):
    base = pd.DataFrame({"x": np.arange(200) % 4})
    odd = pd.concat([base, pd.DataFrame({"x": ["not a code"]})], ignore_index=True)  # object column now
    assert odd["x"].dtype == object
    if engine == "dask":
        dd = pytest.importorskip("dask.dataframe")
        base, odd = dd.from_pandas(base, npartitions=2), dd.from_pandas(odd, npartitions=2)
        assert pd.api.types.is_string_dtype(odd["x"].dtype)  # Dask holds every value as text
    if engine == "polars":
        pl = pytest.importorskip("polars")
        base, odd = pl.from_pandas(base).lazy(), pl.from_pandas(odd.astype({"x": str})).lazy()  # a text column
    releases = []
    for frame in (base, odd):
        with pdp.budget(epsilon=1.0):
            releases.append(frame.dp.histogram("x", categories=[0, 1, 2, 3], epsilon=1.0,
                                               rng=np.random.default_rng(7)).counts)
    pd.testing.assert_series_equal(*releases)  # the odd row is out of domain; nothing else moved
