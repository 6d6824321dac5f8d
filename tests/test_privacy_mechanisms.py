"""``assert_dp`` over every public release method, at epsilon 0.5 and 1, on small domains.

Default run: one stressing neighbour per method at one of the two levels (taken
in turn, ``tests/_slow.py`` :func:`quick_levels`), few trials (a regression
check that every method passes; the Dask releases other than the flat one run
with ``--runslow``). ``--runslow``: every other neighbour from
:func:`pandas_dp.testing.neighbours` at one loss level, more trials, and the
public count-of-counts method itself (about 30 ms a call, so the default run
tests its post-charge pipeline at the algorithm level, shown identical below).
``PANDAS_DP_SLOW_DEPTH=full`` (``tests/_slow.py``) runs every level and every
neighbour at 3000 trials.

Every tested output is the whole public release (all node estimates and raw
noisy node counts of a tree, every region's histogram of a count-of-counts),
so a leak through any released number would show.

zCDP (issue 15): every method that accepts ``rho=`` is run under a rho budget
and tested against the (epsilon, delta)-DP claim its rho converts to
(``ZCDP(rho).epsilon_delta(DELTA)``, the tight Canonne-Kamath-Steinke
bound), at rho = epsilon**2 / 2 of the pure cases (0.125 and 0.5). Default
run: rho 0.5 and the quick neighbour; ``--runslow``: rho 0.125 on the other
neighbours. The power of these claims against a mis-calibrated release (sigma
30% too small) is shown in ``tests/test_zcdp_releases.py``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.domain.grid import make_grid
from pandas_dp.engines.pandas.counts import bin_counts
from pandas_dp.engines.pandas.groups import prepare_groups
from pandas_dp.privacy.loss import pure, zcdp
from pandas_dp.noise.laplace import discrete_laplace, noise_scale
from pandas_dp.releases.count_of_counts import estimate_count_of_counts, plan_count_of_counts
from pandas_dp.releases.methods import METHODS
from pandas_dp.testing import Neighbour, assert_dp, neighbours

from _slow import FULL, QUICK_TRIALS, SLOW_TRIALS, quick_levels, slow_cases, slow_levels

EPSILONS = [0.5, 1.0]
RHOS = [0.125, 0.5]     # epsilon**2 / 2 of EPSILONS: the zCDP these pure releases imply
QUICK_RHO = 0.5
DELTA = 1e-2            # the claim tested for a rho release: (zcdp(rho).epsilon_delta(DELTA), DELTA)
RHO_BUDGET = {"rho": 10**6}
EDGES = list(range(9))  # 8 public bins: a binary tree has 3 noised levels
D = pd.DataFrame({"x": [0, 1, 1, 2, 3, 3, 3, 5]})
CASES = {n.name: n for n in neighbours(D, "x", bins=EDGES)}
QUICK = CASES["add to largest cell"]
#: The slow matrices (tests/_slow.py: PANDAS_DP_SLOW_DEPTH=full for every level and neighbour).
SLOW_EPSILONS = slow_levels(EPSILONS)          # the quick run tests both epsilons on its neighbour
SLOW_RHOS = slow_levels(RHOS, quick=QUICK_RHO)  # the quick run tests QUICK_RHO
SLOW_CASES = slow_cases(CASES, quick=QUICK.name)


def tree_outputs(r: pdp.HierarchicalHistogram) -> np.ndarray:
    """Every node's estimate and raw noisy count (NaN on levels that were not noised)."""
    levels = r.levels
    return np.concatenate([levels["estimate"].to_numpy(float),
                           levels["noisy"].to_numpy(dtype=float, na_value=np.nan)])


def loss_kw(amount: float, measure: str = "epsilon") -> dict[str, float]:
    """The release's privacy argument: ``{"epsilon": e}`` or ``{"rho": r}``."""
    return {measure: amount}


def histogram_method(method: str, privacy: float | dict, **kw):
    p = privacy if isinstance(privacy, dict) else loss_kw(privacy)
    return lambda df, rng: df.dp.histogram("x", bins=EDGES, method=method, rng=rng, **p, **kw)


def hierarchical(privacy: float | dict, **kw):
    p = privacy if isinstance(privacy, dict) else loss_kw(privacy)
    return lambda df, rng: df.dp.hierarchical_histogram("x", bins=EDGES, branching=2, rng=rng, **p, **kw)


def range_queries(privacy: float | dict):
    p = privacy if isinstance(privacy, dict) else loss_kw(privacy)
    return lambda df, rng: df.dp.range_query("x", [(0, 4), (2, 8), (3, 4)], bins=EDGES, rng=rng,
                                             **p)["estimate"]


def dawa_outputs(r: pdp.DAWAHistogram) -> np.ndarray:
    """Every estimate and the private partition (1 where a bucket starts, on DAWA's line)."""
    starts = np.zeros(r.counts.size + 1)
    starts[r.buckets["start"].to_numpy()] = 1
    return np.concatenate([r.counts.to_numpy(float), starts])


def grid_outputs(r: pdp.GridHistogram) -> np.ndarray:
    """Every atom estimate and the total that sized the grid (noisy unless public)."""
    return np.concatenate([r.counts.to_numpy(float), [r.params["total"]]])


