"""``python -m pandas_dp release SPEC.toml``: releases listed in a TOML spec, for ETL pipelines.

The spec names an input table (CSV or Parquet), a budget (its total, as
``epsilon`` for pure DP or ``rho`` for zCDP, and an existing ledger) and the
releases to run, each with exactly one of ``epsilon``/``rho``. Amounts are read
exactly as the library reads them (``0.1`` is 1/10), so ten releases of 0.1 fit
a budget of 1.0.

Order of work (see :mod:`pandas_dp.cli.preflight`): a full preflight that
charges and writes nothing (the spec; a rehearsal of every release on an empty
table; the input's header; the output folder; the ledger and the budget left
in it); then the spec's whole total is **reserved** in one ledger transaction,
so a second run on the same budget is refused before it reads anything; then
the data is read and each release is charged to the reservation (its own
ledger entry) before its noise is drawn, written atomically, and recorded in
``manifest.json`` (rewritten atomically after every release); finally the
unused part of the reservation is returned.

Exit statuses: 0 done; 2 for any problem found before a charge (nothing was
charged; the message says whether anything was read); 1 for a failure after a
charge.

Example spec::

    [budget]
    epsilon = 1.0                    # or rho = 0.5 (zCDP)
    ledger = "ledger.sqlite"         # an existing ledger (python -m pandas_dp ledger init ledger.sqlite)

    [input]
    path = "persons.csv"
    codebook = "codebook.csv"        # optional: public allowed values per column (checked, never the data)

    [output]
    dir = "released"
    format = "csv"                   # or "parquet"

    [[release]]
    name = "ages"
    method = "identity"
    columns = "age"
    bins = [0, 18, 30, 50, 65, 120]
    epsilon = 0.5

    [[release]]
    name = "tables"
    method = "marginals"             # consistent cross-tabulations (one tidy table of every table)
    workload = [["age", "sex"], ["sex", "state"]]
    bins = {age = [0, 18, 65, 120]}
    categories = {sex = ["F", "M"], state = ["Avalon", "Borealis"]}
    rho = 0.25                       # in a rho budget; epsilon = 0.5 in an epsilon budget

    [[release]]
    name = "households"
    method = "count_of_counts"
    group = "household_id"
    location = ["state", "county"]
    groups = "households.csv"        # the public Groups table
    max_size = 16
    epsilon = 0.5

    [[release]]
    name = "incomes"
    method = "aggregate"             # counts, sums, means per cell (one tidy row per cell and statistic)
    columns = "sex"                  # or [] for one row of all rows
    categories = ["F", "M"]
    aggs = {income = ["count", "mean"]}
    bounds = {income = [0, 250000]}  # public clipping bounds of every value column
    epsilon = 0.5

    [[release]]
    name = "income_deciles"
    method = "quantiles"             # one row per q: estimate, lower, upper
    column = "income"
    q = [0.1, 0.5, 0.9]
    bounds = [0, 250000]             # public clipping bounds
    epsilon = 0.5
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.errors import PandasDPError, ParameterError
from pandas_dp.privacy.loss import PrivacyLoss, check_delta, loss_from

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from pandas_dp.releases.params import POSITIONAL
from pandas_dp.releases.registry import cli_entry, cli_keys, cli_params
from pandas_dp.domain.grid import BinDomain
from pandas_dp.results import (CountOfCounts, GeographyHistogram, GeographyPublishedTables, Histogram, MarginalTables,
                               PublishedTables)
from pandas_dp.results.aggregate import Aggregate
from pandas_dp.results.geography_marginals import GeographyMarginalTables
from pandas_dp.results.quantiles import Quantiles

__all__ = ["SpecError", "ReleaseError", "Spec", "Release", "load_spec", "parse_spec", "release_table",
           "aggregate_table", "quantiles_table"]

_TOP = {"budget", "input", "output", "release", "seed"}
_BUDGET = {"epsilon", "rho", "delta", "ledger", "name"}
_INPUT = {"path", "format", "codebook"}
_OUTPUT = {"dir", "format", "confidence"}
_COMMON = {"name", "method", "epsilon", "rho", "delta"}
#: Allowed keys of a [[release]] table per method, read from the release registry (every histogram
#: method with its knobs, count_of_counts, unattributed), so a new method or knob is written once.
_KEYS = cli_keys()
_PARAMS = cli_params()
#: The keys of a [[release]] table that name columns of the input, per method, as the registry declares them;
#: in the order problems are reported: the released columns (the release's positional arguments), lists of
#: columns (``by``), single columns (``privacy_unit``), then the keys of dicts (``bins``, ``categories``...).
_COLUMN_PARAMS = {method: dict(sorted(((key, p) for key, p in params.items() if p.names), key=lambda item: (
    item[1].kind is not POSITIONAL, item[1].names == "keys", item[1].names == "label")))
    for method, params in _PARAMS.items()}
#: The keys a [[release]] table must give, per method (the release's required arguments).
_REQUIRED = {method: tuple(k for k, p in params.items() if p.required) for method, params in _PARAMS.items()}
_FORMATS = ("csv", "parquet")
_READ = {"nothing": "nothing was read or charged",
         "header": "only the input's header (its column names) was read, and nothing was charged",
         "data": "nothing was charged (the run's reservation was returned in full)"}


class SpecError(PandasDPError, ValueError):
    """A problem found before any charge (exit status 2); ``problems`` lists every one found.

    ``read`` says what was read before it was found: ``"nothing"``, ``"header"``
    (the input's column names) or ``"data"``.
    """

    def __init__(self, path: Any, problems: list[str], *, read: str = "nothing") -> None:
        self.problems = problems
        self.read = read
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"Invalid release run {str(path)!r} ({len(problems)} problem(s)); {_READ[read]}:\n{lines}")


class ReleaseError(PandasDPError, RuntimeError):
    """A failure after at least one release was charged (exit status 1)."""


@dataclass
class Release:
    """One release of the spec: its loss (``epsilon`` or ``rho``, exact) and its accessor arguments."""

    name: str
    method: str
    loss: PrivacyLoss
    args: dict[str, Any] = field(default_factory=dict)

    @property
    def epsilon(self) -> float:
        """The release's amount as a float (its epsilon, or its rho for a zCDP release)."""
        return float(self.loss.amount)

    def column_keys(self, *, read: bool = False) -> list[tuple[str, str]]:
        """``(spec key, column)`` of every input column the release names, each once (its first key).

        Every key whose declaration in the release registry names columns
        (:attr:`~pandas_dp.releases.params.Param.names`: ``columns``, ``workload``, ``group``,
        ``location``, ``by``, ``privacy_unit``, ``aggs``, and the column keys of ``bins``/``range``/
        ``categories``/``other``/``bounds``/``resolution`` dicts), in the registry's order: the preflight
        checks each against the input's header. ``read``: only the columns read (not those named as the
        keys of a keyword dict such as ``bins``; the keys of a positional dict, aggregate's ``aggs``,
        are the value columns it reads).
        """
        first: dict[str, str] = {}
        for key, param in _COLUMN_PARAMS[self.method].items():
            if read and param.names == "keys" and param.kind is not POSITIONAL:
                continue
            for column in param.columns_in(self.args.get(key)):
                if isinstance(column, str):
                    first.setdefault(column, key)
        return [(key, column) for column, key in first.items()]

    def columns(self) -> list[str]:
        """Columns of the input table the release reads (its released columns, regions, privacy unit...)."""
        return [column for _, column in self.column_keys(read=True)]

    def released(self) -> list[str]:
        """The released columns: those its column argument names (``columns``, ``workload``, ``group``)."""
        key = cli_entry(self.method).column
        param = _COLUMN_PARAMS[self.method][key]
        return list(dict.fromkeys(c for c in param.columns_in(self.args.get(key)) if isinstance(c, str)))

    def values(self) -> list[str]:
        """The value columns, read as numbers: the keys of a positional dict (``aggs`` of ``aggregate``)."""
        return list(dict.fromkeys(c for key, p in _COLUMN_PARAMS[self.method].items()
                                  if p.kind is POSITIONAL and p.names == "keys"
                                  for c in p.columns_in(self.args.get(key)) if isinstance(c, str)))


@dataclass
class Spec:
    """A validated release spec (paths resolved against the spec's folder)."""

    path: Path
    total: PrivacyLoss
    ledger: Path | str
    budget_name: str
    input: Path
    input_format: str
    output_dir: Path
    output_format: str
    seed: int | None
    releases: list[Release]
    confidence: float = 0.95
    codebook: Path | None = None
    #: Stages of the preflight that cannot run because the spec's own part of them is invalid (already
    #: reported): ``"input"`` (no usable ``[input] path``) and ``"ledger"`` (no usable budget total or ledger).
    unchecked: frozenset[str] = frozenset()

    @property
    def epsilon(self) -> float:
        """The budget's total as a float (epsilon, or rho for a zCDP budget)."""
        return float(self.total.amount)

    def asked(self) -> Fraction:
        """What the releases cost together in the budget's measure (exact)."""
        return sum((r.loss.charged_as(self.total.measure).amount for r in self.releases), Fraction(0))

    def asked_delta(self) -> Fraction:
        """The releases' deltas together (exact; 0 when none needs one)."""
        return sum((r.loss.delta for r in self.releases), Fraction(0))


def _fmt_of(path: Path, given: Any, what: str, problems: list[str]) -> str:
    fmt = given if given is not None else ("parquet" if path.suffix.lower() in (".parquet", ".pq") else "csv")
    if fmt not in _FORMATS:
        problems.append(f"{what} format must be one of {list(_FORMATS)}; got {fmt!r}.")
    return fmt


def _amount(table: dict[str, Any], where: str, problems: list[str], example: str) -> PrivacyLoss | None:
    """Exactly one of epsilon/rho, read exactly (to_fraction)."""
    given = {k: table[k] for k in ("epsilon", "rho") if k in table}
    if len(given) != 1:
        got = " and ".join(given) if given else "neither"
        problems.append(f"{where}: give exactly one of 'epsilon' (pure DP) or 'rho' (zCDP); got {got}. "
                        f"For example {example}.")
        return None
    try:
        return loss_from(**given)
    except ParameterError as err:
        problems.append(f"{where}: {err}")
        return None


def _table(raw: dict[str, Any], key: str, allowed: set[str], problems: list[str]) -> dict[str, Any]:
    part = raw.get(key, {})
    if not isinstance(part, dict):
        problems.append(f"[{key}] must be a table; got {part!r}.")
        return {}
    for extra in sorted(set(part) - allowed):
        problems.append(f"Unknown key {extra!r} in [{key}]; allowed keys: {sorted(allowed)}.")
    return part


def _release(i: int, entry: Any, problems: list[str]) -> Release | None:
    where = f"[[release]] #{i + 1}"
    if not isinstance(entry, dict):
        problems.append(f"{where} must be a table; got {entry!r}.")
        return None
    name = entry.get("name", f"release_{i + 1}")
    where = f"[[release]] {name!r}"
    method = entry.get("method")
    if not isinstance(method, str) or method not in _KEYS:
        problems.append(f"{where}: unknown method {method!r}; choose one of {sorted(_KEYS)}.")
        return None
    for extra in sorted(set(entry) - _COMMON - _KEYS[method]):
        problems.append(f"{where}: unknown key {extra!r} for method {method!r}; allowed keys: "
                        f"{sorted(_COMMON | _KEYS[method])}.")
    if "epsilon" not in entry and "rho" not in entry:
        problems.append(f"{where}: missing 'epsilon' (the privacy loss of this release), e.g. epsilon = 0.5 "
                        f"(or rho = 0.1 for zCDP).")
        loss = None
    else:
        loss = _amount(entry, where, problems, "epsilon = 0.5")
    if "delta" in entry and loss is not None:
        try:
            loss = loss.with_delta(check_delta(entry["delta"], what=where))
        except ParameterError as err:
            problems.append(str(err))
            loss = None
    labels_ok = True
    for req in _REQUIRED[method]:
        if req not in entry:
            problems.append(f"{where}: missing {req!r} for method {method!r}.")
            labels_ok = False
    for key, param in _COLUMN_PARAMS[method].items():  # every key that names columns, as declared
        if key not in entry or param.names == "keys":  # dicts keyed by column: checked by the release
            continue
        value = entry[key]
        if param.names == "tables":
            if not (isinstance(value, list) and value and all(
                    isinstance(t, list) and t and all(isinstance(c, str) and c for c in t) for t in value)):
                problems.append(f"{where}: {key!r} must be a non-empty list of tables, each a non-empty list of "
                                f"column names, e.g. {key} = [[\"age\", \"sex\"], [\"sex\", \"state\"]]; got "
                                f"{value!r}.")
                labels_ok = False
            continue
        one = isinstance(value, str) and value != ""
        many = param.names == "labels" and isinstance(value, list) and bool(value) and all(
            isinstance(v, str) and v for v in value)
        national = (method, key, value) == ("aggregate", "columns", [])  # no cells: one row for all rows
        if not (one or many or national):
            shape = "a column name" if param.names == "label" else "a column name or a non-empty list of column names"
            problems.append(f"{where}: {key!r} must be {shape}; got {value!r}.")
            labels_ok = False
    if not isinstance(name, str) or not name or any(c in name for c in "/\\\x00") or name in (".", ".."):
        problems.append(f"{where}: 'name' must be a non-empty string usable as a file name; got {name!r}.")
    if loss is None or not labels_ok:
        return None
    # Unknown keys are reported above and left out, so the later stages check the release without them.
    args = {k: v for k, v in entry.items() if k not in _COMMON and k in _KEYS[method]}
    if method == "marginals" and "workload" in args:
        args["workload"] = [tuple(t) for t in args["workload"]]
    return Release(str(name), method, loss, args)


def load_spec(path: str | Path) -> Spec:
    """Parse and statically validate a spec (no data is read, nothing is written).

    Raises
    ------
    SpecError
        Listing every problem found.
    """
    spec, problems = parse_spec(path)
    if problems or spec is None:
        raise SpecError(Path(path), problems)
    return spec


def parse_spec(path: str | Path) -> tuple[Spec | None, list[str]]:
    """The spec as far as it can be read, and every static problem found in it (nothing else is read).

    The spec holds the releases that could be read (each of the others has its
    problems listed), so the later stages of the preflight still check them:
    one run reports every problem. It is None only when the file is not a TOML
    spec at all. A spec without a usable budget total or ledger has
    ``"ledger"`` in :attr:`Spec.unchecked` (its stand-in total, 1, is never
    charged: a spec with problems is refused before any charge), one without
    an ``[input] path`` has ``"input"``.
    """
    path = Path(path)
    problems: list[str] = []
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, [f"The spec file {str(path)!r} does not exist."]
    except (OSError, UnicodeDecodeError) as err:
        return None, [f"The spec file {str(path)!r} cannot be read: {err}."]
    except tomllib.TOMLDecodeError as err:
        return None, [f"The spec is not valid TOML: {err}."]
    base = path.resolve().parent
    for extra in sorted(set(raw) - _TOP):
        problems.append(f"Unknown top-level key {extra!r}; allowed: {sorted(_TOP)}.")
    bud = _table(raw, "budget", _BUDGET, problems)
    inp = _table(raw, "input", _INPUT, problems)
    out = _table(raw, "output", _OUTPUT, problems)
    total = _amount(bud, "[budget]", problems, "epsilon = 1.0 (the total privacy loss of this run)")
    if "delta" in bud and total is not None:
        try:
            total = total.with_delta(check_delta(bud["delta"], what="[budget]"))
        except ParameterError as err:
            problems.append(str(err))
            total = None
    unchecked: set[str] = set() if total is not None else {"ledger"}
    ledger_given = bud.get("ledger")
    ledger: Path | str = ""
    if not isinstance(ledger_given, str) or not ledger_given.strip():
        problems.append("[budget] ledger must name an existing ledger file (or a postgresql:// URL); create it once "
                        "with `python -m pandas_dp ledger init PATH`. Got "
                        f"{ledger_given!r}.")
        unchecked.add("ledger")
    else:
        ledger = ledger_given if ledger_given.lower().startswith(("postgresql://", "postgres://")) else \
            base / ledger_given
    name = bud.get("name", "default")
    if not isinstance(name, str) or not name.strip():
        problems.append(f"[budget] name must be a non-empty string; got {name!r}.")
        unchecked.add("ledger")
    if "path" not in inp or not isinstance(inp.get("path"), str):
        problems.append("Missing [input] path: the CSV or Parquet file to release from.")
        unchecked.add("input")
    in_path = base / str(inp.get("path", ""))
    in_fmt = _fmt_of(in_path, inp.get("format"), "[input]", problems)
    if in_fmt not in _FORMATS:
        unchecked.add("input")
    codebook = None
    if "codebook" in inp:
        given = inp["codebook"]
        if not isinstance(given, str) or not given.strip():
            problems.append(f"[input] codebook must name a public CSV/Parquet file with columns 'column' and "
                            f"'value'; got {given!r}.")
        elif not (base / given).is_file():
            problems.append(f"[input] codebook {given!r} not found (or not a file).")
        else:
            codebook = base / given
    out_dir = base / str(out.get("dir", "released"))
    out_fmt = _fmt_of(Path(".csv"), out.get("format"), "[output]", problems)
    confidence = out.get("confidence", 0.95)
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 < confidence < 1:
        problems.append(f"[output] confidence must be a number in (0, 1), the coverage of the tables' lower/upper "
                        f"columns; got {confidence!r}. Use e.g. confidence = 0.95.")
        confidence = 0.95
    if "parquet" in (in_fmt, out_fmt):
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            problems.append("Parquet needs pyarrow: pip install pyarrow (or use format = \"csv\").")
    seed = raw.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        problems.append(f"'seed' must be a non-negative integer (reproducible experiments only); got {seed!r}.")
    entries = raw.get("release", [])
    if not isinstance(entries, list) or not entries:
        problems.append("No release listed: add at least one [[release]] table.")
        entries = []
    releases = [r for r in (_release(i, e, problems) for i, e in enumerate(entries)) if r is not None]
    names = [r.name for r in releases]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"Release name {dup!r} is used twice; names become file names, make them unique.")
    if total is not None and releases:
        asked, ok = Fraction(0), True
        for r in releases:
            try:
                asked += r.loss.charged_as(total.measure).amount
            except ParameterError:
                ok = False
                problems.append(f"[[release]] {r.name!r} asks for rho (zCDP), which a pure-epsilon budget cannot "
                                f"pay: zCDP gives no pure-DP guarantee. Give it an epsilon, or make the budget a "
                                f"rho budget.")
        if ok and asked > total.amount:
            problems.append(f"The releases ask for {total.parameter} = {float(asked):g} in total, above the budget "
                            f"{total.parameter} = {float(total.amount):g}. Lower their amounts or raise the "
                            f"[budget] total.")
        deltas = sum((r.loss.delta for r in releases), Fraction(0))
        if deltas > total.delta:
            problems.append(f"The releases ask for delta = {float(deltas):g} in total, above the budget's delta = "
                            f"{float(total.delta):g}. Give [budget] delta (at least {float(deltas):g}) or lower "
                            f"the releases' delta.")
    for r in releases:
        for key in ("groups", "hierarchy"):
            value = r.args.get(key)
            if value is not None and (r.method == "count_of_counts" or key == "hierarchy"):
                if not isinstance(value, str):
                    problems.append(f"[[release]] {r.name!r}: {key!r} must be the path of a public CSV/Parquet "
                                    f"table; got {value!r}.")
                elif not (base / value).is_file():
                    problems.append(f"[[release]] {r.name!r}: public {key} table {value!r} not found.")
                else:
                    r.args[key] = base / value
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        seed = None
    return Spec(path, total if total is not None else loss_from(epsilon=1), ledger, str(name), in_path, in_fmt,
                out_dir, out_fmt, seed, releases, float(confidence), codebook, frozenset(unchecked)), problems


