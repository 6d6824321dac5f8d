"""Sums and means per cell: the plan (what is measured, at which sensitivity and noise) and the estimates.

Numpy only. Every value column ``v`` has public bounds ``[low, high]`` and a public grid step
``resolution`` ``r``: a value is clipped to the bounds and rounded to the grid, ``q = rint(clip(x) / r)``,
an integer in ``[a, b] = [rint(low / r), rint(high / r)]``. The engine returns, per cell, the exact
number ``n`` of rows with a value and the exact sum ``S = sum q`` (int64). What is measured, each with
exact integer noise:

* ``count`` (``"count"`` or ``"mean"`` asked): ``n``, sensitivity 1 per row;
* ``sum`` (``"sum"`` asked without ``"mean"``): ``S``, sensitivity ``max(|a|, |b|)`` per row;
* ``centred`` (``"mean"`` asked): ``C = 2 S - (a + b) n = sum (2 q - a - b)``, the sum of the values
  centred at the middle of the bounds in half steps, sensitivity ``b - a`` per row (half the range
  in steps: half the sensitivity of a plain sum of values in ``[0, high]``);
* ``steps`` (``"median"`` or ``("quantile", q)`` asked): the rows of every cell in each of
  :data:`CELL_STEPS` equal sub-bins of ``[a, b]``, sensitivity 1 per row; every quantile of the column is
  read from it (:mod:`pandas_dp.algorithms.quantiles`: the noisy sub-bins' prefixes made monotone from 0,
  a CDF, the quantile where it reaches ``q``, linear in its sub-bin; its interval's ends are sub-bin edges).

A privacy unit keeping at most ``k`` rows multiplies every sensitivity by ``k`` (L1 and L2: all its rows
may sit in one cell). The loss is split **equally** across the measured vectors. The split minimises
``sum_j Var_j / Delta_j**2`` (every measured vector's noise variance in units of its own sensitivity):
for Laplace ``sum_j 2 / e_j**2`` under ``sum_j e_j = e``, for Gaussian ``sum_j 1 / (2 rho_j)`` under
``sum_j rho_j = rho``; both are minimised by equal parts (Lagrange: ``e_j**3`` resp. ``rho_j**2`` equal).
For a mean it is the minimax split: its delta-method variance is
``(Var(C) + t**2 Var(n)) / (4 n**2)`` with ``t = C / n`` the centred mean, at worst ``|t| = b - a`` (every
value at a bound), where ``a / e_C**2 + b / e_n**2`` with ``a = b = 2 (b - a)**2`` is smallest at
``e_C = e_n`` (and ``a / rho_C + b / rho_n`` at ``rho_C = rho_n``).

By geography (``by=``): every measured vector is a table of (region, cell) on every level of a public
region tree; its part of the loss is split across the levels by the level weights (sequential
composition; within a level the regions are disjoint), each level's table gets its own exact noise,
and exact GLS across the geography makes the vector consistent (every parent the sum of its children
in every cell; :func:`~pandas_dp.algorithms.geography.release.release_geography`). The estimates
below are then read from the consistent vectors, with their exact GLS variances: counts and sums add
up across levels exactly, and a region's mean is its consistent sum over its consistent count.

Estimates (post-processing of the noisy vectors, in data units): ``count = n~``; ``sum = r S~``, or with a
mean ``r (C~ + (a + b) n~) / 2``; ``mean = r clip((a + b + C~ / n~) / 2, a, b)``. A mean is ``NaN`` (its
standard error too) where its cell is too small to say anything: where ``n~ <= 0``, or where its 95%
interval would cover the whole range of the bounds (``2 f se >= (b - a) r``, ``f`` the centred noise's
:meth:`~pandas_dp.privacy.loss.Noise.tail_factor` at 0.95).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from pandas_dp.algorithms.geography.layout import level_tables
from pandas_dp.algorithms.geography.release import release_geography
from pandas_dp.algorithms.quantiles import monotone_prefixes, row_intervals, row_quantiles
from pandas_dp.privacy.loss import Noise, PrivacyLoss, Sensitivity

if TYPE_CHECKING:  # the region tree is built in domain/ (public); only its levels and parents are read here
    from pandas_dp.domain.geography import RegionTree

__all__ = ["STATISTICS", "CELL_STEPS", "quantile_of", "ValueColumn", "Measurement", "AggregatePlan", "plan_aggregate", "measure",
           "measure_geography", "Estimates", "estimate", "MAX_STEPS", "FLAG_LEVEL"]

#: The statistics of this release; a quantile is named ``"quantile(q)"`` (``("quantile", q)`` in ``aggs``).
STATISTICS = ("count", "sum", "mean", "median", "quantile")
#: Equal sub-bins of a value column's bounds counted per cell for its quantiles (``"median"``, ``("quantile", q)``).
CELL_STEPS = 64
#: Largest ``|rint(bound / resolution)|``: sums of up to ``2**32`` rows stay exact in int64.
MAX_STEPS = 2**31 - 1
#: The confidence level of the rule that flags a mean as too uncertain to report (NaN).
FLAG_LEVEL = 0.95


def quantile_of(statistic: str) -> float | None:
    """The probability of a quantile statistic (``"median"``: 0.5, ``"quantile(0.9)"``: 0.9), else None."""
    if statistic == "median":
        return 0.5
    if statistic.startswith("quantile(") and statistic.endswith(")"):
        return float(statistic[len("quantile("):-1])
    return None


@dataclass(frozen=True)
class ValueColumn:
    """One value column's public description: statistics asked, bounds in grid steps, the step.

    Attributes
    ----------
    column : hashable
        The column label.
    statistics : tuple of str
        Asked statistics, in the caller's order (each of :data:`STATISTICS`).
    low, high : int
        The bounds in grid steps, ``rint(bound / resolution)`` (``low < high``).
    resolution : float
        The grid step in data units (for dates and durations: in keys of ``unit``).
    kind : str
        ``"number"``, ``"datetime"`` or ``"timedelta"`` (how the engine reads the column; the estimates are
        in keys of ``unit`` for the last two, converted by the result).
    unit : str
        The time unit of the keys of a date or duration column.
    tz : tzinfo or None
        The time zone of tz-aware date bounds (the keys are then UTC instants).
    """

    column: Any
    statistics: tuple[str, ...]
    low: int
    high: int
    resolution: float
    kind: str = "number"
    unit: str = "s"
    tz: Any = None

    @property
    def steps(self) -> int:
        """Sub-bins counted per cell for this column's quantiles (0: none asked)."""
        return CELL_STEPS if any(quantile_of(s) is not None for s in self.statistics) else 0

    @property
    def measured(self) -> tuple[str, ...]:
        """The vectors measured for this column (``count``, ``sum``, ``centred``, ``steps``), in that order."""
        out = []
        if "count" in self.statistics or "mean" in self.statistics:
            out.append("count")
        if "sum" in self.statistics and "mean" not in self.statistics:
            out.append("sum")
        if "mean" in self.statistics:
            out.append("centred")
        if self.steps:
            out.append("steps")
        return tuple(out)

    def per_row(self, kind: str) -> int:
        """How far one row moves the measured vector ``kind`` (in one cell; ``steps``: one sub-bin of one cell)."""
        if kind in ("count", "steps"):
            return 1
        if kind == "sum":
            return max(abs(self.low), abs(self.high))
        return self.high - self.low


