"""Privacy loss as a type, and the calibrated noise it buys.

A release states its privacy loss once, as a small frozen object, and hands it
down the release pipeline. The object is the only code that knows its
*measure* (pure epsilon-DP today); everything else asks it questions:

* accounting: losses of one measure add, subtract and compare exactly
  (rationals), and split into exact shares whose sum never exceeds the whole;
* calibration: ``loss.noise(sensitivity)`` returns the noise that makes a
  query of that :class:`Sensitivity` satisfy this loss, as a :class:`Noise`
  object with ``add(counts, rng)``, ``variance()`` and ``describe()``.

Algorithms receive :class:`Noise` objects (or the per-part losses to make
them), never an epsilon, and never import the samplers.

Sensitivity
-----------
A :class:`Sensitivity` records how far one privacy unit can move a vector of
counts, in L1 and in squared L2 (both exact rationals). A histogram where a
unit adds at most ``r`` rows to each of at most ``c`` cells has
``L1 = c r`` and ``L2**2 = c r**2``; the default (one row per unit) is
``L1 = L2 = 1``.

Pure DP and zCDP
----------------
:class:`PureDP` ``(epsilon)`` calibrates exact discrete Laplace noise of scale
``t = L1 / epsilon`` (rounded *up* to an exact rational,
:func:`pandas_dp.noise.laplace.noise_scale`); adding ``Z`` with
``P(Z = z) ∝ exp(-|z| / t)`` to a query of L1 sensitivity ``L1`` is
``epsilon``-DP (Ghosh, Roughgarden, Sundararajan 2012; Canonne, Kamath,
Steinke 2020, Section 2).

:class:`ZCDP` ``(rho)`` calibrates exact discrete Gaussian noise with
``sigma**2 = L2**2 / (2 rho)`` (exact rational, never rounded down); adding it
to a query of L2 sensitivity ``L2`` is ``rho``-zCDP (Canonne, Kamath, Steinke
2020, Theorem 14). A pure ``epsilon`` release implies ``epsilon**2 / 2``-zCDP
(Bun and Steinke 2016, Proposition 1.4), which is what it costs under a zCDP
budget; a zCDP release implies no pure guarantee and is refused by an
epsilon budget.

Approximate DP
--------------
Either measure may carry a ``delta`` (an exact rational in ``[0, 1)``, 0 by
default): ``PureDP(epsilon, delta)`` is (epsilon, delta)-DP and
``ZCDP(rho, delta)`` is delta-approximate rho-zCDP (Bun and Steinke 2016,
Section 8). Every release with a delta here is approximate *by
conditioning*: on an event of probability at least ``1 - delta`` its output
is pure epsilon-DP (rho-zCDP) with respect to its neighbour, which is both
(epsilon, delta)-DP and, by Proposition 1.4 of Bun and Steinke applied to
the conditional distributions, delta-approximate ``epsilon**2 / 2``-zCDP: a
pure release with delta is charged ``(epsilon**2 / 2, delta)`` in a zCDP
budget. Sequential composition adds both parts (Bun and Steinke 2016,
Section 8 for zCDP; basic composition for (epsilon, delta)-DP).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar, Sequence

import numpy as np

from pandas_dp._utils.checks import MAX_GAUSSIAN_SIGMA2, MAX_NOISE_SCALE, normal_quantile
from pandas_dp._utils.rational import exact_text, fraction_text, safe_repr, to_fraction
from pandas_dp.errors import ParameterError
from pandas_dp.noise.discrete_gaussian import (add_discrete_gaussian, discrete_gaussian, discrete_gaussian_quantile,
                                               discrete_gaussian_variance)
from pandas_dp.noise.laplace import (add_in_chunks, discrete_laplace, discrete_laplace_quantile, discrete_laplace_variance,
                                     noise_scale)
from pandas_dp.privacy.zcdp import zcdp_epsilon

__all__ = ["Sensitivity", "PrivacyLoss", "PureDP", "ZCDP", "Noise", "DiscreteLaplace", "DiscreteGaussian", "pure", "zcdp",
           "loss_from", "check_delta", "MAX_NOISE_SCALE", "MAX_GAUSSIAN_SIGMA2", "SHARE_GRID"]

#: Smallest variance a noise reports: a huge loss makes the exact variance underflow to 0 in floating
#: point (the discrete Laplace variance ``2p/(1-p)^2``, ``p = exp(-1/t)``, beyond epsilon ~745), which would
#: break every inverse-variance weight downstream; this upper bound stands in for it.
VARIANCE_FLOOR = 1e-100
#: Float shares are rounded down to multiples of ``1 / SHARE_GRID`` so that exact parts never exceed the whole.
SHARE_GRID = 1 << 40


@dataclass(frozen=True)
class Sensitivity:
    """How far one privacy unit can move a released vector: ``l1`` and ``l2_squared`` (exact).

    Examples
    --------
    >>> Sensitivity.cells(cells=3, per_cell=2)
    Sensitivity(l1=Fraction(6, 1), l2_squared=Fraction(12, 1))
    """

    l1: Fraction = Fraction(1)
    l2_squared: Fraction = Fraction(1)

    @classmethod
    def cells(cls, *, cells: int | Fraction = 1, per_cell: int | Fraction = 1) -> "Sensitivity":
        """A unit changes at most ``cells`` cells by at most ``per_cell`` each."""
        c, r = Fraction(cells), Fraction(per_cell)
        return cls(c * r, c * r * r)

    def scaled(self, factor: int | Fraction) -> "Sensitivity":
        """Every change multiplied by ``factor`` (L1 times ``factor``, squared L2 times ``factor**2``)."""
        f = Fraction(factor)
        return Sensitivity(self.l1 * f, self.l2_squared * f * f)

    @property
    def l2(self) -> float:
        """The L2 sensitivity (a float; the exact value is ``sqrt(l2_squared)``)."""
        return math.sqrt(self.l2_squared)

    def describe(self) -> dict[str, Any]:
        """JSON-friendly record for results and the ledger."""
        return {"l1": _text(self.l1), "l2_squared": _text(self.l2_squared)}


UNIT = Sensitivity()


_text = fraction_text


class Noise(ABC):
    """Integer noise calibrated for one query; frozen, comparable, described for the record."""

    #: Name shown in results and the ledger (``"discrete Laplace"``).
    name: ClassVar[str]

    @abstractmethod
    def sample(self, shape: int | tuple[int, ...], rng: Any) -> np.ndarray:
        """``int64`` noise of the given shape from ``rng`` (``None``: the secure source)."""

    def add(self, counts: np.ndarray, rng: Any) -> np.ndarray:
        """``counts`` plus fresh noise (a new ``int64`` array of the same shape)."""
        counts = np.asarray(counts)
        if counts.ndim and np.result_type(counts.dtype, np.int64) == np.int64:
            # The same draws as ``counts + sample(...)``, added chunk by chunk into one new array.
            return self.add_in_place(counts.astype(np.int64, order="C"), rng)
        return counts + self.sample(counts.shape, rng)

    def add_in_place(self, values: np.ndarray, rng: Any) -> np.ndarray:
        """Add fresh noise to the writeable ``int64`` array ``values`` in place and return it.

        The draws are those of ``sample(values.shape, rng)``; samplers that can add them chunk by
        chunk (both noises here) never hold a noise array of the full size.
        """
        values += self.sample(values.shape, rng)
        return values

    @abstractmethod
    def variance(self) -> float:
        """Exact variance of one noise value (as a float; at least :data:`VARIANCE_FLOOR`)."""

    @abstractmethod
    def quantile(self, q: float | Fraction) -> int:
        """Exact quantile: the smallest integer ``z`` with ``P(Z <= z) >= q``."""

    def interval_radius(self, confidence_level: float) -> int:
        """Smallest integer ``c`` with ``P(|Z| <= c) >= confidence_level`` (exact, symmetric noise).

        ``P(|Z| <= c) = 2 F(c) - 1`` for noise symmetric about 0, so ``c`` is the
        ``(1 + confidence_level) / 2`` quantile, taken at the exact rational (a float
        sum ``(1.0 + 0.9) / 2`` rounds below it).
        """
        return self.quantile((1 + to_fraction(confidence_level, name="confidence_level")) / 2)

    @abstractmethod
    def pmf(self, z: np.ndarray) -> np.ndarray:
        """Probability of each integer in ``z`` (floats; for intervals, not for sampling)."""

    @abstractmethod
    def tail_factor(self, confidence_level: float) -> float:
        """Multiplier of a standard error that covers a linear combination of independent draws.

        The half-width ``tail_factor * std_error`` is used for estimates that
        combine many noise values with real weights (least squares); it is
        never below the normal quantile.
        """

    def sum_radius(self, terms: int, confidence_level: float) -> float:
        """Half-width covering the sum of ``terms`` independent draws at ``confidence_level``.

        One draw: :meth:`interval_radius` (exact). Several: the exact distribution
        of the sum by ``terms``-fold convolution of the pmf (FFT on the support
        holding all but 1e-15 of the mass), when that support stays below 2**20
        points; beyond, :meth:`tail_factor` times the sum's standard error (the
        sum is then close to normal).
        """
        if terms <= 1:
            return float(self.interval_radius(confidence_level))
        half = int(self.quantile(1 - Fraction(1, 10**15 * terms)))
        width = 2 * half * terms + 1
        if width > 1 << 20:
            return self.tail_factor(confidence_level) * math.sqrt(terms * self.variance())
        support = np.arange(-half, half + 1)
        size = 1 << int(width - 1).bit_length()
        spectrum = np.fft.rfft(self.pmf(support), size) ** terms
        total = np.fft.irfft(spectrum, size)[:width]        # the sum on -half*terms .. half*terms
        centre = half * terms
        inside = np.cumsum(np.concatenate([[total[centre]], total[centre + 1:] + total[centre - 1::-1]]))
        return float(np.searchsorted(inside, float(confidence_level) - 1e-12))

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Record for results: ``{"noise": name, ...its exact parameters}``, each a ``Fraction``.

        A result's ``params`` hold the numbers (``params["noise_scale"] == Fraction(200, 19)``); the ledger
        and the command line's files write each as its exact text (``"200/19"``).
        """


