"""``df.groupby(key).dp``: not an accessor, a message where a pandas user looks first.

pandas has no accessor registration for groupby objects, and a per-group
accessor would be the wrong tool: each group's release would charge its own
loss, and the groups would be those the private data hold (a group with no
rows would be absent, another with one row present). The DP form is one
release over a public list of groups: ``df.dp.histogram(columns, ..., by=key,
by_categories=[...])``, one charge, one consistent table per group and the
total. So ``DataFrameGroupBy.dp`` and ``SeriesGroupBy.dp`` raise
:class:`~pandas_dp.errors.GroupbyAccessError` (a ``TypeError``: an
``AttributeError`` would fall through to pandas' generic "no attribute"
message) naming that form with the caller's key. A frame with a column named ``dp`` keeps
pandas' column access (``df.groupby(key).dp`` is that column's groupby).
"""

from __future__ import annotations

from typing import Any

from pandas_dp.errors import GroupbyAccessError

__all__ = ["install"]


def _key_text(grouped: Any) -> str:
    keys = getattr(grouped, "keys", None)
    if isinstance(keys, str):
        return repr(keys)
    if isinstance(keys, list) and all(isinstance(k, str) for k in keys):
        return repr(keys[0] if len(keys) == 1 else keys)
    return "'<group column>'"


class _NoGroupbyAccessor:
    """A descriptor that raises the message (or hands pandas a ``dp`` column, as pandas would)."""

    def __get__(self, grouped: Any, owner: Any = None) -> Any:
        if grouped is None:
            return self
        frame = getattr(grouped, "obj", None)
        columns = getattr(frame, "columns", None)
        if columns is not None and "dp" in columns:
            return grouped["dp"]
        key = _key_text(grouped)
        raise GroupbyAccessError(
            f"df.groupby({key}).dp does not exist: a release per pandas group would charge the loss once per "
            f"group, over the groups the private data hold. Release every group at once, over a public list of "
            f"groups: df.dp.histogram(columns, bins=..., epsilon=..., by={key}, by_categories=[...]) (one charge, "
            f"one table per group and the total), or the group as a released column: "
            f"df.dp.histogram([{key}, column], categories={{{key}: [...]}}, ...). "
            f"See 'One histogram per group' in docs/guide/histograms.md.")


def install() -> None:
    """Put the message on pandas' ``DataFrameGroupBy`` and ``SeriesGroupBy`` (once; never over a real ``dp``)."""
    from pandas.core.groupby import DataFrameGroupBy, SeriesGroupBy

    for cls in (DataFrameGroupBy, SeriesGroupBy):
        if "dp" not in vars(cls):
            setattr(cls, "dp", _NoGroupbyAccessor())
