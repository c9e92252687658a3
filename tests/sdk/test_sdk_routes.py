"""Both SDKs cover every route the service has, and only those: each SDK's route list against
template.yaml and the local gateway's route table (fails on drift either way); every Python route
called by one of its methods (a recording transport); the new routes (failure groups, settings,
playbooks, executions, traces) through the Python SDK against a real `loopsense serve`. The
TypeScript SDK's methods are checked against its list by its own node test (routes.unit.test.ts)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import loopsense_sdk
import pytest
from loopsense_sdk import Client, HttpRequest, HttpResponse, NotFoundError, ValidationError
from loopsense_sdk.routes import ROUTES

from loopsense_local.gateway import template_routes
from loopsense_local.tables import load_template
from tests.e2e.server import Operator, Server
from tests.sdk.npm import NODE, NPM, PACKAGE, install_and_build

ROOT = Path(__file__).resolve().parents[2]


def service_routes() -> set[tuple[str, str]]:
    """The local gateway's route table (built from template.yaml's HttpApi events), checked
    against a plain reading of template.yaml's Path/Method pairs."""
    # the dashboard's files (GET /, GET /ui/{proxy+}) are a page, not API routes
    table = {tuple(route.route_key.split(" ", 1)) for route in template_routes(load_template())
             if route.route_key.split(" ", 1)[1].startswith("/v1/")}
    text = (ROOT / "template.yaml").read_text(encoding="utf-8")
    pairs = re.findall(r"Path: (/v1/\S+)\s+Method: (\w+)", text)
    assert {(m.upper(), p) for p, m in pairs} == table
    return {(m, p) for m, p in table}


def test_the_python_sdk_lists_every_service_route() -> None:
    sdk = {(r.method, r.template) for r in ROUTES}
    service = service_routes()
    assert not service - sdk, f"routes the Python SDK lacks: {sorted(service - sdk)}"
    assert not sdk - service, f"routes the service no longer has: {sorted(sdk - service)}"


@pytest.mark.skipif(NPM is None or NODE is None, reason="npm is not installed")
def test_the_typescript_sdk_lists_every_service_route() -> None:
    install_and_build()
    assert NODE is not None
    printed = subprocess.run(
        [NODE, "--input-type=module", "-e",
         "import { ROUTES } from '@loopsense/sdk'; console.log(JSON.stringify(ROUTES))"],
        cwd=PACKAGE, capture_output=True, text=True, timeout=60, check=True).stdout
    sdk = {(r["method"], r["template"]) for r in json.loads(printed)}
    service = service_routes()
    assert not service - sdk, f"routes the TypeScript SDK lacks: {sorted(service - sdk)}"
    assert not sdk - service, f"routes the service no longer has: {sorted(sdk - service)}"


# ---- every route is called by a method --------------------------------------------------------
def _answer(template: str) -> dict[str, Any]:
    """A minimal answer each route's method can read."""
    run = {"runId": "r:1", "agentId": "ari"}
    answers: dict[str, dict[str, Any]] = {
        "/v1/runs/{runId}/agents": {**run, "sequence": 0},
        "/v1/runs/{runId}/steps": {**run, "accepted": 1},
        "/v1/runs/{runId}/reset": {**run, "reset": []},
        "/v1/runs/{runId}/config": {**run, "config": {}},
        "/v1/runs/{runId}/memory/{key}": {**run, "key": "k", "created": True, "value": 1},
        "/v1/runs/{runId}/memory": {"entries": {}, "next": None},
        "/v1/runs/{runId}/lessons": {"lessonId": "l", "kind": "lesson", "text": "t",
                                     "createdAt": "x", "lessons": [], "next": None},
        "/v1/runs/{runId}/events": {"events": [], "next": None},
        "/v1/runs/{runId}/circuit-break": {**run, "broken": True, "snapshotId": "s",
                                           "summary": {"entries": 0, "reason": "r"}},
        "/v1/runs/{runId}/snapshots/{snapshotId}": {"entries": {}, "next": None},
        "/v1/runs/{runId}/snapshots/{snapshotId}/restore": {
            **run, "snapshotId": "s", "entries": 0, "replaced": {"snapshotId": "t", "entries": 0}},
        "/v1/runs/{runId}/context": {**run, "context_block": "", "items": [], "tokens": 0,
                                     "max_token_budget": 10},
        "/v1/failure-groups": {"items": [], "nextCursor": None},
        "/v1/runs": {"items": [], "nextCursor": None},
    }
    return answers.get(template, run)


