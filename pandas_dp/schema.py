"""Public pandera schemas of the Entities, Groups and Hierarchy tables (``pandas_dp.schema``).

The implementation lives in :mod:`pandas_dp.domain.schema` (the schemas and checks of public tables)
and :mod:`pandas_dp.domain.persons_check` (the custodian's check of the persons frame); this module
keeps the documented import path. Importing it loads pandera, so ``import pandas_dp`` does not:
``pdp.schema`` imports it on first use.
"""

from __future__ import annotations

from pandas_dp.domain.persons_check import check_persons
from pandas_dp.domain.schema import (FAILURE_COLUMNS, entities_schema, groups_schema, hierarchy_schema, join_failures,
                                     raise_failures, scalar_failures, validate_public_tables, validate_tables)

__all__ = ["entities_schema", "groups_schema", "hierarchy_schema", "scalar_failures", "join_failures", "validate_tables",
           "validate_public_tables", "raise_failures", "check_persons", "FAILURE_COLUMNS"]
