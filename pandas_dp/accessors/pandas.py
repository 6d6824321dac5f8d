"""The ``.dp`` accessor on pandas DataFrames and Series.

Thin and stateless: each method has its real signature and numpydoc
docstring, and passes its arguments in one place (:meth:`DPAccessorBase._release`)
to its entry of the registry (:data:`pandas_dp.releases.registry.ENTRIES`),
whose release function runs the one release pipeline (validate, check the
budget, count, charge, noise, wrap). The knob paragraphs of the docstrings
(``{name}`` marker lines) are generated at import from the entry's parameter
table, so they list every registered method and knob. The ``Series.dp``
methods are derived from the ``DataFrame.dp`` ones: same signatures without
the column argument, the Series being that column.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Literal

import pandas as pd

from pandas_dp.releases.count_of_counts import Estimator, Merge
from pandas_dp.releases.methods import MethodName
from pandas_dp.releases.methods.hierarchical import BudgetSplit
from pandas_dp.releases.params import fill_doc
from pandas_dp.releases.registry import ENTRIES
from pandas_dp.results.aggregate import Aggregate
from pandas_dp.results.quantiles import Quantiles
from pandas_dp.results.hierarchical import HierarchicalHistogram
from pandas_dp.results.count_of_counts import CountOfCounts
from pandas_dp.results.geography import GeographyHistogram
from pandas_dp.results.histogram import Histogram
from pandas_dp.results.marginals import MarginalTables
from pandas_dp.results.unattributed import UnattributedHistogram

__all__ = ["DPAccessorBase", "DataFrameDPAccessor", "SeriesDPAccessor"]

#: ``histogram(method=...)``: every registered histogram method (checked by tests/test_declarations.py).
HistogramMethodName = MethodName


class DPAccessorBase:
    """The releases of ``DataFrame.dp``; each takes the column(s) first."""

    def __init__(self, obj: pd.DataFrame | pd.Series) -> None:
        self._obj = obj

    def _frame(self) -> pd.DataFrame:
        return self._obj

    def _release(self, name: str, arguments: dict[str, Any]) -> Any:
        """The one dispatch: the entry ``name`` of the registry, run on this frame with the method's arguments."""
        return ENTRIES[name].call(self._frame(), arguments)

    def histogram(self, columns: Any, *, bins: Any = None, range: Any = None, categories: Any = None,
                  other: Any = None, epsilon: float | None = None, rho: float | None = None,
                  delta: float | None = None,
                  method: HistogramMethodName = "identity", rng: Any = None,
                  nonnegative: bool = False, privacy_unit: Any = None, max_rows: int | str | None = None,
                  max_cells: int | None = None, max_rows_per_cell: int | None = None,
                  report_dropped: float | None = None,
                  by: str | list[str] | None = None, hierarchy: pd.DataFrame | None = None,
                  by_categories: Any = None, level_weights: Any = None, integer: bool | None = None,
                  public_totals: Any = None, **method_params: Any) -> Histogram | GeographyHistogram:
        """Release a differentially private histogram of one or more columns (per region with ``by=``).

        Parameters
        ----------
        columns : str or list of str
            Column(s) to count; several columns give a d-dimensional grid of cells.
        bins : int, sequence of edges, IntervalIndex or frequency string, optional
            Numeric bins: increasing edges (bin i is ``[edges[i], edges[i+1])``),
            or a number of equal-width bins together with ``range``. Dates and
            durations: Timestamp/Timedelta edges (e.g. ``pd.date_range(...)``),
            or a frequency such as ``"MS"`` or ``"7D"`` with a public ``range``.
            A contiguous ``pd.IntervalIndex`` gives its intervals. For several
            columns: a list aligned with ``columns`` or a dict keyed by column.
            See the dates guide (docs/guide/dates.md).
        range : (low, high), optional
            Public bounds for ``bins=int``; never derived from the data.
        categories : list of labels, "dtype" or "discover", optional
            The public list of every possible label of a column. ``"dtype"``
            uses a pandas ``Categorical`` column's own categories: only when
            the dtype was built from a public codebook
            (``pd.CategoricalDtype(codebook)``), never after
            ``astype("category")``, which builds them from the data.
            ``"discover"`` (one column, needs ``delta``): no codebook; every
            label present is counted with noise and only the labels whose noisy
            count reaches a calibrated threshold are released, in their natural
            sort order (``result.params["threshold"]``; labels with true counts
            below about it may be missing). See the guide's "Unknown labels".
        other : label or dict, optional
            With ``categories``: the label of one more cell, last, counting every
            value outside the list (unknown labels, values of another type);
            missing values are still dropped (there is no ``dropna=``: fill them
            with a label of the list to count them). One label applies to every column
            with categories; a dict keyed by column (``{"product": "Other"}``)
            picks columns. The cell is there whether or not a row falls in it,
            and a row still counts in exactly one cell (same noise). Not on
            ``by`` columns: rows outside the geography stay dropped.
        epsilon : float
            Privacy loss (pure DP) charged to the active budget. Pass exactly
            one of ``epsilon`` and ``rho``.
        rho : float
            Privacy loss in zero-concentrated DP, where the method supports it.
        delta : float, optional
            Only with ``categories="discover"``: the approximate part, ``0 < delta < 1``,
            charged to the budget's delta (open it with ``pandas_dp.budget(..., delta=...)``).
        {method}
        rng : numpy.random.Generator, optional
            Only for reproducible experiments; the default ``None`` draws from a
            cryptographically secure source (use it in production).
        nonnegative : bool
            Clip negative estimates at 0 (post-processing; error bars become noise-only).
            With ``by=``: non-negative tables that stay consistent (top-down projection).
        {privacy_unit max_rows max_cells max_rows_per_cell report_dropped}
        by : str or list of str, optional
            Geography columns of the frame, coarse to fine (``["state", "county"]``):
            release one histogram for every region of every level, from ``"national"``
            (all rows) down to the finest column, consistent (each parent's histogram is
            the sum of its children's in every cell, exact GLS across the geography).
            Returns a :class:`~pandas_dp.results.geography.GeographyHistogram`. Only
            ``method="identity"`` (a flat table per region).
        hierarchy : DataFrame, optional
            With ``by``: the public region table, one column per ``by`` level, one row per
            finest region (validated loudly with pandera before anything is read). Regions
            never come from the data: a row whose region is not in it, is missing, or whose
            coarser columns disagree with it is out of domain and dropped, silently.
        by_categories : list, optional
            With one ``by`` column instead of ``hierarchy``: every group label (the flat
            case: one table per group, parallel composition, the whole loss on the groups;
            the national table is their sum).
        level_weights : list or dict, optional
            With ``by``: each level's share of the loss (``"national"`` first, or a dict
            keyed by level; 0 leaves a level unmeasured, the finest must be positive).
            Levels compose sequentially, the regions of a level in parallel. Default:
            uniform (``by_categories``: all on the groups).
        integer : bool, optional
            With ``by``: non-negative integer tables, still consistent (controlled rounding,
            each value the floor or ceiling of its non-negative estimate). Also a knob of
            ``method="hierarchical"``.
        public_totals : dict, optional
            With ``by``: ``{level: Series of totals indexed by every region of the level}``,
            public facts (e.g. last census's populations; never computed from this frame)
            that every region's histogram at that level sums to exactly; coarser levels are
            their sums, finer ones are conditioned on them (the variances account for it).
            The guarantee is relative to them, for neighbours that change one record within
            the totals (the noise is calibrated for it: ``params["neighbours"]``). With
            ``nonnegative``/``integer``: a
            ``"national"`` total only (an integer one for ``integer``).
        {method_params}

        Returns
        -------
        Histogram or GeographyHistogram
            The method's result class (``HierarchicalHistogram``, ``AHPHistogram``,
            ``DPCubeHistogram``, ``DAWAHistogram``, ``GridHistogram`` are Histograms;
            ``"auto"`` records its choice in ``params["auto_reason"]``). A
            ``GeographyHistogram`` with ``by=``: ``counts`` indexed by ``(level, region, *cells)``,
            ``at(level, region)``, tidy ``to_frame()``, ``range_query(..., level=, region=)``,
            ``plot()``, ``sample()``.

        Raises
        ------
        NoActiveBudgetError
            Outside a ``with pandas_dp.budget(...)`` block.
        BudgetExceededError
            When ``epsilon`` is more than the budget has left (nothing is charged).
        DomainError
            When the domain would come from the data (e.g. ``bins=10`` without ``range``).
        ParameterError
            For any other invalid argument. Every error is raised before any charge.

        Notes
        -----
        Rows outside the domain, missing values and values that are not of the
        domain's kind (a stray string in a numeric column, an unknown label)
        are dropped; how many is never revealed. Adding or removing one row
        changes one cell by one.

        Examples
        --------
        >>> import numpy as np, pandas as pd, pandas_dp as pdp
        >>> df = pd.DataFrame({"age": [23, 35, 35, 61, 17]})
        >>> with pdp.budget(epsilon=1.0):
        ...     h = df.dp.histogram("age", bins=4, range=(0, 80), epsilon=0.5,
        ...                         rng=np.random.default_rng(0))
        >>> h.counts.index[0]
        Interval(0, 20, closed='left')

        One consistent table per region of a public geography:

        >>> from pandas_dp.data import load_persons, load_households
        >>> persons = load_persons()
        >>> regions = load_households()[["state", "county"]].drop_duplicates()
        >>> with pdp.budget(epsilon=1.0):
        ...     t = persons.dp.histogram("sex", categories=["F", "M"], by=["state", "county"],
        ...                              hierarchy=regions, epsilon=1.0, integer=True,
        ...                              rng=np.random.default_rng(0))
        >>> t.levels
        ('national', 'state', 'county')
        >>> bool((t.at("state").groupby("sex", observed=True).sum() == t.at("national")).all())
        True
        """
        return self._release("histogram", locals())


    def count_of_counts(self, group: str, location: Any, *, epsilon: float | None = None, rho: float | None = None,
                        groups: pd.DataFrame | None = None,
                        hierarchy: pd.DataFrame | None = None, max_size: int | None = None,
                        method: Estimator = "hc", merge: Merge = "weighted", progress: bool | None = None,
                        rng: Any = None, privacy_unit: str | None = None,
                        level_weights: Any = None) -> CountOfCounts:
        """Release consistent count-of-counts histograms for every region of a hierarchy.

        For every region and size ``i``: how many groups (households) have ``i``
        entities (persons). Kuo et al., PVLDB 2018. Neighbouring frames differ
        by one row of this (entities) frame.

        Parameters
        ----------
        group : str
            Column of group ids (e.g. ``"household_id"``).
        location : str or list of str
            Columns of regions, coarse to fine (``["state", "county"]``), or the
            leaf column together with ``hierarchy=``. The root is ``"national"``.
        epsilon : float
            Privacy loss charged to the active budget (once, for all levels).
        rho : float
            Privacy loss in zero-concentrated DP instead (pass exactly one of the two).
        groups : DataFrame, optional
            The public Groups table: one row per group (empty groups included)
            with the ``group`` and location columns. Its numbers of groups per
            region are then matched exactly. Without it they are estimated
            privately with 1/10 of ``epsilon`` (non-negative least squares).
        hierarchy : DataFrame, optional
            Public region table, one column per level coarse to fine. Needed
            when ``groups`` is not given (regions are never read from the data).
        {max_size method merge progress}
        rng : numpy.random.Generator, optional
            Reproducible experiments only; ``None`` uses secure randomness.
        privacy_unit : {"person", "group"}, optional
            ``"person"`` (default, Kuo et al.): neighbours differ by one row of this frame.
            ``"group"``: household-level privacy, neighbours differ by one whole group and its
            persons; needs a public ``max_size`` (groups larger keep ``max_size`` persons), and
            the noise grows with it (``hc``: sensitivity ``max_size`` per level).
        level_weights : list or dict, optional
            Each level's share of the loss (``"national"`` first, or a dict keyed by level);
            default equal. Levels of weight 0 at the fine end are neither measured nor
            released: ``[1, 0, 0]`` releases the national table alone with the whole loss.

        Returns
        -------
        CountOfCounts
            Integral, non-negative, consistent histograms matching the group totals.

        Raises
        ------
        SchemaError
            With every failure case of the public tables (nothing read or charged).
            Persons rows that do not fit them are dropped silently, never reported
            (``pandas_dp.schema.check_persons`` lists them for the custodian).
        DomainError, ParameterError, NoActiveBudgetError, BudgetExceededError
            Before any charge.

        Examples
        --------
        >>> import numpy as np, pandas_dp as pdp
        >>> from pandas_dp.data import load_persons, load_households
        >>> persons, households = load_persons(), load_households()
        >>> with pdp.budget(epsilon=1.0):
        ...     coc = persons.dp.count_of_counts("household_id", ["state", "county"], epsilon=0.5,
        ...                                      groups=households, rng=np.random.default_rng(0))
        >>> int(coc.at("national").sum()) == len(households)
        True
        """
        return self._release("count_of_counts", locals())

    def unattributed_histogram(self, group: str, *, epsilon: float | None = None, rho: float | None = None,
                               groups: Any = None, rng: Any = None, privacy_unit: Any = None,
                               max_rows: int | None = None, max_cells: int | None = None,
                               max_rows_per_cell: int | None = None) -> UnattributedHistogram:
        """Release the sorted number of rows per group (Hay et al.'s S-bar), e.g. a degree sequence.

        Parameters
        ----------
        group : str
            Column of group ids.
        epsilon : float
            Privacy loss charged to the active budget.
        rho : float
            Privacy loss in zero-concentrated DP instead (pass exactly one of the two).
        groups : Series, Index, array or DataFrame, optional
            All group ids (public), including groups with no rows; rows of other
            ids are dropped. A DataFrame (a public groups table) gives them in
            its column named like ``group``. Without it the number of groups is estimated with
            1/10 of ``epsilon``, and a loss whose noise on that number could add more than
            2**21 positions (at tail probability 1e-6; for one row per unit, ``epsilon`` below
            about 6e-5) is refused before any charge, naming the smallest workable value.
        rng : numpy.random.Generator, optional
            Reproducible experiments only.
        {privacy_unit max_rows max_cells max_rows_per_cell}

        Notes
        -----
        ``max_rows`` must be a number here (not ``"auto"``); the privacy unit may be the group
        column itself: one unit is then all
        the rows of one group (for edges grouped by source: source-edge privacy, all edges out of one
        node; not node-level privacy, where removing a node also lowers the counts of the nodes it
        points to).

        Returns
        -------
        UnattributedHistogram
            Sorted non-negative integer counts with per-position error bars.

        Examples
        --------
        >>> import numpy as np, pandas as pd, pandas_dp as pdp
        >>> edges = pd.DataFrame({"src": [1, 1, 2, 3, 3, 3]})
        >>> with pdp.budget(epsilon=1.0):
        ...     u = edges.dp.unattributed_histogram("src", epsilon=1.0, groups=[1, 2, 3, 4],
        ...                                         rng=np.random.default_rng(0))
        >>> len(u.counts)
        4
        """
        return self._release("unattributed_histogram", locals())

    def marginals(self, workload: Any, *, bins: Any = None, categories: Any = None, other: Any = None,
                  epsilon: float | None = None,
                  rho: float | None = None, weights: Any = None, loss: Literal["sum", "max"] = "sum",
                  privacy_unit: Any = None, max_rows: int | None = None, by: Any = None, hierarchy: Any = None,
                  by_categories: Any = None, level_weights: Any = None, public_totals: Any = None,
                  rng: Any = None, nonnegative: bool = False,
                  integer: bool = False, ordered: Any = None) -> MarginalTables:
        """Release a set of cross-tabulations at once: one optimal measurement, consistent tables, exact errors.

        ResidualPlanner (Xiao, He, Zhang, Kifer, NeurIPS 2023): every marginal of the workload's
        downward closure may be measured with its own share of the loss, chosen to minimise the
        loss over the workload's cells; every table is then read from one least-squares estimate,
        so the tables agree exactly (a table summed over some of its columns is the smaller
        table, all share one total) and every cell has an exact variance.

        Parameters
        ----------
        workload : list of tuple
            The tables, each a tuple of column names: ``[("age", "sex"), ("sex", "race")]``
            (a one-column table is ``("age",)``).
        bins : dict, optional
            Public bins of numeric, date or duration columns, keyed by column, each as for
            :meth:`histogram` (edges, an ``IntervalIndex``...): ``{"age": [0, 18, 65, 120]}``.
        categories : dict, optional
            Public labels of the other columns, keyed by column: ``{"sex": ["F", "M"]}``
            (``"dtype"``: a Categorical column's own codebook). Every column of the workload
            needs one of the two; the domain is never read from the data.
        other : label or dict, optional
            An other cell (last) for columns with categories, counting every value outside
            their list, as for :meth:`histogram`: one label for every such column, or a dict
            keyed by column (``{"product": "Other"}``).
        epsilon : float
            Privacy loss (pure DP, discrete Laplace noise) charged once for every table.
        rho : float
            Privacy loss in zero-concentrated DP instead (exact discrete Gaussian noise).
        weights : list of float, optional
            One positive weight per workload table in the loss (default 1 each). Without them
            the plan also keeps every table's cell variance at most that of the table measured
            alone with an even split of the loss (every region of every level by geography;
            ``plan``'s ``alone_ratio``); with them it is the weighted optimum.
        loss : {"sum", "max"}
            ``"sum"``: minimise the weighted sum of every workload cell's variance;
            ``"max"``: the largest weighted cell variance.
        {privacy_unit max_rows}
        by : str or list of str, optional
            Geography columns of the frame, coarse to fine (``["state", "county"]``): the
            workload for every region of every level, from ``"national"`` down to the finest
            column; every level measures the workload (levels compose sequentially, the
            regions of a level in parallel), then exact GLS across the geography makes every
            child region's tables sum to its parent's, in every cell.
        hierarchy : DataFrame, optional
            With ``by``: the public region table, one column per ``by`` level, one row per
            finest region (validated with pandera before anything is read). A row whose region
            is not in it, is missing, or whose coarser columns disagree with it is dropped.
        by_categories : list, optional
            With one ``by`` column instead of ``hierarchy``: every group label (the flat case,
            the whole loss on the groups; the national tables are their sums).
        level_weights : list or dict, optional
            With ``by``: each level's share of the loss (``"national"`` first, or a dict keyed
            by level; 0 leaves a level unmeasured, the finest must be positive). Default:
            uniform (``by_categories``: all on the groups).
        public_totals : dict, optional
            With ``by``: ``{level: Series of totals indexed by every region of the level}``,
            public facts (e.g. last census's populations; never computed from this frame)
            that every table of that level and the sums below match exactly. The guarantee
            is relative to them, for neighbours that change one record within the totals
            (the noise is calibrated for it: ``params["neighbours"]``).
        rng : numpy.random.Generator, optional
            Reproducible experiments only; ``None`` uses secure randomness.
        {nonnegative integer ordered}

        Returns
        -------
        MarginalTables
            ``table(columns)`` for any workload table or sub-table of one (a ``Histogram``),
            ``to_frame()`` over every table, ``plan``, ``total_variance()``, ``plot()``,
            ``nonnegative()``, ``integer()``, ``sample()``. With ``by``:
            ``table(columns, level=, region=)`` and a tidy ``to_frame()`` with ``level`` and
            ``region``. With ``nonnegative=True`` or ``integer=True``: a ``PublishedTables``
            (by geography a ``GeographyPublishedTables``), a ``MarginalTables`` whose tables hold
            the published values with the unconstrained variances marked not exact, plus
            ``error()`` and ``sample()`` (records with their geography), the same as
            ``.nonnegative()`` / ``.integer()`` of the release.

        Raises
        ------
        NoActiveBudgetError, BudgetExceededError, DomainError, ParameterError
            All before any charge.

        Notes
        -----
        A row outside the domain of any workload column (a value outside the bins or
        categories, missing, or of another kind) is dropped from every table, uncounted.
        The privacy cost charged is the one the integer noise provably meets: each measured
        marginal is a histogram of sensitivity 1 (``max_rows`` with a privacy unit) noised
        whole, and the parts compose (docs/methods/marginals.md).

        Examples
        --------
        >>> import numpy as np, pandas_dp as pdp
        >>> from pandas_dp.data import load_persons
        >>> persons = load_persons()
        >>> with pdp.budget(rho=0.5):
        ...     t = persons.dp.marginals([("age", "sex"), ("sex", "state")], bins={"age": [0, 18, 65, 120]},
        ...                              categories={"sex": ["F", "M"], "state": "dtype"},
        ...                              rho=0.5, rng=np.random.default_rng(0))
        >>> bool(np.allclose(t.table(("age", "sex")).counts.groupby(level="sex").sum(), t.table("sex").counts))
        True
        """
        return self._release("marginals", locals())

    def aggregate(self, columns: Any, aggs: Any, *, bounds: Any, resolution: Any = None, bins: Any = None,
                  categories: Any = None, other: Any = None, epsilon: float | None = None, rho: float | None = None,
                  privacy_unit: Any = None, max_rows: int | None = None, by: Any = None, hierarchy: Any = None,
                  by_categories: Any = None, level_weights: Any = None, public_totals: Any = None,
                  rng: Any = None) -> Aggregate:
        """Release counts, sums and means of value columns per cell, in one release with one charge.

        Like ``df.groupby(columns).agg(aggs)`` over a public domain of cells, with public clipping
        bounds on every value column (docs/guide/aggregate.md).

        Parameters
        ----------
        columns : str, list of str, or []
            The cell columns, with their public domain as for :meth:`histogram`; ``[]``: no cells,
            one row for all rows.
        aggs : dict
            Value column -> statistic or list of statistics, as for pandas' ``agg``:
            ``{"income": ["sum", "mean"], "hours": "mean"}``. Statistics: ``"count"`` (rows with a
            value of that column), ``"sum"``, ``"mean"``, ``"median"`` and ``("quantile", q)`` (its
            column named ``"quantile(q)"``; read from 64 sub-bins of the bounds per cell).
        bounds : dict
            Value column -> ``(low, high)``: public clipping bounds for every value column, chosen
            without looking at the data (never read from it). Values are clipped to them. Numbers,
            or two dates for a date column (means come back as dates), or two durations for a
            duration column.
        resolution : float or dict, optional
            The public grid step of every value column (one number, or a dict by column; default 1;
            a duration for dates and durations, default one day and one second): clipped values
            are rounded to it, so sums are whole numbers of steps and get exact integer noise.
        bins, categories, other
            The public domain of the cell columns, as for :meth:`histogram` (``bins``: edges).
        epsilon : float
            Privacy loss (pure DP) charged once to the active budget, split equally across the measured
            quantities (counts, one sum per value column).
        rho : float
            Privacy loss in zero-concentrated DP instead (pass exactly one of the two).
        privacy_unit : column label, optional
            The column identifying each person: neighbouring frames then differ by all the rows of one
            unit. Default: one row is one unit.
        max_rows : int, optional
            With ``privacy_unit``: keep at most this many rows per unit in all cells together (chosen at
            random); every sensitivity is multiplied by it.
        by, hierarchy, by_categories, level_weights
            Statistics for every region of a public geography, as ``histogram(by=...)`` takes them
            (the frame's geography columns coarse to fine, the public table of regions or one level's
            labels, each level's weight): counts and sums consistent across the levels, means read
            from them.
        public_totals
            Refused for now (a ``ParameterError``, before any charge): a total counts rows, while a
            value column's count leaves out its missing values.
        rng : numpy.random.Generator, optional
            Only for reproducible experiments; ``None`` draws from a secure source.

        Returns
        -------
        Aggregate
            ``to_frame()`` one row per cell, columns ``(value column, statistic)`` (by geography:
            tidy, with ``level`` and ``region`` columns first); ``std_error()`` and
            ``confidence_interval(level)`` of that shape; ``count`` the noisy counts.

        Raises
        ------
        NoActiveBudgetError, BudgetExceededError, DomainError, ParameterError
            All before any charge.

        Notes
        -----
        One pass over the rows. A row outside the cells' domain is dropped; a missing or non-numeric
        value is dropped from its column's count and sum only. Sensitivities (in grid steps
        ``[a, b] = [rint(low / resolution), rint(high / resolution)]``, times ``max_rows`` with a
        privacy unit): a count 1, a sum ``max(|a|, |b|)``, a mean's centred sum ``b - a``. A mean is
        NaN where its cell is too small to say anything (noisy count at most 0, or a 95% interval
        covering the whole bounds).

        Examples
        --------
        >>> import numpy as np, pandas_dp as pdp
        >>> from pandas_dp.data import load_persons
        >>> persons = load_persons()
        >>> with pdp.budget(epsilon=1.0):
        ...     agg = persons.dp.aggregate("sex", {"age": ["count", "mean"]}, categories=["F", "M"],
        ...                                bounds={"age": (0, 100)}, epsilon=1.0, rng=np.random.default_rng(0))
        >>> frame = agg.to_frame()
        >>> list(frame.columns), list(frame.index)
        ([('age', 'count'), ('age', 'mean')], ['F', 'M'])
        >>> bool(((frame["age", "mean"] > 30) & (frame["age", "mean"] < 50)).all())
        True
        """
        return self._release("aggregate", locals())

    def quantiles(self, column: Any, q: Any, *, bounds: Any, epsilon: float | None = None, rho: float | None = None,
                  privacy_unit: Any = None, max_rows: int | None = None, by: Any = None, hierarchy: Any = None,
                  by_categories: Any = None, rng: Any = None) -> Quantiles:
        """Release quantiles of one column (medians, deciles...) with intervals, in one charge.

        The values are clipped to public bounds and counted on a public grid of 4,096 equal steps
        between them; a hierarchical histogram over that grid is released, and every quantile is read
        from its monotone CDF, its interval by inverting the tree's range intervals
        (docs/guide/quantiles.md). Every ``q`` shares the one release.

        Parameters
        ----------
        column : str
            A numeric, date or duration column.
        q : float or list of float
            Probabilities in ``[0, 1]`` (``0.5``: the median).
        bounds : (low, high)
            Public clipping bounds, never read from the data: two numbers, two dates or two durations.
            A value outside them counts at the nearest bound.
        epsilon : float
            Privacy loss (pure DP) charged once to the active budget.
        rho : float
            zCDP loss, instead of ``epsilon``.
        privacy_unit : str, optional
            The column identifying each person: neighbouring frames then differ by all the rows of one
            unit; needs ``max_rows``.
        max_rows : int, optional
            With ``privacy_unit``: each unit keeps at most this many rows (chosen at random).
        by, hierarchy, by_categories
            Quantiles of every region of a public geography, as for ``histogram(by=...)``: the rows of
            every region in 64 equal sub-bins of the bounds, released on every level (an equal part of
            the loss each) and consistent across levels; ``to_frame()`` is then tidy, one row per region
            and ``q`` with ``level`` and ``region`` first. ``q`` strictly between 0 and 1.
        rng : numpy.random.Generator, optional
            Only for reproducible experiments; ``None`` draws from a secure source.

        Returns
        -------
        Quantiles
            ``to_frame()``: one row per ``q`` with ``estimate``, ``ci_low``, ``ci_high`` and
            ``confidence_level`` (0.95); ``quantile(q)`` any other quantile from the same release.

        Raises
        ------
        NoActiveBudgetError, BudgetExceededError, DomainError, ParameterError
            All before any charge.

        Examples
        --------
        >>> import numpy as np, pandas_dp as pdp
        >>> from pandas_dp.data import load_persons
        >>> persons = load_persons()
        >>> with pdp.budget(epsilon=1.0):
        ...     ages = persons.dp.quantiles("age", [0.25, 0.5, 0.75], bounds=(0, 100), epsilon=1.0,
        ...                                 rng=np.random.default_rng(0))
        >>> frame = ages.to_frame()
        >>> list(frame.columns)
        ['estimate', 'ci_low', 'ci_high', 'confidence_level']
        >>> bool(frame["estimate"].is_monotonic_increasing)
        True
        """
        return self._release("quantiles", locals())

    def hierarchical_histogram(self, columns: Any, *, bins: Any = None, range: Any = None,
                               categories: Any = None, other: Any = None, epsilon: float | None = None, rho: float | None = None,
                               branching: int | str = "auto", budget_split: BudgetSplit = "uniform",
                               include_root: bool = False, consistent: bool = True, integer: bool = False,
                               nonnegative: bool = False, rng: Any = None, privacy_unit: Any = None,
                               max_rows: int | str | None = None,
                               max_cells: int | None = None,
                               max_rows_per_cell: int | None = None) -> HierarchicalHistogram:
        """Release a hierarchical histogram: noisy counts on a tree over the bins (H-bar, H_b^c).

        Parameters
        ----------
        columns : str or list of str
            Column(s) to count; several columns give a d-dim grid with fan-out ``b**d`` per node.
        bins, range, categories, other
            The public domain, as for :meth:`histogram` (``other``: a last cell for the values outside
            a list of categories).
        epsilon : float
            Privacy loss charged once to the active budget, split across the tree levels.
        rho : float
            Privacy loss in zero-concentrated DP instead (pass exactly one of the two).
        {branching budget_split include_root consistent integer}
        nonnegative : bool
            Non-negative leaf estimates that still sum consistently up the tree; error bars
            are then approximate (``variance_exact`` is False).
        rng : numpy.random.Generator, optional
            Reproducible experiments only; ``None`` uses secure randomness.
        {privacy_unit max_rows max_cells max_rows_per_cell}

        Returns
        -------
        HierarchicalHistogram
            Leaf estimates with exact variances, ``levels``, ``range_query`` with exact
            ``std_error``, ``average_range_variance()``.

        Raises
        ------
        NoActiveBudgetError, BudgetExceededError, DomainError, ParameterError
            As for :meth:`histogram`, all before any charge.

        Notes
        -----
        With a privacy unit, each level of the tree is calibrated to its own sensitivity under
        the unit's bounds.

        Examples
        --------
        >>> import numpy as np, pandas as pd, pandas_dp as pdp
        >>> df = pd.DataFrame({"income": np.arange(0, 100_000, 7)})
        >>> with pdp.budget(epsilon=1.0):
        ...     t = df.dp.hierarchical_histogram("income", bins=256, range=(0, 102_400),
        ...                                      epsilon=1.0, rng=np.random.default_rng(0))
        >>> t.branching, t.height
        (16, 2)
        """
        return self._release("hierarchical_histogram", locals())

    def range_query(self, column: Any, ranges: Any, *, bins: Any = None, range: Any = None,
                    categories: Any = None, epsilon: float | None = None, rho: float | None = None,
                    method: HistogramMethodName = "auto", rng: Any = None,
                    nonnegative: bool = False, privacy_unit: Any = None, max_rows: int | str | None = None,
                    max_cells: int | None = None, max_rows_per_cell: int | None = None,
                    **method_params: Any) -> pd.DataFrame:
        """Release the histogram best suited to range queries and answer ``ranges`` from it.

        Parameters
        ----------
        column : str
            The column (1-D).
        ranges : (low, high) or list of (low, high)
            Half-open ranges in value space; bounds must be bin edges.
        bins, range, categories
            The public domain, as for :meth:`histogram`.
        epsilon : float
            Privacy loss charged once to the active budget.
        rho : float
            Privacy loss in zero-concentrated DP instead (pass exactly one of the two).
        {method}
        rng, nonnegative
            As for :meth:`histogram`.
        {privacy_unit max_rows max_cells max_rows_per_cell method_params}

        Returns
        -------
        DataFrame
            Columns ``low, high, estimate, std_error, lower, upper`` (95% intervals),
            one row per range; the release
            is attached as ``answers.attrs["release"]`` (more ranges can be answered from
            it for free with ``release.range_query``).

        Examples
        --------
        >>> import numpy as np, pandas as pd, pandas_dp as pdp
        >>> df = pd.DataFrame({"age": np.arange(1000) % 120})
        >>> with pdp.budget(epsilon=1.0):
        ...     ans = df.dp.range_query("age", [(18, 26), (26, 65)], bins=120, range=(0, 120),
        ...                             epsilon=0.5, rng=np.random.default_rng(0))
        >>> list(ans.columns), ans.attrs["release"].method
        (['low', 'high', 'estimate', 'std_error', 'lower', 'upper'], 'hierarchical')
        """
        return self._release("range_query", locals())

