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
is released only with the probability its noise reaches ``T``; the result's
``params["missing"]`` says so. The output lists the released labels in their
natural sort order (a function of the released labels alone, never of the
private rows' order).

Engines: without a unit, the labels are counted in one pass (per partition on Dask, the partial
counts merged by label); with a unit, the present labels in their public order become an internal
domain (never shown) on which the engine bounds every unit as for a histogram, so pandas and Dask
give the same release for the same seed.

One label per unit: truncated discrete Laplace thresholding
-----------------------------------------------------------
When a unit touches one label (``c = 1``: no unit, or ``max_cells=1``) under
``epsilon=``, the noise is the discrete Laplace of scale ``r / epsilon``
*truncated* to ``[-k, k]`` (exact rejection sampling,
:mod:`pandas_dp.noise.truncated_laplace`), the threshold is ``T = k + 1`` and
``k`` is the smallest truncation with ``P(Z > k - r) <= delta``
(:func:`truncated_threshold`, decided exactly). Neighbours have true counts
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
Section 8). ``tests/api/test_discover_truncated.py`` checks the exact privacy
profile over every pair of counts by brute force, and that a truncation or a
threshold one lower exceeds delta.

The integer ``k`` leaves part of delta unspent (``P(Z = 14) = 5.2e-7`` at
``epsilon = 1``, ``delta = 1e-6``): each label independently takes the pair
``(k - 1, T - 1)`` with probability ``mu`` (:func:`truncated_mixture`), which
spends ``mu delta_{k-1} + (1 - mu) delta_k = delta`` at most (the
hockey-stick divergence of a mixture is at most the mixture of the
divergences); ``params["lower_pair_probability"]`` records ``mu``.

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

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.domain.categories import CategoryDomain, is_hashable
from pandas_dp.domain.grid import Grid
from pandas_dp.domain.labels import value_classes
from pandas_dp.errors import ParameterError
from pandas_dp.noise.exact_cdf import exp_neg_bounds
from pandas_dp.noise.truncated_laplace import truncated_discrete_laplace, truncated_discrete_laplace_variance
from pandas_dp.noise.words import release_key, word_source
from pandas_dp.privacy.loss import UNIT, DiscreteLaplace, Noise, Sensitivity, check_delta
from pandas_dp.privacy.units import UnitArguments, UnitBounds
from pandas_dp.releases.params import check_columns, check_flag, check_rng
from pandas_dp.releases.pipeline import Release, privacy_loss, run
from pandas_dp.results.histogram import Histogram, as_series, constant_cells

__all__ = ["DISCOVER", "discover_histogram", "discovery_threshold", "truncated_mixture", "truncated_threshold",
           "unit_shape"]

#: The ``categories=`` value that asks for key discovery.
DISCOVER = "discover"

#: ``params["mechanism"]`` of the two mechanisms (see the module docstring).
_TRUNCATED = "truncated discrete Laplace thresholding (optimal selection, Desfontaines et al. 2022)"
_THRESHOLDING = "noisy-count thresholding (Korolova et al. 2009)"


def unit_shape(bounds: UnitBounds | None) -> tuple[int, int, Sensitivity]:
    """``(c, r, sensitivity)``: labels a unit touches, rows per label, and the counts' sensitivity."""
    if bounds is None:
        return 1, 1, UNIT
    if bounds.scheme == "cells":
        c, r = int(bounds.max_cells), int(bounds.max_rows_per_cell)  # type: ignore[arg-type]
    else:
        c = r = bounds.row_bound
    return c, r, bounds.histogram_sensitivity()


def discovery_threshold(noise: Noise, delta: Fraction, cells: int = 1, per_cell: int = 1) -> int:
    """Smallest integer ``T`` with ``cells * P(Z >= T - per_cell) <= delta`` for the noise ``Z``.

    ``T = per_cell + 1 + q`` with ``q`` the exact ``1 - delta / cells`` quantile of the noise
    (never below the true quantile), so the tail at ``T - per_cell`` includes the mass at ``T``.

    Examples
    --------
    >>> from fractions import Fraction
    >>> from pandas_dp.privacy.loss import DiscreteLaplace
    >>> discovery_threshold(DiscreteLaplace(Fraction(1)), Fraction(1, 10**6))
    15
    """
    q = noise.quantile(1 - Fraction(delta) / int(cells))
    return int(per_cell) + 1 + int(q)