def auto_outputs(r: pdp.Histogram) -> np.ndarray:
    """Every estimate, the noisy total auto bought and the configuration it chose (as a number)."""
    from pandas_dp.releases.methods.auto_rule import AUTO_CONFIGS

    return np.concatenate([r.counts.to_numpy(float),
                           [r.params["auto_total"], list(AUTO_CONFIGS).index(r.params["auto_config"])]])


HISTOGRAM_MECHANISMS = {
    "identity": (lambda e: histogram_method("identity", e), None),
    "identity nonnegative": (lambda e: histogram_method("identity", e, nonnegative=True), None),
    "hierarchical uniform": (lambda e: hierarchical(e, budget_split="uniform"), tree_outputs),
    "hierarchical geometric": (lambda e: hierarchical(e, budget_split="geometric"), tree_outputs),
    "hierarchical optimal": (lambda e: hierarchical(e, budget_split="optimal"), tree_outputs),
    "hierarchical root, raw": (lambda e: hierarchical(e, include_root=True, consistent=False), tree_outputs),
    "hierarchical nonnegative": (lambda e: hierarchical(e, nonnegative=True), tree_outputs),
    "hierarchical integer": (lambda e: hierarchical(e, integer=True), tree_outputs),
    "ahp": (lambda e: histogram_method("ahp", e), None),
    "dpcube": (lambda e: histogram_method("dpcube", e), None),
    "auto": (lambda e: histogram_method("auto", e), None),
    "auto prefix, noisy total": (lambda e: histogram_method("auto", e, workload="prefix"), auto_outputs),
    "auto bins, noisy total": (lambda e: histogram_method("auto", e, workload="bins"), auto_outputs),
    "dawa": (lambda e: histogram_method("dawa", e), dawa_outputs),
    "dawa prefix, ratio 1/2": (lambda e: histogram_method("dawa", e, workload="prefix", ratio=0.5), dawa_outputs),
    "range_query": (range_queries, None),
}
#: The mechanisms whose method accepts rho= (discrete Gaussian noise); the others refuse it
#: (tests/test_zcdp_releases.py).
GAUSSIAN_MECHANISMS = {name: v for name, v in HISTOGRAM_MECHANISMS.items()
                       if name == "range_query" or "zcdp" in METHODS[name.split(" ")[0]].measures}


def test_every_registered_method_is_tested():
    # The registry is the list of methods: a new method cannot skip the privacy suite, in either measure.
    assert {name.split(" ")[0] for name in [*GAUSSIAN_MECHANISMS, *GAUSSIAN_GRID_MECHANISMS]} >= {
        m for m, spec in METHODS.items() if "zcdp" in spec.measures}
    assert {"identity", "hierarchical uniform", "auto", "range_query"} <= set(GAUSSIAN_MECHANISMS)
    assert {name.split(" ")[0] for name in [*HISTOGRAM_MECHANISMS, *GRID_MECHANISMS]} >= set(METHODS)


def _check(mechanism, statistic, neighbour, epsilon, trials, seed):
    report = assert_dp(mechanism, D, neighbour, epsilon=epsilon, trials=trials, statistic=statistic, rng=seed)
    assert report.charged_per_run == epsilon  # charged exactly the claimed epsilon, once per release
    return report


def check_gaussian(mechanism, frame, neighbour, rho, trials, seed, statistic=None, charges=True):
    """A rho release passes the (epsilon, delta) claim its rho converts to, and charges exactly rho.

    ``charges=False`` for the algorithm-level twins (they run after the charge).
    """
    epsilon = zcdp(rho).epsilon_delta(DELTA)
    report = assert_dp(mechanism, frame, neighbour, epsilon=epsilon, delta=DELTA, trials=trials,
                       statistic=statistic, budget=RHO_BUDGET, rng=seed)
    assert report.delta == DELTA and report.charged_per_run == (rho if charges else 0)  # rho once per release
    return report


#: Variants of a method already in the quick run: checked with --runslow only (keeps the default run short).
SLOW_ONLY = {"dawa prefix, ratio 1/2", "auto bins, noisy total", "agrid public total"}


def _quick(names, levels=EPSILONS):
    """Each mechanism at one level of ``levels`` (tests/_slow.py), the variants in SLOW_ONLY with --runslow."""
    return [pytest.param(n, level, id=f"{n}-{level}", marks=[pytest.mark.slow] if n in SLOW_ONLY else [])
            for n, level in quick_levels(list(names), levels)]


@pytest.mark.parametrize("name,epsilon", _quick(HISTOGRAM_MECHANISMS))
def test_histogram_methods_are_dp(name, epsilon):
    make, statistic = HISTOGRAM_MECHANISMS[name]
    _check(make(epsilon), statistic, QUICK, epsilon, QUICK_TRIALS, seed=11)


@pytest.mark.slow
@pytest.mark.parametrize("case", SLOW_CASES)
@pytest.mark.parametrize("epsilon", SLOW_EPSILONS)
@pytest.mark.parametrize("name", list(HISTOGRAM_MECHANISMS))
def test_histogram_methods_are_dp_on_every_neighbour(name, epsilon, case):
    make, statistic = HISTOGRAM_MECHANISMS[name]
    _check(make(epsilon), statistic, CASES[case], epsilon, SLOW_TRIALS, seed=12)


@pytest.mark.parametrize("name", list(GAUSSIAN_MECHANISMS))
def test_gaussian_histogram_methods_meet_their_epsilon_delta(name):
    make, statistic = GAUSSIAN_MECHANISMS[name]
    check_gaussian(make(loss_kw(QUICK_RHO, "rho")), D, QUICK, QUICK_RHO, QUICK_TRIALS, seed=21, statistic=statistic)


