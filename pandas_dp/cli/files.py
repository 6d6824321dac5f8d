"""How ``python -m pandas_dp release`` writes its files: atomically, and leaving nothing when it is killed.

Every table and every version of the manifest is written by :func:`write_atomic`:
the content goes to a file of the output folder that no reader sees, is
fsynced, and is then renamed over its final name (a reader, or a run killed at
any moment, sees the old file or the new one, never half of one).

On Linux that file is an unnamed file of the folder (``O_TMPFILE``): a run
killed while writing, even by ``SIGKILL``, leaves nothing behind (the kernel
frees the file), and the file has a hidden name (``.NAME.XXXX.tmp``) only for
the instant between its link and the rename. Where the system or its file
system has no unnamed files, the file is a hidden temporary file from the
start, removed on any exception the run sees; one left by a run that was
killed is removed by ``--resume`` and ``--cancel`` (:func:`clear_temporary`).
"""

from __future__ import annotations

import glob
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable

__all__ = ["write_atomic", "clear_temporary"]

#: Where a process reaches its own open files by path (Linux).
_OWN_FILES = Path("/proc/self/fd")


def write_atomic(path: Path, write: Callable[..., Any]) -> None:
    """Write a file by ``write(temp_path)``, fsync it, and rename it over ``path`` (readers see old or new).

    ``temp_path`` is never ``path`` itself; it is an unnamed file (Linux) or a hidden temporary file
    ``.NAME.XXXX.tmp`` of ``path``'s folder, removed if ``write`` or the rename raises.
    """
    if not _write_unnamed(path, write):
        _write_named(path, write)
    _sync_folder(path.parent)


def clear_temporary(folder: Path, names: Iterable[str]) -> None:
    """Remove the hidden temporary files of ``names`` (files of ``folder``) that a killed run left."""
    for name in names:
        for temp in folder.glob(f".{glob.escape(name)}.*.tmp"):
            try:
                temp.unlink()
            except OSError:
                pass


def _temporary_name(path: Path) -> str:
    return f".{path.name}.{os.urandom(6).hex()}.tmp"


def _write_unnamed(path: Path, write: Callable[..., Any]) -> bool:
    """Write through an unnamed file of the folder, linked and renamed when complete; False where unsupported.

    False (nothing written, nothing left) when the system or the file system has no unnamed files,
    when ``write`` cannot open it (an ``OSError``), or when it cannot be given a name.
    """
    unnamed = getattr(os, "O_TMPFILE", 0)
    if not unnamed or not _OWN_FILES.is_dir():
        return False
    try:
        fd = os.open(path.parent, unnamed | os.O_WRONLY, 0o600)
    except OSError:  # a file system without unnamed files (EOPNOTSUPP, EISDIR on old kernels)
        return False
    try:
        try:
            write(_OWN_FILES / str(fd))
        except OSError:
            return False  # written again as a named temporary file, whose error (if any) is the one raised
        os.fsync(fd)
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            temp = _temporary_name(path)
            try:  # linkat(AT_SYMLINK_FOLLOW) of the open file: it gets a name only now
                os.link(_OWN_FILES / str(fd), temp, dst_dir_fd=folder)
            except OSError:
                return False
            try:
                os.replace(temp, path.name, src_dir_fd=folder, dst_dir_fd=folder)
            except BaseException:
                try:
                    os.unlink(temp, dir_fd=folder)
                except OSError:
                    pass
                raise
        finally:
            os.close(folder)
    finally:
        os.close(fd)
    return True


def _write_named(path: Path, write: Callable[..., Any]) -> None:
    """Write through a hidden temporary file of the folder, removed on any exception."""
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(temp))
        with open(temp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


def _sync_folder(folder: Path) -> None:
    """fsync the folder, so the rename is durable (best effort: not every system can)."""
    try:
        dir_fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
