"""Tables by geography: end-to-end speed of ``df.dp.histogram(..., by=, hierarchy=)`` and accuracy of consistency.

A synthetic population (default 10^7 persons, nation > 50 states > 3,000
counties, age 0-99 x sex = 200 cells per region, about 610k released cells):

* **end to end** (``--no-end-to-end`` skips it): best wall time and peak
  traced memory of the public release
  ``persons.dp.histogram(["age", "sex"], ..., by=["state", "county"],
  hierarchy=regions, epsilon=1)`` (secure noise, exact GLS; and with
  ``integer=True``), next to the plain pandas ``groupby([...]).size()`` at
  all three levels on the same frame, in the same run; then the same release
  on a Dask frame read from Parquet (``--no-dask`` skips it), checked equal
  to the pandas release for one seed;
* **algorithm part** (``--no-speed`` skips it): each step of
  :func:`pandas_dp.algorithms.geography.release.release_geography` on the exact tables;
* **accuracy** (epsilon split equally over the three levels, ``--trials``
  releases), on the synthetic population and on the bundled census
  (:mod:`pandas_dp.data`: its persons by state and county, the households
  table's geography): per level, the RMSE and mean absolute error per cell
  against the truth, and the county-sum-to-state (and state-sum-to-nation)
  discrepancy of the published tables, for the noisy tables without
  consistency, GLS, GLS + non-negative, GLS + integer (controlled rounding),
  and for each level released on its own with the whole epsilon (three such
  releases would cost three times the budget).  ``exact`` is the RMSE
  predicted by the GLS variances.

Pure epsilon (``PureDP``) always; zCDP (``ZCDP``, rho = epsilon^2 / 2) when
the discrete Gaussian sampler ``pandas_dp.noise.discrete_gaussian`` exists.

Run: ``python -m benchmarks.bench_geography [--persons 10000000] [--epsilons 1 0.1] [--trials 5]``
"""

from __future__ import annotations

import argparse
import importlib.util
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd

import pandas_dp as pdp
from benchmarks._timing import best_of, traced_peak
from pandas_dp.algorithms.controlled_rounding import controlled_round
from pandas_dp.algorithms.geography.release import release_geography
from pandas_dp.algorithms.geography.inference import region_inference
from pandas_dp.algorithms.geography.layout import RegionLayout, region_layout
from pandas_dp.algorithms.geography.nonnegative import nonnegative_regions
from pandas_dp.privacy.loss import PrivacyLoss, PureDP, ZCDP

AGES, SEXES = 100, 2


def allocate(total: int, weights: np.ndarray, minimum: int = 0) -> np.ndarray:
    """Integers proportional to ``weights`` summing to ``total`` (largest remainder), each >= minimum."""
    base = np.full(weights.size, minimum, dtype=np.int64)
    share = weights / weights.sum() * (total - base.sum())
    out = base + np.floor(share).astype(np.int64)
    extra = total - out.sum()
    out[np.argsort(-(share - np.floor(share)))[:extra]] += 1
    return out


def make_population(n_persons: int, n_states: int, n_counties: int, seed: int = 0):
    """Persons (state, county, age, sex codes) with skewed state and county sizes.

    States have log-normal sizes; counties are allocated to states in
    proportion to their size (at least one each) and have log-normal sizes
    within their state; every state has its own age profile (a declining
    pyramid with a random tilt) and a sex ratio near one half.
    """
    rng = np.random.default_rng(seed)
    state_pop = allocate(n_persons, rng.lognormal(0.0, 1.0, n_states), 1)
    per_state = allocate(n_counties, state_pop.astype(float), 1)
    county_state = np.repeat(np.arange(n_states), per_state)
    county_pop = np.zeros(n_counties, dtype=np.int64)
    for s in range(n_states):            # setup only: a loop over 50 states
        idx = np.flatnonzero(county_state == s)
        county_pop[idx] = allocate(int(state_pop[s]), rng.lognormal(0.0, 1.3, idx.size), 0)
    county = np.repeat(np.arange(n_counties, dtype=np.int32), county_pop)
    ages = np.arange(AGES)
    tilt = rng.uniform(-0.01, 0.01, n_states)
    profile = np.exp(-ages[None, :] * (0.012 + tilt[:, None]))
    cum = np.cumsum(profile / profile.sum(axis=1, keepdims=True), axis=1)
    state = county_state[county]
    age = np.minimum(_ages_by_state(cum, state, rng.random(county.size)), AGES - 1).astype(np.int8)
    sex = (rng.random(county.size) < 0.49).astype(np.int8)
    persons = pd.DataFrame({"state": state.astype(np.int16), "county": county.astype(np.int16),
                            "age": age, "sex": sex})
    return persons, county_state


