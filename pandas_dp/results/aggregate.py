"""``Aggregate``: counts, sums and means per cell, shaped like ``df.groupby(cells).agg(aggs)``."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

from pandas_dp._utils.checks import normal_quantile
from pandas_dp._utils.optional import import_optional
from pandas_dp.algorithms.aggregate import ValueColumn
from pandas_dp.algorithms.quantiles import row_intervals
from pandas_dp.domain.timevalues import NAT, UNITS
from pandas_dp.errors import ParameterError
from pandas_dp.results._checks import check_axes
from pandas_dp.results._base import FrozenRelease, MeasureView
from pandas_dp.results._format import estimates_table, guarantee_text, html_params, privacy_text
from pandas_dp.results.frozen import stored_fields

__all__ = ["Aggregate", "as_time", "as_duration"]


def _nanoseconds(keys: np.ndarray, v: ValueColumn) -> np.ndarray:
    """Keys of ``v.unit`` as int64 nanoseconds (NaT where not finite or out of range)."""
    x = np.asarray(keys, dtype=np.float64) * UNITS[v.unit]
    ok = np.isfinite(x) & (np.abs(x) < 9.2e18)
    return np.where(ok, np.rint(np.where(ok, x, 0.0)), 0.0).astype(np.int64) * ok + NAT * ~ok


def as_time(keys: np.ndarray, v: ValueColumn) -> pd.DatetimeIndex:
    """Date keys (``v.unit`` since the epoch; UTC instants with a time zone) as dates, in ``v.tz``."""
    out = pd.DatetimeIndex(_nanoseconds(keys, v).view("M8[ns]"))
    return out.tz_localize("UTC").tz_convert(v.tz) if v.tz is not None else out


def as_duration(keys: np.ndarray, v: ValueColumn) -> pd.TimedeltaIndex:
    """Duration keys (``v.unit``) as durations."""
    return pd.TimedeltaIndex(_nanoseconds(keys, v).view("m8[ns]"))


@stored_fields
@dataclass(frozen=True, repr=False, eq=False)
class Aggregate(FrozenRelease, MeasureView):
    """Differentially private statistics of value columns per cell (``DataFrame.dp.aggregate``).

    Attributes
    ----------
    estimates : DataFrame
        One row per cell, columns ``(value column, statistic)`` (what :meth:`to_frame` returns).
    std_errors : DataFrame
        The standard error of every estimate, same shape (NaN where a mean is flagged).
    count : DataFrame
        The noisy number of rows with a value of each value column whose count was measured (for
        ``"count"`` and ``"mean"``), one column per value column.
    epsilon : float or None
        The pure epsilon charged (None for a zCDP release).
    params : Mapping
        Bounds, resolution, the split, every measurement's sensitivity and noise (read-only).
    rules : tuple
        Per column of ``estimates``: how its intervals are drawn, ``(kind, noise, a, b)``.
    loss : PrivacyLoss
        The release's loss.
    columns : tuple
        The cell columns (empty: one row for all rows).
    levels : tuple of str
        By geography: the levels, ``"national"`` first (empty otherwise). ``estimates`` is then indexed
        by ``(level, region, *cells)`` and :meth:`to_frame` is tidy, with ``level`` and ``region`` columns.
    times : tuple
        Per column of ``estimates``: ``None``, or the date or duration column it estimates (``estimates``
        then holds keys of its time unit; :meth:`to_frame` and the intervals give dates or durations,
        :meth:`std_error` durations).
    bands : tuple
        Per column of ``estimates``: ``None``, or for a quantile every cell's CDF (prefixes, their noise
        variances, the suffixes', the sub-bin edges, ``q``), from which its intervals are drawn at any level.

    Notes
    -----
    Intervals: a count (and a sum without a mean) is its exact value plus one draw of integer
    noise, so its interval uses the noise's exact quantile. A quantile's interval inverts the bands
    of its cell's CDF (:mod:`pandas_dp.algorithms.quantiles`). A mean (and a sum derived with it)
    uses the delta method, ``mean ± f se`` with ``f`` the centred sum's noise
    :meth:`~pandas_dp.privacy.loss.Noise.tail_factor` (a Laplace-shaped radius under pure DP),
    clipped to the bounds. The intervals cover the noise only: the statistics of the clipped,
    rounded values of the rows each unit kept, not of the raw values.
    """

    estimates: pd.DataFrame
    std_errors: pd.DataFrame
    count: pd.DataFrame
    epsilon: float | None
    params: Mapping[str, Any]
    rules: tuple[Any, ...] = ()
    loss: Any = field(default=None, compare=False)
    columns: tuple[Any, ...] = ()
    levels: tuple[str, ...] = ()
    times: tuple[Any, ...] = ()
    bands: tuple[Any, ...] = ()

    method = "aggregate"

    def _shaped(self, frame: pd.DataFrame, *, spread: bool = False) -> pd.DataFrame:
        """``frame`` as the user sees it: dates and durations as such (``spread``: a standard error, always a
        duration), and by geography the tidy form (``level``, ``region`` and the cells as columns)."""
        if any(t is not None for t in self.times):
            columns = {}
            for j, key in enumerate(frame.columns):
                t, values = self.times[j], frame.iloc[:, j].to_numpy(dtype=np.float64)
                if t is None:
                    columns[key] = frame.iloc[:, j]
                else:
                    typed = as_time(values, t) if t.kind == "datetime" and not spread else as_duration(values, t)
                    columns[key] = pd.Series(typed, index=frame.index)
            frame = pd.DataFrame(columns, index=frame.index, columns=frame.columns)
        return frame.reset_index() if self.levels else frame

    def to_frame(self) -> pd.DataFrame:
        """The estimates, one row per cell, columns ``(value column, statistic)`` (``frame["income", "mean"]``).

        Examples
        --------
        >>> import numpy as np, pandas_dp as pdp
        >>> from pandas_dp.data import load_persons
        >>> persons = load_persons()
        >>> with pdp.budget(epsilon=1.0):
        ...     agg = persons.dp.aggregate("sex", {"age": ["count", "mean"]}, categories=["F", "M"],
        ...                                bounds={"age": (0, 100)}, epsilon=1.0, rng=np.random.default_rng(0))
        >>> agg.to_frame().columns.tolist()
        [('age', 'count'), ('age', 'mean')]

        By geography (``by=``) the frame is tidy, one row per region and cell with ``level`` and
        ``region`` columns first, as ``df.groupby(...).agg(...).reset_index()`` would have them.
        """
        return self._shaped(self.estimates)

    def std_error(self) -> pd.DataFrame:
        """The standard error of every estimate, shaped like :meth:`to_frame`."""
        return self._shaped(self.std_errors, spread=True)

    def confidence_interval(self, level: float = 0.95) -> tuple[pd.DataFrame, pd.DataFrame]:
        """``(low, high)`` frames shaped like :meth:`to_frame`: intervals at ``level`` (see the class notes).

        Raises
        ------
        ParameterError
            When ``level`` is not a number in (0, 1).
        """
        low, high = self._intervals(level)
        return self._shaped(low), self._shaped(high)

    def _intervals(self, level: float) -> tuple[pd.DataFrame, pd.DataFrame]:
        """:meth:`confidence_interval`, indexed like ``estimates``."""
        normal_quantile(level)
        est = self.estimates.to_numpy(dtype=np.float64)
        se = self.std_errors.to_numpy(dtype=np.float64)
        low, high = np.empty_like(est), np.empty_like(est)
        for j, (kind, noise, a, b) in enumerate(self.rules):
            if kind == "exact":
                radius = np.full(est.shape[0], float(noise.interval_radius(level)))
            elif kind == "exact_scaled":
                radius = np.full(est.shape[0], a * float(noise.interval_radius(level)))
            elif kind == "quantile":
                prefix, prefix_var, suffix_var, edges, q = self.bands[j]
                low[:, j], high[:, j] = row_intervals(prefix, prefix_var, suffix_var, edges, q, normal_quantile(level))
                continue
            else:
                radius = noise.tail_factor(level) * se[:, j]
            low[:, j], high[:, j] = est[:, j] - radius, est[:, j] + radius
            if kind == "tail" and np.isfinite(a):
                low[:, j], high[:, j] = np.clip(low[:, j], a, b), np.clip(high[:, j], a, b)
        frame = self.estimates
        return (pd.DataFrame(low, index=frame.index, columns=frame.columns),
                pd.DataFrame(high, index=frame.index, columns=frame.columns))

    def plot(self, column: Any, statistic: str = "mean", ax: Any = None, *, level: float = 0.95, **kwargs: Any) -> Any:
        """A bar chart of one statistic per cell with error bars (the intervals at ``level``; matplotlib)."""
        check_axes(ax, "Aggregate.plot()")
        key = (column, statistic)
        if not any(key == k for k in self.estimates.columns):
            raise ParameterError(f"Aggregate.plot(): no {key!r} among the released statistics "
                                 f"{list(self.estimates.columns)}.")
        low, high = self._intervals(level)
        est = self.estimates[key].to_numpy(dtype=np.float64)
        errors = np.vstack([est - low[key].to_numpy(), high[key].to_numpy() - est])
        if ax is None:
            ax = import_optional("matplotlib.pyplot", extra="plot", purpose="Aggregate.plot()").subplots()[1]
        labels = [str(x) for x in self.estimates.index]
        ax.bar(labels, est, yerr=errors, capsize=3, **kwargs)
        ax.set_ylabel(f"{statistic} of {column}")
        return ax

    def _guarantee(self, *, html: bool = True) -> str:
        return guarantee_text(self.loss, self.epsilon, [], html=html)

    def _shown(self) -> pd.DataFrame:
        """The first ten rows of the estimates as printed (dates and durations as text)."""
        head = self.estimates.head(10)
        if not any(t is not None for t in self.times):
            return estimates_table(head)
        typed = self._shaped(head).set_axis(head.index) if self.levels else self._shaped(head)
        if self.levels:
            typed = typed.iloc[:, len(head.index.names):]
        table = estimates_table(head).astype(object)
        for j, t in enumerate(self.times):
            if t is not None:
                table.iloc[:, j] = typed.iloc[:, j].astype(str).to_numpy()
        return table

    def __repr__(self) -> str:
        shown = self._shown()
        more = f"\n… {len(self.estimates) - 10:,} more cells" if len(self.estimates) > 10 else ""
        return (f"Aggregate({privacy_text(self.loss, self.epsilon, html=False)}, cells={list(self.columns)}, "
                f"statistics={list(self.estimates.columns)})\n{shown.to_string()}{more}")

    def _repr_html_(self) -> str:
        shown = self._shown()
        return (f"<div><strong>Aggregate</strong> — {privacy_text(self.loss, self.epsilon)}, "
                f"{len(self.estimates):,} cells over {html.escape(str(list(self.columns)))}"
                f"<br><small>{html_params(self.params)}</small>{shown.to_html()}</div>")
