"""One released result of every kind and option, and what each one answers (shared by result tests).

``every_result()`` builds them once per test session (seeded): results are
immutable, so tests may share them; the immutability tests check exactly that.
``answers(result)`` calls every public method that reads a release and returns
what they gave, so two results can be compared answer by answer
(:func:`assert_same_answers`).
"""

from __future__ import annotations

import functools
import io
from typing import Any

import numpy as np
import pandas as pd

import pandas_dp as pdp
from pandas_dp.data import load_households, load_persons
from pandas_dp.domain.grid import BinDomain


@functools.lru_cache(maxsize=1)
def every_result() -> dict[str, Any]:
    """name -> result: every result type, 1-D and 2-D, numeric and categorical, every post-processing."""
    persons, households = load_persons(), load_households()
    rng = np.random.default_rng(2024)
    age, income = {"bins": 10, "range": (0, 100)}, {"bins": 64, "range": (0, 512_000)}
    hierarchy = households[["state", "county"]].drop_duplicates()
    with pdp.budget(epsilon=100.0):
        out: dict[str, Any] = {
            "identity": persons.dp.histogram("age", **age, epsilon=1.0, rng=rng),
            "identity_nonnegative": persons.dp.histogram("age", **age, epsilon=0.1, nonnegative=True, rng=rng),
            "unequal_bins": persons.dp.histogram("income", bins=[0, 10_000, 25_000, 50_000, 100_000, 250_000,
                                                                 1_000_000], epsilon=1.0, rng=rng),
            "categories": persons.dp.histogram("sex", categories=["F", "M"], epsilon=1.0, rng=rng),
            "grid": persons.dp.histogram(["state", "age"], bins={"age": range(0, 101, 20)},
                                         categories={"state": "dtype"}, epsilon=1.0,
                                         rng=rng),
            "hierarchical": persons.dp.hierarchical_histogram("income", **income, epsilon=1.0, rng=rng),
            "hierarchical_raw_nonnegative": persons.dp.hierarchical_histogram(
                "income", **income, epsilon=1.0, branching=4, consistent=False, nonnegative=True, rng=rng),
            "hierarchical_2d": persons.dp.hierarchical_histogram(["age", "income"], bins=[16, 16],
                                                                 range=[(0, 100), (0, 512_000)], epsilon=1.0,
                                                                 branching=2, rng=rng),
            "ahp": persons.dp.histogram("age", bins=range(0, 101), epsilon=1.0, method="ahp", rng=rng),
            "dpcube": persons.dp.histogram("age", bins=range(0, 101), epsilon=1.0, method="dpcube", rng=rng),
            "dpcube_2d_uniform": persons.dp.histogram(["age", "income"], bins=[20, 16],
                                                      range=[(0, 100), (0, 512_000)], epsilon=1.0,
                                                      method="dpcube", estimate="uniform", rng=rng),
            "dawa": persons.dp.histogram("age", bins=range(0, 101), epsilon=1.0, method="dawa", rng=rng),
            "dawa_2d_nonnegative": persons.dp.histogram(["age", "income"], bins=[20, 16],
                                                        range=[(0, 100), (0, 512_000)], epsilon=1.0,
                                                        method="dawa", nonnegative=True, rng=rng),
            "ugrid": persons.dp.histogram(["age", "income"], bins=[20, 16], range=[(0, 100), (0, 512_000)],
                                          epsilon=1.0, method="ugrid", rng=rng),
            "agrid": persons.dp.histogram(["age", "income"], bins=[20, 16], range=[(0, 100), (0, 512_000)],
                                          epsilon=1.0, method="agrid", expected_total=5_000, rng=rng),
            "count_of_counts": persons.dp.count_of_counts("household_id", ["state", "county"], epsilon=1.0,
                                                          groups=households, max_size=16, rng=rng),
            "count_of_counts_private_groups": persons.dp.count_of_counts(
                "household_id", "county", hierarchy=hierarchy, epsilon=1.0, method="hg", rng=rng),
            "unattributed": persons.dp.unattributed_histogram("household_id", epsilon=1.0,
                                                              groups=households["household_id"], rng=rng),
            "range_frame": persons.dp.range_query("income", [(0, 24_000), (24_000, 96_000)], **income,
                                                  epsilon=1.0, rng=rng),
        }
    with pdp.budget(epsilon=1.0):
        out["marginals"] = persons.dp.marginals([("age", "sex"), ("sex", "state")],
                                                bins={"age": range(0, 101, 20)},
                                                categories={"sex": ["F", "M"], "state": "dtype"}, epsilon=1.0,
                                                rng=rng)
    out["range_answer"] = out["hierarchical"].range_query(8_000, 96_000)
    return out


def _png(ax: Any) -> bytes:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    ax.figure.savefig(buffer, format="png")
    plt.close(ax.figure)
    return buffer.getvalue()


