"""The Python SDK against a real `loopsense serve --test-skills` over HTTP.

Spec (issue 7; platform.md, Errors and Idempotency): a successful call of each v1 skill; each
error family surfaced as its typed error; a retry after a 503/429 that succeeds and is charged
once (a proxy in this test loses the first answer after the server ran and charged the call,
then answers 429 itself: only the Idempotency-Key, sent again unchanged, keeps the retry from
being charged twice); the deadline respected. No test-only behaviour in the server: the faults
come from the proxy and from the server's own --test-skills skill (test.sleep).
"""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from loopsense_sdk import (
    APIConnectionError,
    AuthenticationError,
    Client,
    EventLimitExceededError,
    ExecutionTimeoutError,
    IdempotencyKeyReusedError,
    PermissionDeniedError,
    QuotaExceededError,
    RateLimitError,
    RequestTimeoutError,
    SkillNotAccessibleError,
    SkillNotAvailableForPlanError,
    SkillNotFoundError,
    UnavailableError,
    ValidationError,
    canonical_hash,
    checkpoint,
    semantic_signature,
)

from tests.e2e.server import DEV_KEY, Operator, Server

LOOP = [{"action": "search"}, {"action": "click"}] * 3


def client(server: Server, key: str = DEV_KEY, **options: Any) -> Client:
    return Client(key, server.url, **options)


# ---- a proxy between the SDK and the server -----------------------------------------------------
class Proxy:
    """Forwards to the server, except for the scripted requests: "drop" forwards the request
    (the server runs and charges it), throws the answer away and answers 503; "503" and "429"
    answer themselves with the platform's envelope and Retry-After: 1. After the script:
    ``then`` ("forward" or an answer). Records every request's Idempotency-Key and body."""

    def __init__(self, upstream: str, script: list[str], then: str = "forward") -> None:
        self.upstream, self.script, self.then = upstream, list(script), then
        self.seen: list[tuple[str | None, bytes]] = []
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - the http.server hook
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with proxy.lock:
                    proxy.seen.append((self.headers.get("Idempotency-Key"), body))
                    step = proxy.script.pop(0) if proxy.script else proxy.then
                if step in ("forward", "drop"):
                    status, headers, answer = proxy.forward(self.path, dict(self.headers), body)
                    if step == "forward":
                        return self.reply(status, answer, headers.get("Retry-After"))
                    step = "503"
                code = {"503": "PLAN_ELIGIBILITY_UNAVAILABLE", "429": "TENANT_RATE_LIMITED"}[step]
                envelope = {"error": {"code": code, "message": "injected by the test proxy",
                                      "retryable": True, "next": "retry after Retry-After",
                                      "details": []}, "requestId": "proxy"}
                self.reply(int(step), json.dumps(envelope).encode(), "1")

            def reply(self, status: int, body: bytes, retry_after: str | None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                if retry_after is not None:
                    self.send_header("Retry-After", retry_after)
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def forward(self, path: str, headers: dict[str, str], body: bytes
                ) -> tuple[int, dict[str, str], bytes]:
        keep = {k: v for k, v in headers.items() if k.lower() not in ("host", "content-length")}
        request = urllib.request.Request(self.upstream + path, data=body, headers=keep,
                                         method="POST")
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status, dict(answer.headers.items()), answer.read()
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers.items()), error.read()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# ---- a successful call of each skill ------------------------------------------------------------
def test_agent_loop_detect(server: Server) -> None:
    answer = client(server).execute("agent.loop_detect", {"events": LOOP})
    assert answer["skillKey"] == "agent.loop_detect" and answer["skillVersion"] == "1.0.0"
    assert answer["billing"] == {"credits": 1} and uuid.UUID(answer["executionId"])
    assert answer["output"] == {
        "loopDetected": True, "similarity": "EXACT", "window": 20, "repeatThreshold": 3,
        "cycleLength": 2, "confidence": "MEDIUM", "eventIndices": [0, 1, 2, 3, 4, 5],
        "spans": [{"start": 0, "end": 5, "cycleLength": 2, "repeats": 3}]}
    helper = client(server).loop_detect(LOOP, repeat_threshold=2, version="1.0.0")
    assert helper["output"]["repeatThreshold"] == 2 and helper["output"]["loopDetected"]


