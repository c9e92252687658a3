"""Answering one API route: the one place where failures become the error envelope.

Every route (execute, settings, playbooks) runs its handler through ``answer``: a LoopsenseError
is answered in the envelope with its status, anything else is INTERNAL_ERROR (only the
exception's type is logged), and each request leaves one metadata log line and one metric.
The handler fills ``log`` with what may be logged (known names only, never caller content).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from loopsense.errors import LoopsenseError
from loopsense.observability import logger, metrics
from loopsense.platform.http import Request, error_response

Handler = Callable[[dict[str, Any]], dict[str, Any]]


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
        metrics.add_metric(name=f"{route}.requests", unit=MetricUnit.Count, value=1)
        if code != "OK":
            metrics.add_metric(name=f"{route}.errors", unit=MetricUnit.Count, value=1)
        logger.info(route, extra={
            **log, "code": code, "body_bytes": len(request.body),
            "request_id": request.request_id,
            "duration_ms": round((time.perf_counter() - started) * 1000, 3)})
