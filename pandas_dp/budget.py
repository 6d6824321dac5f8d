"""Privacy budget: context manager, exact accounting and an optional SQLite ledger.

A :class:`Budget` is made active with ``with pandas_dp.budget(epsilon=...)``;
every release charges the innermost active budget, and through it every
enclosing budget (sequential composition). Accounting uses exact rationals, so
ten charges of ``0.1`` fill a budget of ``1.0`` exactly.

A charge is checked and recorded in one atomic step *before* any noise is
drawn. With ``ledger="file.sqlite"`` that step is one SQLite transaction
(``BEGIN IMMEDIATE`` in WAL mode), so the charge is durable before the
release exists, a restarted process resumes the amount spent, and several
processes sharing the file cannot overspend together.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from contextvars import ContextVar, Token
from dataclasses import dataclass
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from ._rational import to_fraction
from .errors import BudgetExceededError, NoActiveBudgetError, ParameterError

__all__ = ["Budget", "budget", "active_budget"]

_ACTIVE: ContextVar["Budget | None"] = ContextVar("pandas_dp_active_budget", default=None)
# One lock for the in-process part of every charge: checking a chain of nested
# budgets and recording in all of them must not interleave with another thread.
_LOCK = threading.RLock()

LEDGER_COLUMNS = ["id", "time", "budget", "method", "columns", "epsilon", "params", "status"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS budgets (
    name TEXT PRIMARY KEY,
    total TEXT NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS charges (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    budget TEXT NOT NULL,
    time TEXT NOT NULL,
    method TEXT NOT NULL,
    columns TEXT NOT NULL,
    epsilon TEXT NOT NULL,
    params TEXT NOT NULL,
    status TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS charges_budget ON charges (budget);
"""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def _fmt(value: Fraction) -> str:
    return f"{value.numerator}/{value.denominator}"


def _json(params: Mapping[str, Any]) -> str:
    return json.dumps(dict(params), default=str, sort_keys=True)


class _SQLiteLedger:
    """The durable side of a budget: one row per charge in an SQLite file."""

    def __init__(self, path: str | os.PathLike[str], name: str, total: Fraction) -> None:
        self.path = str(Path(path))
        self.name = name
        conn = self._connect()
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(_SCHEMA)
            conn.execute("BEGIN IMMEDIATE")
            row = conn.execute("SELECT total FROM budgets WHERE name = ?", (name,)).fetchone()
            if row is None:
                conn.execute("INSERT INTO budgets VALUES (?, ?, ?)", (name, _fmt(total), _now()))
                conn.execute("COMMIT")
            else:
                conn.execute("COMMIT")
                stored = Fraction(row[0])
                if stored != total:
                    raise ParameterError(
                        f"The ledger {self.path!r} already holds a budget named {name!r} with total "
                        f"epsilon={float(stored)!r}; got epsilon={float(total)!r}. Reopen it with the "
                        f"same epsilon to resume it, or pass a new name=."
                    )
        finally:
            conn.close()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
        conn.execute("PRAGMA synchronous=FULL")
        return conn

    def begin(self) -> sqlite3.Connection:
        conn = self._connect()
        conn.execute("BEGIN IMMEDIATE")
        return conn

    def spent(self, conn: sqlite3.Connection | None = None) -> Fraction:
        own = conn is None
        conn = conn or self._connect()
        try:
            rows = conn.execute("SELECT epsilon FROM charges WHERE budget = ?", (self.name,)).fetchall()
        finally:
            if own:
                conn.close()
        return sum((Fraction(r[0]) for r in rows), Fraction(0))

    def record(self, conn: sqlite3.Connection, row: dict[str, Any]) -> int:
        cur = conn.execute(
            "INSERT INTO charges (budget, time, method, columns, epsilon, params, status) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (self.name, row["time"], row["method"], row["columns"], _fmt(row["epsilon"]),
             row["params"], row["status"]),
        )
        return int(cur.lastrowid)

    def set_status(self, charge_id: int, status: str) -> None:
        conn = self._connect()
        try:
            conn.execute("UPDATE charges SET status = ? WHERE id = ?", (status, charge_id))
        finally:
            conn.close()

    def frame(self) -> pd.DataFrame:
        conn = self._connect()
        try:
            rows = conn.execute(
                "SELECT id, time, budget, method, columns, epsilon, params, status FROM charges "
                "WHERE budget = ? ORDER BY id", (self.name,)).fetchall()
        finally:
            conn.close()
        return _ledger_frame([dict(zip(LEDGER_COLUMNS, r)) for r in rows])


