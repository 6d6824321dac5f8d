"""pandas_dp: differentially private histograms as one call on a pandas DataFrame.

Importing the package registers the ``.dp`` accessor on ``DataFrame`` and
``Series``::

    import pandas_dp as pdp
    with pdp.budget(epsilon=1.0):
        h = df.dp.histogram("age", bins=range(0, 121), epsilon=0.2)
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

import pandas_dp.accessors.pandas as _accessor  # noqa: F401  (registers DataFrame.dp and Series.dp)
from pandas_dp.accounting.budget import Budget, Charge, Reservation, active_budget, budget
from pandas_dp.errors import (
    BudgetError,
    BudgetExceededError,
    DomainError,
    NoActiveBudgetError,
    PandasDPError,
    LedgerError,
    ParameterError,
    GroupbyReleaseWarning,
    GroupbyAccessError,
    SchemaError,
)
from pandas_dp.accounting.ledger import Ledger
from pandas_dp.results import Histogram, RangeAnswer
from pandas_dp.results.count_of_counts import CountOfCounts
from pandas_dp.results.unattributed import UnattributedHistogram
from pandas_dp.results.data_dependent import AHPHistogram, DPCubeHistogram
from pandas_dp.results.geography import GeographyHistogram
from pandas_dp.results.marginals import MarginalHistogram, MarginalTables, PublishedTables
from pandas_dp.results.adaptive import DAWAHistogram, GridHistogram
from pandas_dp.results.hierarchical import HierarchicalHistogram

from pandas_dp.accessors.dask_hook import install as _install_dask_accessor

_install_dask_accessor()  # the same .dp accessor on Dask frames, registered when dask.dataframe imports

from pandas_dp.accessors.groupby import install as _install_groupby_message

_install_groupby_message()  # df.groupby(key).dp raises GroupbyAccessError with the one-release form



def __getattr__(name: str) -> object:
    # pandas_dp.schema loads pandera (slow to import) only when first used.
    if name == "schema":
        import importlib

        return importlib.import_module("pandas_dp.schema")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


try:
    __version__ = version("pandas-dp")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0+unknown"

__all__ = [
    "__version__",
    "budget",
    "Budget",
    "active_budget",
    "Charge",
    "Reservation",
    "Ledger",
    "Histogram",
    "RangeAnswer",
    "CountOfCounts",
    "UnattributedHistogram",
    "AHPHistogram",
    "DPCubeHistogram",
    "DAWAHistogram",
    "GridHistogram",
    "HierarchicalHistogram",
    "GeographyHistogram",
    "MarginalTables",
    "PublishedTables",
    "MarginalHistogram",
    "schema",
    "PandasDPError",
    "BudgetError",
    "BudgetExceededError",
    "NoActiveBudgetError",
    "DomainError",
    "SchemaError",
    "ParameterError",
    "GroupbyReleaseWarning",
    "GroupbyAccessError",
    "LedgerError",
]
