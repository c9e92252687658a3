"""spec/platform.md, Data handling, over real HTTP: no submitted content in logs or responses,
and one tenant can never see, spend or act as another."""

from __future__ import annotations

import hashlib
import json
import random
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from loopsense_local import operator as ops
from tests.e2e.server import Response, Server, start_server
from tests.e2e.test_platform_contract import LOOP, expect_error, expect_ok, operate


@pytest.fixture(scope="module")
def marked_server() -> Iterator[Server]:
    """A server of its own: the test reads everything it printed, after stopping it."""
    running = start_server("--test-skills")
    yield running
    running.stop()


def test_no_submitted_string_reaches_logs_or_responses(marked_server):
    server = marked_server
    token = uuid.uuid4().hex  # what we search for, whatever case or prefix surrounds it
    mark = f"MARK-{token}"
    short = uuid.uuid4().hex[:24]  # for fields of at most 32 characters (version)
    number = random.randrange(10**14, 10**15)  # a numeric "marker" for number-typed fields
    keys = operate(
        server,
        ["plans", "set", "m-broke", "--credits", "0", "--rps", "50", "--skills", "*",
         "--max-time-budget-ms", "60000"],
        ["plans", "set", "m-closed", "--credits", "0", "--rps", "0", "--skills", "*",
         "--max-time-budget-ms", "60000"],
        ["tenants", "create", "--plan", "hobby", "--tenant-id", "m-hobby"],
        ["tenants", "create", "--plan", "m-broke", "--tenant-id", "m-broke"],
        ["tenants", "create", "--plan", "m-closed", "--tenant-id", "m-closed"],
        ["keys", "issue", "m-hobby"],
        ["keys", "issue", "m-broke"],
        ["keys", "issue", "m-closed"],
        ["keys", "issue", "dev", "--skills", "agent.loops"],
    )[5:]
    hobby, broke, closed, scoped = (k["apiKey"] for k in keys)
    event = {"action": mark, "target": mark, "stateFingerprint": mark, "outcome": mark}
    marked_loop = {"events": [event, {**event, "action": "x" + mark}] * 3}
    idem = {"Idempotency-Key": mark}
    answers: list[tuple[str, Response]] = []  # (expected code, response)

    def send(code: str, body: Any, **kwargs: Any) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        answers.append((code, server.request(data, **kwargs)))

    def envelope(input_: Any, skill: str = "agent.loop_detect", **extra: Any) -> dict[str, Any]:
        return {"skillKey": skill, "input": input_, **extra}

    # Successes, and a byte-identical replay, with content everywhere a caller controls.
    send("OK", envelope(marked_loop), headers=idem)
    send("OK", envelope(marked_loop), headers=idem)
    send("OK", envelope({**marked_loop, "similarity": "ACTION_TARGET"}, version="1.0.0"))
    send("OK", envelope({"events": [event] * 2}))
    # Validation errors: unknown field names and values at every level, wrong types.
    send("VALIDATION_ERROR", envelope({"events": [{**event, mark: mark}] * 3}))
    send("VALIDATION_ERROR", envelope({**marked_loop, mark: mark}))
    send("VALIDATION_ERROR", envelope(marked_loop, **{mark: mark}))
    send("VALIDATION_ERROR", envelope(marked_loop, tenantId=mark))
    send("VALIDATION_ERROR", envelope({**marked_loop, "window": mark}))
    send("VALIDATION_ERROR", envelope({**marked_loop, "window": number}))
    send("VALIDATION_ERROR", envelope({**marked_loop, "repeatThreshold": -number}))
    send("VALIDATION_ERROR", envelope({"events": mark}))
    send("VALIDATION_ERROR", envelope({"events": [mark, mark]}))
    send("VALIDATION_ERROR", envelope({"events": [{"action": number}] * 3}))
    send("VALIDATION_ERROR", envelope({"events": [{"target": mark}] * 3}))
    send("VALIDATION_ERROR", envelope(mark))
    send("VALIDATION_ERROR", envelope({"ms": mark}, skill="test.sleep"))
    send("VALIDATION_ERROR", envelope({"ms": number}, skill="test.sleep"))
    send("VALIDATION_ERROR", {"skillKey": {mark: mark}, "input": marked_loop})
    send("VALIDATION_ERROR", {"skillKey": mark * 5, "input": marked_loop})
    send("VALIDATION_ERROR", envelope(marked_loop, version=mark * 2))
    send("VALIDATION_ERROR", {"input": marked_loop, mark: mark})
    send("VALIDATION_ERROR", [mark, marked_loop])
    send("VALIDATION_ERROR", f'{{"skillKey": "{mark}", "input": '.encode())
    send("VALIDATION_ERROR", f'{{"{mark}": NaN}}'.encode())
    send("VALIDATION_ERROR", b"\xff\xfe" + mark.encode())
    send("VALIDATION_ERROR", ("[" * 100_000 + f'"{mark}"' + "]" * 100_000).encode())
    send("VALIDATION_ERROR", envelope(marked_loop), headers={"Idempotency-Key": mark * 4})
    send("VALIDATION_ERROR", envelope(marked_loop), headers={"Idempotency-Key": f"{mark} x"})
    # Skill-specific errors.
    send("LOOP_EVENTS_INVALID", envelope({"events": [event]}))
    send("LOOP_EVENTS_INVALID", envelope({**marked_loop, "similarity": mark}))
    send("LOOP_EVENT_LIMIT_EXCEEDED", envelope({"events": [event] * 5001}))
    # Unknown skill and version.
    send("SKILL_NOT_FOUND", envelope(marked_loop, skill=mark))
    send("SKILL_NOT_FOUND", envelope(marked_loop, version=short))
    # Keys: malformed, unknown, scoped; plan, quota, rate limit; idempotency conflicts.
    send("UNAUTHORIZED", envelope(marked_loop), key=mark)
    send("UNAUTHORIZED", envelope(marked_loop), key=None, headers={"Authorization": mark})
    send("UNAUTHORIZED", envelope(marked_loop), key="ls_" + mark)
    send("UNAUTHORIZED", envelope(marked_loop, skill=mark), key="ls_" + mark,
         headers={"Idempotency-Key": mark})
    send("SKILL_NOT_ACCESSIBLE", envelope(marked_loop), key=scoped)
    send("SKILL_NOT_AVAILABLE_FOR_PLAN", envelope({"ms": 0, "note": mark}, skill="test.sleep"),
         key=hobby)
    send("QUOTA_EXCEEDED", envelope(marked_loop), key=broke)
    send("TENANT_RATE_LIMITED", envelope(marked_loop), key=closed)
    send("IDEMPOTENCY_KEY_REUSED", envelope({**marked_loop, "window": 3}), headers=idem)
    send("EXECUTION_TIMEOUT", envelope({"ms": 1500, "note": mark}, skill="test.sleep"))
    # Caller-controlled headers, path and query.
    send("OK", envelope(marked_loop),
         headers={"X-Note": mark, f"X-{mark}": "1", "User-Agent": mark,
                  "Content-Type": f"application/json; note={mark}"})
    send("OK", envelope(marked_loop), path=f"/v1/execute?{mark}={mark}")
    send("ROUTE_NOT_FOUND", envelope(marked_loop), path=f"/v1/{mark}")

    needles = (token, short, str(number))
    for code, answer in answers:
        if code == "OK":
            expect_ok(answer)
        else:
            expect_error(answer, code, answer.status)
        seen = (answer.body.decode("utf-8", "replace") + json.dumps(answer.headers)).lower()
        for needle in needles:
            assert needle not in seen, (code, answer.body)
    first, replay = answers[0][1], answers[1][1]
    assert replay.body == first.body

    printed = server.stop()
    assert "loopsense: stopped" in printed
    for needle in needles:
        lines = [line for line in printed.splitlines() if needle in line.lower()]
        assert not lines, lines
    # The server did log: one metadata line per /v1/execute request, with its request id.
    logged = [json.loads(line) for line in printed.splitlines()
              if line.startswith("{") and '"message":"execute"' in line]
    request_ids = {entry["request_id"] for entry in logged}
    executed = [a for code, a in answers if code != "ROUTE_NOT_FOUND"]
    for answer in executed:
        assert answer.headers["X-Request-Id"] in request_ids
    assert len(logged) >= len(executed)