def read_public_table(path: Path) -> pd.DataFrame:
    """A public Groups or Hierarchy table named by the spec."""
    return pd.read_parquet(path) if _fmt_of(path, None, "", []) == "parquet" else pd.read_csv(path)


def release_table(result: Any, confidence: float = 0.95) -> pd.DataFrame:
    """A flat, file-friendly table of a release.

    Parameters
    ----------
    result : Histogram, MarginalTables, CountOfCounts, Aggregate or UnattributedHistogram
    confidence : float
        Coverage of the ``lower``/``upper`` columns (the release's own interval rule).

    Returns
    -------
    DataFrame
        Histograms: one row per cell, numeric bins as ``<column>_low`` /
        ``<column>_high``, categories as their label, then ``estimate``,
        ``variance``, ``std_error``, ``lower``, ``upper``. Tables by geography:
        ``level, region``, the cells as above, ``estimate, variance,
        std_error, lower, upper``. Count-of-counts:
        ``level, region, size, groups``. Table sets: ``table`` (``"age x sex"``), every
        column's cell as for a histogram (empty where the table does not have it), then
        ``estimate, variance, std_error, lower, upper``. Published table sets
        (``nonnegative``/``integer``, by geography too): the same rows, then the published ``estimate`` and the
        unconstrained table's ``unconstrained_estimate, unconstrained_variance,
        unconstrained_std_error`` (a reference: no interval is claimed for the published values).
        Unattributed: ``rank, estimate, variance, std_error, lower, upper``.
        Statistics per cell (``aggregate``): one row per cell, value column and statistic: the cells as
        for a histogram (with ``by``: ``level, region`` first), then ``value_column``, ``statistic``,
        ``estimate, variance, std_error, lower, upper`` (see :func:`aggregate_table`).
        Quantiles: one row per ``q``, ``q, estimate, lower, upper`` (see :func:`quantiles_table`).
    """
    if isinstance(result, Aggregate):
        return aggregate_table(result, confidence)
    if isinstance(result, Quantiles):
        return quantiles_table(result, confidence)
    if isinstance(result, CountOfCounts):
        return result.to_frame().reset_index(drop=True)
    if isinstance(result, (PublishedTables, GeographyPublishedTables)):
        tidy = release_table(result.unconstrained, confidence).drop(columns=["lower", "upper"])
        tidy = tidy.rename(columns={"estimate": "unconstrained_estimate", "variance": "unconstrained_variance",
                                    "std_error": "unconstrained_std_error"})
        tidy.insert(list(tidy.columns).index("unconstrained_estimate"), "estimate",
                    result.to_frame()["estimate"].to_numpy())
        return tidy
    if isinstance(result, GeographyMarginalTables):
        # Every table of every region: level, region, table, every column's cell (bins as low/high), numbers.
        tidy = result.to_frame()
        tidy["table"] = [" x ".join(map(str, t)) for t in tidy["table"]]
        for dim in result.domain.dims:
            if isinstance(dim, BinDomain):
                where = list(tidy.columns).index(dim.column)
                cells = tidy.pop(dim.column)
                low = [np.nan if v is None else v.left for v in cells]
                high = [np.nan if v is None else v.right for v in cells]
                tidy.insert(where, f"{dim.column}_high", high)
                tidy.insert(where, f"{dim.column}_low", low)
        bounds = result.confidence_interval(confidence)
        tidy["lower"], tidy["upper"] = bounds["lower"].to_numpy(), bounds["upper"].to_numpy()
        return tidy
    if isinstance(result, MarginalTables):
        # One tidy table: the table's columns joined by " x ", then every column's cell (empty where a
        # table does not have it), then the numbers of that cell, table after table.
        parts = []
        for columns in result.workload:
            part = release_table(result.table(columns), confidence)
            part.insert(0, "table", " x ".join(map(str, columns)))
            parts.append(part)
        tidy = pd.concat(parts, ignore_index=True)
        numbers = ["estimate", "variance", "std_error", "lower", "upper"]
        return tidy[["table", *(c for c in tidy.columns if c != "table" and c not in numbers), *numbers]]
    if isinstance(result, GeographyHistogram):
        tidy = result.to_frame()
        for dim in result.domain.dims:
            if isinstance(dim, BinDomain):   # intervals as two number columns, like a histogram's table
                where = list(tidy.columns).index(dim.column)
                bins = pd.arrays.IntervalArray(tidy.pop(dim.column).array)
                tidy.insert(where, f"{dim.column}_high", np.asarray(bins.right))
                tidy.insert(where, f"{dim.column}_low", np.asarray(bins.left))
        bounds = result.confidence_interval(confidence).reset_index(drop=True)
        return pd.concat([tidy, bounds], axis=1)
    if isinstance(result, Histogram):
        grid = result.domain
        cells = np.unravel_index(np.arange(grid.size), grid.shape)
        data: dict[str, Any] = {}
        for dim, idx in zip(grid.dims, cells):
            if isinstance(dim, BinDomain):
                data[f"{dim.column}_low"] = dim.edges[idx]
                data[f"{dim.column}_high"] = dim.edges[idx + 1]
            else:
                data[dim.column] = dim.categories.to_numpy()[idx]
        body = result.to_frame().reset_index(drop=True)
        bounds = result.confidence_interval(confidence).reset_index(drop=True)
        return pd.concat([pd.DataFrame(data), body, bounds], axis=1)
    table = result.to_frame().rename_axis("rank").reset_index()
    return pd.concat([table, result.confidence_interval(confidence).reset_index(drop=True)], axis=1)


