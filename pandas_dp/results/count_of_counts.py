"""The ``CountOfCounts`` result: consistent hierarchical count-of-counts histograms."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

from .._optional import import_optional
from ._base import FrozenRelease
from ..errors import ParameterError

__all__ = ["CountOfCounts", "emd_per_region"]

_COLUMNS = ["level", "region", "size", "groups"]


@dataclass(frozen=True, repr=False)
class CountOfCounts(FrozenRelease):
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
    epsilon : float
        Privacy loss charged.
    method : str
        Per-node estimator (``"hc"``, ``"hg"`` or ``"naive"``).
    params : Mapping
        Budget shares, the maximum size ``K`` used, merge rule, ...
    post_processing : tuple of str
        Steps applied after the noise (free of privacy cost).
    """

    frame: pd.DataFrame = field(compare=False)
    levels: tuple[str, ...]
    regions: tuple[pd.Index, ...] = field(compare=False)
    epsilon: float
    method: str
    params: Mapping[str, Any]
    post_processing: tuple[str, ...] = ()

    # -- views ---------------------------------------------------------------
    def to_frame(self) -> pd.DataFrame:
        """The release as a tidy frame: ``level``, ``region``, ``size``, ``groups``."""
        return self.frame.copy()

    def _level(self, level: str) -> pd.DataFrame:
        if level not in self.levels:
            raise ParameterError(f"Unknown level {level!r}; this release has levels {list(self.levels)}.")
        return self.frame[self.frame["level"] == level]

    def at(self, level: str, region: Any = None) -> pd.Series:
        """Number of groups per size in one region (Series indexed by ``size``).

        With ``region=None`` the level must hold a single region (e.g.
        ``"national"``); otherwise the Series is indexed by (region, size).
        """
        part = self._level(level)
        if region is None:
            if len(self.regions[self.levels.index(level)]) == 1:
                return pd.Series(part["groups"].to_numpy(), index=pd.Index(part["size"].to_numpy(), name="size"),
                                 name="groups")
            return part.set_index(["region", "size"])["groups"]
        if region not in self.regions[self.levels.index(level)]:
            raise ParameterError(f"Unknown region {region!r} at level {level!r}.")
        sel = part[part["region"] == region]
        return pd.Series(sel["groups"].to_numpy(), index=pd.Index(sel["size"].to_numpy(), name="size"),
                         name="groups")

    def unattributed(self, level: str, region: Any = None) -> np.ndarray:
        """Sorted group sizes of one region (the unattributed histogram; one entry per group)."""
        s = self.at(level, region)
        if isinstance(s.index, pd.MultiIndex):
            raise ParameterError(f"Level {level!r} has several regions; pass region=.")
        return np.repeat(s.index.to_numpy(dtype=np.int64), s.to_numpy(dtype=np.int64))

    def totals(self, level: str) -> pd.Series:
        """Number of groups per region of a level."""
        part = self._level(level)
        idx = self.regions[self.levels.index(level)]
        return part.groupby("region", sort=False)["groups"].sum().reindex(idx, fill_value=0).rename("groups")

    # -- evaluation ----------------------------------------------------------
    def emd(self, truth: CountOfCounts | pd.DataFrame) -> pd.DataFrame:
        """Earth mover's distance per region against ``truth``.

        Parameters
        ----------
        truth : CountOfCounts or DataFrame
            Exact histograms in the same tidy form (e.g. from
            :func:`pandas_dp.engines.pandas_groups.exact_count_of_counts`).

        Returns
        -------
        DataFrame
            ``level``, ``region``, ``emd`` (L1 distance between cumulative
            histograms, Kuo et al. section 3.1), one row per region.
        """
        other = truth.frame if isinstance(truth, CountOfCounts) else truth
        return emd_per_region(self.frame, other, self.levels, self.regions)

    # -- display -------------------------------------------------------------
    def plot(self, level: str = "national", region: Any = None, ax: Any = None, **kwargs: Any) -> Any:
        """Bar chart of the number of groups per size in one region; returns the matplotlib Axes."""
        plt = import_optional("matplotlib.pyplot", extra="plot", purpose="CountOfCounts.plot()")
        s = self.at(level, region)
        if isinstance(s.index, pd.MultiIndex):
            raise ParameterError(f"Level {level!r} has several regions; pass region=.")
        if ax is None:
            _, ax = plt.subplots(figsize=(8, 4))
        ax.bar(s.index.to_numpy(), s.to_numpy(), **kwargs)
        ax.set_xlabel("group size")
        ax.set_ylabel("number of groups")
        where = level if region is None else f"{level} = {region}"
        ax.set_title(f"count-of-counts ({self.method}), {where}, ε = {self.epsilon:g}")
        return ax

    def __repr__(self) -> str:
        n = [len(r) for r in self.regions]
        head = (f"CountOfCounts(method={self.method!r}, epsilon={self.epsilon:g}, levels={list(self.levels)}, "
                f"regions={n})")
        return head + "\n" + self.at(self.levels[0]).head(10).to_string()

    def _repr_html_(self) -> str:
        params = ", ".join(f"{html.escape(str(k))}={html.escape(str(v))}" for k, v in self.params.items())
        top = self.at(self.levels[0]).head(10).to_frame().to_html()
        levels = " &gt; ".join(f"{html.escape(str(n))} ({len(r)})" for n, r in zip(self.levels, self.regions))
        return (f"<div><strong>CountOfCounts</strong> — method <code>{html.escape(self.method)}</code>, "
                f"ε = {self.epsilon:g}<br>levels: {levels}<br><small>{params}</small>"
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
