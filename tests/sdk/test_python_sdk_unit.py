"""The Python SDK without a server: the canonical vectors, the error map, the retry policy.

Spec: semantic_loop.md (canonical form; every vector in the project's copy,
spec/vectors/canonical.json, byte for byte), platform.md (Errors: code, status, retryable,
Retry-After; Idempotency).
The retry loop runs on a fake transport with an injected clock, sleep and random, so the
waits are exact and nothing sleeps for real.
"""

from __future__ import annotations

import builtins
import json
import math
import random
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import loopsense_sdk
import pytest
from loopsense_sdk import (
    APIConnectionError,
    AuthenticationError,
    CanonicalError,
    Client,
    ConflictError,
    EventLimitExceededError,
    ExecutionTimeoutError,
    HttpRequest,
    HttpResponse,
    IdempotencyInProgressError,
    IdempotencyKeyReusedError,
    InternalError,
    LoopsenseError,
    NotFoundError,
    PermissionDeniedError,
    QuotaExceededError,
    RateLimitError,
    RequestTimeoutError,
    RunAgentNotFoundError,
    RunStepLimitExceededError,
    RunWriteConflictError,
    SkillNotAccessibleError,
    SkillNotAvailableForPlanError,
    SkillNotFoundError,
    TenantRateLimitedError,
    UnavailableError,
    ValidationError,
    canonical_hash,
    canonicalize,
    checkpoint,
    semantic_signature,
)
from loopsense_sdk.errors import error_from_response, parse_retry_after

REPO_ROOT = Path(__file__).resolve().parents[2]
VECTORS = REPO_ROOT / "spec" / "vectors" / "canonical.json"  # the project's own copy


# ---- canonical form -----------------------------------------------------------------------------
def load_vectors() -> list[dict[str, str]]:
    vectors: list[dict[str, str]] = json.loads(VECTORS.read_text(encoding="utf-8"))["vectors"]
    assert len(vectors) >= 30, "the vector file lost vectors"
    return vectors


@pytest.mark.parametrize("vector", load_vectors(), ids=lambda v: v["name"])
def test_every_canonical_vector_byte_for_byte(vector: dict[str, str]) -> None:
    value = json.loads(vector["input"])  # json.loads: 5 stays an int, 5.0 a float
    text = canonicalize(value)
    assert text.encode("utf-8") == vector["canonical"].encode("utf-8")
    assert canonical_hash(value) == vector["sha256"]
    assert semantic_signature(value) == "semantic_loop:" + vector["sha256"][:8]


def test_the_sdk_agrees_with_the_server_implementation_on_random_values() -> None:
    """The server's canonical.py is the definition; the SDK is a separate copy of the rules."""
    from loopsense.core import canonical as server

    rng = random.Random(7)
    keys = ["a", "A", "userId", "USERID", " id", "Ärger", "ärger", "\U0001f600", "\uffff", "k"]
    strings = ["  X ", "Café", "Cafe\u0301", "\u00a0hi\u3000", "\u001fx\ufeff", "Straße", "",
               "line\nbreak\t\"q\" \\", "\u2028a\u2029", "İ"]

    def value(depth: int) -> Any:
        kind = rng.randrange(8 if depth < 4 else 5)
        if kind == 0:
            return rng.choice(strings)
        if kind == 1:
            return rng.randint(-10**25, 10**25)
        if kind == 2:
            return rng.choice([2.675, 1.005, -2.345, 4.999, -0.001, 1e21, 1.5e-3, 0.1234,
                               rng.uniform(-1e6, 1e6), rng.uniform(-1, 1), 1e300, 5e-324])
        if kind == 3:
            return rng.choice([True, False, None])
        if kind == 4:
            return rng.randint(-3, 3)
        if kind in (5, 6):
            return {rng.choice(keys): value(depth + 1) for _ in range(rng.randrange(5))}
        return [value(depth + 1) for _ in range(rng.randrange(4))]

    for _ in range(2_000):
        sample = value(0)
        assert canonicalize(sample) == server.canonical_json(sample), sample
    ignore = {"messageId", "TS"}
    doc = {"MessageId": 1, "ts": 2, "Keep": {"messageid": 3, "x": 1}}
    assert canonicalize(doc, ignore) == server.canonical_json(
        doc, {server.canonical_key(k) for k in ignore}) == '{"keep":{"x":1}}'