def quantiles_table(result: Any, confidence: float = 0.95) -> pd.DataFrame:
    """The table of a ``quantiles`` release: one row per ``q`` (and per region with ``by``, ``level`` and
    ``region`` first), then ``estimate, lower, upper`` at ``confidence``.

    There is no ``variance`` column: a quantile's interval is read from the release's CDF bands, not from a
    variance of the estimate; after the exponential mechanisms (up to 15 ``q``) ``lower`` and ``upper`` are
    empty (those estimates have no interval).
    """
    def tidy(table: pd.DataFrame) -> pd.DataFrame:  # one row per q, indexed by q (by geography: tidy already)
        return table if "q" in table.columns else table.reset_index()

    frame = tidy(result.to_frame())
    if frame.shape[0] and not np.all(frame["confidence_level"].to_numpy() == confidence):
        # the spec's level, read again from the same release (post-processing)
        frame = tidy(result.quantile(list(dict.fromkeys(frame["q"].tolist())), confidence_level=confidence))
    table = frame.drop(columns=["confidence_level"])
    return table.rename(columns={"ci_low": "lower", "ci_high": "upper"})


def aggregate_table(result: Any, confidence: float = 0.95) -> pd.DataFrame:
    """The tidy table of an ``aggregate`` release: one row per (cell, value column, statistic).

    Built from the result's public views only (:meth:`~pandas_dp.results.aggregate.Aggregate.to_frame`,
    ``std_error()``, ``confidence_interval(confidence)``), whatever the cells of its rows are: every
    named index level of ``to_frame()`` and every column of it that is no ``(value column, statistic)``
    pair (``level``, ``region`` with ``by``) is a cell column, in that order after the latter; an
    interval-valued cell column (numeric bins) becomes ``<column>_low``, ``<column>_high``; the unnamed
    index of a release without cells (one row for all rows) gives no column. Rows go cell by cell, the
    statistics of each cell in the order of ``aggs``; ``variance`` is ``std_error`` squared (NaN where
    the result flags a mean).

    A release with a statistic that is a date or a duration (the mean of a date column) writes
    ``estimate``, ``std_error``, ``lower`` and ``upper`` as text for every row (dates and durations
    as pandas prints them, numbers as Python does, empty where missing), so that one column holds
    one type in CSV and Parquet alike; the ``variance`` of a date or duration statistic is empty (a
    squared duration has no unit a reader parses).
    """
    estimates = result.to_frame()
    stats = [c for c in estimates.columns if isinstance(c, tuple) and len(c) == 2 and c[1] != ""]
    low, high = result.confidence_interval(confidence)
    parts = [t.loc[:, stats] for t in (estimates, result.std_error(), low, high)]
    timed = np.array([t[c].dtype.kind in "mM" for t in parts for c in stats]).reshape(len(parts), -1).any(axis=0)
    n, k = parts[0].shape
    cells: dict[str, Any] = {}
    for c in estimates.columns:
        if c not in stats:  # a cell column of to_frame() itself (level, region)
            cells[str(c[0] if isinstance(c, tuple) else c)] = estimates[c].to_numpy()
    for i, name in enumerate(estimates.index.names):
        if name is not None:
            cells[str(name)] = estimates.index.get_level_values(i).to_numpy()
    data: dict[str, Any] = {}
    for name, values in cells.items():
        if pd.api.types.infer_dtype(values, skipna=True) == "interval":
            bins = pd.arrays.IntervalArray(pd.array(values, dtype=object))
            data[f"{name}_low"], data[f"{name}_high"] = np.asarray(bins.left), np.asarray(bins.right)
        else:
            data[name] = values
    table = pd.DataFrame({name: np.repeat(values, k) for name, values in data.items()}, index=pd.RangeIndex(n * k))
    table["value_column"] = np.tile(np.array([c[0] for c in stats], dtype=object), n)
    table["statistic"] = np.tile(np.array([c[1] for c in stats], dtype=object), n)
    estimate, std_error, lower, upper = (_flat(part, bool(timed.any())) for part in parts)
    # A date or duration statistic's columns left out (NaN): the variance of the numbers only.
    numeric = parts[1].loc[:, ~timed].reindex(columns=parts[1].columns) if timed.any() else parts[1]
    variance = _flat(numeric, False) ** 2
    table["estimate"], table["variance"], table["std_error"] = estimate, variance, std_error
    table["lower"], table["upper"] = lower, upper
    return table


def _flat(part: pd.DataFrame, text: bool) -> np.ndarray:
    """A frame of statistics as one array, row after row: float64, or text (None where missing) when ``text``."""
    if not text:
        return part.to_numpy(dtype=np.float64).reshape(-1)
    columns = []
    for j in range(part.shape[1]):
        column = part.iloc[:, j]
        shown = column.astype(str).to_numpy(dtype=object)
        shown[column.isna().to_numpy()] = None
        columns.append(shown)
    return np.column_stack(columns).reshape(-1)


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON types."""
    return json.loads(json.dumps(value, default=str))
