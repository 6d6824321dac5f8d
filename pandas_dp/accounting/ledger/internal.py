"""The ledger as the rest of the package sees it: one import surface over the private modules.

Budgets and reservations (:mod:`pandas_dp.accounting.budget`) and the command line import the
ledger's machinery from here, never from its ``_`` modules, so those can change behind it:

* charging: :class:`Charge`, :func:`record` and the texts stored with an entry
  (:func:`columns_text`, :func:`entry_text`, :func:`params_text`), from ``_charge``;
* opening: :func:`store_for`, :func:`open_store`, :func:`entries_frame`, from ``_ledger``;
* the budget rows: :class:`Posting`, :func:`post`, :func:`transact`, :func:`open_budget`,
  :func:`new_meta`, :func:`read_meta`, :func:`check_remaining`, :func:`loss_of`,
  :func:`damaged`, :func:`verify_budget`, from ``_ops``;
* the hash chain: :class:`ChainError`, :func:`verify_budget_chain`, from ``_records``;
* the stores: :class:`Store`, :class:`Txn`, :class:`MemoryStore`, from ``_store``.

The user-facing ledger API is :mod:`pandas_dp.accounting.ledger` (``Ledger``, ``LedgerSummary``).
"""

from __future__ import annotations

from pandas_dp.accounting.ledger._charge import DELTA_SUFFIX, Charge, columns_text, entry_text, params_text, record
from pandas_dp.accounting.ledger._ledger import entries_frame, open_store, store_for
from pandas_dp.accounting.ledger._ops import (NO_BLIND_RESTORE, Posting, check_remaining, damaged, loss_of, new_meta, open_budget, post,
                                              read_meta, transact, verify_budget)
from pandas_dp.accounting.ledger._records import ChainError, verify_budget_chain
from pandas_dp.accounting.ledger._store import MemoryStore, Store, Txn

__all__ = ["NO_BLIND_RESTORE", "DELTA_SUFFIX", "Charge", "columns_text", "entry_text", "params_text", "record", "entries_frame", "open_store", "store_for",
           "Posting", "check_remaining", "damaged", "loss_of", "new_meta", "open_budget", "post", "read_meta",
           "transact", "verify_budget", "ChainError", "verify_budget_chain", "MemoryStore", "Store", "Txn"]
