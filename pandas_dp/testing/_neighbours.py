"""``neighbours``: add/remove-one-row neighbours of a frame that stress a mechanism, and change-one-record
neighbours that keep public totals (``held=``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from pandas_dp.domain.grid import BinDomain, CategoryDomain, Grid, make_grid
from pandas_dp.engines.pandas.counts import column_values
from pandas_dp.errors import ParameterError

__all__ = ["Neighbour", "neighbours"]


def frame_and_name(obj: Any, default: str) -> tuple[Any, str]:
    """The dataset of ``obj`` and its name: a :class:`Neighbour`'s frame and name, or ``obj`` itself.

    Only a ``Neighbour`` is unwrapped (a Dask frame answers ``.frame`` and ``.name`` with
    internals of its own).
    """
    if isinstance(obj, Neighbour):
        return obj.frame, str(obj.name)
    return obj, default


class Neighbour(NamedTuple):
    """A neighbouring frame: ``name`` (short), ``frame``, and ``change`` (what differs from the original)."""

    name: str
    frame: pd.DataFrame
    change: str


def _drop(df: pd.DataFrame, position: int) -> pd.DataFrame:
    keep = np.ones(len(df), dtype=bool)
    keep[position] = False
    return df.iloc[keep]


def _append(df: pd.DataFrame, row: dict[str, Any]) -> pd.DataFrame:
    """``df`` plus one row; dtypes kept where the value allows (Categorical stays Categorical)."""
    new: dict[str, Any] = {}
    for col in df.columns:
        value = row[col]
        dtype = df[col].dtype
        if isinstance(dtype, pd.CategoricalDtype):
            new[col] = pd.Categorical([value], categories=dtype.categories, ordered=dtype.ordered)
            continue
        try:
            new[col] = pd.array([value], dtype=dtype)
        except (TypeError, ValueError):  # e.g. NaN in an int64 column: pandas upcasts on concat
            new[col] = pd.array([value])
    extra = pd.DataFrame(new, index=[new_label(df)])
    if not len(df):
        return extra
    return pd.concat([df, extra])


def new_label(df: pd.DataFrame) -> Any:
    if len(df) and pd.api.types.is_integer_dtype(df.index.dtype):
        return int(df.index.max()) + 1
    return len(df) if not len(df) or len(df) not in df.index else f"neighbour-{len(df)}"


def _template(df: pd.DataFrame) -> dict[str, Any]:
    if len(df):
        return df.iloc[0].to_dict()
    return {c: np.nan for c in df.columns}


def _cell_values(grid: Grid, cell: int) -> dict[str, Any]:
    """A value in every dimension that falls in flat cell ``cell``."""
    coords = np.unravel_index(cell, grid.shape)
    out = {}
    for dim, i in zip(grid.dims, coords):
        if isinstance(dim, CategoryDomain):
            out[dim.column] = dim.categories[int(i)]
        else:
            out[dim.column] = dim.edge_value(int(i))
    return out


def _top_edge_value(dim: BinDomain, dtype: Any) -> Any:
    """The largest value of the last bin (just below the excluded upper edge)."""
    if dim.kind != "number":  # dates and durations: one unit of the domain below the edge
        return dim.key_value(int(dim.keys[-1]) - 1)
    hi = dim.edges[-1]
    if np.dtype(dtype).kind in "iu" and float(hi).is_integer():
        return int(hi) - 1
    return float(np.nextafter(hi, -np.inf))


def _histogram_cases(df: pd.DataFrame, columns: list[str], grid: Grid) -> list[Neighbour]:
    codes = grid.codes([column_values(df[c], d) for c, d in zip(columns, grid.dims)])
    counts = np.bincount(codes[codes >= 0], minlength=grid.size)
    out: list[Neighbour] = []
    template = _template(df)
    if counts.any():
        big = int(np.argmax(counts))
        pos = int(np.flatnonzero(codes == big)[0])
        out.append(Neighbour("remove from largest cell", _drop(df, pos),
                             f"removed row {df.index[pos]!r} from the largest cell ({counts[big]} rows)"))
        out.append(Neighbour("add to largest cell", _append(df, df.iloc[pos].to_dict()),
                             f"added a copy of row {df.index[pos]!r} to the largest cell"))
        ones = np.flatnonzero(counts == 1)
        if ones.size:
            pos1 = int(np.flatnonzero(codes == ones[0])[0])
            out.append(Neighbour("empty a cell", _drop(df, pos1),
                                 f"removed the only row of cell {int(ones[0])}"))
    empty = np.flatnonzero(counts == 0)
    if empty.size:
        out.append(Neighbour("add to empty cell", _append(df, {**template, **_cell_values(grid, int(empty[0]))}),
                             f"added a row to the empty cell {int(empty[0])}"))
    out.append(Neighbour("add to first cell", _append(df, {**template, **_cell_values(grid, 0)}),
                         "added a row on the lowest edge of the domain"))
    last = _cell_values(grid, grid.size - 1)
    for dim in grid.dims:
        if isinstance(dim, BinDomain):
            last[dim.column] = _top_edge_value(dim, df[dim.column].dtype)
    out.append(Neighbour("add to last cell", _append(df, {**template, **last}),
                         "added a row just below the upper edge of the domain"))
    outside = dict(template)
    for dim in grid.dims:
        if isinstance(dim, BinDomain):
            outside[dim.column] = dim.edge_value(dim.size)
            out.append(Neighbour("add outside domain", _append(df, outside),
                                 f"added a row on the excluded upper edge of {dim.column!r} (dropped)"))
            break
        if not isinstance(df[dim.column].dtype, pd.CategoricalDtype):
            outside[dim.column] = "__not_a_category__"
            out.append(Neighbour("add outside domain", _append(df, outside),
                                 f"added a row with a label of {dim.column!r} outside the categories (dropped)"))
            break
    missing = dict(template)
    col = columns[0]
    if df[col].dtype.kind in "fO" or isinstance(df[col].dtype, pd.CategoricalDtype):
        missing[col] = np.nan
        out.append(Neighbour("add missing value", _append(df, missing), f"added a row with {col!r} missing"))
    return out


def _move(df: pd.DataFrame, position: int, values: dict[str, Any]) -> pd.DataFrame:
    """``df`` with row ``position``'s ``values`` changed (same rows, labels and dtypes)."""
    out = df.copy()
    for col, value in values.items():
        out.iloc[position, out.columns.get_loc(col)] = value
    return out


