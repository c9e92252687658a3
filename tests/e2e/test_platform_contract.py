"""spec/platform.md over real HTTP: every error code, its envelope and Retry-After, idempotency,
the order of checks and what is charged. One `loopsense serve --test-skills` for the module;
each test works on its own tenants, keys and plans, made with the operator CLI."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.e2e.server import DEV_KEY, Response, Server

LOOP = {"events": [{"action": "search"}, {"action": "click"}] * 3}
ENVELOPE_KEYS = ["code", "message", "retryable", "next", "details"]
# The platform table (spec/platform.md) plus agent.loop_detect's own codes.
RETRYABLE = {
    "VALIDATION_ERROR": False, "UNAUTHORIZED": False, "SKILL_NOT_ACCESSIBLE": False,
    "SKILL_NOT_AVAILABLE_FOR_PLAN": False, "SKILL_NOT_FOUND": False, "ROUTE_NOT_FOUND": False,
    "METHOD_NOT_ALLOWED": False, "IDEMPOTENCY_KEY_REUSED": False, "TENANT_RATE_LIMITED": True,
    "QUOTA_EXCEEDED": True,
    "EXECUTION_TIMEOUT": True, "LOOP_EVENTS_INVALID": False, "LOOP_EVENT_LIMIT_EXCEEDED": False,
}

# Operator commands are `loopsense` CLI invocations; each costs a Python start (~2 s), so a
# batch runs in one interpreter through the same entry point (loopsense_local.cli:main).
_BATCH = """
import contextlib, io, json, sys
from loopsense_local.cli import main
answers = []
for argv in json.loads(sys.stdin.read()):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    answers.append({"code": code, "stdout": out.getvalue()})
print(json.dumps(answers))
"""


def operate(server: Server, *commands: list[str]) -> list[Any]:
    """Run operator commands, in order, against the server's store; their stdout as JSON."""
    argvs = [[*c, "--dynamodb-endpoint", server.store()] for c in commands]
    done = subprocess.run([sys.executable, "-c", _BATCH], input=json.dumps(argvs),
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    answers = json.loads(done.stdout.strip().splitlines()[-1])
    for argv, answer in zip(argvs, answers, strict=True):
        assert answer["code"] == 0, (argv, done.stderr)
    return [json.loads(a["stdout"]) for a in answers]


def expect_error(response: Response, code: str, status: int) -> dict[str, Any]:
    """The one error shape, the spec's `retryable`, and Retry-After on exactly retryable codes."""
    assert response.status == status, response.body
    body = response.json()
    assert list(body) == ["error", "requestId"], body
    error = body["error"]
    assert list(error) == ENVELOPE_KEYS, body
    assert error["code"] == code, body
    assert error["retryable"] is RETRYABLE[code], body
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["next"], str) and error["next"]
    assert isinstance(error["details"], list)
    for detail in error["details"]:
        assert list(detail) == ["path", "issue"] and all(isinstance(v, str) for v in
                                                         detail.values()), detail
    assert isinstance(body["requestId"], str) and body["requestId"]
    headers = response.lower_headers()
    assert headers["content-type"] == "application/json"
    assert headers.get("x-request-id") == body["requestId"]
    if RETRYABLE[code]:
        assert re.fullmatch(r"[0-9]+", headers.get("retry-after", "")), headers
        assert int(headers["retry-after"]) >= 1
    else:
        assert "retry-after" not in headers, headers
    return error


def expect_ok(response: Response) -> dict[str, Any]:
    assert response.status == 200, response.body
    body = response.json()
    assert list(body) == ["executionId", "skillKey", "skillVersion", "output", "billing"]
    assert body["billing"] == {"credits": 1}
    assert "retry-after" not in response.lower_headers()
    return body


def seconds_to_next_utc_month() -> float:
    now = datetime.now(UTC)
    year, month = (now.year + 1, 1) if now.month == 12 else (now.year, now.month + 1)
    return (datetime(year, month, 1, tzinfo=UTC) - now).total_seconds()