def test_the_documented_worked_example() -> None:
    first = {"Query": "  Flights to ZÜRICH ", "filters": {"maxPrice": 400.0, "Stops": 0},
             "score": 0.8349, "messageId": "msg_91c2", "visited": ["node-1", "Node-2"]}
    second = {"query": "flights to Zürich", "Filters": {"stops": 0, "MaxPrice": 400},
              "score": 0.831, "messageId": "msg_77ab", "visited": ["NODE-1", "node-2 "]}
    expected = ('{"filters":{"maxprice":400,"stops":0},"query":"flights to zürich",'
                '"score":0.83,"visited":["node-1","node-2"]}')
    assert canonicalize(first, ["messageId"]) == canonicalize(second, ["messageId"]) == expected
    assert semantic_signature(first, ["messageId"]) == "semantic_loop:a4b40018"
    assert semantic_signature(first) != semantic_signature(second)  # message ids differ


@pytest.mark.parametrize("value, issue", [
    ({"x": math.nan}, "not finite"),
    ({"x": math.inf}, "not finite"),
    ({"x": {1, 2}}, "not JSON"),
    ({1: "a"}, "not a string"),
    ({"k" * 1025: 1}, "longer than 1024"),
])
def test_values_without_a_canonical_form_are_refused_without_echoing_them(
        value: Any, issue: str) -> None:
    with pytest.raises(CanonicalError) as caught:
        canonicalize(value)
    assert issue in caught.value.issue
    assert isinstance(caught.value, ValueError)


def test_nesting_is_limited_as_on_the_server() -> None:
    deep: Any = "x"
    for _ in range(64):
        deep = [deep]
    assert canonicalize(deep) == "[" * 64 + '"x"' + "]" * 64
    with pytest.raises(CanonicalError, match="deeper than 64"):
        canonicalize([deep])
    with pytest.raises(CanonicalError):
        canonical_hash({"s": "\ud800"})  # a lone surrogate is not Unicode


def test_checkpoint_puts_the_state_under_metadata() -> None:
    event = checkpoint("plan", goal="Book", step=3)
    assert event == {"type": "checkpoint", "name": "plan", "metadata": {"goal": "Book", "step": 3}}
    assert checkpoint(name="a") == {"type": "checkpoint", "metadata": {"name": "a"}}
    assert semantic_signature(event["metadata"]) == semantic_signature({"STEP": 3.0,
                                                                        "goal": " book"})


# ---- the error map ------------------------------------------------------------------------------
def envelope(code: str, retryable: bool = False, details: Any = None) -> bytes:
    return json.dumps({"error": {"code": code, "message": "m", "retryable": retryable,
                                 "next": "do this", "details": details or []},
                       "requestId": "req-1"}).encode()


