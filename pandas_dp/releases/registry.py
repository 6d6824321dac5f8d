"""The registry of release kinds: what the accessors, the command line and the conformance suite read.

Every public release is an :class:`Entry` (an accessor method: its release
function, the name of its column argument, whether ``Series.dp`` offers it,
and its knobs as a :class:`~pandas_dp.releases.params.ParamTable`); histogram
methods are the entries of :data:`~pandas_dp.releases.histogram.METHODS`.
A new method or knob is written once, in its release module, and appears in
``DataFrame.dp``/``Series.dp``, the CLI's allowed keys and the tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from pandas_dp.releases.count_of_counts import COUNT_OF_COUNTS_PARAMS, count_of_counts
from pandas_dp.releases.geography import GEOGRAPHY_ARGUMENTS, GEOGRAPHY_METHODS
from pandas_dp.releases.hierarchical import TREE_PARAMS, hierarchical_histogram, range_query
from pandas_dp.releases.histogram import METHODS, histogram
from pandas_dp.releases.params import ParamTable
from pandas_dp.releases.unattributed import unattributed_histogram

__all__ = ["Entry", "ENTRIES", "HISTOGRAM_ARGUMENTS", "histogram_methods", "cli_keys"]

#: The arguments every histogram-like release takes besides its method's knobs.
#: A privacy unit and its public bounds (every release but count-of-counts, whose unit is person or group).
UNIT_ARGUMENTS = ("privacy_unit", "max_rows", "max_cells", "max_rows_per_cell")
HISTOGRAM_ARGUMENTS = ("columns", "bins", "range", "categories", "nonnegative", *UNIT_ARGUMENTS)


@dataclass(frozen=True)
class Entry:
    """One accessor method.

    Attributes
    ----------
    name : str
        The method name on ``DataFrame.dp`` (and ``Series.dp``).
    function : callable
        The release function, ``function(frame, <column argument>, ...)``.
    column : str
        Name of the first argument, the column(s) read (dropped on ``Series.dp``).
    on_series : bool
        Whether ``Series.dp`` offers it (a Series is its one column).
    knobs : ParamTable or None
        Its own knobs, when they are not those of a histogram method.
    arguments : tuple of str
        Its other public arguments (for the command line).
    """

    name: str
    function: Callable[..., Any]
    column: str
    on_series: bool
    knobs: ParamTable | None = None
    arguments: tuple[str, ...] = ()


ENTRIES: dict[str, Entry] = {e.name: e for e in (
    Entry("histogram", histogram, "columns", True, arguments=HISTOGRAM_ARGUMENTS + GEOGRAPHY_ARGUMENTS),
    Entry("hierarchical_histogram", hierarchical_histogram, "columns", True, TREE_PARAMS, HISTOGRAM_ARGUMENTS),
    Entry("range_query", range_query, "column", True, arguments=("column", "ranges", *HISTOGRAM_ARGUMENTS[1:])),
    Entry("count_of_counts", count_of_counts, "group", False, COUNT_OF_COUNTS_PARAMS,
          ("group", "location", "groups", "hierarchy", "privacy_unit", "level_weights")),
    Entry("unattributed_histogram", unattributed_histogram, "group", True, None,
          ("group", "groups", *UNIT_ARGUMENTS)),
)}


def histogram_methods() -> dict[str, ParamTable]:
    """Every histogram method and its knobs (``histogram(method=...)``)."""
    return {name: spec.params for name, spec in METHODS.items()}


def cli_keys() -> dict[str, set[str]]:
    """Allowed keys of a release table in a CLI spec, per ``method`` (besides name, method and the loss)."""
    keys = {name: set(HISTOGRAM_ARGUMENTS) | set(table.names) for name, table in histogram_methods().items()}
    for name in GEOGRAPHY_METHODS:  # tables by geography: by=, hierarchy= (a file), level_weights=, integer=
        keys[name] |= set(GEOGRAPHY_ARGUMENTS)
    coc = ENTRIES["count_of_counts"]
    assert coc.knobs is not None, "count_of_counts declares its own knobs"
    keys["count_of_counts"] = set(coc.arguments) | (set(coc.knobs.names) - {"method", "progress"}) | {"estimator"}
    keys["unattributed"] = set(ENTRIES["unattributed_histogram"].arguments)
    return keys
