"""The public codebook of a release spec, and the domain advice ``--check`` gives from it.

A codebook is a public table of the values every coded column may take: a CSV
(or Parquet) file named by ``codebook = "codebook.csv"`` in the spec's
``[input]`` table, with two columns, ``column`` and ``value``, one row per
allowed value::

    column,value
    state,Avalon
    state,Borealis
    sex,F
    sex,M

The preflight (``release --check`` and every run) reads only this public file
and the input's header, never the data. It reports:

* a category of a release (``categories``, or the ``by_categories`` of its
  ``by`` column) that matches no value the codebook lists for its column (a
  typo: such a category would only ever release noise);
* a column of a histogram release with neither ``categories`` nor ``bins``:
  the library's own advice (``categories=[...]`` for labels, ``bins=`` for
  numbers), in the spec's TOML form, with the codebook's values when it lists
  the column.

The release itself says nothing about which categories occur in the data (the
boundary rule): unknown labels in the data are dropped silently, as ever.
"""

from __future__ import annotations

import difflib
import math
import os
import warnings
from numbers import Real
from pathlib import Path
from typing import Any

import pandas as pd

from pandas_dp.cli.spec import Release, Spec

__all__ = ["read_codebook", "codebook_problems", "missing_domains", "domain_advice"]

_GROUPED = ("count_of_counts", "unattributed")


def read_codebook(path: Path) -> dict[str, list[str]]:
    """The allowed values of every column of a codebook file, as text, in file order.

    Raises
    ------
    ValueError
        When the file cannot be read or lacks the ``column`` and ``value`` columns.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if path.suffix.lower() in (".parquet", ".pq"):
                table = pd.read_parquet(path).astype(str)
            else:
                table = pd.read_csv(path, dtype=str, keep_default_na=False, encoding_errors="replace")
    except Exception as err:  # noqa: BLE001 - a public file: say why it cannot be read
        raise ValueError(f"[input] codebook {str(path)!r} cannot be read: {type(err).__name__}: "
                         f"{str(err)[:200]}") from None
    if not {"column", "value"} <= set(table.columns):
        raise ValueError(f"[input] codebook {str(path)!r} must have the columns 'column' and 'value' (one row per "
                         f"allowed value of a column); it has {list(table.columns)[:10]}.")
    out: dict[str, list[str]] = {}
    for column, value in zip(table["column"].to_numpy(), table["value"].to_numpy()):
        out.setdefault(str(column), []).append(str(value))
    return out


def _per_column(value: Any, columns: list[str]) -> dict[str, Any]:
    """A spec's bins/categories for each column: a table keyed by column, or one value shared by all."""
    if isinstance(value, dict):
        return {c: value.get(c) for c in columns}
    if len(columns) > 1 and isinstance(value, list) and len(value) == len(columns) \
            and all(v is None or isinstance(v, list) for v in value):
        return dict(zip(columns, value))
    return {c: value for c in columns}


def missing_domains(r: "Release") -> list[str]:
    """Columns of a histogram release that have neither ``categories`` nor ``bins`` in the spec."""
    if r.method in _GROUPED:
        return []
    columns = r.released()  # not its by= or privacy unit columns, which take no domain
    bins = _per_column(r.args.get("bins"), columns)
    cats = _per_column(r.args.get("categories"), columns)
    return [c for c in columns if bins.get(c) is None and cats.get(c) is None]


def _toml_list(values: list[str], limit: int = 8) -> str:
    shown = ", ".join(f'"{v}"' for v in values[:limit])
    return f"[{shown}{', ...' if len(values) > limit else ''}]"


def domain_advice(r: "Release", codebook: dict[str, list[str]] | None) -> str:
    """The spec's form of the library's advice for the columns of ``r`` without a domain."""
    parts = []
    for c in missing_domains(r):
        listed = (codebook or {}).get(c)
        if listed:
            form = f"{{{c} = {_toml_list(listed)}}}" if r.method == "marginals" else _toml_list(listed)
            parts.append(f"column {c!r} is coded in the codebook: add categories = {form} (its "
                         f"{len(listed)} values)")
        elif r.method == "marginals":  # domains keyed by column, bins as edges (no range)
            parts.append(f"column {c!r}: add it to categories = {{{c} = [\"label\", ...]}} with every possible "
                         f"label (text), or to bins = {{{c} = [edges]}} for numbers")
        elif r.method == "aggregate":  # cells as for a histogram, bins as edges (aggregate takes no range)
            parts.append(f"column {c!r}: add categories = [\"label\", ...] with every possible label (text), or "
                         f"bins = [edges] for numbers")
        else:
            parts.append(f"column {c!r}: add categories = [\"label\", ...] with every possible label (text), or "
                         f"bins = [edges] (or bins = n with range = [low, high]) for numbers")
    if not parts:
        return ""
    return "In the spec's [[release]] table: " + "; ".join(parts) + "."


def _same(category: Any, text: str) -> bool:
    """Whether a spec category equals a codebook value (numbers by value, booleans by name, text exactly)."""
    if isinstance(category, bool):
        return text.strip().lower() == str(category).lower()
    if isinstance(category, Real):
        try:
            number = float(text)
        except ValueError:
            return False
        return math.isfinite(number) and number == float(category)
    return str(category) == text


def _checked(r: "Release") -> list[tuple[str, Any, str]]:
    """``(column, labels, key)`` of every list of labels of ``r`` that the codebook can check: the
    ``categories`` of its columns, and the ``by_categories`` of its ``by`` column (tables by geography)."""
    if r.method in _GROUPED:
        return []
    out = [(c, cats, "categories") for c, cats in _per_column(r.args.get("categories"), r.released()).items()]
    by = r.args.get("by")
    if isinstance(by, str) and r.args.get("by_categories") is not None:
        out.append((by, r.args["by_categories"], "by_categories"))
    return out


def _shown(spec: "Spec") -> str:
    """The codebook's path as the spec gives it (relative to the spec's folder)."""
    try:
        return os.path.relpath(str(spec.codebook), str(Path(spec.path).parent))
    except ValueError:  # another drive (Windows)
        return str(spec.codebook)


def codebook_problems(spec: "Spec", codebook: dict[str, list[str]]) -> list[str]:
    """Categories (and ``by_categories``) of the spec that match no value the codebook lists for their column."""
    problems = []
    for r in spec.releases:
        for c, cats, key in _checked(r):
            listed = codebook.get(c)
            if not listed or not isinstance(cats, list):
                continue
            known = set(listed)
            unknown = [v for v in cats if not (str(v) in known or any(_same(v, t) for t in listed))]
            if not unknown:
                continue
            hints = []
            for v in unknown[:5]:
                close = difflib.get_close_matches(str(v), listed, n=1)
                hints.append(f"{v!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
            more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
            problems.append(f"[[release]] {r.name!r}: {key} {', '.join(hints)}{more} of column {c!r} match no "
                            f"value of the codebook {_shown(spec)!r}, which lists {len(listed)} for it "
                            f"({_toml_list(listed, 5)}). Fix the spelling, or the codebook.")
    return problems
