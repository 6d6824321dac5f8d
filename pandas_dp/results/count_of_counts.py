"""The ``CountOfCounts`` result: consistent hierarchical count-of-counts histograms."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

from pandas_dp._utils.optional import import_optional
from pandas_dp._utils.rational import safe_repr
from pandas_dp.errors import ParameterError
from pandas_dp.results._base import FrozenRelease, MeasureView
from pandas_dp.results._checks import MAX_SAMPLE_ROWS, check_axes, check_count, check_flag, check_rows, find_label
from pandas_dp.results._format import estimates_table, guarantee_text, html_params
from pandas_dp.results.frozen import stored_fields
from pandas_dp.results._sampling import ancestors, persons_rows
from pandas_dp.results._plot import readable_numbers

__all__ = ["CountOfCounts", "emd_per_region"]

_COLUMNS = ["level", "region", "size", "groups"]


@stored_fields
@dataclass(frozen=True, repr=False, eq=False)
class CountOfCounts(FrozenRelease, MeasureView):
    """Differentially private count-of-counts histograms of every region of a hierarchy.

    For every region and size ``i``: the estimated number of groups (e.g.
    households) of that region with exactly ``i`` entities (persons).
    Always integral, non-negative, matching the (public or privately
    estimated) number of groups per region, and consistent: every region's
    histogram is the sum of its children's.

    Attributes
    ----------
    frame : DataFrame
        Tidy release: ``level``, ``region``, ``size``, ``groups`` (rows with
        ``groups > 0`` only), sorted by level (coarse to fine), region, size.
    levels : tuple of str
        Level names coarse to fine; the root is ``"national"``.
    regions : tuple of Index
        Region labels per level (public).
    epsilon : float or None
        Privacy loss charged (pure DP; None for a zCDP release).
    method : str
        Per-node estimator (``"hc"``, ``"hg"`` or ``"naive"``).
    params : Mapping
        Budget shares, the maximum size ``K`` used, merge rule, the noise of
        every level's estimator (``noise``; ``noise_scale_per_level`` or, for
        zCDP, ``sigma2_per_level``), ... (a read-only ``dict``;
        ``dict(result.params)`` gives an editable copy).
    post_processing : tuple of str
        Steps applied after the noise (free of privacy cost).
    parents : tuple, optional
        ``parents[l][i]``: position in level ``l-1`` of the parent of region
        ``i`` of level ``l`` (public hierarchy; used by :meth:`sample`).
    loss : PrivacyLoss
        The release's privacy loss (``PureDP`` epsilon or ``ZCDP`` rho); see ``measure`` and ``rho``.
    """

    frame: pd.DataFrame = field(compare=False)
    levels: tuple[str, ...]
    regions: tuple[pd.Index, ...] = field(compare=False)
    epsilon: float | None
    method: str
    params: Mapping[str, Any]
    post_processing: tuple[str, ...] = ()
    parents: tuple[Any, ...] | None = field(default=None, compare=False)
    loss: Any = field(default=None, compare=False)

    def _guarantee(self, *, html: bool = True) -> str:
        """``ε = 1, noise scale t = 2`` or ``ρ = 0.5 (zCDP), σ = 1.7`` (the noise of every level's estimator)."""
        p = self.params
        sigma2, scale = p.get("sigma2_per_level"), p.get("noise_scale_per_level")
        if isinstance(sigma2, (list, tuple)) or isinstance(scale, (list, tuple)):  # level_weights: one per level
            n = len(sigma2 if isinstance(sigma2, (list, tuple)) else scale)  # type: ignore[arg-type]
            described: Any = [{"sigma2": sigma2[k] if isinstance(sigma2, (list, tuple)) else sigma2,
                               "noise_scale": scale[k] if isinstance(scale, (list, tuple)) else scale}
                              for k in range(n)]
        else:
            described = {"sigma2": sigma2, "noise_scale": scale}
        return guarantee_text(self.loss, self.epsilon, described, html=html)

    # -- views ---------------------------------------------------------------
    def to_frame(self) -> pd.DataFrame:
        """The release as a tidy frame: ``level``, ``region``, ``size``, ``groups``."""
        return self.frame.copy()

    def _level_position(self, level: Any) -> int:
        """Position of a level name (ParameterError naming the levels when it is not one)."""
        found = find_label(level, self.levels)
        if found is None:
            raise ParameterError(f"Unknown level {safe_repr(level)}; this release has levels {list(self.levels)}.")
        return found

    def _region(self, level: Any, region: Any) -> Any:
        """The region label of ``level`` equal to ``region`` (ParameterError when there is none)."""
        lvl = self._level_position(level)
        found = find_label(region, self.regions[lvl])
        if found is None:
            raise ParameterError(f"Unknown region {safe_repr(region)} at level {self.levels[lvl]!r}; "
                                 f"see result.regions[{lvl}].")
        return self.regions[lvl][found]

    def _level(self, level: Any) -> pd.DataFrame:
        return self.frame[self.frame["level"] == self.levels[self._level_position(level)]]

    def at(self, level: str, region: Any = None) -> pd.Series:
        """Number of groups per size in one region (Series indexed by ``size``).

        With ``region=None`` the level must hold a single region (e.g.
        ``"national"``); otherwise the Series is indexed by (region, size).
        """
        part = self._level(level)
        if region is None:
            if len(self.regions[self._level_position(level)]) == 1:
                return pd.Series(part["groups"].to_numpy(), index=pd.Index(part["size"].to_numpy(), name="size"),
                                 name="groups")
            return part.set_index(["region", "size"])["groups"]
        sel = part[part["region"] == self._region(level, region)]
        return pd.Series(sel["groups"].to_numpy(), index=pd.Index(sel["size"].to_numpy(), name="size"),
                         name="groups")

    def unattributed(self, level: str, region: Any = None) -> np.ndarray:
        """Sorted group sizes of one region (the unattributed histogram; one entry per group)."""
        s = self.at(level, region)
        if isinstance(s.index, pd.MultiIndex):
            raise ParameterError(f"Level {safe_repr(level)} has several regions; pass region=.")
        return np.repeat(s.index.to_numpy(dtype=np.int64), s.to_numpy(dtype=np.int64))

    def totals(self, level: str) -> pd.Series:
        """Number of groups per region of a level."""
        part = self._level(level)
        idx = self.regions[self._level_position(level)]
        return part.groupby("region", sort=False)["groups"].sum().reindex(idx, fill_value=0).rename("groups")

    # -- evaluation ----------------------------------------------------------
    def emd(self, truth: CountOfCounts | pd.DataFrame) -> pd.DataFrame:
        """Earth mover's distance per region against ``truth``.

        Parameters
        ----------
        truth : CountOfCounts or DataFrame
            Exact histograms in the same tidy form (e.g. from
            :func:`pandas_dp.testing.exact_count_of_counts`).

        Returns
        -------
        DataFrame
            ``level``, ``region``, ``emd`` (L1 distance between cumulative
            histograms, Kuo et al. section 3.1), one row per region.
        """
        other = truth.frame if isinstance(truth, CountOfCounts) else truth
        if not isinstance(other, pd.DataFrame) or isinstance(other.columns, pd.MultiIndex) \
                or not set(_COLUMNS) <= set(other.columns):
            raise ParameterError(f"The 'truth' parameter of emd() must be a CountOfCounts or a DataFrame with "
                                 f"columns {_COLUMNS} (one row per level, region and size). Got "
                                 f"{type(truth).__name__}.")
        try:
            sizes = other["size"].to_numpy(dtype=np.int64)
            groups = other["groups"].to_numpy(dtype=np.int64)
        except Exception as err:  # noqa: BLE001 - missing or non-numeric sizes and counts
            raise ParameterError("The 'truth' table's 'size' and 'groups' columns must hold integers (no missing "
                                 "values).") from err
        other = other.assign(size=sizes, groups=groups)
        return emd_per_region(self.frame, other, self.levels, self.regions)

    # -- synthetic rows ------------------------------------------------------
    def _region_columns(self, hierarchy: pd.DataFrame | None) -> dict[str, np.ndarray]:
        """Label of every leaf region's ancestor at each level below the root."""
        names, leaf = self.levels[1:], self.regions[-1]
        if len(self.levels) <= 2:
            return {names[0]: leaf.to_numpy(dtype=object)} if names else {}
        if self.parents is not None:
            pos = ancestors(self.parents, self.regions)
            return {name: self.regions[lvl].to_numpy(dtype=object)[pos[lvl]]
                    for lvl, name in enumerate(self.levels) if lvl >= 1}
        if hierarchy is None:
            raise ParameterError(
                f"sample() needs the public hierarchy to label regions above the finest level "
                f"{self.levels[-1]!r}: this release does not carry it. Pass hierarchy= a DataFrame with "
                f"columns {list(names)} (one row per finest region, e.g. the public Groups table).")
        missing = [c for c in names if c not in hierarchy.columns]
        if missing:
            raise ParameterError(f"The 'hierarchy' table lacks columns {missing}; it needs {list(names)}.")
        table = hierarchy[list(names)].drop_duplicates(names[-1]).set_index(names[-1])
        table = table.reindex(leaf)
        if table.isna().any().any():
            raise ParameterError(f"The 'hierarchy' table does not place every {names[-1]!r} region of the "
                                 f"release under a parent; give one row per region.")
        out = {name: table[name].to_numpy(dtype=object) for name in names[:-1]}
        out[names[-1]] = leaf.to_numpy(dtype=object)
        return out

    def sample(self, n: int | None = None, rng: Any = None, *,
               hierarchy: pd.DataFrame | None = None) -> pd.DataFrame:
        """A synthetic Persons table consistent with this release (post-processing: no budget).

        Parameters
        ----------
        n : int, optional
            Number of groups. ``None`` reproduces the release exactly: every
            finest region gets the released number of groups of each size, so
            every level's histograms (which sum up the hierarchy) are matched.
            An integer draws ``n`` groups independently, each a (finest region,
            size) pair with probability proportional to its released count.
        rng : numpy.random.Generator, optional
            ``None`` uses ``numpy.random.default_rng()`` seeded from OS entropy;
            the draws only post-process public output, so predictability is harmless.
        hierarchy : DataFrame, optional
            Public table with one column per level (coarse to fine), needed only
            when the release does not carry its hierarchy (``parents``).

        Returns
        -------
        DataFrame
            One row per person: ``group`` (synthetic id ``0..G-1``) and one
            column per level below ``"national"``. Groups of size 0 have no row.

        Examples
        --------
        >>> import numpy as np, pandas_dp as pdp
        >>> from pandas_dp.data import load_persons, load_households
        >>> persons, households = load_persons(), load_households()
        >>> with pdp.budget(epsilon=1.0):
        ...     coc = persons.dp.count_of_counts("household_id", ["state", "county"], epsilon=0.5,
        ...                                      groups=households, rng=np.random.default_rng(0))
        >>> synth = coc.sample(rng=np.random.default_rng(0), hierarchy=households)
        >>> list(synth.columns)
        ['group', 'state', 'county']
        """
        if hierarchy is not None and not isinstance(hierarchy, pd.DataFrame):
            raise ParameterError(f"The 'hierarchy' parameter of sample() must be a DataFrame with one column per "
                                 f"level, or None. Got {type(hierarchy).__name__}.")
        if n is not None:
            check_count(n, "n", "sample()", high=MAX_SAMPLE_ROWS)
        columns = self._region_columns(hierarchy)
        leaf = self._level(self.levels[-1])
        if n is None:  # the release itself: one row per person of every released group
            check_rows(int((leaf["size"].to_numpy(dtype=np.float64) * leaf["groups"].to_numpy(dtype=np.float64)
                            ).sum()), "sample() of this release")
        position = pd.Index(self.regions[-1]).get_indexer(leaf["region"])
        table = pd.DataFrame({"region": position, "size": leaf["size"].to_numpy(),
                              "groups": leaf["groups"].to_numpy()})
        return persons_rows(table, columns, n, rng)

    # -- display -------------------------------------------------------------
    def plot(self, level: str = "national", region: Any = None, ax: Any = None, *,
             max_regions: int = 8, cumulative: bool = False, **kwargs: Any) -> Any:
        """Size distribution per region on log-log axes; returns the matplotlib Axes.

        Parameters
        ----------
        level : str
            Level to draw (default ``"national"``).
        region : label, optional
            One region of ``level``; by default every region of the level
            (the ``max_regions`` largest by number of groups), one line each.
        ax : matplotlib Axes, optional
        max_regions : int
            Most regions drawn when ``region`` is None.
        cumulative : bool
            Draw ``N(>= i)``, the number of groups of size at least ``i`` (a
            smooth, decreasing step line: easier to compare heavy tails)
            instead of the number of groups of each size (markers).
        **kwargs
            Passed to ``Axes.plot``.

        Notes
        -----
        Sizes of 0 cannot sit on a log axis: groups of size 0 are left out of
        the picture (they remain in :meth:`at`). The estimates are integral
        and exact after post-processing; no per-size error bars are drawn
        (the release's error is measured by the EMD, Kuo et al. section 3.1).
        """
        plt = import_optional("matplotlib.pyplot", extra="plot", purpose="CountOfCounts.plot()")
        check_axes(ax, "CountOfCounts.plot()")
        max_regions = check_count(max_regions, "max_regions", "CountOfCounts.plot()", low=1)
        cumulative = check_flag(cumulative, "cumulative", "CountOfCounts.plot()")

        part = self._level(level)
        level = self.levels[self._level_position(level)]  # the release's own labels, for the title
        if region is not None:
            region = self._region(level, region)
            part = part[part["region"] == region]
        part = part[part["size"] > 0]
        top = part.groupby("region", sort=False)["groups"].sum().sort_values(ascending=False)
        names = list(top.index[:max_regions])
        if ax is None:
            _, ax = plt.subplots(figsize=(8, 4))
        for name in names:
            sel = part[part["region"] == name]
            size, groups = sel["size"].to_numpy(), sel["groups"].to_numpy()
            if cumulative:
                ax.step(size, np.cumsum(groups[::-1])[::-1], where="post", label=str(name), **kwargs)
            else:
                ax.plot(size, groups, marker="o", ms=3, linestyle="none", label=str(name), **kwargs)
        ax.set_xscale("log")
        ax.set_yscale("log")
        readable_numbers(ax.xaxis, log=True)
        readable_numbers(ax.yaxis, log=True)
        ax.set_xlabel("group size")
        ax.set_ylabel("groups of at least this size" if cumulative else "number of groups")
        if len(names) > 1:
            ax.legend(title=level, fontsize="small")
        where = level if region is None else f"{level} = {region}"
        ax.set_title(f"count-of-counts ({self.method}), {where}, {self._guarantee()}")
        return ax

    def _first_sizes(self) -> pd.DataFrame:
        return estimates_table(self.at(self.levels[0]).head(10).to_frame())

    def __repr__(self) -> str:
        n = [len(r) for r in self.regions]
        head = (f"CountOfCounts(method={self.method!r}, {self._guarantee(html=False)}, levels={list(self.levels)}, "
                f"regions={n})")
        return head + "\n" + self._first_sizes().to_string()

    def _repr_html_(self) -> str:
        top = self._first_sizes().to_html()
        levels = " &gt; ".join(f"{html.escape(str(n))} ({len(r):,})" for n, r in zip(self.levels, self.regions))
        return (f"<div><strong>CountOfCounts</strong> — method <code>{html.escape(self.method)}</code>, "
                f"{self._guarantee()}<br>levels: {levels}<br><small>{html_params(self.params)}</small>"
                f"<p>{html.escape(self.levels[0])} (first sizes):</p>{top}</div>")


def emd_per_region(estimate: pd.DataFrame, truth: pd.DataFrame, levels: tuple[str, ...],
                   regions: tuple[pd.Index, ...]) -> pd.DataFrame:
    """Per-region EMD between two tidy count-of-counts frames (vectorized over regions).

    Notes
    -----
    With the sizes of both histograms of a region merged and sorted,
    ``s_1 < ... < s_m``, and ``D_k`` the running sum of (estimate - truth)
    group counts up to ``s_k``, the cumulative histograms differ by ``D_k``
    on ``[s_k, s_{k+1})``: ``emd = sum_k |D_k| (s_{k+1} - s_k)``.
    """
    a = estimate[_COLUMNS].assign(d=estimate["groups"].astype(np.int64))
    b = truth[_COLUMNS].assign(d=-truth["groups"].astype(np.int64))
    both = pd.concat([a, b], ignore_index=True)
    both["region"] = both["region"].astype(object)
    d = both.groupby(["level", "region", "size"], sort=True)["d"].sum().reset_index()
    d["D"] = d.groupby(["level", "region"], sort=False)["d"].cumsum()
    nxt = d.groupby(["level", "region"], sort=False)["size"].shift(-1)
    d["w"] = (nxt - d["size"]).fillna(1)
    d["e"] = d["D"].abs() * d["w"]
    per = d.groupby(["level", "region"], sort=False)["e"].sum()
    rows = [pd.DataFrame({"level": name, "region": idx.astype(object)}) for name, idx in zip(levels, regions)]
    out = pd.concat(rows, ignore_index=True)
    key = pd.MultiIndex.from_frame(out[["level", "region"]])
    out["emd"] = per.reindex(key, fill_value=0.0).to_numpy(dtype=np.float64)
    return out
