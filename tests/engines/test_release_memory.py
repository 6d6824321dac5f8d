"""What a release holds after the count: its own arrays, shared and locked, and no copies.

The noisy counts are the engine's count array (noise added in place), a constant variance is one
float broadcast to the cells, the tree's arrays are shared by the result's Series, and the index
of the cells is built when the result is first read. The bounds below are per cell of the domain:
the numeric domain holds its edges (8 bytes per cell), an identity release its int64 counts (8),
a tree also its float leaf estimates (8) and its upper levels (about 1/(b-1) of that per array);
everything else is chunk-sized (at most a few MiB whatever the domain). Before this layout an
identity release of 2**18 bins peaked at 80 bytes per cell, a tree at over 100.
"""

from __future__ import annotations

import pickle
import tracemalloc

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.domain.grid import make_grid

CELLS = 2**18
CHUNKS = 4 * 2**20   # counting and noise work in chunks of 2**16 values: a few MiB at most


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return pd.DataFrame({"x": np.random.default_rng(0).integers(0, CELLS, 200_000)})


def _peak(fn):
    fn()   # warm caches (samplers, memoised plans) outside the measure
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("spec", [dict(bins=CELLS, range=(0, CELLS)), dict(bins=np.arange(CELLS + 1))])
def test_identity_holds_its_counts_and_the_domain_only(frame, spec):
    def release():
        with pdp.budget(epsilon=1.0):
            return frame.dp.histogram("x", epsilon=1.0, rng=np.random.default_rng(0), **spec)
    h, peak = _peak(release)
    assert peak <= 16 * CELLS + CHUNKS          # edges + noisy counts
    assert h.variance.to_numpy().strides == (0,)
    np.testing.assert_array_equal(h.variance.to_numpy(), np.full(CELLS, h.variance.iloc[0]))


def test_identity_on_categories_holds_its_counts_only():
    labels = pd.Index([f"c{i:06d}" for i in range(CELLS)])
    codes = np.random.default_rng(0).integers(0, CELLS, 200_000)
    frame = pd.DataFrame({"x": pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(labels))})

    def release():
        with pdp.budget(epsilon=1.0):
            return frame.dp.histogram("x", categories=labels, epsilon=1.0, rng=np.random.default_rng(0))
    _, peak = _peak(release)
    # Checking the public labels (the domain, built before the count and freed before it) may take more
    # than the count itself: what the release adds after the domain is its int64 counts and chunks.
    _, domain_peak = _peak(lambda: make_grid(frame, ["x"], categories=labels))
    assert peak <= max(domain_peak + 2**20, 8 * CELLS + CHUNKS)


def test_tree_holds_its_noisy_leaves_estimates_and_small_upper_levels(frame):
    def release():
        with pdp.budget(epsilon=1.0):
            return frame.dp.hierarchical_histogram("x", bins=CELLS, range=(0, CELLS), branching=16, epsilon=1.0,
                                                   rng=np.random.default_rng(0))
    h, peak = _peak(release)
    # edges, noisy int64 leaves, float64 estimates; upper levels (N/15 nodes): noisy counts, estimates and
    # at most two more arrays of 8 bytes per node at a time; then block-sized temporaries (the count's
    # and the noise's chunks are freed before the inference allocates the estimates).
    assert peak <= (24 + 4 * 8 / 15) * CELLS + 2 * 2**20
    d = h.detail
    assert np.shares_memory(h.counts.to_numpy(), d.estimates[0])
    assert h.variance.to_numpy().strides == (0,)   # a complete tree: one leaf variance
    # ... and one variance per large level of the structure (4096 nodes or more): all its nodes share it.
    levels = (*d.variances, *d.structure.vdown, *d.structure.child_var[1:])
    assert all(v.size < 4096 or not any(v.strides) for v in levels)
    assert sum(v.size >= 4096 for v in levels) == 5         # the leaves (twice) and 16384 parents (three times)
    assert not d.noisy[0].flags.writeable and not d.estimates[0].flags.writeable


def test_index_is_built_when_first_read_and_results_stay_equal_through_pickle(frame):
    with pdp.budget(epsilon=1.0):
        h = frame.dp.histogram("x", bins=64, range=(0, CELLS), epsilon=1.0, rng=np.random.default_rng(0))
    assert "index" not in h.domain.__dict__                # not built by the release
    before = pickle.loads(pickle.dumps(h))
    assert before == h
    counts = h.counts
    assert isinstance(counts.index, pd.IntervalIndex) and counts.index.name == "x" and counts.name == "estimate"
    assert "index" in h.domain.__dict__
    counts.index.name = "renamed"
    assert h.counts.index.name == "x"                       # the shared index is handed out as a view
    after = pickle.loads(pickle.dumps(h))
    assert after == h and before == after
    pd.testing.assert_series_equal(after.counts, h.counts)
    pd.testing.assert_series_equal(after.variance, h.variance)


def test_counts_handed_out_are_copy_on_write_over_read_only_data(frame):
    with pdp.budget(epsilon=1.0):
        h = frame.dp.histogram("x", bins=64, range=(0, CELLS), epsilon=1.0, rng=np.random.default_rng(0))
    first = h.counts.copy()
    mine = h.counts
    assert not mine.to_numpy().flags.writeable
    mine.iloc[0] = -5                                       # the caller's copy changes ...
    assert mine.iloc[0] == -5
    pd.testing.assert_series_equal(h.counts, first)         # ... the release does not
