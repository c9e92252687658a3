"""The document's answers cannot lie: real answers of `loopsense serve`, one of every JSON route
(each skill's output with findings, the runs flow, the monitor off, the settings, telemetry and
failure groups, usage, playbooks, files), validated against the 2xx schema the committed
document gives that route. Every answer shape is closed (additionalProperties: false), so a
key a handler adds without its model fails here as surely as one it drops. The walk must cover
every JSON route of the document: a new route fails until it is walked too."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from loopsense.platform.access.catalog import SKILLS
from loopsense.platform.contract.routes import DOCUMENT
from tests.conftest import load_event
from tests.e2e.server import Operator, Response, Server

SPEC = json.loads(DOCUMENT.read_text(encoding="utf-8"))
REGISTRY = Registry().with_resource("urn:doc", DRAFT202012.create_resource(SPEC))
RUN = "/v1/runs/contract-run"
CALL = {"agentId": "ari", "kind": "tool_call", "action": "export_status", "args": {"id": 7},
        "result": {"state": "pending"}, "outcome": "neutral"}
TELEMETRY = [{"type": "llm_call", "model": "gpt-x", "user_message": "find a hotel"},
             {"type": "checkpoint", "name": "plan", "metadata": {"city": "Paris"}}] * 12


def json_routes() -> set[str]:
    return {f"{method.upper()} {path}" for path, ops in SPEC["paths"].items()
            for method, op in ops.items()
            if any("application/json" in answer.get("content", {})
                   for status, answer in op["responses"].items() if status.startswith("2"))}


def pointer(*parts: str) -> str:
    return "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


class Checker:
    def __init__(self, server: Server, key: str) -> None:
        self.server, self.key = server, key
        self.checked: dict[str, int] = {}

    def call(self, method: str, path: str, route: str, body: Any = b"",
             headers: dict[str, str] | None = None) -> Any:
        answer: Response = self.server.request(body, key=self.key, path=path,
                                               method=method, headers=headers)
        assert 200 <= answer.status < 300, (route, answer.status, answer.body[:300])
        template = route.split(" ", 1)[1].replace("+}", "}")
        ref = "urn:doc#/" + pointer("paths", template, method.lower(), "responses",
                                    str(answer.status), "content", "application/json",
                                    "schema")
        validator = Draft202012Validator({"$ref": ref}, registry=REGISTRY)
        found = answer.json()
        errors = sorted(validator.iter_errors(found), key=lambda e: list(e.absolute_path))
        assert not errors, (route, [f"{list(e.absolute_path)}: {e.message[:200]}"
                                    for e in errors[:5]])
        self.checked[route] = self.checked.get(route, 0) + 1
        return found


@pytest.fixture(scope="module")
def check(server: Server, operator: Operator) -> Checker:
    operator.set_plan("contract-answers", credits=10**6, rps=10_000)  # a rate never reached
    return Checker(server, operator.new_tenant("contract-answers")[1])


def test_every_skill_answers_its_output_schema(check: Checker) -> None:
    for skill in SKILLS:
        raw = load_event(skill.name)
        body = json.loads(raw["body"]) if "body" in raw else raw
        answer = check.call("POST", "/v1/execute", "POST /v1/execute",
                            {"skillKey": skill.key, "input": body["input"]})
        assert answer["skillKey"] == skill.key
    # the shapes with findings: loops' sub-signatures and the monitor's signal
    loops = check.call("POST", "/v1/execute", "POST /v1/execute", {
        "skillKey": "agent.loops", "input": {"events": TELEMETRY, "durationMs": 10**8}})
    assert {f["sub"] for f in loops["output"]["findings"]} >= {"identical_call", "time_budget"}
    monitor = check.call("POST", "/v1/execute", "POST /v1/execute", {
        "skillKey": "agent.run_monitor", "input": {"steps": [CALL] * 8}})
    assert monitor["output"]["findings"] and monitor["output"]["timeline"]


def test_the_runs_flow_answers_as_documented(check: Checker) -> None:
    check.call("POST", f"{RUN}/agents", "POST /v1/runs/{runId}/agents",
               {"agentId": "ari", "role": "support", "objectiveEmbedding": [0.1, 0.2]})
    steps = check.call("POST", f"{RUN}/steps", "POST /v1/runs/{runId}/steps",
                       {"steps": [CALL] * 8}, headers={"Idempotency-Key": "contract-1"})
    assert steps["findings"] and steps["recommendation"]["action"] != "continue"
    check.call("GET", f"{RUN}/signal?agentId=ari", "GET /v1/runs/{runId}/signal")
    check.call("PUT", f"{RUN}/config", "PUT /v1/runs/{runId}/config", {"repeat_warn": 3})
    check.call("PUT", f"{RUN}/memory/plan", "PUT /v1/runs/{runId}/memory/{key}",
               {"step": 2, "note": "x"})
    check.call("PUT", f"{RUN}/memory/other", "PUT /v1/runs/{runId}/memory/{key}", [1, 2])
    check.call("GET", f"{RUN}/memory/plan", "GET /v1/runs/{runId}/memory/{key}")
    check.call("GET", f"{RUN}/memory", "GET /v1/runs/{runId}/memory")
    check.call("DELETE", f"{RUN}/memory/other", "DELETE /v1/runs/{runId}/memory/{key}")
    check.call("POST", f"{RUN}/lessons", "POST /v1/runs/{runId}/lessons",
               {"text": "exports take a minute", "tags": ["export"], "kind": "fact"})
    broken = check.call("POST", f"{RUN}/circuit-break", "POST /v1/runs/{runId}/circuit-break",
                        {"reason": "repeated_tool_call"})
    snapshot = broken["snapshotId"]
    check.call("GET", f"{RUN}/snapshots/{snapshot}", "GET /v1/runs/{runId}/snapshots/{snapshotId}")
    restored = check.call("POST", f"{RUN}/snapshots/{snapshot}/restore",
                          "POST /v1/runs/{runId}/snapshots/{snapshotId}/restore", {})
    check.call("GET", f"{RUN}/snapshots/{restored['replaced']['snapshotId']}",
               "GET /v1/runs/{runId}/snapshots/{snapshotId}")
    lessons = check.call("GET", f"{RUN}/lessons", "GET /v1/runs/{runId}/lessons")
    assert {lesson["kind"] for lesson in lessons["lessons"]} == {
        "fact", "loop_detected", "replaced_by_restore"}
    events = check.call("GET", f"{RUN}/events", "GET /v1/runs/{runId}/events")
    assert [e["type"] for e in events["events"]] == ["CIRCUIT_BROKEN", "MEMORY_RESTORED"]
    briefing = check.call("POST", f"{RUN}/context", "POST /v1/runs/{runId}/context",
                          {"query": "export"})
    assert {item["type"] for item in briefing["items"]} == {"lesson", "snapshot"}
    check.call("POST", f"{RUN}/steps", "POST /v1/runs/{runId}/steps", CALL)
    check.call("POST", f"{RUN}/reset", "POST /v1/runs/{runId}/reset", {})
    check.call("GET", RUN, "GET /v1/runs/{runId}")
    listed = check.call("GET", "/v1/runs?limit=5", "GET /v1/runs")
    assert listed["items"]


def test_settings_and_the_monitor_off_answer_as_documented(check: Checker) -> None:
    check.call("GET", "/v1/detector-thresholds", "GET /v1/detector-thresholds")
    check.call("GET", "/v1/me/time-budget-config", "GET /v1/me/time-budget-config")
    check.call("PUT", "/v1/me/time-budget-config", "PUT /v1/me/time-budget-config",
               {"time_budget_ms": 60_000})
    check.call("PUT", "/v1/detector-thresholds", "PUT /v1/detector-thresholds",
               {"monitor_disabled": True})
    try:
        off = check.call("POST", "/v1/runs/off/steps", "POST /v1/runs/{runId}/steps", CALL)
        assert off["monitor_disabled"] is True
        check.call("GET", "/v1/runs/off/signal?agentId=ari", "GET /v1/runs/{runId}/signal")
        check.call("GET", RUN, "GET /v1/runs/{runId}")  # its agents without a signal
    finally:
        check.call("PUT", "/v1/detector-thresholds", "PUT /v1/detector-thresholds",
                   {"monitor_disabled": None})


def test_telemetry_failure_groups_and_the_rest_answer_as_documented(check: Checker) -> None:
    execution = "contract-execution"
    batch = check.call("POST", f"/v1/executions/{execution}/events",
                       "POST /v1/executions/{executionId}/events", {"events": TELEMETRY})
    assert batch["fired"]
    check.call("POST", f"/v1/executions/{execution}/end",
               "POST /v1/executions/{executionId}/end", {})
    groups = check.call("GET", "/v1/failure-groups", "GET /v1/failure-groups")
    classes = {group["class"]: group["signature"] for group in groups["items"]}
    for signature in classes.values():  # semantic_loop's has a canonicalState
        check.call("GET", "/v1/failure-groups/" + signature.replace("/", "%2F"),
                   "GET /v1/failure-groups/{signature}")
    check.call("GET", "/v1/severity-routing", "GET /v1/severity-routing")
    check.call("PUT", "/v1/severity-routing", "PUT /v1/severity-routing", {"loops": "info"})
    check.call("GET", "/v1/telemetry-settings", "GET /v1/telemetry-settings")
    check.call("PUT", "/v1/telemetry-settings", "PUT /v1/telemetry-settings",
               {"group_retention_days": 30})
    for path in ("/v1/traces", "/v1/logs"):
        check.call("POST", path, f"POST {path}", {}, headers={"Content-Type": "application/json"})
    check.call("GET", "/v1/usage", "GET /v1/usage")
    check.call("GET", "/v1/playbooks/step_count", "GET /v1/playbooks/{name}")
    check.call("POST", "/v1/files", "POST /v1/files")
    check.call("GET", "/openapi.json", "GET /openapi.json")


def test_the_walk_covered_every_json_route(check: Checker) -> None:
    """Last in the module: the tests above answered each JSON route at least once."""
    assert set(check.checked) == json_routes(), sorted(json_routes() - set(check.checked))
