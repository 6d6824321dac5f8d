"""DPBench datasets and workloads shared by the accuracy benchmarks.

The data live outside the project: ``$PANDAS_DP_DPBENCH`` when set, otherwise the
first ``shared/data/dpbench`` found next to the checkout or one of its parent
folders (``../shared/data/dpbench`` from the main checkout, found from a worktree
nested deeper too); every benchmark that uses them skips a dataset that is absent.  The metric is
DPBench's scaled L2 error (Hay et al., SIGMOD 2016):
``||W x - W x_hat||_2 / |W| / total``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np

def _data_dir() -> Path:
    """``$PANDAS_DP_DPBENCH``, else the nearest ``shared/data/dpbench`` beside the checkout or above it."""
    env = os.environ.get("PANDAS_DP_DPBENCH")
    if env:
        return Path(env)
    root = Path(__file__).resolve().parents[1]
    for folder in root.parents:
        candidate = folder / "shared" / "data" / "dpbench"
        if candidate.is_dir():
            return candidate
    return root.parent / "shared" / "data" / "dpbench"     # absent: every dataset is skipped


DATA_DIR = _data_dir()

DATASETS_1D = ("HEPTH", "ADULT", "INCOME", "MEDCOST", "PATENT", "SEARCHLOGS",
               "BIDS-ALL", "MDSALARY", "LC-REQ-ALL", "LC-DTIR-ALL")
DATASETS_2D = ("SF-CABS-E", "GOWALLA", "ADULT-2D", "STROKE", "TWITTER")


def load(name: str) -> np.ndarray | None:
    """Return the int64 count vector/grid of a DPBench dataset, or None when absent."""
    path = DATA_DIR / f"{name}.npy"
    if not path.exists():
        return None
    return np.load(path).astype(np.int64)


def available(names: Iterable[str]) -> Iterator[tuple[str, np.ndarray]]:
    """``(name, counts)`` for every dataset of ``names`` found in :data:`DATA_DIR` (says which are skipped)."""
    for name in names:
        x = load(name)
        if x is None:
            print(f"skip {name}: not in {DATA_DIR}")
            continue
        yield name, x


def prefix_ranges(n: int) -> np.ndarray:
    """The Prefix1D workload: all n ranges [0, j), as an (n, 2) array of half-open bin ranges."""
    return np.column_stack([np.zeros(n, dtype=np.int64), np.arange(1, n + 1, dtype=np.int64)])


def random_ranges(n: int, k: int = 2000, *, seed: int = 0) -> np.ndarray:
    """k random half-open bin ranges [lo, hi) over n bins (uniform endpoints, fixed seed)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, size=k)
    b = rng.integers(0, n, size=k)
    lo, hi = np.minimum(a, b), np.maximum(a, b) + 1
    return np.column_stack([lo, hi])


def random_rectangles(shape: tuple[int, int], k: int = 2000, *, seed: int = 0) -> np.ndarray:
    """k random half-open rectangles as an (k, 4) array (r0, r1, c0, c1) over a 2-D grid."""
    rng = np.random.default_rng(seed)
    out = []
    for size in shape:
        a = rng.integers(0, size, size=k)
        b = rng.integers(0, size, size=k)
        out += [np.minimum(a, b), np.maximum(a, b) + 1]
    return np.column_stack(out)


def range_answers(x: np.ndarray, ranges: np.ndarray) -> np.ndarray:
    """Answers of 1-D half-open ranges on a count vector via prefix sums."""
    c = np.concatenate([[0.0], np.cumsum(x, dtype=np.float64)])
    return c[ranges[:, 1]] - c[ranges[:, 0]]


def rectangle_answers(x: np.ndarray, rects: np.ndarray) -> np.ndarray:
    """Answers of 2-D half-open rectangles on a grid via a summed-area table."""
    s = np.zeros((x.shape[0] + 1, x.shape[1] + 1))
    s[1:, 1:] = np.cumsum(np.cumsum(x, axis=0, dtype=np.float64), axis=1)
    r0, r1, c0, c1 = rects.T
    return s[r1, c1] - s[r0, c1] - s[r1, c0] + s[r0, c0]


def scaled_l2_error(true_answers: np.ndarray, estimated: np.ndarray, total: float) -> float:
    """DPBench's scaled L2 error ||W x - W x_hat||_2 / |W| / total."""
    diff = np.asarray(true_answers, dtype=np.float64) - np.asarray(estimated, dtype=np.float64)
    return float(np.linalg.norm(diff) / diff.size / total)