@pytest.mark.slow
@pytest.mark.parametrize("case", SLOW_CASES)
@pytest.mark.parametrize("rho", SLOW_RHOS)
@pytest.mark.parametrize("name", list(GAUSSIAN_MECHANISMS))
def test_gaussian_histogram_methods_on_every_neighbour(name, rho, case):
    make, statistic = GAUSSIAN_MECHANISMS[name]
    check_gaussian(make(loss_kw(rho, "rho")), D, CASES[case], rho, SLOW_TRIALS, seed=22, statistic=statistic)


# ---------------------------------------------------------------- unattributed
EDGES_FRAME = pd.DataFrame({"src": [1, 1, 1, 2, 2, 3, 5, 5, 5, 5]})
HOSTS = [1, 2, 3, 4, 5, 6]
PAD = 12  # right-aligned sorted counts, zero-padded: a fixed-length post-processing of the release
UNATTR_CASES = {n.name: n for n in neighbours(EDGES_FRAME, group="src", groups=pd.DataFrame({"src": HOSTS}))}


def sorted_padded(r: pdp.UnattributedHistogram) -> np.ndarray:
    c = r.counts.to_numpy(float)[-PAD:]
    return np.concatenate([np.zeros(PAD - c.size), c, [r.counts.size]])


def unattributed(privacy: float | dict, public: bool):
    groups = HOSTS if public else None
    p = privacy if isinstance(privacy, dict) else loss_kw(privacy)
    return lambda df, rng: df.dp.unattributed_histogram("src", groups=groups, rng=rng, **p)


@pytest.mark.parametrize("public,epsilon", [(True, EPSILONS[0]), (False, EPSILONS[1])] if not FULL else
                         [(p, e) for p in (True, False) for e in EPSILONS], ids=lambda v: str(v))
def test_unattributed_histogram_is_dp(epsilon, public):
    _check_frame(unattributed(epsilon, public), EDGES_FRAME, UNATTR_CASES["add entity: largest group grows to 5"],
                 epsilon, QUICK_TRIALS)


@pytest.mark.slow
@pytest.mark.parametrize("case", slow_cases(UNATTR_CASES, quick="add entity: largest group grows to 5"))
@pytest.mark.parametrize("public", [True, False], ids=["public groups", "estimated groups"])
@pytest.mark.parametrize("epsilon", SLOW_EPSILONS)
def test_unattributed_histogram_is_dp_on_every_neighbour(epsilon, public, case):
    _check_frame(unattributed(epsilon, public), EDGES_FRAME, UNATTR_CASES[case], epsilon, SLOW_TRIALS)


@pytest.mark.parametrize("public", [True, False], ids=["public groups", "estimated groups"])
def test_gaussian_unattributed_histogram(public):
    check_gaussian(unattributed(loss_kw(QUICK_RHO, "rho"), public), EDGES_FRAME,
                   UNATTR_CASES["add entity: largest group grows to 5"], QUICK_RHO, QUICK_TRIALS, seed=23,
                   statistic=sorted_padded)


@pytest.mark.slow
@pytest.mark.parametrize("case", slow_cases(UNATTR_CASES, quick="add entity: largest group grows to 5"))
@pytest.mark.parametrize("public", [True, False], ids=["public groups", "estimated groups"])
@pytest.mark.parametrize("rho", SLOW_RHOS)
def test_gaussian_unattributed_histogram_on_every_neighbour(rho, public, case):
    check_gaussian(unattributed(loss_kw(rho, "rho"), public), EDGES_FRAME, UNATTR_CASES[case], rho, SLOW_TRIALS,
                   seed=24, statistic=sorted_padded)


def _check_frame(mechanism, frame, neighbour, epsilon, trials, statistic=sorted_padded):
    report = assert_dp(mechanism, frame, neighbour, epsilon=epsilon, trials=trials, statistic=statistic, rng=13)
    assert report.charged_per_run == epsilon
    return report


# ---------------------------------------------------------------- count-of-counts
PERSONS = pd.DataFrame({"pid": range(11), "hh": [1, 1, 1, 2, 2, 3, 4, 5, 5, 7, 7],
                        "state": list("aaabbabaabb")})
GROUPS = pd.DataFrame({"hh": [1, 2, 3, 4, 5, 6, 7], "state": list("abababb")})
HIERARCHY = pd.DataFrame({"state": ["a", "b"]})
COC_CASES = {n.name: n for n in neighbours(PERSONS, group="hh", groups=GROUPS, entity="pid")}
COC_QUICK = COC_CASES["add entity: largest group grows to 4"]
K_CAP = 8  # sizes above K_CAP are summed into one overflow cell (post-processing)
REGIONS = [("national", None), ("state", "a"), ("state", "b")]


def coc_vector(r: pdp.CountOfCounts) -> np.ndarray:
    """Groups per size 0..K_CAP (+ overflow) of every region, one fixed-length vector."""
    out = []
    for level, region in REGIONS:
        s = r.at(level, region) if region is not None else r.at(level)
        dense = np.zeros(K_CAP + 2)
        sizes = np.minimum(s.index.to_numpy(int), K_CAP + 1)
        np.add.at(dense, sizes, s.to_numpy(float))
        out.append(dense)
    return np.concatenate(out)