@pytest.mark.parametrize("code, status, cls, family", [
    ("VALIDATION_ERROR", 400, ValidationError, ValidationError),
    ("LOOP_EVENTS_INVALID", 400, ValidationError, ValidationError),
    ("UNAUTHORIZED", 401, AuthenticationError, AuthenticationError),
    ("SKILL_NOT_ACCESSIBLE", 403, SkillNotAccessibleError, PermissionDeniedError),
    ("SKILL_NOT_AVAILABLE_FOR_PLAN", 403, SkillNotAvailableForPlanError, PermissionDeniedError),
    ("SKILL_NOT_FOUND", 404, SkillNotFoundError, NotFoundError),
    ("ROUTE_NOT_FOUND", 404, NotFoundError, NotFoundError),
    ("IDEMPOTENCY_KEY_REUSED", 409, IdempotencyKeyReusedError, ConflictError),
    ("IDEMPOTENCY_IN_PROGRESS", 409, IdempotencyInProgressError, ConflictError),
    ("TENANT_RATE_LIMITED", 429, TenantRateLimitedError, RateLimitError),
    ("QUOTA_EXCEEDED", 429, QuotaExceededError, RateLimitError),
    ("LOOP_EVENT_LIMIT_EXCEEDED", 429, EventLimitExceededError, RateLimitError),
    ("SEMANTIC_LOOP_EVENT_LIMIT_EXCEEDED", 429, EventLimitExceededError, RateLimitError),
    ("LOOPS_EVENT_LIMIT_EXCEEDED", 429, EventLimitExceededError, RateLimitError),
    ("RUN_STEPS_INVALID", 400, ValidationError, ValidationError),
    ("RUN_STEP_LIMIT_EXCEEDED", 429, RunStepLimitExceededError, EventLimitExceededError),
    ("RUN_BATCH_INVALID", 400, ValidationError, ValidationError),
    ("RUN_AGENT_NOT_FOUND", 404, RunAgentNotFoundError, NotFoundError),
    ("RUN_WRITE_CONFLICT", 409, RunWriteConflictError, ConflictError),
    ("INTERNAL_ERROR", 500, InternalError, InternalError),
    ("PLAN_ELIGIBILITY_UNAVAILABLE", 503, UnavailableError, UnavailableError),
    ("EXECUTION_TIMEOUT", 504, ExecutionTimeoutError, ExecutionTimeoutError),
    # codes this SDK does not know: the family from the status
    ("SOME_NEW_INPUT_CODE", 400, ValidationError, ValidationError),
    ("SOME_NEW_LIMIT", 429, RateLimitError, RateLimitError),
    ("SOME_NEW_GRANT", 403, PermissionDeniedError, PermissionDeniedError),
    ("SOME_NEW_OUTAGE", 503, UnavailableError, UnavailableError),
    ("SOME_NEW_CRASH", 507, InternalError, InternalError),
    ("SOME_NEW_THING", 418, LoopsenseError, LoopsenseError),
])
def test_errors_map_by_code_first_then_by_status(code: str, status: int,
                                                 cls: type[LoopsenseError],
                                                 family: type[LoopsenseError]) -> None:
    error = error_from_response(status, {"retry-after": "7", "X-Request-Id": "hdr"},
                                envelope(code, retryable=True,
                                         details=[{"path": "input.events", "issue": "x"}]))
    assert type(error) is cls and isinstance(error, family)
    assert (error.code, error.status, error.retryable, error.next) == (code, status, True,
                                                                       "do this")
    assert error.details == [{"path": "input.events", "issue": "x"}]
    assert (error.request_id, error.retry_after) == ("req-1", 7.0)
    assert str(error) == f"{code}: m"


def test_the_server_error_map_has_a_class_for_every_code() -> None:
    from loopsense.errors import ERRORS

    for code, kind in ERRORS.items():
        error = error_from_response(kind.status, {}, envelope(code, kind.retryable))
        assert type(error) is not LoopsenseError, code
        assert error.retryable is kind.retryable


def test_an_answer_without_an_envelope_gets_its_family_and_retryability_from_the_status() -> None:
    bad_gateway = error_from_response(502, {}, b"<html>Bad Gateway</html>")
    assert isinstance(bad_gateway, UnavailableError)
    assert (bad_gateway.code, bad_gateway.retryable) == ("HTTP_502", True)
    forbidden = error_from_response(403, {"X-Request-Id": "r9"}, b'{"message": "Forbidden"}')
    assert isinstance(forbidden, PermissionDeniedError)
    assert (forbidden.retryable, forbidden.request_id) == (False, "r9")


def test_retry_after_is_seconds_or_an_http_date() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 0 ") == 0.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past


def test_network_errors_are_loopsense_and_builtin_errors() -> None:
    failure = RequestTimeoutError("no answer")
    assert isinstance(failure, APIConnectionError) and isinstance(failure, LoopsenseError)
    assert isinstance(failure, builtins.ConnectionError)
    assert isinstance(failure, builtins.TimeoutError)
    assert failure.retryable and failure.status is None and failure.code == "REQUEST_TIMEOUT"


# ---- the retry policy, on a fake transport -------------------------------------------------------
class Fake:
    """A transport that answers from a script, and a clock that only moves when slept on (or
    when a request 'takes' time)."""

    def __init__(self, *answers: HttpResponse | Exception, request_seconds: float = 0.0) -> None:
        self.answers = list(answers)
        self.requests: list[HttpRequest] = []
        self.sleeps: list[float] = []
        self.now = 100.0
        self.request_seconds = request_seconds

    def transport(self, request: HttpRequest) -> HttpResponse:
        self.requests.append(request)
        self.now += self.request_seconds
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.sleeps.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now

    def client(self, rand: Callable[[], float] = lambda: 0.5, **options: Any) -> Client:
        return Client("ls_test_key", "http://loopsense.test/", transport=self.transport,
                      sleep=self.sleep, random=rand, clock=self.clock, **options)


