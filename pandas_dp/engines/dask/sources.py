"""CSV reads in a Dask frame's graph, re-read so that no private token can make the graph fail.

``dd.read_csv(path)`` infers each column's dtype from a sample at the start of
the first file and then holds every block to it: one private token such as
``forty`` in an ``age`` column of a later block makes that block's read raise
(Dask's dtype check), and the release could only refuse (``DataSourceError``)
where the file without that line releases, one bit about a private row.

:func:`readable` removes that failure at its root. In the frame's expression
it finds every read of CSV text by Dask's own CSV reader (``dd.read_csv`` and
``dd.read_table``, the ``FromMap`` of their block reader, under any operations
the frame applies to it: projections, renames, filters, assignments...) and
replaces it by the same read without Dask's per-block dtype check on its
numeric columns (numpy integer and float dtypes, inferred or given), followed
per block by the library's never-raising converter
(:func:`pandas_dp.domain.numeric_values.numeric_values`, ``pandas.to_numeric``
with ``errors="coerce"``) back to the column's dtype. pandas infers each
block's dtypes from that block: a block of numbers is parsed natively (as
fast as before, the same values), a block holding a token keeps the column as
text, whose numbers convert to the same values pandas' parser gives (same
rules for signs, exponents, spaces, ``inf``, missing values) and whose token
becomes ``NaN`` (an integer column holding one becomes float64 in that block),
which every release drops as out of domain, uncounted. A line with more
fields than the header (which makes pandas' parser raise) is skipped, one
dropped row, unless the read sets ``on_bad_lines`` itself; undecodable bytes
are replaced (a value holding one matches no number and no category) unless it
sets ``encoding_errors``. So the
release equals the release of the file without the token's line (a token in a
column the release does not read leaves its row counted, as it should).

Still failing in a rewritten read (so still :class:`~pandas_dp.errors.DataSourceError`): a quote
that opens a field and does not close it before the block ends (pandas' parser gives up).

Not rewritten (a failure of their graph stays :class:`~pandas_dp.errors.DataSourceError`):
reads with options that change how numbers parse (``converters``,
``thousands``, ``decimal``, ``float_precision``, ``parse_dates``, ``date_format``),
``engine="pyarrow"`` reads and other readers (``read_fwf``), one ``dtype=``
for every column, columns of unsigned, nullable or Arrow dtypes, and every source that is not a CSV read
by Dask (``from_delayed``, ``from_map``, Parquet, a user's ``map_partitions``
that raises). Any problem while rewriting leaves the frame as it was.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.domain.numeric_values import numeric_values

__all__ = ["readable"]

#: Reader options that change how a number is parsed: a read using one is left as it is.
_NUMBER_OPTIONS = ("converters", "thousands", "decimal", "float_precision", "parse_dates", "date_format",
                   "date_parser", "true_values", "false_values")


def readable(collection: Any) -> Any:
    """``collection`` with every Dask CSV read in its graph reading numeric columns as text (see the module).

    Returns the collection unchanged when its graph holds no such read or
    rewriting fails for any reason (then a token makes the graph fail as
    before, reported as :class:`~pandas_dp.errors.DataSourceError`).
    """
    try:
        rewritten = _rewrite(collection)
    except Exception:  # noqa: BLE001 - an unknown Dask version or graph: keep the user's frame
        return collection
    return collection if rewritten is None else rewritten


def _rewrite(collection: Any) -> Any:
    from dask.dataframe.dask_expr import new_collection
    from dask.dataframe.dask_expr.io.io import FromMap

    expr = getattr(collection, "expr", None)
    if expr is None:
        return None
    new = expr
    done = False
    for leaf in list(expr.find_operations(FromMap)):
        parsed = _parsed_read(leaf)
        if parsed is not None:
            new = new.substitute(leaf, parsed)
            done = True
    return new_collection(new) if done else None


def _numeric(dtype: Any) -> bool:
    return isinstance(dtype, np.dtype) and dtype.kind in "if"


def _parsed_read(leaf: Any) -> Any:
    """``leaf`` read without the dtype check on its numeric columns, then converted; None when not a CSV read."""
    from dask.dataframe.dask_expr import new_collection
    from dask.dataframe.io.csv import _read_csv

    func = leaf.operand("func")
    if not (isinstance(func, functools.partial) and func.func is _read_csv):
        return None
    keywords = dict(func.keywords)
    if keywords.get("reader") not in (pd.read_csv, pd.read_table):
        return None
    kwargs = dict(keywords.get("kwargs") or {})
    if any(kwargs.get(option) is not None for option in _NUMBER_OPTIONS) or kwargs.get("engine") not in (None, "c"):
        return None
    meta = leaf.operand("user_meta")
    dtypes = dict(keywords.get("dtypes") or {})
    if not isinstance(meta, pd.DataFrame) or not dtypes:
        return None
    numeric = {c: np.dtype(t) for c, t in dtypes.items() if _numeric(t)}
    if not numeric:
        return None
    given = kwargs.get("dtype")
    if given is not None and not isinstance(given, dict):
        return None  # one dtype for every column: numbers were asked for everywhere, leave the read alone
    if given:  # a numeric dtype the user gave is parsed by pandas itself, which raises on a token: inferred instead
        kwargs["dtype"] = {c: t for c, t in given.items() if c not in numeric}
    kwargs.setdefault("on_bad_lines", "skip")  # a line with more fields than the header: one dropped row
    kwargs.setdefault("encoding_errors", "replace")  # an undecodable byte: a value that matches no domain
    keywords["kwargs"] = kwargs
    keywords["dtypes"] = {c: t for c, t in dtypes.items() if c not in numeric}  # Dask's per-block dtype check
    read = leaf.substitute_parameters({"func": functools.partial(_read_csv, **keywords)})
    parsed = new_collection(read).map_partitions(_to_numbers, numeric=numeric, meta=meta, enforce_metadata=False,
                                                 align_dataframes=False)
    return parsed.expr


def _to_numbers(part: pd.DataFrame, numeric: dict[str, np.dtype]) -> pd.DataFrame:
    """One block's numeric columns in their dtypes; a value that is not a number becomes NaN.

    pandas inferred each column's dtype from this block alone: a block of numbers
    is already numeric (cast to the frame's dtype, as Dask's check would), a
    block holding a token is text and goes through the never-raising converter
    (:func:`~pandas_dp.domain.numeric_values.numeric_values`). Runs on the
    workers; never raises or warns on a value.
    """
    out = None
    for column, dtype in numeric.items():
        if column not in part.columns or part[column].dtype == dtype:
            continue
        values = numeric_values(part[column])
        if out is None:
            out = part.copy(deep=False)
        if values.dtype.kind == "f" and dtype.kind == "i":
            out[column] = values  # a missing, non-integral or non-number value: float64 in this block, as pandas reads it
        else:
            out[column] = values.astype(dtype)
    return part if out is None else out
