"""``python -m pandas_dp release SPEC.toml``: releases listed in a TOML spec, for ETL pipelines.

The spec names an input table (CSV or Parquet), a budget (epsilon and a
SQLite ledger file) and the releases to run. The whole spec is validated
before the data is read: unknown keys, missing or non-positive epsilons, a
total above the budget (or above what the ledger has left), unknown methods,
bad domains and bad method knobs (each release is rehearsed on an empty table
of the same columns, under a throwaway budget). After reading the data, its
column names and dtypes (not its values) are checked the same way, so no
release is charged unless all of them can run. Each release is written as
CSV or Parquet and described in ``manifest.json``.

Example spec::

    [budget]
    epsilon = 1.0
    ledger = "ledger.sqlite"         # relative to the spec's folder

    [input]
    path = "persons.csv"

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
    name = "households"
    method = "count_of_counts"
    group = "household_id"
    location = ["state", "county"]
    groups = "households.csv"        # the public Groups table
    max_size = 16
    epsilon = 0.5
"""

from __future__ import annotations

import json
import math
import numbers
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["SpecError", "Spec", "load_spec", "run_release"]

_TOP = {"budget", "input", "output", "release", "seed"}
_BUDGET = {"epsilon", "ledger", "name"}
_INPUT = {"path", "format"}
_OUTPUT = {"dir", "format"}
_COMMON = {"name", "method", "epsilon"}
_HIST = {"columns", "bins", "range", "categories", "nonnegative"}
_KEYS = {
    "identity": _HIST,
    "hierarchical": _HIST | {"branching", "budget_split", "include_root", "consistent"},
    "ahp": _HIST | {"epsilon_split", "eta", "clustering"},
    "dpcube": _HIST | {"epsilon_split", "threshold", "estimate"},
    "auto": _HIST | {"expected_total", "workload"},
    "count_of_counts": {"group", "location", "groups", "hierarchy", "max_size", "estimator", "merge"},
    "unattributed": {"group", "groups"},
}
_REQUIRED = {"count_of_counts": ("group", "location"), "unattributed": ("group",)}
_FORMATS = ("csv", "parquet")


class SpecError(Exception):
    """An invalid release spec; ``problems`` lists every problem found."""

    def __init__(self, path: Any, problems: list[str]) -> None:
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"Invalid release spec {str(path)!r} ({len(problems)} problem(s)); nothing was read "
                         f"or charged:\n{lines}")


@dataclass
class Release:
    """One release of the spec, with its accessor arguments."""

    name: str
    method: str
    epsilon: float
    args: dict[str, Any] = field(default_factory=dict)

    def columns(self) -> list[str]:
        """Columns of the input table the release reads."""
        if self.method == "count_of_counts":
            loc = self.args["location"]
            return [self.args["group"], *([loc] if isinstance(loc, str) else loc)]
        if self.method == "unattributed":
            return [self.args["group"]]
        cols = self.args.get("columns")
        return [cols] if isinstance(cols, str) else list(cols or [])


@dataclass
class Spec:
    """A validated release spec (paths resolved against the spec's folder)."""

    path: Path
    epsilon: float
    ledger: Path
    budget_name: str
    input: Path
    input_format: str
    output_dir: Path
    output_format: str
    seed: int | None
    releases: list[Release]


def _fmt_of(path: Path, given: Any, what: str, problems: list[str]) -> str:
    fmt = given if given is not None else ("parquet" if path.suffix.lower() in (".parquet", ".pq") else "csv")
    if fmt not in _FORMATS:
        problems.append(f"{what} format must be one of {list(_FORMATS)}; got {fmt!r}.")
    return fmt


