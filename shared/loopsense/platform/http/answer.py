"""Answering one API route: the one place where failures become the error envelope.

Every route runs its handler through ``answer``: a LoopsenseError is answered in the envelope
with its status, anything else is INTERNAL_ERROR (only the exception's type is logged), and each
request leaves one metadata log line and one metric. The runs and telemetry routes are tables
of Routes dispatched on ``routeKey`` by ``dispatch``.
The handler fills ``log`` with what may be logged (known names only, never caller content).
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

Handler = Callable[[dict[str, Any]], dict[str, Any]]
# A route of a table dispatched by ``dispatch``: (service, caller, request) -> the JSON answer.
Route = Callable[[Any, Identity, Request], dict[str, Any]]


def answer(route: str, request: Request, handler: Handler) -> dict[str, Any]:
    started = time.perf_counter()
    log: dict[str, Any] = {}
    code = "OK"
    try:
        return handler(log)
    except LoopsenseError as error:
        code = error.code
        return error_response(error, request.request_id)
    except Exception as exc:  # noqa: BLE001 - every failure answers in the envelope
        code = "INTERNAL_ERROR"
        logger.error(f"{route} crashed", extra={"exception": type(exc).__name__,
                                                "request_id": request.request_id})
        return error_response(LoopsenseError("INTERNAL_ERROR", "unexpected failure"),
                              request.request_id)
    finally:
        add_metric(f"{route}.requests", MetricUnit.Count, 1)
        if code != "OK":
            add_metric(f"{route}.errors", MetricUnit.Count, 1)
        logger.info(route, extra={
            **log, "code": code, "body_bytes": len(request.body),
            "request_id": request.request_id,
            "duration_ms": round((time.perf_counter() - started) * 1000, 3)})


def dispatch(event: dict[str, Any], service: Any, table: dict[str, Route], name: str,
             sizes: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> dict[str, Any]:
    """An HTTP API (payload 2.0) event of one of ``table``'s routes (by ``routeKey``) -> its
    200 answer, ``service`` doing the work; ``sizes`` picks what of a result may be logged."""
    request = request_from_event(event)
    route = str(event.get("routeKey") or f"{request.method} {request.path}")

    def run(log: dict[str, Any]) -> dict[str, Any]:
        who = identity_from_context(request.authorizer)
        log["tenant"] = who.tenant_id
        call = table.get(route)
        if call is None:
            raise LoopsenseError("ROUTE_NOT_FOUND", "no such route")
        log["route"] = route
        result = call(service, who, request)
        if sizes is not None:
            log.update(sizes(result))
        return json_response(200, result, {"X-Request-Id": request.request_id})

    return answer(name, request, run)