def test_agent_semantic_loop_and_the_local_signature_agree(server: Server) -> None:
    spellings = [{"userId": 7, "Plan": "  Retry Search  ", "ts": 1},
                 {"USERID": 7.0, "plan": "retry search", "TS": 2},
                 {"userid": 7, "PLAN": "Retry search\u3000", "ts": 3}]
    events = [checkpoint("plan", **state) for state in spellings]
    events.insert(1, {"type": "tool_call", "name": "search"})
    answer = client(server).semantic_loop(events, ignore_keys=["ts"])
    output = answer["output"]
    assert (output["fired"], output["checkpoints"], output["skipped"]) == (True, 3, 1)
    (group,) = output["groups"]
    assert group["eventIndices"] == [0, 2, 3] and group["count"] == 3
    # computed locally, without a call: the same hash and signature as the server's
    assert group["hash"] == canonical_hash(spellings[0], ["ts"])
    assert group["signature"] == semantic_signature(spellings[1], ["ts"])
    raw = client(server).execute("agent.semantic_loop", {"events": events,
                                                         "thresholds": {"revisit_threshold": 4},
                                                         "ignoreKeys": ["ts"]})
    assert raw["output"]["fired"] is False and raw["output"]["revisitThreshold"] == 4


def test_agent_loops(server: Server) -> None:
    events: list[dict[str, Any]] = [
        {"type": "llm_call", "model": "gpt-4o", "user_message": "Extract the total"}
        for _ in range(3)]
    answer = client(server).loops(events, duration_ms=90_000,
                                  thresholds={"step_count_threshold": 3})
    output = answer["output"]
    assert output["fired"] is True
    assert [f["sub"] for f in output["findings"]] == ["step_count", "identical_call",
                                                      "time_budget"]
    assert output["thresholds"]["step_count_threshold"] == 3
    assert output["stats"]["llmCalls"] == 3
    assert answer["billing"]["credits"] == 1


# ---- each error family, typed -------------------------------------------------------------------
def test_401_a_bad_key_is_an_authentication_error(server: Server) -> None:
    with pytest.raises(AuthenticationError) as caught:
        client(server, "ls_not_a_real_key_000000000000").execute("agent.loop_detect",
                                                                 {"events": LOOP})
    error = caught.value
    assert (error.code, error.status, error.retryable) == ("UNAUTHORIZED", 401, False)
    assert error.next and error.request_id and error.attempts == 1


def test_403_a_key_scoped_to_another_skill_and_a_plan_without_the_skill(
        server: Server, operator: Operator) -> None:
    scoped = server.operator("keys", "issue", "dev", "--skills", "agent.loops")["apiKey"]
    assert client(server, scoped).loops([{"type": "step"}])["output"]["fired"] is False
    with pytest.raises(SkillNotAccessibleError) as caught:
        client(server, scoped).loop_detect(LOOP)
    assert (caught.value.code, caught.value.status) == ("SKILL_NOT_ACCESSIBLE", 403)
    _, hobby = operator.new_tenant("hobby")  # test.sleep is team-only
    with pytest.raises(SkillNotAvailableForPlanError) as plan_refusal:
        client(server, hobby).execute_any("test.sleep", {"ms": 0})
    assert isinstance(plan_refusal.value, PermissionDeniedError)
    assert plan_refusal.value.status == 403 and not plan_refusal.value.retryable


def test_404_an_unknown_skill(server: Server) -> None:
    with pytest.raises(SkillNotFoundError) as caught:
        client(server).execute_any("agent.no_such_skill", {"events": LOOP})
    assert caught.value.status == 404
    with pytest.raises(SkillNotFoundError):
        client(server).execute("agent.loop_detect", {"events": LOOP}, version="9.9.9")


def test_400_validation_errors_name_the_field(server: Server) -> None:
    with pytest.raises(ValidationError) as caught:
        client(server).execute("agent.loop_detect", {"events": LOOP, "window": "20"})
    error = caught.value
    assert (error.code, error.status, error.retryable) == ("VALIDATION_ERROR", 400, False)
    assert error.details and error.details[0]["path"].startswith("input.window")
    with pytest.raises(ValidationError) as skill_code:
        client(server).loop_detect([{"action": "only one"}])
    assert skill_code.value.code == "LOOP_EVENTS_INVALID"
    with pytest.raises(EventLimitExceededError) as limit:  # 429, not retryable: split it
        client(server).loop_detect([{"action": "a"}] * 5_001)
    assert isinstance(limit.value, RateLimitError)
    assert (limit.value.status, limit.value.retryable, limit.value.attempts) == (429, False, 1)