def coc_public(privacy: float | dict, method: str, *, public_groups: bool = True, max_size: int | None = 5):
    kw = dict(groups=GROUPS) if public_groups else dict(hierarchy=HIERARCHY)
    p = privacy if isinstance(privacy, dict) else loss_kw(privacy)
    return lambda df, rng: df.dp.count_of_counts("hh", "state", method=method, rng=rng, max_size=max_size,
                                                 **p, **kw)


def coc_pipeline(privacy: float | dict, method: str, *, public_groups: bool = True, max_size: int | None = 5):
    """The public release after validation and counting: same calls, same order, same rng use."""
    loss = pure(privacy) if not isinstance(privacy, dict) else (
        zcdp(privacy["rho"]) if "rho" in privacy else pure(privacy["epsilon"]))
    kw = dict(groups=GROUPS) if public_groups else dict(hierarchy=HIERARCHY)
    cache: dict[int, object] = {}

    def mech(df: pd.DataFrame, rng: np.random.Generator) -> np.ndarray:
        if id(df) not in cache:  # validation and counting happen before the charge: once per frame
            cache[id(df)] = prepare_groups(df, "hh", "state", **kw)
        tables = cache[id(df)]
        plan = plan_count_of_counts(loss, n_levels=len(tables.level_names), method=method,
                                    max_size=max_size, groups_public=tables.groups_public)
        out, _ = estimate_count_of_counts(tables, plan, merge="weighted", rng=rng)
        vec = []
        for level_runs in out:
            dense = np.zeros((level_runs.n_nodes, K_CAP + 2))
            np.add.at(dense, (level_runs.node, np.minimum(level_runs.size, K_CAP + 1)), level_runs.groups)
            vec.append(dense.ravel())
        return np.concatenate(vec)
    return mech


COC_VARIANTS = {
    "hc": dict(method="hc"),
    "hg": dict(method="hg", max_size=None),
    "naive": dict(method="naive"),
    "hc estimated K": dict(method="hc", max_size=None),
    "naive estimated groups": dict(method="naive", public_groups=False),
}


COC_GAUSSIAN_VARIANTS = {**COC_VARIANTS, "hg estimated groups": dict(method="hg", max_size=None, public_groups=False),
                         "hc estimated groups": dict(method="hc", public_groups=False)}
#: The public count-of-counts calls in the slow matrices (about 30 ms a call). Every variant's public call
#: equals its pipeline twin byte for byte (test below), and the twins run every variant; at CI depth
#: the public calls run one variant with public groups and one that estimates them (tests/_slow.py).
PUBLIC_SLOW_VARIANTS = list(COC_VARIANTS) if FULL else ["naive estimated groups"]
PUBLIC_SLOW_GAUSSIAN_VARIANTS = list(COC_GAUSSIAN_VARIANTS) if FULL else ["hg estimated groups"]


@pytest.mark.parametrize("budget,privacy", [(10, {"epsilon": 1.0}), ({"rho": 10}, {"rho": 0.5})],
                         ids=["pure", "zcdp"])
def test_count_of_counts_pipeline_matches_public_method(budget, privacy):
    variants = COC_GAUSSIAN_VARIANTS if "rho" in privacy else COC_VARIANTS
    for name, kw in variants.items():
        with pdp.budget(**budget) if isinstance(budget, dict) else pdp.budget(budget):
            public = coc_vector(coc_public(privacy, **kw)(PERSONS, np.random.default_rng(5)))
        pipeline = coc_pipeline(privacy, **kw)(PERSONS, np.random.default_rng(5))
        np.testing.assert_array_equal(public, pipeline, err_msg=name)


@pytest.mark.parametrize("variant,epsilon", _quick(COC_VARIANTS))
def test_count_of_counts_is_dp(variant, epsilon):
    trials = QUICK_TRIALS if variant == "naive estimated groups" else 2 * QUICK_TRIALS  # NNLS: ~10 ms a run
    report = assert_dp(coc_pipeline(epsilon, **COC_VARIANTS[variant]), PERSONS, COC_QUICK, epsilon=epsilon,
                       trials=trials, rng=14)
    assert report.passed


@pytest.mark.parametrize("variant", list(COC_GAUSSIAN_VARIANTS))
def test_gaussian_count_of_counts(variant):
    # hc, hg (sensitivity 1) and naive (L2 sensitivity sqrt 2), with and without public Groups
    trials = QUICK_TRIALS if "estimated groups" in variant else 2 * QUICK_TRIALS
    check_gaussian(coc_pipeline(loss_kw(QUICK_RHO, "rho"), **COC_GAUSSIAN_VARIANTS[variant]), PERSONS, COC_QUICK,
                   QUICK_RHO, trials, seed=25, charges=False)


def test_gaussian_public_count_of_counts_smoke():
    # walks the public path (about 30 ms a call); the slow twins below test it on every neighbour
    check_gaussian(coc_public(loss_kw(QUICK_RHO, "rho"), "hc"), PERSONS, COC_QUICK, QUICK_RHO, 40, seed=26,
                   statistic=coc_vector)


