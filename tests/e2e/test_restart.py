"""`loopsense serve --data-dir DIR` keeps its store across restarts, over real sockets.

Proven here, after the server ends by SIGTERM (a clean stop) and by SIGKILL (no chance to tidy
up): tenants, keys, custom plans, usage (the quota is not reset), thresholds and idempotency
records (a retried Idempotency-Key is answered from its record and not charged again) are all
still there; a server killed in the middle of a burst of charges comes back with every charge
whole (its usage counter equals its records: each transaction all or nothing) and with every
charge it acknowledged; and a second server on the same data dir refuses to start.
"""

from __future__ import annotations

import http.client
import signal
import subprocess
import threading
import uuid
from typing import Any

import pytest

from tests.e2e.server import BIN, Operator, Server, start_server

LOOP = {"events": [{"action": "search"}, {"action": "click"}] * 3}
THRESHOLDS = "/v1/detector-thresholds"


def ok(answer: Any) -> dict[str, Any]:
    assert answer.status == 200, answer.body
    body: dict[str, Any] = answer.json()
    return body


def on_own_plan(operator: Operator, credits: int, rps: int) -> tuple[str, str, str]:
    """A new plan and a tenant on it with a key: (plan, tenant id, key)."""
    plan = f"p-{uuid.uuid4().hex[:8]}"
    operator.set_plan(plan, credits, rps)
    return (plan, *operator.new_tenant(plan))


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["term", "kill"])
def test_the_store_survives_a_restart(signum: int) -> None:
    server = start_server()
    try:
        operator = Operator(server.store_endpoint)
        plan, tenant, key = on_own_plan(operator, credits=3, rps=50)
        retry = {"Idempotency-Key": f"restart-{uuid.uuid4()}"}
        first = server.execute("agent.loop_detect", LOOP, key=key, headers=retry)
        ok(first)
        ok(server.execute("agent.loop_detect", LOOP, key=key))
        ok(server.request({"revisit_threshold": 7}, key=key, path=THRESHOLDS, method="PUT"))
        before = operator.usage(tenant)
        assert (before["plan"], before["quota"], before["used"], before["calls"]) == \
            (plan, 3, 2, 2)

        server = server.restart(signum)
        operator = Operator(server.store_endpoint)
        assert operator.usage(tenant) == before  # tenant, custom plan, usage and its records
        thresholds = ok(server.request(b"", key=key, path=THRESHOLDS, method="GET"))
        assert thresholds["thresholds"]["revisit_threshold"]["value"] == 7
        replay = server.execute("agent.loop_detect", LOOP, key=key, headers=retry)
        assert (replay.status, replay.body) == (200, first.body)  # answered, not run again
        assert operator.usage(tenant)["used"] == 2  # ...and not charged again
        ok(server.execute("agent.loop_detect", LOOP, key=key))  # the last credit
        refused = server.execute("agent.loop_detect", LOOP, key=key)
        assert (refused.status, refused.json()["error"]["code"]) == (429, "QUOTA_EXCEEDED")
        ok(server.execute("agent.loop_detect", LOOP))  # the seeded dev tenant and key too
    finally:
        server.stop()


def test_a_kill_in_the_middle_of_charges_leaves_every_charge_whole() -> None:
    server = start_server()
    try:
        _, tenant, key = on_own_plan(Operator(server.store_endpoint), 100_000, 100_000)
        acknowledged: list[str] = []
        enough = threading.Event()

        def charge_until_killed(worker: int) -> None:
            for n in range(400):  # bounded: the kill comes long before
                try:
                    answer = server.execute("agent.loop_detect", LOOP, key=key, timeout=10,
                                            headers={"Idempotency-Key": f"w{worker}-{n}"})
                except (OSError, http.client.HTTPException):
                    return  # the server is gone (perhaps half-way through its answer)
                if answer.status != 200:
                    return
                acknowledged.append(answer.json()["executionId"])
                if len(acknowledged) >= 40:
                    enough.set()

        workers = [threading.Thread(target=charge_until_killed, args=(w,)) for w in range(4)]
        for worker in workers:
            worker.start()
        assert enough.wait(120), "".join(server.output)
        server.process.send_signal(signal.SIGKILL)  # while the workers are still charging
        for worker in workers:
            worker.join(60)
        server = server.restart(signal.SIGKILL)  # (already dead: the same data dir again)
        used = Operator(server.store_endpoint).usage(tenant)
        assert used["used"] == used["calls"]  # no charge without its record, nor the reverse
        recorded = {record["executionId"] for record in used["records"]}
        assert set(acknowledged) <= recorded  # every answered charge was committed
        assert len(recorded) >= 40
    finally:
        server.stop()


def test_a_second_server_on_the_same_data_dir_refuses_to_start() -> None:
    server = start_server()
    try:
        assert server.data_dir is not None
        second = subprocess.run(
            [str(BIN / "loopsense"), "serve", "--port", "0", "--store-port", "0",
             "--data-dir", server.data_dir],
            capture_output=True, text=True, timeout=60, check=False)
        assert second.returncode != 0
        assert "in use by another process" in second.stderr
        ok(server.execute("agent.loop_detect", LOOP))  # the first one is unharmed
    finally:
        server.stop()


def test_in_memory_keeps_nothing() -> None:
    server: Server = start_server("--in-memory")
    try:
        tenant, _ = Operator(server.store_endpoint).new_tenant("team")
        assert Operator(server.store_endpoint).accounts.tenant(tenant) is not None
        server = server.restart()
        assert Operator(server.store_endpoint).accounts.tenant(tenant) is None
    finally:
        server.stop()