# -- tenants are isolated ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def two_tenants(server: Server) -> dict[str, str]:
    """iso-a and iso-b on hobby; iso-c on a 1-credit plan. One key each."""
    issued = operate(server,
                     ["plans", "set", "iso-one", "--credits", "1", "--rps", "50", "--skills",
                      "*", "--max-time-budget-ms", "60000"],
                     ["tenants", "create", "--plan", "hobby", "--tenant-id", "iso-a"],
                     ["tenants", "create", "--plan", "hobby", "--tenant-id", "iso-b"],
                     ["tenants", "create", "--plan", "iso-one", "--tenant-id", "iso-c"],
                     ["keys", "issue", "iso-a"], ["keys", "issue", "iso-b"],
                     ["keys", "issue", "iso-c"])
    return {"a": issued[4]["apiKey"], "b": issued[5]["apiKey"], "c": issued[6]["apiKey"]}


def test_one_tenant_cannot_see_or_spend_anothers_usage(server, two_tenants):
    a, b = two_tenants["a"], two_tenants["b"]
    by_a = [expect_ok(server.execute("agent.loop_detect", LOOP, key=a))["executionId"]
            for _ in range(3)]
    by_b = [expect_ok(server.execute("agent.loop_detect", LOOP, key=b))["executionId"]]
    # Failing calls by A charge nobody.
    expect_error(server.execute("agent.loop_detect", {"events": []}, key=a),
                 "VALIDATION_ERROR", 400)
    # There is no tenant parameter: B cannot name A in the envelope, anywhere.
    for extra in ({"tenantId": "iso-a"}, {"tenant": "iso-a"}, {"tenant_id": "iso-a"}):
        expect_error(server.request({"skillKey": "agent.loop_detect", "input": LOOP, **extra},
                                    key=b), "VALIDATION_ERROR", 400)
    expect_error(server.execute("agent.loop_detect", {**LOOP, "tenantId": "iso-a"}, key=b),
                 "VALIDATION_ERROR", 400)
    # The same Idempotency-Key in two tenants is two calls: B never gets A's stored answer,
    # and A's key with another body is no conflict for B.
    shared = {"Idempotency-Key": f"shared-{uuid.uuid4()}"}
    a_first = server.execute("agent.loop_detect", LOOP, key=a, headers=shared)
    other = {"events": [{"action": "x"}] * 4}
    b_first = server.execute("agent.loop_detect", other, key=b, headers=shared)
    b_same = server.execute("agent.loop_detect", LOOP, key=b,
                            headers={"Idempotency-Key": shared["Idempotency-Key"] + "-b"})
    by_a.append(expect_ok(a_first)["executionId"])
    by_b.append(expect_ok(b_first)["executionId"])
    by_b.append(expect_ok(b_same)["executionId"])
    assert b_first.json()["output"]["cycleLength"] == 1  # B's own input, not A's answer
    a_replay = server.execute("agent.loop_detect", LOOP, key=a, headers=shared)
    assert a_replay.body == a_first.body
    assert not set(by_a) & set(by_b)

    usage_a, usage_b = operate(server, ["usage", "iso-a"], ["usage", "iso-b"])
    assert (usage_a["used"], usage_a["calls"]) == (4, 4)
    assert (usage_b["used"], usage_b["calls"]) == (3, 3)
    assert sorted(r["executionId"] for r in usage_a["records"]) == sorted(by_a)
    assert sorted(r["executionId"] for r in usage_b["records"]) == sorted(by_b)
    # Records are metadata only.
    for record in usage_a["records"] + usage_b["records"]:
        assert set(record) == {"executionId", "skillKey", "skillVersion", "credits", "at",
                               "durationMs", "status"}


