"""Failure groups, severity routing and telemetry retention (spec/failure_groups.md): the rules.

A group's counts are what ingestion recorded; its severity is not stored on it but read from the
tenant's routing when the group is shown, so changing the routing changes what every group shows
at once and never touches a count. Routing and retention live on one settings item per tenant.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from loopsense.errors import Detail, LoopsenseError, validation_error
from loopsense.platform.http.request import limit_param
from loopsense.platform.telemetry import tool_calls
from loopsense.platform.telemetry.ingest import (
    DEFAULT_GROUP_DAYS,
    DEFAULT_TELEMETRY_DAYS,
    Retention,
)
from loopsense.platform.telemetry.store import (
    TelemetryStore,
    decode_cursor,
    encode_cursor,
    timeline,
)
from loopsense.playbooks import playbook

CLASSES = ("loops", "semantic_loop", tool_calls.CLASS)
SEVERITIES = ("critical", "warning", "info")
DEFAULT_SEVERITY = "warning"
DEFAULT_LIMIT, MAX_LIMIT = 50, 100
RECENT_EXECUTIONS = 20
RETENTION = {  # API name -> (stored name, low, high, default)
    "telemetry_retention_days": ("telemetryRetentionDays", 1, 365, DEFAULT_TELEMETRY_DAYS),
    "group_retention_days": ("groupRetentionDays", 1, 730, DEFAULT_GROUP_DAYS),
}


def routing_of(settings: Mapping[str, Any]) -> dict[str, str]:
    stored = settings.get("routing") or {}
    return {cls: stored.get(cls, DEFAULT_SEVERITY) if stored.get(cls) in SEVERITIES
            else DEFAULT_SEVERITY for cls in CLASSES}


def playbook_name(group: Mapping[str, Any]) -> str:
    """loops' groups: their sub-signature's playbook; the other classes': their own."""
    if group["class"] == "loops":
        return str(group["sub"])
    return tool_calls.PLAYBOOK if group["class"] == tool_calls.CLASS else "semantic_loop"


def view(group: Mapping[str, Any], routing: Mapping[str, str]) -> dict[str, Any]:
    return {"signature": group["sk"], "class": group["class"], "sub": group["sub"],
            "severity": routing[group["class"]], "executions": int(group["executions"]),
            "firstSeen": group["firstSeen"], "lastSeen": group["lastSeen"],
            "playbook": playbook_name(group)}


def _choice(name: str, raw: str | None, allowed: tuple[str, ...]) -> str | None:
    if raw is not None and raw not in allowed:
        raise validation_error(name, f"must be one of {', '.join(allowed)}")
    return raw


class FailureGroups:
    def __init__(self, store: TelemetryStore,
                 clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock

    # ---- groups ------------------------------------------------------------------------------
    def list(self, tenant: str, query: Mapping[str, str]) -> dict[str, Any]:
        limit = limit_param(query.get("limit"), DEFAULT_LIMIT, MAX_LIMIT)
        cls = _choice("class", query.get("class"), CLASSES)
        severity = _choice("severity", query.get("severity"), SEVERITIES)
        after = None
        if query.get("cursor") is not None:
            after = decode_cursor(query["cursor"])
            if after is None:
                raise validation_error("cursor", "is not a cursor this API returned")
        routing = routing_of(self.store.settings(tenant))
        classes = [c for c in CLASSES if (cls is None or c == cls)
                   and (severity is None or routing[c] == severity)]
        if not classes:
            return {"items": [], "nextCursor": None}
        one = classes[0] if len(classes) == 1 else None  # both classes: the all-groups index
        items, last = self.store.groups(tenant, one, limit, after, int(self.clock()))
        return {"items": [view(g, routing) for g in items],
                "nextCursor": encode_cursor(last) if last is not None else None}

    def detail(self, tenant: str, signature: str) -> dict[str, Any]:
        group = self.store.group(tenant, signature)
        if group is None or int(group.get("expiresAt", 0)) <= int(self.clock()):
            raise LoopsenseError("FAILURE_GROUP_NOT_FOUND", "this tenant has no failure group "
                                                            "with this signature")
        routing = routing_of(self.store.settings(tenant))
        members = self.store.members(tenant, signature, RECENT_EXECUTIONS)
        canonical = None
        if group["class"] == "semantic_loop":
            for member in members:  # the newest affected execution whose telemetry is kept
                fired = self.store.fired(tenant, member["executionId"], signature)
                if fired and int(fired.get("expiresAt", 0)) > int(self.clock()):
                    canonical = fired.get("canonicalState")
                    break
        return {"group": view(group, routing),
                "executions": [{"executionId": m["executionId"], "firedAt": m["firedAt"]}
                               for m in members],
                "playbook": playbook(playbook_name(group)),
                "canonicalState": canonical, "timeline": timeline(group)}

    # ---- severity routing --------------------------------------------------------------------
    def routing(self, tenant: str) -> dict[str, str]:
        return routing_of(self.store.settings(tenant))

    def set_routing(self, tenant: str, body: Any) -> dict[str, str]:
        if not isinstance(body, dict):
            raise validation_error("body", 'must be a JSON object such as {"loops": "info"}')
        details = [Detail(cls, f"must be one of {', '.join(SEVERITIES)}")
                   for cls in CLASSES if cls in body and body[cls] not in SEVERITIES]
        if any(name not in CLASSES for name in body):
            details.append(Detail("body", f"names something that is not a class "
                                          f"({', '.join(CLASSES)})"))
        if details:
            raise LoopsenseError("VALIDATION_ERROR", f"{details[0].path}: {details[0].issue}",
                                 details)
        routing = {**self.routing(tenant), **body}
        return routing_of(self.store.put_settings(tenant, {"routing": routing}))

    # ---- retention ---------------------------------------------------------------------------
    def retention(self, tenant: str) -> dict[str, int]:
        return _retention_view(Retention.of(self.store.settings(tenant)))

    def set_retention(self, tenant: str, body: Any) -> dict[str, int]:
        if not isinstance(body, dict):
            raise validation_error("body", "must be a JSON object")
        details = []
        for name, (_, low, high, _) in RETENTION.items():
            value = body.get(name)
            if name in body and (isinstance(value, bool) or not isinstance(value, int)
                                 or not low <= value <= high):
                details.append(Detail(name, f"must be an integer from {low} to {high}"))
        if any(name not in RETENTION for name in body):
            details.append(Detail("body", "names something that is not a retention setting "
                                          f"({', '.join(RETENTION)})"))
        if details:
            raise LoopsenseError("VALIDATION_ERROR", f"{details[0].path}: {details[0].issue}",
                                 details)
        if not body:
            return self.retention(tenant)
        stored = self.store.put_settings(
            tenant, {RETENTION[name][0]: value for name, value in body.items()})
        return _retention_view(Retention.of(stored))


def _retention_view(retention: Retention) -> dict[str, int]:
    return {"telemetry_retention_days": retention.telemetry_days,
            "group_retention_days": retention.group_days}
