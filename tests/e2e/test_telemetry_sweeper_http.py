"""`loopsense serve` runs the template's scheduled sweeper in the background: an execution that
never sends /end is evaluated once idle past its time budget. The tenant's thresholds apply to
streamed executions, and no event content reaches the server's logs."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from loopsense.core.signatures import hash8
from tests.e2e.server import Operator, Server, start_server

MARK = "SECRET-CONTENT-93bd"
# The sweeper's tick here; the time budget is the smallest allowed, 1,000 ms.
TICK_S = "0.2"
WAIT_S = 60  # generous: the machine may be loaded; the loop ends as soon as the group shows


@pytest.fixture(scope="module")
def fast_server() -> Iterator[Server]:
    running = start_server(env={"LOOPSENSE_SCHEDULE_INTERVAL_S": TICK_S})
    yield running
    running.stop()


def _signatures(server: Server, key: str) -> set[str]:
    answer = server.request(b"", key=key, method="GET", path="/v1/failure-groups")
    return {g["signature"] for g in answer.json()["items"]}


def test_an_idle_execution_is_ended_and_evaluated_by_the_local_sweeper(fast_server):
    operator = Operator(fast_server.store_endpoint)
    _, key = operator.new_tenant("team")
    budget = fast_server.request({"time_budget_ms": 1_000}, key=key, method="PUT",
                                 path="/v1/me/time-budget-config")
    assert budget.status == 200, budget.body
    drifting = [{"type": "llm_call", "model": "m", "timestamp": 1_000 * i,
                 "user_message": f"retry the search, attempt {i} {MARK}"} for i in range(4)]
    sent = fast_server.request({"events": drifting}, key=key,
                               path="/v1/executions/idle-1/events")
    assert sent.status == 200 and sent.json()["fired"] == []
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline and not _signatures(fast_server, key):
        time.sleep(0.2)
    found = _signatures(fast_server, key)
    assert "loops/time_budget_1s+" in found
    assert any(s.startswith("loops/similar_call_") for s in found)
    late = fast_server.request({"events": drifting}, key=key,
                               path="/v1/executions/idle-1/events")
    assert late.json()["error"]["code"] == "EXECUTION_ENDED"
    assert MARK not in "".join(fast_server.output)


def test_the_tenants_thresholds_apply_to_new_executions(fast_server):
    operator = Operator(fast_server.store_endpoint)
    _, key = operator.new_tenant("team")
    raised = fast_server.request({"identical_call_min_repeats": 5}, key=key, method="PUT",
                                 path="/v1/detector-thresholds")
    assert raised.status == 200
    call = {"type": "llm_call", "model": "m", "user_message": MARK}
    three = fast_server.request({"events": [call] * 3}, key=key,
                                path="/v1/executions/t-1/events")
    assert three.json()["fired"] == []
    two_more = fast_server.request({"events": [call] * 2}, key=key,
                                   path="/v1/executions/t-1/events")
    assert two_more.json()["fired"] == [f"loops/identical_call_{hash8('m', MARK)}"]
    assert MARK not in "".join(fast_server.output)
