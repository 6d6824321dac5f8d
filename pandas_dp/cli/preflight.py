"""What ``python -m pandas_dp release`` checks before any charge, and how it touches files.

Preflight, each step reading only public things: the spec; the public
codebook, when ``[input] codebook`` names one (categories that match no value
it lists; see :mod:`pandas_dp.cli.codebook`); a rehearsal of every release on
an empty table of the spec's columns (the library's own domain and knob
checks, each release under its own throwaway budget); the input's header
(column names only: the data's dtypes depend on its private rows); that the
output folder can be written (a probe file created and removed); that the
ledger exists and verifies and its budget has the whole spec left. Every step
runs whatever the earlier ones found, on what they left usable, and every
problem of every release is reported at once, each naming its release and
the spec key; nothing is written or charged by a failed or ``--check``
preflight.

Reading the data never fails or warns because of a row (boundary rule): CSV
is read with bad lines skipped, undecodable bytes replaced, local warnings
silenced, and a parser that gives up on broken quoting is replaced by a more
lenient one; numeric columns (those the spec gives numeric bins) are coerced so
that a stray token becomes a missing value, dropped like any value outside the
domain. Parquet is read by column projection only.
"""

from __future__ import annotations

import csv
import difflib
import io
import os
import tempfile
import warnings
from fractions import Fraction
from numbers import Real
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import pandas_dp as pdp
from pandas_dp.accounting.ledger import Ledger
from pandas_dp.cli.codebook import codebook_problems, domain_advice, read_codebook
from pandas_dp.cli.spec import Release, Spec, SpecError, read_public_table
from pandas_dp.errors import DomainError, LedgerError, PandasDPError, ParameterError

__all__ = ["preflight", "blank_frame", "rehearse", "read_header", "probe_output", "check_ledger", "read_input",
           "call_release", "numeric_columns", "header_problems"]


# -- the rehearsal on an empty table ------------------------------------------------------------------------


def _text_columns(r: "Release") -> set[str]:
    """Columns the release reads as labels (categories, groups, locations) rather than numbers."""
    cols = r.columns()
    if r.method in ("count_of_counts", "unattributed"):
        return set(cols)
    released, values = r.released(), set(r.values())
    # every column read but not released is a label (the by= region columns and the privacy unit's identifier),
    # except the value columns of aggregate, which are numbers
    labels = {c for c in cols if c not in released and c not in values}
    if r.method == "quantiles":
        return labels if _numeric_bounds(r) else labels | set(released)
    cats = r.args.get("categories")
    if cats is None:
        return labels
    return labels | {c for c in released if not isinstance(cats, dict) or c in cats}