@dataclass(frozen=True)
class DiscreteLaplace(Noise):
    """Exact discrete Laplace noise ``P(z) ∝ exp(-|z| / scale)`` (two-sided geometric)."""

    scale: Fraction
    name: ClassVar[str] = "discrete Laplace"

    def sample(self, shape: int | tuple[int, ...], rng: Any) -> np.ndarray:
        return discrete_laplace(self.scale, shape, rng=rng)

    def add_in_place(self, values: np.ndarray, rng: Any) -> np.ndarray:
        # Chunk by chunk through ``sample`` (the same words as one call): whatever draws the
        # samples, the noise added in place is the noise ``sample`` gives.
        return add_in_chunks(values, lambda shape: self.sample(shape, rng))

    def variance(self) -> float:
        return max(discrete_laplace_variance(self.scale), VARIANCE_FLOOR)

    def quantile(self, q: float | Fraction) -> int:
        return discrete_laplace_quantile(self.scale, q)

    def pmf(self, z: np.ndarray) -> np.ndarray:
        p = math.exp(-1.0 / float(self.scale))
        return (1.0 - p) / (1.0 + p) * p ** np.abs(np.asarray(z, dtype=np.float64))

    def tail_factor(self, confidence_level: float) -> float:
        """``max(z, ln(1 / alpha) / sqrt 2)``: the radius a Laplace error of unit variance needs.

        A combination of discrete Laplace draws is heavier-tailed than a normal
        one (the normal interval covers 92.7% of single draws at 95%); the
        Laplace-shaped radius covers the least-squares combinations of the
        tree and DPCube at or above the nominal level (tests/test_coverage.py).
        """
        alpha = 1.0 - float(confidence_level)
        return max(normal_quantile(confidence_level), math.log(1.0 / alpha) / math.sqrt(2.0))

    def describe(self) -> dict[str, Any]:
        return {"noise": self.name, "noise_scale": self.scale}


