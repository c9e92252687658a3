"""The store failing in the middle of a circuit break, over real HTTP: `loopsense serve` talks
to an embedded DynamoDB through a proxy that drops the connection of one chosen request of the
break, either before passing it on or after the store applied it (the answer lost), and of
every request after it until the break has answered (botocore's retries included). Whatever
the request, the run is left in the old state or the new one, never a mix, and the client's
retry with its Idempotency-Key gets exactly one break."""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from loopsense_local.embedded import EmbeddedDynamoDB
from tests.e2e.server import Server, start_server
from tests.e2e.test_recover_http import all_entries, error, ok, req

RUNS_TABLE = b'"loopsense-runs"'
CALL = {"agentId": "ari", "kind": "tool_call", "action": "x", "args": {}, "result": 1,
        "outcome": "neutral"}


@dataclass
class Fault:
    """Fail the request touching the runs table number ``index`` (0-based) after arming, and
    every retry of it until disarmed (botocore retries a dropped connection): dropped before
    the store sees it, or after the store applied it."""

    index: int = -1
    after: bool = False
    seen: int = 0
    failing: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def arm(self, index: int, after: bool) -> None:
        with self.lock:
            self.index, self.after, self.seen, self.failing = index, after, 0, 0

    def decide(self, body: bytes) -> str:
        """'pass', 'drop' (not forwarded) or 'lose' (forwarded, the answer dropped)."""
        with self.lock:
            if self.failing:
                self.failing -= 1
                return "drop"
            if self.index < 0 or RUNS_TABLE not in body:
                return "pass"
            self.seen += 1
            if self.seen - 1 != self.index:
                return "pass"
            self.index, self.failing = -1, 10**6
            return "lose" if self.after else "drop"


def proxy(upstream: str, fault: Fault) -> ThreadingHTTPServer:
    host, port = upstream.removeprefix("http://").split(":")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            verdict = fault.decide(body)
            if verdict == "drop":
                self.close_connection = True
                return
            conn = http.client.HTTPConnection(host, int(port), timeout=10)
            headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
            conn.request("POST", self.path, body=body, headers=headers)
            answer = conn.getresponse()
            data = answer.read()
            conn.close()
            if verdict == "lose":
                self.close_connection = True
                return
            self.send_response(answer.status)
            for name, value in answer.getheaders():
                if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    class Proxy(ThreadingHTTPServer):
        daemon_threads = True

    return Proxy(("127.0.0.1", 0), Handler)


@dataclass
class Faulty:
    server: Server
    fault: Fault


@pytest.fixture(scope="module")
def faulty() -> Iterator[Faulty]:
    store = EmbeddedDynamoDB("127.0.0.1", 0).start()
    fault = Fault()
    front = proxy(store.endpoint, fault)
    threading.Thread(target=front.serve_forever, daemon=True).start()
    server = start_server("--dynamodb-endpoint", f"http://127.0.0.1:{front.server_port}",
                          env={"LOOPSENSE_STORE_TIMEOUT_S": "2"})
    try:
        yield Faulty(server, fault)
    finally:
        server.stop()
        front.shutdown()
        front.server_close()
        store.stop()


def state(server: Server, run: str) -> tuple[Any, ...]:
    lessons = ok(req(server, "GET", f"{run}/lessons"))["lessons"]
    return (all_entries(server, f"{run}/memory"),
            [e["type"] for e in ok(req(server, "GET", f"{run}/events"))["events"]],
            sum(1 for x in lessons if x["kind"] == "loop_detected"),
            ok(req(server, "GET", f"{run}/signal?agentId=ari"))["segmentStart"])


# The break's requests to the runs table: GetItem head, GetItem agent, TransactWriteItems
# (rate counter, head, snapshot, event, agent), GetItem head (tests/integration says so).
@pytest.mark.parametrize("after", [False, True], ids=["before", "answer-lost"])
@pytest.mark.parametrize("index", range(4))
def test_a_break_failing_at_each_store_request_is_old_or_new_and_one_on_retry(
        faulty, index, after):
    server, run = faulty.server, f"/v1/runs/fault-{index}-{int(after)}"
    ok(req(server, "POST", f"{run}/steps", {"steps": [CALL] * 3}))
    for i in range(4):
        ok(req(server, "PUT", f"{run}/memory/k{i}", {"i": i}))
    old = state(server, run)
    new = ({}, ["CIRCUIT_BROKEN"], 1, 3)
    headers = {"Idempotency-Key": f"break-{index}-{after}"}
    body = {"reason": "repeated_tool_call", "agentId": "ari"}
    faulty.fault.arm(index, after)
    failed = req(server, "POST", f"{run}/circuit-break", body, headers=headers)
    faulty.fault.arm(-1, False)
    assert failed.status == 503, failed.body
    assert error(failed)["code"] == "PLAN_ELIGIBILITY_UNAVAILABLE"
    # before the transaction, or the transaction itself not applied: the old state; the
    # transaction applied (its answer lost) or the read after it failing: the new one
    applied = index == 3 or (index == 2 and after)
    assert state(server, run) == (new if applied else old)
    retried = ok(req(server, "POST", f"{run}/circuit-break", body, headers=headers))
    assert retried["summary"]["entries"] == 4
    assert state(server, run) == new
    assert all_entries(server, f"{run}/snapshots/{retried['snapshotId']}") == {
        f"k{i}": {"i": i} for i in range(4)}
