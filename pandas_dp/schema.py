"""Public pandera schemas of the Entities, Groups and Hierarchy tables (``pandas_dp.schema``).

The implementation lives in :mod:`pandas_dp.domain.schema`; this module keeps the documented
import path. Importing it loads pandera, so ``import pandas_dp`` does not: ``pdp.schema`` imports
it on first use.
"""

from __future__ import annotations

from pandas_dp.domain.schema import *  # noqa: F401,F403  (the public schemas and checks)
from pandas_dp.domain.schema import __all__ as __all__  # noqa: F401