def test_409_an_idempotency_key_reused_with_another_body(server: Server) -> None:
    key = "sdk-" + uuid.uuid4().hex
    client(server).loop_detect(LOOP, idempotency_key=key)
    with pytest.raises(IdempotencyKeyReusedError) as caught:
        client(server).loop_detect(LOOP[:4], idempotency_key=key)
    assert caught.value.status == 409 and not caught.value.retryable


def test_429_quota_on_a_tiny_plan_fails_at_once(server: Server, operator: Operator) -> None:
    tiny = "sdk-tiny-" + uuid.uuid4().hex[:6]
    operator.set_plan(tiny, credits=1, rps=1000)
    tenant, key = operator.new_tenant(tiny)
    sdk = client(server, key)
    sdk.loop_detect(LOOP)
    started = time.monotonic()
    with pytest.raises(QuotaExceededError) as caught:
        sdk.loop_detect(LOOP)
    error = caught.value
    assert isinstance(error, RateLimitError)
    assert (error.code, error.status, error.retryable) == ("QUOTA_EXCEEDED", 429, True)
    # Retry-After is the seconds to the month's reset: far past the 30 s deadline, so the SDK
    # raises at once instead of sleeping.
    assert error.retry_after is not None and error.retry_after > 30
    # Had it slept, it would have taken Retry-After (> 30 s): the bound is that, not a clock guess.
    assert error.attempts == 1 and time.monotonic() - started < error.retry_after
    assert operator.usage(tenant)["used"] == 1


def test_504_a_skill_past_its_budget(server: Server) -> None:
    with pytest.raises(ExecutionTimeoutError) as caught:
        client(server, max_attempts=1).execute_any("test.sleep", {"ms": 1500})
    error = caught.value
    assert (error.code, error.status, error.retryable) == ("EXECUTION_TIMEOUT", 504, True)
    assert error.retry_after is not None


# ---- retries: charged once, with one Idempotency-Key --------------------------------------------
def test_a_lost_answer_then_a_429_then_success_is_charged_once(server: Server,
                                                              operator: Operator) -> None:
    tenant, key = operator.new_tenant("team")
    proxy = Proxy(server.url, ["drop", "429"])  # ran and charged, answer lost; then 429
    try:
        started = time.monotonic()
        answer = Client(key, proxy.url, backoff_base=0.01).loop_detect(LOOP)
        elapsed = time.monotonic() - started
    finally:
        proxy.stop()
    assert answer["output"]["loopDetected"] is True
    keys = {k for k, _ in proxy.seen}
    assert len(proxy.seen) == 3 and len(keys) == 1 and None not in keys  # one key, 3 requests
    assert len({body for _, body in proxy.seen}) == 1  # the same body each time
    assert elapsed >= 2.0  # Retry-After: 1 honoured twice
    usage = operator.usage(tenant)
    assert (usage["used"], usage["calls"]) == (1, 1)  # the server ran it once, charged once
    assert usage["records"][0]["executionId"] == answer["executionId"]


def test_503s_then_success_with_your_own_idempotency_key(server: Server,
                                                        operator: Operator) -> None:
    tenant, key = operator.new_tenant("team")
    proxy = Proxy(server.url, ["503"])
    try:
        answer = Client(key, proxy.url).semantic_loop([checkpoint("a", x=1)] * 3,
                                                      idempotency_key="job-7-step-3")
    finally:
        proxy.stop()
    assert answer["output"]["fired"] is True
    assert [k for k, _ in proxy.seen] == ["job-7-step-3"] * 2
    assert operator.usage(tenant)["used"] == 1


