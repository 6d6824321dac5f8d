"""The ``UnattributedHistogram`` result: a private sorted list of per-group counts."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

from pandas_dp._utils.optional import import_optional
from pandas_dp.results._base import EstimatesView, FrozenRelease, MeasureView
from pandas_dp.results._checks import check_axes
from pandas_dp.results._format import estimates_table, guarantee_text, html_params
from pandas_dp.results.frozen import stored_fields
from pandas_dp.results._sampling import group_sizes_rows
from pandas_dp.results._plot import readable_numbers
from pandas_dp.results.histogram import html_estimates

__all__ = ["UnattributedHistogram"]


@stored_fields
@dataclass(frozen=True, repr=False, eq=False)
class UnattributedHistogram(FrozenRelease, EstimatesView, MeasureView):
    """Hay et al.'s S-bar: per-group counts in ascending order, without the group labels.

    Attributes
    ----------
    counts : Series
        Estimated counts, sorted ascending, indexed by rank ``0..n-1``
        (non-negative integers).
    variance : Series
        Per-position variance estimate ``Var(noise) / m`` (``m``: length of
        the isotonic block holding the position; partition effects excluded).
    epsilon : float or None
        Privacy loss charged (pure DP; None for a zCDP release).
    method : str
        ``"sbar"``.
    params : Mapping
        Noise scale (``noise_scale``, or ``sigma2`` for zCDP), whether the
        number of groups was public, budget shares (a read-only ``dict``).
    post_processing : tuple of str
        Steps applied after the noise.
    loss : PrivacyLoss
        The release's privacy loss (``PureDP`` epsilon or ``ZCDP`` rho); see ``measure`` and ``rho``.
    """

    counts: pd.Series
    variance: pd.Series
    epsilon: float | None
    method: str
    params: Mapping[str, Any]
    post_processing: tuple[str, ...] = ()
    loss: Any = field(default=None, compare=False)

    def _guarantee(self, *, html: bool = True) -> str:
        """``ε = 1, noise scale t = 1`` or ``ρ = 0.5 (zCDP), σ = 1`` (the sorted counts' noise)."""
        return guarantee_text(self.loss, self.epsilon, self.params, html=html)

    def to_count_of_counts(self) -> pd.Series:
        """Number of groups per count (Series indexed by ``size``)."""
        sizes, groups = np.unique(self.counts.to_numpy(), return_counts=True)
        return pd.Series(groups.astype(np.int64), index=pd.Index(sizes, name="size"), name="groups")

    def sample(self, n: int | None = None, rng: Any = None) -> pd.DataFrame:
        """Synthetic groups drawn from this release (post-processing: no budget is spent).

        Parameters
        ----------
        n : int, optional
            Number of groups. ``None`` gives every released group once (in
            random order); an integer draws groups uniformly with replacement.
        rng : numpy.random.Generator, optional
            ``None`` uses ``numpy.random.default_rng()`` seeded from OS entropy
            (the draws post-process public output: predictability is harmless).

        Returns
        -------
        DataFrame
            Columns ``group`` (synthetic id ``0..n-1``) and ``size`` (rows in
            the group, a released count).

        Examples
        --------
        >>> import numpy as np, pandas as pd, pandas_dp as pdp
        >>> edges = pd.DataFrame({"src": [1, 1, 2, 3, 3, 3]})
        >>> with pdp.budget(epsilon=1.0):
        ...     u = edges.dp.unattributed_histogram("src", epsilon=1.0, groups=[1, 2, 3, 4],
        ...                                         rng=np.random.default_rng(0))
        >>> list(u.sample(rng=np.random.default_rng(0)).columns)
        ['group', 'size']
        """
        return group_sizes_rows(self.counts.to_numpy(), n, rng)

    def plot(self, ax: Any = None, *, confidence_level: float = 0.95, **kwargs: Any) -> Any:
        """Sorted counts as a step line in a band of their confidence intervals; returns the matplotlib Axes.

        Parameters
        ----------
        ax : matplotlib Axes, optional
        confidence_level : float
            Coverage of the band, from :meth:`confidence_interval`.
        **kwargs
            Passed to ``Axes.step``.
        """
        plt = import_optional("matplotlib.pyplot", extra="plot", purpose="UnattributedHistogram.plot()")
        check_axes(ax, "UnattributedHistogram.plot()")
        ci = self.confidence_interval(confidence_level)
        confidence_level = float(confidence_level)  # validated: a plain float for the label
        counts = self.counts
        if ax is None:
            _, ax = plt.subplots(figsize=(8, 4))
        x = np.arange(len(counts))
        ax.fill_between(x, ci["lower"].to_numpy(), ci["upper"].to_numpy(), alpha=0.3, step="mid",
                        label=f"{float(confidence_level):.0%} interval")
        ax.step(x, counts.to_numpy(), where="mid", **kwargs)
        ax.set_xlim(-0.5, max(len(counts) - 0.5, 0.5))
        readable_numbers(ax.xaxis)
        readable_numbers(ax.yaxis)
        ax.set_xlabel("rank")
        ax.set_ylabel("count")
        ax.legend(loc="upper left", fontsize="small")
        ax.set_title(f"unattributed histogram (S-bar), {self._guarantee()}")
        return ax

    def __repr__(self) -> str:
        return (f"UnattributedHistogram({self._guarantee(html=False)}, groups={len(self.counts):,})\n"
                + estimates_table(self.to_count_of_counts().head(10).to_frame()).to_string())

    def _repr_html_(self) -> str:
        table = estimates_table(self.to_count_of_counts().head(10).to_frame()).to_html()
        ranks = html_estimates(self.to_frame().tail(5), index_name="rank (largest)")
        return (f"<div><strong>UnattributedHistogram</strong> — method <code>{html.escape(self.method)}</code> "
                f"(S-bar), {self._guarantee()}, {len(self.counts):,} groups<br><small>"
                f"{html_params(self.params)}</small>"
                f"<p>groups per size (first sizes):</p>{table}<p>largest counts:</p>{ranks}</div>")
