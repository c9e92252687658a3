"""GET/PUT /v1/detector-thresholds and GET/PUT /v1/me/time-budget-config (spec/thresholds.md).

Authenticated like every route (the authorizer's context names the tenant; any valid key of the
tenant may read its settings; changing them needs the settings scope, see
``Identity.changing_settings``); free and not rate limited. The rules are
loopsense.platform.settings.service; this module maps HTTP API (payload 2.0) events onto them
and every failure onto the one error envelope.
"""

from __future__ import annotations

from typing import Any

from loopsense.platform.http.answer import Route, dispatch
from loopsense.platform.http.contract import SETTINGS_ERRORS, Contract
from loopsense.platform.http.request import SETTINGS_BODY_BYTES, Request, json_body
from loopsense.platform.settings.service import TenantSettings
from loopsense.skills.thresholds import THRESHOLDS

THRESHOLDS_PATH = "/v1/detector-thresholds"
TIME_BUDGET_PATH = "/v1/me/time-budget-config"


def _body(request: Request) -> Any:
    body = json_body(request.body, SETTINGS_BODY_BYTES)
    if isinstance(body, dict):  # logged: the known names only (others are caller content)
        request.log["names"] = sorted(name for name in body if name in THRESHOLDS)
    return body


ROUTES: dict[str, Route] = {
    f"GET {THRESHOLDS_PATH}": lambda service, who, _: service.thresholds(who.tenant_id),
    f"PUT {THRESHOLDS_PATH}": lambda service, who, request: service.set_thresholds(
        who.changing_settings().tenant_id, _body(request)),
    f"GET {TIME_BUDGET_PATH}": lambda service, who, _: service.time_budget(who.tenant_id),
    f"PUT {TIME_BUDGET_PATH}": lambda service, who, request: service.set_time_budget(
        who.changing_settings().tenant_id, _body(request)),
}

_S = "loopsense.platform.settings.answers"
CONTRACTS: dict[str, Contract] = {
    f"GET {THRESHOLDS_PATH}": Contract("the tenant's detector thresholds, applied and stored",
                                       answer=f"{_S}:ThresholdsAnswer"),
    f"PUT {THRESHOLDS_PATH}": Contract("set thresholds (null: back to the default)",
                                       (*SETTINGS_ERRORS, "TIME_BUDGET_ABOVE_PLAN_CAP"),
                                       body_schema="ThresholdsPatch",
                                       answer=f"{_S}:ThresholdsAnswer"),
    f"GET {TIME_BUDGET_PATH}": Contract("the tenant's time budget and its plan's cap",
                                        answer=f"{_S}:TimeBudgetAnswer"),
    f"PUT {TIME_BUDGET_PATH}": Contract("set the time budget",
                                        (*SETTINGS_ERRORS, "TIME_BUDGET_ABOVE_PLAN_CAP"),
                                        body_schema="TimeBudgetPatch",
                                        answer=f"{_S}:TimeBudgetAnswer"),
}


def handle(event: dict[str, Any], service: TenantSettings) -> dict[str, Any]:
    """An HTTP API (payload 2.0) event of one of the four routes -> its response."""
    return dispatch(event, service, ROUTES, "settings")