@dataclass(frozen=True)
class DiscreteGaussian(Noise):
    """Exact discrete Gaussian noise ``P(z) ∝ exp(-z**2 / (2 sigma2))`` (Canonne, Kamath, Steinke 2020)."""

    sigma2: Fraction
    name: ClassVar[str] = "discrete Gaussian"

    def sample(self, shape: int | tuple[int, ...], rng: Any) -> np.ndarray:
        return discrete_gaussian(self.sigma2, shape, rng=rng)

    def add_in_place(self, values: np.ndarray, rng: Any) -> np.ndarray:
        return add_discrete_gaussian(self.sigma2, values, rng=rng)

    def variance(self) -> float:
        return max(discrete_gaussian_variance(self.sigma2), VARIANCE_FLOOR)

    def quantile(self, q: float | Fraction) -> int:
        return discrete_gaussian_quantile(self.sigma2, q)

    def pmf(self, z: np.ndarray) -> np.ndarray:
        s2 = float(self.sigma2)
        half = int(math.ceil(12.0 * math.sqrt(s2))) + 2
        norm = float(np.exp(-np.arange(-half, half + 1, dtype=np.float64) ** 2 / (2.0 * s2)).sum())
        return np.exp(-np.asarray(z, dtype=np.float64) ** 2 / (2.0 * s2)) / norm

    def tail_factor(self, confidence_level: float) -> float:
        """The normal quantile for ``sigma2 >= 2``; below, the sub-Gaussian bound.

        Combinations of discrete Gaussian draws of ``sigma2 >= 2`` are close to
        normal. Smaller ones sit on the integer lattice (a draw is 0 most of
        the time, and the normal radius misses the +-1 draws): there the bound
        that holds for any weights is used, from ``N_Z(0, sigma2)`` being
        ``sigma2``-sub-Gaussian (Canonne, Kamath, Steinke 2020, Corollary 9):
        ``P(|S| > r) <= 2 exp(-r**2 / (2 V))`` with
        ``V <= (sigma2 / Var) * std_error**2``.
        """
        s2 = float(self.sigma2)
        if s2 >= 2.0:
            return normal_quantile(confidence_level)
        alpha = 1.0 - float(confidence_level)
        return math.sqrt(2.0 * math.log(2.0 / alpha) * s2 / self.variance())

    def describe(self) -> dict[str, Any]:
        return {"noise": self.name, "sigma2": self.sigma2}


