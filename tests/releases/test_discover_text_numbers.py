"""Key discovery: text that spells a number as Python writes it is that number.

``dd.from_pandas`` (Dask's ``dataframe.convert-string`` default) holds an ``object``
column as text, and one odd row makes an ``int64`` column ``object``: without this
rule a neighbour would turn every released ``5`` into ``"5"``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.domain.label_text import labels_and_codes


def test_numbers_spelt_as_python_writes_them_join_their_number_and_other_text_stays_text():
    values = pd.Series([5, "5", "5.0", "a", True, "True", "007", "1e+20", 1e20, None, "nan", 2.5, "2.5", "-0.0",
                        "-0", "+5", "1e3", " 5", "1e+999", "False", "1234567890123456"], dtype=object)
    labels, codes = labels_and_codes(values)
    shown = [labels[c] if c >= 0 else None for c in codes]
    assert shown == [5, 5, 5, "a", 1, 1, "007", 1e20, 1e20, None, "nan", 2.5, 2.5, 0,
                     "-0", "+5", "1e3", " 5", "1e+999", 0, "1234567890123456"]
    assert len(set(map(repr, labels))) == len(labels)  # one label per value shown
    # A column of text only: the codes stand when nothing merges.
    labels, codes = labels_and_codes(pd.Series(["3", "1", "x", "3"], dtype="str"))
    assert [labels[c] for c in codes] == [3, 1, "x", 3]


@pytest.mark.parametrize("engine", ["pandas", "dask"])
def test_one_odd_row_leaves_every_other_label_as_it_was(engine):
    base = pd.DataFrame({"x": np.repeat(np.arange(1, 6), 400)})
    odd = pd.concat([base, pd.DataFrame({"x": ["zz"]})], ignore_index=True)  # an object column now
    if engine == "dask":
        dd = pytest.importorskip("dask.dataframe")
        base, odd = dd.from_pandas(base, npartitions=2), dd.from_pandas(odd, npartitions=3)
        assert pd.api.types.is_string_dtype(odd["x"].dtype)  # Dask holds every value as text
    shown = []
    for frame in (base, odd):
        with pdp.budget(epsilon=1, delta=1e-6):
            h = frame.dp.histogram("x", categories="discover", epsilon=1, delta=1e-6, rng=np.random.default_rng(3))
        shown.append(list(h.counts.index))
    assert shown[0] == shown[1] == [1, 2, 3, 4, 5]
