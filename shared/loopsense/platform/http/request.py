"""HTTP API (payload 2.0) events in, responses out: the only place that knows their shape."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from loopsense import jsonio
from loopsense.errors import LoopsenseError, error_envelope, validation_error

# Lambda's synchronous payload limit: no request body is larger (skills apply their own, smaller
# input limits).
MAX_BODY_BYTES = 6 * 1024 * 1024
# A settings body (thresholds, routing, retention) names a few dozen values at most.
SETTINGS_BODY_BYTES = 16 * 1024


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: bytes
    request_id: str
    authorizer: dict[str, Any]
    params: dict[str, str] = field(default_factory=dict)  # the route's {path parameters}
    query: dict[str, str] = field(default_factory=dict)  # the query string's parameters
    route: str = ""  # the route's key, "POST /v1/runs/{runId}/steps" (default: method and path)
    # What may be logged of this request, filled as it is answered (known names and sizes
    # only, never caller content): the one log line platform/http/answer.py writes.
    log: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.route:
            object.__setattr__(self, "route", f"{self.method} {self.path}")

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


def request_from_event(event: dict[str, Any]) -> Request:
    context = event.get("requestContext") or {}
    http = context.get("http") or {}
    raw = event.get("body") or ""
    body = base64.b64decode(raw) if event.get("isBase64Encoded") else raw.encode()
    authorizer = (context.get("authorizer") or {}).get("lambda") or {}
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    return Request(
        method=http.get("method", "POST"),
        path=http.get("path") or event.get("rawPath", "/"),
        headers=headers,
        body=body,
        request_id=context.get("requestId", ""),
        authorizer=authorizer,
        params=dict(event.get("pathParameters") or {}),
        query=dict(event.get("queryStringParameters")
                   or parse_qsl(event.get("rawQueryString") or "")),
        route=str(event.get("routeKey") or ""),
    )


def limit_param(raw: str | None, default: int, maximum: int) -> int:
    """A listing's ``limit`` query parameter: ``default`` when absent, else 1..``maximum``."""
    # Here: loopsense.validation imports pydantic, which the authorizer never needs.
    from loopsense.validation import ascii_int

    return default if raw is None else ascii_int(raw, "limit", 1, maximum)


def json_body(body: bytes, limit: int) -> Any:
    """A request body as JSON; over ``limit`` bytes it is refused before parsing."""
    if len(body) > limit:
        raise body_too_large(limit)
    return jsonio.loads(body)


def body_too_large(limit: int) -> LoopsenseError:
    return validation_error("body", f"must be at most {limit} bytes")


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json", **(headers or {})},
        "body": jsonio.dumps(body),
    }


def error_response(error: LoopsenseError, request_id: str) -> dict[str, Any]:
    headers = {"X-Request-Id": request_id}
    retry_after = error.retry_after_seconds()
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    return json_response(error.status, error_envelope(error, request_id), headers)
