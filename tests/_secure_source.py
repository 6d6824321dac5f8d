"""Helpers shared by the tests of the secure noise samplers (test_noise.py, test_discrete_gaussian.py)."""

from __future__ import annotations

import os
from typing import Any, Callable, Iterable

import numpy as np

M64 = (1 << 64) - 1


def gen_draw(seed: int) -> Callable[..., np.ndarray]:
    """Word source backed by a seeded Generator (same words for the same seed)."""
    rng = np.random.default_rng(seed)

    def draw(n: int, out: np.ndarray | None = None) -> np.ndarray:
        return rng.integers(0, 1 << 64, size=n, dtype=np.uint64)

    return draw


def scripted_draw(words: Iterable[int]) -> Callable[..., np.ndarray]:
    """Word source returning the given words in order (fails when they run out)."""
    it = iter(int(w) for w in words)

    def draw(n: int, out: np.ndarray | None = None) -> np.ndarray:
        return np.array([next(it) for _ in range(n)], dtype=np.uint64)

    return draw


def forked_child_draws(draw: Callable[[], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``draw()`` in a forked child and then in this process: ``(child's draws, parent's draws)``.

    The child sends its int64 draws through a pipe and leaves with ``os._exit``
    (no pytest teardown in the child). POSIX only: callers skip without ``os.fork``.
    """
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: send its draws and leave without running pytest's teardown
        try:
            os.write(w, draw().tobytes())
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 4096):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return np.frombuffer(data, dtype=np.int64), draw()


class NumpyWithoutRandom:
    """Stands for the numpy module inside pandas_dp, failing on any use of numpy.random."""

    def __init__(self, module: Any) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        if name == "random":
            raise AssertionError("numpy.random used on the secure path")
        return getattr(self._module, name)
