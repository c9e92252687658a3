"""tests/sdk: one `loopsense serve --test-skills` for the whole directory instead of one per
module (each start costs about a second and a half here). The SDK tests need no isolation of
the server: what they count (usage, failure groups, runs, settings) is under tenants of their
own (`operator.new_tenant`), and the development tenant's runs have ids of their own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.server import DEPLOYED, Server, start_server


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    """Overrides the root conftest's module-scoped server for tests/sdk (same server, same
    deployed-stack rule)."""
    if DEPLOYED:
        yield Server(None, DEPLOYED[0], "")
        return
    running = start_server("--test-skills")
    yield running
    running.stop()