for _entry in ENTRIES.values():  # the knob paragraphs, from each entry's parameter table
    _method = getattr(DPAccessorBase, _entry.name)
    _method.__doc__ = fill_doc(_method.__doc__, _entry.params)


def _series_method(name: str) -> Callable[..., Any]:
    """``Series.dp.<name>``: the DataFrame method with the Series as its column argument."""
    frame_method = getattr(DPAccessorBase, name)
    signature = inspect.signature(frame_method)
    params = list(signature.parameters.values())
    column = params[1]

    @functools.wraps(frame_method)
    def method(self: SeriesDPAccessor, *args: Any, **kwargs: Any) -> Any:
        return frame_method(self, self._name(), *args, **kwargs)

    method.__signature__ = signature.replace(parameters=[params[0], *params[2:]])  # type: ignore[attr-defined]
    method.__doc__ = (f"{(frame_method.__doc__ or '').strip().splitlines()[0]}\n\n"
                      f"Same parameters as :meth:`DataFrameDPAccessor.{name}` without ``{column.name}``: the "
                      f"Series is that column (a Series without a name is called ``\"value\"``).")
    return method


@pd.api.extensions.register_dataframe_accessor("dp")
class DataFrameDPAccessor(DPAccessorBase):
    """``DataFrame.dp``: differentially private releases of a frame's columns."""


@pd.api.extensions.register_series_accessor("dp")
class SeriesDPAccessor:
    """``Series.dp``: the releases of ``DataFrame.dp`` that read one column, without the column argument.

    Examples
    --------
    >>> import numpy as np, pandas as pd, pandas_dp as pdp
    >>> s = pd.Series(["a", "b", "a"], name="letter")
    >>> with pdp.budget(epsilon=1.0):
    ...     h = s.dp.histogram(categories=["a", "b", "c"], epsilon=1.0,
    ...                        rng=np.random.default_rng(0))
    >>> list(h.counts.index)
    ['a', 'b', 'c']
    """

    def __init__(self, obj: pd.Series) -> None:
        self._obj = obj

    def _name(self) -> Any:
        return self._obj.name if self._obj.name is not None else "value"

    def _frame(self) -> pd.DataFrame:
        return self._obj.to_frame(name=self._name())

    _release = DPAccessorBase._release  # the same one dispatch, on the Series as a one-column frame


for _entry in ENTRIES.values():
    if _entry.on_series:
        setattr(SeriesDPAccessor, _entry.name, _series_method(_entry.name))