class PrivacyLoss(ABC):
    """A privacy loss of one measure: exact amount, exact arithmetic, noise calibration.

    Subclasses are frozen dataclasses with the fields ``amount`` (a positive
    or zero :class:`~fractions.Fraction`) and ``delta`` (the approximate part,
    an exact rational, 0 for a pure or plain zCDP loss).
    """

    #: ``"pure"`` or ``"zcdp"``: what the ledger records.
    measure: ClassVar[str]
    #: The keyword users pass: ``"epsilon"`` or ``"rho"``.
    parameter: ClassVar[str]
    #: Smallest positive amount a release may ask for (its noise would overflow the sampler below it).
    minimum: ClassVar[Fraction]
    amount: Fraction
    delta: Fraction

    def _with(self, amount: Fraction, delta: Fraction) -> "PrivacyLoss":
        return type(self)(amount, delta)  # type: ignore[call-arg]

    # -- exact arithmetic (same measure only) --------------------------------
    def _same(self, other: object) -> "PrivacyLoss":
        if type(other) is not type(self):
            raise TypeError(f"cannot combine {type(self).__name__} with {type(other).__name__}")
        return other

    def __add__(self, other: "PrivacyLoss") -> "PrivacyLoss":
        other = self._same(other)
        return self._with(self.amount + other.amount, self.delta + other.delta)

    def __sub__(self, other: "PrivacyLoss") -> "PrivacyLoss":
        other = self._same(other)
        return self._with(self.amount - other.amount, self.delta - other.delta)

    def __lt__(self, other: "PrivacyLoss") -> bool:
        return self.amount < self._same(other).amount

    def __le__(self, other: "PrivacyLoss") -> bool:
        return self.amount <= self._same(other).amount

    def __gt__(self, other: "PrivacyLoss") -> bool:
        return self.amount > self._same(other).amount

    def __ge__(self, other: "PrivacyLoss") -> bool:
        return self.amount >= self._same(other).amount

    def zero(self) -> "PrivacyLoss":
        """The zero loss of this measure."""
        return self._with(Fraction(0), Fraction(0))

    def part(self, share: Fraction | int) -> "PrivacyLoss":
        """The exact part ``share * amount`` (and ``share * delta``; ``share`` a rational in ``[0, 1]``)."""
        return self._with(self.amount * Fraction(share), self.delta * Fraction(share))

    def phases(self, share: float | Fraction) -> tuple["PrivacyLoss", "PrivacyLoss"]:
        """Two sequential phases: ``share`` of this loss, and exactly the rest.

        ``share`` (strictly between 0 and 1) is read exactly (a float through
        its shortest repr), so the two parts add up to the whole exactly.
        """
        s = to_fraction(share, name="share")
        if not 0 < s < 1:
            raise ParameterError(f"A phase share must be strictly between 0 and 1. Got {safe_repr(share)}.")
        first = self.part(s)
        return first, self - first

    def split(self, shares: Sequence[float | Fraction] | np.ndarray) -> tuple["PrivacyLoss", ...]:
        """Exact parts for ``shares`` (summing to 1); the parts never add up to more than the whole.

        Equal positive shares are kept exact (``amount / m`` each); rational
        shares are used as given; other float shares are rounded down to
        multiples of ``2**-40``.
        """
        values = list(shares)
        positive = [s for s in values if s > 0]
        if positive and all(s == positive[0] for s in positive):
            m = len(positive)
            return tuple(self.part(Fraction(1, m)) if s > 0 else self.zero() for s in values)
        if all(isinstance(s, (Fraction, int)) for s in values):
            if sum(Fraction(s) for s in values) > 1:
                raise ValueError("shares must sum to at most 1")
            return tuple(self.part(Fraction(s)) for s in values)
        return tuple(self.part(Fraction(int(math.floor(float(s) * SHARE_GRID)), SHARE_GRID)) for s in values)

    # -- measure ---------------------------------------------------------------
    def charged_as(self, measure: str) -> "PrivacyLoss":
        """This loss as charged to a budget of ``measure`` (an implied guarantee of that measure).

        Raises
        ------
        ParameterError
            When this loss implies no guarantee of ``measure``.
        """
        if measure == self.measure:
            return self
        implied = self._implies(measure)
        if implied is not None:
            return implied
        raise ParameterError(
            f"A release with {self.parameter}= ({self.measure}) cannot be charged to a {measure} budget: it "
            f"gives no guarantee in that measure. Pass the budget's own parameter instead.")

    def _implies(self, measure: str) -> "PrivacyLoss | None":
        return None

    # -- planning ---------------------------------------------------------------
    #: Exponent ``p`` of a part's noise variance in its share ``s`` of the loss: ``Var ∝ s**-p``.
    variance_exponent: ClassVar[int]

    @abstractmethod
    def planning_variance(self, share: float = 1.0, sensitivity: Sensitivity = UNIT) -> float:
        """Variance of the continuous noise the part ``share`` of this loss calibrates (a float).

        Plans (branching factors, budget splits) compare candidates with these
        closed forms; the released error bars use the exact variance of the
        integer noise actually drawn (:meth:`Noise.variance`).
        """

    # -- calibration -----------------------------------------------------------
    @abstractmethod
    def noise(self, sensitivity: Sensitivity = UNIT, *, what: str = "this release") -> Noise:
        """Noise that makes a query of ``sensitivity`` satisfy this loss.

        Raises
        ------
        ParameterError
            When the loss is too small for the sampler's range (named by ``what``);
            release plans call this before any charge.
        """

    def describe(self) -> dict[str, Any]:
        """JSON-friendly record: ``{"measure": ..., parameter: exact text}`` (and ``"delta"`` when not 0)."""
        out = {"measure": self.measure, self.parameter: _text(self.amount)}
        if self.delta:
            out["delta"] = _text(self.delta)
        return out

    def with_delta(self, delta: Fraction) -> "PrivacyLoss":
        """This loss with the approximate part ``delta`` (exact)."""
        return self._with(self.amount, Fraction(delta))

    @abstractmethod
    def for_unit_sensitivity(self, sensitivity: Sensitivity) -> "PrivacyLoss":
        """The loss at which sensitivity-1 noise satisfies this loss for a query of ``sensitivity``.

        Pure: ``epsilon / L1`` (Laplace noise of scale ``L1 / epsilon`` either way); zCDP:
        ``rho / L2**2``. Used for group privacy (a unit of at most ``k`` rows).
        """

    @abstractmethod
    def epsilon_delta(self, delta: float) -> float:
        """The epsilon of the (epsilon, delta)-DP guarantee this loss implies (never below the true one)."""

    @property
    def pure_epsilon(self) -> float | None:
        """The epsilon of a pure-DP loss as a float; None for a measure with no pure guarantee."""
        return float(self.amount) if self.measure == "pure" else None

    def __float__(self) -> float:
        return float(self.amount)

    def __str__(self) -> str:
        """``rho=0.5 (zCDP)`` or ``epsilon=1/3``: the exact amount as a person writes it."""
        delta = f", delta={exact_text(self.delta)}" if self.delta else ""
        return f"{self.parameter}={exact_text(self.amount)}{delta}" + (" (zCDP)" if self.measure == "zcdp" else "")

    def __repr__(self) -> str:
        """``ZCDP(rho=0.5)``, ``PureDP(epsilon=1/3)``: exact, without ``Fraction(...)``."""
        delta = f", delta={exact_text(self.delta)}" if self.delta else ""
        return f"{type(self).__name__}({self.parameter}={exact_text(self.amount)}{delta})"