@pytest.fixture(scope="module")
def world(server: Server) -> dict[str, Any]:
    """Plans, tenants and keys for this module, made in one operator batch."""
    plans = {  # name: (credits, rps, skills)
        "c-burst": ("100", "2", "*"),
        "c-three": ("3", "50", "*"),
        "c-replay": ("1", "50", "*"),
        "c-broke": ("0", "50", "*"),
        "c-closed": ("0", "0", "agent.loop_detect"),
    }
    tenants = {"hobby": "hobby", "burst": "c-burst", "three": "c-three", "replay": "c-replay",
               "broke": "c-broke", "closed": "c-closed", "slow": "team", "idem": "team",
               "revoke": "team"}
    commands = [["plans", "set", name, "--credits", c, "--rps", r, "--skills", s,
                 "--max-time-budget-ms", "60000"] for name, (c, r, s) in plans.items()]
    commands += [["tenants", "create", "--plan", plan, "--tenant-id", f"c-{t}"]
                 for t, plan in tenants.items()]
    commands += [["keys", "issue", f"c-{t}"] for t in tenants]
    commands += [["keys", "issue", "dev", "--skills", "agent.loops"],
                 ["keys", "issue", "c-hobby", "--skills", "agent.loop_detect"]]
    answers = operate(server, *commands)
    issued = answers[len(plans) + len(tenants):]
    keys = {t: a["apiKey"] for t, a in zip(tenants, issued, strict=False)}
    keys["dev-loops-only"] = issued[-2]["apiKey"]
    keys["hobby-loop-detect-only"] = issued[-1]["apiKey"]
    key_ids = {t: a["keyId"] for t, a in zip(tenants, issued, strict=False)}
    return {"keys": keys, "key_ids": key_ids}


def usage(server: Server, tenant: str) -> dict[str, Any]:
    return server.operator("usage", tenant)  # type: ignore[no-any-return]


# -- every code of the table ------------------------------------------------------------------

@pytest.mark.parametrize("body", [
    pytest.param(b"{not json", id="not-json"),
    pytest.param(b"", id="empty-body"),
    pytest.param(b"[1, 2]", id="json-array"),
    pytest.param(b'"agent.loop_detect"', id="json-string"),
    pytest.param({"skillKey": "agent.loop_detect", "input": LOOP, "extra": 1}, id="unknown-field"),
    pytest.param({"input": LOOP}, id="missing-skillKey"),
    pytest.param({"skillKey": "agent.loop_detect"}, id="missing-input"),
    pytest.param({"skillKey": 7, "input": LOOP}, id="skillKey-not-string"),
    pytest.param({"skillKey": "agent.loop_detect", "version": 1, "input": LOOP},
                 id="version-not-string"),
    pytest.param({"skillKey": "agent.loop_detect", "input": {**LOOP, "window": 1}},
                 id="window-out-of-range"),
    pytest.param({"skillKey": "agent.loop_detect", "input": {**LOOP, "window": "5"}},
                 id="window-numeric-string"),
    pytest.param({"skillKey": "agent.loop_detect", "input": {"events": [{"target": "x"}] * 3}},
                 id="event-without-action"),
    pytest.param({"skillKey": "agent.loop_detect",
                  "input": {"events": [{"action": "a", "tagret": "x"}] * 3}},
                 id="unknown-event-field"),
    pytest.param({"skillKey": "agent.loop_detect", "input": [1]}, id="input-not-object"),
    pytest.param({"skillKey": "test.sleep", "input": {"ms": "10"}}, id="test-skill-schema"),
])
def test_validation_error(server, body):
    error = expect_error(server.request(body), "VALIDATION_ERROR", 400)
    # The details name the field (or the body) at fault.
    assert error["details"] and all(d["path"] and d["issue"] for d in error["details"]), error
    assert error["message"].startswith(error["details"][0]["path"] + ": "), error


