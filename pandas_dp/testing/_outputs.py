"""Running a mechanism many times: each run's observable outcome, and its release as a numeric vector."""

from __future__ import annotations

import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.testing._budgets import DEFAULT_TEST_BUDGET, TESTING_BUDGET, open_budget, run_detached
from pandas_dp.testing._observe import IndexKey, Outcome, capture, error_outcome, result_outcome

__all__ = ["DEFAULT_TEST_BUDGET", "OutcomeTable", "RunResult", "as_vector", "run_mechanism"]

_CHUNK_VALUES = 1 << 22  # values per vectorized call (bounded memory)


def _numeric(result: Any) -> tuple[np.ndarray, Any]:
    """A release as a flat float vector and the source of its labels (an Index, a pair of them, or None)."""
    if isinstance(result, pd.Series):
        return result.to_numpy(dtype=np.float64, na_value=np.nan), result.index
    if isinstance(result, pd.DataFrame):
        values = result.select_dtypes("number")
        return values.to_numpy(dtype=np.float64, na_value=np.nan).ravel(), (result.index, values.columns)
    if isinstance(result, (np.ndarray, list, tuple, int, float, np.number)):
        return np.asarray(result, dtype=np.float64).ravel(), None
    counts = getattr(result, "counts", None)
    if counts is not None:
        return _numeric(counts)
    to_series = getattr(result, "to_series", None)
    if callable(to_series):
        return _numeric(to_series())
    raise TypeError(
        f"assert_dp cannot turn a {type(result).__name__} into numbers. Pass statistic=callable "
        f"returning a fixed-length numeric vector of the release (e.g. lambda r: r.counts)."
    )


def _labels(source: Any) -> list[str] | None:
    if source is None:
        return None
    if isinstance(source, tuple):
        index, columns = source
        return [f"{r}|{c}" for r in index for c in columns]
    return [str(i) for i in source]


def _label_key(source: Any) -> Any:
    if source is None:
        return None
    if isinstance(source, tuple):
        return tuple(IndexKey(s) for s in source)
    return IndexKey(source)


def as_vector(result: Any) -> tuple[np.ndarray, list[str] | None]:
    """A release as a flat float vector, with labels when the release has an index.

    Accepted: numbers and arrays; pandas Series and numeric DataFrames; result
    objects with a ``counts`` attribute (``Histogram``, ``UnattributedHistogram``,
    ...); objects with ``to_series()``. Anything else needs ``statistic=``.
    """
    values, source = _numeric(result)
    return values, _labels(source)


class OutcomeTable:
    """Codes of the distinct outcomes and vector layouts seen, shared by the runs on both datasets."""

    def __init__(self) -> None:
        self.outcomes: dict[Outcome, int] = {}
        self.layouts: dict[Any, int] = {}
        self.label_sources: dict[int, Any] = {}

    def code(self, outcome: Outcome) -> int:
        return self.outcomes.setdefault(outcome, len(self.outcomes))

    def layout(self, size: int, source: Any) -> int:
        key = (size, _label_key(source))
        code = self.layouts.setdefault(key, len(self.layouts))
        self.label_sources.setdefault(code, source)
        return code

    def by_code(self) -> list[Outcome]:
        """Outcomes in code order."""
        return list(self.outcomes)

    def labels(self, layout: int) -> list[str] | None:
        return _labels(self.label_sources.get(layout))