@dataclass(frozen=True, eq=True, repr=False)
class PureDP(PrivacyLoss):
    """Pure epsilon-differential privacy: ``PureDP(Fraction(1, 2))`` is epsilon = 0.5.

    Examples
    --------
    >>> loss = PureDP(Fraction(1, 2))
    >>> loss.noise(Sensitivity.cells(cells=2)).describe()
    {'noise': 'discrete Laplace', 'noise_scale': Fraction(4, 1)}
    >>> [str(p.amount) for p in loss.split([0.5, 0.5])]
    ['1/4', '1/4']
    """

    amount: Fraction
    delta: Fraction = Fraction(0)
    measure: ClassVar[str] = "pure"
    parameter: ClassVar[str] = "epsilon"
    minimum: ClassVar[Fraction] = Fraction(1, 2**40)

    variance_exponent: ClassVar[int] = 2

    @property
    def epsilon(self) -> Fraction:
        """The epsilon of this loss (exact)."""
        return self.amount

    def for_unit_sensitivity(self, sensitivity: Sensitivity) -> "PureDP":
        return PureDP(self.amount / sensitivity.l1)  # group privacy: a delta does not carry over as is

    def epsilon_delta(self, delta: float) -> float:
        """Pure epsilon-DP is (epsilon, delta)-DP for every delta: the epsilon itself.

        With a delta of its own, the statement holds for every ``delta`` at least that delta
        (ParameterError below it).
        """
        zcdp_epsilon(Fraction(1), delta)  # the same checks of delta
        _rest_of(self, delta)
        return float(self.amount)

    def planning_variance(self, share: float = 1.0, sensitivity: Sensitivity = UNIT) -> float:
        """Laplace variance ``2 (L1 / (epsilon share))**2`` (0 when it underflows)."""
        with np.errstate(over="ignore"):
            return max(float(2.0 * float(sensitivity.l1) ** 2 / (np.float64(self.amount) * share) ** 2),
                       VARIANCE_FLOOR)

    def noise(self, sensitivity: Sensitivity = UNIT, *, what: str = "this release") -> DiscreteLaplace:
        if self.amount <= 0 or noise_scale(sensitivity.l1, self.amount) > MAX_NOISE_SCALE:
            raise ParameterError(
                f"The 'epsilon' parameter is too small for {what}: its share {float(self.amount):.3g} needs "
                f"a noise scale above 2**50. Pass a larger epsilon or change the split.")
        return DiscreteLaplace(noise_scale(sensitivity.l1, self.amount))

    def _implies(self, measure: str) -> PrivacyLoss | None:
        # Pure epsilon-DP implies (epsilon**2 / 2)-zCDP (Bun and Steinke 2016, Proposition 1.4).
        # With a delta: the conditional pure guarantee implies the conditional zCDP one (module notes).
        return ZCDP(self.amount * self.amount / 2, self.delta) if measure == ZCDP.measure else None


