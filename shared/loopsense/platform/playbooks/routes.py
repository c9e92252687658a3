"""GET /v1/playbooks/{name}: one agent.loops playbook (loopsense.playbooks) as JSON.

Authenticated like every route (the authorizer's context; any valid key may read playbooks,
whatever its skill scopes); free and not rate limited, since it reads package data only. The
answer is ``{"name": ..., "title": ..., "markdown": ...}``: JSON, like every other answer and
error of the API, so clients need one decoder. An unknown name is PLAYBOOK_NOT_FOUND (404).
"""

from __future__ import annotations

from typing import Any

from loopsense.platform.http.answer import answer
from loopsense.platform.http.auth import identity_from_context
from loopsense.platform.http.request import json_response, request_from_event
from loopsense.playbooks import playbook


def handle(event: dict[str, Any]) -> dict[str, Any]:
    """An HTTP API (payload 2.0) event of GET /v1/playbooks/{name} -> its response."""
    request = request_from_event(event)

    def read(log: dict[str, Any]) -> dict[str, Any]:
        log["tenant"] = identity_from_context(request.authorizer).tenant_id
        name = (event.get("pathParameters") or {}).get("name")
        body = playbook(name if isinstance(name, str) else "")
        log["playbook"] = body["name"]  # only a known name: an unknown one is caller content
        return json_response(200, body, {"X-Request-Id": request.request_id})

    return answer("playbook", request, read)