OK = HttpResponse(200, {}, json.dumps({"executionId": "e1", "skillKey": "agent.loop_detect",
                                       "skillVersion": "1.0.0", "output": {"loopDetected": True},
                                       "billing": {"credits": 1}}).encode())
LOOP = {"events": [{"action": "a"}, {"action": "b"}] * 3}


def answer(code: str, status: int, retryable: bool, retry_after: str | None = None
           ) -> HttpResponse:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return HttpResponse(status, headers, envelope(code, retryable))


def test_a_call_sends_the_envelope_the_key_and_a_fresh_idempotency_key() -> None:
    fake = Fake(OK)
    client = fake.client()
    result = client.execute("agent.loop_detect", LOOP, version="1.0.0")
    assert result["output"] == {"loopDetected": True} and result["billing"] == {"credits": 1}
    client.loop_detect(LOOP["events"], window=4, repeat_threshold=2, similarity="EXACT")
    first, second = fake.requests
    assert first.method == "POST" and first.url == "http://loopsense.test/v1/execute"
    assert json.loads(first.body or b"") == {"skillKey": "agent.loop_detect", "input": LOOP,
                                            "version": "1.0.0"}
    assert json.loads(second.body or b"")["input"] == {**LOOP, "window": 4,
                                                      "repeatThreshold": 2,
                                                      "similarity": "EXACT"}
    assert first.headers["Authorization"] == "Bearer ls_test_key"
    assert first.headers["Content-Type"] == "application/json"
    keys = [r.headers["Idempotency-Key"] for r in fake.requests]
    assert keys[0] != keys[1]  # one per logical call
    assert all(uuid.UUID(k).version == 4 for k in keys)
    assert first.timeout == 10.0


def test_the_helpers_build_each_skills_input() -> None:
    fake = Fake(OK)
    client = fake.client()
    events = [checkpoint("s", a=1)]
    client.semantic_loop(events, thresholds={"revisit_threshold": 2}, ignore_keys=["ts"])
    client.loops(events, duration_ms=5, thresholds={"step_count_threshold": 2})
    client.loops(events, started_at="2026-01-01T00:00:00Z", ended_at="2026-01-01T00:01:00Z")
    bodies = [json.loads(r.body or b"") for r in fake.requests]
    assert bodies[0] == {"skillKey": "agent.semantic_loop", "input": {
        "events": events, "thresholds": {"revisit_threshold": 2}, "ignoreKeys": ["ts"]}}
    assert bodies[1]["input"] == {"events": events, "durationMs": 5,
                                  "thresholds": {"step_count_threshold": 2}}
    assert bodies[2]["input"] == {"events": events, "startedAt": "2026-01-01T00:00:00Z",
                                  "endedAt": "2026-01-01T00:01:00Z"}
    assert [b["skillKey"] for b in bodies] == ["agent.semantic_loop", "agent.loops",
                                               "agent.loops"]


def test_run_monitor_helper_builds_its_input() -> None:
    fake = Fake(OK)
    fake.client().run_monitor([{"kind": "thought"}], config={"repeat_warn": 3})
    fake.client().run_monitor([{"kind": "thought"}])
    bodies = [json.loads(r.body or b"") for r in fake.requests]
    assert bodies == [{"skillKey": "agent.run_monitor",
                       "input": {"steps": [{"kind": "thought"}], "config": {"repeat_warn": 3}}},
                      {"skillKey": "agent.run_monitor", "input": {"steps": [{"kind": "thought"}]}}]


# Every field any runs answer class reads, so one scripted answer serves every route.
RUN_OK = HttpResponse(200, {}, json.dumps({"runId": "r:1", "agentId": "ari", "accepted": 2,
                                           "sequence": 2, "reset": [], "config": {}}).encode())