@dataclass(frozen=True, eq=True, repr=False)
class ZCDP(PrivacyLoss):
    """Zero-concentrated differential privacy: ``ZCDP(Fraction(1, 8))`` is rho = 0.125.

    Examples
    --------
    >>> ZCDP(Fraction(1, 2)).noise(Sensitivity.cells(cells=4)).describe()
    {'noise': 'discrete Gaussian', 'sigma2': Fraction(4, 1)}
    >>> PureDP(Fraction(1, 2)).charged_as("zcdp")
    ZCDP(rho=0.125)
    >>> print(ZCDP(Fraction(1, 2)))
    rho=0.5 (zCDP)
    """

    amount: Fraction
    delta: Fraction = Fraction(0)
    measure: ClassVar[str] = "zcdp"
    parameter: ClassVar[str] = "rho"
    minimum: ClassVar[Fraction] = Fraction(1, 2**80)

    variance_exponent: ClassVar[int] = 1

    @property
    def rho(self) -> Fraction:
        """The rho of this loss (exact)."""
        return self.amount

    def for_unit_sensitivity(self, sensitivity: Sensitivity) -> "ZCDP":
        return ZCDP(self.amount / sensitivity.l2_squared)  # group privacy: a delta does not carry over as is

    def epsilon_delta(self, delta: float) -> float:
        """The tight conversion of Canonne, Kamath and Steinke (2020, Corollary 13), rounded up.

        With a delta of its own (delta-approximate rho-zCDP), ``delta`` is the statement's total:
        rho is converted at ``delta - self.delta`` and the two deltas add (Bun and Steinke 2016,
        Section 8: delta'-approximate rho-zCDP gives (epsilon(rho, d), delta' + d)-DP).
        """
        if not self.delta:
            return 0.0 if self.amount == 0 else zcdp_epsilon(self.amount, delta)
        zcdp_epsilon(Fraction(1), delta)  # the same checks of delta
        rest = _rest_of(self, delta)
        return 0.0 if self.amount == 0 else zcdp_epsilon(self.amount, rest)

    def planning_variance(self, share: float = 1.0, sensitivity: Sensitivity = UNIT) -> float:
        """Gaussian variance ``L2**2 / (2 rho share)`` (0 when it underflows)."""
        with np.errstate(over="ignore"):
            return max(float(float(sensitivity.l2_squared) / (2.0 * np.float64(self.amount) * share)),
                       VARIANCE_FLOOR)

    def noise(self, sensitivity: Sensitivity = UNIT, *, what: str = "this release") -> DiscreteGaussian:
        if self.amount <= 0 or sensitivity.l2_squared / (2 * self.amount) > MAX_GAUSSIAN_SIGMA2:
            raise ParameterError(
                f"The 'rho' parameter is too small for {what}: its share {float(self.amount):.3g} needs a "
                f"noise standard deviation above 2**50. Pass a larger rho or change the split.")
        return DiscreteGaussian(sensitivity.l2_squared / (2 * self.amount))


