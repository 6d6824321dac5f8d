"""One exception hierarchy for pandas_dp.

Every error is raised before any privacy budget is charged. Each class also
inherits the builtin exception that fits, so existing ``except ValueError``
clauses keep working.
"""

from __future__ import annotations

__all__ = [
    "PandasDPError",
    "BudgetError",
    "BudgetExceededError",
    "NoActiveBudgetError",
    "DomainError",
    "SchemaError",
    "ParameterError",
    "DataSourceError",
    "LedgerError",
    "GroupbyReleaseWarning",
]


class PandasDPError(Exception):
    """Base class of every error raised by pandas_dp."""


class BudgetError(PandasDPError, RuntimeError):
    """A problem with the privacy budget (none active, or not enough left)."""


class BudgetExceededError(BudgetError):
    """The requested epsilon is more than the active budget has left.

    Nothing is charged when this is raised.
    """


class NoActiveBudgetError(BudgetError):
    """A release was requested outside any ``with pandas_dp.budget(...)`` block."""


class DomainError(PandasDPError, ValueError):
    """The domain (bins, categories, ranges) is missing, data-derived or invalid."""


class SchemaError(PandasDPError, ValueError):
    """An input table (entities, groups, hierarchy) failed validation.

    The message lists every failure case found (validation is lazy).
    """

    def __init__(self, message: str, failure_cases: object = None) -> None:
        super().__init__(message)
        self.failure_cases = failure_cases


class ParameterError(PandasDPError, ValueError):
    """An argument has the wrong type or value (epsilon, method, knobs...)."""


class DataSourceError(PandasDPError, RuntimeError):
    """The frame's own computation failed (e.g. a Dask graph reading files); nothing was charged.

    Its message never quotes the original error, whose text may hold private values.
    """


class LedgerError(PandasDPError, RuntimeError):
    """A ledger cannot be created, opened, verified or written.

    Raised when the location is bad (missing folder, a directory, a read-only
    file, an empty or non-path argument), when the file is missing, empty,
    truncated, garbled or not a pandas_dp ledger, when its hash chain or a
    budget's running total does not match its rows, or when the database
    fails during a charge. The message names the ledger and the fix.
    """


class GroupbyReleaseWarning(UserWarning):
    """A release was called inside a pandas ``groupby(...).apply`` (or ``agg``/``transform``).

    Each group's release charges its own loss, so the total is the loss times the number of
    groups, which the private data decide. Warned once per call site, with the fix: one
    release over all groups (``by=`` with public regions, or the group as a released column).
    """


class GroupbyAccessError(PandasDPError, TypeError):
    """``df.groupby(...).dp``: there is no DP accessor on a pandas groupby, by design.

    A release per pandas group charges once per group, and the groups are the
    ones the private data hold. The message gives the one-release form:
    ``df.dp.histogram(columns, ..., by=key, by_categories=[public groups])``.
    Not an ``AttributeError``: pandas' groupby answers a failed attribute with
    its own generic message, which would hide this one.
    """