@dataclass(frozen=True)
class Measurement:
    """One measured vector: its value column (index), kind, sensitivity and calibrated noise.

    By geography, ``level_losses`` holds every level's loss (``None``: the level is not measured),
    ``level_noises`` their noises, and ``noise`` is the one of them with the widest interval factor
    (:meth:`~pandas_dp.privacy.loss.Noise.tail_factor`), which draws the intervals.
    """

    column: int
    kind: str
    sensitivity: Sensitivity
    noise: Noise
    level_losses: tuple[PrivacyLoss | None, ...] = ()
    level_noises: tuple[Noise | None, ...] = ()


@dataclass(frozen=True)
class AggregatePlan:
    """The public plan: the value columns and every measurement with its noise (equal parts of the loss)."""

    values: tuple[ValueColumn, ...]
    measurements: tuple[Measurement, ...]
    share: Fraction


def plan_aggregate(values: tuple[ValueColumn, ...], loss: PrivacyLoss, unit: Sensitivity,
                   level_shares: tuple[Fraction, ...] = (), level_names: tuple[str, ...] = ()) -> AggregatePlan:
    """Split ``loss`` equally across the measured vectors and calibrate each one's noise.

    Parameters
    ----------
    values : tuple of ValueColumn
    loss : PrivacyLoss
        The release's loss (what the measurements spend together, by sequential composition).
    unit : Sensitivity
        How far one privacy unit moves a count vector: ``(1, 1)`` for rows, ``(k, k**2)`` for a unit
        keeping at most ``k`` rows; a value vector's sensitivity is this scaled by its per-row change.
    level_shares, level_names : tuple, optional
        By geography: every level's exact share of each measured vector's part (summing to 1; ``0``:
        the level is not measured) and the level names (for messages).

    Raises
    ------
    ParameterError
        When a part of the loss is too small for the sampler (before any charge).

    Examples
    --------
    >>> from pandas_dp.privacy.loss import PureDP
    >>> plan = plan_aggregate((ValueColumn("income", ("mean",), 0, 100, 1.0),), PureDP(Fraction(1)),
    ...                       Sensitivity())
    >>> [(m.kind, m.noise.describe()["noise_scale"]) for m in plan.measurements]
    [('count', Fraction(2, 1)), ('centred', Fraction(200, 1))]
    """
    kinds = [(i, kind) for i, v in enumerate(values) for kind in v.measured]
    share = Fraction(1, len(kinds))
    part = loss.part(share)
    measurements = []
    for i, kind in kinds:
        sensitivity = unit.scaled(values[i].per_row(kind))
        what = f"the {kind} of column {values[i].column!r}"
        if not level_shares:
            measurements.append(Measurement(i, kind, sensitivity, part.noise(sensitivity, what=what)))
            continue
        losses = tuple(p if s > 0 else None for p, s in zip(part.split(level_shares), level_shares))
        noises = tuple(None if p is None else p.noise(sensitivity, what=f"{what} at level {name!r}")
                       for p, name in zip(losses, level_names))
        widest = max((n for n in noises if n is not None), key=lambda n: n.tail_factor(FLAG_LEVEL))
        measurements.append(Measurement(i, kind, sensitivity, widest, losses, noises))
    return AggregatePlan(tuple(values), tuple(measurements), share)


