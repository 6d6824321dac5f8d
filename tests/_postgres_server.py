"""A throwaway PostgreSQL server for the ledger tests: initdb + pg_ctl on a temp folder, Unix socket only.

``initdb`` refuses to run as root, so as root the server runs as the
``postgres`` system user (``runuser -u postgres --``) on a folder owned by
it. The server listens on a Unix socket in its own folder only
(``listen_addresses=''``), on a port number no other server here uses.
``fsync=off``: the tests kill clients, never the server, and commit
durability against an OS crash is PostgreSQL's own guarantee, not ours to
test; it makes the suite fast on a shared disk.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

BIN_DIRS = ("/usr/local/bin", "/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin",
            "/usr/lib/postgresql/17/bin")


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for folder in BIN_DIRS:
        candidate = Path(folder) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


@dataclass
class Server:
    """A running server: ``url(dbname)`` gives a connection URL."""

    folder: Path
    port: int
    as_user: list[str]
    pg_ctl: str

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@/{dbname}?host={self.folder}&port={self.port}"

    def stop(self) -> None:
        subprocess.run([*self.as_user, self.pg_ctl, "-D", str(self.folder / "data"), "-m", "immediate", "stop"],
                       capture_output=True, timeout=60)
        shutil.rmtree(self.folder, ignore_errors=True)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start() -> Server | str:
    """Start a server, or return the reason it cannot be started here (for a clean skip)."""
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    if not initdb or not pg_ctl:
        return "PostgreSQL binaries (initdb, pg_ctl) not found; install the server (apt-get install postgresql)"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install 'pandas-dp[postgres]')"
    as_user: list[str] = []
    folder = Path(tempfile.mkdtemp(prefix="pandas_dp_pg_"))
    if os.geteuid() == 0:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(folder, ignore_errors=True)
            return "running as root and there is no 'postgres' system user to run initdb as"
        runuser = shutil.which("runuser")
        if not runuser:
            shutil.rmtree(folder, ignore_errors=True)
            return "running as root and runuser is missing"
        os.chown(folder, owner.pw_uid, owner.pw_gid)
        as_user = [runuser, "-u", "postgres", "--"]
    port = _free_port()
    init = subprocess.run([*as_user, initdb, "-D", str(folder / "data"), "-A", "trust", "-U", "postgres", "-E",
                           "UTF8", "--no-sync"], capture_output=True, text=True, timeout=120)
    if init.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        return f"initdb failed: {init.stderr.strip()[-300:]}"
    options = f"-p {port} -k {folder} -c listen_addresses='' -c fsync=off -c max_connections=60"
    run = subprocess.run([*as_user, pg_ctl, "-D", str(folder / "data"), "-o", options, "-l", str(folder / "log"),
                          "-w", "-t", "60", "start"], capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        log = (folder / "log").read_text() if (folder / "log").exists() else ""
        shutil.rmtree(folder, ignore_errors=True)
        return f"pg_ctl start failed: {run.stderr.strip()[-200:]} {log[-300:]}"
    return Server(folder, port, as_user, pg_ctl)


def new_database(server: Server, name: str) -> str:
    """Create an empty database; return its URL."""
    import psycopg

    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return server.url(name)