@pytest.mark.slow
@pytest.mark.parametrize("case", slow_cases(COC_CASES, quick=COC_QUICK.name))
@pytest.mark.parametrize("rho", SLOW_RHOS)
@pytest.mark.parametrize("variant", list(COC_GAUSSIAN_VARIANTS))
def test_gaussian_count_of_counts_on_every_neighbour(variant, rho, case):
    check_gaussian(coc_pipeline(loss_kw(rho, "rho"), **COC_GAUSSIAN_VARIANTS[variant]), PERSONS, COC_CASES[case],
                   rho, SLOW_TRIALS, seed=27, charges=False)


@pytest.mark.slow
@pytest.mark.parametrize("case", slow_cases(COC_CASES, quick=COC_QUICK.name))
@pytest.mark.parametrize("variant", PUBLIC_SLOW_GAUSSIAN_VARIANTS)
def test_gaussian_public_count_of_counts_on_every_neighbour(variant, case):
    check_gaussian(coc_public(loss_kw(QUICK_RHO, "rho"), **COC_GAUSSIAN_VARIANTS[variant]), PERSONS,
                   COC_CASES[case], QUICK_RHO, SLOW_TRIALS, seed=28, statistic=coc_vector)


def test_public_count_of_counts_is_dp_smoke():
    report = assert_dp(coc_public(1.0, "hc"), PERSONS, COC_QUICK, epsilon=1.0, trials=50, statistic=coc_vector,
                       rng=15)
    assert report.charged_per_run == 1.0


@pytest.mark.slow
@pytest.mark.parametrize("case", slow_cases(COC_CASES, quick=COC_QUICK.name))
@pytest.mark.parametrize("epsilon", SLOW_EPSILONS)
@pytest.mark.parametrize("variant", list(COC_VARIANTS))
def test_count_of_counts_is_dp_on_every_neighbour(variant, epsilon, case):
    report = assert_dp(coc_pipeline(epsilon, **COC_VARIANTS[variant]), PERSONS, COC_CASES[case], epsilon=epsilon,
                       trials=SLOW_TRIALS, rng=16)
    assert report.passed


@pytest.mark.slow
@pytest.mark.parametrize("case", slow_cases(COC_CASES, quick=COC_QUICK.name))
@pytest.mark.parametrize("epsilon", SLOW_EPSILONS)
@pytest.mark.parametrize("variant", PUBLIC_SLOW_VARIANTS)
def test_public_count_of_counts_is_dp_on_every_neighbour(variant, epsilon, case):
    # about 30 ms a call: fewer trials; the pipeline test above has the power
    report = assert_dp(coc_public(epsilon, **COC_VARIANTS[variant]), PERSONS, COC_CASES[case], epsilon=epsilon,
                       trials=SLOW_TRIALS, statistic=coc_vector, rng=16)
    assert report.charged_per_run == epsilon


def test_secure_randomness_path_is_dp():
    # rng=None: noise from the AES-CTR source, not reproducible. The test's false-failure probability
    # is at most 1 - confidence = 1e-3 (conservative: 0 of 200 correct runs failed at 0.8, see the docs).
    mech = lambda df, rng: df.dp.histogram("x", bins=EDGES, epsilon=1.0)
    report = assert_dp(mech, D, QUICK, epsilon=1.0, trials=QUICK_TRIALS)
    assert report.charged_per_run == 1.0


def batched_identity(epsilon: float):
    """The identity release, batched: the library's domain, counting engine and noise, n releases at once."""
    grid = make_grid(D, ["x"], bins=EDGES)

    def mech(df: pd.DataFrame, rng: np.random.Generator, n: int) -> np.ndarray:
        counts = bin_counts(df, grid).reshape(-1)
        return counts + discrete_laplace(noise_scale(1, epsilon), (n, counts.size), rng=rng)
    return mech


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_identity_with_1e5_vectorized_trials(epsilon):
    # The batched twin is the public release: same output for the same seed (n = 1).
    with pdp.budget(1):
        public = D.dp.histogram("x", bins=EDGES, epsilon=epsilon, rng=np.random.default_rng(3))
    batched = batched_identity(epsilon)(D, np.random.default_rng(3), 1)[0]
    np.testing.assert_array_equal(public.counts.to_numpy(), batched)
    for case in ("add to largest cell", "add to empty cell", "empty a cell", "add to last cell"):
        report = assert_dp(batched_identity(epsilon), D, CASES[case], epsilon=epsilon, trials=100_000,
                           vectorized=True, rng=17)
        # 70,000 test runs a side: the tester reaches the true epsilon within about 0.1 from below
        assert epsilon - 0.12 < report.epsilon_lower_bound <= epsilon, (case, report.epsilon_lower_bound)


DASK_MECHANISMS = {
    "identity": (lambda e: histogram_method("identity", e), None),
    "hierarchical": (lambda e: hierarchical(e), tree_outputs),
    "ahp": (lambda e: histogram_method("ahp", e), None),
}


def test_gaussian_dask_frame():
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    with dask.config.set(scheduler="synchronous"):
        check_gaussian(hierarchical(loss_kw(QUICK_RHO, "rho")), dd.from_pandas(D, npartitions=2),
                       dd.from_pandas(QUICK.frame, npartitions=2), QUICK_RHO, QUICK_TRIALS, seed=29,
                       statistic=tree_outputs)


@pytest.mark.parametrize("name", [n if n == "identity" else pytest.param(n, marks=pytest.mark.slow)
                                  for n in DASK_MECHANISMS])
