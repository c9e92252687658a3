"""Each tenant's detector thresholds and time budget (spec/thresholds.md): the rules, in one place.

Used by the settings API (GET/PUT /v1/detector-thresholds and /v1/me/time-budget-config,
platform/settings/routes.py) and by the operator's `loopsense thresholds --tenant T`; the gate
(platform/access/gate.py) applies the stored values to every call.

Storage: a ``thresholds`` map on the tenant's item; a name that is absent has its default. A
change is one conditional UpdateItem (Accounts.update_thresholds): all of a request's values or
none, and never mixed with another request's. It holds only while the tenant is still on the plan
whose cap the values were checked against; otherwise the tenant is read again and the request
checked again.

time_budget_ms: its bounds are 1,000..the plan's ``max_time_budget_ms`` (never more than the
spec's 24 h). A stored value above the cap of the tenant's current plan (the plan was lowered
after it was set) is kept, and clamped to the cap wherever it is read: the applied value is
``min(stored, cap)``, and a later upgrade brings the stored value back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loopsense.errors import Detail, LoopsenseError, validation_error
from loopsense.platform.access.catalog import used_by
from loopsense.platform.access.gate import valid_stored
from loopsense.platform.access.plans import plan_cap, resolve_plan
from loopsense.platform.access.retry import until_written
from loopsense.skills.thresholds import THRESHOLDS, check
from loopsense.store.accounts import Accounts, Plan
from loopsense.store.dynamo import ConditionFailed, unavailable

TIME_BUDGET = "time_budget_ms"
CAP_CODE = "TIME_BUDGET_ABOVE_PLAN_CAP"

NAMES = ", ".join(THRESHOLDS)
_TYPES = {int: "integer", float: "number", bool: "boolean"}


def describe(stored: Any, plan: Plan) -> dict[str, Any]:
    """GET /v1/detector-thresholds: every threshold with the value applied, its default, its
    bounds (time_budget_ms: up to the plan's cap) and the tenant's own setting (or null)."""
    values, _ = valid_stored(stored)
    cap = plan_cap(plan)
    out: dict[str, Any] = {}
    for name, spec in THRESHOLDS.items():
        configured = values.get(name)
        value = spec.default if configured is None else configured
        high = spec.high
        if name == TIME_BUDGET:
            value, high = min(value, cap), cap
        out[name] = {"value": value, "default": spec.default, "min": spec.low, "max": high,
                     "type": _TYPES[spec.kind],
                     "configured": configured, "used_by": used_by(name)}
    return {"plan": plan.name, "thresholds": out}


def time_budget_config(stored: Any, plan: Plan) -> dict[str, Any]:
    """GET /v1/me/time-budget-config: the applied budget, the plan's cap and how it came about."""
    configured = valid_stored(stored)[0].get(TIME_BUDGET)
    default = THRESHOLDS[TIME_BUDGET].default
    wanted = default if configured is None else configured
    cap = plan_cap(plan)
    return {"time_budget_ms": min(wanted, cap), "max_time_budget_ms": cap, "plan": plan.name,
            "configured_time_budget_ms": configured, "default_time_budget_ms": default,
            "clamped": wanted > cap}


# --------------------------------------------------------------------------------------------
# Changes


@dataclass(frozen=True, slots=True)
class Patch:
    values: dict[str, int | float]  # set these
    reset: tuple[str, ...]  # back to the default (sent as null)

    @property
    def empty(self) -> bool:
        return not self.values and not self.reset


def _refuse(details: list[Detail], code: str = "VALIDATION_ERROR") -> LoopsenseError:
    first = details[0]
    more = f" (and {len(details) - 1} more)" if len(details) > 1 else ""
    return LoopsenseError(code, f"{first.path}: {first.issue}{more}", details)


def _time_budget(value: Any, plan: Plan) -> int | float:
    cap, low = plan_cap(plan), THRESHOLDS[TIME_BUDGET].low
    bounds = f"from {low} to {cap} (the {plan.name} plan's max_time_budget_ms)"
    if isinstance(value, bool) or not isinstance(value, int):
        raise validation_error(TIME_BUDGET, f"must be an integer {bounds}")
    if value < low:
        raise validation_error(TIME_BUDGET, f"must be {bounds}")
    if value > cap:
        raise validation_error(
            TIME_BUDGET, f"must be at most {cap}, the {plan.name} plan's max_time_budget_ms",
            CAP_CODE)
    return check(TIME_BUDGET, value, TIME_BUDGET)


def parse_patch(body: Any, plan: Plan) -> Patch:
    """A PUT body: any subset of the thresholds, each value of its type within its bounds, or
    null to go back to the default. Every problem is reported (without echoing unknown names,
    which are caller content); if any, nothing is changed. A time budget above the plan's cap
    alone is TIME_BUDGET_ABOVE_PLAN_CAP; with any other problem, VALIDATION_ERROR naming all."""
    if not isinstance(body, dict):
        raise validation_error("body", "must be a JSON object of threshold names and values")
    invalid: list[Detail] = []
    above_cap: list[Detail] = []
    values: dict[str, int | float] = {}
    reset: list[str] = []
    for name in THRESHOLDS:
        if name not in body:
            continue
        value = body[name]
        if value is None:
            reset.append(name)
            continue
        try:
            values[name] = (_time_budget(value, plan) if name == TIME_BUDGET
                            else check(name, value, name))
        except LoopsenseError as error:
            (above_cap if error.code == CAP_CODE else invalid).extend(error.details)
    if any(name not in THRESHOLDS for name in body):
        invalid.append(Detail("body", f"names something that is not a threshold ({NAMES})"))
    if invalid:
        raise _refuse(invalid + above_cap)
    if above_cap:
        raise _refuse(above_cap, CAP_CODE)
    return Patch(values, tuple(reset))


def parse_time_budget(body: Any, plan: Plan) -> Patch:
    """PUT /v1/me/time-budget-config: exactly ``{"time_budget_ms": N}`` (null: the default)."""
    if not isinstance(body, dict):
        raise validation_error("body", 'must be a JSON object {"time_budget_ms": N}')
    if any(name != TIME_BUDGET for name in body):
        raise validation_error("body", "contains a field that is not allowed (only "
                                       "time_budget_ms)")
    if TIME_BUDGET not in body:
        raise validation_error(TIME_BUDGET, "is required")
    return parse_patch(body, plan)


def existing_tenant(accounts: Accounts, tenant_id: str) -> dict[str, Any]:
    """The tenant's item; a request that names no tenant is the caller's error."""
    item = accounts.tenant(tenant_id)
    if item is None:
        raise no_tenant()
    return item


def no_tenant() -> LoopsenseError:
    return validation_error("tenant", "names no tenant")


class TenantSettings:
    """Reads and changes one tenant's settings in the store; the same for the API and the CLI."""

    def __init__(self, accounts: Accounts) -> None:
        self.accounts = accounts

    def _load(self, tenant_id: str) -> tuple[dict[str, Any], Plan]:
        item = existing_tenant(self.accounts, tenant_id)
        return item, resolve_plan(self.accounts, item["plan"])

    def thresholds(self, tenant_id: str) -> dict[str, Any]:
        item, plan = self._load(tenant_id)
        return describe(item.get("thresholds"), plan)

    def time_budget(self, tenant_id: str) -> dict[str, Any]:
        item, plan = self._load(tenant_id)
        return time_budget_config(item.get("thresholds"), plan)

    def set_thresholds(self, tenant_id: str, body: Any) -> dict[str, Any]:
        item, plan = self._change(tenant_id, lambda plan: parse_patch(body, plan))
        return describe(item.get("thresholds"), plan)

    def set_time_budget(self, tenant_id: str, body: Any) -> dict[str, Any]:
        item, plan = self._change(tenant_id, lambda plan: parse_time_budget(body, plan))
        return time_budget_config(item.get("thresholds"), plan)

    def _change(self, tenant_id: str,
                parse: Callable[[Plan], Patch]) -> tuple[dict[str, Any], Plan]:

        def attempt() -> tuple[dict[str, Any], Plan] | None:
            item, plan = self._load(tenant_id)
            patch = parse(plan)  # checked against the plan read with the item
            if patch.empty:
                return item, plan
            create = not isinstance(item.get("thresholds"), dict)
            try:
                written = self.accounts.update_thresholds(tenant_id, item["plan"], patch.values,
                                                          patch.reset, create)
            except ConditionFailed:
                return None  # the plan changed, or another request created the map: again
            return written, plan

        return until_written(attempt, unavailable)
