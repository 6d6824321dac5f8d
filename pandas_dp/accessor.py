"""The ``.dp`` accessor on pandas DataFrames and Series.

Thin and stateless: each method picks the columns, then calls the public
release function in :mod:`pandas_dp.releases`, which validates, charges the
active budget and wraps the result. The Series accessor has the same methods
without the column argument.
"""

from __future__ import annotations

from typing import Any, Literal

import pandas as pd

from .releases import flat
from .results.histogram import Histogram

__all__ = ["DPAccessorBase", "DataFrameDPAccessor", "SeriesDPAccessor"]

HistogramMethodName = Literal["identity", "hierarchical", "ahp", "dpcube", "auto"]


class DPAccessorBase:
    """Methods shared by ``DataFrame.dp`` and ``Series.dp``; they take the column(s) first."""

    def __init__(self, obj: pd.DataFrame | pd.Series) -> None:
        self._obj = obj

    def _frame(self) -> pd.DataFrame:
        return self._obj  # type: ignore[return-value]

    def histogram(self, columns: Any, *, bins: Any = None, range: Any = None, categories: Any = None,
                  epsilon: float, method: HistogramMethodName = "identity", rng: Any = None,
                  nonnegative: bool = False, **method_params: Any) -> Histogram:
        """Release a differentially private histogram of one or more columns.

        Parameters
        ----------
        columns : str or list of str
            Column(s) to count; several columns give a d-dimensional grid of cells.
        bins : int or sequence of edges, optional
            Numeric bins: increasing edges (bin i is ``[edges[i], edges[i+1])``),
            or a number of equal-width bins together with ``range``. For several
            columns: a list aligned with ``columns`` or a dict keyed by column.
        range : (low, high), optional
            Public bounds for ``bins=int``; never derived from the data.
        categories : list of labels, optional
            The public list of labels of a categorical column. A pandas
            ``Categorical`` column uses its declared categories.
        epsilon : float
            Privacy loss charged to the active budget (required).
        method : {"identity", ...}
            Release method; ``"identity"`` adds one discrete Laplace draw per cell.
        rng : numpy.random.Generator, optional
            Only for reproducible experiments; the default ``None`` draws from a
            cryptographically secure source (use it in production).
        nonnegative : bool
            Clip negative estimates at 0 (post-processing; error bars become noise-only).
        **method_params
            Knobs of the chosen method (see its documentation).

        Returns
        -------
        Histogram

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
        Rows outside the domain and missing values are dropped; how many is
        never revealed. Adding or removing one row changes one cell by one.

        Examples
        --------
        >>> import numpy as np, pandas as pd, pandas_dp as pdp
        >>> df = pd.DataFrame({"age": [23, 35, 35, 61, 17]})
        >>> with pdp.budget(epsilon=1.0):
        ...     h = df.dp.histogram("age", bins=4, range=(0, 80), epsilon=0.5,
        ...                         rng=np.random.default_rng(0))
        >>> h.counts.index[0]
        Interval(0.0, 20.0, closed='left')
        """
        return flat.histogram(self._frame(), columns, bins=bins, range=range, categories=categories,
                              epsilon=epsilon, method=method, rng=rng, nonnegative=nonnegative,
                              **method_params)


@pd.api.extensions.register_dataframe_accessor("dp")
class DataFrameDPAccessor(DPAccessorBase):
    """``DataFrame.dp``: differentially private releases of a frame's columns."""


@pd.api.extensions.register_series_accessor("dp")
class SeriesDPAccessor(DPAccessorBase):
    """``Series.dp``: the same releases as ``DataFrame.dp`` without the column argument."""

    def _name(self) -> Any:
        return self._obj.name if self._obj.name is not None else "value"

    def _frame(self) -> pd.DataFrame:
        return self._obj.to_frame(name=self._name())

    def histogram(self, *, bins: Any = None, range: Any = None, categories: Any = None,  # type: ignore[override]
                  epsilon: float, method: HistogramMethodName = "identity", rng: Any = None,
                  nonnegative: bool = False, **method_params: Any) -> Histogram:
        """Release a differentially private histogram of this Series.

        Same parameters as :meth:`DataFrameDPAccessor.histogram` without ``columns``.

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
        return super().histogram(self._name(), bins=bins, range=range, categories=categories, epsilon=epsilon,
                                 method=method, rng=rng, nonnegative=nonnegative, **method_params)
