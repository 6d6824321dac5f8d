"""The registry of release kinds: what the accessors, the command line and the conformance suite read.

Every public release is an :class:`Entry`: its release function, the name of
its column argument, whether ``Series.dp`` offers it, and its one full
parameter table (:class:`~pandas_dp.releases.params.ParamTable`): every
argument in signature order with its kind and default, the privacy unit and
its bounds as one constraint
(:class:`~pandas_dp.releases.params.PrivacyUnit`), and its knobs (an entry's
own, or those of every histogram method through ``method=`` and
``**method_params``). Histogram methods are the entries of
:data:`~pandas_dp.releases.methods.METHODS`.

The table is the declaration: ``DataFrame.dp``/``Series.dp`` dispatch to the
entry's function through it, their docstrings' knob paragraphs are generated
from it, the CLI reads its allowed keys from it, and
``tests/test_declarations.py`` checks that the accessor's and the release
function's signatures equal it.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Callable, Mapping

from pandas_dp.releases.aggregate import aggregate
from pandas_dp.releases.count_of_counts import COUNT_OF_COUNTS_PARAMS, count_of_counts
from pandas_dp.releases.geography import GEOGRAPHY_METHODS, GEOGRAPHY_PARAMS
from pandas_dp.releases.geography_arguments import GEOGRAPHY_KEYWORDS
from pandas_dp.releases.hierarchical import hierarchical_histogram, range_query
from pandas_dp.releases.histogram import histogram
from pandas_dp.releases.methods import METHODS
from pandas_dp.releases.methods.hierarchical import TREE_PARAMS
from pandas_dp.releases.marginals import marginals
from pandas_dp.releases.quantiles import quantiles
from pandas_dp.releases.params import (KEYWORD, POSITIONAL, REQUIRED, UNIT_PARAMS, VAR_KEYWORD, Flag, Options, Param,
                                       ParamTable)
from pandas_dp.releases.unattributed import unattributed_histogram

__all__ = ["Entry", "ENTRIES", "HISTOGRAM_ARGUMENTS", "histogram_methods", "cli_keys", "cli_params",
           "cli_entry", "method_paragraph", "knobs_paragraph"]


def _arg(name: str, default: Any = None, kind: Any = KEYWORD, names: str = "") -> Param:
    """An argument checked by the release itself (its own order and messages), declared here.

    ``names``: how its value names columns of the frame (:data:`~pandas_dp.releases.params.COLUMN_SHAPES`),
    the declaration the command line checks a spec's columns against the input's header by.
    """
    return Param(name, None, default, kind=kind, names=names)


#: Shared arguments, declared once. A dict of bins, range, categories or other labels is keyed by column.
DOMAIN_PARAMS = (_arg("bins", names="keys"), _arg("range", names="keys"), _arg("categories", names="keys"))
#: The other cell of label domains (``histogram``, ``hierarchical_histogram``, ``marginals``): after ``categories``.
OTHER = _arg("other", names="keys")
#: The arguments of tables by geography, ``by=`` naming the frame's region columns.
GEOGRAPHY_ARGUMENTS = tuple(replace(p, names="labels") if p.name == "by" else p for p in GEOGRAPHY_PARAMS)
LOSS_PARAMS = (_arg("epsilon"), _arg("rho"))
RNG = _arg("rng")
NONNEGATIVE = Param("nonnegative", Flag(), False, "clip negative estimates at 0 (post-processing)")

#: The arguments of a histogram-like release that the command line accepts besides its method's knobs.
HISTOGRAM_ARGUMENTS = ("columns", *(p.name for p in DOMAIN_PARAMS), OTHER.name, NONNEGATIVE.name, *(p.name for p in UNIT_PARAMS))


def _methods(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The choices of a ``method=`` argument and their summaries: ``extra`` (an entry's own) first."""
    out = dict(extra or {})
    for name, method in METHODS.items():
        out.setdefault(name, method.summary)
    return out


def _default_text(value: Any) -> str:
    return f"``{value}``" if isinstance(value, Fraction) else f"``{value!r}``"


def _bullet(text: str) -> str:
    return textwrap.fill(text, width=100, initial_indent="- ", subsequent_indent="  ", break_long_words=False,
                         break_on_hyphens=False)


def method_paragraph(extra: Mapping[str, str] | None = None) -> str:
    """The description of ``method=``: every registered method with its one-line summary."""
    lines = ["Release method, one of (every method registered with ``histogram``):", ""]
    lines += [_bullet(f"``\"{name}\"``: {summary}.") for name, summary in _methods(extra).items()]
    return "\n".join(lines)