@pytest.mark.parametrize("value", ["k" * 129, "k" * 200, "has space", "tab\there"])
def test_bad_idempotency_key_is_validation_error(server, value):
    error = expect_error(server.execute("agent.loop_detect", LOOP,
                                        headers={"Idempotency-Key": value}),
                         "VALIDATION_ERROR", 400)
    assert error["details"][0]["path"] == "Idempotency-Key"


def test_idempotency_key_of_128_printable_characters_is_accepted(server):
    key = "~!" * 64
    expect_ok(server.execute("agent.loop_detect", LOOP, headers={"Idempotency-Key": key}))


@pytest.mark.parametrize("authorization", [
    pytest.param(None, id="no-header"),
    pytest.param("", id="empty"),
    pytest.param(DEV_KEY, id="no-scheme"),
    pytest.param(f"Basic {DEV_KEY}", id="basic-scheme"),
    pytest.param("Bearer", id="bearer-only"),
    pytest.param("Bearer ls_short", id="too-short"),
    pytest.param("Bearer ls_has spaces and more than twenty chars", id="bad-characters"),
    pytest.param("Bearer ls_" + "A" * 200, id="too-long"),
    pytest.param("Bearer ls_" + uuid.uuid4().hex, id="unknown-key"),
    pytest.param("Bearer " + DEV_KEY.upper(), id="case-changed-key"),
])
def test_unauthorized(server, authorization):
    headers = {} if authorization is None else {"Authorization": authorization}
    answer = server.execute("agent.loop_detect", LOOP, key=None, headers=headers)
    expect_error(answer, "UNAUTHORIZED", 401)


def test_revoked_key_is_refused_on_the_very_next_request(server, world):
    key = world["keys"]["revoke"]
    replayable = {"Idempotency-Key": f"revoke-{uuid.uuid4()}"}
    expect_ok(server.execute("agent.loop_detect", LOOP, key=key, headers=replayable))
    revoked, listed = operate(server, ["keys", "revoke", "c-revoke", world["key_ids"]["revoke"]],
                              ["keys", "list", "c-revoke"])
    assert revoked["status"] == "revoked"
    assert [k["status"] for k in listed] == ["revoked"]
    expect_error(server.execute("agent.loop_detect", LOOP, key=key), "UNAUTHORIZED", 401)
    # Authentication comes before idempotency: not even a completed replay is answered.
    expect_error(server.execute("agent.loop_detect", LOOP, key=key, headers=replayable),
                 "UNAUTHORIZED", 401)
    # Another tenant's key and the dev key are unaffected.
    expect_ok(server.execute("agent.loop_detect", LOOP))


def test_skill_not_accessible_for_a_scoped_key(server, world):
    key = world["keys"]["dev-loops-only"]
    expect_error(server.execute("agent.loop_detect", LOOP, key=key), "SKILL_NOT_ACCESSIBLE", 403)
    expect_error(server.execute("test.sleep", {"ms": 0}, key=key), "SKILL_NOT_ACCESSIBLE", 403)


def test_skill_not_available_for_plan(server, world):
    key = world["keys"]["hobby"]
    error = expect_error(server.execute("test.sleep", {"ms": 0}, key=key),
                         "SKILL_NOT_AVAILABLE_FOR_PLAN", 403)
    assert "hobby" in error["message"]
    expect_ok(server.execute("agent.loop_detect", LOOP, key=key))  # hobby has this one


@pytest.mark.parametrize("body", [
    pytest.param({"skillKey": "agent.no_such_skill", "input": LOOP}, id="unknown-skill"),
    pytest.param({"skillKey": "Agent.Loop_Detect", "input": LOOP}, id="case-changed"),
    pytest.param({"skillKey": "agent.loop_detect", "version": "9.9.9", "input": LOOP},
                 id="unknown-version"),
    pytest.param({"skillKey": "agent.loop_detect", "version": "1.0", "input": LOOP},
                 id="partial-version"),
])
def test_skill_not_found(server, body):
    expect_error(server.request(body), "SKILL_NOT_FOUND", 404)