def _change_cases(df: pd.DataFrame, columns: list[str], grid: Grid, held: list[str]) -> list[Neighbour]:
    """One record's released ``columns`` change (to another cell of ``grid``); every other column stays."""
    codes = grid.codes([column_values(df[c], d) for c, d in zip(columns, grid.dims)])
    counts = np.bincount(codes[codes >= 0], minlength=grid.size)
    if not counts.any():
        raise ParameterError("Change-one-record neighbours (held=) need a row inside the domain of columns= to "
                             "change.")
    big = int(np.argmax(counts))
    pos = int(np.flatnonzero(codes == big)[0])
    label = df.index[pos]
    keep = f"; {held} held" if held else ""
    last = _cell_values(grid, grid.size - 1)
    for dim in grid.dims:
        if isinstance(dim, BinDomain):
            last[dim.column] = _top_edge_value(dim, df[dim.column].dtype)
    coords = np.unravel_index(big, grid.shape)
    every = int(np.ravel_multi_index([(int(i) + 1) % n for i, n in zip(coords, grid.shape)], grid.shape))
    targets = [("move every column", every, _cell_values(grid, every))]
    empty = np.flatnonzero(counts == 0)
    if empty.size:
        targets.append(("move to an empty cell", int(empty[0]), _cell_values(grid, int(empty[0]))))
    targets += [("move to the first cell", 0, _cell_values(grid, 0)),
                ("move to the last cell", grid.size - 1, last)]
    out: list[Neighbour] = []
    seen = {big}
    for name, cell, values in targets:
        if cell in seen:
            continue
        seen.add(cell)
        out.append(Neighbour(name, _move(df, pos, values),
                             f"changed row {label!r} from the largest cell ({counts[big]} rows) to cell {cell}{keep}"))
    return out


