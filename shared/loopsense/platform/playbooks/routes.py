"""GET /v1/playbooks/{name}: one agent.loops playbook (loopsense.playbooks) as JSON.

Authenticated like every route (the authorizer's context; any valid key may read playbooks,
whatever its skill scopes); free and not rate limited, since it reads package data only. The
answer is ``{"name": ..., "title": ..., "markdown": ...}``: JSON, like every other answer and
error of the API, so clients need one decoder. An unknown name is PLAYBOOK_NOT_FOUND (404).
"""

from __future__ import annotations

from typing import Any

from loopsense.platform.http.answer import Route, dispatch
from loopsense.platform.http.contract import Contract
from loopsense.platform.http.request import Request
from loopsense.playbooks import playbook


def _read(request: Request) -> dict[str, Any]:
    body = playbook(request.params.get("name", ""))
    request.log["playbook"] = body["name"]  # only a known name: an unknown one is caller content
    return body


ROUTES: dict[str, Route] = {"GET /v1/playbooks/{name}": lambda _, who, request: _read(request)}

CONTRACTS: dict[str, Contract] = {
    "GET /v1/playbooks/{name}": Contract("one playbook (the name a finding gives)",
                                         ("PLAYBOOK_NOT_FOUND",),
                                         answer="loopsense.playbooks.answers:Playbook"),
}


def handle(event: dict[str, Any]) -> dict[str, Any]:
    """An HTTP API (payload 2.0) event of GET /v1/playbooks/{name} -> its response."""
    return dispatch(event, None, ROUTES, "playbook")