def test_explicit_current_version_succeeds(server):
    body = expect_ok(server.request({"skillKey": "agent.loop_detect", "version": "1.0.0",
                                     "input": LOOP}))
    assert body["skillVersion"] == "1.0.0"


def test_tenant_rate_limited_and_not_charged(server, world):
    key = world["keys"]["burst"]
    # 8 calls on a 2/s plan: even if they straddle two second boundaries, at most 6 fit.
    answers = [server.execute("agent.loop_detect", LOOP, key=key) for _ in range(8)]
    statuses = [a.status for a in answers]
    assert set(statuses) <= {200, 429}, statuses
    limited = [a for a in answers if a.status == 429]
    assert limited, statuses
    for answer in limited:
        expect_error(answer, "TENANT_RATE_LIMITED", 429)
    successes = [expect_ok(a)["executionId"] for a in answers if a.status == 200]
    assert successes
    used = usage(server, "c-burst")
    assert used["used"] == used["calls"] == len(successes)
    assert sorted(r["executionId"] for r in used["records"]) == sorted(successes)


def test_quota_exceeded_with_retry_after_to_the_next_utc_month(server, world):
    key = world["keys"]["three"]
    for _ in range(3):
        expect_ok(server.execute("agent.loop_detect", LOOP, key=key))
    for _ in range(2):
        answer = server.execute("agent.loop_detect", LOOP, key=key)
        expected = seconds_to_next_utc_month()
        expect_error(answer, "QUOTA_EXCEEDED", 429)
        assert abs(int(answer.lower_headers()["retry-after"]) - expected) <= 5


def test_execution_timeout_is_retryable_and_free(server, world):
    key = world["keys"]["slow"]
    assert expect_ok(server.execute("test.sleep", {"ms": 5}, key=key))["output"] == {"slept": 5}
    late = server.execute("test.sleep", {"ms": 1500}, key=key)
    expect_error(late, "EXECUTION_TIMEOUT", 504)
    assert server.answered_before_the_skill_ended(late)  # at the 300 ms budget, not the sleep
    used = usage(server, "c-slow")
    assert (used["used"], used["calls"]) == (1, 1)
    assert used["records"][0]["skillKey"] == "test.sleep"


def test_idempotency_key_reused_with_a_different_body(server):
    headers = {"Idempotency-Key": f"reuse-{uuid.uuid4()}"}
    expect_ok(server.execute("agent.loop_detect", LOOP, headers=headers))
    other = {"events": LOOP["events"] + [{"action": "search"}]}
    expect_error(server.execute("agent.loop_detect", other, headers=headers),
                 "IDEMPOTENCY_KEY_REUSED", 409)
    # Same JSON, different bytes is a different body too.
    spaced = json.dumps({"skillKey": "agent.loop_detect", "input": LOOP}, indent=1).encode()
    expect_error(server.request(spaced, headers=headers), "IDEMPOTENCY_KEY_REUSED", 409)


@pytest.mark.parametrize("input_", [
    pytest.param({"events": [{"action": "a"}]}, id="one-event"),
    pytest.param({**LOOP, "similarity": "FUZZY"}, id="unknown-similarity"),
    pytest.param({**LOOP, "similarity": "exact"}, id="lower-case-similarity"),
])
def test_loop_events_invalid(server, input_):
    expect_error(server.execute("agent.loop_detect", input_), "LOOP_EVENTS_INVALID", 400)


