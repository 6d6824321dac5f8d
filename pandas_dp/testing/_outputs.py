"""Running a mechanism many times and turning its releases into numeric vectors."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextvars import Context
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from ..budget import Budget

__all__ = ["RunResult", "as_vector", "run_mechanism"]

#: Budget opened around the trials when the caller gives none: large enough for any test run.
DEFAULT_TEST_BUDGET = Fraction(10**9)
_CHUNK_VALUES = 1 << 22  # values per vectorized call (bounded memory)


def _series_vector(series: pd.Series) -> tuple[np.ndarray, list[str]]:
    return series.to_numpy(dtype=np.float64, na_value=np.nan), [str(i) for i in series.index]


def as_vector(result: Any) -> tuple[np.ndarray, list[str] | None]:
    """A release as a flat float vector, with labels when the release has an index.

    Accepted: numbers and arrays; pandas Series and numeric DataFrames; result
    objects with a ``counts`` attribute (``Histogram``, ``UnattributedHistogram``,
    ...); objects with ``to_series()``. Anything else needs ``statistic=``.
    """
    if isinstance(result, pd.Series):
        return _series_vector(result)
    if isinstance(result, pd.DataFrame):
        values = result.select_dtypes("number")
        labels = [f"{r}|{c}" for r in result.index for c in values.columns]
        return values.to_numpy(dtype=np.float64, na_value=np.nan).ravel(), labels
    if isinstance(result, (np.ndarray, list, tuple, int, float, np.number)):
        return np.asarray(result, dtype=np.float64).ravel(), None
    counts = getattr(result, "counts", None)
    if counts is not None:
        return as_vector(counts)
    to_series = getattr(result, "to_series", None)
    if callable(to_series):
        return as_vector(to_series())
    raise TypeError(
        f"assert_dp cannot turn a {type(result).__name__} into numbers. Pass statistic=callable "
        f"returning a fixed-length numeric vector of the release (e.g. lambda r: r.counts)."
    )


class RunResult:
    """Outputs of repeated runs on one dataset: ``values`` (runs x outputs), labels, charge, time."""

    def __init__(self, values: np.ndarray, labels: list[str] | None, charged: Fraction, seconds: float):
        self.values = values
        self.labels = labels
        self.charged = charged
        self.seconds = seconds


def _stack(vectors: Sequence[np.ndarray]) -> np.ndarray:
    sizes = {v.size for v in vectors}
    if len(sizes) > 1:
        raise ValueError(
            f"The mechanism's releases have different lengths {sorted(sizes)[:5]}; assert_dp compares "
            f"fixed-length outputs. Pass statistic=callable mapping each release to a vector of fixed "
            f"length (e.g. reindex on the public domain)."
        )
    return np.vstack(vectors) if vectors else np.empty((0, 0))


def _batched(mechanism: Callable[..., Any], frame: Any, n: int, rng: np.random.Generator,
             convert: Callable[[Any], tuple[np.ndarray, list[str] | None]]
             ) -> tuple[np.ndarray, list[str] | None]:
    """Call ``mechanism(frame, rng, m)`` in chunks; it returns ``m`` stacked releases."""
    probe = mechanism(frame, rng, 1)
    first = _batch_matrix(probe, 1, convert)
    k = max(first[0].shape[1], 1)
    chunk = max(1, _CHUNK_VALUES // k)
    parts = [first[0]]
    done = 1
    while done < n:
        m = min(chunk, n - done)
        parts.append(_batch_matrix(mechanism(frame, rng, m), m, convert)[0])
        done += m
    return np.vstack(parts), first[1]


def _batch_matrix(out: Any, m: int, convert: Callable[[Any], tuple[np.ndarray, list[str] | None]]
                  ) -> tuple[np.ndarray, list[str] | None]:
    if isinstance(out, pd.DataFrame):
        return out.to_numpy(dtype=np.float64, na_value=np.nan), [str(c) for c in out.columns]
    if isinstance(out, np.ndarray):
        arr = np.asarray(out, dtype=np.float64).reshape(m, -1)
        return arr, None
    vectors = [convert(r) for r in out]
    if len(vectors) != m:
        raise ValueError(f"A vectorized mechanism called with n={m} returned {len(vectors)} releases.")
    return _stack([v[0] for v in vectors]), vectors[0][1]


def run_mechanism(mechanism: Callable[..., Any], frame: Any, n: int, *, rng: np.random.Generator,
                  vectorized: bool, statistic: Callable[[Any], Any] | None,
                  budget_epsilon: Fraction) -> RunResult:
    """Run ``mechanism`` ``n`` times on ``frame`` inside a fresh testing budget.

    The trials run in a new :class:`contextvars.Context` holding only the
    testing budget, so a budget the caller has open is neither charged nor
    used as a parent.
    """
    def convert(result: Any) -> tuple[np.ndarray, list[str] | None]:
        if statistic is not None:
            return as_vector(statistic(result))
        return as_vector(result)

    def body() -> RunResult:
        start = time.perf_counter()
        with Budget(budget_epsilon) as spent_on:
            if vectorized:
                values, labels = _batched(mechanism, frame, n, rng, convert)
            else:
                vectors = []
                labels = None
                for i in range(n):
                    vec, lab = convert(mechanism(frame, rng))
                    if i == 0:
                        labels = lab
                    vectors.append(vec)
                values = _stack(vectors)
        return RunResult(values, labels, spent_on.spent_exact, time.perf_counter() - start)

    return Context().run(body)
