"""The telemetry routes (spec/failure_groups.md) as HTTP API (payload 2.0) events: ingestion
(loopsense.platform.ingest) and failure groups, routing, retention
(loopsense.platform.failure_groups). Like settings_api: dispatched on ``routeKey``, every failure
answered in the one envelope by ``answer``, logs with known names and sizes only.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from loopsense.errors import Detail, LoopsenseError, validation_error
from loopsense.platform.auth import Identity, identity_from_context
from loopsense.platform.http import Request, json_body, json_response, request_from_event
from loopsense.platform.routes import answer

# A batch of 500 events of ~2 KB each; the stored (compressed) batch has its own limit.
MAX_BATCH_BODY_BYTES = 1024 * 1024
MAX_SETTINGS_BODY_BYTES = 16 * 1024
# An OTLP export as sent (gzip inflates to at most platform.otlp.MAX_INFLATED_BYTES).
MAX_OTLP_BODY_BYTES = 4 * 1024 * 1024

Call = Callable[[Any, Identity, Request, dict[str, Any]], dict[str, Any]]


def _path(event: dict[str, Any], name: str) -> str:
    value = (event.get("pathParameters") or {}).get(name)
    return value if isinstance(value, str) else ""


def _query(event: dict[str, Any]) -> dict[str, str]:
    return {k: v for k, v in (event.get("queryStringParameters") or {}).items()
            if isinstance(v, str)}


def _body(request: Request, limit: int, invalid: str = "VALIDATION_ERROR") -> Any:
    try:
        return json_body(request.body, limit) if request.body else None
    except LoopsenseError as error:
        raise LoopsenseError(invalid, error.message, error.details) from None


INGEST: dict[str, Call] = {
    "POST /v1/executions/{executionId}/events": lambda service, who, request, event:
        service.add(who.tenant_id, who.plan, who.thresholds, _path(event, "executionId"),
                    _body(request, MAX_BATCH_BODY_BYTES, "EXECUTION_EVENTS_INVALID"),
                    request.header("Idempotency-Key")),
    "POST /v1/executions/{executionId}/end": lambda service, who, request, event:
        service.end(who.tenant_id, _path(event, "executionId"),
                    _body(request, MAX_SETTINGS_BODY_BYTES)),
}

GROUPS: dict[str, Call] = {
    "GET /v1/failure-groups": lambda service, who, request, event:
        service.list(who.tenant_id, _query(event)),
    "GET /v1/failure-groups/{signature}": lambda service, who, request, event:
        service.detail(who.tenant_id, _path(event, "signature")),
    "GET /v1/severity-routing": lambda service, who, request, event:
        service.routing(who.tenant_id),
    "PUT /v1/severity-routing": lambda service, who, request, event:
        service.set_routing(who.tenant_id, _body(request, MAX_SETTINGS_BODY_BYTES)),
    "GET /v1/telemetry-settings": lambda service, who, request, event:
        service.retention(who.tenant_id),
    "PUT /v1/telemetry-settings": lambda service, who, request, event:
        service.set_retention(who.tenant_id, _body(request, MAX_SETTINGS_BODY_BYTES)),
}


def handle(event: dict[str, Any], service: Any, routes: dict[str, Call],
           name: str) -> dict[str, Any]:
    """An event of one of ``routes`` -> its response, ``service`` doing the work."""
    request = request_from_event(event)
    route = str(event.get("routeKey") or f"{request.method} {request.path}")

    def run(log: dict[str, Any]) -> dict[str, Any]:
        who = identity_from_context(request.authorizer)
        log["tenant"] = who.tenant_id
        call = routes.get(route)
        if call is None:
            raise LoopsenseError("ROUTE_NOT_FOUND", "no such route")
        log["route"] = route
        result = call(service, who, request, event)
        if "fired" in result:  # ingestion: sizes and counts only
            log.update(events=result.get("accepted"), duplicate=result.get("duplicate"),
                       fired=len(result["fired"]))
        return json_response(200, result, {"X-Request-Id": request.request_id})

    return answer(name, request, run)


def handle_otlp(event: dict[str, Any], service: Any) -> dict[str, Any]:
    """POST /v1/traces: an OTLP/HTTP export -> ingestion; OTLP's own answer and error bodies."""
    from loopsense.platform import otlp

    request = request_from_event(event)
    content_type = request.header("Content-Type")

    def run(log: dict[str, Any]) -> dict[str, Any]:
        who = identity_from_context(request.authorizer)
        log["tenant"], log["route"] = who.tenant_id, "POST /v1/traces"
        if len(request.body) > MAX_OTLP_BODY_BYTES:
            raise validation_error("body", f"must be at most {MAX_OTLP_BODY_BYTES} bytes",
                                   "EXECUTION_EVENTS_INVALID")
        rejected = otlp.ingest(service, who.tenant_id, who.plan, who.thresholds, request.body,
                               content_type, request.header("Content-Encoding"))
        log["rejected_spans"] = rejected
        return _binary(200, *otlp.success(rejected, content_type), request.request_id)

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
