"""Noisy features of the evidence cases, as ``method="auto"`` measures them (Pythia-style choice).

For every 2-D case of ``benchmarks/auto_evidence.py`` (a shape at a scale, on a domain, at an
epsilon; reproducible from its name, scale and seed) this rebuilds the exact counts, sums them over
the public coarse blocks of ``pandas_dp.releases.methods.auto_rule.coarse_counts`` and draws
:data:`DRAWS` noisy totals and coarse histograms with the library's own noise at the share ``auto``
spends (``AUTO_TOTAL_SHARE`` of epsilon, half each, discrete Laplace, one row in one block). Each
draw gives the features ``auto`` would read (``shape_features``): the noisy total and the top
block's share of it (0 when the top block is below ``top_floor``, a level the noise alone reaches
with probability at most 1/1000). The
fit then sees the noise of the features, not their exact values.

The stored candidate errors were measured at the full epsilon, while a release spends the share on
the features first: every candidate then runs at ``(1 - 1/50) epsilon``, about 1-2% more error for
each of them alike, so the ratios between candidates (what the fit uses) are unchanged to first
order; that share is the same one today's noisy total costs.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd

from benchmarks.auto_evidence import cases, seed_of, EPSILONS, SCALES, SYNTHETIC
from benchmarks import dpbench
from pandas_dp.algorithms.dawa.partition import exact_partition
from pandas_dp.privacy.loss import pure
from pandas_dp.releases.methods.auto_rule import coarse_counts, shape_features, top_floor
from pandas_dp.releases.methods.auto import AUTO_TOTAL_SHARE

__all__ = ["DRAWS", "noisy_features", "exact_features", "exact_candidates", "dawa_compression", "candidate_features",
           "CANDIDATES"]

#: Noisy draws of the features per case.
DRAWS = 20
KEY = ["dataset", "domain", "scale", "epsilon"]


def _datasets_2d() -> tuple[str, ...]:
    return tuple(dpbench.DATASETS_2D) + tuple(s for s in SYNTHETIC if s.startswith("SYN2"))


#: Candidate second features (issue 28 item 1), from the same noisy blocks: the share of blocks whose noisy
#: count is below twice the blocks' noise standard deviation (public), on the blocks (one cell each on the
#: evidence's grids) and on 8 x 8 sums of them (1,024 noisy cells each on 256 x 256: 32 times the deviation),
#: and the noisy L1 distance to uniform of the clipped shares, on both levels.
CANDIDATES = ("sparse_share", "sparse_share8", "l1_uniform", "l1_uniform8")


def candidate_features(noisy_blocks: np.ndarray, total: float, noise_std: float) -> dict[str, float]:
    """The :data:`CANDIDATES` of one noisy coarse histogram (post-processing of the noisy counts only).

    The threshold ``2 * noise_std`` is calibrated to the noise of the release (public), so a block
    counts as sparse when the noise cannot tell its count from 0, at every epsilon.
    """
    v = np.asarray(noisy_blocks, dtype=np.float64)
    out = {}
    for suffix, level in (("", v), ("8", coarse_counts(v, v.shape, 8))):     # 8 near-equal public groups per axis
        std = noise_std * np.sqrt(v.size / level.size)                       # a sum of v.size / level.size blocks
        share = np.maximum(level.ravel(), 0.0) / max(total, 1.0)
        out[f"sparse_share{suffix}"] = float(np.mean(level.ravel() < 2.0 * std))
        out[f"l1_uniform{suffix}"] = float(0.5 * np.abs(share - 1.0 / level.size).sum())
    return out


def noisy_features(draws: int = DRAWS, datasets: tuple[str, ...] | None = None,
                   domains: tuple[str, ...] = ("fine", "coarse")) -> pd.DataFrame:
    """One row per (case, draw): ``dataset, domain, scale, epsilon, draw, total, top_share``, the
    :data:`CANDIDATES` and ``lscale``."""
    rows = []
    for case in cases(datasets or _datasets_2d(), SCALES, domains):
        x = case["x"]
        blocks = coarse_counts(x, x.shape)
        for eps in EPSILONS:
            loss, _ = pure(eps).split([AUTO_TOTAL_SHARE, 1 - AUTO_TOTAL_SHARE])
            half_total, half_blocks = loss.split([Fraction(1, 2), Fraction(1, 2)])     # as the release splits it
            total_noise, block_noise = half_total.noise(what="total"), half_blocks.noise(what="features")
            std = float(np.sqrt(block_noise.variance()))
            floor = top_floor(block_noise, blocks.size)
            rng = np.random.default_rng(seed_of("features", case["dataset"], case["domain"], case["scale"], eps))
            for d in range(draws):
                total = float(total_noise.add(np.array([int(x.sum())]), rng)[0])
                noisy = block_noise.add(blocks, rng)
                f = shape_features(noisy, total, floor=floor)
                rows.append({"dataset": case["dataset"], "domain": case["domain"], "scale": case["scale"],
                             "epsilon": eps, "draw": d, **f, **candidate_features(noisy, total, std),
                             "lscale": float(np.log10(max(f["total"], 1.0) * eps))})
    return pd.DataFrame(rows)


def exact_features(datasets: tuple[str, ...] | None = None) -> pd.DataFrame:
    """The exact features of every 2-D case (no noise), for the report."""
    rows = []
    for case in cases(datasets or _datasets_2d(), SCALES):
        x = case["x"]
        rows.append({"dataset": case["dataset"], "domain": case["domain"], "scale": case["scale"],
                     **shape_features(coarse_counts(x, x.shape))})
    return pd.DataFrame(rows)


def exact_candidates(shapes: list[dict], epsilons: tuple[float, ...] = EPSILONS) -> pd.DataFrame:
    """Exact features of every case of ``shapes`` (``auto_evidence.cases``) at every epsilon, without noise and
    without cost: ``top_share``, the :data:`CANDIDATES` and, in 1-D, :func:`dawa_compression`.

    No release can read these: they bound what any noisy feature could tell ``auto`` (a noisy
    feature is worse, and costs a share of the budget). A block counts as sparse when it is empty
    (the threshold of :func:`candidate_features` at a noise deviation of 1/2).
    """
    rows = []
    for case in shapes:
        x = case["x"]
        blocks = coarse_counts(x, x.shape).astype(np.float64)
        total = float(blocks.sum())
        shared = {"dataset": case["dataset"], "domain": case["domain"], "scale": case["scale"],
                  "top_share": shape_features(blocks, total)["top_share"], **candidate_features(blocks, total, 0.5)}
        for eps in epsilons:
            rows.append({**shared, "epsilon": eps, **({"dawa_compression": dawa_compression(x, eps)}
                                                       if x.ndim == 1 else {})})
    return pd.DataFrame(rows)


def dawa_compression(x: np.ndarray, epsilon: float) -> float:
    """``1 - log(B) / log(n)`` for the ``B`` buckets of DAWA's partition of the *exact* 1-D counts ``x`` (``n``
    bins): 1 for one bucket, 0 for one bucket per bin.

    The partition DAWA's first stage would find without its noise
    (:func:`~pandas_dp.algorithms.dawa.partition.exact_partition`) at the bucket cost of its second stage at
    the default ratio (``1 / epsilon_2``, ``epsilon_2 = 3/4 epsilon``). No release can read it: the most
    DAWA-specific feature of a shape, for the bound of ``bench_auto --bound``.
    """
    n = np.asarray(x).size
    if n <= 1:
        return 1.0
    edges = exact_partition(x, 1.0 / (0.75 * float(epsilon)))
    return float(1.0 - np.log(edges.size - 1) / np.log(n))


FEATURES = "benchmarks/results/auto_features.csv.gz"


def main() -> None:
    """Write the noisy features of every 2-D evidence case (``python -m benchmarks.auto_features``; ~10 s)."""
    frame = noisy_features()
    frame.to_csv(FEATURES, index=False, float_format="%.6g")
    print(f"wrote {len(frame)} rows to {FEATURES}")


if __name__ == "__main__":
    main()