def test_runs_routes_send_their_method_path_and_body() -> None:
    fake = Fake(RUN_OK)
    runs = fake.client().runs
    runs.register("r:1", agent_id="ari", role="support", objective_embedding=(1.0, 0.5))
    runs.steps("r:1", [{"kind": "message", "text": "hi"}, {"kind": "thought", "agentId": "bob"}],
               agent_id="ari")
    runs.signal("r:1", agent_id="a&b")
    runs.reset("r:1")
    runs.reset("r:1", agent_id="ari")
    runs.config("r:1", repeat_warn=5, tools={"poll_job": {"poll": True}})
    runs.signal("a/b c", agent_id="ari")
    sent = [(r.method, r.url.removeprefix("http://loopsense.test"),
             json.loads(r.body) if r.body is not None else None) for r in fake.requests]
    assert sent == [
        ("POST", "/v1/runs/r:1/agents",
         {"agentId": "ari", "role": "support", "objectiveEmbedding": [1.0, 0.5]}),
        ("POST", "/v1/runs/r:1/steps", {"steps": [  # a step's own agentId is kept
            {"agentId": "ari", "kind": "message", "text": "hi"},
            {"agentId": "bob", "kind": "thought"}]}),
        ("GET", "/v1/runs/r:1/signal?agentId=a%26b", None),
        ("POST", "/v1/runs/r:1/reset", {}),
        ("POST", "/v1/runs/r:1/reset", {"agentId": "ari"}),
        ("PUT", "/v1/runs/r:1/config", {"repeat_warn": 5, "tools": {"poll_job": {"poll": True}}}),
        ("GET", "/v1/runs/a%2Fb%20c/signal?agentId=ari", None),  # one segment, never a path
    ]
    keys = [r.headers.get("Idempotency-Key") for r in fake.requests]
    assert keys[0] is None and keys[2:] == [None] * 5  # only steps is replayed by its key
    assert keys[1] is not None and uuid.UUID(keys[1]).version == 4
    assert all(r.headers["Authorization"] == "Bearer ls_test_key" for r in fake.requests)


def ok(**fields: Any) -> HttpResponse:
    return HttpResponse(200, {}, json.dumps({"runId": "r:1", **fields}).encode())


def test_recover_routes_send_their_method_path_and_body() -> None:
    fake = Fake(
        ok(key="a b", created=True), ok(key="k", created=False), ok(key="k", value={"x": 1}),
        ok(key="k", deleted=True),
        ok(entries={"a": 1}, next="a"), ok(entries={"b": 2}, next=None),  # two pages
        ok(lessonId="l1", kind="lesson", text="t", tags=["x"], createdAt="now"),
        ok(lessons=[], next=None), ok(events=[{"seq": 1, "type": "CIRCUIT_BROKEN"}], next=None),
        ok(broken=True, snapshotId="s1", summary={"entries": 3, "reason": "loop"},
           agentsReset=["ari"]),
        ok(snapshotId="s1", entries={"a": 1}, next=None),
        ok(restored=True, snapshotId="s1", entries=3, replaced={"snapshotId": "s2", "entries": 0}),
        ok(context_block="b", items=[{"type": "snapshot"}], tokens=9, max_token_budget=100))
    runs = fake.client().runs
    assert runs.put_memory("r:1", "a b", {"x": 1}).created is True
    assert runs.put_memory("r:1", "k", None).created is False
    assert runs.get_memory("r:1", "k") == {"x": 1}
    assert runs.delete_memory("r:1", "k") is None
    assert runs.memory("r:1") == {"a": 1, "b": 2}
    lesson = runs.add_lesson("r:1", "t", tags=["x"])
    assert (lesson.lesson_id, lesson.tags, lesson.snapshot_id) == ("l1", ("x",), None)
    assert runs.lessons("r:1") == ()
    assert runs.events("r:1") == ({"seq": 1, "type": "CIRCUIT_BROKEN"},)
    broken = runs.circuit_break("r:1", reason="loop", agent_id="ari")
    assert (broken.snapshot_id, broken.entries, broken.agents_reset) == ("s1", 3, ("ari",))
    assert runs.snapshot("r:1", "s1") == {"a": 1}
    restored = runs.restore("r:1", "s1", idempotency_key="restore-1")
    assert (restored.entries, restored.replaced_snapshot_id) == (3, "s2")
    briefing = runs.context("r:1", query="q", max_token_budget=100)
    assert (briefing.context_block, briefing.tokens) == ("b", 9)
    sent = [(r.method, r.url.removeprefix("http://loopsense.test"), r.body)
            for r in fake.requests]
    assert sent == [
        ("PUT", "/v1/runs/r:1/memory/a%20b", b'{"x":1}'),  # the value is the body
        ("PUT", "/v1/runs/r:1/memory/k", b"null"),  # JSON null, not an empty body
        ("GET", "/v1/runs/r:1/memory/k", None),
        ("DELETE", "/v1/runs/r:1/memory/k", None),
        ("GET", "/v1/runs/r:1/memory?limit=1000", None),
        ("GET", "/v1/runs/r:1/memory?limit=1000&after=a", None),
        ("POST", "/v1/runs/r:1/lessons", b'{"text":"t","tags":["x"],"kind":"lesson"}'),
        ("GET", "/v1/runs/r:1/lessons?limit=1000", None),
        ("GET", "/v1/runs/r:1/events?limit=1000", None),
        ("POST", "/v1/runs/r:1/circuit-break", b'{"reason":"loop","agentId":"ari"}'),
        ("GET", "/v1/runs/r:1/snapshots/s1?limit=1000", None),
        ("POST", "/v1/runs/r:1/snapshots/s1/restore", b"{}"),
        ("POST", "/v1/runs/r:1/context", b'{"query":"q","max_token_budget":100}'),
    ]
    keys = [r.headers.get("Idempotency-Key") for r in fake.requests]
    assert keys[:9] == [None] * 9 and keys[10] is None and keys[12] is None
    assert uuid.UUID(keys[9]).version == 4 and keys[11] == "restore-1"  # breaks, restores


