"""GET /openapi.json: the API's OpenAPI 3.1 document, as committed beside this module.

The document is generated from the pydantic models, the catalog and every feature's CONTRACTS
by `scripts/openapi` (loopsense_local.openapi; tests/unit/test_openapi.py fails when the
committed file drifts from the code). The function reads it once per cold start and answers
the same bytes to every request: nothing is built per request. Public, like the dashboard's
files: it holds no tenant data.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from loopsense.platform.http.contract import Contract
from loopsense.platform.http.request import request_from_event

DOCUMENT = Path(__file__).with_name("openapi.json")

CONTRACTS: dict[str, Contract] = {
    "GET /openapi.json": Contract("this document (OpenAPI 3.1)", answer="OpenApiDocument"),
}


def load() -> tuple[str, str]:
    """The document's text and its ETag: read once, at cold start."""
    text = DOCUMENT.read_text(encoding="utf-8")
    return text, '"' + hashlib.sha256(text.encode()).hexdigest()[:32] + '"'


def handle(event: dict[str, Any], document: tuple[str, str]) -> dict[str, Any]:
    """An HTTP API (payload 2.0) event of GET /openapi.json -> the document (304 if unchanged)."""
    request = request_from_event(event)
    text, etag = document
    headers = {"Content-Type": "application/json", "ETag": etag,
               "Cache-Control": "public, max-age=300", "X-Request-Id": request.request_id}
    if etag in (request.header("If-None-Match") or "").split(", "):
        return {"statusCode": 304, "headers": headers, "body": ""}
    return {"statusCode": 200, "headers": headers, "body": text}
