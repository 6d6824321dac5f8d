"""The witness of a ledger: an append-only file, outside the ledger, of the heads the ledger reached.

A ledger created with ``witness=PATH`` names the file in its ``meta``. Every
committed charge appends the ledger's new head (``"<entries> <hash>"``, one
line, ``O_APPEND`` then ``fsync``; a charge first checks that the witness can
be written and fails if not, and fails too if the append after its commit
fails); opening the ledger, every charge and
``verify`` compare the ledger's head with the highest head the witness holds
and refuse a ledger that is below it (an older copy put back, or a chain
rolled back) or beside it (as many entries, another history). The witness
protects as far as it is kept apart: on another disk or host, owned by another
user, append-only (``chattr +a``). The witness's location is sealed into the
ledger's chain (:func:`~pandas_dp.accounting.ledger._records.ledger_root`):
pointing ``meta`` at another witness file, or at none, breaks every budget's
genesis hash and is refused on the next open. Whoever can rewrite both the ledger and its
witness can still roll them back together; an auditor's printed head
(``ledger verify --head``) is the last line of defence.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any

from pandas_dp.errors import LedgerError

__all__ = ["Witness", "refuse_below", "witness_of", "witness_location", "create_witness", "remove_witness", "TABLE_PREFIX"]

_MAGIC = "pandas_dp witness 1"
#: ``meta["witness"]`` of a guarded PostgreSQL ledger: its witness table.
TABLE_PREFIX = "table:"
_LINE = re.compile(r"([0-9]{1,18}) ([0-9a-f]{64})")
#: How much of the file's end is read: concurrent writers append in commit order up to a few lines apart.
_TAIL = 16384

_CACHE: dict[str, "Witness"] = {}
_CACHE_LOCK = threading.Lock()


def _head(count: int, digest: str) -> str:
    return f"{count}:{digest}"


def refuse_below(display: str, witness: str, copy: str, top: tuple[int, str], count: int, digest: str) -> None:
    """LedgerError when the head ``(count, digest)`` is below the witness's highest head ``top``, or beside it.

    ``witness`` names it in the message ("witness '/path'", "witness table t"), ``copy`` what was put back.
    """
    if count < top[0] or (count == top[0] and digest != top[1]):
        raise LedgerError(
            f"The ledger {display} was rolled back: its {witness} records head {_head(*top)} ({top[0]} entries) "
            f"and the ledger has {_head(count, digest)}. {copy[0].upper() + copy[1:]} was put back or its chain "
            f"was rewritten, which forgets charges. Nothing was charged. Find the copy that passes "
            f"`python -m pandas_dp ledger verify LOCATION --head {_head(*top)}`.")


class Witness:
    """One witness file (see the module notes)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def _fail(self, why: str) -> LedgerError:
        return LedgerError(f"The witness {self.path!r} of the ledger {why}. Nothing was charged.")

    def highest(self, ledger_id: str) -> tuple[int, str]:
        """The highest head the witness holds (LedgerError when it is missing, garbled or another ledger's)."""
        try:
            with open(self.path, "rb") as f:
                first = f.readline(200).decode("ascii", "replace").split()
                size = os.fstat(f.fileno()).st_size
                f.seek(max(0, size - _TAIL))
                tail = f.read().decode("ascii", "replace")
        except FileNotFoundError:
            raise self._fail("is missing: a ledger that names a witness is never used without it. Put the witness "
                             "file back (it is only ever appended to)") from None
        except OSError as err:
            raise self._fail(f"cannot be read ({err.strerror})") from None
        if first[:3] != _MAGIC.split() or len(first) != 4:
            raise self._fail("is not a pandas_dp witness file")
        if first[3] != ledger_id:
            raise self._fail("belongs to another ledger (its ledger id differs): the ledger was replaced")
        lines = tail.splitlines()[1:] if size > _TAIL else tail.splitlines()
        found = [(int(m.group(1)), m.group(2)) for m in map(_LINE.fullmatch, lines) if m]
        if not found:
            raise self._fail("holds no head")
        return max(found)

    def check(self, display: str, ledger_id: str, count: int, digest: str,
              top: tuple[int, str] | None = None) -> None:
        """Refuse a ledger whose head is below the witness's highest (``top``, read now when None), or beside it."""
        refuse_below(display, f"witness {self.path!r}", "an older copy",
                     self.highest(ledger_id) if top is None else top, count, digest)

    def probe(self, display: str) -> None:
        """LedgerError unless the witness can be appended to now (a charge checks this before it writes).

        A witness that cannot be written is never skipped: every charge records the ledger's new head in it,
        and a witness left behind would let an older copy of the ledger pass later.
        """
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        except OSError as err:
            raise LedgerError(
                f"The witness {self.path!r} of the ledger {display} cannot be written ({err.strerror}): every charge "
                f"records the ledger's new head in it, so nothing was charged. Make it writable again (its owner, "
                f"its mode, `chattr -i`; keep it append-only with `chattr +a`) and retry.") from None
        os.close(fd)

    def append(self, count: int, digest: str, display: str = "") -> None:
        """Append a head after its charge committed (LedgerError when the write fails).

        The charge is then in the ledger but not in the witness: it stays counted as spent (conservative), the
        release that asked for it fails before any noise is drawn, and the witness lags one head behind the
        ledger, which the witness check accepts (it refuses a ledger *below* its witness).
        """
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        except OSError as err:
            raise self._after_commit(display, count, digest, err) from None
        try:
            os.write(fd, f"{count} {digest}\n".encode("ascii"))
            os.fsync(fd)
        except OSError as err:
            raise self._after_commit(display, count, digest, err) from None
        finally:
            os.close(fd)

    def _after_commit(self, display: str, count: int, digest: str, err: OSError) -> LedgerError:
        return LedgerError(
            f"The witness {self.path!r} of the ledger {display} could not record head {_head(count, digest)} "
            f"({err.strerror}). The charge is recorded in the ledger and stays counted as spent, but nothing was "
            f"released. Make the witness writable again: charges are refused while it cannot be written.")