def test_a_break_is_retried_with_its_one_idempotency_key() -> None:
    fake = Fake(answer("RUN_WRITE_CONFLICT", 409, True),
                ok(broken=True, snapshotId="s1", summary={"entries": 0, "reason": "loop"}))
    assert fake.client().runs.circuit_break("r:1", reason="loop").snapshot_id == "s1"
    first, second = (r.headers["Idempotency-Key"] for r in fake.requests)
    assert first == second and len(fake.sleeps) == 1


def test_recover_errors_land_in_their_families() -> None:
    for code, status, family in (("RUN_MEMORY_NOT_FOUND", 404, NotFoundError),
                                 ("RUN_SNAPSHOT_NOT_FOUND", 404, NotFoundError),
                                 ("RUN_MEMORY_FULL", 409, ConflictError)):
        fake = Fake(answer(code, status, False))
        with pytest.raises(family) as caught:
            fake.client().runs.put_memory("r:1", "k", 1)
        assert (caught.value.code, caught.value.attempts) == (code, 1)


def test_a_runs_write_conflict_is_retried_with_the_same_idempotency_key() -> None:
    fake = Fake(answer("RUN_WRITE_CONFLICT", 409, True), RUN_OK)
    result = fake.client().runs.steps("r:1", [{"kind": "thought"}] * 2, agent_id="ari",
                                      idempotency_key="batch-7")
    assert (result.accepted, result.sequence) == (2, 2)
    assert [r.headers["Idempotency-Key"] for r in fake.requests] == ["batch-7", "batch-7"]
    assert len({r.body for r in fake.requests}) == 1 and len(fake.sleeps) == 1


def test_runs_errors_are_raised_at_once_when_not_retryable() -> None:
    fake = Fake(answer("RUN_AGENT_NOT_FOUND", 404, False), RUN_OK)
    with pytest.raises(RunAgentNotFoundError) as caught:
        fake.client().runs.signal("r:1", agent_id="nobody")
    assert caught.value.attempts == 1 and len(fake.requests) == 1 and fake.sleeps == []


def test_your_own_idempotency_key_is_sent_as_given() -> None:
    fake = Fake(answer("PLAN_ELIGIBILITY_UNAVAILABLE", 503, True, "0"), OK)
    fake.client().execute("agent.loop_detect", LOOP, idempotency_key="order-42")
    assert [r.headers["Idempotency-Key"] for r in fake.requests] == ["order-42", "order-42"]


@pytest.mark.parametrize("failure", [
    answer("TENANT_RATE_LIMITED", 429, True, "1"),
    answer("PLAN_ELIGIBILITY_UNAVAILABLE", 503, True, "1"),
    answer("EXECUTION_TIMEOUT", 504, True, "1"),
    answer("INTERNAL_ERROR", 500, True, "1"),
    answer("IDEMPOTENCY_IN_PROGRESS", 409, True, "1"),
    HttpResponse(502, {}, b"bad gateway"),
    APIConnectionError("refused"),
    RequestTimeoutError("slow"),
    OSError("a custom transport's socket error"),
])
def test_retryable_failures_are_retried_with_the_same_idempotency_key(
        failure: HttpResponse | Exception) -> None:
    fake = Fake(failure, failure, OK)
    result = fake.client().execute("agent.loop_detect", LOOP)
    assert result["executionId"] == "e1"
    assert len(fake.requests) == 3
    assert len({r.headers["Idempotency-Key"] for r in fake.requests}) == 1
    assert len({r.body for r in fake.requests}) == 1
    assert len(fake.sleeps) == 2


