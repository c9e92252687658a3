"""The telemetry routes (spec/failure_groups.md) as HTTP API (payload 2.0) events: ingestion
(platform/telemetry/ingest.py) and failure groups, routing, retention
(platform/telemetry/failure_groups.py). Like the settings routes: dispatched on ``routeKey``,
every failure answered in the one envelope by the one dispatcher (platform/http/answer.py),
logs with known names and sizes only.
"""

from __future__ import annotations

import base64
from typing import Any

from loopsense.errors import LoopsenseError, validation_error
from loopsense.platform.http.answer import Route, dispatch
from loopsense.platform.http.auth import Identity
from loopsense.platform.http.contract import SETTINGS_ERRORS, Contract
from loopsense.platform.http.request import SETTINGS_BODY_BYTES, Request, json_body

# A batch of 500 events of ~2 KB each; the stored (compressed) batch has its own limit.
MAX_BATCH_BODY_BYTES = 1024 * 1024
# An OTLP export as sent (gzip inflates to at most platform.otlp.MAX_INFLATED_BYTES).
MAX_OTLP_BODY_BYTES = 4 * 1024 * 1024

def _body(request: Request, limit: int, invalid: str = "VALIDATION_ERROR") -> Any:
    try:
        return json_body(request.body, limit) if request.body else None
    except LoopsenseError as error:
        raise LoopsenseError(invalid, error.message, error.details) from None


def _add(service: Any, who: Identity, request: Request) -> dict[str, Any]:
    result: dict[str, Any] = service.add(
        who.tenant_id, who.plan, who.thresholds, request.params.get("executionId", ""),
        _body(request, MAX_BATCH_BODY_BYTES, "EXECUTION_EVENTS_INVALID"),
        request.header("Idempotency-Key"))
    # What of the answer may be logged: ingestion's sizes and counts only.
    request.log.update({"events": result.get("accepted"), "duplicate": result.get("duplicate"),
                        "fired": len(result["fired"])})
    return result


def _end(service: Any, who: Identity, request: Request) -> dict[str, Any]:
    result: dict[str, Any] = service.end(who.tenant_id, request.params.get("executionId", ""),
                                         _body(request, SETTINGS_BODY_BYTES))
    request.log.update({"events": None, "duplicate": None, "fired": len(result["fired"])})
    return result


INGEST: dict[str, Route] = {
    "POST /v1/executions/{executionId}/events": _add,
    "POST /v1/executions/{executionId}/end": _end,
}

GROUPS: dict[str, Route] = {
    "GET /v1/failure-groups": lambda service, who, request:
        service.list(who.tenant_id, request.query),
    "GET /v1/failure-groups/{signature}": lambda service, who, request:
        service.detail(who.tenant_id, request.params.get("signature", "")),
    "GET /v1/severity-routing": lambda service, who, request:
        service.routing(who.tenant_id),
    "PUT /v1/severity-routing": lambda service, who, request:
        service.set_routing(who.changing_settings().tenant_id,
                            _body(request, SETTINGS_BODY_BYTES)),
    "GET /v1/telemetry-settings": lambda service, who, request:
        service.retention(who.tenant_id),
    "PUT /v1/telemetry-settings": lambda service, who, request:
        service.set_retention(who.changing_settings().tenant_id,
                              _body(request, SETTINGS_BODY_BYTES)),
}