def test_every_python_route_is_called_by_a_method() -> None:
    patterns = [(r, re.compile(re.sub(r"\\\{\w+\\\}", "[^/?]+", re.escape(r.template))
                                + r"(\?.*)?")) for r in ROUTES]
    called: set[tuple[str, str]] = set()

    def transport(request: HttpRequest) -> HttpResponse:
        path = request.url.removeprefix("http://loopsense.test")
        route = next(r for r, p in patterns if r.method == request.method and p.fullmatch(path))
        called.add((route.method, route.template))
        return HttpResponse(200, {}, json.dumps(_answer(route.template)).encode())

    client = Client("ls_test_key", "http://loopsense.test", transport=transport)
    runs = client.runs
    client.execute("agent.loop_detect", {"events": [{"action": "a"}, {"action": "a"}]})
    client.playbook("identical_call")
    runs.register("r:1", agent_id="ari")
    runs.steps("r:1", [{"kind": "message", "text": "hi"}], agent_id="ari")
    runs.signal("r:1", agent_id="ari")
    runs.reset("r:1")
    runs.config("r:1", repeat_warn=4)
    runs.put_memory("r:1", "k", 1)
    runs.get_memory("r:1", "k")
    runs.delete_memory("r:1", "k")
    runs.memory("r:1")
    runs.add_lesson("r:1", "t")
    runs.lessons("r:1")
    runs.events("r:1")
    runs.circuit_break("r:1", reason="r")
    runs.snapshot("r:1", "s")
    runs.restore("r:1", "s")
    runs.context("r:1", query="q")
    client.executions.events("e1", [{"type": "step"}])
    client.executions.end("e1")
    client.export_traces({"resourceSpans": []})
    client.export_logs({"resourceLogs": []})
    client.failure_groups.list()
    client.failure_groups.get("loops/identical_call_00000000")
    settings = client.settings
    settings.severity_routing()
    settings.set_severity_routing(semantic_loop="info")
    settings.telemetry_settings()
    settings.set_telemetry_settings(group_retention_days=30)
    settings.detector_thresholds()
    settings.set_detector_thresholds({"revisit_threshold": 4})
    settings.time_budget()
    settings.set_time_budget(None)
    runs.list(limit=5)
    runs.get("r:1")
    client.usage()
    client.new_file()
    assert called == {(r.method, r.template) for r in ROUTES}


def test_a_signature_is_one_path_segment() -> None:
    seen: list[str] = []

    def transport(request: HttpRequest) -> HttpResponse:
        seen.append(request.url)
        return HttpResponse(200, {}, b"{}")

    Client("k", "http://loopsense.test", transport=transport).failure_groups.get("loops/x_1")
    assert seen == ["http://loopsense.test/v1/failure-groups/loops%2Fx_1"]