def test_a_tenants_quota_is_its_own(server, two_tenants):
    """One tenant exhausting its credits leaves the others' untouched, and vice versa."""
    c = two_tenants["c"]
    expect_ok(server.execute("agent.loop_detect", LOOP, key=c))
    expect_error(server.execute("agent.loop_detect", LOOP, key=c), "QUOTA_EXCEEDED", 429)
    expect_ok(server.execute("agent.loop_detect", LOOP, key=two_tenants["b"]))
    expect_error(server.execute("agent.loop_detect", LOOP, key=c), "QUOTA_EXCEEDED", 429)


# ---- every route, walked by a second tenant -----------------------------------------------------
def _call(server: Server, key: str, method: str, path: str, body: Any = None) -> Response:
    data = b"" if body is None else body
    return server.request(data, key=key, path=path, method=method)


def test_a_second_tenant_walking_every_route_with_the_first_ones_ids_sees_and_changes_nothing(
        server, operator):
    """docs/security.md: each route of template.yaml, called by tenant B with every id tenant A
    uses (run, agent, memory key, snapshot, execution, failure group), answers 404 or B's own
    (empty) partition, never anything of A's; and A's data is as it was afterwards. A route
    added to the template without a probe here fails the first assertion."""
    from loopsense_local.gateway import template_routes
    from loopsense_local.tables import load_template

    mark = f"owner-{uuid.uuid4().hex}"
    run, execution = f"/v1/runs/walk-{mark[-8:]}", f"walk-{mark[-8:]}"
    _, a = operator.new_tenant("team")
    _, b = operator.new_tenant("team")
    step = {"agentId": "ari", "kind": "tool_call", "action": mark, "args": {"q": mark},
            "result": {"r": mark}, "outcome": "neutral"}
    calls = [{"type": "llm_call", "model": "m", "user_message": mark}] * 3

    def owner(method: str, path: str, body: Any = None) -> Any:
        answer = _call(server, a, method, path, body)
        assert answer.status == 200, (method, path, answer.body)
        return answer.json()

    owner("PUT", "/v1/detector-thresholds", {"revisit_threshold": 7})
    owner("PUT", "/v1/me/time-budget-config", {"time_budget_ms": 123_000})
    owner("PUT", "/v1/severity-routing", {"semantic_loop": "info"})
    owner("PUT", "/v1/telemetry-settings", {"telemetry_retention_days": 3})
    owner("POST", f"{run}/agents", {"agentId": "ari", "role": mark})
    owner("PUT", f"{run}/config", {"repeat_warn": 5, "tools": {mark: {"poll": True}}})
    owner("POST", f"{run}/steps", {"steps": [step] * 6})
    owner("PUT", f"{run}/memory/secret", {"v": mark})
    owner("POST", f"{run}/lessons", {"text": mark})
    snapshot = owner("POST", f"{run}/circuit-break", {"reason": "r"})["snapshotId"]
    owner("PUT", f"{run}/memory/secret", {"v": mark + "-again"})
    owner("POST", f"/v1/executions/{execution}/events", {"events": calls})
    owner("POST", f"/v1/executions/{execution}/end", {"durationMs": 1000})
    groups = owner("GET", "/v1/failure-groups")["items"]
    assert groups, "tenant A has a failure group"
    group = quote(groups[0]["signature"], safe="")
    before = {path: owner("GET", path) for path in (
        f"{run}/signal?agentId=ari", f"{run}/memory/secret", f"{run}/snapshots/{snapshot}",
        f"{run}/lessons", f"{run}/events", f"/v1/failure-groups/{group}",
        "/v1/detector-thresholds", "/v1/me/time-budget-config", "/v1/severity-routing",
        "/v1/telemetry-settings")}

    # route -> (method, path with A's ids, body, the statuses B may get)
    probes: dict[str, tuple[str, str, Any, set[int]]] = {
        "POST /v1/execute": ("POST", "/v1/execute",
                             {"skillKey": "agent.loop_detect", "input": LOOP}, {200}),
        "GET /v1/playbooks/{name}": ("GET", "/v1/playbooks/identical_call", None, {200}),
        "POST /v1/files": ("POST", "/v1/files", None, {200}),  # a ref of B's own (docs/files.md)
        "GET /": ("GET", "/", None, {200}),  # the dashboard's files: no tenant data
        "GET /openapi.json": ("GET", "/openapi.json", None, {200}),  # public: no tenant data
        "GET /ui/{proxy+}": ("GET", f"/ui/{execution}.js", None, {404}),
        "GET /v1/usage": ("GET", "/v1/usage", None, {200}),
        "GET /v1/runs": ("GET", "/v1/runs", None, {200}),
        "GET /v1/runs/{runId}": ("GET", run, None, {404}),
        "GET /v1/runs/{runId}/signal": ("GET", f"{run}/signal?agentId=ari", None, {404}),
        "GET /v1/runs/{runId}/memory/{key}": ("GET", f"{run}/memory/secret", None, {404}),
        "DELETE /v1/runs/{runId}/memory/{key}": ("DELETE", f"{run}/memory/secret", None, {404}),
        "GET /v1/runs/{runId}/memory": ("GET", f"{run}/memory", None, {200}),
        "GET /v1/runs/{runId}/lessons": ("GET", f"{run}/lessons", None, {200}),
        "GET /v1/runs/{runId}/events": ("GET", f"{run}/events", None, {200}),
        "GET /v1/runs/{runId}/snapshots/{snapshotId}": (
            "GET", f"{run}/snapshots/{snapshot}", None, {404}),
        "POST /v1/runs/{runId}/snapshots/{snapshotId}/restore": (
            "POST", f"{run}/snapshots/{snapshot}/restore", None, {404}),
        "POST /v1/runs/{runId}/context": ("POST", f"{run}/context", {"query": mark}, {200}),
        "POST /v1/runs/{runId}/reset": ("POST", f"{run}/reset", {"agentId": "ari"}, {404}),
        "GET /v1/failure-groups/{signature}": ("GET", f"/v1/failure-groups/{group}", None,
                                               {404}),
        "GET /v1/failure-groups": ("GET", "/v1/failure-groups", None, {200}),
        "GET /v1/detector-thresholds": ("GET", "/v1/detector-thresholds", None, {200}),
        "GET /v1/me/time-budget-config": ("GET", "/v1/me/time-budget-config", None, {200}),
        "GET /v1/severity-routing": ("GET", "/v1/severity-routing", None, {200}),
        "GET /v1/telemetry-settings": ("GET", "/v1/telemetry-settings", None, {200}),
        # B's writes under A's names land in B's own partition (checked on A's side below)
        "POST /v1/executions/{executionId}/end": (
            "POST", f"/v1/executions/{execution}/end", {"durationMs": 1}, {404}),
        "POST /v1/runs/{runId}/agents": ("POST", f"{run}/agents", {"agentId": "ari"}, {200}),
        "PUT /v1/runs/{runId}/config": ("PUT", f"{run}/config", {"repeat_warn": 9}, {200}),
        "POST /v1/runs/{runId}/steps": ("POST", f"{run}/steps", {"steps": [
            {**step, "action": "b", "args": {}, "result": {}}]}, {200}),
        "PUT /v1/runs/{runId}/memory/{key}": ("PUT", f"{run}/memory/secret", "b", {200}),
        "POST /v1/runs/{runId}/lessons": ("POST", f"{run}/lessons", {"text": "b"}, {200}),
        "POST /v1/runs/{runId}/circuit-break": ("POST", f"{run}/circuit-break",
                                                {"reason": "b"}, {200}),
        "POST /v1/executions/{executionId}/events": (
            "POST", f"/v1/executions/{execution}/events", {"events": calls[:1]}, {200}),
        "POST /v1/traces": ("POST", "/v1/traces", {"resourceSpans": []}, {200}),
        "POST /v1/logs": ("POST", "/v1/logs", {"resourceLogs": []}, {200}),
        "PUT /v1/detector-thresholds": ("PUT", "/v1/detector-thresholds",
                                        {"revisit_threshold": 2}, {200}),
        "PUT /v1/me/time-budget-config": ("PUT", "/v1/me/time-budget-config",
                                          {"time_budget_ms": 5000}, {200}),
        "PUT /v1/severity-routing": ("PUT", "/v1/severity-routing", {"loops": "info"}, {200}),
        "PUT /v1/telemetry-settings": ("PUT", "/v1/telemetry-settings",
                                       {"group_retention_days": 2}, {200}),
    }
    assert set(probes) == {r.route_key for r in template_routes(load_template())}
    seen = {}
    for route, (method, path, body, statuses) in probes.items():  # reads first, then writes
        answer = _call(server, b, method, path, body)
        assert answer.status in statuses, (route, answer.status, answer.body)
        assert mark.encode() not in answer.body, route
        if not answer.lower_headers().get("content-type", "").startswith("application/json"):
            continue  # a dashboard file
        seen[route] = answer.json()  # JSON, in the envelope when it is an error
        if answer.status == 404:
            assert seen[route]["error"]["code"].endswith("_NOT_FOUND"), route
    assert seen["GET /v1/runs/{runId}/memory"]["entries"] == {}
    assert seen["GET /v1/runs/{runId}/lessons"]["lessons"] == []
    assert seen["GET /v1/runs/{runId}/events"]["events"] == []
    assert seen["POST /v1/runs/{runId}/context"]["items"] == []
    assert seen["GET /v1/failure-groups"]["items"] == []
    assert run.rsplit("/", 1)[1].encode() not in json.dumps(seen["GET /v1/runs"]).encode()
    assert seen["GET /v1/severity-routing"] != before["/v1/severity-routing"]
    assert seen["GET /v1/me/time-budget-config"] != before["/v1/me/time-budget-config"]
    # A's data, as it was: nothing B did reached it.
    assert {path: owner("GET", path) for path in before} == before


