"""pandas_dp: differentially private tables as one call on a pandas DataFrame.

Importing the package registers the ``.dp`` accessor on ``DataFrame`` and ``Series`` (and on Dask frames
when ``dask.dataframe`` is imported, on Spark frames when ``pyspark.sql`` is). The nouns a user meets, in the order a release meets them:

**Budget.** ``with pandas_dp.budget(epsilon=...) as b:`` (or ``rho=`` for zCDP, ``delta=`` for approximate
DP) is the privacy loss a block may spend; every release inside is charged to it once, before any noise
(:class:`Budget`, :class:`Charge`, :class:`Reservation`, :func:`active_budget`). A budget opened on a
:class:`Ledger` (SQLite or PostgreSQL) is durable and tamper-evident across processes.

**Frame.** The private rows: a ``pandas.DataFrame`` (or a Dask or Spark one). Only the engines read them; a row
that does not fit the domain is dropped, uncounted, and never steers an error, a warning or the domain.

**Domain.** Public cells you declare: ``bins=``/``range=`` for numbers and dates, ``categories=`` (a
list, ``"dtype"``, or ``"discover"`` for labels without a codebook under ``(epsilon, delta)``), ``other=``
for a cell of everything else. Never read from the data.

**Privacy unit.** ``privacy_unit="person_id", max_rows=k``: several rows per person, bounded.

**Releases.** ``df.dp.histogram`` (methods: identity, hierarchical, AHP, DPCube, DAWA, UGrid/AGrid,
``"auto"``), ``df.dp.hierarchical_histogram`` and ``df.dp.range_query`` (trees for ranges),
``persons.dp.count_of_counts(group, location)``, ``df.dp.unattributed_histogram``, and
``df.dp.marginals(workload)`` (a table set from one ResidualPlanner measurement), and
``df.dp.aggregate(columns, aggs, bounds=...)`` (counts, sums and means per cell: :class:`Aggregate`), and
``df.dp.quantiles(column, q, bounds=...)`` (medians and other quantiles: :class:`Quantiles`; every 1-D
histogram answers ``quantile(q)`` too).

**Geography.** ``by=`` with a public ``hierarchy=`` (and ``by_categories=``, ``level_weights=``,
``public_totals=``): the same release for every region of a geography, consistent across levels.

**Results.** Frozen, picklable objects with exact error bars (:class:`Histogram`,
:class:`HierarchicalHistogram`, :class:`GeographyHistogram`, :class:`MarginalTables`,
:class:`PublishedTables`, :class:`CountOfCounts`, ...): ``to_frame()``, ``confidence_interval()``,
``range_query()``, ``plot()``, and free post-processing (non-negative or integer tables, synthetic rows).

**Command line.** ``python -m pandas_dp release spec.toml`` for ETL, ``python -m pandas_dp ledger``.

**Testing.** :mod:`pandas_dp.testing` (``assert_dp``) checks a release on neighbouring frames;
:mod:`pandas_dp.schema` validates public hierarchy and group tables ahead of time.

**Errors.** Every refusal is a :class:`PandasDPError` subclass, raised before any budget is spent.

::

    import pandas_dp as pdp
    with pdp.budget(epsilon=1.0):
        h = df.dp.histogram("age", bins=range(0, 121), epsilon=0.2)

docs/architecture.md maps the folders behind these nouns.
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
from pandas_dp.results.aggregate import Aggregate
from pandas_dp.results.quantiles import Quantiles
from pandas_dp.privacy.units import AutoMaxRows

from pandas_dp.accessors.import_hook import install as _install_lazy_accessors

_install_lazy_accessors()  # .dp on Dask, Polars and Spark frames, registered when the library imports

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
    "Aggregate",
    "Quantiles",
    "AutoMaxRows",
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