def _positive(value: Any) -> bool:
    return (isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
            and value > 0)


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
    if method not in _KEYS:
        problems.append(f"{where}: unknown method {method!r}; choose one of {sorted(_KEYS)}.")
        return None
    for extra in sorted(set(entry) - _COMMON - _KEYS[method]):
        problems.append(f"{where}: unknown key {extra!r} for method {method!r}; allowed keys: "
                        f"{sorted(_COMMON | _KEYS[method])}.")
    eps = entry.get("epsilon")
    if eps is None:
        problems.append(f"{where}: missing 'epsilon' (the privacy loss of this release), e.g. epsilon = 0.5.")
    elif not _positive(eps):
        problems.append(f"{where}: 'epsilon' must be a positive number; got {eps!r}.")
    for req in _REQUIRED.get(method, ("columns",)):
        if req not in entry:
            problems.append(f"{where}: missing {req!r} for method {method!r}.")
    if not isinstance(name, str) or not name or any(c in name for c in "/\\"):
        problems.append(f"{where}: 'name' must be a non-empty string usable as a file name; got {name!r}.")
    args = {k: v for k, v in entry.items() if k not in _COMMON}
    return Release(str(name), method, float(eps) if _positive(eps) else 0.0, args)


def load_spec(path: str | Path) -> Spec:
    """Parse and statically validate a spec (no data is read).

    Raises
    ------
    SpecError
        Listing every problem found.
    """
    path = Path(path)
    problems: list[str] = []
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(path, [f"The spec file {str(path)!r} does not exist."]) from None
    except tomllib.TOMLDecodeError as err:
        raise SpecError(path, [f"The spec is not valid TOML: {err}."]) from None
    base = path.resolve().parent
    for extra in sorted(set(raw) - _TOP):
        problems.append(f"Unknown top-level key {extra!r}; allowed: {sorted(_TOP)}.")
    bud = _table(raw, "budget", _BUDGET, problems)
    inp = _table(raw, "input", _INPUT, problems)
    out = _table(raw, "output", _OUTPUT, problems)
    total = bud.get("epsilon")
    if total is None:
        problems.append("Missing [budget] epsilon: the total privacy loss of this run, e.g. epsilon = 1.0.")
    elif not _positive(total):
        problems.append(f"[budget] epsilon must be a positive number; got {total!r}.")
    if "path" not in inp:
        problems.append("Missing [input] path: the CSV or Parquet file to release from.")
    in_path = base / str(inp.get("path", ""))
    in_fmt = _fmt_of(in_path, inp.get("format"), "[input]", problems)
    out_dir = base / str(out.get("dir", "released"))
    out_fmt = _fmt_of(Path(".csv"), out.get("format"), "[output]", problems)
    if "parquet" in (in_fmt, out_fmt):
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            problems.append("Parquet needs pyarrow: pip install pyarrow (or use format = \"csv\").")
    ledger = base / str(bud.get("ledger", out_dir / "ledger.sqlite"))
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
    if _positive(total) and releases:
        asked = sum((Fraction(r.epsilon) for r in releases), Fraction(0))
        if asked > Fraction(total):
            problems.append(f"The releases ask for epsilon = {float(asked):g} in total, above the budget "
                            f"epsilon = {total:g}. Lower their epsilons or raise [budget] epsilon.")
    for r in releases:
        for key in ("groups", "hierarchy"):
            value = r.args.get(key)
            if r.method == "count_of_counts" and value is not None:
                if not isinstance(value, str):
                    problems.append(f"[[release]] {r.name!r}: {key!r} must be the path of a public CSV/Parquet "
                                    f"table; got {value!r}.")
                elif not (base / value).is_file():
                    problems.append(f"[[release]] {r.name!r}: public {key} table {value!r} not found.")
                else:
                    r.args[key] = base / value
    if problems:
        raise SpecError(path, problems)
    return Spec(path, float(total), ledger, str(bud.get("name", "default")), in_path, in_fmt, out_dir, out_fmt,
                seed, releases)


def _read(path: Path, fmt: str, columns: list[str] | None = None) -> pd.DataFrame:
    if fmt == "parquet":
        return pd.read_parquet(path, columns=columns)
    return pd.read_csv(path, usecols=columns)