def _coc_cases(df: pd.DataFrame, group: str, groups: pd.DataFrame | None, entity: str | None) -> list[Neighbour]:
    sizes = df[group].value_counts(sort=False)
    if groups is not None:
        sizes = sizes.reindex(pd.Index(groups[group].unique()), fill_value=0)
    out: list[Neighbour] = []

    def new_entity(row: dict[str, Any]) -> dict[str, Any]:
        if entity is not None:
            ids = df[entity]
            row[entity] = (int(ids.max()) + 1 if pd.api.types.is_integer_dtype(ids.dtype) and len(ids)
                           else f"new-{len(ids)}")
        return row

    def add_to(g: Any, why: str) -> None:
        rows = np.flatnonzero((df[group] == g).to_numpy())
        if rows.size:
            row = df.iloc[int(rows[0])].to_dict()
        else:
            row = _template(df)
            if groups is not None:
                row.update(groups.loc[groups[group] == g].iloc[0].to_dict())
            row[group] = g
        out.append(Neighbour(f"add entity: {why}", _append(df, new_entity(row)),
                             f"added one entity to group {g!r} ({why})"))

    def remove_from(g: Any, why: str) -> None:
        pos = int(np.flatnonzero((df[group] == g).to_numpy())[0])
        out.append(Neighbour(f"remove entity: {why}", _drop(df, pos),
                             f"removed one entity of group {g!r} ({why})"))

    if len(sizes) and sizes.max() > 0:
        largest = sizes.idxmax()
        add_to(largest, f"largest group grows to {int(sizes.max()) + 1}")
        remove_from(largest, f"largest group shrinks to {int(sizes.max()) - 1}")
        common = sizes[sizes > 0].value_counts().idxmax()
        add_to(sizes[sizes == common].index[0], f"a group of the most common size {int(common)} changes class")
    if (sizes == 1).any():
        remove_from(sizes[sizes == 1].index[0], "a group of size 1 becomes empty")
    if (sizes == 0).any():
        add_to(sizes[sizes == 0].index[0], "an empty group gets its first entity")
    if groups is None and len(df):
        row = new_entity(df.iloc[0].to_dict())
        ids = df[group]
        row[group] = int(ids.max()) + 1 if pd.api.types.is_integer_dtype(ids.dtype) else f"new-group-{len(ids)}"
        out.append(Neighbour("add entity: new group", _append(df, row), "added an entity of a new group"))
    return out


def _whole_group_cases(df: pd.DataFrame, group: str, leaf: str) -> list[Neighbour]:
    """Neighbours differing by one whole group (the group as the privacy unit)."""
    out: list[Neighbour] = []
    sizes = df[group].value_counts(sort=False)
    if len(sizes):
        largest = sizes.idxmax()
        out.append(Neighbour("remove the largest group", df[(df[group] != largest).to_numpy()],
                             f"removed every entity of group {largest!r} ({int(sizes.max())})"))
    leaves = pd.unique(df[leaf].dropna())
    if len(df) and len(leaves) > 1:
        ids = df[group]
        new_id = int(ids.max()) + 1 if pd.api.types.is_integer_dtype(ids.dtype) else f"new-group-{len(ids)}"
        spread = df.drop_duplicates(leaf).head(len(leaves)).copy()
        spread[group] = new_id
        out.append(Neighbour("add a group spread over every leaf", pd.concat([df, spread], ignore_index=True),
                             f"added group {new_id!r} with one entity in each of {len(spread)} leaves of {leaf!r}"))
    return out


