"""``histogram(column, categories="discover")``: private key discovery by noisy-count thresholding.

Analysts count free text, product codes or places for which no public codebook
exists. The release counts every label present in the column, adds exact
integer noise to every count, and releases only the labels whose noisy count
reaches a threshold ``T``; the noisy counts of those labels are the estimates.

Mechanism and its delta
-----------------------
(Several labels per unit, or ``rho=``; one label per unit under ``epsilon=``
uses the truncated mechanism below.) One privacy unit touches at most ``c`` labels with at most ``r`` rows each
(no privacy unit: ``c = r = 1``; ``max_rows=k``: ``c = r = k``). The counts of
all labels present get noise calibrated to the pure part of the loss for that
sensitivity (:meth:`UnitBounds.histogram_sensitivity`): discrete Laplace of
scale ``c r / epsilon`` under ``epsilon=``, discrete Gaussian of
``sigma**2 = c r**2 / (2 rho)`` under ``rho=``. A label is released when its
noisy count is ``>= T`` (the mass exactly at ``T`` is released).

Let ``x`` hold one unit more than its neighbour ``x'``. Labels present in both
are a pure (zCDP) Gaussian or Laplace release of counts that differ by the
sensitivity, thresholded (post-processing). The unit's labels absent from
``x'`` (at most ``c``, each with a true count ``n <= r``) appear in ``M(x)``
only when ``n + Z >= T``: on the event ``E`` that none of them passes, of
probability at least ``1 - c P(Z >= T - r)``, ``M(x)`` conditioned on ``E`` and
``M(x')`` are epsilon-DP (rho-zCDP) neighbours, so the release is
``(epsilon, delta)``-DP (delta-approximately rho-zCDP) with
``delta = c P(Z >= T - r)`` (union bound; Korolova, Kenthapadi, Mishra,
Ntoulas 2009, "Releasing search queries and clicks privately", for the
Laplace threshold; Wilson, Zhang, Lam, Desfontaines, Simmons-Marengo, Gipson
2020, "Differentially private SQL with bounded user contribution", Section 3,
for bounded contributions; Bun and Steinke 2016, Section 8, for the
approximate zCDP). ``T`` is the smallest integer with
``c P(Z >= T - r) <= delta``:

    ``T = r + 1 + q``, ``q`` the exact ``1 - delta / c`` quantile of the noise

(:meth:`Noise.quantile`: the smallest ``q`` with ``P(Z <= q) >= 1 - delta / c``,
exact for discrete Laplace, certified and never below for the discrete
Gaussian), so ``P(Z >= T - r) = P(Z > q) <= delta / c``: the tail *includes*
the mass at the threshold (the error of OpenDP issue #2922 was to leave it
out). The charge is ``(epsilon, delta)`` or ``(rho, delta)`` in full.

Which labels may be missing: a label whose true count is near ``T`` or below
is released only with the probability its noise reaches ``T`` (``T - 1`` for a
label that took the lower pair of the truncated mechanism below); the result's
``params["missing"]`` says so. The output lists the released labels in their
natural sort order (a function of the released labels alone, never of the
private rows' order).

Where things live: the engine counts the labels (``engine.label_counts``: one pass, per partition
on Dask with the partial counts merged by label; label text by :mod:`pandas_dp.domain.label_text`);
the thresholds and the truncated noise are :mod:`pandas_dp.privacy.selection`. With a unit, the
present labels in their public order become an internal domain (never shown) on which the engine
bounds every unit as for a histogram, so pandas and Dask give the same release for the same seed.

One label per unit: truncated discrete Laplace thresholding
-----------------------------------------------------------
When a unit touches one label (``c = 1``: no unit, or ``max_cells=1``) under
``epsilon=``, the noise is the discrete Laplace of scale ``r / epsilon``
*truncated* to ``[-k, k]`` (exact rejection sampling,
:mod:`pandas_dp.noise.truncated_laplace`), the threshold is ``T = k + 1`` and
``k`` is the smallest truncation with ``P(Z > k - r) <= delta``
(:func:`pandas_dp.privacy.selection.truncated_threshold`, decided exactly). Neighbours have true counts
``n`` and ``n + m`` on the unit's label (``1 <= m <= r``; ``n = 0``: a new
label). Every outcome (label absent, or released with a value ``v >= T``) has
probability ratio at most ``e**epsilon`` except (i) a new label passing,
``P(m + Z >= k + 1) <= P(Z > k - r)``, and (ii) the values within ``m`` of an
edge of the support that only one side can produce (or the absent outcome
when the other side always passes), of total mass at most ``P(Z > k - r)``;
each pair has only one of the two kinds of excess in each direction, so the
release is ``(epsilon, delta)``-DP. The same event (the noise not in its top
or bottom ``r`` values, or no new label passing) makes the release conditionally
``epsilon``-DP, so an ``epsilon=`` release in a ``rho`` budget is charged
``(epsilon**2 / 2, delta)`` as the thresholding is (Bun and Steinke 2016,
Section 8). ``tests/privacy/test_discover_truncated.py`` checks the exact privacy
profile over every pair of counts by brute force, and that a truncation or a
threshold one lower exceeds delta.

The integer ``k`` leaves part of delta unspent (the tail ``P(Z > k - r)`` is
``delta_k = 3.843e-7`` at ``epsilon = 1``, ``delta = 1e-6``, ``k = 14``; ``delta_{k-1} = 1.045e-6``): each label
independently takes the pair ``(k - 1, T - 1)`` with probability ``mu``
(:func:`pandas_dp.privacy.selection.truncated_mixture`), which
spends ``mu delta_{k-1} + (1 - mu) delta_k = delta`` at most (the
hockey-stick divergence of a mixture is at most the mixture of the
divergences). Such a label is released when its noisy count reaches ``T - 1``:
``params`` records the pair (``noise_bound = k``, ``threshold = T``), the lower pair
(``lower_noise_bound``, ``lower_threshold``) and ``lower_pair_probability = mu``, and
``params["missing"]`` states that rule.

This is the optimal single-partition selection of Desfontaines, Voss, Gipson
and Mandayam (PoPETS 2022, "Differentially private partition selection",
arXiv 2006.03684): its release probability ``pi(n) = P(n + Z >= k + 1)``
follows their recursion ``pi(n) = min(e**eps pi(n-1) + delta', 1 - e**-eps (1 -
pi(n-1) - delta'), 1)`` with ``delta' = P(Z = k) <= delta`` (the truncated
geometric mechanism); the mixture follows it with ``delta`` itself while
``pi <= 1/2`` (on the peer benchmark its expected labels equal the optimum to
1e-9), and the noisy count that decided the release is
released with it at no further cost: the truncated Laplace mechanism's own
delta (Geng, Ding, Guo and Kumar 2020, "Tight analysis of privacy and utility
tradeoff in approximate differential privacy") is the same tail. Against
Laplace thresholding at the same ``(epsilon, delta)`` the threshold is lower
by about ``r ln(1 / (1 - e**(-epsilon))) / epsilon`` (rounded to an integer:
23 at ``epsilon = 0.1``, 0 or 1 at ``epsilon = 1``), the mixture spends the rest
of delta, and the noise variance is smaller. ``docs/methods/discover.md`` has the exact comparison.

Several labels per unit (``c > 1``) and ``rho=`` keep the thresholding above.
The adaptive weighting of MAD/MAD2R (Chen, Cohen-Addad, Epasto and
Zadimoghaddam, ICML 2025, "Scalable private partition selection via adaptive
weighting") is measured in ``benchmarks/bench_discover_mad.py`` and not
implemented here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.domain.categories import CategoryDomain
from pandas_dp.domain.grid import Grid
from pandas_dp.domain.label_text import public_order
from pandas_dp.errors import ParameterError
from pandas_dp.noise.words import release_key
from pandas_dp.privacy.loss import check_delta
from pandas_dp.privacy.selection import TruncatedMixture, discovery_threshold, selection_plan, unit_shape
from pandas_dp.privacy.units import UnitArguments
from pandas_dp.releases.params import check_columns, check_flag, check_rng
from pandas_dp.releases.pipeline import Release, privacy_loss, run
from pandas_dp.results.histogram import Histogram, as_series, constant_cells

#: ``discovery_threshold`` stays importable from here, the path the API reference gave before it moved to
#: :mod:`pandas_dp.privacy.selection` with the rest of the selection arithmetic.
__all__ = ["DISCOVER", "discover_histogram", "discovery_threshold"]

#: The ``categories=`` value that asks for key discovery.
DISCOVER = "discover"

#: ``params["mechanism"]`` of the two mechanisms (see the module docstring).
_TRUNCATED = "truncated discrete Laplace thresholding (optimal selection, Desfontaines et al. 2022)"
_THRESHOLDING = "noisy-count thresholding (Korolova et al. 2009)"


def _release_rule(threshold: int, truncated: TruncatedMixture | None) -> tuple[str, str]:
    """``(step, missing)``: the release rule as the result records it (post-processing step, ``params["missing"]``).

    Under the mixture a label takes ``(k, T)`` or, with probability ``mu``, ``(k - 1, T - 1)``, and passes
    at its own pair's threshold: released counts go down to ``T - 1``, and the text says so.

    Examples
    --------
    >>> _release_rule(15, None)[0]
    'released labels with noisy count >= 15'
    >>> from fractions import Fraction
    >>> _release_rule(15, TruncatedMixture(Fraction(1), 14, Fraction(3, 4)))[0]
    'released labels with noisy count >= 15, or >= 14 for the labels that took the lower pair (k - 1, T - 1) = (13, 14)'
    """
    if truncated is None or not truncated.mix:
        return (f"released labels with noisy count >= {threshold}",
                f"labels whose true count is below about {threshold} (the threshold) may be missing; "
                f"a label is released only when its noisy count reaches {threshold}")
    k, low, mu = truncated.bound, threshold - 1, truncated.mix
    return (f"released labels with noisy count >= {threshold}, or >= {low} for the labels that took the lower "
            f"pair (k - 1, T - 1) = ({k - 1}, {low})",
            f"each label takes the pair (k, T) = ({k}, {threshold}) or, with probability mu = {float(mu):.6g} "
            f"(lower_pair_probability), the lower pair (k - 1, T - 1) = ({k - 1}, {low}), and is released when its "
            f"noisy count reaches its pair's threshold: released counts are at least {low}, and labels whose true "
            f"count is near {low} or below may be missing")


def discover_histogram(frame: Any, columns: Any, *, epsilon: Any, rho: Any, delta: Any, rng: Any,
                       nonnegative: Any, unit: UnitArguments, budget: Any = None) -> Histogram:
    """Release the labels of one column whose noisy count passes the threshold (public inputs checked first)."""
    what = "histogram(categories='discover')"
    cols = check_columns(frame, columns)
    if len(cols) != 1:
        raise ParameterError(f"{what} releases one column at a time. Got {len(cols)} columns; pass one column.")
    loss = privacy_loss(epsilon, rho)
    if delta is None:
        raise ParameterError(f"{what} needs delta= (approximate DP): a label present in one frame and absent in "
                             f"its neighbour can only be hidden with probability 1 - delta. Pass e.g. "
                             f"delta=1e-6, and open the budget with a delta: pandas_dp.budget(epsilon=..., "
                             f"delta=...).")
    d = check_delta(delta, what=what)
    generator = check_rng(rng)
    nonneg = check_flag(nonnegative, "nonnegative")
    bounds = unit.bounds(frame.columns, reserved=tuple(cols))
    if bounds is not None and bounds.auto:
        raise ParameterError(f"{what} needs a fixed public bound: pass max_rows=k or max_cells= with "
                             f"max_rows_per_cell=, not max_rows='auto'.")
    c, r, sensitivity = unit_shape(bounds)
    noise = loss.noise(sensitivity, what=what)
    threshold, truncated = selection_plan(noise, d, c, r)  # truncated noise: one label per unit, epsilon=
    full = loss.with_delta(d)
    column = cols[0]
    params: dict[str, Any] = {"categories": DISCOVER, "delta": str(d), "threshold": threshold,
                              "nonnegative": nonneg, "labels_per_unit": c, "rows_per_label": r,
                              "mechanism": (_TRUNCATED if truncated is not None else _THRESHOLDING)}
    if bounds is not None:
        params.update(bounds.describe())
    if truncated is not None and truncated.mix:  # the lower pair (k - 1, T - 1) and its share mu
        params.update(lower_noise_bound=truncated.bound - 1, lower_threshold=threshold - 1,
                      lower_pair_probability=str(truncated.mix))
    step, missing = _release_rule(threshold, truncated)

    def count(engine: Any) -> tuple[np.ndarray, np.ndarray, bytes]:
        key = release_key(generator) if bounds is not None else b""
        labels, counts = engine.label_counts(frame, column, bounds, key)
        return labels, counts, key

    def mechanism(exact: tuple[np.ndarray, np.ndarray, bytes]) -> Histogram:
        labels, counts, _ = exact
        if truncated is None:
            noisy = noise.add(counts, generator)
            keep = noisy >= threshold
        else:  # each label: (k, T), or (k - 1, T - 1) with probability mix (truncated_mixture)
            noisy, lower = truncated.add(counts, generator)
            keep = noisy >= threshold - lower
            del lower
        kept_labels, kept = labels[keep], noisy[keep]
        order = public_order(kept_labels)
        kept_labels, kept = kept_labels[order], np.ascontiguousarray(kept[order])
        del labels, counts, noisy
        post: tuple[str, ...] = (step,)
        if nonneg:
            np.maximum(kept, 0, out=kept)
            post += ("clip at 0",)
        grid = Grid((CategoryDomain(column, pd.Index(kept_labels, dtype=kept_labels.dtype if kept_labels.size
                                                     else object, tupleize_cols=False)),))
        described = noise.describe() if truncated is None else truncated.describe()
        variance = noise.variance() if truncated is None else truncated.variance()
        return Histogram(
            counts=as_series(kept, grid, "estimate", owned=True),
            variance=as_series(constant_cells(variance, grid), grid, "variance"),
            epsilon=loss.pure_epsilon,
            method="discover",
            params={"noise": described.pop("noise"), "sensitivity": sensitivity.describe(), **described,
                    **params, "released": int(kept.size),
                    "missing": missing},
            domain=grid,
            post_processing=post,
            variance_exact=False,
            loss=full, noise=noise, single_draw=False,
        )

    return run(frame, Release(loss=full, method="histogram:discover", columns=cols, params=params, count=count,
                              mechanism=mechanism, budget=budget))
