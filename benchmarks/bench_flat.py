"""Speed and memory of the flat (identity) histogram against the floor, ``np.bincount``, in the same run.

Run: ``python -m benchmarks.bench_flat [--rows 10000000] [--repeat 5] [--bins 1024 65536 1048576] [--no-peers]
[--no-breakdown] [--no-small]``

For 10^7 rows and 2^10 / 2^16 / 2^20 bins, one row per column and domain:

* ``int64`` and ``float64`` columns (integers uniform on the bins; floats
  uniform on ``[0, bins)``), and a ``Categorical`` column of string labels;
* the domain given as ``bins=int`` with ``range=(0, bins)`` ("range"), as an
  explicit edge array ``np.arange(bins + 1)`` ("edges"), and for the
  categorical column as ``categories=`` (its public codebook, "categories");
  one extra row bins floats on ``range=(0, 1)`` edges that are not integers
  ("range 0-1"), which costs a correction against the exact edges.

Columns: the best-of-``repeat`` time of ``np.bincount`` of the *precomputed*
codes (int64; the floor: counting alone), of ``df.dp.histogram`` (secure
noise, the production default: domain set-up, coding, counting, noise, the
result) and of ``value_counts`` (the plain pandas histogram), the ratios to
``np.bincount``, and the peak memory traced (``tracemalloc``) beyond the input
of the release ("peak"), of its counting step alone (the engine's
``bin_counts``, "count") and of ``np.bincount`` (its output array), with the
ratios of the first two to the third.
Targets (issue 18): release within 2x ``np.bincount``; peak memory within
1.5x of ``np.bincount``'s. With ``--peers`` (default), diffprivlib's
``tools.histogram`` and OpenDP's ``find_bin >> count_by_categories >>
laplace`` (numpy input) are timed on the same columns where they install
(``pip install diffprivlib "scikit-learn<1.7" opendp`` into the environment;
they are not dependencies of pandas_dp); a peer that takes more than
``--peer-cap / 100`` seconds on 1% of the rows is shown with that time as a
lower bound of its full time (``>``). The machine is shared: read ratios
from one run, not absolute times across runs.

With ``--breakdown`` (default), the release at the largest ``bins`` is split
into its steps, each timed (best of ``repeat``) and traced on its own: the
public domain (``make_grid``), the count (``bin_counts``), the mechanism
(the identity method's ``release``: noise added in place into the counts, the
result built around them), and the rest of the call (budget, ledger, checks:
the whole release minus the three steps).

With ``--small`` (default), the per-release overhead: ``--small-releases``
releases of a 100-row frame (5 bins, seeded noise) inside one budget, best of
``repeat``, as microseconds a release and releases a second. At that size the
count and the noise are negligible, so this is the cost of the call itself
(checks, domain, budget and ledger, the frozen result): what ``assert_dp``'s
thousands of small runs pay.
"""

from __future__ import annotations

import argparse
import warnings
from typing import Any, Callable

import numpy as np
import pandas as pd

import pandas_dp as pdp
from benchmarks._timing import best_of, traced_peak
from pandas_dp.domain.grid import make_grid
from pandas_dp.engines.pandas.counts import bin_counts
from pandas_dp.privacy.loss import pure
from pandas_dp.releases.methods import METHODS, plan_method