def _numeric_1d(result: Any) -> bool:
    return result.domain.ndim == 1 and isinstance(result.domain.dims[0], BinDomain)


def answers(result: Any, *, pictures: bool = False) -> dict[str, Any]:
    """Everything the public methods of ``result`` answer (seeded where random)."""
    if isinstance(result, pd.DataFrame):       # a range_query answer frame carries its release
        # (rebuilt column by column: joblib's mmap_mode loads the frame's own columns as memory maps)
        out = {"frame": pd.DataFrame({c: np.array(result[c]) for c in result.columns})}
        out.update({f"release.{k}": v for k, v in answers(result.attrs["release"], pictures=pictures).items()})
        return out
    if isinstance(result, pdp.RangeAnswer):
        return {"fields": (result.low, result.high, result.estimate, result.std_error, result.exact_std_error),
                "ci": result.confidence_interval(0.9), "repr": repr(result)}
    out: dict[str, Any] = {"repr": repr(result), "html": result._repr_html_(), "params": dict(result.params),
                           "epsilon": result.epsilon, "method": result.method,
                           "post_processing": result.post_processing}
    if isinstance(result, pdp.MarginalTables):
        out.update({"frame": result.to_frame(), "plan": result.plan, "total_variance": result.total_variance(),
                    "workload": result.workload, "columns": result.columns})
        out["table"] = result.table(result.workload[0]).to_frame()   # a table is a Histogram (tested as one)
        if pictures:
            out["plot"] = _png(result.plot(columns=("age", "sex")))
        return out
    if isinstance(result, pdp.CountOfCounts):
        out["frame"] = result.to_frame()
        for level in result.levels:
            out[f"at.{level}"] = result.at(level)
            out[f"totals.{level}"] = result.totals(level)
        out["at.one_region"] = result.at(result.levels[-1], result.regions[-1][0])
        out["unattributed"] = result.unattributed("national")
        out["emd"] = result.emd(result)
        out["sample"] = result.sample(n=200, rng=np.random.default_rng(1), hierarchy=load_households())
        if pictures:
            out["plot"] = _png(result.plot("state" if "state" in result.levels else result.levels[-1]))
        return out
    out.update({"frame": result.to_frame(), "series": result.to_series(), "counts": result.counts,
                "variance": result.variance, "std_error": result.std_error,
                "ci": result.confidence_interval(0.9),
                "sample_n": result.sample(n=300, rng=np.random.default_rng(1)),
                "sample_all": result.sample(rng=np.random.default_rng(2))})
    if isinstance(result, pdp.UnattributedHistogram):
        out["count_of_counts"] = result.to_count_of_counts()
    else:
        out["domain_index"] = result.domain.index
        if _numeric_1d(result):
            edges = result.domain.dims[0].edges
            pairs = list(zip(edges[:-1], edges[1:])) + [(edges[0], edges[-1]), (edges[1], edges[1])]
            out["ranges"] = result.range_query(pairs)
            out["range_one"] = result.range_query(float(edges[0]), float(edges[-1]))
    if isinstance(result, pdp.HierarchicalHistogram):
        out.update({"levels": result.levels, "branching": result.branching, "height": result.height})
        if result.domain.ndim == 1:
            out["average_range_variance"] = result.average_range_variance()
    if isinstance(result, pdp.AHPHistogram):
        out["clusters"] = result.clusters
    if isinstance(result, pdp.DPCubeHistogram):
        out.update({"partitions": result.partitions, "cell_histogram": result.cell_histogram,
                    "box": result.cell_box_query(np.zeros(result.domain.ndim, dtype=int), result.domain.shape)})
    if isinstance(result, (pdp.DAWAHistogram, pdp.GridHistogram)):
        ones = np.ones(result.domain.ndim, dtype=int)
        out["box"] = result.cell_box_query([np.zeros_like(ones), ones], [result.domain.shape, 2 * ones + 1],
                                           confidence_level=0.9)
        out["structure"] = result.buckets if isinstance(result, pdp.DAWAHistogram) else result.grid
    if pictures and (isinstance(result, pdp.UnattributedHistogram) or result.domain.ndim <= 2):
        out["plot"] = _png(result.plot())
    return out


def assert_same_answers(a: dict[str, Any], b: dict[str, Any]) -> None:
    """Two :func:`answers` dicts are identical, value by value (exact, including dtypes and indexes)."""
    assert a.keys() == b.keys()
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, pd.Series):
            pd.testing.assert_series_equal(x, y, check_exact=True, obj=key)
        elif isinstance(x, pd.DataFrame):
            pd.testing.assert_frame_equal(x, y, check_exact=True, obj=key)
        elif isinstance(x, pd.Index):
            pd.testing.assert_index_equal(x, y, exact=True, obj=key)
        elif isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y, err_msg=key)
        else:
            assert x == y, key
