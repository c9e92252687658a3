"""GET /v1/usage as an HTTP API (payload 2.0) event onto loopsense.platform.usage.service, every
failure onto the one envelope (dispatched on ``routeKey`` like the other route tables)."""

from __future__ import annotations

from typing import Any

from loopsense.platform.http.answer import Route, dispatch
from loopsense.platform.http.contract import Contract
from loopsense.platform.usage.service import Usage

ROUTES: dict[str, Route] = {
    "GET /v1/usage": lambda service, who, request: service.summary(who),
}

CONTRACTS: dict[str, Contract] = {
    "GET /v1/usage": Contract("credits this period and charged calls of the last 30 days",
                              answer="loopsense.platform.usage.answers:UsageAnswer"),
}


def handle(event: dict[str, Any], service: Usage) -> dict[str, Any]:
    """An HTTP API (payload 2.0) event of GET /v1/usage -> its response."""
    return dispatch(event, service, ROUTES, "usage")
