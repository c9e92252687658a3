"""Detector thresholds: names, defaults and bounds (spec/thresholds.md; each declared with its
skill in the catalog), and the one function every skill reads a threshold through.

Precedence: the call's own ``thresholds`` > the tenant's setting > the default. Each value is
checked against the same bounds wherever it comes from. Tenant settings reach skills as a plain
mapping handed over by the router, so skills never touch the store.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loopsense.errors import validation_error
from loopsense.platform.access.catalog import ROUTE_SETTINGS, SKILLS, Threshold

# Every threshold, in the catalog's order: each declared with the skill that applies it (its
# catalog entry), then the routes' own settings.
THRESHOLDS: dict[str, Threshold] = {
    **{name: spec for skill in SKILLS for name, spec in skill.thresholds.items()},
    **ROUTE_SETTINGS,
}


# In a tenant's thresholds as the router hands them over: the plan's cap on time_budget_ms.
PLAN_CAP = "max_time_budget_ms"


def check(name: str, value: Any, path: str) -> int | float:
    """``value`` if it is of the threshold's type and within its bounds, else VALIDATION_ERROR."""
    spec = THRESHOLDS[name]
    if spec.kind is bool:
        if not isinstance(value, bool):
            raise validation_error(path, "must be a boolean (true or false)")
        return value
    wrong_type = isinstance(value, bool) or not isinstance(value, int | float)
    if wrong_type or (spec.kind is int and not isinstance(value, int)):
        kind = "an integer" if spec.kind is int else "a number"
        raise validation_error(path, f"must be {kind} from {spec.low} to {spec.high}")
    if not spec.low <= value <= spec.high:
        raise validation_error(path, f"must be from {spec.low} to {spec.high}")
    return value


def effective(name: str, per_call: Mapping[str, Any] | None,
              tenant: Mapping[str, Any] | None = None, where: str = "input.thresholds") -> Any:
    """The value a skill applies for ``name``: per call (the object at ``where``), else the
    tenant's, else the default."""
    if per_call is not None and name in per_call:
        return check(name, per_call[name], f"{where}.{name}")
    if tenant is not None and name in tenant:
        return check(name, tenant[name], f"tenant.{name}")
    return THRESHOLDS[name].default
