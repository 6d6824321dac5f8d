"""Run ``python -m pandas_dp ARGS`` for the CLI tests: in this process by default, as a subprocess on request.

A subprocess pays about 1.5 s of interpreter and import start-up a call, and the
CLI tests make dozens of calls. In-process, :func:`run` calls the same
``pandas_dp.__main__.main(argv)`` the module runs, in the given working folder,
with the standard streams captured and Python's default warning filters (as a
fresh interpreter has them, not pytest's ``error``); an exception escaping
``main`` becomes exit status 1 with its traceback on stderr, as the interpreter
would report it. Tests that kill, signal or race processes start real ones
themselves. ``PANDAS_DP_CLI_TESTS=subprocess`` (or ``PANDAS_DP_SLOW_DEPTH=full``)
runs every call as a real ``python -m pandas_dp`` subprocess.
"""

from __future__ import annotations

import contextlib
import io
import os
import sqlite3
import subprocess
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any, Iterator

from _slow import FULL

ROOT = Path(__file__).resolve().parents[1]
SUBPROCESS = FULL or os.environ.get("PANDAS_DP_CLI_TESTS", "") == "subprocess"


def spec_folder(tmp_path: Path, persons: Path, spec: str) -> Path:
    """A release folder: ``persons.csv`` (a link to ``persons``), ``spec.toml`` with ``spec``, an empty ledger."""
    import pandas_dp as pdp

    (tmp_path / "persons.csv").symlink_to(persons)
    (tmp_path / "spec.toml").write_text(spec)
    pdp.Ledger.create(tmp_path / "ledger.sqlite")
    return tmp_path


def ledger_entries(ledger: Path) -> list[tuple[Any, ...]]:
    """``(id, kind, method, status)`` of every ledger entry, read with plain SQL."""
    with sqlite3.connect(ledger) as conn:
        return conn.execute("SELECT id, kind, method, status FROM pandas_dp_entries ORDER BY id").fetchall()


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m pandas_dp *args`` in ``cwd`` (default: the repository root): exit status, stdout, stderr."""
    if SUBPROCESS:
        return subprocess.run([sys.executable, "-m", "pandas_dp", *args], capture_output=True, text=True,
                              timeout=300, cwd=cwd or ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    from pandas_dp.__main__ import main

    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    code: int
    with _fresh_process(), warnings.catch_warnings(), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        warnings.resetwarnings()
        warnings.simplefilter("default")
        for quiet in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
            warnings.simplefilter("ignore", quiet)
        try:
            os.chdir(cwd or ROOT)
            code = main(list(args))
        except SystemExit as exit_:  # argparse's usage errors and --help
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
            if exit_.code is not None and not isinstance(exit_.code, int):
                print(exit_.code, file=sys.stderr)
        except Exception:  # what the interpreter prints for an uncaught exception, and its status
            traceback.print_exc()
            code = 1
        finally:
            os.chdir(here)
    return subprocess.CompletedProcess(["python", "-m", "pandas_dp", *args], code, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def _fresh_process() -> Iterator[None]:
    """What a new process would not know: the ledger heads and checkpoints this one saw, its open stores and
    witnesses. Emptied for the call and given back after it, so a CLI call sees ledgers as a new process does
    (a rolled-back copy is refused by the witness or the head the user passes, not by this process's memory)."""
    from pandas_dp.accounting.ledger import _ledger, _ops, _witness

    saved = [(table, dict(table)) for table in (_ops._SEEN, _ops._POINTS, _ops._CHECKPOINTS, _witness._CACHE,
                                                _ledger._STORES)]
    for table, _ in saved:
        table.clear()
    try:
        yield
    finally:
        for table, content in saved:
            table.clear()
            table.update(content)