# ---- the new routes against a real server -----------------------------------------------------
def test_telemetry_failure_groups_and_playbooks_through_the_sdk(server: Server,
                                                               operator: Operator) -> None:
    _, key = operator.new_tenant("team")
    client = Client(key, server.url)
    events = [{"type": "llm_call", "model": "m", "user_message": "same question"}] * 3
    first = client.executions.events("sdk-routes-1", events, idempotency_key="batch-0")
    again = client.executions.events("sdk-routes-1", events, idempotency_key="batch-0")
    assert (first["accepted"], first["duplicate"], again["duplicate"]) == (3, False, True)
    assert len(first["fired"]) == 1
    ended = client.executions.end("sdk-routes-1", duration_ms=10)
    assert ended["ended"] and not ended["alreadyEnded"]
    assert client.executions.end("sdk-routes-1")["alreadyEnded"]

    groups = list(client.failure_groups.all(page_size=1))
    assert [g["signature"] for g in groups] == first["fired"]
    assert groups[0]["executions"] == 1 and groups[0]["severity"] == "warning"
    detail = client.failure_groups.get(groups[0]["signature"])
    assert detail["group"] == groups[0]
    assert [e["executionId"] for e in detail["executions"]] == ["sdk-routes-1"]
    assert detail["playbook"] == client.playbook(groups[0]["playbook"])
    with pytest.raises(NotFoundError):
        client.failure_groups.get("loops/identical_call_00000000")
    with pytest.raises(NotFoundError):
        client.playbook("no_such_playbook")
    assert client.failure_groups.list(class_="semantic_loop")["items"] == []

    export = {"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "0" * 31 + "1", "spanId": "0" * 15 + "1", "name": "step",
        "startTimeUnixNano": "1", "endTimeUnixNano": "2"}]}]}]}
    assert client.export_traces(export, compress=True) == {}  # every span taken
    trace_groups = client.failure_groups.list()["items"]
    assert len(trace_groups) == 1  # one plain span: a step, no new group
    with pytest.raises(ValidationError):
        client.export_traces({"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x"}]}]}]})


def test_tenant_settings_through_the_sdk(server: Server, operator: Operator) -> None:
    _, key = operator.new_tenant("team")
    settings = Client(key, server.url).settings
    assert settings.severity_routing() == {"loops": "warning", "semantic_loop": "warning",
                                           "tool_calls": "warning"}
    assert settings.set_severity_routing(semantic_loop="info")["semantic_loop"] == "info"
    assert settings.severity_routing()["semantic_loop"] == "info"
    retention = settings.set_telemetry_settings(group_retention_days=30)
    assert retention == {**settings.telemetry_settings(), "group_retention_days": 30}
    thresholds = settings.set_detector_thresholds({"revisit_threshold": 4})
    assert thresholds["thresholds"]["revisit_threshold"]["configured"] == 4
    assert settings.detector_thresholds() == thresholds
    with pytest.raises(ValidationError) as refused:
        settings.set_detector_thresholds({"revisit_threshold": 5, "step_count_threshold": 1})
    assert refused.value.details[0]["path"] == "step_count_threshold"
    assert settings.detector_thresholds() == thresholds  # all or nothing
    budget = settings.set_time_budget(120_000)
    assert (budget["time_budget_ms"], budget["configured_time_budget_ms"]) == (120_000, 120_000)
    assert settings.time_budget() == budget
    assert settings.set_time_budget(None)["configured_time_budget_ms"] is None


def test_runs_and_usage_through_the_sdk(server: Server, operator: Operator) -> None:
    _, key = operator.new_tenant("team")
    client = Client(key, server.url)
    for _ in range(6):
        client.runs.steps("sdk-read", [{"kind": "tool_call", "action": "poll", "args": {},
                                        "result": {"state": "pending"}}], agent_id="ari")
    client.runs.steps("sdk-read-2", [{"kind": "message", "text": "hi"}], agent_id="bo")
    assert [r["runId"] for r in client.runs.all(page_size=1)] == ["sdk-read-2", "sdk-read"]
    page = client.runs.list(limit=1)
    assert len(page["items"]) == 1 and page["nextCursor"] is not None
    run = client.runs.get("sdk-read")
    [agent] = run["agents"]
    assert agent["recommendation"] == client.runs.signal("sdk-read", agent_id="ari").raw["signal"][
        "recommendation"]
    with pytest.raises(NotFoundError):
        client.runs.get("no-such-run")
    usage = client.usage()
    assert usage["credits"]["used"] == 7 and usage["days"][-1]["bySkill"] == {"runs.steps": 7}
    assert loopsense_sdk.ROUTES == ROUTES
