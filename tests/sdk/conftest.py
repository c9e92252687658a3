"""tests/sdk's server: the development tenant on a plan whose rate limit no test reaches.

The adapters', trackers' and gateway's tests send steps in bursts with the development key; on
the team plan's 50 requests/s such a burst is refused, and a refused step degrades the tracker,
which is not what these tests are about (the rate limit has tests of its own in tests/e2e).
"""

from __future__ import annotations

import pytest

from loopsense_local import operator as ops
from tests.e2e.server import Operator, Server

UNLIMITED = "sdk-unlimited"


@pytest.fixture(scope="module")
def server(server: Server) -> Server:
    if server.process is None:  # a deployed stack: its own plans
        return server
    operator = Operator(server.store())
    operator.set_plan(UNLIMITED, credits=10**9, rps=100_000)
    ops.set_tenant_plan(operator.accounts, "dev", UNLIMITED)
    return server