def _ages_by_state(cum: np.ndarray, state: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draw of ages per person from its state's profile (searchsorted per state)."""
    out = np.empty(u.size, dtype=np.int64)
    for s in range(cum.shape[0]):        # setup only: a loop over 50 states
        idx = np.flatnonzero(state == s)
        out[idx] = np.searchsorted(cum[s], u[idx], side="right")
    return out


def tables(persons: pd.DataFrame, n_counties: int, county_state: np.ndarray) -> list[np.ndarray]:
    """Exact (regions x 200 cells) tables for nation, states and counties."""
    cell = persons["age"].to_numpy(np.int64) * SEXES + persons["sex"].to_numpy(np.int64)
    county = np.bincount(persons["county"].to_numpy(np.int64) * AGES * SEXES + cell,
                         minlength=n_counties * AGES * SEXES).reshape(n_counties, AGES * SEXES)
    lay = region_layout([None, np.zeros(county_state.max() + 1, dtype=np.int64), county_state])
    state = lay.aggregate(county, 2)
    return [lay.aggregate(state, 1), state, county]


def pandas_groupby_sizes(persons: pd.DataFrame) -> list[pd.Series]:
    """The non-private baseline: groupby sizes at all three levels."""
    return [persons.groupby(cols, observed=True).size()
            for cols in (["age", "sex"], ["state", "age", "sex"], ["county", "age", "sex"])]


def speed(persons: pd.DataFrame, truth: list[np.ndarray], parents: list, repeat: int,
          baseline: bool) -> None:
    """Best-of-``repeat`` times of each step and of the whole algorithm part (secure noise)."""
    losses = PureDP(Fraction(1)).split([1, 1, 1])
    lay = region_layout(parents)
    noises = [loss.noise() for loss in losses]
    noisy = [n.add(t, None) for n, t in zip(noises, truth)]
    sigma2 = [n.variance() for n in noises]
    inf = region_inference(noisy, lay, sigma2)
    nn = nonnegative_regions(inf)
    steps = {
        "noise, secure (3 levels)": lambda: [n.add(t, None) for n, t in zip(noises, truth)],
        "GLS": lambda: region_inference(noisy, lay, sigma2),
        "non-negative": lambda: nonnegative_regions(inf),
        "controlled rounding": lambda: controlled_round(nn, lay),
        "rounding, unbiased": lambda: controlled_round(nn, lay, method="unbiased"),
    }
    cells = sum(t.size for t in truth)
    print(f"\nSpeed: {len(persons):,} persons, {cells:,} released cells "
          f"(best of {repeat}; shared machine, timings are noisy)")
    for name, fn in steps.items():
        print(f"  {name:30s} {best_of(fn, repeat):8.3f} s")
    base = None
    if baseline:
        base = best_of(lambda: pandas_groupby_sizes(persons), repeat)
        peak = traced_peak(lambda: pandas_groupby_sizes(persons))
        print(f"  {'pandas groupby sizes x3':30s} {base:8.3f} s   peak {peak:7.1f} MiB (traced)")
    for label, integer in (("algorithm part, GLS", False), ("algorithm part, GLS + integer", True)):
        def run(integer: bool = integer) -> object:
            return release_geography([None, None, truth[2]], parents, level_losses=losses,
                                     integer=integer, rng=None)
        t = best_of(run, repeat)
        ratio = f"  = {t / base:.2f}x pandas" if base else ""
        print(f"  {label:30s} {t:8.3f} s   peak {traced_peak(run):7.1f} MiB (traced){ratio}")


def public_regions(county_state: np.ndarray) -> pd.DataFrame:
    """The public region table of the synthetic population: one row per county with its state."""
    return pd.DataFrame({"state": county_state.astype(np.int16), "county": np.arange(county_state.size, dtype=np.int16)})


def by_geography(frame, regions: pd.DataFrame, rng=None, **kwargs):
    """The public release: age x sex for the nation, every state and every county, consistent."""
    return frame.dp.histogram(["age", "sex"], bins={"age": AGES, "sex": SEXES},
                              range={"age": (0, AGES), "sex": (0, SEXES)}, by=["state", "county"],
                              hierarchy=regions, epsilon=1.0, rng=rng, **kwargs)


def end_to_end(persons: pd.DataFrame, county_state: np.ndarray, repeat: int, dask: bool) -> None:
    """The public release (pandas, then Dask on Parquet) against pandas groupby sizes at all three levels."""
    regions = public_regions(county_state)
    print(f"\nEnd to end: {len(persons):,} persons, release of {(1 + len(np.unique(county_state)) + county_state.size) * AGES * SEXES:,} "
          f"cells (best of {repeat}; shared machine, timings are noisy)")
    with pdp.budget(epsilon=10**9):
        base = best_of(lambda: pandas_groupby_sizes(persons), repeat)
        base_peak = traced_peak(lambda: pandas_groupby_sizes(persons))
        print(f"  {'pandas groupby sizes x3':34s} {base:8.3f} s   peak {base_peak:7.1f} MiB (traced)")
        for label, kwargs in (("release, GLS", {}), ("release, GLS + integer", {"integer": True})):
            t = best_of(lambda: by_geography(persons, regions, **kwargs), repeat)
            peak = traced_peak(lambda: by_geography(persons, regions, **kwargs))
            print(f"  {label:34s} {t:8.3f} s   peak {peak:7.1f} MiB (traced)  = {t / base:.2f}x time, "
                  f"{peak / base_peak:.2f}x memory of pandas")
        if not dask:
            return
        import dask.dataframe as dd

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "persons.parquet"
            persons.to_parquet(path, row_group_size=1 << 20, index=False)
            frame = dd.read_parquet(path, split_row_groups=True)
            t = best_of(lambda: by_geography(frame, regions), repeat)
            same = (by_geography(frame, regions, rng=np.random.default_rng(0))
                    == by_geography(persons, regions, rng=np.random.default_rng(0)))
            print(f"  {'Dask on Parquet (%d partitions)' % frame.npartitions:34s} {t:8.3f} s   "
                  f"= {t / base:.2f}x pandas groupby; equal to the pandas release: {same}")


def census_truth() -> tuple[list[np.ndarray], list]:
    """Exact age x sex tables of the bundled census by nation, state and county (its public geography)."""
    from pandas_dp.data import load_households, load_persons
    from pandas_dp.domain.grid import make_grid
    from pandas_dp.engines.pandas import PANDAS_ENGINE
    from pandas_dp.domain.geography import region_tree

    persons = load_persons()
    persons["sex"] = (persons["sex"] == "M").astype(np.int8)
    regions = load_households()[["state", "county"]].drop_duplicates()
    tree = region_tree(persons.columns, None, ["state", "county"], hierarchy=regions)
    grid = make_grid(persons, ["age", "sex"], bins={"age": AGES, "sex": SEXES},
                     range={"age": (0, AGES), "sex": (0, SEXES)})
    return PANDAS_ENGINE.region_bin_counts(persons, tree, grid), [None, *tree.parents[1:]]


def level_errors(est: list[np.ndarray], truth: list[np.ndarray], lay: RegionLayout) -> dict:
    out = {}
    for lvl, name in enumerate(("nation", "state", "county")):
        err = np.asarray(est[lvl], dtype=np.float64) - truth[lvl]
        out[f"{name} rmse"] = float(np.sqrt(np.mean(err ** 2)))
        out[f"{name} mae"] = float(np.mean(np.abs(err)))
    for lvl, name in ((2, "county-sum-to-state"), (1, "state-sum-to-nation")):
        gap = lay.aggregate(np.asarray(est[lvl], dtype=np.float64), lvl) - est[lvl - 1]
        out[name] = float(np.mean(np.abs(gap)))
    return out


def accuracy(truth: list[np.ndarray], parents: list, whole: PrivacyLoss, trials: int,
             seed: int) -> pd.DataFrame:
    lay = region_layout(parents)
    losses = whole.split([1, 1, 1])
    rows = []
    rng = np.random.default_rng(seed)
    for _ in range(trials):
        gls = release_geography([None, None, truth[2]], parents, level_losses=losses, rng=rng)
        # Same noise, different post-processing: the differences are the post-processing's.
        inf = region_inference(list(gls.noisy), lay, gls.level_variances)
        nn = nonnegative_regions(inf)
        runs = {"noisy, no consistency": list(gls.noisy), "GLS": list(gls.estimates),
                "GLS + non-negative": list(nn), "GLS + integer": list(controlled_round(nn, lay))}
        leaf_only = release_geography([None, None, truth[2]], parents, level_losses=(None, None, whole), rng=rng)
        runs["GLS, level_weights 0:0:1 (counties only)"] = list(leaf_only.estimates)
        noise = whole.noise()
        runs["each level alone, whole budget"] = [noise.add(t, rng) for t in truth]
        for name, est in runs.items():
            rows.append({"method": name, **level_errors(est, truth, lay)})
        exact = {f"{n} rmse": float(np.sqrt(np.mean(gls.variances[lvl])))
                 for lvl, n in enumerate(("nation", "state", "county"))}
        rows.append({"method": "exact GLS (from variances)", **exact})
    frame = pd.DataFrame(rows).groupby("method", sort=False).mean()
    return frame


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--persons", type=int, default=10_000_000)
    parser.add_argument("--states", type=int, default=50)
    parser.add_argument("--counties", type=int, default=3000)
    parser.add_argument("--epsilons", nargs="*", type=float, default=[1.0, 0.1])
    parser.add_argument("--trials", type=int, default=5, help="releases averaged per accuracy figure")
    parser.add_argument("--repeat", type=int, default=3, help="timing repeats (best is reported)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the pandas groupby timing")
    parser.add_argument("--no-speed", action="store_true", help="skip the algorithm-part timing")
    parser.add_argument("--no-end-to-end", action="store_true", help="skip the public release timing")
    parser.add_argument("--no-dask", action="store_true", help="skip the Dask-on-Parquet run")
    parser.add_argument("--no-accuracy", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    persons, county_state = make_population(args.persons, args.states, args.counties, args.seed)
    truth = tables(persons, args.counties, county_state)
    parents = [None, np.zeros(args.states, dtype=np.int64), county_state.astype(np.int64)]
    print(f"population: {len(persons):,} persons, {args.states} states, {args.counties} counties, "
          f"{AGES * SEXES} cells; county sizes median {int(np.median(truth[2].sum(axis=1))):,}, "
          f"max {int(truth[2].sum(axis=1).max()):,}; built in {time.perf_counter() - start:.1f} s")
    if not args.no_end_to_end:
        end_to_end(persons, county_state, args.repeat, not args.no_dask)
    if not args.no_speed:
        speed(persons, truth, parents, args.repeat, not args.no_baseline)
    if args.no_accuracy:
        return
    measures: list[tuple[str, PrivacyLoss]] = []
    for eps in args.epsilons:
        measures.append((f"epsilon={eps:g}", PureDP(Fraction(eps).limit_denominator(10**6))))
    has_gaussian = importlib.util.find_spec("pandas_dp.noise.discrete_gaussian") is not None
    if has_gaussian:
        for eps in args.epsilons:
            rho = Fraction(eps).limit_denominator(10**6) ** 2 / 2
            measures.append((f"rho={float(rho):g}", ZCDP(rho)))
    pd.set_option("display.width", 200)
    census, census_parents = census_truth()
    datasets = [("synthetic", truth, parents), ("bundled census (9,785 persons, 5 states, 30 counties)", census,
                                                census_parents)]
    for name, exact, tree in datasets:
        for label, whole in measures:
            frame = accuracy(exact, tree, whole, args.trials, args.seed + 1)
            print(f"\nAccuracy on the {name} population, {label} split equally over 3 levels, mean of "
                  f"{args.trials} releases (errors per cell; discrepancy = mean |sum of children - parent| per cell):")
            print(frame.to_string(float_format=lambda v: f"{v:.3f}", na_rep="-"))
    if not has_gaussian:
        print("\nzCDP skipped: pandas_dp.noise.discrete_gaussian is not in this tree yet.")
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
