"""Register the ``.dp`` accessor on Spark frames when ``pyspark.sql`` is imported.

Importing pyspark costs about a second, so ``import pandas_dp`` does not import it. If
``pyspark.sql`` is already imported, the accessor is registered at once; otherwise a one-shot
import hook (:mod:`pandas_dp.accessors.import_hook`) registers it right after ``pyspark.sql``
finishes importing, whichever of the two is imported first.
"""

from __future__ import annotations

from pandas_dp.accessors.import_hook import when_imported

__all__ = ["install"]


def install() -> None:
    """Register now if pyspark.sql is loaded, else when it is."""
    when_imported("pyspark.sql", "pandas_dp.accessors.spark")
