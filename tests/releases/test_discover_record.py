"""Key discovery records the rule it used (issue 41, item 6).

Under the truncated mixture a label takes ``(k, T)`` or, with probability ``mu``, ``(k - 1, T - 1)``
and passes at its own pair's threshold: released counts go down to ``T - 1``. The result's params carry
both pairs and ``mu``, its ``missing`` text and post-processing step state that rule, and the numbers
the method page and the module docstring quote (``delta_k``, ``delta_{k-1}``) are the code's.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd

import pandas_dp as pdp
import pandas_dp.releases.discover as discover_module
from pandas_dp.privacy.selection import truncated_mixture

ROOT = Path(__file__).resolve().parents[2]


def test_the_mixture_records_both_pairs_mu_and_the_rule_that_released_counts_of_t_minus_one():
    frame = pd.DataFrame({"w": np.repeat(np.arange(2000), 14)})  # 2,000 labels of 14 rows
    with pdp.budget(epsilon=1, delta=1e-6):
        h = frame.dp.histogram("w", categories="discover", epsilon=1, delta=1e-6, rng=np.random.default_rng(0))
    p = h.params
    k, threshold, mu = truncated_mixture(Fraction(1), Fraction(1, 10**6))
    assert (p["noise_bound"], p["threshold"]) == (k, threshold) == (14, 15)
    assert (p["lower_noise_bound"], p["lower_threshold"]) == (k - 1, threshold - 1) == (13, 14)
    assert Fraction(p["lower_pair_probability"]) == mu > 0
    counts = h.counts.to_numpy()
    assert counts.min() >= p["lower_threshold"] and (counts == p["lower_threshold"]).sum() > 0  # released at T - 1
    missing = p["missing"]
    assert "(k, T) = (14, 15)" in missing and "(k - 1, T - 1) = (13, 14)" in missing
    assert "released counts are at least 14" in missing and f"mu = {float(mu):.6g}" in missing
    assert "may be missing" in missing and "below about 15" not in missing
    assert any(">= 14 for the labels that took the lower pair" in step for step in h.post_processing)


def test_without_a_lower_pair_the_record_keeps_one_threshold():
    frame = pd.DataFrame({"w": np.repeat(np.arange(50), 30), "u": np.arange(1500)})
    with pdp.budget(epsilon=1, delta=1e-6):
        h = frame.dp.histogram("w", categories="discover", epsilon=1, delta=1e-6, privacy_unit="u",
                               max_cells=2, max_rows_per_cell=1, rng=np.random.default_rng(0))
    assert "lower_threshold" not in h.params and "lower_noise_bound" not in h.params
    assert f"below about {h.params['threshold']} (the threshold)" in h.params["missing"]


def _tail(scale: float, bound: int, per_cell: int) -> float:
    """An independent float ``P(Z > k - r)`` for ``Z`` discrete Laplace of scale ``t`` truncated at ``+-k``."""
    z = np.arange(-bound, bound + 1)
    pmf = np.exp(-np.abs(z) / scale)
    return float(pmf[z > bound - per_cell].sum() / pmf.sum())


def _quoted(text: str, name: str) -> list[str]:
    return re.findall(re.escape(name) + r" = ([0-9.]+e-[0-9]+)", text)


def test_the_quoted_deltas_are_the_codes():
    k, threshold, mu = truncated_mixture(Fraction(1), Fraction(1, 10**6))
    exact = {"delta_k": _tail(1.0, k, 1), "delta_{k-1}": _tail(1.0, k - 1, 1)}
    # mu from the two tails (the code's mu is rounded down to a multiple of 2**-53)
    assert math.isclose(float(mu), (1e-6 - exact["delta_k"]) / (exact["delta_{k-1}"] - exact["delta_k"]),
                        rel_tol=1e-9)
    page = (ROOT / "docs" / "methods" / "discover.md").read_text()
    docstring = discover_module.__doc__ or ""
    for text in (page, docstring):
        for name, value in exact.items():
            quoted = _quoted(text, name)
            assert quoted, f"{name} not quoted"
            for number in quoted:
                digits = len(number.split("e")[0].replace(".", "")) - 1
                assert float(number) == float(f"{value:.{digits}e}"), (name, number, value)
    assert "`mu = 0.9325`" in page and f"{float(mu):.4f}" == "0.9325"