@pytest.mark.parametrize("failure, cls", [
    (answer("VALIDATION_ERROR", 400, False), ValidationError),
    (answer("UNAUTHORIZED", 401, False), AuthenticationError),
    (answer("SKILL_NOT_ACCESSIBLE", 403, False), SkillNotAccessibleError),
    (answer("SKILL_NOT_FOUND", 404, False), SkillNotFoundError),
    (answer("IDEMPOTENCY_KEY_REUSED", 409, False), IdempotencyKeyReusedError),
    (answer("LOOP_EVENT_LIMIT_EXCEEDED", 429, False), EventLimitExceededError),
    (HttpResponse(403, {}, b"{}"), PermissionDeniedError),
])
def test_non_retryable_errors_are_raised_at_once(failure: HttpResponse,
                                                 cls: type[LoopsenseError]) -> None:
    fake = Fake(failure, OK)
    with pytest.raises(cls) as caught:
        fake.client().execute("agent.loop_detect", LOOP)
    assert len(fake.requests) == 1 and fake.sleeps == []
    assert caught.value.attempts == 1 and caught.value.retryable is False


def test_backoff_is_full_jitter_below_an_exponential_ceiling() -> None:
    fake = Fake(answer("INTERNAL_ERROR", 500, True))  # no Retry-After: jitter alone
    rolls = iter([0.0, 0.999999, 0.5, 0.25, 1.0 - 1e-12])
    with pytest.raises(InternalError) as caught:
        fake.client(rand=lambda: next(rolls), max_attempts=6, backoff_base=0.2,
                    backoff_max=1.0).execute("agent.loop_detect", LOOP)
    # each sleep is roll * ceiling, ceilings base * 2**(n-1) capped at backoff_max: 0.2, 0.4,
    # 0.8, 1.0, 1.0 (roll 0.5 of 0.8, roll 0.25 of 1.0, ...)
    assert fake.sleeps == pytest.approx([0.0, 0.4 * 0.999999, 0.4, 0.25, 1.0 - 1e-12])
    assert caught.value.attempts == 6 and len(fake.requests) == 6


def test_backoff_bounds_over_many_draws() -> None:
    client = Client("k", "http://x", random=random.Random(1).random, backoff_base=0.1,
                    backoff_max=2.0)
    for retry in range(1, 10):
        ceiling = min(2.0, 0.1 * 2 ** (retry - 1))
        draws = [client.backoff(retry) for _ in range(500)]
        assert all(0 <= d <= ceiling for d in draws)
        assert max(draws) > 0.9 * ceiling and min(draws) < 0.1 * ceiling  # the whole range


def test_retry_after_is_a_floor_on_the_wait() -> None:
    fake = Fake(answer("TENANT_RATE_LIMITED", 429, True, "2"), OK)
    fake.client(rand=lambda: 0.999).execute("agent.loop_detect", LOOP)
    assert fake.sleeps == [2.0]  # jitter (<= 0.2) is below what the server asked
    fake = Fake(answer("TENANT_RATE_LIMITED", 429, True, "0"), OK)
    fake.client(rand=lambda: 0.5, backoff_base=1.0).execute("agent.loop_detect", LOOP)
    assert fake.sleeps == [0.5]  # a Retry-After of 0 leaves the jitter


def test_a_retry_after_beyond_the_deadline_fails_at_once_without_sleeping() -> None:
    fake = Fake(answer("QUOTA_EXCEEDED", 429, True, "86400"), OK)
    with pytest.raises(QuotaExceededError) as caught:
        fake.client(deadline=30).execute("agent.loop_detect", LOOP)
    assert fake.sleeps == [] and len(fake.requests) == 1
    assert caught.value.retry_after == 86400 and caught.value.attempts == 1


