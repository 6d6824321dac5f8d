"""The count-of-counts kernels' former module path, kept so code that imported them from here still runs.

The kernels live in :mod:`pandas_dp.engines.pandas.groups`; the exact count-of-counts a release is
compared with is public as :func:`pandas_dp.testing.exact_count_of_counts`.
"""

from __future__ import annotations

from pandas_dp.engines.pandas.groups import (ROOT, GroupTables, count_groups, exact_count_of_counts, group_leaf_sizes,
                                             prepare_groups, public_group_positions, tables_from_leaf_runs)

__all__ = ["GroupTables", "count_groups", "prepare_groups", "exact_count_of_counts",
           "public_group_positions", "group_leaf_sizes", "tables_from_leaf_runs", "ROOT"]