def _truncated_delta_holds(t: Fraction, delta: Fraction, bound: int, per_cell: int) -> bool:
    """Exact ``P(Z > bound - r) <= delta`` for ``Z`` discrete Laplace of scale ``t`` truncated at ``+-bound``.

    With ``p = exp(-1/t)`` and ``bound >= r``, ``P(Z > k - r) = p**(k-r+1) (1 - p**r) / (1 + p - 2 p**(k+1))``,
    so the test is ``p**(k-r+1) (1 - p**r) <= delta (1 + p - 2 p**(k+1))``, decided with certified brackets
    of the powers refined until they separate the sides (equality would make ``p`` algebraic: Lindemann).
    """
    k, r = int(bound), int(per_cell)
    n, d = delta.numerator, delta.denominator
    prec = 64 + d.bit_length() + n.bit_length()
    while True:
        one = 1 << prec
        a_lo, a_hi = exp_neg_bounds(Fraction(k - r + 1) / t, prec)
        b_lo, b_hi = exp_neg_bounds(Fraction(r) / t, prec)
        c_lo, c_hi = exp_neg_bounds(1 / t, prec)
        e_lo, e_hi = exp_neg_bounds(Fraction(k + 1) / t, prec)
        if d * a_hi * (one - b_lo) <= n * one * (one + c_lo - 2 * e_hi):
            return True
        if d * a_lo * (one - b_hi) > n * one * (one + c_hi - 2 * e_lo):
            return False
        prec *= 2


def _truncated_tail_upper(t: Fraction, bound: int, per_cell: int, prec: int = 160) -> Fraction:
    """A certified upper bound on ``P(Z > k - r)`` for the truncation ``k`` (see :func:`_truncated_delta_holds`)."""
    k, r, one = int(bound), int(per_cell), 1 << prec
    a_hi = exp_neg_bounds(Fraction(k - r + 1) / t, prec)[1]
    b_lo = exp_neg_bounds(Fraction(r) / t, prec)[0]
    c_lo = exp_neg_bounds(1 / t, prec)[0]
    e_hi = exp_neg_bounds(Fraction(k + 1) / t, prec)[1]
    return Fraction(a_hi * (one - b_lo), one * (one + c_lo - 2 * e_hi))


def truncated_mixture(scale: Fraction, delta: Fraction, per_cell: int = 1) -> tuple[int, int, Fraction]:
    """``(k, T, mu)``: :func:`truncated_threshold`'s ``(k, T)`` and the share ``mu`` of labels given ``(k - 1, T - 1)``.

    The truncation ``k`` spends ``delta_k = P(Z > k - r) <= delta`` and ``k - 1`` would spend
    ``delta_{k-1} > delta``. Each label independently takes ``(k - 1, T - 1)`` with probability ``mu``
    and ``(k, T)`` otherwise; the hockey-stick divergence of a mixture is at most the mixture of the
    divergences, so the release spends at most ``mu delta_{k-1} + (1 - mu) delta_k``, which
    ``mu = (delta - delta_k) / (delta_{k-1} - delta_k)`` makes ``delta``: the mixed release
    probability is then Desfontaines et al.'s optimal ``pi(n)`` at ``delta`` itself, not at the
    smaller ``delta_k`` the integer ``k`` allows. ``mu`` is a multiple of ``2**-53``, rounded down
    from a certified lower bound (both tails bounded above), so the spend never exceeds ``delta``.

    Examples
    --------
    >>> k, t, mu = truncated_mixture(Fraction(1), Fraction(1, 10**6))  # epsilon = 1
    >>> (k, t), round(float(mu), 4)
    ((14, 15), 0.9325)
    """
    t, d, r = Fraction(scale), Fraction(delta), int(per_cell)
    k, threshold = truncated_threshold(t, d, r)
    if k - 1 < r:
        return k, threshold, Fraction(0)
    tail_k, tail_below = _truncated_tail_upper(t, k, r), _truncated_tail_upper(t, k - 1, r)
    if tail_below <= d or tail_k >= d:  # brackets too wide to gain anything: no mixture
        return k, threshold, Fraction(0)
    mu = (d - tail_k) / (tail_below - tail_k)
    return k, threshold, Fraction(math.floor(mu * _MIX_ONE), _MIX_ONE)


