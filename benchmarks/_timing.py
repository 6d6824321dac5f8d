"""Timing and memory helpers shared by the speed benchmarks."""

from __future__ import annotations

import time
import tracemalloc
from typing import Any, Callable

__all__ = ["best_of", "traced_peak"]


def best_of(fn: Callable[[], Any], repeat: int) -> float:
    """The fastest of ``repeat`` wall-clock runs of ``fn``, in seconds (least disturbed by other load)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def traced_peak(fn: Callable[[], Any]) -> float:
    """Peak bytes allocated (tracemalloc, numpy included) in this process while ``fn`` runs, in MiB."""
    tracemalloc.start()
    try:
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 2**20
