"""pyspark is optional: ``import pandas_dp`` never imports it; importing ``pyspark.sql`` (before or after
pandas_dp) registers ``.dp`` on Spark frames and the Spark engine for them. No Spark session is started."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ORDERS = {
    "pandas_dp first": "import pandas_dp\nassert 'pyspark' not in sys.modules\nimport pyspark.sql\n",
    "pyspark first": "import pyspark.sql\nimport pandas_dp\n",
}
CHECK = """
from pandas_dp.accessors.spark import SparkDataFrameDPAccessor
from pandas_dp.engines import engine_for
from pandas_dp.engines.spark import SPARK_ENGINE, SparkFrame
assert pyspark.sql.DataFrame.dp is SparkDataFrameDPAccessor

class Schema:  # a frame's metadata without a session: the accessor and the engine read the schema only
    fields = ()

class Fake:
    schema = Schema()

assert engine_for(SparkFrame(Fake())) is SPARK_ENGINE
assert list(SparkFrame(Fake()).columns) == []
print("ok")
"""


@pytest.mark.parametrize("order", sorted(ORDERS))
def test_importing_pyspark_registers_the_accessor(order):
    pytest.importorskip("pyspark")
    code = "import sys\n" + ORDERS[order] + CHECK
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, timeout=120,
                         env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_the_dask_hook_still_registers_lazily():
    pytest.importorskip("dask.dataframe")
    code = ("import sys\nimport pandas_dp\nassert 'dask.dataframe' not in sys.modules\nimport dask.dataframe as dd\n"
            "import pandas as pd\nfrom pandas_dp.accessors.dask import DaskDataFrameDPAccessor\n"
            "assert isinstance(dd.from_pandas(pd.DataFrame({'a': [1]}), npartitions=1).dp, DaskDataFrameDPAccessor)\n"
            "print('ok')")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