def _vector(exact: tuple[np.ndarray, dict[int, np.ndarray]], m: Measurement, v: ValueColumn) -> np.ndarray:
    """The exact measured vector ``m`` (int64) from the engine's sums and sub-bin counts."""
    if m.kind == "steps":
        return np.asarray(exact[1][m.column], dtype=np.int64)
    n, s = exact[0][m.column, 0], exact[0][m.column, 1]
    if m.kind == "count":
        return np.asarray(n, dtype=np.int64)
    if m.kind == "sum":
        return np.asarray(s, dtype=np.int64)
    return np.asarray(2 * s - (v.low + v.high) * n, dtype=np.int64)


def measure(exact: tuple[np.ndarray, dict[int, np.ndarray]], plan: AggregatePlan,
            rng: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """Noisy measured vectors in the plan's order, each with its noise variance per cell.

    ``exact[0][i, 0]`` is the number of rows with a value of column ``i`` in every cell and
    ``exact[0][i, 1]`` the sum of their grid values (the centred sum is computed from them exactly);
    ``exact[1][i]`` the rows per (cell, sub-bin) of a column with quantiles.
    """
    out = []
    for m in plan.measurements:
        noisy = m.noise.add(_vector(exact, m, plan.values[m.column]), rng)
        out.append((np.asarray(noisy, dtype=np.float64), np.full(noisy.shape, m.noise.variance())))
    return out


def measure_geography(exact: tuple[np.ndarray, dict[int, np.ndarray]], plan: AggregatePlan, tree: RegionTree,
                      rng: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """Consistent measured vectors by geography, each with its exact GLS variance per (region, cell).

    ``exact`` holds the leaf tables (``(columns, 2, leaves * cells)`` counts and sums, and sub-bin counts).
    Every measured vector is summed to every level (:func:`level_tables`), noised level by level
    and made consistent (:func:`release_geography`); the output concatenates the levels, root first,
    region after region, cell after cell.
    """
    leaves = len(tree.regions[-1])
    parents = [None, *tree.parents[1:]]
    out = []
    for m in plan.measurements:
        leaf = _vector(exact, m, plan.values[m.column]).reshape(leaves, -1)
        rel = release_geography(level_tables(leaf, tree), parents, level_losses=m.level_losses,
                                sensitivity=m.sensitivity, rng=rng)
        width = leaf.shape[1]
        out.append((np.concatenate([np.asarray(e, dtype=np.float64).reshape(-1) for e in rel.estimates]),
                    np.concatenate([np.repeat(np.asarray(v, dtype=np.float64), width) for v in rel.variances])))
    return out


@dataclass(frozen=True)
class Estimates:
    """Per value column and statistic: estimates and variances (data units, float64, one per cell),
    and how their intervals are drawn (``rules``: ``(kind, noise, low, high)``)."""

    estimates: dict[tuple[int, str], np.ndarray]
    variances: dict[tuple[int, str], np.ndarray]
    rules: dict[tuple[int, str], tuple[str, Noise, float, float]]
    counts: dict[int, np.ndarray]
    #: Per quantile statistic: ``(prefixes, prefix variances, suffix variances, edge values, q)`` of every cell's
    #: CDF (data units), for its intervals at any level (:func:`~pandas_dp.algorithms.quantiles.row_intervals`).
    bands: dict[tuple[int, str], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]] = field(
        default_factory=dict)


def estimate(measured: list[tuple[np.ndarray, np.ndarray]], plan: AggregatePlan) -> Estimates:
    """The asked statistics from the measured vectors and their variances (post-processing; module notes).

    A count, and a sum without a mean, is one draw of integer noise when the plan has no levels: its
    interval is then the noise's exact quantile (``"exact"``); by geography, and for everything derived
    from a centred sum, the interval is the noise's tail factor times the standard error (``"tail"``).
    """
    got = {(m.column, m.kind): (x, var, m.noise) for m, (x, var) in zip(plan.measurements, measured)}
    flat = not any(m.level_losses for m in plan.measurements)
    est: dict[tuple[int, str], np.ndarray] = {}
    var: dict[tuple[int, str], np.ndarray] = {}
    rules: dict[tuple[int, str], tuple[str, Noise, float, float]] = {}
    counts: dict[int, np.ndarray] = {}
    bands: dict[tuple[int, str], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]] = {}
    for i, v in enumerate(plan.values):
        r = float(v.resolution)
        lo, hi = v.low * r, v.high * r
        if (i, "count") in got:
            n, var_n, n_noise = got[i, "count"]
            counts[i] = n
        for stat in v.statistics:
            key = (i, stat)
            if stat == "count":
                est[key], var[key] = n, var_n
                rules[key] = ("exact" if flat else "tail", n_noise, math.nan, math.nan)
            elif stat == "sum" and (i, "sum") in got:
                s, var_s, s_noise = got[i, "sum"]
                est[key], var[key] = r * s, r * r * var_s
                rules[key] = ("exact_scaled", s_noise, r, math.nan) if flat else ("tail", s_noise, math.nan, math.nan)
            elif stat == "sum":
                c, var_c, c_noise = got[i, "centred"]
                mid2 = float(v.low + v.high)
                est[key] = r * (c + mid2 * n) / 2.0
                var[key] = (r / 2.0) ** 2 * (var_c + mid2 * mid2 * var_n)
                rules[key] = ("tail", c_noise, math.nan, math.nan)
            elif stat == "mean":
                c, var_c, c_noise = got[i, "centred"]
                est[key], var[key] = _mean(c, n, var_c, var_n, v, c_noise)
                rules[key] = ("tail", c_noise, lo, hi)
            else:
                x, var_x, x_noise = got[i, "steps"]
                bands[key] = _cdf(x, var_x, v, float(quantile_of(stat)))   # type: ignore[arg-type]
                est[key], var[key] = _quantile(bands[key])
                rules[key] = ("quantile", x_noise, lo, hi)
    return Estimates(est, var, rules, counts, bands)


