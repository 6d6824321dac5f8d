"""Publishable tables from one set of unconstrained table estimates: the core of ``nonnegative=`` and
``integer=`` (post-processing only).

:func:`publish_tables` takes what any consistent table estimate provides (the union domain's sizes,
the tables' axes, their estimates and the cell variance of each table) and returns the non-negative
joint whose tables are published (:mod:`~pandas_dp.algorithms.marginals.nonnegative`) and, for
integers, the rounded joint of its record model (:mod:`~pandas_dp.algorithms.marginals.sample`). It
reads no result object, so it can run on the tables of one region as on a flat table set.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pandas_dp.algorithms.marginals.nonnegative import _total, project_nonnegative, table_of
from pandas_dp.algorithms.marginals.sample import fit_model, integer_joint

__all__ = ["WEIGHT_VARIANCE_FLOOR", "MAX_WEIGHT_RATIO", "Publication", "table_weights", "publish_tables"]

#: The smallest cell variance the projection weighs a table by (counts**2: a standard error of 0.1 count)
#: and the largest ratio between two tables' weights.
WEIGHT_VARIANCE_FLOOR = 1e-2
MAX_WEIGHT_RATIO = 1e3


@dataclass(frozen=True)
class Publication:
    """The joints behind published tables.

    Attributes
    ----------
    joint : ndarray
        The published joint: float64 on a dyadic grid (non-negative) or int64 (integer).
    nonnegative_joint : ndarray
        The projection's joint (``joint`` itself when not integer).
    params : dict
        How they were computed (weights, solver steps, grid, the record model's fit).
    steps : tuple of str
        The post-processing steps, in words.
    """

    joint: np.ndarray
    nonnegative_joint: np.ndarray
    params: dict[str, Any] = field(default_factory=dict)
    steps: tuple[str, ...] = ()


def table_weights(variances: Sequence[float]) -> list[float]:
    """One over each table's cell variance, the variance floored at :data:`WEIGHT_VARIANCE_FLOOR` and at the
    largest over :data:`MAX_WEIGHT_RATIO`: a table known to a tenth of a count is as good as exact for
    the weighting, and a bounded spread of the weights bounds the problem's conditioning, hence the
    solver's steps."""
    floor = max(WEIGHT_VARIANCE_FLOOR, max(float(v) for v in variances) / MAX_WEIGHT_RATIO)
    return [1.0 / max(float(v), floor) for v in variances]


def publish_tables(shape: Sequence[int], tables: Sequence[Sequence[int]], estimates: Sequence[np.ndarray],
                   variances: Sequence[float], *, integer: bool = False) -> Publication:
    """The non-negative (``integer=False``) or non-negative integer joint whose tables are published.

    Parameters
    ----------
    shape : sequence of int
        Sizes of the union domain's axes.
    tables : sequence of sequence of int
        Each table's axes, increasing.
    estimates : sequence of ndarray
        Each table's unconstrained estimate, shaped ``[shape[a] for a in table]``.
    variances : sequence of float
        The variance of one cell of each table (its weight: :func:`table_weights`).
    integer : bool
        Round to integers: the record model (IPF on the projection's support) scaled to the rounded
        total, controlled-rounded down its prefix tables with the largest table's axes leading.

    Returns
    -------
    Publication
    """
    axes = [tuple(int(a) for a in t) for t in tables]
    weights = table_weights(variances)
    fit = project_nonnegative(shape, axes, estimates, weights)
    params: dict[str, Any] = {"method": "weighted least squares onto the tables of a non-negative joint",
                              "weights": "1 / cell variance of each table (floored)", "table_weights": weights,
                              "solver_iterations": fit.iterations, "solver_step": fit.step, "grid": fit.grid}
    steps: tuple[str, ...] = ("non-negative weighted least squares over the tables of one joint (consistent)",)
    if not integer:
        return Publication(joint=fit.joint, nonnegative_joint=fit.joint, params=params, steps=steps)
    published = [table_of(fit.joint, a) for a in axes]
    model = fit_model(shape, axes, published, support=fit.joint > 0)
    total = int(round(_total(fit.joint)))
    largest = max(axes, key=lambda a: (math.prod(int(shape[k]) for k in a), -axes.index(a)))
    joint = integer_joint(model.joint, total, first=largest)
    params.update({"rounding": "controlled rounding of the record model's joint (largest remainder)",
                   "model_sweeps": model.sweeps, "model_error": model.error})
    steps += ("controlled rounding of the maximum-entropy (IPF) joint to integers",)
    return Publication(joint=joint, nonnegative_joint=fit.joint, params=params, steps=steps)