def _rest_of(loss: PrivacyLoss, delta: float) -> float:
    """``delta - loss.delta`` as a float rounded down (a smaller delta gives a larger, safe epsilon)."""
    if not loss.delta:
        return float(delta)
    rest = to_fraction(delta, name="delta") - loss.delta
    if rest < 0 or (rest == 0 and loss.measure == "zcdp" and loss.amount > 0):
        raise ParameterError(
            f"The 'delta' of an (epsilon, delta) statement must be above the delta already spent "
            f"({float(loss.delta)!r}){' (the rho part needs a share of it)' if loss.measure == 'zcdp' else ''}. "
            f"Got {safe_repr(delta)}.")
    value = float(rest)
    return math.nextafter(value, 0.0) if Fraction(value) > rest else value


_MEASURES: dict[str, type[PrivacyLoss]] = {"epsilon": PureDP, "rho": ZCDP}


def loss_from(*, epsilon: Any = None, **others: Any) -> PrivacyLoss:
    """The loss a caller asked for: exactly one of ``epsilon=`` (pure DP) or ``rho=`` (zCDP).

    Raises
    ------
    ParameterError
        When none or several are given, or the value is not a positive finite
        number at least the measure's minimum.
    """
    given = {"epsilon": epsilon, **others}
    unknown = sorted(set(given) - set(_MEASURES))
    if unknown:
        raise ParameterError(f"Unknown privacy parameter(s) {unknown}; pass one of {sorted(_MEASURES)}.")
    chosen = [(k, v) for k, v in given.items() if v is not None]
    if len(chosen) != 1:
        names = " or ".join(f"{k}=" for k in _MEASURES)
        got = ", ".join(f"{k}={safe_repr(v)}" for k, v in chosen) or "none"
        raise ParameterError(f"Pass exactly one privacy parameter ({names}) to every release. Got {got}.")
    key, value = chosen[0]
    cls = _MEASURES[key]
    amount = to_fraction(value, name=key)
    # A float is read through its shortest decimal repr, which may fall a hair below the exact binary
    # value: 2**-40 (the epsilon minimum itself) reads as 9.094947017729282e-13 < 2**-40. Compare as
    # doubles so that a float equal to the minimum is accepted (its noise stays within the sampler's range).
    if amount < cls.minimum and float(amount) < float(cls.minimum):
        raise ParameterError(
            f"The '{key}' parameter is too small: got {safe_repr(value)}, the minimum is {float(cls.minimum):.1e}; "
            f"noise that large would hide every count. Pass a larger {key}.")
    return cls(amount)  # type: ignore[call-arg]


def check_delta(value: Any, *, what: str = "this release") -> Fraction:
    """The ``delta=`` of a release or budget, read exactly: a number strictly between 0 and 1.

    Raises
    ------
    ParameterError
        When ``value`` is not a finite number in ``(0, 1)``.
    """
    try:
        delta = to_fraction(value, name="delta")
    except ParameterError:
        delta = None
    if delta is None or not 0 < delta < 1:
        raise ParameterError(f"The 'delta' parameter of {what} must be a number strictly between 0 and 1 (the "
                             f"probability the pure guarantee may fail; e.g. delta=1e-6, well below 1 / rows). "
                             f"Got {safe_repr(value)}.")
    return delta


def pure(epsilon: Any) -> PureDP:
    """``PureDP`` of an epsilon given as any real number (read exactly, as releases read it)."""
    return loss_from(epsilon=epsilon)  # type: ignore[return-value]


def zcdp(rho: Any) -> ZCDP:
    """``ZCDP`` of a rho given as any real number (read exactly, as releases read it)."""
    return loss_from(rho=rho)  # type: ignore[return-value]