@pytest.mark.parametrize("input_", [
    pytest.param({"events": [{"action": "a"}] * 5001}, id="5001-events"),
    pytest.param({"events": [{"action": "a" * (1024 * 1024)}, {"action": "b" * (1024 * 1024)}]},
                 id="over-2MB"),
])
def test_loop_event_limit_exceeded_is_not_retryable(server, input_):
    expect_error(server.execute("agent.loop_detect", input_), "LOOP_EVENT_LIMIT_EXCEEDED", 429)


def test_5000_events_are_within_the_limit(server):
    expect_ok(server.execute("agent.loop_detect", {"events": [{"action": "a"}] * 5000}))


@pytest.mark.parametrize(("method", "path"), [
    ("POST", "/v1/unknown"), ("POST", "/v1"), ("POST", "/v1/execute/extra"), ("GET", "/v2/execute"),
    ("POST", "/v2/execute"),
])
def test_unknown_route_is_404_in_the_envelope(server, method, path):
    answer = server.request({"skillKey": "agent.loop_detect", "input": LOOP}, path=path,
                            method=method)
    expect_error(answer, "ROUTE_NOT_FOUND", 404)


def test_a_known_path_with_another_method_is_405_in_the_envelope(server):
    answer = server.request({"skillKey": "agent.loop_detect", "input": LOOP}, method="GET")
    expect_error(answer, "METHOD_NOT_ALLOWED", 405)
    assert answer.lower_headers()["allow"] == "POST"


def test_the_dashboards_path_takes_only_get(server):
    """`/` is the dashboard's page (GET), so another method there is 405, not an unknown route."""
    answer = server.request({"skillKey": "agent.loop_detect", "input": LOOP}, path="/")
    expect_error(answer, "METHOD_NOT_ALLOWED", 405)
    assert "GET" in answer.lower_headers()["allow"]


# -- idempotency and charging -----------------------------------------------------------------

def test_idempotent_replay_is_byte_identical_and_charged_once(server, world):
    key = world["keys"]["idem"]
    headers = {"Idempotency-Key": f"idem-{uuid.uuid4()}"}
    first = server.execute("agent.loop_detect", LOOP, key=key, headers=headers)
    again = server.execute("agent.loop_detect", LOOP, key=key, headers=headers)
    third = server.execute("agent.loop_detect", LOOP, key=key, headers=headers)
    expect_ok(first)
    assert again.status == third.status == 200
    assert again.body == first.body and third.body == first.body
    # Without a key the same body runs (and is charged) again, under a new execution id.
    fresh = expect_ok(server.execute("agent.loop_detect", LOOP, key=key))
    assert fresh["executionId"] != first.json()["executionId"]
    # Failed calls, with and without an Idempotency-Key, are charged nothing.
    for extra in ({}, {"Idempotency-Key": f"fail-{uuid.uuid4()}"}):
        expect_error(server.execute("agent.loop_detect", {"events": [{"action": "a"}]}, key=key,
                                    headers=extra), "LOOP_EVENTS_INVALID", 400)
        expect_error(server.execute("agent.loop_detect", {**LOOP, "window": 0}, key=key,
                                    headers=extra), "VALIDATION_ERROR", 400)
    used = usage(server, "c-idem")
    assert (used["used"], used["calls"]) == (2, 2)
    assert sorted(r["executionId"] for r in used["records"]) == sorted(
        [first.json()["executionId"], fresh["executionId"]])
    assert all(r["credits"] == 1 and r["status"] == "succeeded" for r in used["records"])


# -- the order of checks ----------------------------------------------------------------------

@pytest.mark.parametrize("body", [
    pytest.param({"skillKey": "agent.no_such_skill", "input": LOOP}, id="unknown-skill"),
    pytest.param(b"{not json", id="not-json"),
    pytest.param({"skillKey": "agent.loop_detect", "input": LOOP, "x": 1}, id="bad-envelope"),
    pytest.param({"skillKey": "agent.loop_detect", "input": {"events": []}}, id="bad-input"),
    pytest.param({"skillKey": "test.sleep", "input": {"ms": 1500}}, id="would-time-out"),
])
def test_authentication_comes_first(server, body):
    bad = {"Authorization": "Bearer ls_" + uuid.uuid4().hex, "Idempotency-Key": "x" * 200}
    expect_error(server.request(body, key=None, headers=bad), "UNAUTHORIZED", 401)


