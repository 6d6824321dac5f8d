"""Output events for the DP tester: linear statistics of a release and intervals of their values.

Every event is ``{lo <= w . x <= hi}`` for a weight vector ``w`` (one output
cell, the total, or a direction along which the two datasets' outputs
differ) and a closed interval ``[lo, hi]`` (a tail, a bucket, one value).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pandas_dp.testing._binomial import lower_bound, upper_bound

__all__ = ["Event", "Statistic", "candidate_events", "count_in", "select_events", "selection_score", "statistics"]

TAIL_LEVELS = np.array([0.001, 0.003, 0.01, 0.03, 0.06, 0.1, 0.2, 0.3, 0.4, 0.5,
                        0.6, 0.7, 0.8, 0.9, 0.94, 0.97, 0.99, 0.997, 0.999])
MAX_POINT_EVENTS = 24  # most frequent values of a discrete statistic tested as single points
MAX_COLUMNS = 16  # output cells tested one by one (the ones that differ most)


@dataclass(frozen=True)
class Statistic:
    """A linear statistic ``w . x`` of the release vector ``x``, with a readable name."""

    name: str
    weights: np.ndarray


@dataclass(frozen=True)
class Event:
    """``{lo <= statistic <= hi}``: ``lo``/``hi`` may be infinite (tails)."""

    statistic: int
    lo: float
    hi: float

    def describe(self, stats: list[Statistic]) -> str:
        name = stats[self.statistic].name
        if self.lo == self.hi:
            return f"{name} == {self.lo:.6g}"
        if np.isneginf(self.lo):
            return f"{name} <= {self.hi:.6g}"
        if np.isposinf(self.hi):
            return f"{name} >= {self.lo:.6g}"
        return f"{self.lo:.6g} <= {name} <= {self.hi:.6g}"


def _unit(k: int, j: int) -> np.ndarray:
    w = np.zeros(k)
    w[j] = 1.0
    return w


def statistics(a: np.ndarray, b: np.ndarray, labels: list[str] | None) -> list[Statistic]:
    """Statistics that stress the pair, chosen from selection runs ``a`` (on D) and ``b`` (on D').

    * single cells: all of them for small outputs, else the ``MAX_COLUMNS`` with
      the largest two-sample t statistic (the cells that differ between D, D');
    * the total of all cells;
    * the inverse-variance direction ``w_j = d_j / v_j`` (``d`` the difference
      of means, ``v`` the pooled variance) and the sign direction ``sign(d_j)``
      over the cells that differ, which add up the evidence of several
      shifted cells (e.g. every noisy node above a changed leaf).
    """
    k = a.shape[1]
    name = (lambda j: f"cell {labels[j]!r}") if labels and len(labels) == k else (lambda j: f"output[{j}]")
    d = a.mean(axis=0) - b.mean(axis=0)
    v = 0.5 * (a.var(axis=0) + b.var(axis=0))
    se = np.sqrt(v * (1.0 / max(len(a), 1) + 1.0 / max(len(b), 1)))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, np.abs(d) / se, np.where(d != 0, np.inf, 0.0))
    if k <= MAX_COLUMNS:
        columns = np.arange(k)
    else:
        columns = np.argsort(-t, kind="stable")[:MAX_COLUMNS]
    out = [Statistic(name(int(j)), _unit(k, int(j))) for j in columns]
    if k > 1:
        out.append(Statistic("total of all outputs", np.ones(k)))
        differ = (t > 2.0) & (v > 0)
        if differ.sum() < 2:
            differ = v > 0
        if differ.sum() >= 2:
            w = np.where(differ, d / np.where(v > 0, v, 1.0), 0.0)
            if np.any(w != 0):
                out.append(Statistic(f"inverse-variance direction over {int(differ.sum())} outputs",
                                     w / np.abs(w).max()))
            s = np.where(differ, np.sign(d), 0.0)
            if np.count_nonzero(s) >= 2:
                out.append(Statistic(f"signed sum of {int(np.count_nonzero(s))} differing outputs", s))
    return out


def _clean(x: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(x), np.inf, x)


def candidate_events(index: int, sa: np.ndarray, sb: np.ndarray) -> list[Event]:
    """Tails, buckets and single values of one statistic, from pooled selection values."""
    pooled = np.sort(np.concatenate([sa, sb]))
    if pooled.size == 0:
        return []
    cuts = np.unique(np.quantile(pooled[np.isfinite(pooled)] if np.isfinite(pooled).any() else pooled,
                                 TAIL_LEVELS, method="inverted_cdf"))
    events = [Event(index, float(c), np.inf) for c in cuts]
    events += [Event(index, -np.inf, float(c)) for c in cuts]
    events += [Event(index, float(lo), float(np.nextafter(hi, -np.inf))) for lo, hi in zip(cuts[:-1], cuts[1:])]
    values, counts = np.unique(pooled, return_counts=True)
    if values.size <= pooled.size // 4:  # discrete enough for single values to carry mass
        top = values[np.argsort(-counts, kind="stable")[:MAX_POINT_EVENTS]]
        events += [Event(index, float(x), float(x)) for x in top]
    return events


def count_in(sorted_values: np.ndarray, events: list[Event]) -> np.ndarray:
    """Number of values in each event, from sorted values (two binary searches per event)."""
    lo = np.array([e.lo for e in events])
    hi = np.array([e.hi for e in events])
    return np.searchsorted(sorted_values, hi, side="right") - np.searchsorted(sorted_values, lo, side="left")


def sorted_stats(x: np.ndarray, stats: list[Statistic]) -> list[np.ndarray]:
    """Each statistic's values on the runs ``x`` (rows), sorted; NaN counts as +inf."""
    if not stats:
        return []
    w = np.stack([s.weights for s in stats], axis=1)
    with np.errstate(invalid="ignore"):
        values = _clean(x @ w) if x.size else np.zeros((0, len(stats)))
    return [np.sort(values[:, i]) for i in range(len(stats))]


def selection_score(ca: np.ndarray, na: int, cb: np.ndarray, nb: int, *, epsilon: float,
                    delta: float) -> np.ndarray:
    """How promising events are on the selection runs (larger is more suspicious; ``-inf``: cannot violate).

    ``delta = 0``: the implied-epsilon lower bound at a loose level (alpha
    0.2) minus ``epsilon``, ``log(p_lo / q_hi) - epsilon``, which prefers
    events that both have mass and a large ratio.

    ``delta > 0``: the standardized margin of the tested inequality,
    ``(p - e^eps q - delta) / (sd_p + e^eps sd_q)`` with ``sd`` the binomial
    standard deviations; an event can only be refuted when its probability
    exceeds ``delta`` by several standard errors, so this prefers events of
    moderate probability where the additive ``delta`` matters little over
    far tails whose mass is of the order of ``delta``. Events whose loose
    lower bound does not exceed ``delta`` score ``-inf``.
    """
    ca = np.asarray(ca, dtype=np.float64)
    cb = np.asarray(cb, dtype=np.float64)
    p_lo = lower_bound(ca, na, 0.2) - delta
    if delta == 0:
        q_hi = upper_bound(cb, nb, 0.2)
        with np.errstate(divide="ignore", invalid="ignore"):
            score = np.where(p_lo > 0, np.log(np.maximum(p_lo, 1e-300)) - np.log(q_hi), -np.inf)
        return score - epsilon
    scale = math.exp(epsilon)
    p, q = ca / max(na, 1), cb / max(nb, 1)
    ps, qs = (ca + 0.5) / (na + 1.0), (cb + 0.5) / (nb + 1.0)  # smoothed: no zero variance at 0 or n
    sd = np.sqrt(ps * (1 - ps) / max(na, 1)) + scale * np.sqrt(qs * (1 - qs) / max(nb, 1))
    return np.where(p_lo > 0, (p - scale * q - delta) / sd, -np.inf)


def select_events(a: np.ndarray, b: np.ndarray, stats: list[Statistic], *, epsilon: float,
                  slack: float, max_events: int, trials_a: int | None = None,
                  trials_b: int | None = None) -> list[tuple[Event, bool]]:
    """The ``max_events`` most suspicious events per direction on the selection runs.

    Returns pairs ``(event, swapped)``: ``swapped`` False tests
    ``P[M(D) in S] <= e^eps P[M(D') in S] + slack``, True the reverse. Events are
    ranked by :func:`selection_score`. ``trials_a``/``trials_b`` are the
    numbers of selection runs (default: the rows of ``a``/``b``; more when
    some runs have no release vector, e.g. they raised).
    """
    sa, sb = sorted_stats(a, stats), sorted_stats(b, stats)
    na = len(a) if trials_a is None else trials_a
    nb = len(b) if trials_b is None else trials_b
    chosen: list[tuple[Event, bool]] = []
    for swapped in (False, True):
        scored: list[tuple[float, int, Event]] = []
        for i in range(len(stats)):
            events = candidate_events(i, sa[i], sb[i])
            if not events:
                continue
            num, den = (sb[i], sa[i]) if swapped else (sa[i], sb[i])
            n_num, n_den = (nb, na) if swapped else (na, nb)
            ca, cb = count_in(num, events), count_in(den, events)
            score = selection_score(ca, n_num, cb, n_den, epsilon=epsilon, delta=slack)
            scored += [(float(s), len(scored) + j, e) for j, (s, e) in enumerate(zip(score, events))]
        scored.sort(key=lambda r: (-r[0], r[1]))
        seen: set[tuple[int, float, float]] = set()
        for s, _, e in scored:
            key = (e.statistic, e.lo, e.hi)
            if key in seen or not np.isfinite(s):
                continue
            seen.add(key)
            chosen.append((e, swapped))
            if len(seen) >= max_events:
                break
    return chosen
