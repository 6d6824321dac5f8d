"""``python -m pandas_dp ledger init|verify|show LOCATION``: create and audit ledgers from a shell."""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from pandas_dp.errors import LedgerError
from pandas_dp.accounting.ledger import Ledger

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add the ``ledger`` command and its sub-commands."""
    p = sub.add_parser("ledger", help="create, verify and show ledgers (auditors)",
                       description="Create a ledger, verify its hash chain and running totals, or show its "
                                   "budgets and entries. LOCATION is a file path or a postgresql:// URL.")
    cmds = p.add_subparsers(dest="ledger_command", required=True)
    init = cmds.add_parser("init", help="create a new, empty ledger (never overwrites)",
                           description="Create a new, empty ledger. Refuses if something exists at LOCATION.")
    init.add_argument("location", help="path of the new ledger file, or a postgresql:// URL")
    init.add_argument("--witness", default=None, metavar="PATH",
                      help="a new witness file, kept apart from the ledger (another disk or owner, append-only): "
                           "every charge appends the ledger's head to it, and a ledger below its witness is refused")
    init.add_argument("--roles", nargs="?", const="pandas_dp_owner:pandas_dp_analyst", default=None,
                      metavar="OWNER:ANALYST",
                      help="PostgreSQL only: the guarded setup. Creates an owner role that owns the tables and an "
                           "analyst role (default pandas_dp_owner:pandas_dp_analyst) that reads them and charges "
                           "only through server functions (no UPDATE, DELETE or TRUNCATE), and a witness table. "
                           "Grant the analyst role to the analysts' login roles")
    verify = cmds.add_parser("verify", help="verify every hash and running total (exit 0 intact, 2 otherwise)",
                             description="Verify every record of a ledger: the chain of budgets, each budget's "
                                         "chain of entries and running total, and the reservations' returns. "
                                         "Exit status 0 and a one-line summary when intact, 2 with the reason "
                                         "otherwise.")
    verify.add_argument("location", help="path of the ledger file, or a postgresql:// URL")
    verify.add_argument("--head", action="append", default=[], metavar="H",
                        help="a ledger head printed earlier ('<entries>:<hash>', from `ledger verify`, a result's "
                             "params['ledger_head'] or a manifest): fail unless the ledger still holds every entry "
                             "that head covers, unchanged (repeatable)")
    verify.add_argument("--manifest", action="append", default=[], metavar="MANIFEST",
                        help="a manifest.json written by `release`: check every head and entry it records "
                             "(repeatable)")
    show = cmds.add_parser("show", help="print the budgets and the entries of a ledger",
                           description="Print a table of the ledger's budgets, then of its entries.")
    show.add_argument("location", help="path of the ledger file, or a postgresql:// URL")
    show.add_argument("--budget", default=None, help="show the entries of this budget only")


def manifest_heads(path: str) -> list[str]:
    """Every ledger head a release manifest records (LedgerError when the file is not a manifest)."""
    import json

    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError) as err:
        raise LedgerError(f"The manifest {path!r} cannot be read as JSON: {str(err)[:200]}.") from None
    releases = manifest.get("releases") if isinstance(manifest, dict) else None
    if not isinstance(releases, list):
        raise LedgerError(f"{path!r} is not a release manifest (it has no 'releases' list).")
    heads = [r["ledger_head"] for r in releases if isinstance(r, dict) and isinstance(r.get("ledger_head"), str)]
    budget = manifest.get("budget")
    if isinstance(budget, dict) and isinstance(budget.get("ledger_head"), str):
        heads.append(budget["ledger_head"])
    if not heads:
        raise LedgerError(f"The manifest {path!r} records no ledger head (it was written before heads existed, "
                          f"or by a run that released nothing).")
    return heads


def run(args: argparse.Namespace) -> int:
    """Run a ``ledger`` sub-command; return the exit status."""
    try:
        if args.ledger_command == "init":
            roles = None
            if args.roles is not None:
                parts = args.roles.split(":")
                if len(parts) != 2:
                    raise LedgerError(f"--roles takes OWNER:ANALYST (two role names). Got {args.roles!r}.")
                roles = (parts[0], parts[1])
            ledger = Ledger.create(args.location, witness=args.witness, roles=roles or False)
            print(f"Created an empty ledger at {ledger.location}. Open budgets on it with "
                  f"pandas_dp.budget(epsilon=..., ledger={ledger.location!r}, name=...).")
            if roles is not None:
                print(f"Guarded: role {roles[0]!r} owns it; grant role {roles[1]!r} to each analyst's login role "
                      f"(GRANT {roles[1]} TO alice;). Analysts charge only through the ledger's functions.")
            return 0
        ledger = Ledger.open(args.location)
        if args.ledger_command == "verify":
            heads = list(args.head)
            for path in args.manifest:
                heads += manifest_heads(path)
            summary = ledger.verify(heads=heads)
            proven = f"; holds every entry of {len(heads)} earlier head(s)" if heads else ""
            print(f"ok: {ledger.location}: {summary.budgets} budget(s), {summary.entries} entr"
                  f"{'y' if summary.entries == 1 else 'ies'}; every hash and running total verifies{proven}; "
                  f"head {summary.head}")
            return 0
        summary = ledger.verify()
        budgets = ledger.budgets()
        entries = ledger.entries(args.budget)
        with pd.option_context("display.width", 200, "display.max_colwidth", 60):
            print(f"Ledger {ledger.location}: {summary.budgets} budget(s), {summary.entries} entries "
                  f"(verified)\nhead {summary.head}\n")
            print("Budgets")
            print(budgets.to_string(index=False) if len(budgets) else "(none)")
            print("\nEntries" + (f" of budget {args.budget!r}" if args.budget else ""))
            cols = ["id", "time", "budget", "kind", "method", "columns", "measure", "amount_exact", "spent_exact",
                    "status"]
            print(entries[cols].to_string(index=False) if len(entries) else "(none)")
        return 0
    except LedgerError as err:
        word = "FAILED" if args.ledger_command == "verify" else "error"
        print(f"{word}: {err}", file=sys.stderr)
        return 2