def _ledger_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=LEDGER_COLUMNS)
    frame["id"] = frame["id"].astype("int64")
    frame["time"] = pd.to_datetime(frame["time"], utc=True, format="ISO8601")
    frame["epsilon"] = [float(Fraction(e)) for e in frame["epsilon"]]
    frame["epsilon"] = frame["epsilon"].astype("float64")
    return frame


@dataclass(frozen=True)
class Charge:
    """Handle of one recorded charge, used to mark it succeeded or failed."""

    entries: tuple[tuple["Budget", int], ...]
    epsilon: Fraction

    def finish(self, status: str) -> None:
        """Mark the charge ``"ok"`` or ``"failed"`` in every budget it was recorded in."""
        with _LOCK:
            for owner, charge_id in self.entries:
                owner._set_status(charge_id, status)


class Budget:
    """A privacy budget of total ``epsilon``, active inside a ``with`` block.

    Use :func:`pandas_dp.budget` to make one. Inside ``with`` every release
    charges this budget and every budget enclosing it. The object stays
    readable after the block (``spent``, ``remaining``, ``ledger``) and can be
    entered again to spend what is left.

    Parameters
    ----------
    epsilon : float, int or Fraction
        Total privacy loss this budget allows. Converted exactly (0.1 is 1/10).
    ledger : str or path, optional
        SQLite file recording every charge durably. Reopening the same file
        with the same ``name`` resumes the amount spent.
    name : str, optional
        Name of the budget in the ledger (default ``"default"`` with a ledger).
    """

    def __init__(self, epsilon: float | Fraction, *, ledger: str | os.PathLike[str] | None = None,
                 name: str | None = None) -> None:
        self._total = to_fraction(epsilon, name="epsilon")
        if name is not None and not isinstance(name, str):
            raise ParameterError(f"The 'name' parameter of budget must be a string. Got {name!r}.")
        self.name = name if name is not None else ("default" if ledger is not None else "")
        self._ledger = _SQLiteLedger(ledger, self.name, self._total) if ledger is not None else None
        self._entries: list[dict[str, Any]] = []
        self._spent = Fraction(0)
        self._parent: Budget | None = None
        self._tokens = threading.local()

    # -- context manager -------------------------------------------------
    def __enter__(self) -> "Budget":
        outer = _ACTIVE.get()
        if outer is not None and outer is not self:
            node: Budget | None = outer
            while node is not None:
                if node is self:
                    raise ParameterError("A budget cannot be nested inside itself.")
                node = node._parent
            self._parent = outer
        stack: list[Token] = getattr(self._tokens, "stack", [])
        stack.append(_ACTIVE.set(self))
        self._tokens.stack = stack
        return self

    def __exit__(self, *exc: object) -> None:
        _ACTIVE.reset(self._tokens.stack.pop())

    # -- accounting ------------------------------------------------------
    @property
    def epsilon(self) -> float:
        """Total epsilon of this budget."""
        return float(self._total)

    @property
    def spent_exact(self) -> Fraction:
        """Exact amount spent (including charges made by other processes sharing the ledger)."""
        if self._ledger is not None:
            return self._ledger.spent()
        return self._spent

    @property
    def spent(self) -> float:
        """Epsilon spent so far."""
        return float(self.spent_exact)

    @property
    def remaining_exact(self) -> Fraction:
        """Exact epsilon left."""
        return self._total - self.spent_exact

    @property
    def remaining(self) -> float:
        """Epsilon left."""
        return float(self.remaining_exact)

    @property
    def ledger(self) -> pd.DataFrame:
        """One row per charge: id, time, budget, method, columns, epsilon, params, status."""
        if self._ledger is not None:
            return self._ledger.frame()
        with _LOCK:
            rows = [dict(r, epsilon=_fmt(r["epsilon"])) for r in self._entries]
        return _ledger_frame(rows)

    def spend(self, epsilon: float | Fraction, *, method: str, columns: Sequence[str] = (),
              params: Mapping[str, Any] | None = None) -> Charge:
        """Check and record a charge of ``epsilon`` here and in every enclosing budget.

        Atomic: either every budget in the chain has room and records the
        charge, or nothing is recorded and :class:`BudgetExceededError` is raised.
        Library methods call this after validating their input and before
        drawing any noise.
        """
        eps = epsilon.amount if hasattr(epsilon, "measure") else to_fraction(epsilon, name="epsilon")
        chain: list[Budget] = []
        node: Budget | None = self
        while node is not None:
            chain.append(node)
            node = node._parent
        row = {"time": _now(), "method": str(method), "columns": ",".join(map(str, columns)),
               "epsilon": eps, "params": _json(params or {}), "status": "charged"}
        with _LOCK:
            conns: list[sqlite3.Connection | None] = []
            try:
                for b in chain:
                    conns.append(b._ledger.begin() if b._ledger is not None else None)
                for b, conn in zip(chain, conns):
                    spent = b._ledger.spent(conn) if b._ledger is not None else b._spent
                    remaining = b._total - spent
                    if eps > remaining:
                        label = f"budget {b.name!r}" if b.name else "the active budget"
                        raise BudgetExceededError(
                            f"Requested epsilon={float(eps)!r} but {label} has only "
                            f"remaining={float(remaining)!r} of epsilon={float(b._total)!r} "
                            f"(spent {float(spent)!r}). Nothing was charged. Lower epsilon or "
                            f"open a larger budget."
                        )
                entries = []
                for b, conn in zip(chain, conns):
                    if conn is not None:
                        charge_id = b._ledger.record(conn, row)
                    else:
                        charge_id = len(b._entries) + 1
                    b._entries.append(dict(row, id=charge_id, budget=b.name))
                    b._spent += eps
                    entries.append((b, charge_id))
                for conn in conns:
                    if conn is not None:
                        conn.execute("COMMIT")
            except BaseException:
                for conn in conns:
                    if conn is not None and conn.in_transaction:
                        conn.execute("ROLLBACK")
                raise
            finally:
                for conn in conns:
                    if conn is not None:
                        conn.close()
        return Charge(tuple(entries), eps)

    def check(self, loss: Any) -> None:
        """Raise what :meth:`spend` would raise for ``loss`` without recording anything."""
        eps = loss.amount if hasattr(loss, "measure") else to_fraction(loss, name="epsilon")
        node: Budget | None = self
        while node is not None:
            remaining = node.remaining_exact
            if eps > remaining:
                label = f"budget {node.name!r}" if node.name else "the active budget"
                raise BudgetExceededError(
                    f"Requested epsilon={float(eps)!r} but {label} has only "
                    f"remaining={float(remaining)!r} of epsilon={float(node._total)!r} "
                    f"(spent {float(node.spent_exact)!r}). Nothing was charged. Lower epsilon or "
                    f"open a larger budget."
                )
            node = node._parent

    def _set_status(self, charge_id: int, status: str) -> None:
        for entry in self._entries:
            if entry["id"] == charge_id:
                entry["status"] = status
        if self._ledger is not None:
            self._ledger.set_status(charge_id, status)

    def __repr__(self) -> str:
        name = f" name={self.name!r}" if self.name else ""
        return f"<Budget{name} epsilon={self.epsilon!r} spent={self.spent!r} remaining={self.remaining!r}>"


