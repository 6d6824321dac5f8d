"""Dask privacy units without a full shuffle (issue 45, item 3): rows no unit can keep are dropped in their partition.

Every partition keeps only each unit's ``max_rows`` live rows of smallest key (each (unit, cell) pair's
``max_rows_per_cell`` with the cells scheme; ``min(rows, L)`` per unit for the counting steps) before the
survivors meet by unit hash in numpy buckets. The kept rows, so the seeded releases, must be the pandas
engine's for every unit step, whatever the layout of the units over the partitions.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.domain.grid import make_grid
from pandas_dp.engines.pandas import PANDAS_ENGINE
from pandas_dp.engines.pandas.bounding import bound_codes, row_keys, unit_codes, unit_hashes
from pandas_dp.engines.pandas.local_bounds import local_survivors
from pandas_dp.privacy.units import UnitBounds

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")

from pandas_dp.engines.dask import DASK_ENGINE  # noqa: E402

KEY = bytes(range(32))
SCHEMES = [dict(max_rows=1), dict(max_rows=3), dict(max_cells=2, max_rows_per_cell=2)]


@pytest.fixture(autouse=True)
def sync():
    with dask.config.set(scheduler="sync"):
        yield


def _bounds(scheme: dict) -> UnitBounds:
    return UnitBounds("u", **scheme)


# ------------------------------------------------------------------------------------- the partition filter


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("seed", range(4))
def test_survivors_of_any_split_keep_the_rows_the_whole_frame_keeps(scheme, seed):
    rng = np.random.default_rng(seed)
    n = 3000
    units = pd.Series(rng.integers(0, 200, n)).where(rng.random(n) > 0.05)      # some rows without a unit
    cells = np.where(rng.random(n) < 0.1, -1, rng.integers(0, 6, n)).astype(np.int64)
    hashes = unit_hashes(units)
    bounds = _bounds(scheme)
    whole = bound_codes(cells, unit_codes(hashes), bounds, KEY, unit_hashes=hashes) >= 0
    edges = np.sort(rng.choice(np.arange(1, n), size=rng.integers(1, 12), replace=False))
    keep = np.zeros(n, dtype=bool)
    for a, b in zip([0, *edges], [*edges, n]):
        pos = np.arange(a, b, dtype=np.uint64)
        limit = bounds.row_bound if bounds.scheme == "rows" else bounds.max_rows_per_cell
        keep[a:b] = local_survivors(cells[a:b] >= 0, hashes[a:b], limit, lambda rows, p=pos: row_keys(KEY, p[rows]),
                                    cells=cells[a:b] if bounds.scheme == "cells" else None)
    assert not (whole & ~keep).any()                                   # every kept row survives its part
    rows = np.flatnonzero(keep)
    again = bound_codes(cells[rows], unit_codes(hashes[rows]), bounds, KEY, positions=rows.astype(np.uint64),
                        unit_hashes=hashes[rows]) >= 0
    np.testing.assert_array_equal(rows[again], np.flatnonzero(whole))   # and the survivors keep the same rows


def test_a_unit_whose_rows_sit_in_one_partition_sends_at_most_its_bound(monkeypatch):
    from pandas_dp.engines.dask import shuffle

    seen = []
    step = shuffle._bucket_step

    def spy(n_codes, fn, args, *shares):
        seen.append(np.concatenate([s[1] for s in shares]))
        return step(n_codes, fn, args, *shares)

    monkeypatch.setattr(shuffle, "_bucket_step", spy)
    df = pd.DataFrame({"u": np.repeat(np.arange(40), 25), "x": np.arange(1000) % 7})   # sorted by unit
    grid = make_grid(df, ["x"], bins=7, range=(0, 7))
    bounds = _bounds(dict(max_rows=3))
    got = DASK_ENGINE.coded_rows(dd.from_pandas(df, npartitions=5), grid, bounds).counts(bounds, KEY)
    want = PANDAS_ENGINE.coded_rows(df, grid, bounds).counts(bounds, KEY)
    np.testing.assert_array_equal(got, want)
    travelled = np.concatenate(seen)
    assert travelled.size <= 5 * 40 * 3 and np.bincount(pd.factorize(travelled)[0]).max() <= 2 * 3


def test_the_unit_path_never_shuffles_a_dask_frame(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the rows were shuffled")

    monkeypatch.setattr(dd.DataFrame, "shuffle", refuse)
    df = pd.DataFrame({"u": np.arange(300) % 17, "x": np.arange(300) % 5})
    with pdp.budget(epsilon=10.0):
        a = df.dp.histogram("x", bins=5, range=(0, 5), epsilon=1.0, privacy_unit="u", max_rows=2,
                            rng=np.random.default_rng(1))
        b = dd.from_pandas(df, npartitions=4).dp.histogram("x", bins=5, range=(0, 5), epsilon=1.0, privacy_unit="u",
                                                           max_rows=2, rng=np.random.default_rng(1))
    pd.testing.assert_series_equal(a.counts, b.counts)


# ------------------------------------------------------------------------ every unit step, every layout


def _layouts() -> dict[str, tuple[pd.DataFrame, object]]:
    rng = np.random.default_rng(11)
    n = 1200
    spread = pd.DataFrame({"u": rng.integers(0, 90, n), "x": rng.integers(-1, 9, n),
                           "g": rng.integers(0, 12, n), "v": rng.normal(50, 30, n)})
    clustered = spread.sort_values("u", kind="stable", ignore_index=True)
    odd = spread.astype({"u": object})
    odd.loc[[3, 50, 700], "u"] = [None, [1], "7"]         # missing, not a scalar, the text of unit 7
    with dask.config.set({"dataframe.convert-string": False}):  # Dask would turn the list into the text "[1]"
        odd_parts = dd.from_pandas(odd, npartitions=5)
    empty = dd.concat([dd.from_pandas(spread.iloc[:0], npartitions=1), dd.from_pandas(spread.iloc[:600], npartitions=3),
                       dd.from_pandas(spread.iloc[600:600], npartitions=1),
                       dd.from_pandas(spread.iloc[600:], npartitions=2)])
    mixed = dd.concat([dd.from_pandas(spread.iloc[:400], npartitions=2),
                       dd.from_pandas(spread.iloc[400:].astype({"u": float}), npartitions=2),
                       dd.from_pandas(spread.iloc[:0].astype({"u": str}), npartitions=1)])
    return {"spread over many partitions": (spread, dd.from_pandas(spread, npartitions=9)),
            "each unit in one partition": (clustered, dd.from_pandas(clustered, npartitions=6)),
            "one partition": (spread, dd.from_pandas(spread, npartitions=1)),
            "missing and odd units": (odd, odd_parts),
            "empty partitions": (spread, empty),
            "partitions of mixed dtypes": (pd.concat([spread.iloc[:400], spread.iloc[400:].astype({"u": float})],
                                                     ignore_index=True), mixed)}


LAYOUTS = _layouts()


def _same(a, b) -> None:
    if hasattr(a, "to_frame") and not isinstance(a, pd.Series):
        pd.testing.assert_frame_equal(a.to_frame(), b.to_frame(), check_exact=True)
    else:
        pd.testing.assert_series_equal(a.counts, b.counts, check_exact=True)


RELEASES = {
    "histogram": lambda f, s, rng: f.dp.histogram("x", bins=8, range=(0, 8), epsilon=1.0, privacy_unit="u", rng=rng,
                                                  **s),
    "auto and report_dropped": lambda f, s, rng: f.dp.histogram("x", bins=8, range=(0, 8), epsilon=1.0,
                                                                privacy_unit="u", max_rows="auto",
                                                                report_dropped=0.1, rng=rng),
    "unattributed groups": lambda f, s, rng: f.dp.unattributed_histogram("g", epsilon=1.0, privacy_unit="u",
                                                                         rng=rng, **s),
    "aggregate": lambda f, s, rng: f.dp.aggregate("x", {"v": ["count", "sum"]}, bins=range(0, 9), epsilon=1.0,
                                                  bounds={"v": (0, 100)}, privacy_unit="u", rng=rng, **s),
    "quantiles": lambda f, s, rng: f.dp.quantiles("v", [0.5], bounds=(0, 100), epsilon=1.0, privacy_unit="u",
                                                  rng=rng, **s),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("name", list(RELEASES))
@pytest.mark.parametrize("scheme", SCHEMES[1:], ids=["rows", "cells"])
def test_every_unit_step_gives_the_pandas_release_whatever_the_layout(layout, name, scheme):
    frame, parts = LAYOUTS[layout]
    if name in ("aggregate", "quantiles") and scheme.get("max_cells"):
        scheme = dict(max_rows=2)                          # value sums and steps bound rows per unit
    call = RELEASES[name]
    with pdp.budget(epsilon=1e6, delta=None):
        a = call(frame, scheme, np.random.default_rng(5))
        b = call(parts, scheme, np.random.default_rng(5))
    _same(a, b)


@pytest.mark.parametrize("layout", ["spread over many partitions", "each unit in one partition", "empty partitions"])
def test_table_sets_and_geography_give_the_pandas_release(layout):
    frame, parts = LAYOUTS[layout]
    hier = pd.DataFrame({"s": ["A", "A", "B"], "c": ["a", "b", "c"]})
    add = lambda f: f.assign(c=f["g"].map(lambda g: "abc"[g % 3]), s=f["g"].map(lambda g: "AAB"[g % 3]))  # noqa: E731
    frame = add(frame)
    parts = parts.assign(c=parts["g"].map(lambda g: "abc"[g % 3], meta=("g", object)),
                         s=parts["g"].map(lambda g: "AAB"[g % 3], meta=("g", object)))
    with pdp.budget(epsilon=1e6):
        for f in (lambda d: d.dp.marginals([("x", "g")], bins={"x": range(0, 9)}, categories={"g": range(12)},
                                           epsilon=1.0, privacy_unit="u", max_rows=2, rng=np.random.default_rng(3)),
                  lambda d: d.dp.histogram("x", bins=8, range=(0, 8), by=["s", "c"], hierarchy=hier, epsilon=1.0,
                                           privacy_unit="u", max_cells=2, max_rows_per_cell=1,
                                           rng=np.random.default_rng(3))):
            _same(f(frame), f(parts))


# ------------------------------------------------------------------------------------ neighbouring frames


@pytest.mark.parametrize("scheme", SCHEMES)
def test_one_more_unit_anywhere_moves_the_dask_counts_by_at_most_its_bound(scheme):
    """The sensitivity argument is the pandas engine's: on neighbouring frames the exact bounded counts differ
    by at most the unit's row bound in L1, whether its rows sit in one partition or in all of them."""
    rng = np.random.default_rng(4)
    base = pd.DataFrame({"u": rng.integers(0, 50, 800), "x": rng.integers(0, 6, 800)})
    grid = make_grid(base, ["x"], bins=6, range=(0, 6))
    bounds = _bounds(scheme)
    heavy = pd.DataFrame({"u": 999, "x": np.arange(60) % 6})     # after every row: no other row's key moves
    neighbour = pd.concat([base, heavy], ignore_index=True)
    before = DASK_ENGINE.coded_rows(dd.from_pandas(base, npartitions=6), grid, bounds).counts(bounds, KEY)
    for heavy_parts in (1, 4):                                     # the unit in one partition or spread over four
        parts = dd.concat([dd.from_pandas(base, npartitions=6), dd.from_pandas(heavy, npartitions=heavy_parts)])
        after = DASK_ENGINE.coded_rows(parts, grid, bounds).counts(bounds, KEY)
        assert 0 < np.abs(after - before).sum() <= bounds.row_bound
        np.testing.assert_array_equal(after, PANDAS_ENGINE.coded_rows(neighbour, grid, bounds).counts(bounds, KEY))
