"""Exact discrete Laplace noise truncated to ``[-bound, bound]``, by rejection.

``P(z) = p**|z| / N`` for ``|z| <= bound`` (0 outside), ``p = exp(-1/t)``,
``N = (1 + p - 2 p**(bound + 1)) / (1 - p)``: the discrete Laplace of
:func:`~pandas_dp.noise.laplace.discrete_laplace` conditioned on ``|Z| <= bound``.
Rejection sampling is exact: every accepted draw is an exact discrete Laplace draw,
and accepting it when ``|Z| <= bound`` gives the conditional law exactly. The
rejected positions are drawn again (in order, from the same source) until none is
left; the chance of a rejection, ``2 p**(bound + 1) / (1 + p)``, is the tiny
``delta``-sized tail in the key discovery that uses it, so almost every call draws
once. A seeded generator gives the same draws on every machine.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from pandas_dp.errors import ParameterError
from pandas_dp.noise.laplace import discrete_laplace, discrete_laplace_variance

__all__ = ["truncated_discrete_laplace", "truncated_discrete_laplace_variance"]

_EXACT_SUM_LIMIT = 1 << 21


def truncated_discrete_laplace(scale: Fraction, bound: int, size: int, *, rng: Any = None) -> np.ndarray:
    """``size`` exact draws of the discrete Laplace of scale ``t`` conditioned on ``|Z| <= bound``.

    Parameters
    ----------
    scale : Fraction
        ``t > 0`` (as for :func:`~pandas_dp.noise.laplace.discrete_laplace`).
    bound : int
        The truncation ``k >= 0``.
    size : int
        How many draws.
    rng : None, SecureRandom or numpy.random.Generator, optional
        As for :func:`~pandas_dp.noise.laplace.discrete_laplace` (``None``: the secure source).

    Examples
    --------
    >>> z = truncated_discrete_laplace(Fraction(5), 2, 1000, rng=np.random.default_rng(0))
    >>> int(z.min()), int(z.max())
    (-2, 2)
    """
    k = int(bound)
    if k < 0:
        raise ParameterError(f"bound must be a non-negative integer; got {bound!r}.")
    out = discrete_laplace(scale, int(size), rng=rng)
    bad = np.flatnonzero(np.abs(out) > k)
    while bad.size:  # exact rejection: redraw the rejected positions, in order, from the same source
        out[bad] = discrete_laplace(scale, int(bad.size), rng=rng)
        bad = bad[np.abs(out[bad]) > k]
    return out


def truncated_discrete_laplace_variance(scale: Fraction, bound: int) -> float:
    """``E[Z**2] = 2 sum_{z=1..k} z**2 p**z / N`` of the truncated law (at most the untruncated ``2p/(1-p)**2``).

    Past ``2**21`` (scales of hundreds of thousands) the untruncated variance is returned: an upper bound.

    Examples
    --------
    >>> round(truncated_discrete_laplace_variance(Fraction(1), 1), 6)  # 2p / (1 + 2p), p = e**-1
    0.423883
    """
    k = int(bound)
    if k > _EXACT_SUM_LIMIT:  # the sum would need a very long array: the untruncated variance bounds it
        return discrete_laplace_variance(scale)
    logp = -1.0 / float(scale)
    z = np.arange(1, k + 1, dtype=np.float64)
    w = np.exp(logp * z)
    return float(2.0 * (z * z * w).sum() / (1.0 + 2.0 * w.sum()))