def budget(epsilon: float | Fraction, *, ledger: str | os.PathLike[str] | None = None,
           name: str | None = None) -> Budget:
    """Open a privacy budget; use it as ``with pandas_dp.budget(epsilon=1.0) as b:``.

    Parameters
    ----------
    epsilon : float, int or Fraction
        Total privacy loss allowed inside the block (exact rational accounting).
    ledger : str or path, optional
        SQLite file that durably records every charge before its noise is drawn.
    name : str, optional
        The budget's name in the ledger; reopening the same ledger and name resumes it.

    Returns
    -------
    Budget

    Examples
    --------
    >>> import pandas_dp as pdp
    >>> with pdp.budget(epsilon=1.0) as b:
    ...     pass
    >>> b.remaining
    1.0
    """
    return Budget(epsilon, ledger=ledger, name=name)


def active_budget() -> Budget:
    """Return the innermost active budget or raise :class:`NoActiveBudgetError`."""
    current = _ACTIVE.get()
    if current is None:
        raise NoActiveBudgetError(
            "No privacy budget is active. Every release spends privacy budget, so wrap it in a "
            "budget block:\n\n    with pandas_dp.budget(epsilon=1.0):\n"
            "        df.dp.histogram(\"age\", bins=range(0, 121), epsilon=0.1)\n"
        )
    return current