_MIX_ONE = 1 << 53  # mu is a multiple of 2**-53: a label takes the lower pair when its word's top 53 bits are below


def truncated_threshold(scale: Fraction, delta: Fraction, per_cell: int = 1) -> tuple[int, int]:
    """``(k, T)``: the smallest truncation ``k >= r`` with ``P(Z > k - r) <= delta``, and ``T = k + 1``.

    ``Z`` is the discrete Laplace of scale ``t`` truncated at ``+-k``; a unit puts at most ``r`` rows on
    its one label. Thresholding ``n + Z`` at ``T = k + 1`` and releasing it is then ``(r / t,
    delta)``-DP (see the module docstring): ``delta`` is at once the chance that a new label of ``r``
    rows passes and the truncated mass that a shift by ``r`` exposes at the edge.

    Examples
    --------
    >>> truncated_threshold(Fraction(10), Fraction(1, 10**6))  # epsilon = 0.1: T = 133 untruncated
    (109, 110)
    """
    t, d, r = Fraction(scale), Fraction(delta), int(per_cell)
    a = math.exp(-1.0 / float(t))
    guess = r - 1 + float(t) * math.log(max(-math.expm1(-r / float(t)), 1e-300) / (float(d) * (1 + a)))
    k = max(r, int(guess) if math.isfinite(guess) else r)
    while not _truncated_delta_holds(t, d, k, r):
        k += 1
    while k > r and _truncated_delta_holds(t, d, k - 1, r):
        k -= 1
    return k, k + 1


_BOOL_CLASS, _NUMBER_CLASS, _STRING_CLASS = 1, 2, 3  # pandas_dp.domain.labels: -1 missing, 0 not plain, 1 boolean, 2 number, 3 string, 4 other