_I, _T = "loopsense.platform.telemetry.ingest", "loopsense.platform.telemetry.answers"
_INGEST_ERRORS = ("VALIDATION_ERROR", "EXECUTION_EVENTS_INVALID", "EXECUTION_ENDED")
CONTRACTS: dict[str, Contract] = {
    "POST /v1/executions/{executionId}/events": Contract(
        "a batch of an execution's events -> the failure classes it fired",
        (*_INGEST_ERRORS, "EXECUTION_EVENT_LIMIT_EXCEEDED", "EXECUTION_BATCH_OUT_OF_ORDER",
         "IDEMPOTENCY_KEY_REUSED"), body=(f"{_I}:Batch",), idempotent=True,
        answer=f"{_T}:BatchAnswer"),
    "POST /v1/executions/{executionId}/end": Contract(
        "end an execution -> the failure classes it fired",
        (*_INGEST_ERRORS, "EXECUTION_NOT_FOUND"), body=(f"{_I}:EndBody",),
        answer=f"{_T}:EndAnswer"),
    "GET /v1/failure-groups": Contract("the tenant's failure groups, a page at a time",
                                       ("VALIDATION_ERROR",), query=(
        ("limit", "at most this many groups (1..100, default 50)"),
        ("class", "only this failure class"), ("severity", "only this severity"),
        ("cursor", "the `next` cursor of the previous page")),
        answer=f"{_T}:FailureGroupsPage"),
    "GET /v1/failure-groups/{signature}": Contract(
        "one failure group: its executions, days and playbook",
        ("VALIDATION_ERROR", "FAILURE_GROUP_NOT_FOUND"), answer=f"{_T}:FailureGroupDetail"),
    "GET /v1/severity-routing": Contract("the severity of each failure class",
                                         answer=f"{_T}:Routing"),
    "PUT /v1/severity-routing": Contract("set the severity of failure classes",
                                         SETTINGS_ERRORS, body_schema="SeverityRouting",
                                         answer=f"{_T}:Routing"),
    "GET /v1/telemetry-settings": Contract("how long telemetry and failure groups are kept",
                                           answer=f"{_T}:TelemetryRetention"),
    "PUT /v1/telemetry-settings": Contract("set how long telemetry and failure groups are kept",
                                           SETTINGS_ERRORS, body_schema="TelemetrySettings",
                                           answer=f"{_T}:TelemetryRetention"),
    "POST /v1/traces": Contract("an OTLP/HTTP trace export (protobuf or JSON)",
                                ("EXECUTION_EVENTS_INVALID", "EXECUTION_ENDED"),
                                body_schema="Otlp",
                                media="application/x-protobuf"),
    "POST /v1/logs": Contract("an OTLP/HTTP log export (protobuf or JSON)",
                              ("EXECUTION_EVENTS_INVALID", "EXECUTION_ENDED"),
                              body_schema="Otlp",
                              media="application/x-protobuf"),
}


def handle(event: dict[str, Any], service: Any, routes: dict[str, Route],
           name: str) -> dict[str, Any]:
    """An event of one of ``routes`` -> its response, ``service`` doing the work."""
    return dispatch(event, service, routes, name)


def _export(service: Any, who: Identity, request: Request) -> int:
    """POST /v1/traces or POST /v1/logs: the export ingested; the records it rejected."""
    from loopsense.platform.telemetry import otlp

    if len(request.body) > MAX_OTLP_BODY_BYTES:
        raise validation_error("body", f"must be at most {MAX_OTLP_BODY_BYTES} bytes",
                               "EXECUTION_EVENTS_INVALID")
    feed = otlp.ingest_logs if request.route == LOGS else otlp.ingest
    rejected = feed(service, who.tenant_id, who.plan, who.thresholds, request.body,
                    request.header("Content-Type"), request.header("Content-Encoding"))
    request.log["rejected_spans"] = rejected
    return rejected


LOGS = "POST /v1/logs"
OTLP: dict[str, Route] = {"POST /v1/traces": _export, LOGS: _export}


def _otlp_success(rejected: int, request: Request) -> dict[str, Any]:
    from loopsense.platform.telemetry import otlp

    content_type = request.header("Content-Type")
    return _binary(200, *otlp.success(rejected, content_type, request.route == LOGS),
                   request.request_id)


def _otlp_failure(error: LoopsenseError, request: Request) -> dict[str, Any]:
    """The refusal as OTLP's google.rpc.Status (the envelope's code, message and fields), with
    the envelope's status and Retry-After."""
    from loopsense.platform.telemetry import otlp

    out = _binary(error.status, *otlp.failure(error, request.header("Content-Type")),
                  request.request_id)
    retry_after = error.retry_after_seconds()
    if retry_after is not None:
        out["headers"]["Retry-After"] = str(retry_after)
    return out


def handle_otlp(event: dict[str, Any], service: Any) -> dict[str, Any]:
    """POST /v1/traces and POST /v1/logs: an OTLP/HTTP export -> ingestion; OTLP's own answer
    and error bodies."""
    return dispatch(event, service, OTLP, "otlp", _otlp_success, _otlp_failure)


def _binary(status: int, content_type: str, body: bytes, request_id: str) -> dict[str, Any]:
    return {"statusCode": status, "isBase64Encoded": True,
            "headers": {"Content-Type": content_type, "X-Request-Id": request_id},
            "body": base64.b64encode(body).decode("ascii")}
