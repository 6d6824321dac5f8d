"""The rule of ``histogram(method="auto")``: a small table from public facts to a configuration.

An expert chooses a histogram method from what is public: the number of
dimensions and cells of the domain, the workload the release will mostly
answer, epsilon, and the data's *scale* ``N * epsilon`` (DPBench, Hay et al.
SIGMOD 2016: "no algorithm wins everywhere; the winner depends on epsilon
times the data's total, the domain size and the shape"). ``N`` is the
caller's public ``expected_total`` or a noisy total bought with a small,
stated share of the budget. Where the evidence shows that the scale is not
enough and a feature generalises to held-out shapes, the same share buys, half
and half, a noisy total and a noisy *coarse histogram* (Pythia, Kotsogiannis,
Machanavajjhala, Hay and Miklau, SIGMOD 2017: choose the algorithm from noisy
features of the data); the share of the total in the densest block (one
cell on grids up to 256 x 256; ``top_share``) is read against one threshold
per piece (:data:`AUTO_FEATURE_RULE`: in 2-D, one dense cell at large scale
goes to DPCube-uniform).

:data:`AUTO_RULE` is, per (dimensions, workload), a few pieces over
``log10(N * epsilon)``, each naming a configuration of :data:`AUTO_CONFIGS`
(a method of :data:`~pandas_dp.releases.methods.METHODS`, its knobs, and whether it releases with
``nonnegative=True``).
It is the fit of ``benchmarks/auto_fit.py`` to the measurements of
``benchmarks/auto_evidence.py`` (DPBench shapes at their natural scale and
resampled to 1e3..1e7 rows in half decades, two domain sizes, epsilon 0.1 and 1), validated
leaving one dataset out; ``docs/methods/auto.md`` gives the evidence and
``tests/test_auto.py`` checks that the table is that fit. Under zCDP only
identity and the hierarchical tree have an analysis: :data:`AUTO_RULE_ZCDP`.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np

from pandas_dp.errors import ParameterError
from pandas_dp.privacy.loss import Noise, PrivacyLoss

__all__ = ["AUTO_WORKLOADS", "AUTO_CONFIGS", "AUTO_RULE", "AUTO_RULE_ZCDP", "AUTO_FEATURE_RULE", "FEATURE_BLOCKS",
           "AutoChoice", "choose_method", "choose_config", "auto_candidates", "rule_for", "feature_rule_for",
           "coarse_starts", "coarse_counts", "shape_features", "top_floor", "TOP_FLOOR_ALPHA"]

#: What a release will mostly answer: range sums (rectangles in 2-D), prefix sums, single cells.
AUTO_WORKLOADS = ("ranges", "prefix", "bins")

#: DAWA's workload knob for each of auto's workloads.
_DAWA_WORKLOAD = {"ranges": "ranges", "prefix": "prefix", "bins": "identity"}

#: Configuration -> (method of METHODS, knobs, ``nonnegative=True``, dimensions it takes). ``+nn`` names the
#: methods whose non-negative estimates are a projection (the trees; DAWA's bucket tree), ``+clip`` those that clip at 0.
AUTO_CONFIGS: dict[str, tuple[str, dict[str, Any], bool, tuple[int, ...] | None]] = {
    "identity": ("identity", {}, False, None),
    "identity+clip": ("identity", {}, True, None),
    "hierarchical": ("hierarchical", {"branching": "auto"}, False, None),
    "hierarchical+nn": ("hierarchical", {"branching": "auto"}, True, None),
    "hierarchical-geo": ("hierarchical", {"branching": "auto", "budget_split": "geometric"}, False, None),
    "hierarchical-geo+nn": ("hierarchical", {"branching": "auto", "budget_split": "geometric"}, True, None),
    "ahp": ("ahp", {}, False, None),
    "ahp+clip": ("ahp", {}, True, None),
    "dpcube": ("dpcube", {}, False, None),
    "dpcube+clip": ("dpcube", {}, True, None),
    "dpcube-uniform": ("dpcube", {"estimate": "uniform"}, False, None),
    "dpcube-uniform+clip": ("dpcube", {"estimate": "uniform"}, True, None),
    "dawa": ("dawa", {}, False, (1, 2)),
    "dawa+nn": ("dawa", {}, True, (1, 2)),
    "ugrid": ("ugrid", {}, False, (2,)),
    "ugrid+clip": ("ugrid", {}, True, (2,)),
    "agrid": ("agrid", {}, False, (2,)),
    "agrid+clip": ("agrid", {}, True, (2,)),
}

_INF = math.inf

#: (dimensions, workload) -> pieces ``(upper bound of log10(N epsilon), configuration)``, ascending.
#: Dimensions 3 stands for 3 and more. Fit by ``python -m benchmarks.bench_auto --fit``.
AUTO_RULE: dict[tuple[int, str], tuple[tuple[float, str], ...]] = {
    (1, "bins"): ((2.5, "ahp+clip"), (4.25, "dpcube-uniform+clip"), (_INF, "identity+clip")),
    (1, "prefix"): ((3.5, "dawa+nn"), (_INF, "hierarchical+nn")),
    (1, "ranges"): ((_INF, "hierarchical+nn"),),
    (2, "bins"): ((_INF, "ahp+clip"),),
    (2, "prefix"): ((3.25, "agrid"), (_INF, "hierarchical-geo+nn")),
    (2, "ranges"): ((3.25, "agrid"), (_INF, "hierarchical-geo+nn")),
    (3, "bins"): ((_INF, "ahp+clip"),),
    (3, "prefix"): ((3.25, "hierarchical+nn"), (_INF, "hierarchical-geo+nn")),
    (3, "ranges"): ((3.25, "hierarchical+nn"), (_INF, "hierarchical-geo+nn")),
}

#: The rule with one threshold on a private feature per piece, where the evidence supports one:
#: (dimensions, workload) -> pieces ``(upper bound of log10(N epsilon), configuration below the
#: threshold, threshold on top_share, configuration at or above it)``; the bounds and the
#: configurations below the thresholds are :data:`AUTO_RULE`'s. ``top_share`` is the share of the
#: noisy total in the densest of the (up to) 256 x 256 public blocks (:func:`shape_features`; on
#: the evidence's grids, one cell per block). Fit by ``python -m benchmarks.bench_auto --fit`` to
#: noisy draws of the features (``benchmarks/auto_features.py``) and kept only because the threshold
#: lowers the held-out error both leaving out data sets (objective 0.625 -> 0.496) and leaving out
#: shape families (0.619 -> 0.493): at ``N epsilon >= 10^3.25`` one cell with 75% of the rows (two
#: zero-inflated amounts that are rarely both non-zero, like capital gain x loss) goes to
#: DPCube-uniform instead of the tree (``docs/methods/auto.md``).
AUTO_FEATURE_RULE: dict[tuple[int, str], tuple[tuple[float, str, float, str], ...]] = {
    (2, "prefix"): ((3.25, "agrid", _INF, "agrid"), (_INF, "hierarchical-geo+nn", 0.75, "dpcube-uniform")),
    (2, "ranges"): ((3.25, "agrid", _INF, "agrid"), (_INF, "hierarchical-geo+nn", 0.75, "dpcube-uniform")),
}

#: Under zCDP (identity and hierarchical only): one configuration per (dimensions, workload).
AUTO_RULE_ZCDP: dict[tuple[int, str], str] = {
    (1, "bins"): "identity+clip",
    (1, "prefix"): "hierarchical+nn",
    (1, "ranges"): "hierarchical+nn",
    (2, "bins"): "hierarchical-geo+nn",
    (2, "prefix"): "hierarchical-geo+nn",
    (2, "ranges"): "hierarchical-geo+nn",
    (3, "bins"): "hierarchical-geo+nn",
    (3, "prefix"): "hierarchical-geo+nn",
    (3, "ranges"): "hierarchical-geo+nn",
}


class AutoChoice(NamedTuple):
    """What ``method="auto"`` releases: a method of METHODS, its knobs, why, and its post-processing.

    ``config`` names the entry of :data:`AUTO_CONFIGS`; ``nonnegative`` says
    whether the chosen configuration releases with ``nonnegative=True`` (a projection
    for the ``+nn`` ones, clipping at 0 for the ``+clip`` ones).
    """

    method: str
    params: dict
    reason: str
    nonnegative: bool = False
    config: str = ""


def _dims_key(shape: tuple[int, ...]) -> int:
    return min(len(shape), 3)


def _check_workload(workload: Any) -> str:
    if workload not in AUTO_WORKLOADS:
        raise ParameterError(f"The 'workload' parameter of method='auto' must be one of {list(AUTO_WORKLOADS)}. "
                             f"Got {workload!r}.")
    return workload


def rule_for(shape: tuple[int, ...], workload: str, loss: PrivacyLoss | None = None
             ) -> tuple[tuple[float, str], ...]:
    """The pieces of the rule that apply to a domain shape, workload and privacy measure."""
    key = (_dims_key(shape), _check_workload(workload))
    if int(np.prod(shape)) <= 1:
        return ((_INF, "identity"),)
    if loss is not None and loss.measure != "pure":
        return ((_INF, AUTO_RULE_ZCDP[key]),)
    return AUTO_RULE[key]


def feature_rule_for(shape: tuple[int, ...], workload: str, loss: PrivacyLoss | None = None
                     ) -> tuple[tuple[float, str, float, str], ...] | None:
    """The pieces with feature thresholds that apply (:data:`AUTO_FEATURE_RULE`), or None (pure DP only)."""
    key = (_dims_key(shape), _check_workload(workload))
    if int(np.prod(shape)) <= 1 or (loss is not None and loss.measure != "pure"):
        return None
    return AUTO_FEATURE_RULE.get(key)


def auto_candidates(shape: tuple[int, ...], *, workload: str = "ranges", loss: PrivacyLoss | None = None,
                    features: bool = False) -> tuple[str, ...]:
    """Every configuration the rule can choose for these public inputs, whatever the total (in order).

    With ``features=True`` (the noisy features will be measured), also every configuration a
    feature threshold of :data:`AUTO_FEATURE_RULE` can choose.
    """
    splits = feature_rule_for(shape, workload, loss) if features else None
    if splits is not None:
        return tuple(dict.fromkeys(c for piece in splits for c in (piece[1], piece[3])))
    return tuple(dict.fromkeys(config for _, config in rule_for(shape, workload, loss)))


def choose_config(config: str, workload: str, reason: str = "") -> AutoChoice:
    """The :class:`AutoChoice` of a configuration of :data:`AUTO_CONFIGS` for a workload."""
    method, knobs, nonnegative, _ = AUTO_CONFIGS[config]
    params = dict(knobs)
    if method == "dawa":
        params["workload"] = _DAWA_WORKLOAD[workload]
    return AutoChoice(method, params, reason, nonnegative, config)


def choose_method(shape: tuple[int, ...], *, epsilon: float | None, expected_total: float | None = None,
                  workload: str = "ranges", loss: PrivacyLoss | None = None, total_is_noisy: bool = False,
                  features: dict[str, float] | None = None) -> AutoChoice:
    """The configuration ``"auto"`` releases, from public information (and a noisy total) only.

    Parameters
    ----------
    shape : tuple of int
        Public grid shape.
    epsilon : float or None
        Epsilon of the release (``None`` under zCDP, whose rule does not use it).
    expected_total : float, optional
        The number of rows ``N``: a public figure, or a noisy total already released.
        Needed only when the rule for these inputs has more than one piece.
    workload : {"ranges", "prefix", "bins"}
        What the release will mostly answer.
    loss : PrivacyLoss, optional
        The release's loss (default: pure epsilon).
    total_is_noisy : bool
        Whether ``expected_total`` is a noisy total (for the recorded reason only).
    features : dict, optional
        Noisy features of the shape (:func:`shape_features` of the noisy coarse histogram).
        Where :data:`AUTO_FEATURE_RULE` has a threshold for these inputs, ``top_share`` at or
        above it gives the piece's other configuration; without features the rule is
        :data:`AUTO_RULE`'s.

    Returns
    -------
    AutoChoice

    Raises
    ------
    ParameterError
        For an unknown workload, or when the choice depends on ``N`` and no
        ``expected_total`` is given (``histogram(method="auto")`` then buys a noisy total).

    Notes
    -----
    With ``s = log10(N * epsilon)``, the piece ``(b_{k-1} <= s < b_k)`` of
    :data:`AUTO_RULE` for the domain's dimensions and the workload gives the
    configuration; with ``features``, the piece's threshold on ``top_share``
    may change it. See ``docs/methods/auto.md`` for the table and its evidence.

    Examples
    --------
    >>> choose_method((4096,), epsilon=1.0, expected_total=1e6, workload="ranges").method
    'hierarchical'
    """
    pieces = rule_for(shape, workload, loss)
    where = f"{len(shape)}-D {workload} workload"
    if len(pieces) == 1:
        config = pieces[0][1]
        why = ("a single cell" if int(np.prod(shape)) <= 1 else
               "zCDP: identity and hierarchical only" if loss is not None and loss.measure != "pure" else
               "the same choice at every scale")
        return choose_config(config, workload, f"{where}, {why}: {config}")
    if expected_total is None or epsilon is None:
        raise ParameterError(
            f"method='auto' chooses for a {where} from the scale N x epsilon (the rule has {len(pieces)} "
            f"pieces); pass expected_total= (a public number of rows), or let histogram(method='auto') buy a "
            f"noisy total with a small share of the budget.")
    scale = max(float(expected_total), 1.0) * float(epsilon)
    s = math.log10(scale)
    bounds = [b for b, _ in pieces]
    k = int(np.searchsorted(bounds, s, side="right"))
    low = -_INF if k == 0 else bounds[k - 1]
    config = pieces[k][1]
    source = "noisy total" if total_is_noisy else "public total"
    span = (f"log10(N x epsilon) = {s:.2f} ({source}) in [{'-inf' if low == -_INF else f'{low:g}'}, "
            f"{'inf' if bounds[k] == _INF else f'{bounds[k]:g}'})")
    splits = feature_rule_for(shape, workload, loss) if features is not None else None
    if features is not None and splits is not None:
        _, below, threshold, above = splits[k]
        share = float(features["top_share"])
        if threshold == _INF:
            span += f", noisy top_share {share:.3f} (no threshold in this piece)"
        else:
            side = ">=" if share >= threshold else "<"
            span += f", noisy top_share {share:.3f} {side} {threshold:g}"
            config = above if share >= threshold else below
    return choose_config(config, workload, f"{where}, {span}: {config}")


# ----------------------------------------------------------------------- private features of the shape

#: Blocks per axis of the coarse histogram ``"auto"`` measures in 2-D instead of a bare noisy total
#: (256 x 256: one cell per block on grids up to 256 cells per axis, so ``top_share`` is the densest
#: cell's share there; 32 x 32 blocks could not tell one dense cell from one dense block of many
#: cells; the top block's share is read against a separately measured noisy total).
FEATURE_BLOCKS = 256

#: The chance that noise alone puts the largest noisy block above :func:`top_floor` (over all blocks).
TOP_FLOOR_ALPHA = Fraction(1, 1000)


def coarse_starts(size: int, blocks: int = FEATURE_BLOCKS) -> np.ndarray:
    """Public first cell of each coarse block along an axis of ``size`` cells (near-equal blocks).

    Examples
    --------
    >>> coarse_starts(10, 4).tolist(), coarse_starts(3, 4).tolist()
    ([0, 2, 5, 7], [0, 1, 2])
    """
    return np.unique(np.arange(blocks, dtype=np.int64) * int(size) // blocks)


def coarse_counts(counts: np.ndarray, shape: tuple[int, ...], blocks: int = FEATURE_BLOCKS) -> np.ndarray:
    """The counts summed over the public coarse blocks of every axis (a partition: one row is in one block)."""
    out = np.asarray(counts).reshape(shape)
    for axis, size in enumerate(shape):
        out = np.add.reduceat(out, coarse_starts(size, blocks), axis=axis)
    return out


def top_floor(block_noise: Noise, n_blocks: int) -> int:
    """The level the largest of ``n_blocks`` noise draws exceeds with probability at most :data:`TOP_FLOOR_ALPHA`.

    The exact ``1 - alpha / n_blocks`` quantile of one block's noise (union bound over the blocks); public,
    an integer, the same on every machine. A noisy block below it may be noise alone.

    Examples
    --------
    >>> from fractions import Fraction
    >>> from pandas_dp.privacy.loss import PureDP
    >>> top_floor(PureDP(Fraction(1, 1000)).noise(), 65_536)      # about 1000 x ln(65,536 x 1000 / 2)
    17305
    """
    return int(block_noise.quantile(1 - TOP_FLOOR_ALPHA / int(n_blocks)))


def shape_features(noisy_blocks: np.ndarray, total: float | None = None, floor: float | None = None
                   ) -> dict[str, float]:
    """Features of the shape computed, by a public rule, from noisy measurements only.

    ``total`` is the noisy total (default: the sum of the noisy blocks); ``top_share`` the
    largest noisy block over that total (clipped to [0, 1]): the share of the rows in the
    densest coarse block (Pythia's "mass in the largest cells", Kotsogiannis et al. SIGMOD 2017).
    ``"auto"`` measures the total on its own (half the share) and the blocks with the other
    half: the sum of up to 65,536 noisy blocks would carry up to 256 times the noise of one noisy total.
    With ``floor`` (:func:`top_floor`), a largest block below it gives ``top_share`` 0: where the
    noise of 65,536 empty blocks alone can reach three quarters of a small total (``N epsilon``
    near ``10^3.3``), a dense cell is claimed only when the noise cannot explain it.

    Examples
    --------
    >>> shape_features(np.array([[90, 5], [3, 2]]))
    {'total': 100.0, 'top_share': 0.9}
    >>> shape_features(np.array([[90, 5], [3, 2]]), total=120.0)
    {'total': 120.0, 'top_share': 0.75}
    """
    blocks = np.asarray(noisy_blocks, dtype=np.float64).ravel()
    total = float(blocks.sum()) if total is None else float(total)
    top = float(blocks.max()) if blocks.size else 0.0
    share = min(max(top / total, 0.0), 1.0) if total > 0 and (floor is None or top >= floor) else 0.0
    return {"total": total, "top_share": round(share, 6)}