def _factorize_plain(values: Any) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize`` with every hostile value dropped (a private ``__hash__``/``__eq__`` may raise)."""
    try:
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
    except Exception:  # noqa: BLE001 - a private value's own __hash__/__eq__ may raise anything
        arr = np.asarray(pd.Series(values, dtype=object).to_numpy(), dtype=object)
        ok = np.frompyfunc(is_hashable, 1, 1)(arr).astype(bool) if arr.size else np.zeros(0, bool)
        codes = np.full(arr.size, -1, dtype=np.int64)
        try:
            sub, uniques = pd.factorize(pd.Series(arr[ok], dtype=object), use_na_sentinel=True)
        except Exception:  # noqa: BLE001 - equality that raises between hashable values: count nothing
            return np.array([], dtype=object), codes
        codes[ok] = sub
    return np.asarray(uniques), np.asarray(codes, dtype=np.int64)


def _canonical_numbers(labels: np.ndarray) -> np.ndarray:
    """One spelling per number, whatever the rows: whole numbers as ``int``, other floats as ``float``.

    Equal numbers of different types (``1``, ``1.0``, ``np.int8(1)``, ``Fraction(1, 2)`` and
    ``0.5``) form one label, and which of them came first in the rows must not show; nor may the
    column's dtype, which one odd row can change (an ``int64`` column with one float becomes
    ``float64``). A number a float does not hold exactly (``Decimal("0.1")``, integers past
    2**53) keeps its own spelling; the map is one-to-one, as equal canonical forms would mean
    equal numbers.
    """
    as_float = pd.to_numeric(pd.Series(labels, dtype=object), errors="coerce").to_numpy(dtype=float)
    try:
        exact = np.asarray(np.equal(labels, as_float.astype(object)), dtype=bool)
    except Exception:  # noqa: BLE001 - a number type whose comparison raises: keep every spelling
        return labels
    exact &= np.isfinite(as_float)
    whole = exact & (np.floor(as_float) == as_float) & (np.abs(as_float) < 2.0**53)
    out = labels.copy()
    floats = exact & ~whole
    out[floats] = as_float[floats].tolist()
    out[whole] = as_float[whole].astype(np.int64).tolist()
    return out


def _labels_and_codes(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """``(labels, codes)``: the distinct present labels and every row's position among them (-1: dropped).

    Values are one label when pandas finds them equal and they are of the same class (numbers,
    strings, other), and numbers get one canonical spelling (:func:`_canonical_numbers`), so the
    labels shown never depend on the order of the rows or on the dtype one odd row can give a
    column. Booleans count as the numbers 1 and 0 (as pandas' ``value_counts`` counts an object
    column): a pandas index cannot hold both ``True`` and ``1``, and keeping them apart only when
    both occur would let the rows decide how labels are shown. Text that spells a number as
    Python writes it is that number (:func:`_numbers_in_text`). Missing values,
    non-scalar values and values whose hashing raises are out of domain: dropped, uncounted,
    silently (the boundary rule).
    """
    classes = value_classes(values)
    classes[classes == _BOOL_CLASS] = _NUMBER_CLASS  # booleans are the numbers 1 and 0 here (see above)
    codes = np.full(len(values), -1, dtype=np.int64)
    parts: list[np.ndarray] = []
    offset = 0
    present = classes > 0
    single = np.unique(classes[present])
    if single.size == 1 and present.all():  # one class, nothing missing: no selection needed
        masks = [(int(single[0]), None)]
    else:
        masks = [(int(c), classes == c) for c in single]
    text = (0, 0)  # where the text labels are among the labels
    for cls, mask in masks:  # at most four classes
        sub = values if mask is None else pd.Series(np.asarray(values.to_numpy(dtype=object))[mask], dtype=object)
        if mask is not None and values.dtype != object:
            sub = sub.infer_objects()
        labels, sub_codes = _factorize_plain(sub)
        if cls == _NUMBER_CLASS:
            labels = _canonical_numbers(np.asarray(labels, dtype=object))
        shifted = np.where(sub_codes >= 0, sub_codes + offset, -1)
        if mask is None:
            codes = shifted
        else:
            codes[mask] = shifted
        parts.append(np.asarray(labels, dtype=object))
        if cls == _STRING_CLASS:
            text = (offset, offset + len(labels))
        offset += len(labels)
    labels_all = np.concatenate(parts) if parts else np.array([], dtype=object)
    return _numbers_in_text(labels_all, codes, text)


#: Whole numbers as ``str()`` writes them, up to 15 digits (exact in a float: below ``2**53``).
_WHOLE_TEXT = r"^(?:0|-?[1-9][0-9]{0,14})$"
#: Candidates for a float as ``repr`` writes it (checked by writing the parsed float back).
_FLOAT_TEXT = r"^-?[0-9]+(?:\.[0-9]+)?(?:e[+-][0-9]+)?$"


def _numbers_in_text(labels: np.ndarray, codes: np.ndarray, text: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """The labels with every text label that spells a number as Python writes it made that number.

    ``dd.from_pandas`` (Dask's default ``dataframe.convert-string``) and ``read_csv`` hold an
    ``object`` column as text, and one odd row makes an ``int64`` or ``bool`` column ``object``: a
    neighbour would otherwise turn every released ``5`` into ``"5"``. So ``"5"``, ``"5.0"``,
    ``"-0.0"``, ``"1e+20"`` (``str()`` of a number, exactly; whole numbers of up to 15 digits) and
    ``"True"``/``"False"`` (booleans count as 1 and 0) are the numbers they spell, merged with
    those numbers' own label; text that does not spell a number that way (``"007"``, ``"+5"``,
    ``"1e3"``, ``"nan"``) stays text.
    The same rule lets a label list's number meet its text (:mod:`pandas_dp.domain.categories`).
    Vectorised over the distinct labels; the rows are re-coded with one gather.
    """
    start, stop = text
    if stop == start:
        return labels, codes
    import pyarrow as pa  # local: pyarrow.compute loads a large module, needed only here
    import pyarrow.compute as pc

    words = pa.array(labels[start:stop], type=pa.string())
    # Vectorised regular expressions (RE2) pick the candidates; only they are parsed.
    whole = np.asarray(pc.match_substring_regex(words, _WHOLE_TEXT), dtype=bool)
    spelt = np.asarray(pc.match_substring_regex(words, _FLOAT_TEXT), dtype=bool) & ~whole
    truth = np.asarray(pc.is_in(words, value_set=pa.array(["True", "False"])), dtype=bool)
    if not (whole.any() or spelt.any() or truth.any()):
        return labels, codes
    numbers = np.empty(stop - start, dtype=object)
    numbers[whole] = np.asarray(pc.cast(words.filter(pa.array(whole)), pa.int64())).tolist()
    if spelt.any():
        candidates = pd.Series(labels[start:stop][spelt], dtype=object)
        parsed = pd.to_numeric(candidates, errors="coerce").to_numpy(dtype=float, na_value=np.nan)  # never raises
        again = parsed.astype(str).astype(object) == labels[start:stop][spelt]  # as repr writes it, exactly
        spelt[spelt] = again & np.isfinite(parsed)
        numbers[spelt] = _canonical_numbers(parsed[again & np.isfinite(parsed)].astype(object))
    numbers[truth] = np.asarray(pc.equal(words.filter(pa.array(truth)), "True"), dtype=np.int64).tolist()
    number = whole | spelt | truth
    values = labels.copy()
    values[start:stop][number] = numbers[number]
    # The labels that are not text, with the converted text, are grouped by equality (numbers meet
    # their spelling; a date never equals a number); the text that stays text keeps its own labels.
    joined = np.ones(len(labels), dtype=bool)
    joined[start:stop] = number
    grouped, uniques = pd.factorize(pd.Series(values[joined], dtype=object))
    kept = np.flatnonzero(~joined)
    remap = np.empty(len(labels) + 1, dtype=np.int64)
    remap[np.flatnonzero(joined)] = grouped
    remap[kept] = len(uniques) + np.arange(kept.size)
    remap[-1] = -1
    new_labels = np.concatenate([np.asarray(uniques, dtype=object), values[kept]])
    if np.array_equal(remap[:-1], np.arange(len(labels))):  # nothing merged or moved: the codes stand
        return new_labels, codes
    return new_labels, remap[codes]


def _count_labels(frame: Any, column: Any, bounds: UnitBounds | None, key: bytes,
                  engine: Any) -> tuple[np.ndarray, np.ndarray]:
    """Exact counts of every present label (after bounding each unit's contribution).

    Without a unit: one counting pass (per partition on Dask, merged). With a unit: the present
    labels, put in their public order, become an internal domain (never shown) on which the
    engine codes and bounds the rows as for any histogram, so both engines give the same counts
    for the same key.
    """
    pandas = isinstance(frame, pd.DataFrame)
    if bounds is None:
        if not pandas:
            return _count_partitions(frame, column)
        labels, codes = _labels_and_codes(frame[column])
        return labels, np.bincount(codes[codes >= 0], minlength=labels.size).astype(np.int64)
    labels = _labels_and_codes(frame[column])[0] if pandas else _count_partitions(frame, column)[0]
    labels = labels[public_order(labels)]
    if labels.size == 0:
        return labels, np.zeros(0, dtype=np.int64)
    domain = CategoryDomain(column, pd.Index(labels, dtype=labels.dtype, tupleize_cols=False))
    coded = engine.coded_rows(frame, Grid((domain,)), bounds)
    return labels, np.asarray(coded.counts(bounds, key), dtype=np.int64)


def _partition_counts(part: pd.Series) -> pd.DataFrame:
    labels, codes = _labels_and_codes(part)
    counts = np.bincount(codes[codes >= 0], minlength=labels.size).astype(np.int64)
    return pd.DataFrame({"label": pd.Series(labels, dtype=object), "n": counts})


def _count_partitions(frame: Any, column: Any) -> tuple[np.ndarray, np.ndarray]:
    """A Dask frame's label counts: one counting pass per partition, the partial counts merged by label."""
    meta = pd.DataFrame({"label": pd.Series([], dtype=object), "n": pd.Series([], dtype=np.int64)})
    merged = frame[column].map_partitions(_partition_counts, meta=meta).compute()
    labels, codes = _labels_and_codes(merged["label"].infer_objects())
    ok = codes >= 0
    counts = np.bincount(codes[ok], weights=merged["n"].to_numpy()[ok], minlength=labels.size)
    return labels, np.rint(counts).astype(np.int64)


def public_order(labels: np.ndarray) -> np.ndarray:
    """Positions that sort released labels by a public rule: natural order, or by (type, text) when mixed."""
    if labels.size == 0:
        return np.arange(0)
    try:
        return np.asarray(pd.Index(labels).argsort(), dtype=np.int64)
    except Exception:  # noqa: BLE001 - labels of types that do not compare (strings and numbers)
        keys = [(type(v).__name__, str(v)) for v in labels.tolist()]
        return np.asarray(sorted(range(len(keys)), key=keys.__getitem__), dtype=np.int64)


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
    bound: int | None = None  # the truncation of the noise (one label per unit, epsilon=): None without
    scale, mix = Fraction(0), Fraction(0)
    if c == 1 and isinstance(noise, DiscreteLaplace):
        scale = noise.scale
        bound, threshold, mix = truncated_mixture(scale, d, r)
    else:
        threshold = discovery_threshold(noise, d, c, r)
    full = loss.with_delta(d)
    column = cols[0]
    params: dict[str, Any] = {"categories": DISCOVER, "delta": str(d), "threshold": threshold,
                              "nonnegative": nonneg, "labels_per_unit": c, "rows_per_label": r,
                              "mechanism": (_TRUNCATED if bound is not None else _THRESHOLDING)}
    if bounds is not None:
        params.update(bounds.describe())
    if bound is not None and mix:
        params["lower_pair_probability"] = str(mix)

    def count(engine: Any) -> tuple[np.ndarray, np.ndarray, bytes]:
        key = release_key(generator) if bounds is not None else b""
        labels, counts = _count_labels(frame, column, bounds, key, engine)
        return labels, counts, key

    def mechanism(exact: tuple[np.ndarray, np.ndarray, bytes]) -> Histogram:
        labels, counts, _ = exact
        if bound is None:
            noisy = noise.add(counts, generator)
            keep = noisy >= threshold
        else:  # each label: (k, T), or (k - 1, T - 1) with probability mix (truncated_mixture)
            lower = (word_source(generator)(counts.size) >> np.uint64(11)) < np.uint64(int(mix * _MIX_ONE))
            noisy = counts.copy()
            upper = ~lower
            noisy[upper] += truncated_discrete_laplace(scale, bound, int(upper.sum()), rng=generator)
            if lower.any():
                noisy[lower] += truncated_discrete_laplace(scale, bound - 1, int(lower.sum()), rng=generator)
            del upper
            keep = noisy >= threshold - lower
            del lower
        kept_labels, kept = labels[keep], noisy[keep]
        order = public_order(kept_labels)
        kept_labels, kept = kept_labels[order], np.ascontiguousarray(kept[order])
        del labels, counts, noisy
        post: tuple[str, ...] = (f"released labels with noisy count >= {threshold}",)
        if nonneg:
            np.maximum(kept, 0, out=kept)
            post += ("clip at 0",)
        grid = Grid((CategoryDomain(column, pd.Index(kept_labels, dtype=kept_labels.dtype if kept_labels.size
                                                     else object, tupleize_cols=False)),))
        described = noise.describe()
        variance = noise.variance()
        if bound is not None:
            described.update(noise="truncated discrete Laplace", noise_bound=bound)
            variance = float((1 - mix) * Fraction(truncated_discrete_laplace_variance(scale, bound))
                             + mix * Fraction(truncated_discrete_laplace_variance(scale, bound - 1)))
        return Histogram(
            counts=as_series(kept, grid, "estimate", owned=True),
            variance=as_series(constant_cells(variance, grid), grid, "variance"),
            epsilon=loss.pure_epsilon,
            method="discover",
            params={"noise": described.pop("noise"), "sensitivity": sensitivity.describe(), **described,
                    **params, "released": int(kept.size),
                    "missing": (f"labels whose true count is below about {threshold} (the threshold) may be missing; "
                                f"a label is released only when its noisy count reaches {threshold}")},
            domain=grid,
            post_processing=post,
            variance_exact=False,
            loss=full, noise=noise, single_draw=False,
        )

    return run(frame, Release(loss=full, method="histogram:discover", columns=cols, params=params, count=count,
                              mechanism=mechanism, budget=budget))
