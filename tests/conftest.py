"""Shared fixtures and the --runslow option."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", default=False, help="run tests marked slow")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow: pass --runslow to run")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def ages() -> pd.DataFrame:
    """A small frame with an int column, a float column with NaN and a string column."""
    rng = np.random.default_rng(12345)
    n = 500
    frame = pd.DataFrame({
        "age": rng.integers(0, 100, n),
        "income": rng.gamma(2.0, 20_000.0, n),
        "state": rng.choice(["CA", "NY", "TX"], n),
    })
    frame.loc[::50, "income"] = np.nan
    return frame


@pytest.fixture(scope="session")
def postgres_server():
    """A PostgreSQL 15 server started for this test session (skips with the reason when it cannot start)."""
    import _postgres_server

    server = _postgres_server.start()
    if isinstance(server, str):
        pytest.skip(server)
    yield server
    server.stop()