def _call(frame: pd.DataFrame, r: Release, rng: np.random.Generator | None) -> Any:
    """Run one release through the ``.dp`` accessor."""
    a = dict(r.args)
    if r.method == "count_of_counts":
        for key in ("groups", "hierarchy"):
            if isinstance(a.get(key), Path):
                a[key] = _read(a[key], _fmt_of(a[key], None, key, []))
        if "estimator" in a:
            a["method"] = a.pop("estimator")
        return frame.dp.count_of_counts(a.pop("group"), a.pop("location"), epsilon=r.epsilon, rng=rng,
                                        progress=False, **a)
    if r.method == "unattributed":
        return frame.dp.unattributed_histogram(a.pop("group"), epsilon=r.epsilon, rng=rng, **a)
    columns = a.pop("columns")
    if r.method == "hierarchical":
        return frame.dp.hierarchical_histogram(columns, epsilon=r.epsilon, rng=rng, **a)
    return frame.dp.histogram(columns, epsilon=r.epsilon, method=r.method, rng=rng, **a)


def _rehearse(spec: Spec, frame: pd.DataFrame, stage: str) -> None:
    """Run every release on ``frame`` (no rows) under a throwaway budget; collect the errors."""
    import pandas_dp as pdp

    problems: list[str] = []
    with pdp.budget(epsilon=spec.epsilon):
        for r in spec.releases:
            missing = [c for c in r.columns() if c not in frame.columns]
            if missing:
                if stage == "data":
                    problems.append(f"[[release]] {r.name!r}: column(s) {missing} not in the input; it has "
                                    f"{list(frame.columns)}.")
                continue
            try:
                _call(frame, r, np.random.default_rng(0))
            except (pdp.PandasDPError, TypeError, ValueError, KeyError) as err:
                problems.append(f"[[release]] {r.name!r}: {type(err).__name__}: {err}")
    if problems:
        raise SpecError(spec.path, problems)


def _blank(spec: Spec) -> pd.DataFrame:
    """An empty table with every column the spec reads: numeric where bins are given, text otherwise."""
    cols: dict[str, Any] = {}
    for r in spec.releases:
        cats = r.args.get("categories")
        for c in r.columns():
            text = r.method in ("count_of_counts", "unattributed") or (
                cats is not None and (not isinstance(cats, dict) or c in cats))
            cols.setdefault(c, pd.Series([], dtype=object if text else np.float64))
    return pd.DataFrame(cols)


