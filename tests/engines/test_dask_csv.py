"""A text token in a numeric column of a CSV read by ``dd.read_csv`` (issue 24 item 5).

Dask infers a column's dtype from a sample at the start of the file and checks
every block against it, so a token such as ``forty`` in an ``age`` column of a
later block makes computing the frame fail: the release used to raise
``DataSourceError`` where the file without that line releases (one bit about
a private row). The Dask engine now re-reads such reads without the check and
converts each block's numbers with the library's never-raising converter
(:mod:`pandas_dp.engines.dask.sources`): the token's row is out of domain,
dropped, and the seeded release is byte-identical to the release of the file
without that line, on Dask and on pandas.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")

import pandas_dp as pdp  # noqa: E402
from pandas_dp.errors import DataSourceError  # noqa: E402

N = 300
#: A block size and a sample small enough that the file has several blocks and the token lies past the sample.
READ = dict(blocksize=1500, sample=1000)


def _files(tmp_path: Path) -> tuple[Path, Path]:
    """``clean.csv`` and ``token.csv``: the same rows plus one line whose age and household are words."""
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"pid": np.arange(N), "hh": np.arange(N) // 3, "age": rng.integers(0, 90, N),
                          "income": rng.uniform(0, 1000, N).round(2), "state": rng.choice(["A", "B"], N)})
    clean = tmp_path / "clean.csv"
    frame.to_csv(clean, index=False)
    lines = clean.read_text().split("\n")
    lines.insert(250, "9999,house,forty,512.5,A")  # well past the sample, in the second block
    token = tmp_path / "token.csv"
    token.write_text("\n".join(lines))
    return clean, token


CALLS: dict[str, Callable[[Any], Any]] = {
    "histogram": lambda f: f.dp.histogram("age", bins=[0, 30, 60, 90], epsilon=0.5, rng=np.random.default_rng(3)),
    "filtered on a numeric column": lambda f: f[f["income"] > 500].dp.histogram(
        "age", bins=[0, 30, 60, 90], epsilon=0.5, rng=np.random.default_rng(3)),
    "privacy unit": lambda f: f.dp.histogram("age", bins=[0, 30, 60, 90], privacy_unit="pid", max_rows=1,
                                             epsilon=0.5, rng=np.random.default_rng(3)),
    "unattributed on a numeric id": lambda f: f.dp.unattributed_histogram("hh", epsilon=0.5,
                                                                          rng=np.random.default_rng(3)),
}


def _release(call: Callable[[Any], Any], frame: Any) -> tuple[pd.DataFrame, Any]:
    with pdp.budget(epsilon=1.0) as b:
        result = call(frame)
    return result.to_frame(), b.spent


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_token_in_a_later_block_is_dropped_like_on_pandas(tmp_path, name):
    clean, token = _files(tmp_path)
    call = CALLS[name]
    with dask.config.set(scheduler="sync"):
        dirty = dd.read_csv(token, **READ)
        assert dirty.npartitions >= 2 and dirty["age"].dtype == np.int64  # dtypes inferred from the sample
        if name == "histogram":  # the trap is real: Dask itself cannot compute the frame
            with pytest.raises(ValueError):
                dirty.compute()
        got, spent = _release(call, dirty)
        want, clean_spent = _release(call, dd.read_csv(clean, **READ))
    # Byte-identical to the release of the file without the line, with the same charge...
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert spent == clean_spent
    # ... equal to the pandas engine's release of that file, and, where the column is binned as numbers, of the
    # file with the line (pandas reads the whole column as text and drops the token). An id column that pandas
    # reads as text makes the token a text id there; on Dask the column is numeric (its public dtype).
    pd.testing.assert_frame_equal(got, _release(call, pd.read_csv(clean))[0], check_exact=True)
    if "id" not in name:
        pd.testing.assert_frame_equal(got, _release(call, pd.read_csv(token))[0], check_exact=True)


@pytest.mark.parametrize("options", [{"dtype": {"age": "float64"}}, {"assume_missing": True}])
def test_numeric_dtypes_the_user_gives_are_protected_too(tmp_path, options):
    """A numeric ``dtype=`` makes pandas' own parser raise on the token: the read infers instead, then converts."""
    clean, token = _files(tmp_path)
    with dask.config.set(scheduler="sync"):
        dirty = dd.read_csv(token, **READ, **options)
        assert dirty["age"].dtype == np.float64
        got, _ = _release(CALLS["histogram"], dirty)
        want, _ = _release(CALLS["histogram"], dd.read_csv(clean, **READ, **options))
    pd.testing.assert_frame_equal(got, want, check_exact=True)


@pytest.mark.parametrize("line", [b"9999,1,40,512.5,A,extra", b"9999,1,4\xff0,512.5,A"],
                         ids=["too many fields", "an undecodable byte"])
def test_a_line_with_too_many_fields_or_a_bad_byte_is_one_dropped_row(tmp_path, line):
    clean, token = _files(tmp_path)
    lines = clean.read_bytes().split(b"\n")
    lines.insert(250, line)
    token.write_bytes(b"\n".join(lines))
    with dask.config.set(scheduler="sync"):
        got, _ = _release(CALLS["histogram"], dd.read_csv(token, **READ))
        want, _ = _release(CALLS["histogram"], dd.read_csv(clean, **READ))
    pd.testing.assert_frame_equal(got, want, check_exact=True)


def test_a_read_whose_numbers_parse_otherwise_keeps_data_source_error(tmp_path):
    """``thousands=`` changes how numbers parse, so the read is not rewritten: refused, nothing charged."""
    _, token = _files(tmp_path)
    with dask.config.set(scheduler="sync"), pdp.budget(epsilon=1.0) as b:
        with pytest.raises(DataSourceError) as info:
            CALLS["histogram"](dd.read_csv(token, thousands="_", **READ))
    assert "forty" not in str(info.value) and b.spent == 0


def test_key_discovery_on_a_read_with_a_token_is_the_release_of_the_file_without_it(tmp_path):
    """Key discovery counts labels through the same guarded, re-read graph as every other Dask count: the
    token's row is dropped (the release equals that of the file without the line), never a failure whose text
    could quote it."""
    clean, token = _files(tmp_path)

    def discover(frame: Any) -> tuple[pd.DataFrame, Any]:
        with pdp.budget(epsilon=1.0, delta=1e-5) as b:
            result = frame.dp.histogram("age", categories="discover", epsilon=0.5, delta=1e-6,
                                        rng=np.random.default_rng(3))
        return result.to_frame(), b.spent

    with dask.config.set(scheduler="sync"):
        got, spent = discover(dd.read_csv(token, **READ))
        want, clean_spent = discover(dd.read_csv(clean, **READ))
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert spent == clean_spent


def test_key_discovery_reports_a_failing_graph_without_its_text(tmp_path):
    """A read Dask cannot compute (``thousands=`` keeps the typed read) is DataSourceError, its text withheld."""
    _, token = _files(tmp_path)
    with dask.config.set(scheduler="sync"), pdp.budget(epsilon=1.0, delta=1e-5) as b:
        with pytest.raises(DataSourceError) as info:
            dd.read_csv(token, thousands="_", **READ).dp.histogram("age", categories="discover", epsilon=0.5,
                                                                  delta=1e-6, rng=np.random.default_rng(3))
    assert "forty" not in str(info.value) and b.spent == 0
