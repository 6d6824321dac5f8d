"""Ledgers: durable, tamper-evident records of every privacy charge (SQLite files or PostgreSQL databases).

Create a ledger once, then open budgets on it by location::

    import pandas_dp as pdp
    pdp.Ledger.create("releases.ledger.sqlite")
    with pdp.budget(epsilon=2.0, ledger="releases.ledger.sqlite", name="census-2026") as b:
        ...

``python -m pandas_dp ledger init|verify|show PATH`` does the same from a shell.
"""

from __future__ import annotations

from pandas_dp.accounting.ledger._ledger import BudgetState, Ledger, LedgerLocation
from pandas_dp.accounting.ledger._ops import LedgerSummary

__all__ = ["Ledger", "LedgerSummary", "BudgetState", "LedgerLocation"]
