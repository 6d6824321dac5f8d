"""The privacy cost the marginals plan charges, and why it is not the paper's.

ResidualPlanner's cost ``p_A / (2 sigma**2)`` per residual (``p_A = prod (n_i - 1) / n_i``) holds
for continuous Gaussian noise with the residual's covariance. The integer analogue, isotropic
discrete Gaussian noise on the ``A``-marginal then projected, is only bounded by the marginal
measurement's ``1 / (2 sigma**2)`` (post-processing). On a two-cell domain the projection keeps
``d = y_0 - y_1 + Z_0 - Z_1`` (the difference of two discrete Gaussians), and a neighbour shifts
``d`` by one; the exact Renyi divergence of that shift is computed below from the pmf of ``d``
(a sum over the integers, in log space, truncated where the terms fall below ``exp(-700)``).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from scipy.special import logsumexp

from pandas_dp.algorithms.marginals.counting import closure_marginals
from pandas_dp.algorithms.marginals.plan import plan_residuals
from pandas_dp.algorithms.marginals.workload import make_workload
from pandas_dp.privacy.loss import Sensitivity, zcdp

ALPHAS = [1.001, 1.01, 1.5, 2.0, 3.0, 4.0, 10.0, 50.0]


def renyi_projected_two_cells(sigma2: float, alpha: float) -> float:
    """Exact D_alpha(d || d + 1) for d = Z_0 - Z_1, Z_i iid discrete Gaussian N_Z(0, sigma2)."""
    z = np.arange(-200, 201, dtype=np.float64)[:, None]
    k = np.arange(-100, 101, dtype=np.float64)[None, :]
    log_norm = logsumexp(-z[:, 0] ** 2 / (2 * sigma2))
    # log P(d = k) = logsumexp_z [log p(z) + log p(z - k)]; terms beyond |z| = 200 are below exp(-700)
    log_d = logsumexp(-(z ** 2 + (z - k) ** 2) / (2 * sigma2), axis=0) - 2 * log_norm
    p, q = log_d[1:], log_d[:-1]  # d and d + 1 on the same support
    return float(logsumexp(alpha * p + (1 - alpha) * q) / (alpha - 1))


@pytest.mark.parametrize("sigma2", [0.25, 0.5])
def test_projected_discrete_gaussian_exceeds_the_papers_cost(sigma2) -> None:
    paper = [a * 0.5 / (2 * sigma2) for a in ALPHAS]       # p_A = 1/2 on two cells
    exact = [renyi_projected_two_cells(sigma2, a) for a in ALPHAS]
    assert max(e / p for e, p in zip(exact, paper)) > 1.0005   # the paper's cost does not hold
    assert min(e / p for e, p in zip(exact, paper)) >= 1.0 - 1e-9


@pytest.mark.parametrize("sigma2", [0.25, 0.5, 1.0, 4.0])
def test_projected_discrete_gaussian_meets_the_cost_charged(sigma2) -> None:
    """The cost charged, alpha / (2 sigma**2), holds (post-processing of the marginal measurement)."""
    for a in ALPHAS:
        assert renyi_projected_two_cells(sigma2, a) <= a / (2 * sigma2) * (1 + 1e-9)


def test_charged_loss_is_the_sum_of_the_marginals_parts() -> None:
    w = make_workload([3, 4, 2, 5], [(0, 1), (1, 2, 3), (0, 3)])
    unit = Sensitivity.cells(cells=1, per_cell=3)  # a unit of at most 3 rows: every marginal moves <= 3
    plan = plan_residuals(w, loss=zcdp(Fraction(1, 5)), sensitivity=unit)
    rho = Fraction(0)
    for part, noise in zip(plan.losses, plan.noises):
        if noise is not None:
            # sigma_A**2 = Delta_2**2 / (2 rho_A): the discrete Gaussian mechanism's rho_A-zCDP
            assert part.amount == unit.l2_squared / (2 * noise.sigma2)
            rho += part.amount
    assert rho == plan.loss.amount <= Fraction(1, 5)


def test_neighbouring_rows_move_every_marginal_by_one_cell() -> None:
    """Add one row (in domain): every closure marginal changes in exactly one cell by 1 (L1 = L2**2 = 1).

    Add a row outside the domain of any workload attribute: no marginal changes.
    """
    w = make_workload([3, 2, 4], [(0, 1), (1, 2)])
    rng = np.random.default_rng(4)
    codes = [rng.integers(-1, n, 200) for n in w.sizes]
    base = closure_marginals(codes, w)
    for extra in ([2, 1, 3], [0, 0, 0], [1, -1, 2], [-1, 0, 0]):
        more = closure_marginals([np.append(c, e) for c, e in zip(codes, extra)], w)
        inside = all(e >= 0 for e in extra)
        for a in w.closure:
            diff = more[a] - base[a]
            assert np.abs(diff).sum() == (1 if inside else 0) and (diff ** 2).sum() == (1 if inside else 0)