def _cdf(x: np.ndarray, var_x: np.ndarray, v: ValueColumn,
         q: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """Every cell's CDF over the sub-bins: the noisy bins' prefixes made monotone from 0
    (:func:`~pandas_dp.algorithms.quantiles.monotone_prefixes`), with the prefixes' and suffixes' noise variances
    (independent bins), and the sub-bin edges in data units."""
    prefix = monotone_prefixes(x.reshape(-1, v.steps))
    zero = np.zeros((prefix.shape[0], 1))
    prefix_var = np.concatenate([zero, np.cumsum(var_x.reshape(-1, v.steps), axis=1)], axis=1)
    edges = float(v.resolution) * (v.low + np.arange(v.steps + 1) * (v.high - v.low) / v.steps)
    return prefix, prefix_var, prefix_var[:, -1:] - prefix_var, edges, q


def _quantile(band: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]) -> tuple[np.ndarray, np.ndarray]:
    """A cell's quantile and, as its variance, the square of half its 95% interval over 1.96."""
    prefix, prefix_var, suffix_var, edges, q = band
    z = 1.959963984540054
    low, high = row_intervals(prefix, prefix_var, suffix_var, edges, q, z)
    return row_quantiles(prefix, edges, q), ((high - low) / (2 * z)) ** 2


def _mean(c: np.ndarray, n: np.ndarray, var_c: np.ndarray, var_n: np.ndarray, v: ValueColumn,
          c_noise: Noise) -> tuple[np.ndarray, np.ndarray]:
    """Mean per cell (data units) and its delta-method variance; NaN where the cell is too small."""
    r = float(v.resolution)
    width = float(v.high - v.low)
    positive = n > 0
    safe_n = np.where(positive, n, 1.0)
    t = np.clip(c / safe_n, -width, width)                    # the centred mean, in half steps
    mean = np.clip((v.low + v.high + t) / 2.0, v.low, v.high) * r
    variance = (var_c + t * t * var_n) / (4.0 * safe_n * safe_n) * r * r
    radius = c_noise.tail_factor(FLAG_LEVEL) * np.sqrt(variance)
    flagged = ~positive | (2.0 * radius >= width * r)
    return np.where(flagged, np.nan, mean), np.where(flagged, np.nan, variance)