def _real(value: Any) -> bool:
    """Whether a spec value is made of real numbers only (None allowed), through tables and lists."""
    if isinstance(value, dict):
        return all(_real(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(_real(v) for v in value)
    return value is None or (isinstance(value, Real) and not isinstance(value, bool))


def _numeric_pair(bounds: Any) -> bool:
    """Whether a spec's bounds pair is made of real numbers (not dates or durations), none missing."""
    return isinstance(bounds, list) and bool(bounds) and all(v is not None for v in bounds) and _real(bounds)


def _numeric_bounds(r: "Release") -> bool:
    """Whether a ``quantiles`` release's ``bounds`` are two real numbers (not dates or durations)."""
    return _numeric_pair(r.args.get("bounds"))


def numeric_columns(r: "Release") -> set[str]:
    """Columns with a numeric domain in the spec (bins and range made of real numbers only), and value columns
    with numeric bounds.

    A value column of ``aggregate`` (a key of ``aggs``) whose ``bounds`` are two numbers is read as numbers:
    a stray token in one row is a missing value of that row, never a text column that loses every row's
    value. One whose bounds are dates stays text, read as dates by the release itself. The column of
    ``quantiles`` follows the same rule with its ``bounds`` pair.
    """
    if r.method in ("count_of_counts", "unattributed"):
        return set()
    if r.method == "quantiles":   # numeric bounds: numbers; date or duration bounds: text the release parses
        return set(r.released()) if _numeric_bounds(r) else set()
    values = set(r.values())
    bounds = r.args.get("bounds")
    numbers = {c for c in values if isinstance(bounds, dict) and _numeric_pair(bounds.get(c))}
    cols = [c for c in r.columns() if c not in _text_columns(r) and c not in values]
    return numbers | (set(cols) if _real(r.args.get("bins")) and _real(r.args.get("range")) else set())


def blank_frame(spec: "Spec") -> pd.DataFrame:
    """An empty table with every column the spec reads: numeric where bins are given, text otherwise."""
    cols: dict[str, Any] = {}
    for r in spec.releases:
        text = _text_columns(r)
        for c in r.columns():
            cols.setdefault(c, pd.Series([], dtype=object if c in text else np.float64))
    return pd.DataFrame(cols)


def _totals_as_series(a: dict[str, Any]) -> None:
    """``public_totals = {level = {region = total}}`` in a spec: public facts, as Series by region."""
    totals = a.get("public_totals")
    if isinstance(totals, dict):
        a["public_totals"] = {level: pd.Series(v) if isinstance(v, dict) else v for level, v in totals.items()}


def _quantile(statistic: Any) -> Any:
    """``["quantile", q]`` (a TOML array) as the ``("quantile", q)`` the release takes; anything else as it is."""
    if isinstance(statistic, list) and len(statistic) == 2 and statistic[0] == "quantile":
        return tuple(statistic)
    return statistic


def _quantiles_as_tuples(aggs: Any) -> Any:
    """A spec's ``aggs``: ``{income = ["quantile", 0.9]}`` or ``{income = ["median", ["quantile", 0.9]]}``."""
    if not isinstance(aggs, dict):
        return aggs
    out = {}
    for column, spec in aggs.items():
        one = _quantile(spec)
        out[column] = one if one is not spec or not isinstance(spec, list) else [_quantile(s) for s in spec]
    return out


def call_release(frame: pd.DataFrame, r: "Release", rng: np.random.Generator | None) -> Any:
    """Run one release through the ``.dp`` accessor (``epsilon=`` or ``rho=`` as the spec says)."""
    a = dict(r.args)
    a[r.loss.parameter] = r.loss.amount
    if r.loss.delta:
        a["delta"] = r.loss.delta
    if r.method == "count_of_counts":
        for key in ("groups", "hierarchy"):
            if isinstance(a.get(key), Path):
                a[key] = read_public_table(a[key])
        if "estimator" in a:
            a["method"] = a.pop("estimator")
        return frame.dp.count_of_counts(a.pop("group"), a.pop("location"), rng=rng, progress=False, **a)
    if r.method == "unattributed":
        return frame.dp.unattributed_histogram(a.pop("group"), rng=rng, **a)
    if r.method == "marginals":
        if isinstance(a.get("hierarchy"), Path):   # a table set by geography: the public region table
            a["hierarchy"] = read_public_table(a["hierarchy"])
        _totals_as_series(a)
        return frame.dp.marginals(a.pop("workload"), rng=rng, **a)
    if r.method == "quantiles":
        a["columns"] = a.pop("column")
    columns = a.pop("columns")
    if isinstance(a.get("hierarchy"), Path):   # tables by geography: the public region table
        a["hierarchy"] = read_public_table(a["hierarchy"])
    _totals_as_series(a)
    if r.method == "aggregate":
        return frame.dp.aggregate(columns, _quantiles_as_tuples(a.pop("aggs")), rng=rng, **a)
    if r.method == "quantiles":
        return frame.dp.quantiles(columns, a.pop("q"), rng=rng, **a)
    if r.method == "hierarchical":
        return frame.dp.hierarchical_histogram(columns, rng=rng, **a)
    return frame.dp.histogram(columns, method=r.method, rng=rng, **a)


def rehearse(spec: "Spec", frame: pd.DataFrame, codebook: dict[str, list[str]] | None = None) -> list[str]:
    """Run every release on ``frame`` (no rows), each under its own throwaway budget; return the problems found.

    Each release is rehearsed under a budget of exactly its own amount, so one
    release's problem never hides another's. A release whose public Groups or
    Hierarchy table was not found is skipped (the spec's check reported it).
    A column without ``categories`` or ``bins`` gets the library's advice
    followed by its form in the spec (with the codebook's values when the
    codebook lists the column).
    """
    problems: list[str] = []
    for r in spec.releases:
        tables = ("groups", "hierarchy") if r.method == "count_of_counts" else ("hierarchy",)
        if any(isinstance(r.args.get(key), str) for key in tables):  # a public table not found: reported
            continue
        own: dict[str, Any] = {r.loss.parameter: r.loss.amount, "delta": r.loss.delta or None}
        try:
            with pdp.budget(**own):
                call_release(frame, r, np.random.default_rng(0))
        except (PandasDPError, TypeError, ValueError, KeyError) as err:
            advice = domain_advice(r, codebook) if isinstance(err, DomainError) else ""
            problems.append(f"[[release]] {r.name!r}: {type(err).__name__}: {err}" + (f" {advice}" if advice
                                                                                         else ""))
    return problems


# -- the input's header, the output folder, the ledger ----------------------------------------------------------


def read_header(spec: "Spec") -> list[str]:
    """The input's column names, from its first line alone (no data line is read). Raises ValueError.

    A CSV header is the first line, split by the dialect :func:`read_input`
    reads the data with (so the names checked are the names read), decoded as
    UTF-8 with undecodable bytes replaced: a malformed data line cannot make
    it fail. A Parquet header is the file's schema. Messages are built from
    public facts only (the path, the spec's column names, what to check), never
    from a parser's text, which can quote the file's lines or name their
    numbers.
    """
    path = spec.input
    if not path.is_file():
        raise ValueError(f"[input] path {str(path)!r} not found (or not a file).")
    if not os.access(path, os.R_OK):
        raise ValueError(f"[input] path {str(path)!r} is not readable.")
    wanted = sorted({c for r in spec.releases for c in r.columns()})
    if spec.input_format == "parquet":
        import pyarrow.parquet as pq

        try:
            return [str(c) for c in pq.read_schema(path).names]
        except Exception:  # noqa: BLE001 - its text may quote the file: not shown
            raise ValueError(f"[input] {str(path)!r} cannot be read as Parquet: its schema (the column names) "
                             f"could not be read (the reader's message is not shown: it could quote the file). "
                             f"Check that it is a complete Parquet file with the spec's columns {wanted}, or give "
                             f"[input] format = \"csv\" for a CSV file.") from None
    try:
        with open(path, "rb") as f:
            first = f.readline()
    except OSError as err:
        raise ValueError(f"[input] {str(path)!r} cannot be read ({err.strerror}).") from None
    if not first:
        raise ValueError(f"[input] {str(path)!r} is empty: it has no header line of column names.")
    line = first.decode("utf-8", errors="replace").removeprefix("\ufeff").removesuffix("\n").removesuffix("\r")
    if not line.strip():
        raise ValueError(f"[input] {str(path)!r} has a blank first line: the first line must be the header "
                         f"line of column names (the spec's columns {wanted}), the data on the lines after it.")
    return [str(c) for c in _header_fields(line)]


def header_problems(spec: "Spec", header: list[str]) -> list[str]:
    """Every column of every release that the input's header lacks: one problem per release and spec key.

    Every column the spec names is checked, under every key the release registry declares as naming
    columns (:meth:`~pandas_dp.cli.spec.Release.column_keys`: ``columns``, ``workload``, ``by``,
    ``privacy_unit``, ``group``, ``location``, the keys of ``bins``/``range``/``categories``/``other``
    dicts). Each problem names the release, the spec key and the fix. The header itself is never printed: a
    file exported without its header line has its first data row there, so only
    names the spec declares are listed. A spelling hint names the header's column closest to the
    missing one, and only when the header holds at least one of the spec's columns (so it is a line of
    column names, not a data row): the names a user can fix the spec with are those of the file.
    """
    present = set(header)
    wanted = sorted({c for r in spec.releases for c in r.columns()})
    found = [c for c in wanted if c in present]
    held = f"of the spec's columns it holds {found}" if found else "it holds none of the spec's columns"
    context = (f"its first line has {len(header)} field(s) and {held} (its other names are not listed: if the "
               f"file was exported without its header line, they are a data row)")
    # Spelling hints come from the file's own names (a column the spec means but misspelt is one the spec
    # does not name yet); a first line that holds none of the spec's columns may be a data row: no hint.
    names = [c for c in dict.fromkeys(header) if c] if found else []
    problems = []
    for r in spec.releases:
        by_key: dict[str, list[str]] = {}
        for key, column in r.column_keys():
            if column not in present:
                by_key.setdefault(key, []).append(column)
        for key, missing in by_key.items():
            hints = []
            for column in missing:
                close = difflib.get_close_matches(column, names, n=1)
                if close:
                    hints.append(f"{column!r} (did you mean {close[0]!r}?)")
            hint = f" Spelling: {', '.join(hints)}." if hints else ""
            problems.append(f"[[release]] {r.name!r}: {key} {missing} not in the input {str(spec.input)!r}: "
                            f"{context}.{hint} Fix {key!r} in the spec, or export the input with a header line "
                            f"naming {'it' if len(missing) == 1 else 'them'}.")
    return problems


def probe_output(folder: Path) -> None:
    """The output folder can be written: a probe file is created and removed (the folder is not created).

    Raises ValueError with the reason.
    """
    existing = folder
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        raise ValueError(f"[output] dir {str(folder)!r} cannot be created: {str(existing)!r} is a file.")
    try:
        fd, probe = tempfile.mkstemp(prefix=".pandas_dp_probe_", dir=existing)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise ValueError(f"[output] dir {str(folder)!r} is not writable ({err.strerror} in {str(existing)!r}). "
                         f"Pick a writable folder.") from None


def check_ledger(spec: "Spec", asked: Fraction) -> Fraction:
    """The ledger exists, verifies, and its budget has ``asked`` left; return what it has left (reads only).

    Raises ValueError with the reason.
    """
    try:
        state = Ledger.open(spec.ledger).budget_state(spec.budget_name)
    except LedgerError as err:
        raise ValueError(f"[budget] ledger: {err}") from None
    total = spec.total.amount
    if state is None:
        return total
    if state.measure != spec.total.measure or state.total != total:
        parameter = {"pure": "epsilon", "zcdp": "rho"}.get(state.measure, state.measure)
        raise ValueError(f"The ledger already holds a budget named {spec.budget_name!r} with {parameter} = "
                         f"{float(state.total):g} ({state.measure}); the spec says {spec.total.parameter} = "
                         f"{float(total):g} ({spec.total.measure}). Use the same total, or a new [budget] name.")
    if asked > state.remaining:
        raise ValueError(f"The ledger has {spec.total.parameter} = {float(state.remaining):g} left of budget "
                         f"{spec.budget_name!r}; the releases ask for {float(asked):g}. A run that was killed keeps "
                         f"its reservation: continue it with `release SPEC --resume`, or give it back with `--cancel`. "
                         f"Otherwise use a new [budget] name or ledger, or lower the releases' amounts.")
    return state.remaining


# -- reading the private data -------------------------------------------------------------------------------------


#: A data line of the CLI's CSV dialect: fields separated by commas, each either unquoted (no quote, comma
#: or carriage return in it) or wholly quoted with ``"`` (a ``""`` inside is one quote), an optional final
#: carriage return (CRLF files). A quoted field never continues onto the next line.
_FIELD = '(?:"(?:[^"]|"")*"|[^",\\r]*)'
_LINE = f"^{_FIELD}(?:,{_FIELD})*\\r?$"
_QUOTED = '"(?:[^"]|"")*"'


def _read_csv(path: Path, columns: list[str]) -> pd.DataFrame:
    """CSV rows read line by line: one private line is at most one row and never changes another.

    The dialect (the CLI guide, "Reading CSV"): the file is decoded as UTF-8 (undecodable bytes
    replaced) and split into lines at ``\\n``; the first line is the header and blank lines are
    skipped. Every other line is one record, or is dropped, uncounted, when it is not a line of
    the dialect (:data:`_LINE`: a quote that does not wrap a whole field, a quoted field that does
    not close on its line, a bare carriage return) or has more fields than the header (fewer: the
    missing fields are missing values). Lines are checked with one vectorized regular expression
    (Arrow, RE2); the kept lines are parsed by pandas in one pass, where a well-formed line is
    exactly one record. So no line changes how any other line is read (a stray quote used to
    swallow every later row). A file that cannot be read, or whose header lacks one of ``columns``
    (public facts: it changed since the preflight), raises ValueError: no release runs on a table of no rows.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    empty = pd.DataFrame({c: pd.Series([], dtype=object) for c in columns})
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as err:  # the file itself (public): never a table of no rows released as if it were the data
        raise ValueError(f"[input] {str(path)!r} cannot be read ({err.strerror}).") from None
    lines = text.removeprefix("\ufeff").split("\n")
    del text
    header = _header_fields(lines[0].removesuffix("\r"))
    absent = [c for c in columns if c not in header]
    if absent:  # the header changed since the preflight read it: nothing may be released from absent columns
        raise ValueError(f"[input] {str(path)!r} has no column(s) {absent} (its header changed since it was "
                         f"checked).")
    width = len(header)
    data = pa.array(lines[1:], type=pa.string())
    if width <= 1000:  # RE2 bounds repetitions at 1000: one pass checks the form and the number of fields
        kept = pc.match_substring_regex(data, f"^{_FIELD}(?:,{_FIELD}){{0,{width - 1}}}\\r?$")
    else:
        fields = pc.add(pc.count_substring(pc.replace_substring_regex(data, _QUOTED, ""), ","), 1)
        kept = pc.and_(pc.match_substring_regex(data, _LINE), pc.less_equal(fields, width))
    for i in np.flatnonzero(~kept.to_numpy(zero_copy_only=False)):
        lines[int(i) + 1] = ""  # a blank line: skipped
    del data
    body = "\n".join(lines)
    del lines
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pd.read_csv(io.BytesIO(body.encode("utf-8")), usecols=columns, on_bad_lines="skip", engine="c",
                               low_memory=False, index_col=False)
    except (pd.errors.ParserError, csv.Error, ValueError, IndexError):  # pragma: no cover - lines are well-formed
        return empty


def _header_fields(header: str) -> list[str]:
    """The header's names (public), to count the fields a data line may have."""
    try:
        return next(csv.reader([header], strict=True))
    except (csv.Error, StopIteration):
        return header.split(",")


def read_input(spec: "Spec") -> pd.DataFrame:
    """The columns the spec reads; numeric-domain columns coerced (a stray token becomes missing)."""
    needed = sorted({c for r in spec.releases for c in r.columns()})
    if spec.input_format == "parquet":
        frame = pd.read_parquet(spec.input, columns=needed)
    else:
        frame = _read_csv(spec.input, needed)
    numeric = set().union(*(numeric_columns(r) for r in spec.releases)) if spec.releases else set()
    for c in sorted(numeric):
        if c in frame.columns and not pd.api.types.is_numeric_dtype(frame[c].dtype):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                frame[c] = pd.to_numeric(frame[c], errors="coerce")
    return frame


# -- the whole preflight ------------------------------------------------------------------------------------------


def preflight(spec: "Spec", *, resuming: bool = False, problems: list[str] | None = None) -> Fraction:
    """Every check before a charge; return what the ledger's budget has left.

    Every stage runs on what it can, whatever the earlier ones found, and every
    problem of every release is raised at once (one report, before any budget
    is spent or any output written): ``problems`` are those the spec's own
    check found (:func:`~pandas_dp.cli.spec.parse_spec`); then the public
    codebook, the rehearsal of every release, the input's header (column names
    only), the output folder, the manifest and the ledger. Only public inputs
    are read: the spec, the codebook, the public tables it names, the header.

    A new run needs the spec's whole total left and no manifest in the output
    folder (a manifest is never overwritten); a run that resumes needs its own
    manifest or reservation instead (checked by :func:`pandas_dp.cli.run.execute`).

    Raises
    ------
    SpecError
        Saying what was read (nothing, or the header) and listing the problems.
    """
    problems = list(problems or [])
    codebook = None
    if spec.codebook is not None:
        try:
            codebook = read_codebook(spec.codebook)  # public, like the spec
        except ValueError as err:
            problems.append(str(err))
    problems += rehearse(spec, blank_frame(spec), codebook)
    if codebook:
        problems += codebook_problems(spec, codebook)
    read = "nothing"
    if "input" not in spec.unchecked:
        try:
            header = read_header(spec)
        except ValueError as err:
            problems.append(str(err))
        else:
            read = "header"
            problems += header_problems(spec, header)
    try:
        probe_output(spec.output_dir)
    except ValueError as err:
        problems.append(str(err))
    if not resuming and (spec.output_dir / "manifest.json").exists():
        problems.append(f"{str(spec.output_dir / 'manifest.json')!r} exists: it documents an earlier run, and a "
                        f"manifest is never overwritten. Continue that run with `release SPEC --resume`, cancel it "
                        f"with `--cancel`, or set a new [output] dir.")
    remaining = Fraction(0)
    if "ledger" not in spec.unchecked:
        try:
            asked = Fraction(0) if resuming else spec.asked()
        except ParameterError:  # a rho release under an epsilon budget: the spec's check reported it
            asked = Fraction(0)
        try:
            remaining = check_ledger(spec, asked)
        except ValueError as err:
            problems.append(str(err))
    if problems:
        raise SpecError(spec.path, problems, read=read)
    return remaining
