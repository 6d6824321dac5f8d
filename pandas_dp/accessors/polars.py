"""The ``.dp`` namespace on Polars frames (extra ``polars``): ``polars.LazyFrame.dp`` and ``polars.DataFrame.dp``.

The classes are the pandas accessors themselves (same methods, parameters, errors and
results); the release functions see a :class:`~pandas_dp.engines.polars.PolarsFrame` (the
query and its schema) and ask :func:`pandas_dp.engines.engine_for` for the Polars engine, which
counts inside Polars' streaming engine or batch by batch and returns only counts. Importing
:mod:`pandas_dp` registers these when ``polars`` imports.

Examples
--------
>>> import numpy as np, polars as pl, pandas_dp as pdp
>>> lf = pl.LazyFrame({"age": [23, 35, 35, 61, 17]})
>>> with pdp.budget(epsilon=1.0):
...     h = lf.dp.histogram("age", bins=4, range=(0, 80), epsilon=0.5, rng=np.random.default_rng(0))
>>> len(h.counts)
4
"""

from __future__ import annotations

from pandas_dp.accessors.pandas import DataFrameDPAccessor
from pandas_dp.engines import Engine, register_engine
from pandas_dp.engines.polars import POLARS_ENGINE, PolarsFrame, polars_frame
from pandas_dp.engines.polars.frame import polars_module

__all__ = ["PolarsDataFrameDPAccessor", "PolarsLazyFrameDPAccessor"]

pl = polars_module()


def _polars_engine() -> Engine:
    return POLARS_ENGINE


register_engine(PolarsFrame, _polars_engine)


@pl.api.register_lazyframe_namespace("dp")
class PolarsLazyFrameDPAccessor(DataFrameDPAccessor):
    """``polars.LazyFrame.dp``: the releases of ``pandas.DataFrame.dp``, counted by Polars' streaming engine."""

    def _frame(self) -> PolarsFrame:
        return polars_frame(self._obj)


@pl.api.register_dataframe_namespace("dp")
class PolarsDataFrameDPAccessor(DataFrameDPAccessor):
    """``polars.DataFrame.dp``: the releases of ``pandas.DataFrame.dp``, on the frame's lazy query."""

    def _frame(self) -> PolarsFrame:
        return polars_frame(self._obj)
