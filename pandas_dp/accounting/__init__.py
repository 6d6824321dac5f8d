"""Accounting, stateful: budgets on a ContextVar, reservations and the durable ledgers."""
