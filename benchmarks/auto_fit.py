"""Fit ``method="auto"``'s rule to the evidence, with leave-one-dataset-out validation.

The evidence (``benchmarks/auto_evidence.py``) gives, for many cases (a DPBench
shape at a scale, on a domain, at an epsilon) and every workload, the error of
every candidate configuration. The rule ``auto`` uses is, per (dimensions,
workload), a short list of pieces over ``log10(N * epsilon)`` (DPBench's
*scale*; ``N`` is the number of rows): below a bound, a configuration.

Fitting. A case's *ratio* for a configuration is its error over the best
configuration's error in that case. A piece costs
``sum log(ratio) + 2 sum max(0, log(ratio / 1.3))`` over its cases (the mean log
ratio, plus a penalty above 1.3x, the issue's worst-case target); bounds are
taken from a grid of half decades, at most :data:`MAX_PIECES` pieces, and every
piece gets the configuration of least cost. With few cases per piece the
fit would follow noise, so a piece needs :data:`MIN_CASES` cases.

Validation. Leave one dataset (shape) out: fit on the cases of the other
datasets, apply to the held-out one's cases (every scale, domain and epsilon),
and report its ratios. The rule in ``pandas_dp.releases.data_dependent`` is
the fit on all datasets; ``tests/test_auto.py`` checks that it is.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["prepare", "fit_rule", "apply_rule", "leave_one_dataset_out", "CUTS", "MAX_PIECES", "MIN_CASES",
           "PENALTY_ABOVE"]

#: Candidate bounds of the pieces: log10(N epsilon) on half decades.
CUTS = tuple(np.arange(1.5, 7.51, 0.5).round(1))
#: Most pieces per (dimensions, workload).
MAX_PIECES = 3
#: Fewest cases in a piece.
MIN_CASES = 12
#: Ratios above this are penalised twice more (the issue's "never above 1.3x").
PENALTY_ABOVE = 1.3


def prepare(evidence: pd.DataFrame, configs: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Cases x configurations of ratios to the best, with the case's feature ``lscale = log10(N eps)``.

    Returns a frame indexed by case (``dataset, domain, scale, epsilon, workload, dims``) with one
    column per configuration (its ratio) and the column ``lscale``. Only ``configs`` (all if None)
    compete; the best is taken among them.
    """
    e = evidence if configs is None else evidence[evidence["config"].isin(configs)]
    key = ["dims", "workload", "dataset", "domain", "scale", "epsilon"]
    wide = e.pivot_table(index=key, columns="config", values="error", aggfunc="mean")
    ratios = wide.div(wide.min(axis=1), axis=0)
    total = e.groupby(key)["total"].first()
    scale = np.log10(total * total.index.get_level_values("epsilon"))
    return ratios.assign(lscale=scale.reindex(ratios.index).to_numpy())


def _loss(ratios: np.ndarray) -> np.ndarray:
    lr = np.log(np.where(np.isnan(ratios), 1e6, ratios))
    return lr + 2.0 * np.maximum(0.0, lr - np.log(PENALTY_ABOVE))


def fit_rule(cases: pd.DataFrame, *, max_pieces: int = MAX_PIECES, min_cases: int = MIN_CASES
             ) -> tuple[tuple[float, str], ...]:
    """The least-cost rule ``((bound, config), ..., (inf, config))`` over the cases (module notes).

    Ties go to fewer pieces, then to the configuration named first alphabetically.
    """
    configs = [c for c in cases.columns if c != "lscale"]
    f = cases["lscale"].to_numpy()
    cost = _loss(cases[configs].to_numpy())                                  # cases x configs
    bounds = [c for c in CUTS if f.min() < c < f.max()]
    best: tuple[float, tuple] = (np.inf, ())
    for pieces in range(1, max_pieces + 1):
        for cut in _combinations(bounds, pieces - 1):
            edges = (-np.inf, *cut, np.inf)
            total, rule = 0.0, []
            ok = True
            for lo, hi in zip(edges[:-1], edges[1:]):
                inside = (f >= lo) & (f < hi)
                if inside.sum() < min_cases:
                    ok = False
                    break
                piece = cost[inside].sum(axis=0)
                j = int(np.argmin(piece))
                total += float(piece[j])
                rule.append((float(hi), configs[j]))
            if ok and total < best[0] - 1e-9:
                best = (total, tuple(rule))
    return _merge(best[1])


def _combinations(values: list[float], k: int) -> list[tuple[float, ...]]:
    import itertools

    return list(itertools.combinations(values, k))


def _merge(rule: tuple[tuple[float, str], ...]) -> tuple[tuple[float, str], ...]:
    """Join neighbouring pieces with the same configuration."""
    out: list[tuple[float, str]] = []
    for bound, config in rule:
        if out and out[-1][1] == config:
            out[-1] = (bound, config)
        else:
            out.append((bound, config))
    return tuple(out)


def apply_rule(rule: tuple[tuple[float, str], ...], lscale: np.ndarray) -> np.ndarray:
    """The configuration the rule gives each ``log10(N eps)``."""
    bounds = np.array([b for b, _ in rule])
    names = np.array([c for _, c in rule], dtype=object)
    return names[np.searchsorted(bounds, np.asarray(lscale), side="right")]


def leave_one_dataset_out(cases: pd.DataFrame, **kwargs: int) -> pd.DataFrame:
    """Per case: the held-out rule's configuration and its ratio (fit on the other datasets)."""
    rows = []
    datasets = cases.index.get_level_values("dataset")
    for name in sorted(set(datasets)):
        train, test = cases[datasets != name], cases[datasets == name]
        rule = fit_rule(train, **kwargs)
        chosen = apply_rule(rule, test["lscale"].to_numpy())
        ratio = np.array([test[c].iloc[i] for i, c in enumerate(chosen)])
        rows.append(pd.DataFrame({"chosen": chosen, "ratio": ratio, "lscale": test["lscale"].to_numpy()},
                                 index=test.index))
    return pd.concat(rows)
