"""functions/runs/app.py invoked the way Lambda does (moto tables from template.yaml) on the
recover routes: working memory, lessons, the circuit break, its snapshot and restore, the event
log and the briefing, each through its routeKey and path parameters."""

from __future__ import annotations

import json
from typing import Any

from tests.integration.runs.test_runs_lambda import app, route  # noqa: F401 - app is a fixture


def call(handler: Any, event: dict[str, Any], context: Any, route_key: str, body: Any = None,
         raw: bytes | None = None, **params: str) -> tuple[int, dict[str, Any]]:
    path = route_key.split(" ", 1)[1]
    for name, value in {"runId": "run-2214", **params}.items():
        path = path.replace("{" + name + "}", value)
    request = route(event, route_key, path, body)
    if raw is not None:
        request["body"] = raw.decode()
    request["pathParameters"] = {"runId": "run-2214", **params}
    answer = handler.lambda_handler(request, context)
    return answer["statusCode"], json.loads(answer["body"])


def test_the_recover_routes_through_the_handler(app, event_file, lambda_context):  # noqa: F811
    assert app.lambda_handler(event_file("runs"), lambda_context)["statusCode"] == 200  # 6 steps
    event = event_file("runs")
    del event["headers"]["idempotency-key"]
    run = "/v1/runs/{runId}"
    status, put = call(app, event, lambda_context, f"PUT {run}/memory/{{key}}",
                       raw=b'{"id": 2214}', key="ticket")
    assert (status, put["created"]) == (200, True)
    status, got = call(app, event, lambda_context, f"GET {run}/memory/{{key}}", key="ticket")
    assert (status, got["value"]) == (200, {"id": 2214})
    status, _ = call(app, event, lambda_context, f"POST {run}/lessons", {"text": "export slow"})
    assert status == 200
    status, broken = call(app, event, lambda_context, f"POST {run}/circuit-break",
                          {"reason": "repeated_tool_call"})
    assert (status, broken["summary"]["entries"], broken["agentsReset"]) == (200, 1, ["ari"])
    sid = broken["snapshotId"]
    status, shot = call(app, event, lambda_context, f"GET {run}/snapshots/{{snapshotId}}",
                        snapshotId=sid)
    assert (status, shot["entries"]) == (200, {"ticket": {"id": 2214}})
    status, listed = call(app, event, lambda_context, f"GET {run}/memory")
    assert (status, listed["entries"]) == (200, {})
    status, restored = call(app, event, lambda_context,
                            f"POST {run}/snapshots/{{snapshotId}}/restore", snapshotId=sid)
    assert (status, restored["entries"]) == (200, 1)
    status, events = call(app, event, lambda_context, f"GET {run}/events")
    assert [e["type"] for e in events["events"]] == ["CIRCUIT_BROKEN", "MEMORY_RESTORED"]
    status, lessons = call(app, event, lambda_context, f"GET {run}/lessons")
    assert [x["kind"] for x in lessons["lessons"]] == ["lesson", "loop_detected",
                                                      "replaced_by_restore"]
    status, brief = call(app, event, lambda_context, f"POST {run}/context",
                         {"query": "ticket 2214"})
    assert status == 200 and brief["items"][0]["id"] == sid
    status, deleted = call(app, event, lambda_context, f"DELETE {run}/memory/{{key}}",
                           key="ticket")
    assert (status, deleted["deleted"]) == (200, True)
    status, missing = call(app, event, lambda_context, f"GET {run}/memory/{{key}}",
                           key="ticket")
    assert (status, missing["error"]["code"]) == (404, "RUN_MEMORY_NOT_FOUND")
