"""``client.settings``: the tenant's own settings, each a GET and an all-or-nothing PUT that
answers the new full set (docs/failure-groups.md, docs/thresholds.md).

    client.settings.set_detector_thresholds({"revisit_threshold": 4})
    client.settings.set_severity_routing(semantic_loop="info")
    client.settings.set_time_budget(1_800_000)

PUTs are idempotent by nature (the same body sets the same values), so they are retried like
reads, by the client's rules (loopsense_sdk.client).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Unpack, cast

from loopsense_sdk import routes as R
from loopsense_sdk.plan import Namespace, Plan, asynchronous, call, synchronous
from loopsense_sdk.types import (
    DetectorThresholds,
    DetectorThresholdsUpdate,
    SeverityRouting,
    TelemetrySettings,
    TimeBudgetConfig,
)

if TYPE_CHECKING:
    pass

__all__ = ["AsyncSettings", "Settings"]


def _severity_routing() -> Plan[SeverityRouting]:
    """The severity each failure-group class is reported with (default ``warning``)."""
    return cast(SeverityRouting, (yield call(R.SEVERITY_ROUTING_GET)))


def _set_severity_routing(**routing: Unpack[SeverityRouting]) -> Plan[SeverityRouting]:
    """Route any subset of the classes to ``critical``, ``warning`` or ``info``."""
    return cast(SeverityRouting, (yield call(R.SEVERITY_ROUTING_PUT, dict(routing))))


def _telemetry_settings() -> Plan[TelemetrySettings]:
    """How long raw telemetry and failure groups are kept (days)."""
    return cast(TelemetrySettings, (yield call(R.TELEMETRY_SETTINGS_GET)))


def _set_telemetry_settings(**settings: Unpack[TelemetrySettings]) -> Plan[TelemetrySettings]:
    """Set any subset of the retentions; applies to what is written from then on."""
    return cast(TelemetrySettings, (yield call(R.TELEMETRY_SETTINGS_PUT, dict(settings))))


def _detector_thresholds() -> Plan[DetectorThresholds]:
    """Every threshold: the value applied today, its default and bounds, your setting."""
    return cast(DetectorThresholds, (yield call(R.DETECTOR_THRESHOLDS_GET)))


def _set_detector_thresholds(thresholds: Mapping[str, Any] | DetectorThresholdsUpdate,
                             ) -> Plan[DetectorThresholds]:
    """Set any subset by name (None: back to the default); one bad name or value and
    nothing changes (``ValidationError`` naming the field)."""
    return cast(DetectorThresholds, (yield call(R.DETECTOR_THRESHOLDS_PUT, dict(thresholds))))


def _time_budget() -> Plan[TimeBudgetConfig]:
    """The time budget agent.loops applies: yours or the default, clamped to the plan's cap."""
    return cast(TimeBudgetConfig, (yield call(R.TIME_BUDGET_GET)))


def _set_time_budget(time_budget_ms: int | None) -> Plan[TimeBudgetConfig]:
    """Set the time budget (None: the default); above the plan's cap is
    ``TIME_BUDGET_ABOVE_PLAN_CAP``."""
    return cast(TimeBudgetConfig, (yield call(R.TIME_BUDGET_PUT,
                                              {"time_budget_ms": time_budget_ms})))


class Settings(Namespace):
    severity_routing = synchronous(_severity_routing)
    set_severity_routing = synchronous(_set_severity_routing)
    telemetry_settings = synchronous(_telemetry_settings)
    set_telemetry_settings = synchronous(_set_telemetry_settings)
    detector_thresholds = synchronous(_detector_thresholds)
    set_detector_thresholds = synchronous(_set_detector_thresholds)
    time_budget = synchronous(_time_budget)
    set_time_budget = synchronous(_set_time_budget)


class AsyncSettings(Namespace):
    severity_routing = asynchronous(_severity_routing)
    set_severity_routing = asynchronous(_set_severity_routing)
    telemetry_settings = asynchronous(_telemetry_settings)
    set_telemetry_settings = asynchronous(_set_telemetry_settings)
    detector_thresholds = asynchronous(_detector_thresholds)
    set_detector_thresholds = asynchronous(_set_detector_thresholds)
    time_budget = asynchronous(_time_budget)
    set_time_budget = asynchronous(_set_time_budget)