def test_the_deadline_is_respected(server: Server) -> None:
    proxy = Proxy(server.url, [], then="503")  # always 503, Retry-After: 1
    try:
        started = time.monotonic()
        with pytest.raises(UnavailableError) as caught:
            Client(DEV_KEY, proxy.url, deadline=2.5, max_attempts=10).loop_detect(LOOP)
        elapsed = time.monotonic() - started
    finally:
        proxy.stop()
    # requests at ~0 s, ~1 s, ~2 s; a third wait would end past 2.5 s: raised then, not later
    # A fourth request (after a wait to ~3 s) would have gone past the deadline: 3, not 4.
    assert caught.value.attempts == 3 and len(proxy.seen) == 3
    assert elapsed >= 2.0, elapsed  # Retry-After: 1 honoured twice (a lower bound: no flake)
    assert caught.value.code == "PLAN_ELIGIBILITY_UNAVAILABLE" and caught.value.retryable


def test_a_server_that_never_answers_times_out_within_the_deadline() -> None:
    with socket.socket() as listener:  # accepts connections, never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        started = time.monotonic()
        with pytest.raises(RequestTimeoutError) as caught:
            Client(DEV_KEY, url, timeout=0.4, deadline=1.0, backoff_base=0.01).loop_detect(LOOP)
        elapsed = time.monotonic() - started
    assert caught.value.retryable
    # Retried, each request bounded by the time left: 0.4 + 0.4 + 0.2 s fill the 1 s deadline,
    # so at most 3 requests (ignoring the deadline, max_attempts would allow 4).
    assert 2 <= caught.value.attempts <= 3
    assert elapsed >= 0.8, elapsed  # two full request timeouts at least (a lower bound)


def test_nothing_listening_is_a_retried_connection_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    with pytest.raises(APIConnectionError) as caught:
        Client(DEV_KEY, f"http://127.0.0.1:{port}", max_attempts=3,
               backoff_base=0.01).loop_detect(LOOP)
    assert caught.value.code == "CONNECTION_ERROR" and caught.value.attempts == 3


# ---- files (docs/files.md): an input uploaded, an output too large to inline -------------------
def test_upload_then_execute_by_ref_is_the_inline_answer(server: Server) -> None:
    sdk = client(server)
    ref = sdk.upload(LOOP)  # a list: its events as one JSON array
    assert ref.startswith("file_")
    by_ref = sdk.execute("agent.loop_detect", {"fileRef": ref, "repeatThreshold": 2})
    inline = sdk.execute("agent.loop_detect", {"events": LOOP, "repeatThreshold": 2})
    assert by_ref["output"] == inline["output"] and by_ref["output"]["repeatThreshold"] == 2
    lines = "\n".join(json.dumps(event) for event in LOOP)  # JSON Lines, as text
    again = sdk.execute("agent.loop_detect", {"fileRef": sdk.upload(lines)})
    assert again["output"]["eventIndices"] == [0, 1, 2, 3, 4, 5]
    with pytest.raises(ValidationError) as used:  # deleted with its successful call
        sdk.execute("agent.loop_detect", {"fileRef": ref})
    assert used.value.code == "LOOP_EVENTS_INVALID"


LARGE = {"count": 900_000}  # test.large: about 6.9 MB of output, over the inline size


def test_an_output_too_large_to_inline_is_fetched_for_you_or_handed_over(server: Server) -> None:
    sdk = client(server, timeout=60)
    fetched = sdk.execute_any("test.large", LARGE)
    assert fetched["output"] == {"count": 900_000, "numbers": list(range(900_000))}
    kept = sdk.execute_any("test.large", LARGE, fetch_output=False)["output"]
    assert set(kept) == {"fileRef", "downloadUrl", "method", "expiresAt", "bytes"}
    with urllib.request.urlopen(kept["downloadUrl"], timeout=30) as answer:
        assert json.loads(answer.read()) == fetched["output"]


def test_the_api_key_never_goes_to_a_pre_signed_url(server: Server) -> None:
    """The URL's signature is its credential: the SDK sends the file's requests without the
    key (the store would refuse two credentials, and the key is not the store's business)."""
    sent: list[tuple[str, dict[str, str]]] = []
    real = client(server).transport

    def recording(request: Any) -> Any:
        sent.append((request.url, request.headers))
        return real(request)

    sdk = client(server, transport=recording)
    sdk.execute("agent.loop_detect", {"fileRef": sdk.upload(LOOP)})
    outside = [headers for url, headers in sent if not url.startswith(server.url)]
    assert len(outside) == 1 and "Authorization" not in outside[0]
    assert all("Authorization" in headers for url, headers in sent if url.startswith(server.url))