def test_dask_frames_are_dp(name):
    # The default run: the identity release (a Dask release is the pandas release on the summed counts,
    # byte for byte on neighbouring frames: tests/test_neighbour_matrix.py); --runslow: the tree and AHP.
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    make, statistic = DASK_MECHANISMS[name]
    with dask.config.set(scheduler="synchronous"):
        report = assert_dp(make(1.0), dd.from_pandas(D, npartitions=2), dd.from_pandas(QUICK.frame, npartitions=2),
                           epsilon=1.0, trials=QUICK_TRIALS, statistic=statistic, rng=18)
    assert report.charged_per_run == 1.0


@pytest.mark.parametrize("name", [n if n == "identity" else pytest.param(n, marks=pytest.mark.slow)
                                  for n in DASK_MECHANISMS])
def test_polars_frames_are_dp(name):
    # As on Dask: the default run tests the identity release on Polars LazyFrames (the release is the pandas
    # release, byte for byte: tests/engines/test_polars_conformance.py); --runslow: the tree and AHP.
    pl = pytest.importorskip("polars")
    make, statistic = DASK_MECHANISMS[name]
    report = assert_dp(make(1.0), pl.from_pandas(D).lazy(), pl.from_pandas(QUICK.frame).lazy(), epsilon=1.0,
                       trials=QUICK_TRIALS, statistic=statistic, rng=18)
    assert report.charged_per_run == 1.0


# ---------------------------------------------------------------- 2-D grids (DPCube's home ground)
D2 = pd.DataFrame({"x": [0, 1, 1, 2, 3, 3, 3, 0], "y": [0, 0, 1, 3, 3, 3, 2, 0]})
BINS2 = [[0, 1, 2, 3, 4], [0, 1, 2, 3, 4]]  # 4 x 4 cells
CASES2 = {n.name: n for n in neighbours(D2, ["x", "y"], bins=BINS2)}
GRID_MECHANISMS = {
    "identity": (lambda e: lambda df, rng: df.dp.histogram(["x", "y"], bins=BINS2, epsilon=e, rng=rng), None),
    "dpcube": (lambda e: lambda df, rng: df.dp.histogram(["x", "y"], bins=BINS2, epsilon=e, method="dpcube",
                                                         rng=rng), None),
    "dpcube uniform": (lambda e: lambda df, rng: df.dp.histogram(["x", "y"], bins=BINS2, epsilon=e,
                                                                 method="dpcube", estimate="uniform", rng=rng), None),
    "hierarchical": (lambda e: lambda df, rng: df.dp.hierarchical_histogram(["x", "y"], bins=BINS2, epsilon=e,
                                                                             branching=2, rng=rng), tree_outputs),
    "dawa 2-D": (lambda e: lambda df, rng: df.dp.histogram(["x", "y"], bins=BINS2, epsilon=e, method="dawa",
                                                           rng=rng), dawa_outputs),
    "ugrid": (lambda e: lambda df, rng: df.dp.histogram(["x", "y"], bins=BINS2, epsilon=e, method="ugrid",
                                                        rng=rng), grid_outputs),
    "agrid": (lambda e: lambda df, rng: df.dp.histogram(["x", "y"], bins=BINS2, epsilon=e, method="agrid",
                                                        rng=rng), grid_outputs),
    "auto 2-D ranges, noisy total": (lambda e: lambda df, rng: df.dp.histogram(["x", "y"], bins=BINS2, epsilon=e,
                                                                           method="auto", rng=rng), auto_outputs),
    "agrid public total": (lambda e: lambda df, rng: df.dp.histogram(["x", "y"], bins=BINS2, epsilon=e,
                                                                     method="agrid", expected_total=8, rng=rng),
                           grid_outputs),
}


@pytest.mark.parametrize("name,epsilon", _quick(GRID_MECHANISMS))
def test_grid_methods_are_dp(name, epsilon):
    make, statistic = GRID_MECHANISMS[name]
    report = assert_dp(make(epsilon), D2, CASES2["add to largest cell"], epsilon=epsilon, trials=QUICK_TRIALS,
                       statistic=statistic, rng=19)
    assert report.charged_per_run == epsilon


@pytest.mark.slow
@pytest.mark.parametrize("case", slow_cases(CASES2, quick="add to largest cell"))
@pytest.mark.parametrize("epsilon", SLOW_EPSILONS)
@pytest.mark.parametrize("name", list(GRID_MECHANISMS))
def test_grid_methods_are_dp_on_every_neighbour(name, epsilon, case):
    make, statistic = GRID_MECHANISMS[name]
    assert_dp(make(epsilon), D2, CASES2[case], epsilon=epsilon, trials=SLOW_TRIALS, statistic=statistic, rng=20)


def grid_rho(method: str, **kw):
    return lambda r: lambda df, rng: df.dp.histogram(["x", "y"], bins=BINS2, rho=r, method=method, rng=rng, **kw)


#: The 2-D mechanisms under rho (the identity's pure-DP twin is above; the 1-D methods are in GAUSSIAN_MECHANISMS).
GAUSSIAN_GRID_MECHANISMS = {
    "identity": (lambda r: lambda df, rng: df.dp.histogram(["x", "y"], bins=BINS2, rho=r, rng=rng), None),
    "hierarchical": (lambda r: lambda df, rng: df.dp.hierarchical_histogram(["x", "y"], bins=BINS2, rho=r,
                                                                             branching=2, rng=rng), tree_outputs),
    "ugrid": (grid_rho("ugrid"), grid_outputs),
    "agrid": (grid_rho("agrid"), grid_outputs),
    "agrid public total": (grid_rho("agrid", expected_total=8), grid_outputs),
}
#: The default run: the tree and the grids (the flat identity is tested in 1-D above; AGrid with a public total is
#: AGrid without the noisy total's measurement, checked with --runslow).
QUICK_GAUSSIAN_GRIDS = ("hierarchical", "ugrid", "agrid")


