"""Durable checkpoints: a later process opens a long budget by verifying only the entries after one.

Opening a budget verifies its whole chain the first time a process sees it
(O(entries)). Once a budget of a durable ledger has at least
:data:`DURABLE_MIN` entries, the point its chain was verified to, ``(seq,
entry hash, spent)``, is kept in a per-user cache file keyed by the ledger id
(``$PANDAS_DP_CHECKPOINTS``, else ``$XDG_CACHE_HOME/pandas_dp/checkpoints``,
else ``~/.cache/pandas_dp/checkpoints``; one JSON file per ledger, mode 0600,
replaced atomically). The next process that opens the budget checks that the
entry at the checkpoint is still there with the same hash, content and running
total, then verifies only the entries after it. ``Ledger.verify`` and
``Budget.verify`` never use checkpoints.

What it trusts: the entries before the checkpoint, which this user verified
earlier. Someone who can rewrite the ledger but not the checkpoint file cannot
lower what is spent unnoticed: the spent amount is read from the checkpoint's
own entry, which must still match; a rollback below it is refused; an edit
strictly before it is caught by a full ``ledger verify``. Someone who can
rewrite both the ledger and this file (this user, or anyone with write access
to their cache folder) can make an open accept a history rewritten before the
checkpoint, consistently chained, with a lower spent amount, exactly as a
process without checkpoints accepts a consistent rewrite of the whole chain:
only a head kept elsewhere (``ledger verify --head``), a witness, or the
guarded PostgreSQL setup catches that.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from fractions import Fraction
from pathlib import Path

__all__ = ["DURABLE_MIN", "folder", "load", "save", "load_point", "save_point"]

#: Budgets with fewer entries are verified in full on every first open (well under a second), and never cached.
DURABLE_MIN = 10_000
_FORMAT = "pandas_dp checkpoints 1"
_ID = re.compile(r"[0-9a-f]{32}")
_HASH = re.compile(r"[0-9a-f]{64}")


def folder() -> Path:
    """Where this user's checkpoint files go."""
    chosen = os.environ.get("PANDAS_DP_CHECKPOINTS")
    if chosen:
        return Path(chosen)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "pandas_dp" / "checkpoints"


def _file(ledger_id: str) -> Path | None:
    return folder() / f"{ledger_id}.json" if _ID.fullmatch(ledger_id) else None


def _read_all(path: Path, ledger_id: str) -> dict[str, object]:
    try:
        with open(path, encoding="ascii") as f:
            found = json.load(f)
    except (OSError, ValueError):
        return {}  # missing or unreadable: the budget is verified in full, as without a checkpoint
    if not isinstance(found, dict) or found.get("format") != _FORMAT or found.get("ledger_id") != ledger_id:
        return {}
    return found


def _read(path: Path, ledger_id: str) -> dict[str, list[object]]:
    budgets = _read_all(path, ledger_id).get("budgets")
    return budgets if isinstance(budgets, dict) else {}


def _write(path: Path, ledger_id: str, content: dict[str, object]) -> None:
    """Replace the checkpoint file atomically (OSError when it cannot be written)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, temp = tempfile.mkstemp(prefix=f".{ledger_id}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as f:
            json.dump({"format": _FORMAT, "ledger_id": ledger_id, **content}, f)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


#: A budget's state in a ledger point: (entries, last hash, spent, closed).
State = tuple[int, str, Fraction, bool]


def load_point(ledger_id: str) -> tuple[int, str, int, dict[str, State]] | None:
    """The ledger point kept for ``ledger_id``: (entries, head hash, last entry id, states by budget), or None."""
    path = _file(ledger_id)
    item = _read_all(path, ledger_id).get("point") if path is not None else None
    if not isinstance(item, list) or len(item) != 4:
        return None
    count, digest, last_id, raw = item
    if not (isinstance(count, int) and isinstance(last_id, int) and isinstance(digest, str)
            and _HASH.fullmatch(digest) and isinstance(raw, dict)):
        return None
    states: dict[str, State] = {}
    try:
        for name, (seq, head, spent, closed) in raw.items():
            if not (isinstance(seq, int) and isinstance(head, str) and isinstance(spent, str) and len(spent) <= 2000
                    and isinstance(closed, bool)):
                return None
            states[name] = (seq, head, Fraction(spent), closed)
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    return count, digest, last_id, states


def save_point(ledger_id: str, count: int, digest: str, last_id: int, states: dict[str, State]) -> None:
    """Keep the point a ledger was followed to (best effort; ledgers of at least ``DURABLE_MIN`` entries)."""
    path = _file(ledger_id)
    if path is None or count < DURABLE_MIN:
        return
    try:
        content = _read_all(path, ledger_id)
        old = content.get("point")
        if isinstance(old, list) and old and old[0] == count:
            return
        budgets = content.get("budgets")
        _write(path, ledger_id, {"budgets": budgets if isinstance(budgets, dict) else {},
                                 "point": [count, digest, last_id,
                                           {k: [v[0], v[1], str(v[2]), v[3]] for k, v in states.items()}]})
    except OSError:
        return


def load(ledger_id: str, genesis: str) -> tuple[int, str, Fraction] | None:
    """The checkpoint of the budget ``genesis`` of the ledger ``ledger_id`` (None when there is none usable)."""
    path = _file(ledger_id)
    if path is None:
        return None
    item = _read(path, ledger_id).get(genesis)
    if not isinstance(item, list) or len(item) != 3:
        return None
    seq, digest, spent = item
    if not isinstance(seq, int) or seq <= 0 or not isinstance(digest, str) or not _HASH.fullmatch(digest):
        return None
    try:
        amount = Fraction(spent) if isinstance(spent, str) and len(spent) <= 2000 else None
    except (ValueError, ZeroDivisionError):
        amount = None
    return None if amount is None else (seq, digest, amount)


def save(ledger_id: str, genesis: str, seq: int, digest: str, spent: Fraction) -> None:
    """Record a budget's verified point (best effort: a checkpoint that cannot be written only costs time)."""
    path = _file(ledger_id)
    if path is None or seq < DURABLE_MIN:
        return
    try:
        content = _read_all(path, ledger_id)
        budgets = _read(path, ledger_id)
        old = budgets.get(genesis)
        if isinstance(old, list) and old and old[0] == seq:
            return
        budgets[genesis] = [seq, digest, str(spent)]
        _write(path, ledger_id, {**{k: v for k, v in content.items() if k == "point"}, "budgets": budgets})
    except OSError:
        return
