"""The telemetry routes (spec/failure_groups.md) as HTTP API (payload 2.0) events: ingestion
(platform/telemetry/ingest.py) and failure groups, routing, retention
(platform/telemetry/failure_groups.py). Like the settings routes: dispatched on ``routeKey``,
every failure answered in the one envelope by ``answer``, logs with known names and sizes only.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from loopsense.errors import Detail, LoopsenseError, validation_error
from loopsense.platform.http.answer import Route, answer, dispatch
from loopsense.platform.http.auth import identity_from_context
from loopsense.platform.http.request import Request, json_body, request_from_event

# A batch of 500 events of ~2 KB each; the stored (compressed) batch has its own limit.
MAX_BATCH_BODY_BYTES = 1024 * 1024
MAX_SETTINGS_BODY_BYTES = 16 * 1024
# An OTLP export as sent (gzip inflates to at most platform.otlp.MAX_INFLATED_BYTES).
MAX_OTLP_BODY_BYTES = 4 * 1024 * 1024

def _body(request: Request, limit: int, invalid: str = "VALIDATION_ERROR") -> Any:
    try:
        return json_body(request.body, limit) if request.body else None
    except LoopsenseError as error:
        raise LoopsenseError(invalid, error.message, error.details) from None


INGEST: dict[str, Route] = {
    "POST /v1/executions/{executionId}/events": lambda service, who, request:
        service.add(who.tenant_id, who.plan, who.thresholds, request.params.get("executionId", ""),
                    _body(request, MAX_BATCH_BODY_BYTES, "EXECUTION_EVENTS_INVALID"),
                    request.header("Idempotency-Key")),
    "POST /v1/executions/{executionId}/end": lambda service, who, request:
        service.end(who.tenant_id, request.params.get("executionId", ""),
                    _body(request, MAX_SETTINGS_BODY_BYTES)),
}

GROUPS: dict[str, Route] = {
    "GET /v1/failure-groups": lambda service, who, request:
        service.list(who.tenant_id, request.query),
    "GET /v1/failure-groups/{signature}": lambda service, who, request:
        service.detail(who.tenant_id, request.params.get("signature", "")),
    "GET /v1/severity-routing": lambda service, who, request:
        service.routing(who.tenant_id),
    "PUT /v1/severity-routing": lambda service, who, request:
        service.set_routing(who.tenant_id, _body(request, MAX_SETTINGS_BODY_BYTES)),
    "GET /v1/telemetry-settings": lambda service, who, request:
        service.retention(who.tenant_id),
    "PUT /v1/telemetry-settings": lambda service, who, request:
        service.set_retention(who.tenant_id, _body(request, MAX_SETTINGS_BODY_BYTES)),
}


def handle(event: dict[str, Any], service: Any, routes: dict[str, Route],
           name: str) -> dict[str, Any]:
    """An event of one of ``routes`` -> its response, ``service`` doing the work."""
    return dispatch(event, service, routes, name, _sizes)


def _sizes(result: dict[str, Any]) -> dict[str, Any]:
    """What of an answer may be logged: ingestion's sizes and counts only."""
    if "fired" not in result:
        return {}
    return {"events": result.get("accepted"), "duplicate": result.get("duplicate"),
            "fired": len(result["fired"])}


def handle_otlp(event: dict[str, Any], service: Any) -> dict[str, Any]:
    """POST /v1/traces and POST /v1/logs: an OTLP/HTTP export -> ingestion; OTLP's own answer
    and error bodies."""
    from loopsense.platform.telemetry import otlp

    request = request_from_event(event)
    content_type = request.header("Content-Type")
    logs = event.get("routeKey") == "POST /v1/logs"

    def run(log: dict[str, Any]) -> dict[str, Any]:
        who = identity_from_context(request.authorizer)
        log["tenant"], log["route"] = who.tenant_id, event.get("routeKey", "POST /v1/traces")
        if len(request.body) > MAX_OTLP_BODY_BYTES:
            raise validation_error("body", f"must be at most {MAX_OTLP_BODY_BYTES} bytes",
                                   "EXECUTION_EVENTS_INVALID")
        feed = otlp.ingest_logs if logs else otlp.ingest
        rejected = feed(service, who.tenant_id, who.plan, who.thresholds, request.body,
                        content_type, request.header("Content-Encoding"))
        log["rejected_spans"] = rejected
        return _binary(200, *otlp.success(rejected, content_type, logs), request.request_id)

    response = answer("otlp", request, run)
    if response["statusCode"] < 400:
        return response
    # The one envelope, re-worded as OTLP's google.rpc.Status (same code, message, field).
    error = json.loads(response["body"])["error"]
    details = [Detail(d["path"], d["issue"]) for d in error["details"]]
    failed = LoopsenseError(error["code"], error["message"], details)
    out = _binary(response["statusCode"], *otlp.failure(failed, content_type),
                  request.request_id)
    if "Retry-After" in response["headers"]:
        out["headers"]["Retry-After"] = response["headers"]["Retry-After"]
    return out


def _binary(status: int, content_type: str, body: bytes, request_id: str) -> dict[str, Any]:
    return {"statusCode": status, "isBase64Encoded": True,
            "headers": {"Content-Type": content_type, "X-Request-Id": request_id},
            "body": base64.b64encode(body).decode("ascii")}
