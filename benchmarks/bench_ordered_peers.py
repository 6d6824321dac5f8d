"""Ordered table sets against the published code of ResidualPlanner+ and HDMM, in one run (issue 46).

Runs the ResidualPlanner+ repository's own comparison (``compute_rp_sov`` of
experiments/HDMM_baseline/journal/scalability_kron_comparison.py; HDMM's ``DefaultKron`` = OPT_X and
``Marginals`` = OPT_M templates) for Prefix^d and AllRange^d over n = 64, d = 2..5, and prints this
library's plan for the same workloads (``benchmarks.bench_ordered``) beside it. Benchmark-only: the
peers' code is imported from a checkout, never installed into the project.

Set-up (a separate venv; their code needs numpy < 2 and a cvxpy of that era)::

    python -m venv /tmp/rpvenv && /tmp/rpvenv/bin/pip install "numpy<2" "scipy<1.14" "cvxpy<1.6" \\
        "pandas<2.3" gurobipy
    # a checkout of cmla-psu/ResidualPlannerPlus with dpcomp-org/hdmm (its submodule) at ./hdmm,
    # plus resplan/parameter.py holding "options = {}" (their untracked Gurobi licence file);
    # HDMM's matrix.py calls np.abs on an object that refuses ufuncs under numpy >= 1.25:
    # replace "np.abs(self)" by "abs(self)" in EkteloMatrix.sensitivity.
    /tmp/rpvenv/bin/python benchmarks/bench_ordered_peers.py /path/to/ResidualPlannerPlus

Measured (29 November 2026, one trial each; their optimisers start at random points, so RP+ and OPT_X
move between runs: the repository's own CSV has RP+ 1172.2 and 677.3 at d = 5), RMSE per query at
rho = 1/2 (RP+'s ``sum p / sigma**2 = 1``; HDMM's losses as its templates report them, L1-normalised
strategies):

    P d=2: OPT_X 14.29  OPT_M 14.62  RP+ 15.40     this library 5.78
    P d=3: OPT_X 53.58  OPT_M 55.92  RP+ 60.43     13.91
    P d=4: OPT_X 201.78 OPT_M 213.86 RP+ 237.16    33.44
    P d=5: OPT_X 759.53 OPT_M 818.36 RP+ 930.66    80.41
    R d=2: OPT_X 18.42  OPT_M 13.56  RP+ 14.03     6.96
    R d=3: OPT_X 86.38  OPT_M 49.94  RP+ 52.53     18.36
    R d=4: OPT_X 339.36 OPT_M 184.02 RP+ 196.73    48.42
    R d=5: OPT_X 1332.99 OPT_M 682.27 RP+ 736.76   127.74
"""

from __future__ import annotations

import os
import sys

import numpy as np


def main(checkout: str) -> None:
    sys.path[:0] = [os.path.join(checkout, "hdmm", "src"), checkout,
                    os.path.join(checkout, "experiments", "HDMM_baseline", "journal")]
    from hdmm import templates, workload  # type: ignore[import-not-found]
    from resplan.ResPlan import ResPlanSum  # type: ignore[import-not-found]
    from resplan.utils import prefix_workload, range_workload  # type: ignore[import-not-found]
    import scalability_kron_comparison as published  # type: ignore[import-not-found]

    n = 64
    for basis in ("P", "R"):
        for d in range(2, 6):
            one = workload.Prefix(n) if basis == "P" else workload.AllRange(n)
            kron = workload.Kronecker([one] * d)
            queries = n ** d if basis == "P" else (n * (n + 1) // 2) ** d
            np.random.seed(0)
            opt_x = templates.DefaultKron([n] * d).optimize(kron)
            opt_m = templates.Marginals([n] * d, approx=True).optimize(kron)
            system = ResPlanSum([n] * d, [basis] * d)
            system.input_mech(tuple(range(d)))
            system.get_noise_level()
            matrix = prefix_workload(n) if basis == "P" else range_workload(n)
            rp = published.compute_rp_sov(system, {i: matrix for i in range(d)}, tuple(range(d)))
            print(f"{basis} d={d}: OPT_X {np.sqrt(opt_x / queries):.2f}  OPT_M {np.sqrt(opt_m / queries):.2f}  "
                  f"RP+ {np.sqrt(rp / queries):.2f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