def knobs_paragraph() -> str:
    """The description of ``**method_params``: every histogram method's knobs, from its table."""
    lines = ["Knobs of the chosen method, as keyword arguments (each checked before any charge):", ""]
    for name, method in METHODS.items():
        if not method.params.params:
            continue
        knobs = "; ".join(f"``{p.name}`` ({p.constraint.describe() if p.constraint else 'any'}, default "
                          f"{_default_text(p.default)}): {p.help}" for p in method.params)
        lines.append(_bullet(f"``method=\"{name}\"``: {knobs}."))
    return "\n".join(lines)


def _method_param(default: str, extra: Mapping[str, str] | None = None) -> Param:
    choices = tuple(_methods(extra))
    return Param("method", Options(choices), default, "release method",
                 type="{" + ", ".join(f'"{c}"' for c in choices) + "}", doc=method_paragraph(extra))


METHOD_PARAMS = Param("method_params", None, kind=VAR_KEYWORD, doc=knobs_paragraph())

#: ``range_query``'s own choice besides the histogram methods.
_RANGE_AUTO = {"auto": "a hierarchical histogram with the best branching when its predicted average range "
                       "variance beats the flat histogram's, else the flat one (the default)"}

#: ``report_dropped=``: a charged estimate of the rows ``max_rows`` dropped (checked by the release itself).
REPORT_DROPPED = Param("report_dropped", None, None, type="float, optional", doc="""
    With ``privacy_unit`` and ``max_rows``: spend this share of the loss (in (0, 0.5], e.g. 0.05) on a
    private estimate of the share of rows the bound dropped, shown with the numbers (``params``,
    repr, ``to_frame().attrs["note"]``): one noisy pair (rows kept, rows dropped with each unit's
    count capped at ``max_rows``), sensitivity ``2 max_rows``, part of the one charge. The histogram
    runs at the rest of the loss. Not with ``by=``.""")

HISTOGRAM_PARAMS = ParamTable("histogram", (
    _arg("columns", REQUIRED, POSITIONAL, "labels"), *DOMAIN_PARAMS, OTHER, *LOSS_PARAMS, _arg("delta"),
    _method_param("identity"), RNG, NONNEGATIVE, *UNIT_PARAMS, REPORT_DROPPED, *GEOGRAPHY_ARGUMENTS, METHOD_PARAMS))
HIERARCHICAL_PARAMS = ParamTable("hierarchical_histogram", (
    _arg("columns", REQUIRED, POSITIONAL, "labels"), *DOMAIN_PARAMS, OTHER, *LOSS_PARAMS, *TREE_PARAMS, NONNEGATIVE,
    RNG,
    *UNIT_PARAMS))
RANGE_QUERY_PARAMS = ParamTable("range_query", (
    _arg("column", REQUIRED, POSITIONAL, "label"), _arg("ranges", REQUIRED, POSITIONAL), *DOMAIN_PARAMS, *LOSS_PARAMS,
    _method_param("auto", _RANGE_AUTO), RNG, NONNEGATIVE, *UNIT_PARAMS, METHOD_PARAMS))
COUNT_OF_COUNTS_ENTRY_PARAMS = ParamTable("count_of_counts", (
    _arg("group", REQUIRED, POSITIONAL, "label"), _arg("location", REQUIRED, POSITIONAL, "labels"), *LOSS_PARAMS,
    _arg("groups"), _arg("hierarchy"), *COUNT_OF_COUNTS_PARAMS, RNG,
    # "person" or "group" (a unit of the tables themselves), not a column; level weights are keyed by level.
    _arg("privacy_unit"), _arg("level_weights")))
#: The arguments that make ``marginals`` a table set by geography (every table for every region).
MARGINALS_GEOGRAPHY_PARAMS: tuple[Param, ...] = tuple(Param(name, None, None, names="labels" if name == "by" else "")
                                                      for name in GEOGRAPHY_KEYWORDS)
