"""The routes the dashboard reads, over real HTTP against `loopsense serve` (docs/runs.md,
"Reading runs"; docs/dashboard.md, "GET /v1/usage"): GET /v1/runs newest activity first, paged,
each run once whatever its agents; GET /v1/runs/{runId}; GET /v1/usage; a group's timeline;
each in the envelope, tenant-scoped; and the dashboard's files (GET /, /ui/...)."""

from __future__ import annotations

import base64
import gzip
import json
import time
import uuid
from typing import Any
from urllib.parse import quote

from tests.e2e.server import DEV_KEY, Response, Server

CALL = {"kind": "tool_call", "action": "export_status", "args": {"job": 42},
        "result": {"state": "pending"}, "outcome": "neutral"}


def req(server: Server, method: str, path: str, body: Any = b"", key: str | None = DEV_KEY,
        headers: dict[str, str] | None = None) -> Response:
    for _ in range(10):  # again after Retry-After while the plan's requests/second are used
        answer = server.request(body, key=key, path=path, method=method, headers=headers)
        if answer.status != 429:
            return answer
        time.sleep(float(answer.headers.get("Retry-After", "1")))
    return answer


def ok(answer: Response) -> Any:
    assert answer.status == 200, answer.body
    return answer.json()


def refused(answer: Response, status: int, code: str) -> dict[str, Any]:
    assert answer.status == status, answer.body
    error: dict[str, Any] = answer.json()["error"]
    assert error["code"] == code
    return error


def all_runs(server: Server, key: str, limit: int) -> list[dict[str, Any]]:
    found, cursor = [], None
    while True:
        page = ok(req(server, "GET", f"/v1/runs?limit={limit}"
                      + (f"&cursor={cursor}" if cursor else ""), key=key))
        found += page["items"]
        cursor = page["nextCursor"]
        if cursor is None:
            return found


def test_runs_are_listed_newest_activity_first_once_each_and_paged(server, operator):
    _, key = operator.new_tenant("team")
    tag = uuid.uuid4().hex[:6]
    for run, agent in [("a", "x"), ("b", "x"), ("a", "y"), ("c", "x"), ("b", "y")]:
        ok(req(server, "POST", f"/v1/runs/{tag}-{run}/steps", {**CALL, "agentId": agent},
               key=key))
    listed = ok(req(server, "GET", "/v1/runs", key=key))
    assert [r["runId"] for r in listed["items"]] == [f"{tag}-b", f"{tag}-c", f"{tag}-a"]
    assert listed["nextCursor"] is None
    assert [a["agentId"] for a in listed["items"][0]["agents"]] == ["x", "y"]
    for limit in (1, 2):
        assert [r["runId"] for r in all_runs(server, key, limit)] == [
            r["runId"] for r in listed["items"]]
    agent = listed["items"][0]["agents"][0]
    assert set(agent) == {"agentId", "role", "sequence", "segmentStart", "createdAt",
                          "lastActivity", "signal", "recommendation"}
    assert "findings" not in agent["signal"] and agent["recommendation"] == {
        "action": "continue"}


def test_a_run_shows_its_agents_findings_recommendation_and_config(server, operator):
    _, key = operator.new_tenant("team")
    ok(req(server, "PUT", "/v1/runs/loop/config", {"repeat_warn": 5}, key=key))
    for _ in range(6):
        ok(req(server, "POST", "/v1/runs/loop/steps", {**CALL, "agentId": "ari"}, key=key))
    run = ok(req(server, "GET", "/v1/runs/loop", key=key))
    signal = ok(req(server, "GET", "/v1/runs/loop/signal?agentId=ari", key=key))["signal"]
    [agent] = run["agents"]
    assert agent["signal"] == signal and agent["recommendation"] == signal["recommendation"]
    assert agent["recommendation"]["action"] == "nudge"
    assert [f["rule"] for f in signal["findings"]] == ["repeated_call", "novelty"]
    assert run["config"] == {"repeat_warn": 5} and run["retention"]["days"] == 14
    assert ok(req(server, "GET", "/v1/runs", key=key))["items"][0]["agents"][0][
        "recommendation"] == signal["recommendation"]


def test_another_tenants_runs_are_neither_listed_nor_shown(server, operator):
    _, owner = operator.new_tenant("team")
    _, other = operator.new_tenant("team")
    ok(req(server, "POST", "/v1/runs/private/steps", {**CALL, "agentId": "ari"}, key=owner))
    assert ok(req(server, "GET", "/v1/runs", key=other)) == {"items": [], "nextCursor": None}
    refused(req(server, "GET", "/v1/runs/private", key=other), 404, "RUN_NOT_FOUND")
    mine = ok(req(server, "GET", "/v1/runs?limit=1", key=owner))
    ok(req(server, "POST", "/v1/runs/private2/steps", {**CALL, "agentId": "a"}, key=owner))
    cursor = ok(req(server, "GET", "/v1/runs?limit=1", key=owner))["nextCursor"]
    # a cursor names a position, never a tenant: the other tenant's walk is its own (empty)
    assert ok(req(server, "GET", f"/v1/runs?cursor={cursor}", key=other))["items"] == []
    assert mine["items"][0]["runId"] == "private"


