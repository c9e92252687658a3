"""Answering one API request: the one dispatcher, and the one place where failures become the
error envelope.

Every HTTP function (execute, runs, settings, telemetry, failure groups, OTLP, playbooks) hands
its table of Routes to ``dispatch`` (an event) or ``respond`` (a request): the caller's identity
from the authorizer's context, the route by ``routeKey`` (ROUTE_NOT_FOUND otherwise), the route's
result rendered once (``render``: a 200 JSON answer unless the feature says otherwise). A
LoopsenseError is rendered by ``render_error`` (the envelope, or OTLP's google.rpc.Status),
anything else is INTERNAL_ERROR (only the exception's type is logged), and each request leaves
one metadata log line and one metric. A route puts in ``request.log`` what may be logged of it
(known names and sizes only, never caller content).

Routes are dispatched on the event's ``routeKey`` rather than with Powertools'
APIGatewayHttpResolver: the resolver keeps the current event in a class attribute shared by the
whole process, and the local server runs handlers in concurrent threads (docs/decisions.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from loopsense.errors import LoopsenseError
from loopsense.observability import add_metric, logger
from loopsense.platform.http.auth import Identity, identity_from_context
from loopsense.platform.http.request import (
    Request,
    error_response,
    json_response,
    request_from_event,
)

# Every route of every table: (the feature's service, the caller, the request) -> its result.
Route = Callable[[Any, Identity, Request], Any]
# A result -> its response (default: 200 JSON); a refusal -> its response (default: the envelope).
Render = Callable[[Any, Request], dict[str, Any]]
RenderError = Callable[[LoopsenseError, Request], dict[str, Any]]


def json_answer(result: Any, request: Request) -> dict[str, Any]:
    return json_response(200, result, {"X-Request-Id": request.request_id})


def envelope(error: LoopsenseError, request: Request) -> dict[str, Any]:
    return error_response(error, request.request_id)


def dispatch(event: dict[str, Any], service: Any, table: dict[str, Route], name: str,
             render: Render = json_answer, render_error: RenderError = envelope
             ) -> dict[str, Any]:
    """An HTTP API (payload 2.0) event of one of ``table``'s routes -> its response."""
    return respond(request_from_event(event), service, table, name, render, render_error)


def respond(request: Request, service: Any, table: dict[str, Route], name: str,
            render: Render = json_answer, render_error: RenderError = envelope
            ) -> dict[str, Any]:
    """A request of one of ``table``'s routes -> its response, ``service`` doing the work and
    ``name`` naming its log line and metrics."""
    started = time.perf_counter()
    log = request.log
    code = "OK"
    try:
        who = identity_from_context(request.authorizer)
        log["tenant"] = who.tenant_id
        call = table.get(request.route)
        if call is None:
            raise LoopsenseError("ROUTE_NOT_FOUND", "no such route")
        log["route"] = request.route
        return render(call(service, who, request), request)
    except LoopsenseError as error:
        code = error.code
        return render_error(error, request)
    except Exception as exc:  # noqa: BLE001 - every failure answers in the envelope
        code = "INTERNAL_ERROR"
        logger.error(f"{name} crashed", extra={"exception": type(exc).__name__,
                                               "request_id": request.request_id})
        return render_error(LoopsenseError("INTERNAL_ERROR", "unexpected failure"), request)
    finally:
        add_metric(f"{name}.requests", MetricUnit.Count, 1)
        if code != "OK":
            add_metric(f"{name}.errors", MetricUnit.Count, 1)
        logger.info(name, extra={
            **log, "code": code, "body_bytes": len(request.body),
            "request_id": request.request_id,
            "duration_ms": round((time.perf_counter() - started) * 1000, 3)})
