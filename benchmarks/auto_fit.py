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
taken from a grid of quarter decades, at most :data:`MAX_PIECES` pieces, and every
piece gets the configuration of least cost. With few cases per piece the
fit would follow noise, so a piece needs :data:`MIN_CASES` cases.

Validation. Leave one dataset (shape) out: fit on the cases of the other
datasets, apply to the held-out one's cases (every scale, domain and epsilon),
and report its ratios. The rule in ``pandas_dp.releases.methods.auto_rule`` is
the fit on all datasets; ``tests/test_auto.py`` checks that it is.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["prepare", "fit_rule", "apply_rule", "ratio_of", "leave_one_dataset_out", "CUTS", "MAX_PIECES", "MIN_CASES",
           "PENALTY_ABOVE", "FEATURE_CUTS", "MIN_SPLIT_CASES", "with_features", "fit_splits", "apply_splits",
           "family_of", "held_out_splits", "config_columns",
           "fit_feature_tree", "apply_feature_tree", "held_out_tree"]

#: Candidate bounds of the pieces: log10(N epsilon) on quarter decades (the evidence's scales step by half
#: decades, so every measured scale has a bound on either side of it).
CUTS = tuple(np.arange(1.25, 7.76, 0.25).round(2))
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


def ratio_of(cases: pd.DataFrame, chosen: np.ndarray) -> np.ndarray:
    """Each case's ratio for the configuration ``chosen`` names in its row (one array lookup)."""
    columns = cases.columns.get_indexer(pd.Index(chosen))
    return cases.to_numpy(dtype=float)[np.arange(len(cases)), columns]


def leave_one_dataset_out(cases: pd.DataFrame, **kwargs: int) -> pd.DataFrame:
    """Per case: the held-out rule's configuration and its ratio (fit on the other datasets)."""
    rows = []
    datasets = cases.index.get_level_values("dataset")
    for name in sorted(set(datasets)):
        train, test = cases[datasets != name], cases[datasets == name]
        rule = fit_rule(train, **kwargs)
        chosen = apply_rule(rule, test["lscale"].to_numpy())
        ratio = ratio_of(test, chosen)
        rows.append(pd.DataFrame({"chosen": chosen, "ratio": ratio, "lscale": test["lscale"].to_numpy()},
                                 index=test.index))
    return pd.concat(rows)


# --------------------------------------------------------------- one feature threshold per piece

#: Candidate thresholds of a feature (``top_share``: the share of the noisy total in the densest coarse block).
FEATURE_CUTS = tuple(np.arange(0.1, 0.951, 0.05).round(2))
#: Fewest distinct cases on the side of a threshold where the configuration changes.
MIN_SPLIT_CASES = 6


def config_columns(rows: pd.DataFrame) -> list[str]:
    """The columns of ``rows`` that are configurations of ``auto`` (the rest are features)."""
    from pandas_dp.releases.methods.auto_rule import AUTO_CONFIGS

    return [c for c in rows.columns if c in AUTO_CONFIGS]


def with_features(cases: pd.DataFrame, features: pd.DataFrame) -> pd.DataFrame:
    """One row per (case, noisy draw): the case's ratios, the draw's ``lscale`` and features.

    ``cases`` is :func:`prepare`'s frame for one (dimensions, workload) (index ``dataset, domain,
    scale, epsilon``); ``features`` is ``benchmarks.auto_features.noisy_features()``.
    """
    key = ["dataset", "domain", "scale", "epsilon"]
    left = cases.drop(columns="lscale").reset_index()
    right = features.drop(columns=["total"])
    out = left.merge(right, on=key, how="inner")
    return out.set_index(key + ["draw"])