def forged_cursor(*position: str) -> str:
    """A cursor of the API's own shape (base64url JSON [time, run, agent]) with any parts."""
    return base64.urlsafe_b64encode(json.dumps(list(position)).encode()).decode().rstrip("=")


def test_bad_input_is_enveloped_naming_the_field(server, operator):
    for path, field in [("/v1/runs?limit=0", "limit"), ("/v1/runs?limit=51", "limit"),
                        ("/v1/runs?cursor=bm90LWpzb24", "cursor"),
                        ("/v1/runs/bad%23id", "runId")] + [
            # well-formed cursors whose parts the API never writes: refused, never a store key
            (f"/v1/runs?cursor={forged_cursor(at, run, agent)}", "cursor") for at, run, agent in [
                ("2026-12-01T00:00:00.000Z", "", "ari"),
                ("2026-12-01T00:00:00.000Z", "r" * 3000, "ari"),
                ("2026-12-01T00:00:00.000Z", "run-1", ""),
                ("", "run-1", "ari"), ("yesterday", "run-1", "ari")]]:
        error = refused(req(server, "GET", path), 400, "VALIDATION_ERROR")
        assert error["details"][0]["path"] == field
    refused(req(server, "GET", "/v1/runs", key="ls_no_such_key_00000000000"), 401,
            "UNAUTHORIZED")
    refused(req(server, "GET", "/v1/usage", key=None), 401, "UNAUTHORIZED")
    hobby = operator.new_tenant("hobby")[1]
    refused(req(server, "GET", "/v1/runs", key=hobby), 403, "SKILL_NOT_AVAILABLE_FOR_PLAN")


def test_usage_counts_credits_against_the_plan_and_calls_per_day_and_skill(server, operator):
    tenant, key = operator.new_tenant("team")
    events = {"events": [{"action": "a"}, {"action": "b"}] * 3}
    for _ in range(2):
        ok(req(server, "POST", "/v1/execute", {"skillKey": "agent.loop_detect",
                                               "input": events}, key=key))
    ok(req(server, "POST", "/v1/runs/r/steps", {**CALL, "agentId": "ari"}, key=key))
    usage = ok(req(server, "GET", "/v1/usage", key=key))
    today = time.strftime("%Y-%m-%d", time.gmtime())
    assert usage["plan"] == "team" and usage["period"] == today[:7]
    assert usage["credits"] == {"used": operator.usage(tenant)["used"], "quota": 100_000}
    assert len(usage["days"]) == 30 and usage["days"][-1]["day"] == today
    assert usage["days"][-1]["bySkill"] == {"agent.loop_detect": 2, "runs.steps": 1}
    assert usage["days"][-1]["calls"] == 3 == operator.usage(tenant)["calls"]
    assert all(d["calls"] == 0 for d in usage["days"][:-1])
    _, other = operator.new_tenant("team")
    assert ok(req(server, "GET", "/v1/usage", key=other))["credits"]["used"] == 0


def test_a_groups_detail_counts_its_executions_per_day(server, operator):
    _, key = operator.new_tenant("team")
    for i in range(2):
        ok(req(server, "POST", f"/v1/executions/t-{i}/events", {"events": [
            {"type": "llm_call", "model": "m", "user_message": "again"}] * 3}, key=key))
    [group] = ok(req(server, "GET", "/v1/failure-groups", key=key))["items"]
    detail = ok(req(server, "GET", "/v1/failure-groups/" + quote(group["signature"], safe=""),
                    key=key))
    assert detail["timeline"] == [{"day": group["lastSeen"][:10], "executions": 2}]


def test_the_dashboard_is_served_with_its_policy_and_nothing_else(server):
    assert f"  dashboard: {server.url}/ (sign in with an API key)\n" in server.printed()
    page = req(server, "GET", "/", key=None)
    headers = page.lower_headers()
    assert page.status == 200 and headers["content-type"] == "text/html; charset=utf-8"
    assert "script-src 'self'" in headers["content-security-policy"]
    assert b'src="/ui/js/app.js"' in page.body
    script = req(server, "GET", "/ui/js/app.js", key=None, headers={"Accept-Encoding": "gzip"})
    assert script.lower_headers()["content-encoding"] == "gzip"
    assert b"sessionStorage" in gzip.decompress(script.body) + req(
        server, "GET", "/ui/js/api.js", key=None).body
    etag = script.lower_headers()["etag"]
    assert req(server, "GET", "/ui/js/app.js", key=None,
               headers={"If-None-Match": etag}).status == 304
    for path in ("/ui/nope.js", "/ui/..%2Ftemplate.yaml", "/ui/js/../../app.py"):
        refused(req(server, "GET", path, key=None), 404, "ROUTE_NOT_FOUND")
    assert b"MIT" in req(server, "GET", "/ui/vendor/uplot.LICENSE.txt", key=None).body
