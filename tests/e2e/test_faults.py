"""Faults through real HTTP against `loopsense serve`: races for the last credits, concurrent
idempotent duplicates, the store going away (and coming back) mid-run, a skill past its budget.

Spec (platform.md, Credits and quota, Idempotency): the quota is never exceeded, also under
concurrent calls; a call that ends in any error costs nothing; a repeated request with the same
Idempotency-Key is charged once, and a duplicate that arrives while the first is running is a
retryable 409 IDEMPOTENCY_IN_PROGRESS; a store that cannot be read or written is
PLAN_ELIGIBILITY_UNAVAILABLE 503; a skill past its time budget is EXECUTION_TIMEOUT 504.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from moto.server import ThreadedMotoServer

from loopsense.platform.access.plans import next_month_in_seconds
from tests.concurrency import all_at_once
from tests.e2e.server import Operator, Response, Server, start_server

LOOP = {"events": [{"action": "search"}, {"action": "click"}] * 3}
# The flaky store's server gives up on a store call after STORE_TIMEOUT_S; a request waits at
# most ANSWER_WITHIN_S (60x that, half of botocore's default 60 s) for the 503 that follows.
STORE_TIMEOUT_S = 0.5
ANSWER_WITHIN_S = 30.0


# helpers ----------------------------------------------------------------------------------------
def error_of(answer: Response) -> dict[str, Any]:
    error: dict[str, Any] = answer.json()["error"]
    return error


def assert_retryable(answer: Response, status: int, code: str) -> None:
    assert (answer.status, error_of(answer)["code"]) == (status, code), answer.body
    assert error_of(answer)["retryable"] is True
    assert int(answer.headers["Retry-After"]) >= 1





# 1. the last credits, raced ---------------------------------------------------------------------
def test_forty_concurrent_calls_for_ten_credits_get_exactly_ten(server: Server,
                                                                 operator: Operator) -> None:
    plan = "faults-ten-" + uuid.uuid4().hex[:6]
    operator.set_plan(plan, credits=10, rps=1000)  # `loopsense plans set` (rps: no limit here)
    tenant, key = operator.new_tenant(plan)

    answers = all_at_once([lambda: server.execute("agent.loop_detect", LOOP, key=key)] * 40)

    statuses = sorted(a.status for a in answers)
    assert statuses == [200] * 10 + [429] * 30, statuses
    to_reset = next_month_in_seconds(datetime.now(UTC))
    for refused in (a for a in answers if a.status == 429):
        assert_retryable(refused, 429, "QUOTA_EXCEEDED")
        assert abs(int(refused.headers["Retry-After"]) - to_reset) < 120  # the period's reset
    paid = {a.json()["executionId"] for a in answers if a.status == 200}
    usage = server.operator("usage", tenant)  # the real CLI, as an operator would look
    assert (usage["used"], usage["calls"], usage["quota"]) == (10, 10, 10)
    assert {r["executionId"] for r in usage["records"]} == paid
    # Used up: one more is refused at once, and still nothing more is charged.
    assert_retryable(server.execute("agent.loop_detect", LOOP, key=key), 429, "QUOTA_EXCEEDED")
    assert operator.usage(tenant)["used"] == 10


# 2. idempotent duplicates, concurrent -----------------------------------------------------------
def test_concurrent_duplicates_with_one_idempotency_key_are_charged_once(
        server: Server, operator: Operator) -> None:
    tenant, key = operator.new_tenant("team")  # test.sleep is team-only
    headers = {"Idempotency-Key": "faults-" + uuid.uuid4().hex}

    def call() -> Response:
        return server.execute("test.sleep", {"ms": 150}, key=key, headers=headers)

    answers = all_at_once([call] * 8)

    done = [a for a in answers if a.status == 200]
    assert done, [a.body for a in answers]  # the first one ran
    assert len({a.body for a in done}) == 1  # every 200 is the same bytes
    for busy in (a for a in answers if a.status != 200):
        assert_retryable(busy, 409, "IDEMPOTENCY_IN_PROGRESS")
    # A retry after the first finished is the stored answer, byte for byte, free of charge.
    replay = call()
    assert (replay.status, replay.body) == (200, done[0].body)
    usage = operator.usage(tenant)
    assert (usage["used"], usage["calls"]) == (1, 1)
    assert usage["records"][0]["executionId"] == done[0].json()["executionId"]


def test_a_key_reused_after_the_replay_window_is_a_new_charged_call(
        server: Server, operator: Operator) -> None:
    tenant, key = operator.new_tenant("team")
    headers = {"Idempotency-Key": "faults-" + uuid.uuid4().hex}
    first = server.execute("agent.loop_detect", LOOP, key=key, headers=headers)
    assert first.status == 200
    # 24 h later: the stored response and the key's charge claim have expired (only their
    # expiration times are changed).
    db, tables = operator.accounts.db, operator.accounts.s
    for item in db.call("scan", TableName=tables.idempotency_table)["Items"]:
        db.call("update_item", TableName=tables.idempotency_table, Key={"id": item["id"]},
                UpdateExpression="SET expiration = :past",
                ExpressionAttributeValues={":past": {"N": "1"}})
    claims = db.call("query", TableName=tables.usage_table,
                     KeyConditionExpression="tenantId = :t AND begins_with(sk, :once)",
                     ExpressionAttributeValues={":t": {"S": tenant}, ":once": {"S": "ONCE#"}})
    assert len(claims["Items"]) == 1  # the first call claimed its key for the window
    for item in claims["Items"]:
        db.call("update_item", TableName=tables.usage_table,
                Key={"tenantId": item["tenantId"], "sk": item["sk"]},
                UpdateExpression="SET expiresAt = :past",
                ExpressionAttributeValues={":past": {"N": "1"}})
    other = {"events": [{"action": "open"}, {"action": "close"}] * 3}
    second = server.execute("agent.loop_detect", other, key=key, headers=headers)
    assert second.status == 200  # a new call (not a replay, not IDEMPOTENCY_KEY_REUSED)...
    usage = operator.usage(tenant)
    assert (usage["used"], usage["calls"]) == (2, 2)  # ...delivered, so it is paid for
    assert second.json()["executionId"] != first.json()["executionId"]


# 3. a skill past its budget ---------------------------------------------------------------------
def test_skill_past_its_budget_is_a_free_504_and_the_server_keeps_answering(
        server: Server, operator: Operator) -> None:
    tenant, key = operator.new_tenant("team")
    late = server.execute("test.sleep", {"ms": 1500}, key=key)
    assert_retryable(late, 504, "EXECUTION_TIMEOUT")
    assert server.answered_before_the_skill_ended(late)  # at the 300 ms budget, not the sleep

    # The same timeout with an Idempotency-Key does not stick: the key is free to retry at once.
    headers = {"Idempotency-Key": "faults-" + uuid.uuid4().hex}
    assert_retryable(server.execute("test.sleep", {"ms": 1500}, key=key, headers=headers),
                     504, "EXECUTION_TIMEOUT")

    prompt = server.execute("test.sleep", {"ms": 0}, key=key, headers=headers)
    assert prompt.status == 200, prompt.body  # not IDEMPOTENCY_IN_PROGRESS

    # The late skills finish in their worker threads; their answers are discarded, unpaid.
    server.wait_for_log(late.json()["requestId"], "skill finished")
    usage = operator.usage(tenant)
    assert (usage["used"], usage["calls"]) == (1, 1)
    assert usage["records"][0]["executionId"] == prompt.json()["executionId"]


# 4. the store going away mid-run ----------------------------------------------------------------
class CuttableProxy:
    """TCP 127.0.0.1:port -> upstream, that a test can cut, stall and restore on the same port.

    up: forwards. cut: listener and every connection closed, new connections refused.
    stall: connections accepted (and old ones dropped) but nothing forwarded, so callers wait
    for their own timeout.
    """

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.port = 0
        self._stalled = False
        self._sockets: set[socket.socket] = set()
        self._guard = threading.Lock()
        self._stop = threading.Event()
        self._acceptor: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def up(self) -> None:
        self._close_listener()
        self._drop_connections()
        self._stalled = False
        self._listen()

    def cut(self) -> None:
        self._close_listener()
        self._drop_connections()

    def stall(self) -> None:
        self._close_listener()
        self._drop_connections()
        self._stalled = True
        self._listen()

    def _listen(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))  # the same port after the first time
        listener.listen(128)
        listener.settimeout(0.05)
        self.port = listener.getsockname()[1]
        self._stop = threading.Event()
        self._acceptor = threading.Thread(target=self._accept, args=(listener, self._stop),
                                          daemon=True, name="proxy-accept")
        self._acceptor.start()

    def _close_listener(self) -> None:
        if self._acceptor is not None:
            self._stop.set()
            self._acceptor.join(timeout=5)  # it closes its listener on the way out
            self._acceptor = None

    def _drop_connections(self) -> None:
        with self._guard:
            doomed, self._sockets = self._sockets, set()
        for sock in doomed:
            _close(sock)

    def _accept(self, listener: socket.socket, stop: threading.Event) -> None:
        try:
            while not stop.is_set():
                try:
                    client, _ = listener.accept()
                except TimeoutError:
                    continue
                client.settimeout(None)
                with self._guard:
                    self._sockets.add(client)
                if self._stalled:
                    continue  # held open, never answered
                try:
                    upstream = socket.create_connection(self.upstream, timeout=5)
                except OSError:
                    _close(client)
                    continue
                upstream.settimeout(None)
                with self._guard:
                    self._sockets.add(upstream)
                for src, dst in ((client, upstream), (upstream, client)):
                    threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()
        finally:
            listener.close()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                _close(sock)
            with self._guard:
                self._sockets.discard(src)
                self._sockets.discard(dst)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


@dataclass
class FlakyStore:
    proxy: CuttableProxy
    server: Server  # `loopsense serve --dynamodb-endpoint <proxy>`
    direct: Operator  # operator commands straight to moto, not through the proxy


@pytest.fixture(scope="module")
def flaky_store() -> Iterator[FlakyStore]:
    werkzeug = logging.getLogger("werkzeug")
    level = werkzeug.level
    werkzeug.setLevel(logging.ERROR)  # no line per moto request
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    proxy = CuttableProxy((host, port))
    proxy.up()
    server = start_server("--test-skills", "--dynamodb-endpoint", proxy.url,
                          env={"LOOPSENSE_STORE_TIMEOUT_S": str(STORE_TIMEOUT_S)})
    try:
        yield FlakyStore(proxy, server, Operator(f"http://{host}:{port}"))
    finally:
        server.stop()
        proxy.cut()
        moto.stop()
        werkzeug.setLevel(level)


def assert_store_unavailable(answer: Response) -> None:
    """A 503. That it came at all bounds the wait: the request's own timeout (ANSWER_WITHIN_S)
    is 60 times the server's store timeout and half botocore's default one, so an answer means
    the configured timeout ended the store call. No wall-clock assertion beyond that."""
    assert_retryable(answer, 503, "PLAN_ELIGIBILITY_UNAVAILABLE")


def test_store_cut_mid_run_is_503_uncharged_and_the_server_recovers(
        flaky_store: FlakyStore) -> None:
    proxy, server, direct = flaky_store.proxy, flaky_store.server, flaky_store.direct
    proxy.up()
    first = server.execute("agent.loop_detect", LOOP)
    assert first.status == 200, first.body

    # Cut while a call is in flight (running its skill, or still in its checks): it must not
    # be delivered unpaid, nor paid undelivered.
    # One of them carries an Idempotency-Key, whose in-progress record cannot be cleaned up.
    inflight_key = {"Idempotency-Key": "faults-in-flight-" + uuid.uuid4().hex}
    with ThreadPoolExecutor(max_workers=2) as pool:
        in_flight = [pool.submit(server.execute, "test.sleep", {"ms": 250}, headers=h,
                                 timeout=ANSWER_WITHIN_S)
                     for h in ({}, inflight_key)]
        time.sleep(0.1)
        proxy.cut()
        for call in in_flight:
            assert_store_unavailable(call.result(timeout=2 * ANSWER_WITHIN_S))
    for _ in range(2):
        assert_store_unavailable(server.execute("agent.loop_detect", LOOP,
                                                timeout=ANSWER_WITHIN_S))
    assert_store_unavailable(server.execute(
        "agent.loop_detect", LOOP, headers={"Idempotency-Key": "faults-store-cut"},
        timeout=ANSWER_WITHIN_S))

    usage = direct.usage("dev")
    assert (usage["used"], usage["calls"]) == (1, 1)
    assert usage["records"][0]["executionId"] == first.json()["executionId"]

    proxy.up()  # the same port: the server reconnects by itself
    again = server.execute("agent.loop_detect", LOOP,
                           headers={"Idempotency-Key": "faults-store-cut"})
    assert again.status == 200, again.body  # the key was not left stuck by the 503
    assert server.execute("test.sleep", {"ms": 0}).status == 200
    # The in-flight keyed call: run again, or (its in-progress record outlived the cut) a
    # retryable 409 until that record expires; never stuck for good, never a 500.
    retried = server.execute("test.sleep", {"ms": 250}, headers=inflight_key)
    if retried.status != 200:
        assert_retryable(retried, 409, "IDEMPOTENCY_IN_PROGRESS")
    assert server.process.poll() is None  # the same process served throughout
    usage = direct.usage("dev")
    charged = 3 + (retried.status == 200)
    assert (usage["used"], usage["calls"]) == (charged, charged)


def test_store_stalled_is_503_within_the_store_timeout_and_recovers(
        flaky_store: FlakyStore) -> None:
    proxy, server, direct = flaky_store.proxy, flaky_store.server, flaky_store.direct
    proxy.up()
    assert server.execute("agent.loop_detect", LOOP).status == 200
    before = direct.usage("dev")["used"]

    proxy.stall()  # connections accepted, never answered: only the client timeouts end them
    try:
        assert_store_unavailable(server.execute("agent.loop_detect", LOOP,
                                                timeout=ANSWER_WITHIN_S))
        assert direct.usage("dev")["used"] == before
    finally:
        proxy.up()
    assert server.execute("agent.loop_detect", LOOP).status == 200
    assert direct.usage("dev")["used"] == before + 1
