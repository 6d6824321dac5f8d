"""The word source every sampler draws from, and the buffers the words fill.

A sampler turns uniform 64-bit words into exact samples (see :mod:`pandas_dp.noise.laplace`).
:func:`word_source` is the one place that decides where the words come from:

* ``rng=None``: the process's secure source (:func:`pandas_dp.noise.csprng.default_source`,
  AES-CTR seeded from the OS), the production default;
* a :class:`~pandas_dp.noise.csprng.SecureRandom`: its own secure stream;
* a seeded ``numpy.random.Generator``: ``rng.integers(0, 2**64)``, reproducible, for tests and
  examples only (a seed gives the same release on every machine).

The Laplace and Gaussian samplers and the engines' row keys (:func:`release_key`) all
draw through it, so a seed means the same thing everywhere.
"""

from __future__ import annotations

import operator
from typing import Union

import numpy as np

from pandas_dp.errors import ParameterError
from pandas_dp.noise.csprng import SecureRandom, default_source

__all__ = ["RngLike", "BLOCK", "word_source", "release_key", "as_shape", "writeable_int64"]

#: What ``rng=`` accepts: ``None`` (secure default), a :class:`SecureRandom`,
#: or a seeded ``numpy.random.Generator`` (reproducible, not for production).
RngLike = Union[np.random.Generator, SecureRandom, None]

BLOCK = 1 << 14  # words per block of a table's fast path (its temporaries: 3 x 128 KiB)


def word_source(rng: object):
    """``draw(n, out=None) -> uint64 words`` for ``rng``."""
    if rng is None:
        return default_source().words
    if isinstance(rng, SecureRandom):
        return rng.words
    if isinstance(rng, np.random.Generator):

        def draw(n: int, out: np.ndarray | None = None) -> np.ndarray:
            return rng.integers(0, 1 << 64, size=n, dtype=np.uint64)

        return draw
    raise ParameterError(
        f"rng must be None (secure default), a pandas_dp.noise.laplace.SecureRandom, or a seeded "
        f"numpy.random.Generator (reproducible, not for production); got {type(rng).__name__}."
    )


def release_key(rng: object) -> bytes:
    """32 random bytes for the row keys, from the release's randomness (secure source by default)."""
    return np.asarray(word_source(rng)(4), dtype=np.uint64).tobytes()


def as_shape(size: object) -> tuple[int, ...]:
    """``size`` (an int or a tuple of ints, none negative) as a shape tuple."""
    try:
        if isinstance(size, (tuple, list)):
            shape = tuple(operator.index(s) for s in size)
        else:
            shape = (operator.index(size),)  # type: ignore[arg-type]
    except TypeError as err:
        raise ParameterError(f"size must be an int or a tuple of ints; got {size!r}.") from err
    if any(s < 0 for s in shape):
        raise ParameterError(f"size must not be negative; got {size!r}.")
    return shape


def writeable_int64(values: object) -> np.ndarray:
    """The flat C-order view of a writeable int64 array that noise is added to in place."""
    if not (isinstance(values, np.ndarray) and values.dtype == np.int64 and values.flags.writeable):
        kind = values.dtype if isinstance(values, np.ndarray) else type(values).__name__
        raise ParameterError(f"values must be a writeable int64 numpy array to add noise in place; got {kind}. "
                             "Use np.array(values, dtype=np.int64) first.")
    flat = values.reshape(-1)
    if values.size and not np.may_share_memory(flat, values):  # reshaping a non-contiguous array copies
        raise ParameterError("values must be contiguous to add noise in place; use np.ascontiguousarray first.")
    return flat
