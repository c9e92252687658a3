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
from typing import Any, Unpack, cast

from loopsense_sdk import routes as R
from loopsense_sdk.runs import Send
from loopsense_sdk.types import (
    DetectorThresholds,
    DetectorThresholdsUpdate,
    SeverityRouting,
    TelemetrySettings,
    TimeBudgetConfig,
)

__all__ = ["Settings"]


class Settings:
    def __init__(self, send: Send) -> None:
        self._send = send

    def _call(self, route: R.Route, body: Any = None) -> Any:
        return self._send(route.method, route.path(), body, {})

    def severity_routing(self) -> SeverityRouting:
        """The severity each failure-group class is reported with (default ``warning``)."""
        return cast(SeverityRouting, self._call(R.SEVERITY_ROUTING_GET))

    def set_severity_routing(self, **routing: Unpack[SeverityRouting]) -> SeverityRouting:
        """Route any subset of the classes to ``critical``, ``warning`` or ``info``."""
        return cast(SeverityRouting, self._call(R.SEVERITY_ROUTING_PUT, dict(routing)))

    def telemetry_settings(self) -> TelemetrySettings:
        """How long raw telemetry and failure groups are kept (days)."""
        return cast(TelemetrySettings, self._call(R.TELEMETRY_SETTINGS_GET))

    def set_telemetry_settings(self, **settings: Unpack[TelemetrySettings]) -> TelemetrySettings:
        """Set any subset of the retentions; applies to what is written from then on."""
        return cast(TelemetrySettings, self._call(R.TELEMETRY_SETTINGS_PUT, dict(settings)))

    def detector_thresholds(self) -> DetectorThresholds:
        """Every threshold: the value applied today, its default and bounds, your setting."""
        return cast(DetectorThresholds, self._call(R.DETECTOR_THRESHOLDS_GET))

    def set_detector_thresholds(self, thresholds: Mapping[str, Any] | DetectorThresholdsUpdate,
                                ) -> DetectorThresholds:
        """Set any subset by name (None: back to the default); one bad name or value and
        nothing changes (``ValidationError`` naming the field)."""
        return cast(DetectorThresholds, self._call(R.DETECTOR_THRESHOLDS_PUT, dict(thresholds)))

    def time_budget(self) -> TimeBudgetConfig:
        """The time budget agent.loops applies: yours or the default, clamped to the plan's cap."""
        return cast(TimeBudgetConfig, self._call(R.TIME_BUDGET_GET))

    def set_time_budget(self, time_budget_ms: int | None) -> TimeBudgetConfig:
        """Set the time budget (None: the default); above the plan's cap is
        ``TIME_BUDGET_ABOVE_PLAN_CAP``."""
        return cast(TimeBudgetConfig, self._call(R.TIME_BUDGET_PUT,
                                                 {"time_budget_ms": time_budget_ms}))
