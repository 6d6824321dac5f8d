"""Noise added in place: the same exact draws as sampling, consumed from the same words.

``add_discrete_laplace`` / ``add_discrete_gaussian`` (and ``Noise.add_in_place``, ``Noise.add``) add
the draws chunk by chunk instead of materialising a noise array. They must leave the bit stream
unchanged: for a seeded Generator, ``values + sample(shape)`` and the in-place result are equal
element for element, at sizes around the chunk boundary (2**16) and on the rare paths (tails, the
``L = 0`` table of large scales) that draw extra words in the middle of a chunk.
"""

from __future__ import annotations

import tracemalloc
from fractions import Fraction

import numpy as np
import pytest

import pandas_dp.noise.laplace as noise_module
from pandas_dp.noise.discrete_gaussian import add_discrete_gaussian, discrete_gaussian
from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import DiscreteGaussian, DiscreteLaplace
from pandas_dp.noise.laplace import _LaplaceSampler, add_discrete_laplace, discrete_laplace

SIZES = [0, 1, 5, 65_535, 65_536, 65_537, 140_000]


def _base(size: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed + 1000).integers(-50, 50, size)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("scale", [Fraction(1), Fraction(7, 3), Fraction(300), Fraction(10**6)])
def test_add_discrete_laplace_is_values_plus_the_same_draws(size, scale):
    # scale 300 and 10**6 use the L = 0 table: every sample draws geometric words after its chunk's words.
    values = _base(size, 1)
    expected = values + discrete_laplace(scale, size, rng=np.random.default_rng(7))
    out = add_discrete_laplace(scale, values, rng=np.random.default_rng(7))
    assert out is values
    np.testing.assert_array_equal(values, expected)


def test_tails_drawn_mid_chunk_keep_the_stream(monkeypatch):
    # A table of half-width 2 at scale 5 sends ~50% of the samples to the tail path (extra words).
    sampler = _LaplaceSampler(Fraction(5), half_width=2)
    monkeypatch.setattr(noise_module, "laplace_sampler", lambda t: sampler)
    values = _base(150_000, 2)
    expected = values + discrete_laplace(5, values.size, rng=np.random.default_rng(3))
    add_discrete_laplace(5, values, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(values, expected)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("sigma2", [Fraction(1, 3), Fraction(4), Fraction(10**7)])
def test_add_discrete_gaussian_is_values_plus_the_same_draws(size, sigma2):
    values = _base(size, 4)
    expected = values + discrete_gaussian(sigma2, size, rng=np.random.default_rng(11))
    out = add_discrete_gaussian(sigma2, values, rng=np.random.default_rng(11))
    assert out is values
    np.testing.assert_array_equal(values, expected)


def test_in_place_on_a_grid_follows_c_order():
    values = _base(12, 5).reshape(3, 4)
    expected = values + discrete_laplace(2, (3, 4), rng=np.random.default_rng(0))
    add_discrete_laplace(2, values, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(values, expected)


@pytest.mark.parametrize("bad", [np.zeros(3, dtype=np.int32), np.zeros(3), [1, 2, 3],
                                 np.zeros((4, 4), dtype=np.int64)[:, ::2].T, np.zeros(3, dtype=np.int64)[::-1].copy()])
def test_refuses_what_it_cannot_write_in_place(bad):
    if isinstance(bad, np.ndarray) and bad.dtype == np.int64 and bad.flags.c_contiguous:
        bad.flags.writeable = False
    with pytest.raises(ParameterError):
        add_discrete_laplace(1, bad, rng=np.random.default_rng(0))
    with pytest.raises(ParameterError):
        add_discrete_gaussian(1, bad, rng=np.random.default_rng(0))


@pytest.mark.parametrize("noise", [DiscreteLaplace(Fraction(3)), DiscreteGaussian(Fraction(5, 2))])
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_, np.float64, np.uint64])
def test_noise_add_is_a_new_array_equal_to_counts_plus_sample(noise, dtype):
    counts = (np.arange(70_000) % 3).astype(dtype)
    before = counts.copy()
    expected = counts + noise.sample(counts.shape, np.random.default_rng(9))
    out = noise.add(counts, np.random.default_rng(9))
    assert out.dtype == expected.dtype and not np.shares_memory(out, counts)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(counts, before)


@pytest.mark.parametrize("noise", [DiscreteLaplace(Fraction(3)), DiscreteGaussian(Fraction(5, 2))])
def test_noise_add_on_a_scalar_keeps_its_type(noise):
    expected = np.asarray(4) + noise.sample((), np.random.default_rng(1))
    out = noise.add(np.asarray(4), np.random.default_rng(1))
    assert type(out) is type(expected) and out == expected


@pytest.mark.parametrize("add, bound", [
    (lambda v: add_discrete_laplace(Fraction(1), v, rng=np.random.default_rng(0)), 2.0),
    (lambda v: add_discrete_gaussian(Fraction(4), v, rng=np.random.default_rng(0)), 2.75)])
def test_adding_in_place_holds_one_chunk_at_a_time(add, bound):
    # A chunk is 2**16 samples: its words and its samples are 0.5 MiB each (a seeded Generator returns a
    # fresh array of words per draw; a Gaussian round draws two: proposals and acceptance words); the
    # table lookups and the acceptance test work in blocks of 2**14 (a few 128 KiB temporaries). The
    # peak beyond ``values`` (2**20 of them) stays under ``bound`` MiB whatever their size: the noise
    # array alone would be 8 MiB, and chunk-sized lookup temporaries took 2.6 (Laplace) and 3.8 MiB.
    values = np.zeros(2**20, dtype=np.int64)
    add(values[:1000].copy())   # build the cached tables outside the measure
    tracemalloc.start()
    try:
        add(values)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < bound * 2**20