@pytest.mark.parametrize("name", [n if n in QUICK_GAUSSIAN_GRIDS else pytest.param(n, marks=pytest.mark.slow)
                                  for n in GAUSSIAN_GRID_MECHANISMS])
def test_gaussian_2d_methods_meet_their_epsilon_delta(name):
    make, statistic = GAUSSIAN_GRID_MECHANISMS[name]
    check_gaussian(make(QUICK_RHO), D2, CASES2["add to largest cell"], QUICK_RHO, QUICK_TRIALS, seed=30, statistic=statistic)


def _gaussian_grid_pairs() -> list:
    """(mechanism, neighbour) of the slow 2-D rho matrix: identity and the tree on every neighbour; the grids
    (about 5 s a case each) take the neighbours in turn, so every neighbour is tested on some grid variant (all
    on all at ``PANDAS_DP_SLOW_DEPTH=full``)."""
    cases = slow_cases(CASES2, quick="add to largest cell")
    grids = [n for n in GAUSSIAN_GRID_MECHANISMS if n.split(" ")[0] in ("ugrid", "agrid")]
    return [pytest.param(name, case, id=f"{name}-{case}") for name in GAUSSIAN_GRID_MECHANISMS
            for k, case in enumerate(cases)
            if FULL or name not in grids or k % len(grids) == grids.index(name)]


@pytest.mark.slow
@pytest.mark.parametrize("rho", SLOW_RHOS)
@pytest.mark.parametrize("name,case", _gaussian_grid_pairs())
def test_gaussian_grid_methods_on_every_neighbour(name, rho, case):
    make, statistic = GAUSSIAN_GRID_MECHANISMS[name]
    check_gaussian(make(rho), D2, CASES2[case], rho, SLOW_TRIALS, seed=31, statistic=statistic)


#: The group as the unit without a Groups table (issue 24, item 1): neighbours differ by one whole
#: household, including one whose persons sit in both states (it must count as at most one group).
GROUP_UNIT_CASES = {n.name: n for n in neighbours(PERSONS, group="hh", spread_over="state")}


def coc_group_unit(epsilon: float, method: str = "hc"):
    return lambda df, rng: df.dp.count_of_counts("hh", "state", hierarchy=HIERARCHY, method=method, rng=rng,
                                                 max_size=5, epsilon=epsilon, privacy_unit="group")


def test_group_unit_neighbours_include_a_spread_household():
    spread = GROUP_UNIT_CASES["add a group spread over every leaf"].frame
    added = spread.iloc[len(PERSONS):]
    assert added["hh"].nunique() == 1 and set(added["state"]) == {"a", "b"}
    assert len(GROUP_UNIT_CASES["remove the largest group"].frame) == len(PERSONS) - 3


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(GROUP_UNIT_CASES))
@pytest.mark.parametrize("method", ["hc", "naive"])
def test_group_unit_count_of_counts_is_dp_on_whole_households(method, case):
    report = assert_dp(coc_group_unit(1.0, method), PERSONS, GROUP_UNIT_CASES[case], epsilon=1.0,
                       trials=SLOW_TRIALS, statistic=coc_vector, rng=17)
    assert report.passed


# ---------------------------------------------------------------- public totals: change one record, totals held
# With public_totals no two add/remove neighbours agree with the published facts: the relation is one record
# changing (its cells, and its county within its state when states have totals), every total held (issue 41,
# item 4). The neighbours come from neighbours(..., held=[...]), plus a record moving to a sibling county.
GEO_HIER = pd.DataFrame({"state": ["a", "a", "b"], "county": ["a0", "a1", "b0"]})
GEO = pd.DataFrame({"state": list("aaaaabbb"), "county": ["a0", "a0", "a0", "a1", "a1", "b0", "b0", "b0"],
                    "x": [0, 1, 1, 1, 2, 3, 3, 0], "sex": list("fmffmmfm")})
GEO_EDGES = [0, 2, 4]
GEO_STATES = pd.Series({"a": 5, "b": 3})   # public facts: the frame and its neighbours agree with them


def _sibling_move() -> Neighbour:
    moved = GEO.copy()
    moved.loc[1, ["county", "x"]] = ["a1", 3]
    return Neighbour("move to a sibling county", moved, "changed row 1 from county a0 to a1 and x 1 -> 3")


GEO_CASES = {n.name: n for n in [*neighbours(GEO, ["x", "sex"], bins={"x": GEO_EDGES},
                                             categories={"sex": ["f", "m"]}, held=["state", "county"]),
                                 _sibling_move()]}


def geo_histogram(privacy: dict, **kw):
    return lambda df, rng: df.dp.histogram(["x", "sex"], bins={"x": GEO_EDGES}, categories={"sex": ["f", "m"]},
                                           by=["state", "county"], hierarchy=GEO_HIER, rng=rng, **privacy, **kw)