def test_the_deadline_bounds_waits_and_request_timeouts() -> None:
    # each request takes 0.4 s; Retry-After 1; deadline 2.5 -> requests at 0, 1.4; then a
    # wait to 2.8 would pass the deadline: raise after 1.8 s, never sleeping past it.
    fake = Fake(answer("PLAN_ELIGIBILITY_UNAVAILABLE", 503, True, "1"), request_seconds=0.4)
    with pytest.raises(UnavailableError) as caught:
        fake.client(deadline=2.5, max_attempts=10, timeout=5).execute("agent.loop_detect", LOOP)
    assert len(fake.requests) == 2 and fake.sleeps == [1.0]
    assert caught.value.attempts == 2
    assert fake.now - 100.0 == pytest.approx(1.8)
    assert fake.requests[0].timeout == 2.5  # min(timeout, time left)
    assert fake.requests[1].timeout == pytest.approx(2.5 - 1.4)


def test_max_attempts_one_means_no_retry() -> None:
    fake = Fake(answer("PLAN_ELIGIBILITY_UNAVAILABLE", 503, True, "0"), OK)
    with pytest.raises(UnavailableError):
        fake.client(max_attempts=1).execute("agent.loop_detect", LOOP)
    assert len(fake.requests) == 1


def test_a_2xx_that_is_not_json_is_an_error() -> None:
    fake = Fake(HttpResponse(200, {}, b"<html>"))
    with pytest.raises(LoopsenseError) as caught:
        fake.client().execute("agent.loop_detect", LOOP)
    assert caught.value.code == "INVALID_RESPONSE" and not caught.value.retryable


def test_configuration_from_arguments_then_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOOPSENSE_API_KEY", raising=False)
    monkeypatch.delenv("LOOPSENSE_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="LOOPSENSE_API_KEY"):
        Client()
    client = Client("k1")
    assert client.base_url == loopsense_sdk.DEFAULT_BASE_URL == "http://127.0.0.1:3000"
    assert (client.timeout, client.max_attempts, client.deadline, client.backoff_base,
            client.backoff_max) == (10.0, 4, 30.0, 0.2, 5.0)
    monkeypatch.setenv("LOOPSENSE_API_KEY", "k-env")
    monkeypatch.setenv("LOOPSENSE_BASE_URL", "https://api.example.com/prod/")
    client = Client()
    assert (client.api_key, client.base_url) == ("k-env", "https://api.example.com/prod")
    assert "k-env" not in repr(client)
    assert Client("k2", "http://other").api_key == "k2"
    refused: list[dict[str, Any]] = [{"max_attempts": 0}, {"deadline": 0}, {"timeout": -1}]
    for bad in refused:
        with pytest.raises(ValueError):
            Client("k", **bad)
    with pytest.raises(ValueError):
        Client("k", "ftp://x")


def test_the_package_imports_nothing_but_the_standard_library() -> None:
    import loopsense_sdk.client
    import loopsense_sdk.errors
    import loopsense_sdk.types  # noqa: F401

    root = Path(loopsense_sdk.__file__).parent
    stdlib = sys.stdlib_module_names
    for source in root.glob("*.py"):
        for line in source.read_text().splitlines():
            words = line.split()
            if line.strip().startswith(("import ", "from ")) and len(words) > 1:
                top = words[1].split(".")[0]
                assert top in stdlib or top in ("loopsense_sdk", "__future__"), (source, line)
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, loopsense_sdk; print(sorted(sys.modules))"],
        capture_output=True, text=True, check=True, timeout=60).stdout
    for heavy in ("'loopsense'", "'numpy'", "'boto3'", "'pydantic'", "'httpx'"):
        assert heavy not in loaded


def test_every_public_type_and_error_is_exported_at_the_top_level() -> None:
    import loopsense_sdk.errors
    import loopsense_sdk.types

    from tests.sdk.test_sdk_types import KEPT_PYTHON

    # Every error; of the generated types (loopsense_sdk.types has them all) the names the SDK
    # exported before they were generated.
    assert set(KEPT_PYTHON) <= set(loopsense_sdk.types.__all__)
    public = set(KEPT_PYTHON) | set(loopsense_sdk.errors.__all__)
    missing = public - {"error_from_response"} - set(loopsense_sdk.__all__)
    assert not missing
    assert all(hasattr(loopsense_sdk, name) for name in loopsense_sdk.__all__)
    # No name that shadows a builtin on `from loopsense_sdk import *`.
    assert not set(loopsense_sdk.__all__) & set(dir(builtins))
