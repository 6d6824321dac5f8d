"""Ledgers: durable, tamper-evident records of every privacy charge (SQLite files or PostgreSQL databases).

Create a ledger once, then open budgets on it by location::

    import pandas_dp as pdp
    pdp.Ledger.create("releases.ledger.sqlite")
    with pdp.budget(epsilon=2.0, ledger="releases.ledger.sqlite", name="census-2026") as b:
        ...

``python -m pandas_dp ledger init|verify|show PATH`` does the same from a shell.

This package's names are its one import surface; its ``_`` modules are private to it and can change behind
these names. Users meet :class:`Ledger`, :class:`LedgerSummary`, :class:`BudgetState` and
:class:`LedgerLocation`; budgets and reservations (:mod:`pandas_dp.accounting.budget`) and the command line
also use the machinery below:

* charging: :class:`Charge`, :func:`record` and the texts stored with an entry
  (:func:`columns_text`, :func:`entry_text`, :func:`params_text`), from ``_charge``;
* opening: :func:`store_for`, :func:`open_store`, :func:`entries_frame`, from ``_ledger``;
* the budget rows: :class:`Posting`, :func:`post`, :func:`transact`, :func:`open_budget`,
  :func:`new_meta`, :func:`read_meta`, :func:`check_remaining`, :func:`loss_of`,
  :func:`damaged`, :func:`verify_budget`, from ``_ops``;
* the hash chain: :class:`ChainError`, :func:`verify_budget_chain`, from ``_records``;
* the stores: :class:`Store`, :class:`Txn`, :class:`MemoryStore`, from ``_store``.
"""

from __future__ import annotations

from pandas_dp.accounting.ledger._charge import DELTA_SUFFIX, Charge, columns_text, entry_text, params_text, record
from pandas_dp.accounting.ledger._ledger import BudgetState, Ledger, LedgerLocation, entries_frame, open_store, store_for
from pandas_dp.accounting.ledger._ops import (NO_BLIND_RESTORE, LedgerSummary, Posting, check_remaining, damaged, loss_of,
                                              new_meta, open_budget, post, read_meta, transact, verify_budget)
from pandas_dp.accounting.ledger._records import ChainError, verify_budget_chain
from pandas_dp.accounting.ledger._store import MemoryStore, Store, Txn

__all__ = ["Ledger", "LedgerSummary", "BudgetState", "LedgerLocation",
           # the machinery budgets, reservations and the command line use
           "NO_BLIND_RESTORE", "DELTA_SUFFIX", "Charge", "columns_text", "entry_text", "params_text", "record",
           "entries_frame", "open_store", "store_for", "Posting", "check_remaining", "damaged", "loss_of", "new_meta",
           "open_budget", "post", "read_meta", "transact", "verify_budget", "ChainError", "verify_budget_chain",
           "MemoryStore", "Store", "Txn"]