def witness_location(path: object) -> str:
    """The absolute path a ledger records for its witness file (LedgerError for anything but a path)."""
    if not isinstance(path, (str, os.PathLike)):
        raise LedgerError(f"A ledger's witness must be a file path (str or pathlib.Path). Got "
                          f"{type(path).__name__}.")
    try:
        return os.path.abspath(os.fspath(path))
    except (TypeError, ValueError) as err:
        raise LedgerError(f"The witness path {path!r} is not usable: {err}.") from None


def create_witness(path: object, ledger_id: str, root: str) -> str:
    """Create a new witness file for a new ledger; return its absolute path (LedgerError if it exists)."""
    full = witness_location(path)
    try:
        fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise LedgerError(f"Cannot create the witness {full!r}: the path exists. A witness belongs to one ledger "
                          f"and is never overwritten; pick a new path.") from None
    except OSError as err:
        raise LedgerError(f"Cannot create the witness {full!r}: {err.strerror}. Pick a writable path.") from None
    try:
        os.write(fd, f"{_MAGIC} {ledger_id}\n0 {root}\n".encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    return full


def witness_of(meta: dict[str, str], store: Any = None) -> Any:
    """The witness a ledger's ``meta`` names (a :class:`Witness` file, or a guarded ledger's table), or None."""
    path = meta.get("witness")
    if not path:
        return None
    if path.startswith(TABLE_PREFIX):
        table = getattr(store, "table_witness", None)
        if table is None or path != TABLE_PREFIX + "pandas_dp_witness":
            raise LedgerError(f"The ledger names the witness {path!r}, which only a guarded PostgreSQL ledger has. "
                              f"Nothing was charged.")
        return table()
    with _CACHE_LOCK:
        found = _CACHE.get(path)
        if found is None:
            found = _CACHE[path] = Witness(path)
        return found


def remove_witness(path: str) -> None:
    """Remove a witness whose ledger could not be created."""
    try:
        Path(path).unlink()
    except OSError:
        pass
