"""``rho=`` for ``method="dawa"`` (and, once registered, ``"ugrid"`` and ``"agrid"``): zCDP analyses.

The method is defined in :mod:`pandas_dp.releases.adaptive`; this module
re-registers it with both measures (:mod:`pandas_dp.algorithms.dawa.release`:
the partition stays pure at ``epsilon_1`` charged ``epsilon_1**2 / 2``; the
bucket hierarchy gets discrete Gaussian noise calibrated to its L2
sensitivity with the rest of ``rho``).

UGrid and AGrid have their zCDP side in the algorithms
(:mod:`pandas_dp.algorithms.grids`, "Under zCDP": a ``ZCDP`` loss gives every
level exact discrete Gaussian noise and the size rules ``sigma**2`` in place
of ``2 / epsilon**2``), but ``histogram(method="ugrid" | "agrid")`` still
refuses ``rho=``: a method registered for zCDP must first be in the privacy
suite's 2-D ``rho`` cases (``tests/test_privacy_mechanisms.py``). Adding
``"ugrid"`` and ``"agrid"`` to :data:`ZCDP_METHODS` is then the whole change
(their parameters are renamed below).

Under ``rho=`` the parameters that name a loss say which: DAWA's
``strategy_rho`` and the partition's ``partition_epsilon`` with its
``partition_rho`` (its charge, ``epsilon_1**2 / 2``); a grid's ``total_rho``
and ``level_rhos``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from pandas_dp.releases import adaptive as _adaptive  # noqa: F401  (registers the pure methods first)
from pandas_dp.releases.histogram import BOTH_MEASURES, METHODS, Histogram, register_method

__all__ = ["ZCDP_METHODS"]

#: The adaptive methods registered for zCDP here.
ZCDP_METHODS = ("dawa",)

#: Pure-named loss parameters and their names under zCDP.
_RENAMED = {"total_epsilon": "total_rho", "level_epsilons": "level_rhos", "strategy_epsilon": "strategy_rho"}


def _zcdp_params(release: Callable[..., Histogram]) -> Callable[..., Histogram]:
    """The release, with its loss parameters named by their measure under zCDP (pure: unchanged)."""
    def run(counts: Any, grid: Any, planned: Any, *, rng: Any, nonnegative: bool, loss: Any) -> Histogram:
        result = release(counts, grid, planned, rng=rng, nonnegative=nonnegative, loss=loss)
        if loss.measure != "zcdp":
            return result
        params = {_RENAMED.get(key, key): value for key, value in result.params.items()}
        part = getattr(planned.plan, "partition_loss", None)
        if part is not None:
            params["partition_rho"] = str(part.charged_as("zcdp").amount)
        return replace(result, params=params)
    run.__doc__ = release.__doc__
    return run


for _name in ZCDP_METHODS:
    _spec = METHODS[_name]
    register_method(replace(_spec, measures=BOTH_MEASURES, release=_zcdp_params(_spec.release)))
