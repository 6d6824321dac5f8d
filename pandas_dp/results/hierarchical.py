"""``HierarchicalHistogram``: a tree of noisy counts (Hay et al.'s H-bar, Qardaji et al.'s H_b^c).

A :class:`~pandas_dp.results.Histogram` whose leaf estimates come from a tree
of fan-out ``b`` (``b**d`` in d dims).  After constrained inference the leaf
estimates are correlated, so range variances are not sums of per-bin
variances: ``range_query`` uses the exact variance of the estimator's linear
form (O(h) per range), and :meth:`HierarchicalHistogram.average_range_variance`
gives Qardaji's ``V_Avg`` exactly.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.algorithms.tree.release import TreeRelease
from pandas_dp.algorithms.tree.variance import canonical_node_counts
from pandas_dp.errors import DomainError
from pandas_dp.results._detail import required_detail
from pandas_dp.results._format import noise_text
from pandas_dp.results.frozen import stored_fields
from pandas_dp.results.histogram import _CLIPPED_SUM_NOTE, Histogram

__all__ = ["HierarchicalHistogram"]


@stored_fields
@dataclass(frozen=True, repr=False, eq=False)
class HierarchicalHistogram(Histogram):
    """A hierarchical histogram release.

    ``counts`` and ``variance`` are the leaf (bin) estimates and their exact
    error variances.  With ``nonnegative=True`` the estimator is no longer
    linear: ``variance`` and ``std_error`` are then those of the GLS estimate
    before the projection (``variance_exact`` is False).

    Attributes
    ----------
    detail : TreeRelease
        The algorithm's output: layout, per-level budgets, scales and noise
        variances, noisy and inferred node counts.
    """

    detail: TreeRelease | None = field(default=None, compare=False)

    @property
    def _detail(self) -> TreeRelease:
        return required_detail(self, self.detail)

    @property
    def branching(self) -> int:
        """Fan-out ``b`` per dimension."""
        return self._detail.branching

    @property
    def height(self) -> int:
        """Height ``h = ceil(log_b n)``: number of levels below the root."""
        return self._detail.height

    @property
    def levels(self) -> pd.DataFrame:
        """Every node of the tree, tidy: ``level, node, low, high, noisy, estimate, variance``.

        ``level`` counts from the leaves (1) to the root (``h + 1``), as in
        Qardaji et al.; ``low``/``high`` are the node's half-open value range
        (1-D) or its lower/upper cell-index corners (d-dim); ``noisy`` is the
        released noisy count (missing on a level that was not noised).
        """
        d = self._detail
        layout = d.layout
        frames = []
        for k in range(layout.n_levels):
            size = layout.level_sizes[k]
            if layout.ndim == 1:
                lo, hi = layout.intervals(k)
                edges = self.domain.dims[0].edges if hasattr(self.domain.dims[0], "edges") else None
                low = edges[lo] if edges is not None else lo
                high = edges[hi] if edges is not None else hi
            else:
                idx = np.indices(layout.level_shapes[k]).reshape(layout.ndim, -1).T
                span = layout.branching ** k
                shape = np.asarray(layout.shape)
                low = [tuple(int(v) for v in row) for row in idx * span]
                high = [tuple(int(v) for v in row) for row in np.minimum((idx + 1) * span, shape)]
            noisy = d.noisy[k]
            frames.append(pd.DataFrame({
                "level": k + 1,
                "node": np.arange(size),
                "low": low,
                "high": high,
                "noisy": pd.array(noisy.ravel() if noisy is not None else [pd.NA] * size, dtype="Int64"),
                "estimate": d.estimates[k].ravel(),
                "variance": d.variances[k].ravel(),
            }))
        return pd.concat(frames, ignore_index=True)

    def average_range_variance(self) -> float:
        """Exact mean error variance over all ``N (N + 1) / 2`` bin-aligned ranges (``V_Avg``).

        Computed from the estimator's linear form in O(number of nodes)
        (Qardaji et al.'s Tables 1-3 quantity, here for the discrete Laplace
        noise actually drawn).  1-D releases only.  With ``nonnegative=True``
        it is the figure of the GLS estimate before the projection.
        """
        self._bin_domain()
        return self._detail.average_range_variance()

    def _raw(self) -> bool:
        """A tree without inference (``consistent=False``) whose estimates are its noisy nodes."""
        return self.detail is not None and not self._detail.consistent and not self._detail.nonnegative

    def _cells_noise(self) -> tuple[Any, int]:
        if self._raw() and self._detail.level_noise[0] is not None:
            return self._detail.level_noise[0], 1   # every leaf estimate is its noisy leaf
        return super()._cells_noise()

    def _ranges_noise(self, i: np.ndarray, j: np.ndarray) -> tuple[Any, np.ndarray]:
        if not self._raw() or self._detail.layout.ndim != 1:
            return super()._ranges_noise(i, j)
        # H_b answers a range with its fewest noisy nodes: one node is one draw of its level's noise.
        noised = [n is not None for n in self._detail.level_noise]
        counts, _ = canonical_node_counts(self._detail.layout, noised, np.asarray(i), np.asarray(j))
        single = counts.sum(axis=1) == 1
        level = counts.argmax(axis=1)
        noises = [self._detail.level_noise[k] if one else self.noise for k, one in zip(level, single)]
        return noises, single.astype(np.int64)

    def _range_stats(self, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        i = np.asarray(i, dtype=np.int64).ravel()
        j = np.asarray(j, dtype=np.int64).ravel()
        est = np.zeros(i.size)
        var = np.zeros(i.size)
        ok = i < j   # empty ranges [a, a) are exactly 0
        if ok.any():
            est[ok] = self._detail.range_estimate(i[ok], j[ok])
            var[ok] = self._detail.range_variance(i[ok], j[ok])
        return est, var

    def _bin_domain(self):  # noqa: ANN202 - same contract as Histogram._bin_domain
        if self.domain.ndim != 1:
            raise DomainError(
                f"Range queries over one column and average_range_variance() are for 1-D releases; this tree "
                f"covers {self.domain.ndim} dimensions {list(self.domain.columns)}. Pass one bound per column "
                f"for a box, e.g. range_query((low_1, low_2), (high_1, high_2)), or use result.levels.")
        return super()._bin_domain()

    def _boxes_exact(self) -> bool:
        """Boxes of a linear tree (GLS, or raw noisy leaves) get exact variances from its structure."""
        return self.detail is not None and self.variance_exact

    def _box_bias_note(self) -> str | None:
        return _CLIPPED_SUM_NOTE if self.detail is not None and self._detail.nonnegative else None

    def _box_variance(self, box: tuple[slice, ...]) -> float:
        """Exact ``w^T Cov w`` of the box's leaf sum (:meth:`TreeRelease.box_variance`, O(nodes))."""
        lo = np.array([[sl.start for sl in box]])
        hi = np.array([[sl.stop for sl in box]])
        return float(self._detail.box_variance(lo, hi)[0])

    def _noises(self) -> list[Any]:
        if self.detail is None:
            return super()._noises()
        return [None if n is None else n.describe() for n in self.detail.level_noise]

    def _repr_head(self) -> str:
        return (f"{type(self).__name__}(method={self.method!r}, {self._guarantee(html=False)}, "
                f"branching={self.branching}, height={self.height}, "
                f"columns={list(self.domain.columns)}, bins={self.domain.size:,})")

    def _html_title(self) -> str:
        return f"b = {self.branching}, height = {self.height}, {self._guarantee()}"

    def _html_notes(self) -> str:
        d = self._detail
        flags = ", ".join(name for name, on in (("consistent (GLS)", d.consistent),
                                                  ("non-negative", d.nonnegative),
                                                  ("root noised", d.include_root)) if on) or "raw H_b"
        noise = ", ".join("—" if n is None else noise_text(n.describe()).split(" = ")[1] for n in d.level_noise)
        symbol = "σ" if self.measure == "zcdp" else "noise scale t"
        return (f"budget split {html.escape(str(d.budget_split))}; {html.escape(flags)}<br>"
                f"{symbol} per level (leaves first): {html.escape(noise)}<br>")