def geo_marginals(privacy: dict, **kw):
    return lambda df, rng: df.dp.marginals([("x", "sex")], bins={"x": GEO_EDGES}, categories={"sex": ["f", "m"]},
                                           by=["state", "county"], hierarchy=GEO_HIER, rng=rng, **privacy, **kw)


def geo_outputs(r) -> np.ndarray:
    """Every released estimate of every region and level (histograms, or the tidy tables of marginals)."""
    counts = getattr(r, "counts", None)
    if isinstance(counts, pd.Series):
        return counts.to_numpy(float)
    return r.to_frame()["estimate"].to_numpy(float)


STATES = {"public_totals": {"state": GEO_STATES}}
NATION = {"public_totals": {"national": pd.Series({"national": 8})}}
GEO_MECHANISMS = {
    "histogram by state, state totals": lambda p: geo_histogram(p, **STATES),
    "histogram integer, national total": lambda p: geo_histogram(p, integer=True, **NATION),
    "marginals by state, state totals": lambda p: geo_marginals(p, **STATES),
    "marginals integer, national total": lambda p: geo_marginals(p, integer=True, **NATION),
}


def test_change_one_neighbours_keep_the_public_totals():
    for case in GEO_CASES.values():
        assert len(case.frame) == len(GEO) and (case.frame["state"].value_counts() == GEO_STATES).all()
        assert case.frame["state"].equals(GEO["state"])
        assert (case.frame != GEO).any(axis=1).sum() == 1          # one record changed
    assert {"move every column", "move to a sibling county"} <= set(GEO_CASES)


#: The default run's public-totals mechanisms: histograms (the cheapest to check), with the totals of a level
#: below the nation and with a national total and integer tables in turn; the slow run checks all four on every
#: change-one neighbour (``test_public_totals_releases_are_dp_on_every_change_one_neighbour``).
QUICK_GEO = ["histogram by state, state totals", "histogram integer, national total"]


@pytest.mark.parametrize("name", [n if n in QUICK_GEO else pytest.param(n, marks=pytest.mark.slow)
                                  for n in GEO_MECHANISMS])
def test_public_totals_releases_are_dp_for_change_one_neighbours(name):
    case = GEO_CASES["move every column" if "state totals" in name else "move to a sibling county"]
    _check_geo(GEO_MECHANISMS[name]({"epsilon": 1.0}), case, 1.0, QUICK_TRIALS, seed=31)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(GEO_MECHANISMS))
def test_public_totals_releases_meet_their_zcdp_claim_for_change_one_neighbours(name):
    """The zCDP calibration of the same releases (the default run checks their pure-DP form)."""
    case = GEO_CASES["move every column" if "state totals" in name else "move to a sibling county"]
    check_gaussian(GEO_MECHANISMS[name]({"rho": QUICK_RHO}), GEO, case, QUICK_RHO, QUICK_TRIALS, seed=32,
                   statistic=geo_outputs)


def _check_geo(mechanism, neighbour, epsilon, trials, seed):
    report = assert_dp(mechanism, GEO, neighbour, epsilon=epsilon, trials=trials, statistic=geo_outputs, rng=seed)
    assert report.charged_per_run == epsilon
    return report


@pytest.mark.slow
@pytest.mark.parametrize("case", list(GEO_CASES))
@pytest.mark.parametrize("name", list(GEO_MECHANISMS))
def test_public_totals_releases_are_dp_on_every_change_one_neighbour(name, case):
    _check_geo(GEO_MECHANISMS[name]({"epsilon": 1.0}), GEO_CASES[case], 1.0, SLOW_TRIALS, seed=33)


def _moved_loss(noise, measure: str) -> float:
    """The exact privacy loss of one noisy cell whose count moves by one: ``max_z log p(z) / p(z - 1)`` for
    discrete Laplace noise (pure), ``1 / (2 sigma**2)`` of the discrete Gaussian (its exact Renyi divergence of
    an integer shift of one, per unit of alpha)."""
    if measure == "epsilon":
        z = np.arange(-200, 201)
        return float(np.max(np.log(noise.pmf(z)) - np.log(noise.pmf(z - 1))))
    return 1.0 / (2.0 * float(noise.sigma2))


@pytest.mark.parametrize("privacy", [{"epsilon": 1.0}, {"rho": 0.5}])
def test_the_two_cell_move_costs_exactly_the_charge(privacy):
    # The worst change-one neighbour of a histogram by geography with public totals: one record moves from
    # one cell to another, in every level (two cells of one region, or of two sibling regions). Its exact loss
    # is the sum over levels of the two cells' losses: it must be the loss charged (add/remove noise gave twice).
    measure, amount = next(iter(privacy.items()))
    with pdp.budget(**{measure: 10}) as b:
        r = geo_histogram(privacy, **STATES)(GEO, np.random.default_rng(0))
    moved = sum(2 * _moved_loss(n, measure) for n in r.noises if n is not None)
    assert b.spent == amount and moved == pytest.approx(amount, rel=1e-12)
    # the same for the marginals by geography: every measured marginal of every level moves by two cells
    with pdp.budget(**{measure: 10}) as b:
        m = geo_marginals(privacy, **STATES)(GEO, np.random.default_rng(0))
    moved = sum(2 * _moved_loss(n, measure) for p in m.geography.plans if p is not None
                for n in p.noises if n is not None)
    assert b.spent == amount and moved <= amount * (1 + 1e-12) and moved >= amount * 0.99