def fit_splits(rows: pd.DataFrame, rule: tuple[tuple[float, str], ...], feature: str = "top_share",
               min_cases: int = MIN_SPLIT_CASES) -> tuple[tuple[float, str, float, str], ...]:
    """Per piece of ``rule``: ``(bound, config below the threshold, threshold, config at or above it)``.

    Rows are (case, draw) from :func:`with_features`: the pieces are read at the draw's noisy
    ``lscale`` and the threshold at its noisy feature, so the fit sees the features' noise. Below
    the threshold the piece keeps its configuration of ``rule`` (the rule without features); at or
    above it, the configuration of least cost there. A piece gets no threshold (``inf``) unless one
    lowers its cost (:func:`_loss`, summed over rows) and at least ``min_cases`` distinct cases
    have their median draw at or above it. Ties go to the lower threshold.
    """
    tree = fit_feature_tree(rows, rule, (feature,), depth=1, min_cases=min_cases, sides=(">=",))
    return tuple((bound, default, splits[0][2], splits[0][3]) if splits else (bound, default, np.inf, default)
                 for bound, default, splits in tree)


def apply_splits(splits: tuple[tuple[float, str, float, str], ...], lscale: np.ndarray,
                 feature: np.ndarray) -> np.ndarray:
    """The configuration the split rule gives each (noisy ``lscale``, noisy feature)."""
    bounds = np.array([s[0] for s in splits])
    k = np.searchsorted(bounds, np.asarray(lscale), side="right")
    below = np.array([s[1] for s in splits], dtype=object)[k]
    at = np.array([s[3] for s in splits], dtype=object)[k]
    return np.where(np.asarray(feature) >= np.array([s[2] for s in splits])[k], at, below)


def _ratios_of(rows: pd.DataFrame, chosen: np.ndarray) -> np.ndarray:
    cols = {c: i for i, c in enumerate(rows.columns)}
    values = rows.to_numpy()
    return np.array([values[i, cols[c]] for i, c in enumerate(chosen)], dtype=np.float64)


def family_of(dataset: str) -> str:
    """Shape family for leave-one-family-out: the DPBench sets, or each synthetic kind."""
    return dataset.split("-")[1] if dataset.startswith("SYN") else "DPBench"      # SYN2-CITY-B: CITY


def held_out_splits(rows: pd.DataFrame, by: str = "dataset", feature: str = "top_share", *,
                    thresholds: bool = True) -> pd.DataFrame:
    """Leave one dataset (``by="dataset"``) or shape family (``by="family"``) out: refit both the pieces
    (on exact scales, as :func:`fit_rule`) and the thresholds on the rest, apply to the held-out draws.

    Returns one row per held-out case: the mean over its draws of the chosen configuration's ratio.
    ``thresholds=False`` refits the pieces only (the rule before the features, read at the noisy total).
    """
    def choose(train: pd.DataFrame, test: pd.DataFrame, configs: list[str]) -> np.ndarray:
        pieces = fit_rule(_exact_cases(train, configs))
        splits = (fit_splits(train, pieces, feature) if thresholds else
                  tuple((b, c, np.inf, c) for b, c in pieces))
        return apply_splits(splits, test["lscale"].to_numpy(), test[feature].to_numpy())

    return _held_out(rows, by, choose)


def _held_out(rows: pd.DataFrame, by: str, choose: Any) -> pd.DataFrame:
    """One fold per data set (``by="dataset"``) or shape family: ``choose(train, test, configs)`` gives the
    held-out rows' configurations; returns each held-out case's mean ratio over its draws."""
    datasets = rows.index.get_level_values("dataset")
    groups = datasets if by == "dataset" else pd.Index([family_of(d) for d in datasets])
    configs = config_columns(rows)
    out = []
    for name in sorted(set(groups)):
        train, test = rows[groups != name], rows[groups == name]
        r = pd.Series(_ratios_of(test[configs], choose(train, test, configs)), index=test.index)
        out.append(r.groupby(level=["dataset", "domain", "scale", "epsilon"]).mean().rename("ratio").to_frame())
    return pd.concat(out)


def _exact_cases(rows: pd.DataFrame, configs: list[str]) -> pd.DataFrame:
    """Back from draws to cases (ratios) with the median draw's lscale, for :func:`fit_rule`."""
    g = rows.groupby(level=["dataset", "domain", "scale", "epsilon"])
    return g[configs].first().assign(lscale=g["lscale"].median())


