"""Noise: exact samplers from a cryptographically secure source, and their calibration.

* :mod:`~pandas_dp.noise.csprng`: the secure word source (AES-CTR seeded from the OS);
* :mod:`~pandas_dp.noise.words`: :func:`~pandas_dp.noise.words.word_source`, the one place that
  turns ``rng=`` (secure default, a ``SecureRandom`` or a seeded Generator) into words, used by
  every sampler and by the engines' row keys;
* :mod:`~pandas_dp.noise.laplace`: the discrete Laplace sampler, its variance and quantiles
  (the import path ``pandas_dp.noise`` re-exports them);
* :mod:`~pandas_dp.noise.discrete_gaussian`, :mod:`~pandas_dp.noise.gaussian_tail`,
  :mod:`~pandas_dp.noise.exact_cdf`: the exact discrete Gaussian and its certified tails;
* :mod:`~pandas_dp.noise.exponential`: the exponential mechanism's exact draw of an index with
  probability proportional to ``exp(-gamma d_j)`` (certified fixed-point weights, refined on ties).

The calibrated noise objects a release asks for (``loss.noise(sensitivity)``) live in
:mod:`pandas_dp.privacy.loss`.
"""

from __future__ import annotations

from pandas_dp.noise.laplace import (
    SecureRandom,
    add_discrete_laplace,
    discrete_laplace,
    discrete_laplace_quantile,
    discrete_laplace_variance,
    noise_scale,
)
from pandas_dp.noise.words import RngLike

__all__ = [
    "noise_scale",
    "discrete_laplace",
    "add_discrete_laplace",
    "discrete_laplace_variance",
    "discrete_laplace_quantile",
    "SecureRandom",
    "RngLike",
]
