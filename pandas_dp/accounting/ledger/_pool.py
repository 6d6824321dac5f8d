"""Idle connections of a ledger store, per process (shared by the SQLite and PostgreSQL stores).

A store keeps a few idle connections for reuse in the process that opened
them. A forked child never uses or closes its parent's: closing them in the
child would close (PostgreSQL) or disturb (SQLite) the parent's, so they are
parked in :data:`_INHERITED`, open and unused.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Generic, TypeVar

__all__ = ["IdleConnections", "MAX_IDLE"]

#: Connections a forked child inherited: kept open and unused, since closing them in the child would close
#: (PostgreSQL) or disturb (SQLite) the parent's.
_INHERITED: list[list[Any]] = []

#: Idle connections a store keeps per process.
MAX_IDLE = 4

C = TypeVar("C")


class IdleConnections(Generic[C]):
    """Mixin of a store: ``_idle`` items (a connection, or a connection and a tag) of this process.

    The store calls :meth:`_init_idle` in ``__init__``, takes from
    :meth:`_idle_here` under ``self._lock``, hands back with :meth:`_keep_idle`
    and says how an item is closed in :meth:`_close_item`.
    """

    _idle: list[C]
    _pid: int
    _lock: threading.Lock

    def _init_idle(self) -> None:
        self._idle = []
        self._pid = os.getpid()
        self._lock = threading.Lock()

    def _close_item(self, item: C) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def _idle_here(self) -> list[C]:
        """The idle items of this process (call with ``self._lock`` held); a forked child starts empty."""
        if self._pid != os.getpid():  # a forked child never shares its parent's connections
            _INHERITED.append(self._idle)  # never closed here: closing would break the parent's
            self._idle, self._pid = [], os.getpid()
        return self._idle

    def _keep_idle(self, item: C, reusable: bool = True) -> None:
        """Keep a reusable item for this process (up to :data:`MAX_IDLE`); close it otherwise."""
        with self._lock:
            if self._pid == os.getpid() and len(self._idle) < MAX_IDLE and reusable:
                self._idle.append(item)
                return
        self._close_item(item)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def close(self) -> None:
        """Close idle connections (in the process that opened them)."""
        with self._lock:
            if self._pid != os.getpid():
                _INHERITED.append(self._idle)
                self._idle = []
            idle, self._idle = self._idle, []
        for item in idle:
            self._close_item(item)