SETTINGS_WRITES = {"/v1/detector-thresholds": {"revisit_threshold": 5},
                   "/v1/me/time-budget-config": {"time_budget_ms": 7000},
                   "/v1/severity-routing": {"loops": "info"},
                   "/v1/telemetry-settings": {"group_retention_days": 5}}


def test_a_key_scoped_to_skills_may_read_but_not_change_the_tenants_settings(server, operator):
    """docs/security.md, the settings scope: changing a tenant-wide setting needs a key granted
    "*" or "settings"; a key handed to an agent for one skill reads them and changes nothing."""
    tenant, owner = operator.new_tenant("team")
    scoped = ops.issue_key(operator.accounts, tenant, ["agent.loop_detect"])["apiKey"]
    settings = ops.issue_key(operator.accounts, tenant, ["agent.loop_detect", "settings"])[
        "apiKey"]
    before = {path: _call(server, owner, "GET", path).json() for path in SETTINGS_WRITES}
    for path, body in SETTINGS_WRITES.items():
        refused = _call(server, scoped, "PUT", path, body)
        assert refused.status == 403, (path, refused.body)
        assert refused.json()["error"]["code"] == "SKILL_NOT_ACCESSIBLE"
        assert "settings" in refused.json()["error"]["message"]
        assert _call(server, scoped, "GET", path).json() == before[path]
    assert {path: _call(server, owner, "GET", path).json() for path in SETTINGS_WRITES} == before
    for path, body in SETTINGS_WRITES.items():
        assert _call(server, settings, "PUT", path, body).status == 200, path
    after = {path: _call(server, owner, "GET", path).json() for path in SETTINGS_WRITES}
    assert all(after[path] != before[path] for path in SETTINGS_WRITES)
    # the scope grants settings only: not a skill
    assert _call(server, settings, "POST", "/v1/execute",
                 {"skillKey": "agent.loops", "input": {"events": [{"type": "step"}]}}
                 ).status == 403


def test_keys_are_stored_as_sha256_digests_only(server, operator):
    """docs/security.md, Keys: the secret is nowhere in the keys table, its digest is the key."""
    tenant, secret = operator.new_tenant("hobby")
    accounts = operator.accounts
    items = accounts.db.call("scan", TableName=accounts.s.api_keys_table)["Items"]
    assert secret not in json.dumps(items) and secret.removeprefix("ls_") not in json.dumps(items)
    digests = {item["keyDigest"]["S"] for item in items if item["tenantId"]["S"] == tenant}
    assert digests == {hashlib.sha256(secret.encode()).hexdigest()}
    assert expect_ok(server.execute("agent.loop_detect", LOOP, key=secret))