def neighbours(df: pd.DataFrame, columns: str | Sequence[str] | None = None, *, bins: Any = None,
               range: Any = None, categories: Any = None, group: str | None = None,
               groups: pd.DataFrame | None = None, entity: str | None = None,
               spread_over: str | None = None, held: Sequence[str] | None = None) -> list[Neighbour]:
    """Add/remove-one-row neighbours of ``df`` that stress a release (change-one-record ones with ``held``).

    Parameters
    ----------
    df : DataFrame
        The dataset ``D``.
    columns : str or list of str, optional
        Released column(s), with their public domain (``bins``, ``range``,
        ``categories``, as for ``df.dp.histogram``). Gives the histogram cases.
    bins, range, categories
        The public domain of ``columns``.
    group : str, optional
        Group-id column of an entities table (count-of-counts, unattributed
        histograms). Gives the entity cases instead.
    groups : DataFrame, optional
        The public Groups table (group id and location columns), so that empty
        groups can receive an entity.
    entity : str, optional
        Entity-id column; an added entity gets a fresh id.
    spread_over : str, optional
        With ``group``: the group is the privacy unit (``count_of_counts(privacy_unit="group")``)
        and this is the leaf location column. The cases then differ by one whole group: the
        largest group removed, and a new group with one entity in each leaf (a household spread
        over regions, which must count as at most one group).
    held : list of str, optional
        With ``columns``: the neighbours of a release with public totals
        (``public_totals=``, whose relation is *change one record, the totals
        held*). Each changes one row's ``columns`` to another cell of their
        domain and keeps every other column, the ``held`` ones (the region
        columns whose totals are public) among them, and the number of rows:
        every total over ``held`` stays. ``[]``: a national total only.

    Returns
    -------
    list of Neighbour
        Histogram cases: remove from / add to the largest cell, empty a cell of
        count 1, add to an empty cell, add on the lowest edge and just below
        the upper edge of the domain, add outside the domain (dropped by the
        release), add a missing value. Entity cases: the largest group grows or
        shrinks (its size class changes, possibly beyond ``max_size``), a group
        of the most common size changes class, a group of size 1 becomes empty,
        an empty group gets an entity, an entity of a new group (no Groups table).
        Change cases (``held``): a row of the largest cell moves to the cell
        where every column differs, to an empty cell, to the first and to the
        last cell of the domain (each target once).

    Notes
    -----
    Each neighbour differs from ``df`` by exactly one row, the neighbouring
    relation of every pandas_dp release (one entity row for count-of-counts);
    with ``held``, in one row's values (same rows), the relation of a release
    with public totals.
    Added rows copy an existing row (or the first row) and change only the
    released columns, so other columns keep valid values.

    Examples
    --------
    >>> import pandas as pd
    >>> from pandas_dp.testing import neighbours
    >>> d = pd.DataFrame({"age": [10, 20, 35]})
    >>> [n.name for n in neighbours(d, "age", bins=[0, 18, 65, 100])][:3]
    ['remove from largest cell', 'add to largest cell', 'empty a cell']
    >>> [n.name for n in neighbours(d, "age", bins=[0, 18, 65, 100], held=[])]
    ['move every column', 'move to the first cell']
    """
    if not isinstance(df, pd.DataFrame):
        raise ParameterError(f"neighbours needs a DataFrame; got {type(df).__name__}.")
    if group is not None:
        if group not in df.columns:
            raise ParameterError(f"Column {group!r} (group=) not found; columns are {list(df.columns)[:20]}.")
        if spread_over is not None:
            if spread_over not in df.columns:
                raise ParameterError(f"Column {spread_over!r} (spread_over=) not found; columns are "
                                     f"{list(df.columns)[:20]}.")
            return _whole_group_cases(df, group, spread_over)
        return _coc_cases(df, group, groups, entity)
    if columns is None:
        if not len(df):
            raise ParameterError("neighbours of an empty frame need columns= and their domain to build a row.")
        return [Neighbour("remove first row", _drop(df, 0), "removed the first row"),
                Neighbour("remove last row", _drop(df, len(df) - 1), "removed the last row"),
                Neighbour("add a copy of the first row", _append(df, df.iloc[0].to_dict()),
                          "added a copy of the first row")]
    cols = [columns] if isinstance(columns, str) else list(columns)
    grid = make_grid(df, cols, bins=bins, range=range, categories=categories)
    if held is not None:
        kept = [held] if isinstance(held, str) else list(held)
        wrong = [c for c in kept if c not in df.columns or c in cols]
        if wrong:
            raise ParameterError(f"held= names {wrong}: give columns of the frame that are not in columns= (the "
                                 f"region columns whose totals are public).")
        return _change_cases(df, cols, grid, kept)
    return _histogram_cases(df, cols, grid)