def release_table(result: Any) -> pd.DataFrame:
    """A flat, file-friendly table of a release.

    Parameters
    ----------
    result : Histogram, CountOfCounts or UnattributedHistogram

    Returns
    -------
    DataFrame
        Histograms: one row per cell, numeric bins as ``<column>_low`` /
        ``<column>_high``, categories as their label, then ``estimate``,
        ``variance``, ``std_error``. Count-of-counts: ``level, region, size,
        groups``. Unattributed: ``rank, estimate, variance, std_error``.
    """
    from .domain import BinDomain
    from .results import CountOfCounts, Histogram

    if isinstance(result, CountOfCounts):
        return result.to_frame().reset_index(drop=True)
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
        return pd.concat([pd.DataFrame(data), body], axis=1)
    return result.to_frame().rename_axis("rank").reset_index()


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def run_release(spec_path: str | Path, *, check_only: bool = False) -> int:
    """Validate the spec, read the input, run every release, write tables and ``manifest.json``.

    Parameters
    ----------
    spec_path : str or Path
        The TOML spec (see the module documentation).
    check_only : bool
        Validate the spec and the ledger's remaining budget, read no data.

    Returns
    -------
    int
        The process exit status (0).

    Raises
    ------
    SpecError
        For an invalid spec, a missing input or column, or a ledger without
        enough budget left: before anything is charged.

    Notes
    -----
    Order of work: static checks of the spec; a rehearsal of every release
    on an empty table (the library's own domain and knob checks); the ledger's
    remaining budget; the input's column names and dtypes (a rehearsal on its
    zero-row slice); then the releases, each charged to the ledger before its
    noise is drawn, written, and recorded in the manifest with its ledger id.
    """
    import pandas_dp as pdp

    spec = load_spec(spec_path)
    _rehearse(spec, _blank(spec), "spec")
    asked = sum((Fraction(r.epsilon) for r in spec.releases), Fraction(0))
    if check_only and not spec.ledger.exists():
        print(f"Spec {str(spec.path)!r} is valid: {len(spec.releases)} release(s), epsilon = {float(asked):g} "
              f"of {spec.epsilon:g}.")
        return 0
    spec.ledger.parent.mkdir(parents=True, exist_ok=True)
    budget = pdp.budget(epsilon=spec.epsilon, ledger=spec.ledger, name=spec.budget_name)
    if asked > budget.remaining_exact:
        raise SpecError(spec.path, [f"The ledger {str(spec.ledger)!r} has epsilon = {budget.remaining:g} left "
                                    f"of budget {spec.budget_name!r}; the releases ask for {float(asked):g}. "
                                    f"Use a new [budget] name or ledger, or lower the epsilons."])
    if check_only:
        print(f"Spec {str(spec.path)!r} is valid: {len(spec.releases)} release(s), epsilon = {float(asked):g} "
              f"of {spec.epsilon:g}.")
        return 0
    if not spec.input.is_file():
        raise SpecError(spec.path, [f"[input] path {str(spec.input)!r} not found."])
    needed = sorted({c for r in spec.releases for c in r.columns()})
    head = _read(spec.input, spec.input_format).iloc[:0] if spec.input_format == "parquet" else \
        pd.read_csv(spec.input, nrows=0)
    missing = [c for c in needed if c not in head.columns]
    if missing:
        raise SpecError(spec.path, [f"Column(s) {missing} not in the input {str(spec.input)!r}; it has "
                                    f"{list(head.columns)}."])
    frame = _read(spec.input, spec.input_format, needed)
    _rehearse(spec, frame.iloc[:0], "data")
    rng = np.random.default_rng(spec.seed) if spec.seed is not None else None
    if rng is not None:
        print(f"note: seed = {spec.seed} makes the noise predictable: for experiments, not for production.",
              file=sys.stderr)
    spec.output_dir.mkdir(parents=True, exist_ok=True)
    entries: list[dict[str, Any]] = []
    manifest_path = spec.output_dir / "manifest.json"

    def write_manifest() -> None:  # after every release, so a run stopped midway still documents its outputs
        manifest = {"library": "pandas_dp", "version": pdp.__version__, "spec": str(spec.path),
                    "input": str(spec.input), "budget": {"name": spec.budget_name, "epsilon": spec.epsilon,
                                                         "spent": budget.spent, "ledger": str(spec.ledger)},
                    "seeded": spec.seed is not None, "complete": len(entries) == len(spec.releases),
                    "releases": entries}
        manifest_path.write_text(json.dumps(manifest, indent=2), encoding="utf-8")

    with budget:
        for r in spec.releases:
            result = _call(frame, r, rng)
            ledger_id = int(budget.ledger["id"].iloc[-1])
            out = spec.output_dir / f"{r.name}.{spec.output_format}"
            table = release_table(result)
            if spec.output_format == "parquet":
                table.to_parquet(out, index=False)
            else:
                table.to_csv(out, index=False)
            entries.append({"name": r.name, "file": out.name, "method": result.method,
                            "parameters": _jsonable(dict(result.params)), "spec": _jsonable(r.args),
                            "epsilon": result.epsilon, "ledger_id": ledger_id,
                            "post_processing": list(result.post_processing)})
            write_manifest()
            print(f"released {r.name!r} ({result.method}, epsilon = {result.epsilon:g}) -> {out}")
    print(f"Spent epsilon = {budget.spent:g} of {spec.epsilon:g}; manifest: {manifest_path}")
    return 0
