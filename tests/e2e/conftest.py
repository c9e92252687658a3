from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.server import Server, start_server


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    """One `loopsense serve --test-skills` per test module (team plan dev tenant)."""
    running = start_server("--test-skills")
    yield running
    running.stop()