# ------------------------------------------------- a second feature: up to two thresholds per piece

def fit_feature_tree(rows: pd.DataFrame, rule: tuple[tuple[float, str], ...], features: tuple[str, ...],
                     depth: int = 2, min_cases: int = MIN_SPLIT_CASES, sides: tuple[str, ...] = (">=", "<")
                     ) -> tuple[tuple[float, str, tuple], ...]:
    """Per piece of ``rule``: ``(bound, default, splits)``, up to ``depth`` greedy thresholds, each on any of
    ``features`` and any of ``sides`` (``(feature, ">=" or "<", threshold, config)``, read in order).

    Each split takes the rows of the piece not taken by an earlier one, and is kept when it lowers their
    cost and ``min_cases`` distinct cases have their median draw on its side; ties go to the feature
    named first, then the lower threshold. :func:`fit_splits` is the case of one feature, ``depth=1`` and
    the side ``>=``.
    """
    configs = config_columns(rows)
    f = rows["lscale"].to_numpy()
    cost = _loss(rows[configs].to_numpy())
    case = pd.factorize(rows.index.droplevel("draw"))[0]
    values = {feat: rows[feat].to_numpy() for feat in features}
    medians = {feat: pd.Series(v).groupby(case).transform("median").to_numpy() for feat, v in values.items()}
    out, lo = [], -np.inf
    for bound, default in rule:
        region = (f >= lo) & (f < bound)
        j = configs.index(default)
        splits: list[tuple[str, str, float, str]] = []
        for _ in range(depth):
            best: tuple[float, tuple[str, str, float, str] | None] = (float(cost[region, j].sum()), None)
            for feat in features:
                v, med = values[feat], medians[feat]
                for t in FEATURE_CUTS:
                    for side in sides:
                        sel, msel = (v >= t, med >= t) if side == ">=" else (v < t, med < t)
                        taken = region & sel
                        if len(np.unique(case[taken & msel])) < min_cases:
                            continue
                        b = cost[taken].sum(axis=0)
                        k = int(np.argmin(b))
                        total = float(cost[region & ~sel, j].sum() + b[k])
                        if configs[k] != default and total < best[0] - 1e-9:
                            best = (total, (feat, side, float(t), configs[k]))
            if best[1] is None:
                break
            splits.append(best[1])
            feat, side, t, _ = best[1]
            region &= ~((values[feat] >= t) if side == ">=" else (values[feat] < t))
        out.append((float(bound), default, tuple(splits)))
        lo = bound
    return tuple(out)


def apply_feature_tree(tree: tuple[tuple[float, str, tuple], ...], rows: pd.DataFrame) -> np.ndarray:
    """The configuration :func:`fit_feature_tree`'s rule gives each row (noisy ``lscale`` and features)."""
    k = np.searchsorted(np.array([p[0] for p in tree]), rows["lscale"].to_numpy(), side="right")
    chosen = np.array([tree[i][1] for i in k], dtype=object)
    done = np.zeros(len(k), dtype=bool)
    for i, (_, _, splits) in enumerate(tree):
        for feat, side, t, config in splits:
            v = rows[feat].to_numpy()
            hit = (k == i) & ~done & ((v >= t) if side == ">=" else (v < t))
            chosen[hit] = config
            done |= hit
    return chosen


def held_out_tree(rows: pd.DataFrame, by: str, features: tuple[str, ...], depth: int = 2) -> pd.DataFrame:
    """:func:`held_out_splits` for :func:`fit_feature_tree` (pieces and thresholds refit without the fold)."""
    def choose(train: pd.DataFrame, test: pd.DataFrame, configs: list[str]) -> np.ndarray:
        return apply_feature_tree(fit_feature_tree(train, fit_rule(_exact_cases(train, configs)), features, depth),
                                  test)

    return _held_out(rows, by, choose)