class RunResult:
    """Runs on one dataset.

    ``codes[i]`` is the outcome code of run ``i`` (see :class:`OutcomeTable`);
    ``layout[i]`` the code of its vector layout (-1 when it raised or could
    not be converted); ``vectors[layout]`` the run positions and the matrix of
    their release vectors (in run order).
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self.codes = np.zeros(n, dtype=np.int64)
        self.layout = np.full(n, -1, dtype=np.int64)
        self._parts: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
        self.vectors: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.charged = Fraction(0)
        self.seconds = 0.0
        self.conversion_error: Exception | None = None

    def add(self, positions: np.ndarray, layout: int, matrix: np.ndarray) -> None:
        self.layout[positions] = layout
        self._parts.setdefault(layout, []).append((positions, matrix))

    def width(self) -> int:
        """Length of the first release vector recorded (0 if none yet)."""
        for parts in self._parts.values():
            return int(parts[0][1].shape[1])
        return 0

    def finish(self) -> None:
        for layout, parts in self._parts.items():
            self.vectors[layout] = (np.concatenate([p for p, _ in parts]), np.vstack([m for _, m in parts]))
        self._parts = {}

    def rows(self, layout: int, lo: int, hi: int) -> np.ndarray:
        """Release vectors of the runs ``lo <= i < hi`` with this layout (an empty matrix if none)."""
        if layout not in self.vectors:
            return np.empty((0, 0))
        positions, matrix = self.vectors[layout]
        keep = (positions >= lo) & (positions < hi)
        return matrix[keep]


def _convert(result: Any, statistic: Callable[[Any], Any] | None) -> tuple[np.ndarray, Any]:
    return _numeric(statistic(result) if statistic is not None else result)


def _record(out: RunResult, table: OutcomeTable, positions: np.ndarray, outcome: Outcome,
            vector: np.ndarray | None, source: Any) -> None:
    out.codes[positions] = table.code(outcome)
    if vector is not None:
        out.add(positions, table.layout(vector.shape[-1], source), vector.reshape(len(positions), -1))


def _looped(mechanism: Callable[..., Any], frame: Any, n: int, rng: np.random.Generator,
            statistic: Callable[[Any], Any] | None, spent: Callable[[], Fraction] | None,
            table: OutcomeTable, out: RunResult) -> None:
    last = spent() if spent is not None else None  # the budget's spent amount before the next run
    for i in range(n):
        result, error, caught, charged = capture(lambda: mechanism(frame, rng), spent, before=last)
        if last is not None and charged is not None:
            last += charged
        where = np.array([i])
        if error is not None:
            _record(out, table, where, error_outcome(error, caught, charged), None, None)
            continue
        vector, source = None, None
        try:
            vector, source = _convert(result, statistic)
        except Exception as err:  # this run's release has no vector; the runs that have one are tested
            out.conversion_error = out.conversion_error or err
        _record(out, table, where, result_outcome(result, caught, charged), vector, source)


def _batch_outcome(batch: Any, m: int, caught: list, charged: Fraction | None) -> Outcome:
    """One outcome for the ``m`` releases of an array or frame batch (its per-release structure)."""
    per_run = charged / m if charged is not None else None
    if isinstance(batch, np.ndarray):
        row = batch.reshape(m, -1)[:0]  # structure of one release: (0, k)
        return result_outcome(np.empty(row.shape[1:], dtype=batch.dtype), caught, per_run)
    return result_outcome(batch.iloc[:0], caught, per_run)


def _vectorized(mechanism: Callable[..., Any], frame: Any, n: int, rng: np.random.Generator,
                statistic: Callable[[Any], Any] | None, spent: Callable[[], Fraction] | None,
                table: OutcomeTable, out: RunResult) -> None:
    """Call ``mechanism(frame, rng, m)`` in chunks; it returns ``m`` stacked releases."""
    done, chunk = 0, 1  # a first call of one release gives the release length
    while done < n:
        m = min(chunk, n - done)
        batch, error, caught, charged = capture(lambda: mechanism(frame, rng, m), spent)
        where = np.arange(done, done + m)
        if error is not None:
            per_run = charged / m if charged is not None else None
            _record(out, table, where, error_outcome(error, caught, per_run), None, None)
        elif isinstance(batch, (np.ndarray, pd.DataFrame)):
            matrix = (batch.to_numpy(dtype=np.float64, na_value=np.nan) if isinstance(batch, pd.DataFrame)
                      else np.asarray(batch, dtype=np.float64).reshape(m, -1))
            source = pd.Index([str(c) for c in batch.columns]) if isinstance(batch, pd.DataFrame) else None
            _record(out, table, where, _batch_outcome(batch, m, caught, charged), matrix, source)
        else:
            releases = list(batch)
            if len(releases) != m:
                raise ValueError(f"A vectorized mechanism called with n={m} returned {len(releases)} releases.")
            per_run = charged / m if charged is not None else None
            for j, result in enumerate(releases):
                vector, source = None, None
                try:
                    vector, source = _convert(result, statistic)
                except Exception as err:
                    out.conversion_error = out.conversion_error or err
                _record(out, table, where[j:j + 1], result_outcome(result, caught, per_run), vector, source)
        if done == 0:  # chunks of about _CHUNK_VALUES numbers from now on
            chunk = max(1, _CHUNK_VALUES // max(out.width(), 1))
        done += m


def run_mechanism(mechanism: Callable[..., Any], frame: Any, n: int, *, rng: np.random.Generator,
                  vectorized: bool, statistic: Callable[[Any], Any] | None, budget: Any = TESTING_BUDGET,
                  table: OutcomeTable | None = None) -> RunResult:
    """Run ``mechanism`` ``n`` times on ``frame`` inside a fresh testing budget, capturing every run.

    The trials run in a copy of the current context holding only the
    testing budget, so a budget the caller has open is neither charged nor
    used as a parent. Every run is captured: an exception or a warning is
    recorded in its :class:`Outcome`, never raised.
    """
    table = table if table is not None else OutcomeTable()

    def body() -> RunResult:
        out = RunResult(n)
        start = time.perf_counter()
        b = open_budget(budget, caller="assert_dp")
        spent = (lambda: b.spent_exact) if b is not None else None
        runner = _vectorized if vectorized else _looped
        if b is None:
            runner(mechanism, frame, n, rng, statistic, spent, table, out)
        else:
            with b:
                runner(mechanism, frame, n, rng, statistic, spent, table, out)
            out.charged = b.spent_exact
        out.finish()
        out.seconds = time.perf_counter() - start
        return out

    return run_detached(body)