def diffprivlib_histogram(values: np.ndarray, bins: Any, rng: Any) -> Callable[[], Any] | None:
    """diffprivlib's ``tools.histogram`` on the column, or None when it is not installed."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from diffprivlib.tools import histogram
    except Exception:  # noqa: BLE001 - not installed, or incompatible with this numpy
        return None

    def run() -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return histogram(values, epsilon=1.0, bins=bins, range=rng)
    return run


def opendp_histogram(values: np.ndarray, edges: np.ndarray) -> Callable[[], Any] | None:
    """OpenDP: bin index of each value, counts per bin index, Laplace noise (numpy in), or None."""
    try:
        import opendp.prelude as dp
    except Exception:  # noqa: BLE001
        return None
    dp.enable_features("contrib")
    n = edges.size - 1
    atom = dp.i64 if values.dtype.kind == "i" else dp.f64
    inner = edges[1:-1].astype(values.dtype).tolist()
    meas = (dp.vector_domain(dp.atom_domain(T=atom, nan=False) if atom == dp.f64 else dp.atom_domain(T=atom)),
            dp.symmetric_distance()) >> dp.t.then_find_bin(edges=inner) >> dp.t.then_count_by_categories(
        categories=list(range(n)), null_category=False) >> dp.m.then_laplace(scale=1.0)
    return lambda: meas(values)


def _cases(rows: int, bins: int, rng: np.random.Generator) -> list[tuple[str, str, pd.DataFrame, dict, np.ndarray, Any]]:
    """(column kind, spec, frame, release keywords, precomputed int64 codes, peer data)."""
    ints = rng.integers(0, bins, rows)
    floats = rng.random(rows) * bins
    float_codes = np.floor(floats).astype(np.int64)
    unit = rng.random(rows)
    labels = pd.Index([f"c{i:07d}" for i in range(bins)])
    cat = pd.DataFrame({"x": pd.Categorical.from_codes(ints, dtype=pd.CategoricalDtype(labels))})
    i_frame, f_frame, u_frame = (pd.DataFrame({"x": v}) for v in (ints, floats, unit))
    edges = np.arange(bins + 1)
    return [
        ("int64", "range", i_frame, dict(bins=bins, range=(0, bins)), ints, ("range", ints)),
        ("int64", "edges", i_frame, dict(bins=edges), ints, ("edges", ints)),
        ("float64", "range", f_frame, dict(bins=bins, range=(0, bins)), float_codes, ("range", floats)),
        ("float64", "edges", f_frame, dict(bins=edges), float_codes, ("edges", floats)),
        ("float64", "range 0-1", u_frame, dict(bins=bins, range=(0.0, 1.0)),
         np.minimum(np.floor(unit * bins).astype(np.int64), bins - 1), None),
        ("category", "categories", cat, dict(categories=labels), ints, None),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--bins", type=int, nargs="+", default=[2**10, 2**16, 2**20])
    parser.add_argument("--no-peers", dest="peers", action="store_false")
    parser.add_argument("--no-breakdown", dest="breakdown", action="store_false")
    parser.add_argument("--no-small", dest="small", action="store_false")
    parser.add_argument("--small-releases", type=int, default=1000)
    parser.add_argument("--peer-cap", type=float, default=60.0,
                        help="seconds: a peer whose run on 1%% of the rows takes more than cap/100 is shown "
                             "with that time as a lower bound (marked >)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    budget = pdp.budget(1e12)
    print(f"{args.rows:,} rows, best of {args.repeat}; ratios to np.bincount of the precomputed int64 codes "
          f"in the same run; peak = tracemalloc MiB beyond the input")
    head = (f"{'column':>8} {'bins':>9} {'spec':>10} {'bincount':>9} {'dp.hist':>9} {'ratio':>6} {'vcounts':>9} "
            f"{'ratio':>6} {'peak':>7} {'count':>7} {'bc peak':>7} {'ratio':>6} {'ratio':>6}")
    if args.peers:
        head += f" {'diffprivlib':>11} {'ratio':>6} {'opendp':>8} {'ratio':>6}"
    print(head)
    for bins in args.bins:
        for kind, spec, frame, kwargs, codes, peer in _cases(args.rows, bins, rng):
            def release() -> Any:
                with budget:
                    return frame.dp.histogram("x", epsilon=1.0, **kwargs)

            t_bc = best_of(lambda: np.bincount(codes, minlength=bins), args.repeat)
            t_dp = best_of(release, args.repeat)
            t_vc = best_of(lambda: frame["x"].value_counts(), args.repeat)
            mem = traced_peak(release)
            grid = make_grid(frame, ["x"], **kwargs)
            mem_count = traced_peak(lambda: bin_counts(frame, grid))
            mem_bc = traced_peak(lambda: np.bincount(codes, minlength=bins))
            line = (f"{kind:>8} {bins:>9,} {spec:>10} {t_bc:>8.3f}s {t_dp:>8.3f}s {t_dp / t_bc:>5.2f}x "
                    f"{t_vc:>8.3f}s {t_vc / t_bc:>5.2f}x {mem:>7.2f} {mem_count:>7.2f} {mem_bc:>7.2f} "
                    f"{mem / mem_bc:>5.1f}x {mem_count / mem_bc:>5.1f}x")
            if args.peers:
                line += _peers(peer, bins, t_bc, max(1, min(args.repeat, 2)), args.peer_cap)
            print(line, flush=True)
    print(f"(input column: {args.rows * 8 / 2**20:.0f} MiB of int64/float64; the machine may be shared: "
          f"compare ratios within one run)")
    if args.breakdown:
        _breakdown(args.rows, max(args.bins), args.repeat, budget)
    if args.small:
        _small_frames(args.small_releases, args.repeat)


def _small_frames(releases: int, repeat: int) -> None:
    """Per-release overhead: ``releases`` histograms of a 100-row frame in one budget (best of ``repeat``)."""
    frame = pd.DataFrame({"x": np.random.default_rng(0).integers(0, 5, 100)})

    def loop() -> None:
        with pdp.budget(1e12):
            for i in range(releases):
                frame.dp.histogram("x", bins=range(6), epsilon=1.0, rng=np.random.default_rng(i))

    t = best_of(loop, repeat)
    print(f"small frames: {releases:,} releases of 100 rows x 5 bins in one budget: "
          f"{t / releases * 1e6:,.0f} us a release, {releases / t:,.0f} releases/s")


def _breakdown(rows: int, bins: int, repeat: int, budget: Any) -> None:
    """Time (best of ``repeat``) and traced peak (MiB) of each step of the release at ``bins`` bins."""
    print(f"steps of the release at {bins:,} bins (time, peak MiB beyond the input; "
          f"rest = release - domain - count - mechanism):")
    loss = pure(1.0)
    for kind, spec, frame, kwargs, codes, _ in _cases(rows, bins, np.random.default_rng(1)):
        grid = make_grid(frame, ["x"], **kwargs)
        planned = plan_method("identity", grid, loss, {})
        mechanism = METHODS["identity"].release
        counts = bin_counts(frame, grid)

        def release() -> Any:
            with budget:
                return frame.dp.histogram("x", epsilon=1.0, **kwargs)

        def mechanism_step() -> Any:   # the mechanism owns (overwrites) its counts: a fresh copy each run
            return mechanism(fresh.pop(), grid, planned, rng=None, nonnegative=False, loss=loss)

        steps = {"domain": lambda: make_grid(frame, ["x"], **kwargs), "count": lambda: bin_counts(frame, grid),
                 "mechanism": mechanism_step, "release": release}
        times, peaks = {}, {}
        for name, fn in steps.items():
            fresh = [counts.copy() for _ in range(repeat + 2)]
            fn()   # warm: the noise tables of this scale are built once per process
            times[name] = best_of(fn, repeat)
            peaks[name] = traced_peak(fn)
        t_bc = best_of(lambda: np.bincount(codes, minlength=bins), repeat)
        rest = times["release"] - times["domain"] - times["count"] - times["mechanism"]
        print(f"{kind:>8} {spec:>10}: " + "  ".join(f"{n} {times[n] * 1e3:.1f} ms / {peaks[n]:.2f}"
                                                   for n in ("domain", "count", "mechanism"))
              + f"  rest {rest * 1e3:.1f} ms  release {times['release'] * 1e3:.1f} ms / {peaks['release']:.2f}"
              f"  (bincount {t_bc * 1e3:.1f} ms)", flush=True)


def _peers(peer: Any, bins: int, t_bc: float, repeat: int, cap: float) -> str:
    """Peer timings on the same column. A peer is first run on 1% of the rows; when that alone takes
    more than ``cap / 100`` seconds it is not run on the whole column (it would take minutes): its time
    on 1% of the rows is shown with ``>`` as a lower bound of the full time."""
    if peer is None:
        return f" {'-':>11} {'':>6} {'-':>8} {'':>6}"
    spec, values = peer
    edges = np.arange(bins + 1)
    out = ""
    for name, width in (("diffprivlib", 11), ("opendp", 8)):
        def make(v: np.ndarray) -> Callable[[], Any] | None:
            if name == "diffprivlib":
                return diffprivlib_histogram(v, bins if spec == "range" else edges, (0, bins) if spec == "range" else None)
            return opendp_histogram(v, edges)

        small = make(values[: max(values.size // 100, 1)])
        if small is None:
            out += f" {'n/a':>{width}} {'':>6}"
            continue
        t_small = best_of(small, 1)
        if t_small > cap / 100:
            t, mark = t_small, ">"
        else:
            t, mark = best_of(make(values), repeat), ""  # type: ignore[arg-type]
        out += f" {mark + format(t, '.2f') + 's':>{width}} {mark + format(t / t_bc, '.0f') + 'x':>6}"
    return out


if __name__ == "__main__":
    main()