def test_envelope_before_idempotency_key(server):
    error = expect_error(server.request(b"{not json", headers={"Idempotency-Key": "x" * 200}),
                         "VALIDATION_ERROR", 400)
    assert error["details"][0]["path"] == "body"


def test_idempotency_before_skill_lookup(server):
    headers = {"Idempotency-Key": f"order-{uuid.uuid4()}"}
    expect_ok(server.execute("agent.loop_detect", LOOP, headers=headers))
    expect_error(server.execute("agent.no_such_skill", LOOP, headers=headers),
                 "IDEMPOTENCY_KEY_REUSED", 409)


def test_skill_lookup_before_key_grant(server, world):
    key = world["keys"]["dev-loops-only"]
    expect_error(server.execute("agent.no_such_skill", LOOP, key=key), "SKILL_NOT_FOUND", 404)


def test_key_grant_before_plan(server, world):
    key = world["keys"]["hobby-loop-detect-only"]
    expect_error(server.execute("test.sleep", {"ms": 0}, key=key), "SKILL_NOT_ACCESSIBLE", 403)


def test_plan_before_rate_limit_and_rate_limit_before_quota(server, world):
    key = world["keys"]["closed"]  # 0 credits, 0 requests/second, agent.loop_detect only
    expect_error(server.execute("test.sleep", {"ms": 0}, key=key),
                 "SKILL_NOT_AVAILABLE_FOR_PLAN", 403)
    expect_error(server.execute("agent.loop_detect", LOOP, key=key), "TENANT_RATE_LIMITED", 429)


def test_quota_before_running_the_skill(server, world):
    key = world["keys"]["broke"]  # 0 credits
    expect_error(server.execute("agent.loop_detect", {"events": [{"action": "a"}]}, key=key),
                 "QUOTA_EXCEEDED", 429)
    refused = server.execute("test.sleep", {"ms": 0}, key=key)
    expect_error(refused, "QUOTA_EXCEEDED", 429)
    # Answered without running it: a skill run logs "skill finished" before the answer.
    logged = [r["message"] for r in server.wait_for_log(refused.json()["requestId"], "execute")]
    assert "execute" in logged and "skill finished" not in logged


def test_completed_replay_is_answered_over_quota_and_rate_limit(server, world):
    key = world["keys"]["replay"]  # 1 credit
    headers = {"Idempotency-Key": f"replay-{uuid.uuid4()}"}
    first = server.execute("agent.loop_detect", LOOP, key=key, headers=headers)
    expect_ok(first)
    expect_error(server.execute("agent.loop_detect", LOOP, key=key), "QUOTA_EXCEEDED", 429)
    replay = server.execute("agent.loop_detect", LOOP, key=key, headers=headers)
    assert (replay.status, replay.body) == (200, first.body)
    # Charged once so far; then the operator closes the plan's rate (effective at once) and
    # the replay still answers.
    used, _ = operate(server, ["usage", "c-replay"], ["plans", "set", "c-replay", "--rps", "0"])
    assert (used["used"], used["calls"]) == (1, 1)
    expect_error(server.execute("agent.loop_detect", LOOP, key=key), "TENANT_RATE_LIMITED", 429)
    replay = server.execute("agent.loop_detect", LOOP, key=key, headers=headers)
    assert (replay.status, replay.body) == (200, first.body)
    # A new key is not a replay: it is refused like any new call.
    expect_error(server.execute("agent.loop_detect", LOOP, key=key,
                                headers={"Idempotency-Key": f"new-{uuid.uuid4()}"}),
                 "TENANT_RATE_LIMITED", 429)
