"""Speed of the exact discrete Laplace and discrete Gaussian samplers.

Targets: discrete Laplace >= 5e7 samples/s for t <= 10; discrete Gaussian
>= 2e7 samples/s for sigma <= 100 (secure source).

Run: ``python -m benchmarks.bench_noise [--n 10000000] [--repeat 3] [--peer-n 200000]``.

For each scale t the table is built first (cached; its build time is printed
separately), then ``discrete_laplace(t, n)`` is timed with the secure default
source (AES-256-CTR) and with a seeded ``numpy.random.Generator``; the best of
``--repeat`` runs is reported. ``numpy.random.default_rng().laplace`` (inexact,
floating point, predictable PCG64) is timed in the same run as a yardstick, and
the ratio column is exact-secure rate / numpy Laplace rate.

The discrete Gaussian rows (``sigma`` in 1, 10, 100, 10**4) time
``discrete_gaussian(sigma**2, n)`` the same way. If ``opendp`` is installed,
OpenDP's discrete Gaussian (``make_gaussian`` on a vector of integers,
``--peer-n`` samples per call, Python list in and out as its users call it)
is timed in the same run as the peer figure.
"""

from __future__ import annotations

import argparse
import time
from fractions import Fraction

import numpy as np

import pandas_dp.noise.discrete_gaussian as _discrete_gaussian

import pandas_dp.noise.laplace as noise
from pandas_dp.noise.discrete_gaussian import discrete_gaussian
from pandas_dp.noise.laplace import discrete_laplace

SCALES = (0.5, 1, 10, 100, 1e4, 1e6)
SIGMAS = (1, 10, 100, 10_000)


def opendp_sampler(sigma: float, n: int):
    """OpenDP's discrete Gaussian on ``n`` integers, or ``None`` when opendp is not installed."""
    try:
        import opendp.prelude as dp
    except ImportError:
        return None
    dp.enable_features("contrib")
    meas = dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T=int), size=n), dp.l2_distance(T=int),
                              scale=float(sigma))
    zeros = [0] * n
    return lambda: meas(zeros)


def best_rate(fn, n: int, repeat: int) -> float:
    """Samples per second of ``fn()`` (best of ``repeat`` runs)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return n / best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000_000, help="samples per timed run")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (best kept)")
    parser.add_argument("--peer-n", type=int, default=200_000, help="samples per OpenDP call")
    args = parser.parse_args(argv)
    n, repeat = args.n, args.repeat

    print(f"exact discrete Laplace, n = {n:,} samples per run, best of {repeat}")
    header = (f"{'t':>8} {'table ms':>9} {'secure /s':>12} {'Generator /s':>13} "
              f"{'numpy laplace /s':>17} {'secure/numpy':>13}")
    print(header)
    print("-" * len(header))
    for t in SCALES:
        scale = noise.noise_scale(t, 1)
        start = time.perf_counter()
        noise.laplace_sampler(scale)
        build_ms = 1e3 * (time.perf_counter() - start)
        discrete_laplace(scale, 1000)  # warm the secure source
        secure = best_rate(lambda: discrete_laplace(scale, n), n, repeat)
        seeded = best_rate(lambda: discrete_laplace(scale, n, rng=np.random.default_rng(0)), n, repeat)
        gen = np.random.default_rng(0)
        numpy_rate = best_rate(lambda: gen.laplace(0.0, float(scale), n), n, repeat)
        print(f"{t:>8g} {build_ms:>9.1f} {secure:>12.3e} {seeded:>13.3e} {numpy_rate:>17.3e} "
              f"{secure / numpy_rate:>13.2f}")

    print()
    print(f"exact discrete Gaussian, n = {n:,} samples per run, best of {repeat}; "
          f"OpenDP {args.peer_n:,} per call")
    header = (f"{'sigma':>8} {'table ms':>9} {'secure /s':>12} {'Generator /s':>13} "
              f"{'OpenDP /s':>12} {'secure/OpenDP':>14}")
    print(header)
    print("-" * len(header))
    for sigma in SIGMAS:
        sigma2 = Fraction(sigma) ** 2
        start = time.perf_counter()
        _discrete_gaussian._sampler(sigma2)
        build_ms = 1e3 * (time.perf_counter() - start)
        discrete_gaussian(sigma2, 1000)  # warm the secure source
        secure = best_rate(lambda: discrete_gaussian(sigma2, n), n, repeat)
        seeded = best_rate(lambda: discrete_gaussian(sigma2, n, rng=np.random.default_rng(0)), n, repeat)
        peer = opendp_sampler(sigma, args.peer_n)
        if peer is None:
            peer_text, ratio_text = f"{'n/a':>12}", f"{'n/a':>14}"
        else:
            peer_rate = best_rate(peer, args.peer_n, repeat)
            peer_text, ratio_text = f"{peer_rate:>12.3e}", f"{secure / peer_rate:>14.0f}"
        print(f"{sigma:>8g} {build_ms:>9.1f} {secure:>12.3e} {seeded:>13.3e} {peer_text} {ratio_text}")


if __name__ == "__main__":
    main()