MARGINALS_PARAMS = ParamTable("marginals", (
    _arg("workload", REQUIRED, POSITIONAL, "tables"), DOMAIN_PARAMS[0], DOMAIN_PARAMS[2], OTHER, *LOSS_PARAMS,
    _arg("weights"),
    _arg("loss", "sum"),
    # The privacy unit with a row bound only (no cells scheme, no "auto"): checked by the release itself.
    Param("privacy_unit", None, None, type="column label, optional", names="label", doc="""
        The column identifying each person (customer, household): neighbouring frames then
        differ by all the rows of one unit. Default: one row is one unit."""),
    Param("max_rows", None, None, type="int, optional", doc="""
        With ``privacy_unit``: keep at most this many rows per unit in the domain, chosen at
        random (a public bound); every table's noise is calibrated to it."""),
    *MARGINALS_GEOGRAPHY_PARAMS,
    RNG,
    Param("nonnegative", Flag(), False, "non-negative consistent tables (post-processing)", type="bool", doc="""
        Return non-negative tables that stay consistent (a ``PublishedTables``): the weighted
        least-squares tables of a non-negative joint (post-processing). With ``by``: every region's
        tables, consistent across the geography too (top-down), public totals kept."""),
    Param("integer", Flag(), False, "non-negative integer consistent tables (post-processing)", type="bool",
          doc="""
        Return non-negative integer tables that stay consistent (a ``PublishedTables``; implies
        ``nonnegative``), with the rounding's extra error in ``error()`` (post-processing). With
        ``by``: every region's tables, consistent across the geography too; public totals must
        be whole numbers."""),
    Param("ordered", None, None, type="dict, optional", names="keys", doc="""
        Columns asked by ranges, keyed by column: ``"prefix"`` (every ``[first, k]``), ``"ranges"``
        (every range) or a list of public ranges (bin edges ``(low, high)``, half-open as
        ``range_query``, for binned columns; labels ``(first, last)`` for categories), which come
        with the column's cells: ``{"age": "ranges"}``. Each such column is measured through a tree
        of block counts chosen for its ranges, so ``range_query`` over it has polylogarithmic, not
        linear, error, with exact variances; the tables stay consistent (docs/methods/ordered.md),
        with ``by`` across the geography too.""")))
#: ``aggregate`` (issue 42): cells as for histogram, statistics of value columns, and the geography keywords
#: (DESIGN section 8; ``public_totals`` is refused: a value column's count leaves out its missing values).
AGGREGATE_PARAMS = ParamTable("aggregate", (
    _arg("columns", REQUIRED, POSITIONAL, "labels"), _arg("aggs", REQUIRED, POSITIONAL, "keys"),
    _arg("bounds", REQUIRED, names="keys"), _arg("resolution", names="keys"), _arg("bins", names="keys"),
    _arg("categories", names="keys"), OTHER, *LOSS_PARAMS, _arg("privacy_unit", names="label"),
    _arg("max_rows"), *MARGINALS_GEOGRAPHY_PARAMS, RNG))
#: ``quantiles`` (issue 43): one column's quantiles, public clipping bounds required; by geography with the
#: geography keywords (DESIGN section 8).
QUANTILES_PARAMS = ParamTable("quantiles", (
    _arg("column", REQUIRED, POSITIONAL, "label"), _arg("q", REQUIRED, POSITIONAL), _arg("bounds", REQUIRED),
    *LOSS_PARAMS, _arg("privacy_unit", names="label"), _arg("max_rows"),
    *(p for p in MARGINALS_GEOGRAPHY_PARAMS if p.name in ("by", "hierarchy", "by_categories")), RNG))
