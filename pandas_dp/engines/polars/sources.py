"""Parquet scans whose files disagree on a column's type, read file by file so that no file can fail the query.

``pl.scan_parquet(paths)`` takes every column's type from the first file and fails the whole
query when another file holds that column in another type (an integer column that one file
wrote as float, a column of numbers that one private token made text in one file). Such a
failure is one bit about the private rows, so :func:`file_parts` reads a plain Parquet scan
(the query is the scan itself, with no options that change the rows: no row index, file paths,
Hive partitions, slice or given schema) file by file when the files' schemas (their metadata,
never their rows) disagree: every file is one part with its own types, counted by the same
rules as every other piece, so a value that does not fit the domain in that file's type is
dropped (a word where numbers were expected), a float still counts in its bin, and a column a
file lacks is missing in its rows. The parts keep the scan's order of files and rows, so row
positions (and the rows every unit keeps) are the same as in one scan. Any problem while
looking at the scan leaves the query as it is (a failure of the query is then reported as
:class:`~pandas_dp.errors.DataSourceError`).
"""

from __future__ import annotations

import glob
import json
import os
import warnings
from typing import Any

from pandas_dp.engines.polars.frame import polars_module

__all__ = ["file_parts"]


def _scan(lazy: Any) -> dict[str, Any] | None:
    """The scan node of a query that is a plain scan (None for any other query)."""
    if not lazy.explain(optimized=False).startswith("Parquet SCAN"):  # cheap: the plan's text, not its data
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = json.loads(lazy.serialize(format="json"))
    while list(plan) == ["IR"]:  # a query whose schema was resolved keeps its plan under "IR"/"dsl"
        plan = plan["IR"].get("dsl") or {}
    if list(plan) != ["Scan"]:
        return None
    scan = plan["Scan"]
    args = scan.get("unified_scan_args", {})
    if list(scan.get("scan_type", {})) != ["Parquet"]:
        return None
    plain = (args.get("row_index") is None and args.get("include_file_paths") is None and args.get("pre_slice")
             is None and args.get("schema") is None and not args.get("hive_options", {}).get("enabled"))
    return scan if plain else None


def _files(scan: dict[str, Any]) -> list[str] | None:
    paths = scan.get("sources", {}).get("Paths")
    if not isinstance(paths, list):
        return None
    files: list[str] = []
    for item in paths:
        path = item.get("inner") if isinstance(item, dict) else item
        if not isinstance(path, str) or "://" in path:
            return None
        if any(ch in path for ch in "*?["):
            files.extend(sorted(glob.glob(path)))
        elif os.path.isfile(path):
            files.append(path)
        else:
            return None
    return files or None


def file_parts(lazy: Any, schema: Any) -> list[Any] | None:
    """One scan per file with the query's columns (a missing one: nulls) when the files' types disagree; else None."""
    pl = polars_module()
    try:
        scan = _scan(lazy)
        files = None if scan is None else _files(scan)
        if files is None or len(files) < 2:
            return None
        schemas = [pl.read_parquet_schema(f) for f in files]
        if all(dict(s) == dict(schema) for s in schemas):
            return None
        parts = []
        for f, own in zip(files, schemas):
            columns = [pl.col(c) if c in own else pl.lit(None).alias(c) for c in schema.names()]
            parts.append(pl.scan_parquet(f).select(columns))
        return parts
    except Exception:  # noqa: BLE001 - an unknown plan or version: keep the user's query
        return None
