"""Golden releases: a fixed set of seeded releases of every kind gives byte-identical outputs.

The outputs were recorded (``tests/golden/releases.npz``) before the release layer was rebuilt as one
pipeline, so refactors of the layers beneath the accessor are checked against them: same seed, same
estimates, same variances, same index. Regenerate only for an intended change of outputs, with
``python tests/test_golden.py --regenerate``, and say why in the commit.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.data import STATES, load_households, load_persons

GOLDEN = Path(__file__).with_name("golden") / "releases.npz"


def _rng() -> np.random.Generator:
    return np.random.default_rng(20261122)


def _cases() -> dict[str, Callable[[pd.DataFrame, pd.DataFrame], Any]]:
    ages = dict(bins=range(0, 101, 5))
    two_d = dict(bins={"age": 16}, range={"age": (0, 96)}, categories={"state": STATES})
    return {
        "identity": lambda p, h: p.dp.histogram("age", **ages, epsilon=0.5, rng=_rng()),
        "identity_nonnegative": lambda p, h: p.dp.histogram("age", **ages, epsilon=0.5, rng=_rng(),
                                                            nonnegative=True),
        "identity_categories": lambda p, h: p.dp.histogram("state", categories=STATES, epsilon=0.25, rng=_rng()),
        "identity_2d": lambda p, h: p.dp.histogram(["age", "state"], **two_d, epsilon=0.5, rng=_rng()),
        "hierarchical_auto": lambda p, h: p.dp.hierarchical_histogram("income", bins=256, range=(0, 512_000),
                                                                      epsilon=0.3, rng=_rng()),
        "hierarchical_b4_optimal_root": lambda p, h: p.dp.hierarchical_histogram(
            "age", bins=100, range=(0, 100), branching=4, budget_split="optimal", include_root=True,
            epsilon=0.5, rng=_rng()),
        "hierarchical_geometric_raw": lambda p, h: p.dp.hierarchical_histogram(
            "age", bins=100, range=(0, 100), branching=3, budget_split="geometric", consistent=False,
            epsilon=0.5, rng=_rng()),
        "hierarchical_nonnegative": lambda p, h: p.dp.hierarchical_histogram(
            "age", bins=100, range=(0, 100), nonnegative=True, epsilon=0.5, rng=_rng()),
        "hierarchical_2d": lambda p, h: p.dp.hierarchical_histogram(
            ["age", "income"], bins=[16, 16], range=[(0, 96), (0, 320_000)], branching=2, epsilon=0.5,
            rng=_rng()),
        "ahp_greedy": lambda p, h: p.dp.histogram("age", bins=100, range=(0, 100), method="ahp", epsilon=0.5,
                                                  rng=_rng()),
        "ahp_optimal": lambda p, h: p.dp.histogram("age", bins=100, range=(0, 100), method="ahp",
                                                   clustering="optimal", eta=0.2, epsilon=0.5, rng=_rng()),
        "dpcube_ls": lambda p, h: p.dp.histogram(["age", "income"], bins=[16, 16],
                                                 range=[(0, 96), (0, 320_000)], method="dpcube",
                                                 epsilon=0.5, rng=_rng()),
        "dpcube_uniform": lambda p, h: p.dp.histogram("age", bins=100, range=(0, 100), method="dpcube",
                                                      estimate="uniform", epsilon=0.5, rng=_rng()),
        "auto_ranges_1d": lambda p, h: p.dp.histogram("age", bins=100, range=(0, 100), method="auto",
                                                      epsilon=0.5, rng=_rng()),
        "auto_bins": lambda p, h: p.dp.histogram("age", bins=100, range=(0, 100), method="auto",
                                                 workload="bins", expected_total=10_000, epsilon=0.5,
                                                 rng=_rng()),
        "auto_2d": lambda p, h: p.dp.histogram(["age", "income"], bins=[16, 16],
                                               range=[(0, 96), (0, 320_000)], method="auto", epsilon=0.5,
                                               rng=_rng()),
        "range_query": lambda p, h: p.dp.range_query("age", [(0, 18), (18, 65), (65, 100)], bins=100,
                                                     range=(0, 100), epsilon=0.5, rng=_rng()),
        "coc_hc_groups": lambda p, h: p.dp.count_of_counts("household_id", ["state", "county"], groups=h,
                                                           max_size=16, epsilon=0.5, rng=_rng()),
        "coc_hc_estimated_k": lambda p, h: p.dp.count_of_counts("household_id", ["state", "county"],
                                                                groups=h, epsilon=0.5, rng=_rng()),
        "coc_hg_groups": lambda p, h: p.dp.count_of_counts("household_id", ["state", "county"], groups=h,
                                                           method="hg", epsilon=0.5, rng=_rng()),
        "coc_naive_hierarchy": lambda p, h: p.dp.count_of_counts(
            "household_id", ["state", "county"], hierarchy=h[["state", "county"]].drop_duplicates(),
            method="naive", max_size=16, epsilon=0.5, rng=_rng()),
        "unattributed_groups": lambda p, h: p.dp.unattributed_histogram("household_id", groups=h,
                                                                        epsilon=0.5, rng=_rng()),
        "unattributed_estimated": lambda p, h: p.dp.unattributed_histogram("household_id", epsilon=0.5,
                                                                           rng=_rng()),
    }


def _arrays(result: Any) -> dict[str, np.ndarray]:
    """The observable numbers of a release, as arrays (index labels as strings)."""
    if isinstance(result, pd.DataFrame):  # range_query answers
        return {"values": result[["low", "high", "estimate", "std_error"]].to_numpy(dtype=np.float64)}
    if isinstance(result, pdp.CountOfCounts):
        frame = result.to_frame()
        return {"values": frame[["size", "groups"]].to_numpy(dtype=np.int64),
                "labels": np.array([f"{lv}|{rg}" for lv, rg in zip(frame["level"], frame["region"])])}
    out = {"estimate": result.counts.to_numpy(dtype=np.float64),
           "variance": result.variance.to_numpy(dtype=np.float64)}
    if isinstance(result, pdp.Histogram):
        out["labels"] = np.array([str(v) for v in result.counts.index])
    return out


def _run_all() -> dict[str, np.ndarray]:
    persons, households = load_persons(), load_households()
    out: dict[str, np.ndarray] = {}
    for name, call in _cases().items():
        with pdp.budget(epsilon=1.0):
            result = call(persons, households)
        for key, value in _arrays(result).items():
            out[f"{name}/{key}"] = value
    return out


@pytest.fixture(scope="module")
def produced() -> dict[str, np.ndarray]:
    return _run_all()


@pytest.mark.parametrize("name", sorted(_cases()))
def test_release_is_byte_identical_to_the_recorded_one(produced, name):
    with np.load(GOLDEN, allow_pickle=False) as recorded:
        keys = sorted(k for k in recorded.files if k.split("/")[0] == name)
        assert keys, f"no recorded output for {name}"
        assert sorted(k for k in produced if k.split("/")[0] == name) == keys
        for key in keys:
            got, want = produced[key], recorded[key]
            assert got.dtype.kind == want.dtype.kind and got.shape == want.shape, key
            if got.dtype.kind in "fi":
                assert got.tobytes() == want.tobytes(), key
            else:
                assert (got == want).all(), key


if __name__ == "__main__":  # pragma: no cover - maintenance entry point
    if "--regenerate" in sys.argv:
        GOLDEN.parent.mkdir(exist_ok=True)
        np.savez_compressed(GOLDEN, **_run_all())
        print(f"wrote {GOLDEN}")