UNATTRIBUTED_PARAMS = ParamTable("unattributed_histogram", (
    _arg("group", REQUIRED, POSITIONAL, "label"), *LOSS_PARAMS, _arg("groups"), RNG, *UNIT_PARAMS))


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
    params : ParamTable
        Every argument after ``frame``, in signature order (kinds, defaults, constraints, docs).
    knobs : ParamTable or None
        Its own knobs, when they are not those of a histogram method (a part of ``params``).
    """

    name: str
    function: Callable[..., Any]
    column: str
    on_series: bool
    params: ParamTable
    knobs: ParamTable | None = None

    @property
    def arguments(self) -> tuple[str, ...]:
        """Its public arguments other than the loss, ``rng``, ``method`` and the knobs (for the command line)."""
        knobs = set(self.knobs.names) if self.knobs is not None else set()
        skip = {"epsilon", "rho", "rng", "method"} | knobs
        return tuple(p.name for p in self.params if p.name not in skip and p.kind is not VAR_KEYWORD)

    def call(self, frame: Any, arguments: Mapping[str, Any]) -> Any:
        """Run the release on ``frame`` with an accessor method's arguments (its ``locals()``, by name).

        Positional parameters are passed positionally, the others by keyword, and the variable
        keyword parameter (``**method_params``) is spread, as the table declares them.
        """
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for p in self.params:
            if p.kind is VAR_KEYWORD:
                kwargs.update(arguments.get(p.name, {}))
            elif p.kind is POSITIONAL:
                args.append(arguments[p.name])
            else:
                kwargs[p.name] = arguments[p.name]
        return self.function(frame, *args, **kwargs)


ENTRIES: dict[str, Entry] = {e.name: e for e in (
    Entry("histogram", histogram, "columns", True, HISTOGRAM_PARAMS),
    Entry("hierarchical_histogram", hierarchical_histogram, "columns", True, HIERARCHICAL_PARAMS, TREE_PARAMS),
    Entry("range_query", range_query, "column", True, RANGE_QUERY_PARAMS),
    Entry("count_of_counts", count_of_counts, "group", False, COUNT_OF_COUNTS_ENTRY_PARAMS, COUNT_OF_COUNTS_PARAMS),
    Entry("unattributed_histogram", unattributed_histogram, "group", True, UNATTRIBUTED_PARAMS),
    Entry("marginals", marginals, "workload", False, MARGINALS_PARAMS),
    Entry("aggregate", aggregate, "columns", False, AGGREGATE_PARAMS),
    Entry("quantiles", quantiles, "column", True, QUANTILES_PARAMS),
)}


def histogram_methods() -> dict[str, ParamTable]:
    """Every histogram method and its knobs (``histogram(method=...)``)."""
    return {name: spec.params for name, spec in METHODS.items()}


def cli_keys() -> dict[str, set[str]]:
    """Allowed keys of a release table in a CLI spec, per ``method`` (besides name, method and the loss)."""
    keys = {name: set(HISTOGRAM_ARGUMENTS) | set(table.names) for name, table in histogram_methods().items()}
    for name in GEOGRAPHY_METHODS:  # tables by geography: by=, hierarchy= (a file), level_weights=, integer=
        keys[name] |= {p.name for p in GEOGRAPHY_PARAMS}
    for name in keys:  # histogram(report_dropped=); the CLI's "hierarchical" calls hierarchical_histogram
        if name != "hierarchical":
            keys[name].add(REPORT_DROPPED.name)
    coc = ENTRIES["count_of_counts"]
    assert coc.knobs is not None, "count_of_counts declares its own knobs"
    keys["count_of_counts"] = set(coc.arguments) | (set(coc.knobs.names) - {"method", "progress"}) | {"estimator"}
    keys["unattributed"] = set(ENTRIES["unattributed_histogram"].arguments)
    keys["marginals"] = set(ENTRIES["marginals"].arguments)
    keys["aggregate"] = set(ENTRIES["aggregate"].arguments)
    keys["quantiles"] = set(ENTRIES["quantiles"].arguments)
    return keys


def cli_entry(method: str) -> Entry:
    """The registry entry a CLI release table of ``method`` runs (every histogram method: ``histogram``)."""
    named = {"hierarchical": "hierarchical_histogram", "unattributed": "unattributed_histogram"}.get(method, method)
    return ENTRIES[named] if named in ENTRIES else ENTRIES["histogram"]


def cli_params() -> dict[str, dict[str, Param]]:
    """The declaration (:class:`~pandas_dp.releases.params.Param`) of every key of :func:`cli_keys`, per method.

    Read from the entry's table, then its method's knobs (``estimator`` is count-of-counts' ``method``):
    what each key is, and whether (and how) it names columns of the input (:attr:`Param.names`), so the
    command line checks every column a spec names against the input's header from this one declaration.
    """
    out: dict[str, dict[str, Param]] = {}
    for method, keys in cli_keys().items():
        entry = cli_entry(method)
        tables = [entry.params, *([entry.knobs] if entry.knobs is not None else []),
                  *([METHODS[method].params] if method in METHODS else [])]
        found: dict[str, Param] = {}
        for table in tables:  # in the entry's signature order, then its knobs'
            for p in table:
                key = "estimator" if (method, p.name) == ("count_of_counts", "method") else p.name
                if key in keys and key not in found:
                    found[key] = p
        missing = sorted(keys - set(found))
        assert not missing, f"CLI keys of {method!r} without a declaration in the registry: {missing}"
        out[method] = found
    return out
