"""Detector thresholds: names, defaults and bounds (spec/thresholds.md), and the one function
every skill reads a threshold through.

Precedence: the call's own ``thresholds`` > the tenant's setting > the default. Each value is
checked against the same bounds wherever it comes from. Tenant settings reach skills as a plain
mapping handed over by the router, so skills never touch the store.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loopsense.core.monitor.config import THRESHOLD_SPECS as MONITOR_THRESHOLDS
from loopsense.errors import validation_error


@dataclass(frozen=True, slots=True)
class Threshold:
    name: str
    default: int | float
    low: int | float
    high: int | float  # time_budget_ms: the largest plan cap; the tenant's own cap is the plan's

    @property
    def kind(self) -> type:
        if isinstance(self.default, bool):
            return bool
        return float if isinstance(self.default, float) else int


THRESHOLDS: dict[str, Threshold] = {
    t.name: t
    for t in (
        Threshold("revisit_threshold", 3, 2, 1000),
        Threshold("step_count_threshold", 10, 2, 10_000),
        Threshold("identical_call_min_repeats", 3, 2, 100),
        Threshold("similar_call_distance_threshold", 0.20, 0.05, 0.50),
        Threshold("similar_call_min_cluster_size", 3, 2, 100),
        Threshold("time_budget_ms", 60_000, 1_000, 86_400_000),
        # agent.run_monitor and the runs API: defined with the monitor's rules
        *(Threshold(*spec) for spec in MONITOR_THRESHOLDS),
        # the runs API (docs/runs.md): how long a run's state lives after its last write, and
        # the tenant's off switch for the run monitor
        Threshold("run_retention_days", 14, 1, 365),
        Threshold("monitor_disabled", False, False, True),
    )
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
