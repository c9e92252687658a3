"""GET /v1/playbooks/{name}: one agent.loops playbook (loopsense.playbooks) as JSON.

Authenticated like every route (the authorizer's context; any valid key may read playbooks,
whatever its skill scopes); free and not rate limited, since it reads package data only. The
answer is ``{"name": ..., "title": ..., "markdown": ...}``: JSON, like every other answer and
error of the API, so clients need one decoder. An unknown name is PLAYBOOK_NOT_FOUND (404).
"""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from loopsense.errors import LoopsenseError
from loopsense.observability import logger, metrics
from loopsense.platform.auth import identity_from_context
from loopsense.platform.http import error_response, json_response, request_from_event
from loopsense.playbooks import playbook


def handle(event: dict[str, Any]) -> dict[str, Any]:
    """An HTTP API (payload 2.0) event of GET /v1/playbooks/{name} -> its response."""
    started = time.perf_counter()
    request = request_from_event(event)
    code, tenant, found = "OK", None, None
    try:
        tenant = identity_from_context(request.authorizer).tenant_id
        name = (event.get("pathParameters") or {}).get("name")
        body = playbook(name if isinstance(name, str) else "")
        found = body["name"]
        return json_response(200, body, {"X-Request-Id": request.request_id})
    except LoopsenseError as error:
        code = error.code
        return error_response(error, request.request_id)
    except Exception as exc:  # noqa: BLE001 - every failure answers in the envelope
        code = "INTERNAL_ERROR"
        logger.error("playbook crashed", extra={"exception": type(exc).__name__})
        return error_response(LoopsenseError("INTERNAL_ERROR", "unexpected failure"),
                              request.request_id)
    finally:
        metrics.add_metric(name="PlaybookRequests", unit=MetricUnit.Count, value=1)
        # Only a known name is logged: an unknown one is caller content.
        logger.info("playbook", extra={
            "tenant": tenant, "playbook": found, "code": code, "request_id": request.request_id,
            "duration_ms": round((time.perf_counter() - started) * 1000, 3)})
