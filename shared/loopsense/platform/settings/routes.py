"""GET/PUT /v1/detector-thresholds and GET/PUT /v1/me/time-budget-config (spec/thresholds.md).

Authenticated like every route (the authorizer's context names the tenant; any valid key of the
tenant may read and change its settings); free and not rate limited. The rules are
loopsense.platform.settings.service; this module maps HTTP API (payload 2.0) events onto them
and every failure onto the one error envelope.

Routes are dispatched on the event's ``routeKey`` rather than with Powertools'
APIGatewayHttpResolver: the resolver keeps the current event in a class attribute shared by the
whole process, and the local server runs handlers in concurrent threads (docs/decisions.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from loopsense.errors import LoopsenseError
from loopsense.platform.http.answer import answer
from loopsense.platform.http.auth import identity_from_context
from loopsense.platform.http.request import json_body, json_response, request_from_event
from loopsense.platform.settings.service import MAX_BODY_BYTES, TenantSettings
from loopsense.skills.thresholds import THRESHOLDS

THRESHOLDS_PATH = "/v1/detector-thresholds"
TIME_BUDGET_PATH = "/v1/me/time-budget-config"

Action = Callable[[TenantSettings, str, Any], dict[str, Any]]
ROUTES: dict[str, Action] = {
    f"GET {THRESHOLDS_PATH}": lambda service, tenant, _: service.thresholds(tenant),
    f"PUT {THRESHOLDS_PATH}": lambda service, tenant, body: service.set_thresholds(tenant, body),
    f"GET {TIME_BUDGET_PATH}": lambda service, tenant, _: service.time_budget(tenant),
    f"PUT {TIME_BUDGET_PATH}": lambda service, tenant, body: service.set_time_budget(tenant,
                                                                                     body),
}


def handle(event: dict[str, Any], service: TenantSettings) -> dict[str, Any]:
    """An HTTP API (payload 2.0) event of one of the four routes -> its response."""
    request = request_from_event(event)
    route = str(event.get("routeKey") or f"{request.method} {request.path}")

    def settings(log: dict[str, Any]) -> dict[str, Any]:
        tenant = log["tenant"] = identity_from_context(request.authorizer).tenant_id
        action = ROUTES.get(route)
        if action is None:
            raise LoopsenseError("ROUTE_NOT_FOUND", "no such route")
        log["route"] = route
        body = json_body(request.body, MAX_BODY_BYTES) if route.startswith("PUT ") else None
        if isinstance(body, dict):  # logged: the known names only (others are caller content)
            log["names"] = sorted(name for name in body if name in THRESHOLDS)
        return json_response(200, action(service, tenant, body),
                             {"X-Request-Id": request.request_id})

    return answer("settings", request, settings)
