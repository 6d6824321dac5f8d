"""The ``.dp`` accessor on Dask DataFrames and Series (extra ``dask``).

The classes are the pandas accessors themselves (same methods, parameters,
errors and results); the release functions see a Dask frame and ask
:func:`pandas_dp.engines.engine_for` for the Dask engine, which counts
partition by partition on the workers and returns only the aggregated counts.
Importing :mod:`pandas_dp` registers these when ``dask.dataframe`` imports.

Examples
--------
>>> import numpy as np, pandas as pd, dask.dataframe as dd, pandas_dp as pdp
>>> ddf = dd.from_pandas(pd.DataFrame({"age": [23, 35, 35, 61, 17]}), npartitions=2)
>>> with pdp.budget(epsilon=1.0):
...     h = ddf.dp.histogram("age", bins=4, range=(0, 80), epsilon=0.5,
...                          rng=np.random.default_rng(0))
>>> len(h.counts)
4
"""

from __future__ import annotations


from pandas_dp._utils.optional import import_optional
from pandas_dp.accessors.pandas import DataFrameDPAccessor, SeriesDPAccessor
from pandas_dp.engines import Engine, register_engine
from pandas_dp.engines.dask import DASK_ENGINE

__all__ = ["DaskDataFrameDPAccessor", "DaskSeriesDPAccessor"]

_extensions = import_optional("dask.dataframe.extensions", extra="dask", purpose="The .dp accessor on Dask frames")
_dd = import_optional("dask.dataframe", extra="dask", purpose="The .dp accessor on Dask frames")


def _dask_engine() -> Engine:
    return DASK_ENGINE


register_engine(_dd.DataFrame, _dask_engine)


@_extensions.register_dataframe_accessor("dp")
class DaskDataFrameDPAccessor(DataFrameDPAccessor):
    """``dask.dataframe.DataFrame.dp``: the releases of ``pandas.DataFrame.dp``, counted on the cluster."""


@_extensions.register_series_accessor("dp")
class DaskSeriesDPAccessor(SeriesDPAccessor):
    """``dask.dataframe.Series.dp``: the releases of ``pandas.Series.dp``, counted on the cluster."""
