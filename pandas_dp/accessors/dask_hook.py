"""Register the ``.dp`` accessor on Dask frames when ``dask.dataframe`` is imported.

Importing dask costs about a second, so ``import pandas_dp`` does not import
it. If ``dask.dataframe`` is already imported, the accessor is registered
at once; otherwise a one-shot import hook (:mod:`pandas_dp.accessors.import_hook`)
registers it right after ``dask.dataframe`` finishes importing, whichever of the
two is imported first.
"""

from __future__ import annotations

from pandas_dp.accessors.import_hook import when_imported

__all__ = ["install"]


def install() -> None:
    """Register now if dask.dataframe is loaded, else when it is."""
    when_imported("dask.dataframe", "pandas_dp.accessors.dask")
